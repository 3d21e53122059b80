"""companions.gradient_features.experiments against loop-by-loop reimplementations and cases
worked out by hand (issue 23, mutation testing).

- ``one_step`` / ``population_fraction`` / ``uniform_parity_init`` / ``multi_index_alignment``:
  the same draws from the generator, in order, and the arithmetic written out.
- ``nice_counts``: Lemma 3.13's set, (B.19)-(B.21), neuron by neuron.
- ``compare_methods`` / ``uniform_parity_run``: what each method is handed (the trainings replaced
  by recorders) and the accuracies read from what they return.
- ``rademacher_bound`` / ``expected_yx`` / ``pooled``: by hand.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from companions.gradient_features import data as gdata
from companions.gradient_features import experiments as ex
from companions.gradient_features import network as nw
from companions.gradient_features import theory

F64 = torch.float64


def _mixture():
    return gdata.orthogonal_mixture(4, 2, 1.0, 0.5)


def test_one_step_draws_init_then_data():
    dist = _mixture()
    net0, net1, X, y = ex.one_step(
        dist,
        2,
        m=3,
        n=5,
        sigma_a=0.7,
        sigma_w=0.4,
        b_tilde=0.2,
        eta1=1.5,
        generator=torch.Generator().manual_seed(1),
        dtype=F64,
    )
    g = torch.Generator().manual_seed(1)
    ref0 = nw.symmetric_init(
        2, 3, d=4, sigma_a=0.7, sigma_w=0.4, b_tilde=0.2, generator=g, dtype=F64
    )
    Xr, yr = dist.sample(2, 5, g, F64)
    ref1 = nw.first_step(ref0, Xr, yr, 1.5)
    for u, v in ((net0.a, ref0.a), (net0.W, ref0.W), (net0.b, ref0.b), (X, Xr), (y, yr)):
        assert torch.equal(u, v)
    for u, v in ((net1.a, ref1.a), (net1.W, ref1.W), (net1.b, ref1.b)):
        assert torch.equal(u, v)
    net0, _, X, _ = ex.one_step(
        dist,
        1,
        m=2,
        n=3,
        sigma_a=0.7,
        sigma_w=0.4,
        b_tilde=0.2,
        eta1=1.5,
        generator=torch.Generator(),
    )
    assert net0.W.dtype == torch.float32 and X.dtype == torch.float32 and X.device.type == "cpu"


def _hits_by_hand(W, b, X, y, D, gamma, B_G):
    """(S, r): fraction of the neurons whose G~ has |cos| > 1 - gamma with D_j and norm >= B_G."""
    S, N, _ = W.shape
    n = X.shape[1]
    out = torch.zeros(S, D.shape[0], dtype=F64)
    for s in range(S):
        for i in range(N):
            G = (
                sum(
                    y[s, ell] * X[s, ell] * float(X[s, ell] @ W[s, i] > b[s, i]) for ell in range(n)
                )
                / n
            )
            norm = float(G.norm())
            for j in range(D.shape[0]):
                cos = float(G @ D[j]) / norm if norm > 0 else 0.0
                out[s, j] += float(abs(cos) > 1 - gamma and norm >= B_G) / N
    return out


def _nice_by_hand(net0, X, y, D, gamma, B_G, block):
    """(S, r): how many neurons of ``block`` have w^(1) = -eta l'(0) a G~ with
    <w^(1), D_j> > (1 - gamma) ||w^(1)|| and ||G~|| >= B_G."""
    S, n = X.shape[0], X.shape[1]
    out = torch.zeros(S, D.shape[0], dtype=torch.int64)
    for s in range(S):
        for i in range(block.start, block.stop):
            w, b, a = net0.W[s, i], net0.b[s, i], net0.a[s, i]
            G = sum(y[s, ell] * X[s, ell] * float(X[s, ell] @ w > b) for ell in range(n)) / n
            step = a * G  # -eta l'(0) > 0: the same direction as w^(1)
            for j in range(D.shape[0]):
                norm = float(step.norm())
                inside = norm > 0 and float(step @ D[j]) > (1 - gamma) * norm
                out[s, j] += int(inside and float(G.norm()) >= B_G)
    return out


@pytest.mark.parametrize("sign", [1, -1])
def test_nice_counts_neuron_by_neuron(sign):
    dist = _mixture()
    g = torch.Generator().manual_seed(2)
    net0 = nw.symmetric_init(
        2, 3, d=4, sigma_a=1.0, sigma_w=1.0, b_tilde=0.1, generator=g, dtype=F64
    )
    X, y = dist.sample(2, 6, g, F64)
    D = dist.directions.float()  # cast to G's dtype inside
    got = ex.nice_counts(net0, X, y=y, D=D, gammas=[0.2, 0.6], B_G=0.05, m=3, sign=sign)
    assert got.shape == (2, 2, 2) and got.dtype == torch.int64
    block = slice(0, 3) if sign == 1 else slice(3, 6)
    for k, gamma in enumerate([0.2, 0.6]):
        want = _nice_by_hand(net0, X, y, D.double(), gamma, 0.05, block)
        assert torch.equal(got[k], want)
    if sign == 1:
        default = ex.nice_counts(net0, X, y=y, D=D, gammas=[0.6], B_G=0.05, m=3)
        assert torch.equal(default[0], got[1])


def test_nice_counts_keep_one_side_of_the_cone():
    # one neuron per block, a single point x = e_1 with y = 1: G~ = e_1 for the active neuron;
    # a > 0 puts w^(1) along +e_1 (counted for D = e_1), a < 0 along -e_1 (not counted)
    X, y = torch.tensor([[[1.0, 0.0]]], dtype=F64), torch.ones(1, 1, dtype=F64)
    D = torch.eye(2, dtype=F64)
    for a, want in ((0.7, [[1, 0]]), (-0.7, [[0, 0]])):
        net0 = nw.Net(
            torch.tensor([[a, -a, -a, a]], dtype=F64),
            torch.tensor([[[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]], dtype=F64),
            torch.tensor([[0.5, -0.5, 0.5, -0.5]], dtype=F64),
        )
        assert ex.nice_counts(net0, X, y=y, D=D, gammas=[0.5], B_G=0.0, m=1)[0].tolist() == want
    # the two-sided event of Definition 3.7 counts both signs of a
    assert nw.feature_hits(torch.tensor([[-1.0, 0.0]], dtype=F64), D, 0.5, 0.0).tolist() == [
        [True, False]
    ]


def test_nice_counts_check_sign_and_gamma():
    net0 = nw.symmetric_init(
        1, 1, d=2, sigma_a=1.0, sigma_w=1.0, b_tilde=0.1, generator=torch.Generator(), dtype=F64
    )
    X, y = torch.zeros(1, 2, 2, dtype=F64), torch.ones(1, 2, dtype=F64)
    for bad in (0, 2):
        with pytest.raises(ValueError, match=f"parameter 'sign' = {bad} is not allowed"):
            ex.nice_counts(net0, X, y=y, D=torch.eye(2), gammas=[0.5], B_G=0.0, m=1, sign=bad)
    with pytest.raises(ValueError, match="parameter 'gamma' = 1.0"):
        ex.nice_counts(net0, X, y=y, D=torch.eye(2), gammas=[1.0], B_G=0.0, m=1)


@pytest.mark.parametrize("chunk", [4, 512])
def test_population_fraction_chunk_by_chunk(chunk):
    dist = _mixture()
    D = dist.directions
    p, se = ex.population_fraction(
        dist,
        D,
        gammas=[0.3, 0.7],
        B_G=0.01,
        sigma_w=0.8,
        b_tilde=0.05,
        neurons=10,
        n=7,
        generator=torch.Generator().manual_seed(3),
        chunk=chunk,
    )
    g = torch.Generator().manual_seed(3)
    X, y = dist.sample(1, 7, g, F64)
    Ws = []
    for start in range(0, 10, chunk):
        size = min(chunk, 10 - start)
        Ws.append(torch.randn(1, size, 4, generator=g, dtype=F64) * 0.8)
    W = torch.cat(Ws, 1)
    b = torch.full((1, 10), 0.05, dtype=F64)
    for k, gamma in enumerate([0.3, 0.7]):
        want = _hits_by_hand(W, b, X, y, D, gamma, 0.01)[0]
        assert torch.allclose(p[k], want, atol=1e-12)
        assert torch.allclose(se[k], (want * (1 - want) / 10).sqrt(), atol=1e-12)
    if chunk == 512:
        p2, _ = ex.population_fraction(
            dist,
            D,
            gammas=[0.3, 0.7],
            B_G=0.01,
            sigma_w=0.8,
            b_tilde=0.05,
            neurons=10,
            n=7,
            generator=torch.Generator().manual_seed(3),
        )
        assert torch.equal(p2, p)


def test_population_counts_with_a_negative_bias_and_pooled():
    dist = _mixture()
    D = dist.directions
    counts = ex.population_counts(
        dist,
        D,
        gammas=[0.3, 0.7],
        B_G=0.01,
        sigma_w=0.8,
        b_tilde=0.05,
        neurons=10,
        n=7,
        generator=torch.Generator().manual_seed(3),
        sign=-1,
    )
    g = torch.Generator().manual_seed(3)
    X, y = dist.sample(1, 7, g, F64)
    W = torch.randn(1, 10, 4, generator=g, dtype=F64) * 0.8
    b = torch.full((1, 10), -0.05, dtype=F64)
    for k, gamma in enumerate([0.3, 0.7]):
        want = _hits_by_hand(W, b, X, y, D, gamma, 0.01)[0] * 10
        assert torch.equal(counts[k], want.round().long())
    p, _ = ex.population_fraction(
        dist,
        D,
        gammas=[0.3, 0.7],
        B_G=0.01,
        sigma_w=0.8,
        b_tilde=0.05,
        neurons=10,
        n=7,
        generator=torch.Generator().manual_seed(3),
        sign=-1,
    )
    assert torch.equal(p, counts.double() / 10)
    with pytest.raises(ValueError, match="parameter 'sign' = 0"):
        ex.population_counts(
            dist,
            D,
            gammas=[0.3],
            B_G=0.0,
            sigma_w=1.0,
            b_tilde=0.1,
            neurons=2,
            n=2,
            generator=torch.Generator(),
            sign=0,
        )
    assert ex.pooled(torch.tensor([[1, 2], [3, 4]]), 10) == (10, 40)


def _record_trainings(monkeypatch, bump=0.5):
    calls = []

    def train(net, X, *, y, steps, lr, train_first_layer, optimizer, **kw):
        calls.append(("train", net, steps, lr, train_first_layer, optimizer, kw))
        return nw.Net(net.a + bump, net.W, net.b)

    def train_ntk(net0, X, y, steps, lr, **kw):
        calls.append(("ntk", net0, steps, lr, kw))
        return lambda Xt: Xt[..., 0] - 0.1

    def train_linear(X, y, steps, lr, **kw):
        calls.append(("linear", None, steps, lr, kw))
        return lambda Xt: -Xt[..., 1]

    monkeypatch.setattr(nw, "train", train)
    monkeypatch.setattr(nw, "train_ntk", train_ntk)
    monkeypatch.setattr(nw, "train_linear", train_linear)
    return calls


def test_compare_methods_hands_each_method_its_start(monkeypatch):
    calls = _record_trainings(monkeypatch)
    dist = _mixture()
    out = ex.compare_methods(
        dist,
        2,
        m=3,
        n=6,
        n_test=9,
        sigma_a=0.7,
        sigma_w=0.4,
        b_tilde=0.2,
        eta1=1.5,
        steps=13,
        lr=0.01,
        batch=4,
        generator=torch.Generator().manual_seed(4),
        dtype=F64,
    )
    g = torch.Generator().manual_seed(4)
    net0, net1, X, y = ex.one_step(
        dist, 2, m=3, n=6, sigma_a=0.7, sigma_w=0.4, b_tilde=0.2, eta1=1.5, generator=g, dtype=F64
    )
    Xt, yt = dist.sample(2, 9, g, F64)
    assert list(out) == ["network", "frozen", "rf", "ntk", "linear"]
    kinds = [c[0] for c in calls]
    assert kinds == ["train", "train", "train", "ntk", "linear"]
    g_used = calls[0][6]["generator"]
    for c in calls:
        assert c[-1]["batch"] == 4 and c[-1]["generator"] is g_used
    assert [c[2:6] for c in calls[:3]] == [
        (13, 0.01, True, "adam"),
        (13, 0.01, False, "adam"),
        (13, 0.01, False, "adam"),
    ]
    assert calls[3][2:4] == (13, 0.01) and calls[4][2:4] == (13, 0.01)
    assert torch.equal(calls[0][1].W, net1.W) and torch.equal(calls[1][1].a, net1.a)
    rf0 = calls[2][1]
    assert torch.equal(rf0.a, torch.zeros_like(net0.a)) and torch.equal(rf0.W, net0.W)
    assert torch.equal(rf0.b, net0.b) and torch.equal(calls[3][1].W, net0.W)

    def acc(out_):
        return nw.accuracy(out_, yt)

    bumped = nw.Net(net1.a + 0.5, net1.W, net1.b)
    assert torch.equal(out["network"], acc(nw.forward(bumped, Xt)))
    assert torch.equal(out["frozen"], acc(nw.forward(bumped, Xt)))
    rf = nw.Net(torch.zeros_like(net0.a) + 0.5, net0.W, net0.b)
    assert torch.equal(out["rf"], acc(nw.forward(rf, Xt)))
    assert torch.equal(out["ntk"], acc(Xt[..., 0] - 0.1))
    assert torch.equal(out["linear"], acc(-Xt[..., 1]))
    assert all(v.device.type == "cpu" for v in out.values())


def test_rademacher_bound_by_hand():
    # (B.595): sqrt(B^2 (||W||^2 B_x^2 + ||b||^2) / n), here sqrt(4 (3 * 9 + 4) / 31) = 2
    W = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    b = torch.tensor([2.0, 0.0])
    assert ex.rademacher_bound(W, b, 2.0, 3.0, 31) == pytest.approx(2.0)


def test_expected_yx_by_hand():
    mix = SimpleNamespace(
        weights=torch.tensor([0.25, 0.75], dtype=F64),
        labels=torch.tensor([1.0, -1.0], dtype=F64),
        means=torch.tensor([[4.0, 0.0], [0.0, 2.0]], dtype=F64),
    )
    assert ex.expected_yx(mix).tolist() == [1.0, -1.5]


def test_uniform_parity_init_by_hand():
    net = ex.uniform_parity_init(2, 3, 4, 3, torch.Generator().manual_seed(7), F64)
    g = torch.Generator().manual_seed(7)
    a = torch.randint(0, 2, (2, 3), generator=g).double() * 2 - 1
    W = torch.randint(0, 2, (2, 3, 4), generator=g).double() * 2 - 1
    b = (torch.randint(0, 5, (2, 3), generator=g).double() - 2) / 3  # {-2/3, ..., 2/3}
    assert torch.equal(net.a, torch.cat([a, -a, -a, a], 1))
    assert torch.equal(net.W, torch.cat([W, -W, W, -W], 1))
    assert torch.equal(net.b, torch.cat([b, -b, b, -b], 1))
    many = ex.uniform_parity_init(1, 400, 2, 3, torch.Generator().manual_seed(0), F64)
    assert set((many.b[0, :400] * 3).round().tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    assert ex.uniform_parity_init(1, 2, 2, 1, torch.Generator()).b.abs().max() == 0  # k = 1
    assert ex.uniform_parity_init(1, 2, 2, 1, torch.Generator()).a.dtype == torch.float32
    with pytest.raises(ValueError, match="parameter 'k' = 0 is not allowed"):
        ex.uniform_parity_init(1, 2, 2, 0, torch.Generator())


def test_uniform_parity_run_reads_the_first_step(monkeypatch):
    calls = _record_trainings(monkeypatch, bump=0.25)
    out = ex.uniform_parity_run(
        6,
        2,
        seeds=2,
        m=3,
        n=8,
        n_test=10,
        steps=5,
        lr=0.02,
        batch=4,
        generator=torch.Generator().manual_seed(8),
        eta1=2.0,
        dtype=F64,
    )
    g = torch.Generator().manual_seed(8)
    dist = gdata.uniform_parity(6, 2)
    net0 = ex.uniform_parity_init(2, 3, 6, 2, g, F64)
    X, y = dist.sample(2, 8, g, F64)
    Xt, yt = dist.sample(2, 10, g, F64)
    net1 = nw.first_step(net0, X, y, 2.0)
    assert [c[0] for c in calls] == ["train", "train"]
    assert [c[2:6] for c in calls] == [(5, 0.02, False, "adam")] * 2
    assert all(c[6]["batch"] == 4 for c in calls)
    assert torch.equal(calls[0][1].W, net1.W) and torch.equal(calls[1][1].W, net0.W)
    assert torch.equal(calls[1][1].a, torch.zeros_like(net0.a))
    one = nw.Net(net1.a + 0.25, net1.W, net1.b)
    rf = nw.Net(torch.zeros_like(net0.a) + 0.25, net0.W, net0.b)
    assert torch.equal(out["network"], nw.accuracy(nw.forward(one, Xt), yt))
    assert torch.equal(out["rf"], nw.accuracy(nw.forward(rf, Xt), yt))
    W1 = net1.W.abs()
    for s in range(2):
        inside = sum(float(W1[s, i, j]) for i in range(12) for j in range(2)) / 24
        outside = sum(float(W1[s, i, j]) for i in range(12) for j in range(2, 6)) / 48
        assert float(out["w_in_A"][s]) == pytest.approx(inside, rel=1e-12)
        assert float(out["w_out_A"][s]) == pytest.approx(outside, rel=1e-12)


def test_multi_index_alignment_by_hand():
    d, n, seeds, m = 5, 30, 2, 4
    out = ex.multi_index_alignment(d, n, seeds, m, torch.Generator().manual_seed(9))
    g = torch.Generator().manual_seed(9)
    X = torch.randn(seeds, n, d, generator=g, dtype=F64)
    W = torch.randn(seeds, m, d, generator=g, dtype=F64) / math.sqrt(d)
    for s in range(seeds):
        y = theory.multi_index_label(X[s : s + 1])[0]
        beta = sum(y[ell] * X[s, ell] for ell in range(n)) / n
        ybar = float(y.mean())
        yc = torch.stack([y[ell] - ybar - X[s, ell] @ beta for ell in range(n)])

        def frac(v):
            return float(v[:2].norm() / v.norm())

        init = sum(frac(W[s, i]) for i in range(m)) / m
        Gs = [
            sum(yc[ell] * X[s, ell] * float(X[s, ell] @ W[s, i] > 0) for ell in range(n)) / n
            for i in range(m)
        ]
        step = sum(frac(G) for G in Gs) / m
        assert float(out["init"][s]) == pytest.approx(init, rel=1e-12)
        assert float(out["step"][s]) == pytest.approx(step, rel=1e-10)
