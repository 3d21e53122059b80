"""Tests of companions.icl_scale.model written against its mutants (issue 23): every formula is
checked against a second implementation written here with plain loops (eq. (5.1) entry by entry),
on batched and unbatched inputs, with shapes asserted (a broadcasting ``allclose`` would hide a
wrong squeeze), a nonzero label slot where the residual matters, and ``d != N`` so that the two
axes of ``E`` cannot be swapped unnoticed."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.icl_scale import data, model


def _lsa_loops(E, W_PV, W_KQ, rho):
    """Eq. (5.1) for one unbatched ``E`` (nested lists of numbers), entry by entry:
    ``f_ab = E_ab + sum_{c,e,f,g} W^PV_ac E_ce E_fe W^KQ_fg E_gb / rho``."""
    D, M = len(E), len(E[0])
    out = [[None] * M for _ in range(D)]
    for a in range(D):
        for b in range(M):
            s = 0
            for c in range(D):
                for e in range(M):
                    for f in range(D):
                        for g in range(D):
                            s += W_PV[a][c] * E[c][e] * E[f][e] * W_KQ[f][g] * E[g][b]
            out[a][b] = E[a][b] + s / rho
    return out


def _rand(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _case(d=2, n=4, batch=(), seed=0, label=0.0):
    """A random ``E`` of shape ``batch + (d+1, n+1)`` (label slot ``label``) and full blocks."""
    E = _rand(*batch, d + 1, n + 1, seed=seed)
    E[..., d, n] = label
    return E, _rand(d + 1, d + 1, seed=seed + 1), _rand(d + 1, d + 1, seed=seed + 2)


def test_lsa_on_a_small_exact_case():
    # d = 1, N = 1: E = [[1, 2], [3, 0]], W^PV = [[0, 0], [0, 1]], W^KQ = [[1, 0], [0, 0]],
    # rho = 2. E^T W^KQ E = [[1*1, 1*2], [2*1, 2*2]] = [[1, 2], [2, 4]]; W^PV E = [[0, 0], [3, 0]];
    # their product [[0, 0], [3, 6]], halved [[0, 0], [1.5, 3]]; plus E: [[1, 2], [4.5, 3]].
    E = torch.tensor([[1.0, 2.0], [3.0, 0.0]], dtype=torch.float64)
    W_PV = torch.tensor([[0.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    W_KQ = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    want = torch.tensor([[1.0, 2.0], [4.5, 3.0]], dtype=torch.float64)
    assert torch.equal(model.lsa(E, W_PV, W_KQ, 2.0), want)
    assert float(model.prediction(E, W_PV, W_KQ, 2.0)) == 3.0
    assert float(model.prediction_eq_5_2(E, W_PV, W_KQ, 2.0)) == 3.0
    # eq. (5.3)'s blocks with U = [[1]], u = 1 and the reduced form: (1/2) y_1 x_1 U x_q = 3
    W_PV2, W_KQ2 = model.blocks(torch.ones(1, 1, dtype=torch.float64), 1.0)
    assert torch.equal(W_PV2, W_PV) and torch.equal(W_KQ2, W_KQ)
    X, y, xq = torch.tensor([[1.0]]), torch.tensor([3.0]), torch.tensor([2.0])
    red = model.reduced_prediction(X.double(), y.double(), xq.double(), W_KQ2[:1, :1], 1.0, 2.0)
    assert float(red) == 3.0


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_lsa_matches_the_loops_entry_by_entry(batch):
    E, W_PV, W_KQ = _case(d=2, n=3, batch=batch, seed=1, label=0.7)
    out = model.lsa(E, W_PV, W_KQ, 1.5)
    assert out.shape == E.shape
    flat_E, flat_out = E.reshape(-1, 3, 4), out.reshape(-1, 3, 4)
    for Eb, ob in zip(flat_E, flat_out):
        want = _lsa_loops(Eb.tolist(), W_PV.tolist(), W_KQ.tolist(), 1.5)
        assert torch.allclose(ob, torch.tensor(want, dtype=torch.float64), rtol=1e-12, atol=1e-12)


def test_lsa_in_exact_fractions():
    # the same loops in exact arithmetic on an integer case, against the float64 result
    E = [[1, -2, 0, 3], [2, 1, -1, 0], [1, 0, 2, 0]]  # d = 2, N = 3, label slot 0
    W_PV = [[1, 0, 2], [0, -1, 1], [3, 1, 0]]
    W_KQ = [[0, 1, 1], [2, 0, -1], [1, 1, 1]]
    want = _lsa_loops(E, W_PV, W_KQ, Fraction(3))
    t = lambda m: torch.tensor(m, dtype=torch.float64)  # noqa: E731
    got = model.lsa(t(E), t(W_PV), t(W_KQ), 3)
    assert torch.allclose(got, t([[float(v) for v in row] for row in want]), rtol=1e-14)


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
@pytest.mark.parametrize("label", [0.0, -1.3])
def test_prediction_is_the_query_entry_of_the_loops(batch, label):
    # with a nonzero label slot the residual E_{d+1, N+1} enters: the query entry, not the sum
    E, W_PV, W_KQ = _case(d=2, n=4, batch=batch, seed=7, label=label)
    got = model.prediction(E, W_PV, W_KQ, 4.0)
    assert got.shape == batch
    flat = got.reshape(-1)
    for i, Eb in enumerate(E.reshape(-1, 3, 5)):
        want = _lsa_loops(Eb.tolist(), W_PV.tolist(), W_KQ.tolist(), 4.0)[-1][-1]
        assert abs(float(flat[i]) - want) < 1e-12 * (1 + abs(want))


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_eq_5_2_is_the_query_entry_when_the_label_slot_is_zero(batch):
    # eq. (5.2) drops the residual and the bottom row of W^KQ's last column: with (x_q; 0) as
    # the query column the bottom row's contribution is 0, so it is the entry of eq. (5.1)
    E, W_PV, W_KQ = _case(d=3, n=5, batch=batch, seed=11)
    got = model.prediction_eq_5_2(E, W_PV, W_KQ, 2.5)
    assert got.shape == batch
    for i, Eb in enumerate(E.reshape(-1, 4, 6)):
        want = _lsa_loops(Eb.tolist(), W_PV.tolist(), W_KQ.tolist(), 2.5)[-1][-1]
        assert abs(float(got.reshape(-1)[i]) - want) < 1e-12 * (1 + abs(want))


def test_eq_5_2_by_its_own_sum():
    # eq. (5.2) read term by term: sum_{i,j,k} (w^PV_{d+1,i}) (E E^T / rho)_{ij} W^KQ_{jk} xq_k,
    # k over the first d columns only (the query's label slot is taken nonzero here, where
    # eq. (5.2) and eq. (5.1) part: eq. (5.2) ignores it in x_q and adds no residual)
    E, W_PV, W_KQ = _case(d=2, n=4, seed=3, label=0.9)
    d = 2
    EEt = (E @ E.T).tolist()
    xq = E[:d, -1].tolist()
    want = sum(
        W_PV[-1, i].item() * EEt[i][j] / 0.5 * W_KQ[j, k].item() * xq[k]
        for i in range(d + 1)
        for j in range(d + 1)
        for k in range(d)
    )
    got = model.prediction_eq_5_2(E, W_PV, W_KQ, 0.5)
    assert got.shape == () and abs(float(got) - want) < 1e-12 * (1 + abs(want))


def test_blocks_are_eq_5_3_exactly():
    U = _rand(3, 3, seed=5)
    W_PV, W_KQ = model.blocks(U, 0.7)
    want_PV = torch.zeros(4, 4, dtype=torch.float64)
    want_PV[3, 3] = 0.7  # a float64 0.7, not a float32 one rounded
    want_KQ = torch.zeros(4, 4, dtype=torch.float64)
    want_KQ[:3, :3] = U
    assert W_PV.dtype == W_KQ.dtype == torch.float64
    assert torch.equal(W_PV, want_PV) and torch.equal(W_KQ, want_KQ)
    assert W_PV[3, 3].item() == 0.7


def test_blocks_keep_the_gradient_of_u():
    # the LSA's u is a parameter: blocks must carry it into W^PV with its gradient
    u = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    W_PV, _ = model.blocks(_rand(2, 2, seed=1), u)
    W_PV.sum().backward()
    assert u.grad.item() == 1.0


@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_reduced_prediction_by_its_sum(batch):
    # y_hat = (u / rho) sum_i y_i x_i^T U x_q, summed here with loops; U not symmetric
    d, n = 3, 5
    X, y, xq = _rand(*batch, n, d, seed=1), _rand(*batch, n, seed=2), _rand(*batch, d, seed=3)
    U = _rand(d, d, seed=4)
    got = model.reduced_prediction(X, y, xq, U, 0.6, 2.0)
    assert got.shape == batch
    Xf, yf, qf = X.reshape(-1, n, d), y.reshape(-1, n), xq.reshape(-1, d)
    for b in range(Xf.shape[0]):
        want = (
            0.6
            / 2.0
            * sum(
                yf[b, i].item() * Xf[b, i, a].item() * U[a, c].item() * qf[b, c].item()
                for i in range(n)
                for a in range(d)
                for c in range(d)
            )
        )
        assert abs(float(got.reshape(-1)[b]) - want) < 1e-12 * (1 + abs(want))


@settings(max_examples=25, deadline=None)
@given(
    rho=st.floats(0.1, 50.0),
    u=st.floats(-3.0, 3.0),
    c=st.floats(0.2, 3.0),
    seed=st.integers(0, 2**16),
)
def test_the_prediction_is_linear_in_u_and_one_over_rho_and_cubic_in_E(rho, u, c, seed):
    # with the blocks of eq. (5.3) and label slot 0, y_hat(E) = u E^T.. / rho is linear in u,
    # in 1 / rho, and of degree 3 in E (two factors of E from E E^T, one from x_q)
    d, n = 2, 3
    X, y, xq = _rand(n, d, seed=seed), _rand(n, seed=seed + 1), _rand(d, seed=seed + 2)
    U = _rand(d, d, seed=seed + 3)
    E = data.embed(X, y, xq)
    base = model.prediction(E, *model.blocks(U, 1.0), 1.0)
    got = model.prediction(E, *model.blocks(U, u), rho)
    assert torch.allclose(got, u * base / rho, rtol=1e-10, atol=1e-12)
    scaled = model.prediction(c * E, *model.blocks(U, u), rho)
    assert torch.allclose(scaled, c**3 * got, rtol=1e-10, atol=1e-12)
    assert torch.allclose(model.reduced_prediction(X, y, xq, U, u, rho), got, rtol=1e-10)


def test_low_rank_lsa_replays_its_initialisation():
    net = model.LowRankLSA(4, 2, torch.Generator().manual_seed(9))
    g = torch.Generator().manual_seed(9)
    W_K = 0.3 * torch.randn(2, 4, generator=g)  # the default init_scale 0.3 of the signature
    W_Q = 0.3 * torch.randn(2, 4, generator=g)
    assert torch.equal(net.W_K.data, W_K) and torch.equal(net.W_Q.data, W_Q)
    assert net.u.shape == () and net.u.item() == 1.0
    assert {n for n, _ in net.named_parameters()} == {"W_K", "W_Q", "u"}
    other = model.LowRankLSA(4, 2, torch.Generator().manual_seed(9), init_scale=2.0)
    assert torch.allclose(other.W_K.data, W_K / 0.3 * 2.0)


@pytest.mark.parametrize("r", [1, 3])
def test_low_rank_lsa_accepts_r_from_1_to_d(r):
    net = model.LowRankLSA(3, r, torch.Generator().manual_seed(0))
    assert net.W_K.shape == net.W_Q.shape == (r, 3)
    assert net.U.shape == (3, 3)
    assert int(torch.linalg.matrix_rank(net.U.detach())) == r


@pytest.mark.parametrize("r", [0, 4])
def test_low_rank_lsa_refuses_r_out_of_range(r):
    with pytest.raises(ValueError, match=rf"parameter 'r' = {r} is not allowed: .*1 <= r <= d = 3"):
        model.LowRankLSA(3, r, torch.Generator())


def test_low_rank_lsa_U_and_forward():
    net = model.LowRankLSA(3, 2, torch.Generator().manual_seed(2))
    with torch.no_grad():
        net.u.fill_(0.8)
    W_K, W_Q = net.W_K.detach().double(), net.W_Q.detach().double()
    U = [
        [sum(W_K[k, i].item() * W_Q[k, j].item() for k in range(2)) for j in range(3)]
        for i in range(3)
    ]  # (W^K)^T W^Q: U_ij = sum_k W^K_ki W^Q_kj (not symmetric)
    assert torch.allclose(net.U.double(), torch.tensor(U, dtype=torch.float64), atol=1e-6)
    X, y, xq = _rand(5, 4, 3, seed=1), _rand(5, 4, seed=2), _rand(5, 3, seed=3)
    E = data.embed(X, y, xq).float()
    out = net(E, 4.0)
    assert out.shape == (5,)
    want = model.reduced_prediction(X, y, xq, torch.tensor(U, dtype=torch.float64), 0.8, 4.0)
    assert torch.allclose(out.double(), want, rtol=1e-4, atol=1e-5)
    # gradients reach all three parameters
    out.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())
