"""Tests of companions.fine_labels.model written against its surviving mutants (issue 23).

Expected values come from loops over seeds, samples, patches and neurons (eq. 2 / 176), from
App. B.2's initialisation replayed with the same generator, and from small cases by hand.
"""

import math

import pytest
import torch

from companions.fine_labels import model as fmodel

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("name", ["S", "C", "m", "d"])
def test_init_names_a_size_below_one(name):
    sizes = dict(S=1, C=1, m=1, d=1)
    net = fmodel.init(**sizes, sigma0=0.5, tau=1.0, g=g())  # 1 is allowed
    assert net.W.shape == (1, 1, 1)
    sizes[name] = 0
    with pytest.raises(ValueError, match=f"parameter '{name}' = 0 is not allowed: expected >= 1"):
        fmodel.init(**sizes, sigma0=0.5, tau=1.0, g=g())


@pytest.mark.parametrize("sigma0", [0.0, -0.1])
def test_init_rejects_a_non_positive_sigma0(sigma0):
    with pytest.raises(ValueError, match=f"'sigma0' = {sigma0} is not allowed: expected > 0"):
        fmodel.init(1, 2, m=2, d=3, sigma0=sigma0, tau=1.0, g=g())


def test_init_is_app_b2_replayed():
    net = fmodel.init(2, 3, m=4, d=5, sigma0=0.7, tau=1.5, g=g(3), dtype=F64)
    want = torch.randn(2, 12, 5, generator=g(3), dtype=F64) * 0.7  # w ~ N(0, sigma0^2 I)
    assert torch.equal(net.W, want)
    assert net.b.shape == (2, 12) and net.b.dtype == F64
    assert bool((net.b == -1.5 * 0.7).all())  # b = -tau sigma0
    assert (net.C, net.m) == (3, 4)
    small = fmodel.init(
        1, 1, m=1, d=2, sigma0=1e-3, tau=1.0, g=g()
    )  # a tiny positive sigma0 is allowed
    assert float(small.b[0, 0]) == pytest.approx(-1e-3)


def test_clone_is_a_deep_copy():
    net = fmodel.init(1, 2, m=2, d=3, sigma0=0.5, tau=1.0, g=g())
    c = net.clone()
    assert (c.C, c.m) == (2, 2) and torch.equal(c.W, net.W) and torch.equal(c.b, net.b)
    c.W += 1.0
    c.b += 1.0
    assert not torch.equal(c.W, net.W) and not torch.equal(c.b, net.b)


def forward_by_hand(net, X):
    S, N, P, _ = X.shape
    F = torch.zeros(S, N, net.C, dtype=X.dtype)
    for s in range(S):
        for n in range(N):
            for c in range(net.C):
                for r in range(c * net.m, c * net.m + net.m):
                    for p in range(P):
                        F[s, n, c] += max(float(X[s, n, p] @ net.W[s, r] + net.b[s, r]), 0.0)
    return F


@pytest.mark.parametrize("chunk", [1, 3, 7, 512])
def test_forward_in_chunks_is_eq_2(chunk):
    net = fmodel.init(2, 3, m=2, d=4, sigma0=1.0, tau=0.2, g=g(1), dtype=F64)
    X = torch.randn(2, 7, 3, 4, generator=g(2), dtype=F64)
    F = fmodel.forward(net, X, chunk=chunk)
    assert F.shape == (2, 7, 3)
    assert torch.allclose(F, forward_by_hand(net, X), atol=1e-12)
    assert torch.allclose(F, fmodel.forward(net, X), atol=1e-12)  # default chunk
    Z = fmodel.preactivations(net, X)
    assert Z.shape == (2, 7, 3, 6)
    assert float(Z[1, 4, 2, 5]) == pytest.approx(float(X[1, 4, 2] @ net.W[1, 5] + net.b[1, 5]))


def test_a_dry_run_scores_the_first_chunk_and_seen_keeps_its_labels(monkeypatch):
    net = fmodel.init(2, 3, m=2, d=4, sigma0=1.0, tau=0.2, g=g(1), dtype=F64)
    X = torch.randn(2, 7, 3, 4, generator=g(2), dtype=F64)
    y = torch.arange(14).reshape(2, 7)
    assert torch.equal(fmodel.seen(y, fmodel.forward(net, X, chunk=3)), y)
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    F = fmodel.forward(net, X, chunk=3)
    assert torch.allclose(F, forward_by_hand(net, X[:, :3]), atol=1e-12)
    assert torch.equal(fmodel.seen(y, F), y[:, :3])


def test_aggregate_rules_and_errors():
    F = torch.tensor([[[1.0, 3.0, 2.0, 0.0, 4.0, 1.0]]])  # k = 3: (1, 3, 2) and (0, 4, 1)
    assert fmodel.aggregate(F, 3).tolist() == [[[3.0, 4.0]]]  # default: the max of Thm 5.2
    assert fmodel.aggregate(F, 3, "sum").tolist() == [[[6.0, 5.0]]]
    lse = fmodel.aggregate(F, 3, "logsumexp")[0, 0]
    assert float(lse[0]) == pytest.approx(math.log(math.e + math.e**3 + math.e**2))
    assert float(lse[1]) == pytest.approx(math.log(1 + math.e**4 + math.e))
    with pytest.raises(ValueError, match=r"F has 6 outputs, not 2 groups = 4"):
        fmodel.aggregate(F, 2)
    with pytest.raises(ValueError, match=r"'how' = 'mean' is not allowed: expected one of"):
        fmodel.aggregate(F, 3, "mean")


def test_accuracy_is_per_seed_with_ties_wrong():
    scores = torch.tensor(
        [
            [[2.0, 1.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.0]],
            [[0.0, 3.0], [1.0, 0.0], [2.0, 2.0], [1.0, 0.0]],
        ]
    )
    labels = torch.tensor([[0, 1, 0, 1], [1, 1, 1, 1]])
    # seed 0: right, right, tie, wrong -> 1/2; seed 1: right, wrong, tie, wrong -> 1/4
    assert fmodel.accuracy(scores, labels).tolist() == [0.5, 0.25]
    three = torch.tensor([[[0.0, 2.0, 1.0], [3.0, 0.0, 3.5]]])  # three classes
    assert fmodel.accuracy(three, torch.tensor([[1, 0]])).tolist() == [0.5]


def test_projections_detectors_growth_response_by_hand():
    W0 = torch.tensor([[[1.0, 0.0, 2.0], [1.5, 1.0, 0.0], [0.0, 1.5, 1.0], [2.0, 0.2, 1.5]]])
    feats = torch.tensor([0, 2])
    net0 = fmodel.Net(W0, torch.zeros(1, 4), 2, 2)
    assert torch.equal(fmodel.feature_projections(net0, feats), W0[:, :, [0, 2]])
    det = fmodel.detectors(W0, feats, 1.5)  # '>=': 1.5 itself is a detector
    assert det[0].tolist() == [[False, True], [True, False], [False, False], [True, True]]
    W = W0 + torch.tensor([[[1.0, 0, 2.0], [3.0, 0, 5.0], [7.0, 0, 11.0], [13.0, 0, 17.0]]])
    A = fmodel.growth(W, W0, feats, det, 2)  # output 0 owns rows 0, 1; output 1 rows 2, 3
    assert A.shape == (1, 2, 2)
    assert float(A[0, 0, 0]) == pytest.approx(3.0)  # only row 1 detects feature 0
    assert float(A[0, 0, 1]) == pytest.approx(2.0)  # only row 0 detects feature 2
    assert float(A[0, 1, 0]) == pytest.approx(13.0)
    assert float(A[0, 1, 1]) == pytest.approx(17.0)
    A4 = fmodel.growth(W, W0, feats, det, 4)  # one row per output: row 2 detects nothing
    assert math.isnan(float(A4[0, 2, 0])) and math.isnan(float(A4[0, 2, 1]))
    assert float(A4[0, 3, 1]) == pytest.approx(17.0)
    two = fmodel.detectors(W0, torch.tensor([0]), 1.0)  # rows 0, 1 of output 0 both detect
    assert float(fmodel.growth(W, W0, torch.tensor([0]), two, 2)[0, 0, 0]) == pytest.approx(2.0)
    b = torch.tensor([[-1.0, 0.5, -0.5, -3.0]])
    R = fmodel.response(fmodel.Net(W0, b, 2, 2), feats)
    assert R.shape == (1, 2, 2)
    # relu(<w, v> + b) summed over an output's rows
    assert R[0].tolist() == [[0.0 + 2.0, 1.0 + 0.5], [0.0 + 0.0, 0.5 + 0.0]]


def test_firing_rates_count_both_indicators_of_eq_39():
    """By hand: one neuron (b = -1) on four patches with <w, x> = 0, 0.5, 1.5, -2: the ReLU fires
    where <w, x> + b > 0 (1.5 only: 1/4), the printed indicator where <w, x> >= b (0, 0.5 and 1.5:
    3/4)."""
    W = torch.tensor([[[1.0, 0.0]]])  # S = 1, C m = 1, d = 2
    b = torch.tensor([[-1.0]])
    net = fmodel.Net(W, b, 1, 1)
    X = torch.tensor([[[[0.0, 3.0], [0.5, 0.0], [1.5, 1.0], [-2.0, 0.0]]]])  # (S, N, P, d)
    assert fmodel.firing_rates(net, X) == (0.25, 0.75)
    # a second seed with b = -3: the ReLU fires on no patch (<w, x> > 3), the printed indicator on
    # all four (<w, x> >= -3)
    two = fmodel.Net(torch.cat([W, W]), torch.tensor([[-1.0], [-3.0]]), 1, 1)
    assert fmodel.firing_rates(two, torch.cat([X, X])) == ((1 + 0) / 8, (3 + 4) / 8)
