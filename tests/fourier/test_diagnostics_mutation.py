"""Mutation tests of companions.fourier.diagnostics (issue 23): every statistic against a second
implementation (DFTs as explicit sums, the network by loops over its inputs) or a closed form
(single cosines, whose power, phase and interpolant are known)."""

import cmath
import itertools
import math

import pytest
import torch

from companions.fourier import diagnostics as fdiag

F64 = torch.float64


def _dft(v, z):
    p = len(v)
    return sum(v[t] * cmath.exp(-2j * math.pi * z * t / p) for t in range(p))


def _folded(v):
    p = len(v)
    return [abs(_dft(v, 0)) ** 2] + [
        abs(_dft(v, z)) ** 2 + abs(_dft(v, -z)) ** 2 for z in range(1, (p - 1) // 2 + 1)
    ]


def _net(m, k, p, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, p, generator=g, dtype=F64), torch.randn(m, p, generator=g, dtype=F64)


def test_stacked_puts_w_after_the_u_rows():
    U, W = _net(3, 2, 5, 0)
    V = fdiag.stacked(U, W)
    assert V.shape == (3, 3, 5)
    assert torch.equal(V[:, :2], U) and torch.equal(V[:, 2], W)
    Ub, Wb = U.expand(4, 3, 2, 5), W.expand(4, 3, 5)  # leading batch axis
    assert torch.equal(fdiag.stacked(Ub, Wb)[1], V)


@pytest.mark.parametrize("p", [3, 7, 9])
def test_folded_power_matches_explicit_dft_sums(p):
    v = torch.randn(2, 3, p, generator=torch.Generator().manual_seed(p), dtype=F64)
    pw = fdiag.folded_power(v)
    assert pw.shape == (2, 3, (p + 1) // 2)
    for i, j in itertools.product(range(2), range(3)):
        want = torch.tensor(_folded(v[i, j].tolist()), dtype=F64)
        assert torch.allclose(pw[i, j], want, rtol=1e-12, atol=1e-12)
    # Parseval: the folded power sums to p ||v||^2
    assert torch.allclose(pw.sum(-1), p * v.pow(2).sum(-1), rtol=1e-12)


def test_neuron_spectrum_sums_the_power_of_the_k_plus_1_vectors():
    U, W = _net(4, 3, 7, 1)
    sp_ = fdiag.neuron_spectrum(U, W)
    assert sp_.shape == (4, 4)
    for i in range(4):
        vecs = [*U[i].tolist(), W[i].tolist()]
        want = [sum(x) for x in zip(*[_folded(v) for v in vecs])]
        assert torch.allclose(sp_[i], torch.tensor(want, dtype=F64), rtol=1e-12)


def test_concentration_and_dominant_frequency_on_a_known_spectrum():
    # shape (2, 1, 4): the statistics reduce the last axis only
    power = torch.tensor([[[4.0, 1.0, 3.0, 2.0]], [[0.0, 0.0, 0.0, 5.0]]], dtype=F64)
    # row 0: max over zeta >= 1 is 3 at zeta 2, total 10; row 1: 5 at zeta 3, total 5
    assert torch.allclose(fdiag.concentration(power), torch.tensor([[0.3], [1.0]], dtype=F64))
    assert fdiag.dominant_frequency(power).tolist() == [[2], [3]]
    # P(0) is not a frequency: a large constant part never wins
    assert fdiag.dominant_frequency(torch.tensor([9.0, 1.0, 2.0])).tolist() == 2


def test_concentration_of_tiny_and_zero_spectra():
    tiny = torch.tensor([1e-6, 2e-6, 1e-6], dtype=F64)  # sum far below 1: no floor may apply
    assert float(fdiag.concentration(tiny)) == pytest.approx(0.5, rel=1e-12)
    assert float(fdiag.concentration(torch.zeros(3, dtype=F64))) == 0.0  # 0 / floor, not NaN


def test_two_sided_max_power_closed_forms():
    p = 7
    t = torch.arange(p, dtype=F64)
    v = 1e-4 * torch.cos(0.4 + 2 * math.pi * 2 * t / p)  # tiny: sum far below 1
    assert float(fdiag.two_sided_max_power(v)) == pytest.approx(0.5, rel=1e-12)
    assert float(fdiag.two_sided_max_power(torch.full((p,), 3.0, dtype=F64))) == pytest.approx(1.0)
    assert float(fdiag.two_sided_max_power(torch.zeros(p, dtype=F64))) == 0.0
    r = torch.randn(p, generator=torch.Generator().manual_seed(2), dtype=F64).tolist()
    pw = [abs(_dft(r, z)) ** 2 for z in range(p)]
    got = float(fdiag.two_sided_max_power(torch.tensor(r, dtype=F64)))
    assert got == pytest.approx(max(pw) / sum(pw), rel=1e-12)
    # a batch (3, p): one ratio per row, each against its own row's total
    rows = torch.stack([torch.tensor(r, dtype=F64), 5 * v, torch.full((p,), 2.0, dtype=F64)])
    got = fdiag.two_sided_max_power(rows)
    assert got.shape == (3,)
    assert torch.allclose(got, torch.tensor([max(pw) / sum(pw), 0.5, 1.0], dtype=F64), rtol=1e-12)


def _phase_by_hand(U, W, zeta):
    vecs = [*U.tolist(), W.tolist()]
    ang = [cmath.phase(_dft(v, zeta)) for v in vecs]
    return math.cos(sum(ang[:-1]) - ang[-1])


def test_phase_lock_matches_explicit_dft_phases_at_the_dominant_and_a_given_frequency():
    U, W = _net(5, 2, 7, 3)
    dom = fdiag.dominant_frequency(fdiag.neuron_spectrum(U, W))
    got = fdiag.phase_lock(U, W)
    for i in range(5):
        assert float(got[i]) == pytest.approx(_phase_by_hand(U[i], W[i], int(dom[i])), abs=1e-12)
    zeta = torch.tensor([1, 2, 3, 1, 2])
    got = fdiag.phase_lock(U, W, zeta)
    for i in range(5):
        assert float(got[i]) == pytest.approx(_phase_by_hand(U[i], W[i], int(zeta[i])), abs=1e-12)
    # a batch of two networks (the second one negated: w -> -w turns each cosine around)
    Ub, Wb = torch.stack([U, U]), torch.stack([W, -W])
    got = fdiag.phase_lock(Ub, Wb, torch.stack([zeta, zeta]))
    assert got.shape == (2, 5)
    assert torch.allclose(got[0], fdiag.phase_lock(U, W, zeta), atol=1e-12)
    assert torch.allclose(got[1], -fdiag.phase_lock(U, W, zeta), atol=1e-12)
    assert torch.allclose(fdiag.phase_lock(Ub, Wb)[1], -fdiag.phase_lock(U, W), atol=1e-12)


def test_phase_lock_of_cosines_is_the_cosine_of_the_phase_mismatch():
    p, t = 11, torch.arange(11, dtype=F64)
    # u_j = cos(th_j + 2 pi 3 t / p) has v_hat(3) = (p/2) e^{i th_j}: the statistic is
    # cos(th_1 + th_2 + th_3 - th_w)
    th, th_w = (0.3, -0.2, 0.5), 1.0
    U = torch.stack([torch.cos(a + 2 * math.pi * 3 * t / p) for a in th])[None]
    W = torch.cos(th_w + 2 * math.pi * 3 * t / p)[None]
    assert float(fdiag.phase_lock(U, W)) == pytest.approx(math.cos(sum(th) - th_w), abs=1e-12)


def test_balance_by_hand():
    U = torch.zeros(2, 2, 3, dtype=F64)
    W = torch.zeros(2, 3, dtype=F64)
    U[0, 0, 0], U[0, 1, 1], W[0, 2] = 1.0, 3.0, 4.0  # ||u|| = 1, 3: mean 2; ||w|| = 4 -> 2
    U[1, 0, :], U[1, 1, 0], W[1, 0] = 2.0, 6.0, 3.0  # ||u|| = 2 sqrt 3, 6; ||w|| = 3
    want = torch.tensor([2.0, 3 / ((2 * math.sqrt(3) + 6) / 2)], dtype=F64)
    assert torch.allclose(fdiag.balance(U, W), want, rtol=1e-14)
    # a batch of three copies, scaled by 1, 2, 3 (the ratio is scale-free): shape (3, 2)
    s = torch.tensor([1.0, 2.0, 3.0], dtype=F64)
    got = fdiag.balance(s[:, None, None, None] * U, s[:, None, None] * W)
    assert got.shape == (3, 2) and torch.allclose(got, want.expand(3, 2), rtol=1e-14)


def test_live_neurons_is_strictly_above_the_fraction_of_the_largest():
    # neuron norms 10, 1, 1.5, 0.5 (one nonzero entry each): 0.1 * 10 = 1 is not > 1;
    # batch shape (2, 1), four neurons each
    U = torch.zeros(2, 1, 4, 1, 3, dtype=F64)
    W = torch.zeros(2, 1, 4, 3, dtype=F64)
    W[0, 0, :, 0] = torch.tensor([10.0, 1.0, 1.5, 0.5], dtype=F64)
    W[1, 0, :, 0] = torch.tensor([1.0, 2.0, 4.0, 3.0], dtype=F64)
    assert fdiag.live_neurons(U, W).tolist() == [
        [[True, False, True, False]],
        [[True, True, True, True]],
    ]
    # fraction 0.5: row 0 keeps only 10 (5 is the bar); row 1: > 2 keeps 4 and 3
    assert fdiag.live_neurons(U, W, fraction=0.5).tolist() == [
        [[True, False, False, False]],
        [[False, False, True, True]],
    ]


def _f_by_hand(U, W, p):
    """f(a_1..a_k, c) = sum_i w_i[c] (sum_j u_ij[a_j])^k by loops, as a dict."""
    m, k, _ = U.shape
    Ul, Wl = U.tolist(), W.tolist()
    return {
        (*a, c): sum(Wl[i][c] * sum(Ul[i][j][a[j]] for j in range(k)) ** k for i in range(m))
        for a in itertools.product(range(p), repeat=k)
        for c in range(p)
    }


def _fhat(f, p, idx):
    return sum(
        val * cmath.exp(-2j * math.pi * sum(i * x for i, x in zip(idx, key)) / p)
        for key, val in f.items()
    )


@pytest.mark.parametrize("p,k", [(3, 2), (5, 2), (3, 3)])
def test_network_dft_matches_the_explicit_k_plus_1_dimensional_sum(p, k):
    U, W = _net(4, k, p, 4)
    fh = fdiag.network_dft(U, W, p)
    assert fh.shape == (p,) * (k + 1)
    f = _f_by_hand(U, W, p)
    for idx in [(0,) * (k + 1), (1,) * (k + 1), tuple(range(k + 1)), (2,) + (0,) * k]:
        idx = tuple(i % p for i in idx)
        assert complex(fh[idx]) == pytest.approx(_fhat(f, p, idx), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("p,k", [(5, 2), (3, 3)])
def test_diagonal_dft_ratio_matches_the_explicit_diagonal(p, k):
    U, W = _net(3, k, p, 5)
    f = _f_by_hand(U, W, p)
    diag = [_fhat(f, p, (j,) * k + ((-j) % p,)) for j in range(1, p)]
    want = min(d.real for d in diag) / max(abs(d) for d in diag)
    assert fdiag.diagonal_dft_ratio(U, W, p) == pytest.approx(want, rel=1e-10, abs=1e-12)


def test_trig_interpolant_of_a_cosine_is_the_cosine_between_the_grid_points():
    p = 9
    grid = torch.arange(p, dtype=torch.float32)  # a float32 input is evaluated in float64
    v = torch.cos(0.7 + 2 * math.pi * 4 * grid.double() / p)  # top frequency (p-1)/2 = 4
    t = torch.tensor([0.25, 1.5, 3.3, -2.0, 8.9], dtype=torch.float32)
    want = torch.cos(0.7 + 2 * math.pi * 4 * t.double() / p)
    got = fdiag.trig_interpolant(v.float(), t)
    assert got.dtype == F64 and torch.allclose(got, want, atol=1e-6)


def test_trig_interpolant_matches_the_explicit_sum_for_a_random_batch():
    p = 7
    v = torch.randn(2, p, generator=torch.Generator().manual_seed(6), dtype=F64)
    t = torch.tensor([0.1, 2.6, 5.0], dtype=F64)
    got = fdiag.trig_interpolant(v, t)
    assert got.shape == (2, 3)
    for r in range(2):
        vl = v[r].tolist()
        for n, x in enumerate(t.tolist()):
            s = sum(_dft(vl, j) * cmath.exp(2j * math.pi * j * x / p) for j in range(-3, 4)) / p
            assert float(got[r, n]) == pytest.approx(s.real, abs=1e-12)
    # a float32 input is transformed in float64: exact against the sum over its float32 values
    v32 = v.float()
    got = fdiag.trig_interpolant(v32, t)
    vl = v32[0].double().tolist()
    for n, x in enumerate(t.tolist()):
        s = sum(_dft(vl, j) * cmath.exp(2j * math.pi * j * x / p) for j in range(-3, 4)) / p
        assert float(got[0, n]) == pytest.approx(s.real, abs=1e-12)
