"""Tests of companions.contrastive.pruning written against its surviving mutants (issue 23).

Expected values are small cases worked out by hand (unit-vector dictionaries and exact binary
fractions, so that the thresholds of the docstrings are hit exactly), the conventions the
docstrings state (ties broken by index, ``cos^2`` not ``cos``, ``>=`` thresholds, the masks'
dtype that of the weights) and invariants (a gradient that is continuous from below
at the activation threshold ``|<w, z>| >= b``).
"""

from __future__ import annotations

import math

import pytest
import torch

from companions.contrastive import data as cd
from companions.contrastive import pruning as pr
from companions.contrastive import training as tr

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def _eye_dict(d1, d, R=1):
    """Dictionary of the first ``d`` unit vectors of ``R^d1``: ``<w, M_j> = w_j``."""
    return torch.eye(d1, d, dtype=F64).expand(R, d1, d).clone()


# -- masks -----------------------------------------------------------------------------------------


def test_magnitude_mask_ties_broken_by_index_beyond_small_sorts():
    # 20 equal norms: "ties broken by index" prunes neurons 0..k-1 (an unstable sort, which CPU
    # torch uses for 17 or more elements, returns another order)
    W = torch.ones(2, 20, 3, dtype=F64)
    mask = pr.magnitude_mask(W, 0.25)  # floor(5) pruned
    assert mask.dtype == F64
    assert mask[0].tolist() == [0.0] * 5 + [1.0] * 15 and torch.equal(mask[1], mask[0])


def test_minority_mask_uses_the_squared_cosine():
    # n_maj = 1; neuron 0 has cos -0.8 on the minority feature (cos^2 0.64), neuron 1 +0.6 (0.36),
    # neuron 2 +0.5 (0.25): the largest cos^2 is neuron 0 (cos or cos^3 would pick neuron 1)
    M = _eye_dict(3, 2)
    W = torch.tensor([[[0.6, -0.8, 0.0], [0.8, 0.6, 0.0], [0.0, 0.5, 0.75**0.5]]], dtype=F64)
    assert pr.minority_mask(W, M, 0.34, 1)[0].tolist() == [0.0, 1.0, 1.0]


def test_dominant_features_returns_the_squared_cosine():
    M = _eye_dict(3, 2)
    W = torch.tensor([[[-0.8, 0.6, 0.0], [0.0, 0.0, 2.0]]], dtype=F64)
    dom, c2 = pr.dominant_features(W, M)
    assert dom[0, 0].item() == 0
    assert torch.allclose(c2, torch.tensor([[0.64, 0.0]], dtype=F64))


def test_specialists_shape_and_inclusive_threshold():
    # d1 = 5, d = 3; every neuron's dominant feature is 0, so the one-hot must still span d = 3
    M = _eye_dict(5, 3)
    W = torch.tensor([[[1.0, 0.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0, 0.0]]], dtype=F64)
    spec = pr.specialists(W, M)
    # neuron 0: cos^2 = 1/3 on feature 0, 0 on the others; neuron 1: cos^2 = 1
    assert spec.shape == (1, 2, 3)
    assert spec[0].tolist() == [[True, False, False], [True, False, False]]
    # cos^2 exactly 0.25 (w = (1, 0, 0, 1, 1, 1) / 2 has cos 1/2) counts at the default threshold
    M6 = _eye_dict(6, 3)
    W6 = torch.tensor([[[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]]], dtype=F64)
    assert pr.specialists(W6, M6)[0, 0].tolist() == [True, False, False]
    assert pr.specialists(W6, M6, threshold=0.3)[0, 0].tolist() == [False, False, False]


def test_strongest_minority_feature_per_run_on_the_squared_cosine():
    # n_maj = 1, minority features 1 and 2. run 0: cos -0.9 on 1, +0.8 on 2 -> feature 1 (by cos^2);
    # run 1: +0.3 on 1, +0.7 on 2 -> feature 2
    M = _eye_dict(4, 3, R=2)
    W = torch.zeros(2, 2, 4, dtype=F64)
    W[0, 0, 1], W[0, 0, 3] = -0.9, 0.19**0.5
    W[0, 1, 2], W[0, 1, 3] = 0.8, 0.6
    W[1, 0, 1], W[1, 0, 3] = 0.3, 0.91**0.5
    W[1, 1, 2], W[1, 1, 3] = 0.7, 0.51**0.5
    assert pr.strongest_minority_feature(W, M, 1).tolist() == [1, 2]


# -- the oracle set --------------------------------------------------------------------------------


def test_oracle_set_ranks_specialists_by_squared_cosine():
    # feature 0; specialists with cos -0.9 (0.81), 0.8 (0.64), 0.7 (0.49): the top 2 are 0 and 1
    M = _eye_dict(3, 2)
    rest = [(1 - c * c) ** 0.5 for c in (0.9, 0.8, 0.7)]
    W = torch.tensor([[[-0.9, 0.0, rest[0]], [0.8, 0.0, rest[1]], [0.7, 0.0, rest[2]]]], dtype=F64)
    chosen = pr.oracle_set(W, M, torch.tensor([0]), 2)
    assert chosen[0].tolist() == [True, True, False]


def test_oracle_set_passes_its_threshold_on():
    # neuron 0: cos^2 0.36 on feature 0, neuron 1: 0.81; with threshold 0.5 only neuron 1 qualifies
    M = _eye_dict(3, 2)
    W = torch.tensor([[[0.6, 0.0, 0.8], [0.9, 0.0, 0.19**0.5]]], dtype=F64)
    assert pr.oracle_set(W, M, torch.tensor([0]), 2, threshold=0.5)[0].tolist() == [False, True]
    assert pr.oracle_set(W, M, torch.tensor([0]), 2)[0].tolist() == [True, True]


def test_oracle_set_ties_broken_by_index():
    # 20 identical specialists of feature 0: "largest cos^2 first" with ties by index picks 0..k-1
    M = _eye_dict(3, 2)
    W = torch.tensor([0.8, 0.0, 0.6], dtype=F64).expand(1, 20, 3).clone()
    chosen = pr.oracle_set(W, M, torch.tensor([0]), 4)
    assert chosen[0].tolist() == [True] * 4 + [False] * 16


# -- the log ---------------------------------------------------------------------------------------


def test_categories_one_pruned_step_and_inclusive_threshold():
    # one logged step, one pruned neuron with cos^2 exactly 0.25 on minority feature 1 (n_maj = 1):
    # a minority specialist, fraction 1 (of 1 neuron-step)
    log = pr.PruneLog(
        steps=[0],
        ids=[torch.tensor([[2]])],
        dominant=[torch.tensor([[1]])],
        cos2=[torch.tensor([[0.25]])],
        norm=[torch.tensor([[1.0]])],
    )
    cat = log.categories(1)
    assert cat["minority"].tolist() == [1.0]
    assert cat["majority"].tolist() == [0.0] and cat["unaligned"].tolist() == [0.0]


# -- the Pruner ------------------------------------------------------------------------------------


def test_pruner_recomputes_and_logs_counting_from_start():
    # start 1, every 3, log_every 3: masks recomputed at t = 1, 4 and logged at t = 1, 4, 7
    M = _eye_dict(4, 2)
    p = pr.Pruner(alpha=0.5, start=1, every=3, log_every=3)
    masks = {}
    for t in range(1, 8):
        # neuron (t mod 2) is the small one at step t
        W = torch.ones(1, 2, 4, dtype=F64)
        W[0, t % 2] *= 0.5
        masks[t] = p(t, W, M).tolist()
    # t = 1: neuron 1 small; t = 4: neuron 0 small; kept in between
    assert [masks[t] for t in (1, 2, 3)] == [[[1.0, 0.0]]] * 3
    assert [masks[t] for t in (4, 5, 6)] == [[[0.0, 1.0]]] * 3
    assert masks[7] == [[1.0, 0.0]]
    assert p.log.stack().steps.tolist() == [1, 4, 7]


def test_pruner_default_every_recomputes_each_step():
    M = _eye_dict(4, 2)
    p = pr.Pruner(alpha=0.5)
    assert p.every == 1
    for t in range(3):
        W = torch.ones(1, 2, 4, dtype=F64)
        W[0, t % 2] *= 0.5
        assert p(t, W, M)[0, t % 2].item() == 0.0


def test_pruner_oracle_mask_has_the_weights_dtype():
    M = _eye_dict(4, 2)
    oracle = torch.tensor([[True, False, False]])
    for dtype in (F64, torch.float32):
        p = pr.Pruner(rule="oracle", oracle=oracle)
        mask = p(0, torch.ones(1, 3, 4, dtype=dtype), M.to(dtype))
        assert mask.dtype == dtype and mask.tolist() == [[0.0, 1.0, 1.0]]


def test_pruner_error_messages():
    with pytest.raises(
        ValueError,
        match=r"^parameter 'oracle' is required with rule='oracle': "
        r"the \(R, m\) boolean pruned set$",
    ):
        pr.Pruner(rule="oracle")
    with pytest.raises(ValueError, match=r"^parameter 'oracle' is only used with rule='oracle'$"):
        pr.Pruner(oracle=torch.zeros(1, 2, dtype=torch.bool))
    with pytest.raises(
        ValueError,
        match=r"^parameter 'n_maj' = 0 is required with rule='minority': "
        r"the number of majority features \(>= 1\)$",
    ):
        pr.Pruner(rule="minority", n_maj=0)
    for kw, text in (
        (dict(start=-1), "parameter 'start' = -1 is not allowed: expected an integer >= 0"),
        (dict(every=0), "parameter 'every' = 0 is not allowed: expected an integer >= 1"),
        (dict(log_every=0), "parameter 'log_every' = 0 is not allowed: expected an integer >= 1"),
    ):
        with pytest.raises(ValueError) as err:
            pr.Pruner(**kw)
        assert str(err.value) == text


def test_pruner_minority_accepts_one_majority_feature():
    M = _eye_dict(3, 2)
    p = pr.Pruner(alpha=0.5, rule="minority", n_maj=1)
    W = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=F64)
    assert p(0, W, M).tolist() == [[1.0, 0.0]]


# -- eq. (5) ---------------------------------------------------------------------------------------


def _eq5_case(W_dtype=F64):
    s = tr.Setup(d=2, n_maj=1, d1=3, L=2, m=2, K=3, n_neg=2, tau=0.5)
    M = _eye_dict(3, 2)
    W = torch.tensor([[[1.0, 0.5, 0.0], [0.0, 1.0, 0.25]]], dtype=W_dtype)
    x = torch.tensor([[[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]], dtype=W_dtype)
    y = torch.tensor([[[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.25, 0.0, 1.0]]], dtype=W_dtype)
    z = torch.zeros(1, 3, 2, 2, dtype=W_dtype)
    batch = cd.Batch(x, y, z, z, True)
    return s, M, W, batch


def test_eq5_gradient_is_continuous_from_below_at_the_threshold():
    # grad h_i = sum_r 1[|<w_i, z_r>| >= b_i] z_r: at b_0 = |<w_0, x_0>| = 1 exactly the indicator
    # is on, as for any b_0 slightly below; above, it is off for that pair
    s, _, W, batch = _eq5_case()
    mask = torch.ones(1, 2, dtype=F64)
    at = pr.eq5_gradient(W, torch.tensor([[1.0, 0.0]], dtype=F64), batch, s, mask)
    below = pr.eq5_gradient(W, torch.tensor([[1.0 - 1e-12, 0.0]], dtype=F64), batch, s, mask)
    above = pr.eq5_gradient(W, torch.tensor([[1.0 + 1e-12, 0.0]], dtype=F64), batch, s, mask)
    assert torch.allclose(at, below, atol=1e-9)
    assert not torch.allclose(at, above, atol=1e-3)


def test_eq5_gradient_in_a_half_precision_dtype():
    # every factor in the weights' dtype (bfloat16 here, below the float32 default): the result
    # is bfloat16 and agrees with the float64 computation to bfloat16's precision
    s, _, W, batch = _eq5_case()
    want = pr.eq5_gradient(W, torch.zeros(1, 2, dtype=F64), batch, s, torch.ones(1, 2, dtype=F64))
    bf = torch.bfloat16
    half = cd.Batch(*(t.to(bf) for t in (batch.x, batch.y, batch.zx, batch.zy)), True)
    got = pr.eq5_gradient(
        W.to(bf), torch.zeros(1, 2, dtype=bf), half, s, torch.ones(1, 2, dtype=bf)
    )
    assert got.dtype == bf
    assert torch.allclose(got.double(), want, rtol=0.05, atol=0.02 * float(want.abs().max()))


# -- the mechanism and growth ----------------------------------------------------------------------


def test_linear_pair_moment_in_the_weights_dtype():
    # sum_{i in P} sum_j <w_i, M_j>^2 kappa_j: neuron 0 (pruned) has <w, M> = (1, 2), kappa (1, 0.5)
    M = _eye_dict(3, 2).float()
    W = torch.tensor([[[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]]])
    out = pr.linear_pair_moment(
        W, M, torch.tensor([[True, False]]), torch.tensor([[1.0, 0.5]], dtype=F64)
    )
    assert out.dtype == torch.float32 and out.tolist() == [1.0 + 4.0 * 0.5]


def test_log_growth_per_step_below_one():
    A = torch.tensor([[0.5, -2.0], [2.0, 8.0]], dtype=F64)  # (T = 2, 2)
    rate = pr.log_growth_per_step(A, torch.tensor([10, 20]))
    assert torch.allclose(rate, torch.tensor([math.log(4) / 10, math.log(4) / 10], dtype=F64))


def test_majority_scale_averages_over_every_specialist():
    # two runs, m = 3 neurons, n_maj = 2 majority features out of d = 3
    M = _eye_dict(4, 3, R=2)
    W = torch.zeros(2, 3, 4, dtype=F64)
    W[0, 0, 0], W[0, 1, 1], W[0, 2, 2] = 2.0, -4.0, 9.0  # specialists of 0 and 1: mean 3
    W[1, 0, 1], W[1, 1, 1], W[1, 2, 0] = 1.0, 5.0, 6.0  # all three: mean 4
    spec = torch.zeros(2, 3, 2, dtype=torch.bool)
    spec[0, 0, 0] = spec[0, 1, 1] = True
    spec[1, 0, 1] = spec[1, 1, 1] = spec[1, 2, 0] = True
    assert pr.majority_scale(W, M, spec).tolist() == [3.0, 4.0]


def test_minority_norm_gap_norms_per_neuron_and_empty_groups():
    # m = 4 neurons in d1 = 5: the neuron norms must be over d1 (a norm over m has another shape)
    M = _eye_dict(5, 2)
    W = torch.zeros(2, 4, 5, dtype=F64)
    W[0, 0, 1] = 0.5  # minority specialist (feature 1, n_maj = 1)
    W[0, 1, 0] = 4.0  # majority
    W[0, 2, 4] = 1.0  # unaligned
    W[0, 3, 3] = 2.0  # unaligned: the others' median norm is 2
    W[1, :, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64)  # run 1: no minority specialist
    gap = pr.minority_norm_gap(W, M, 1)
    assert math.isclose(gap[0].item(), math.log(0.5) - math.log(2.0), rel_tol=1e-12)
    assert math.isnan(gap[1].item())


def _hist(A, steps):
    h = tr.History()
    h.A, h.steps = A, torch.as_tensor(steps)
    return h


def test_other_feature_rate_over_a_later_window_per_run():
    # T = 3 logged steps 10, 20, 30 (the window is steps[-1] - steps[0] = 20); R = 2, d = 3
    A = torch.ones(3, 2, 1, 3, dtype=F64)
    A[0, 0, 0] = torch.tensor([1.0, 2.0, 2.0], dtype=F64)
    A[1, 0, 0] = torch.tensor([1.0, 99.0, 99.0], dtype=F64)  # the middle step is not read
    A[2, 0, 0] = torch.tensor([1.0, 2 * math.e**2, 2 * math.e**4], dtype=F64)
    A[2, 1, 0] = torch.tensor([math.e**6, 1.0, 1.0], dtype=F64)
    rate = pr.other_feature_rate(_hist(A, [10, 20, 30]), torch.tensor([0, 1]))
    # run 0: features 1, 2 grow by e^2 and e^4 -> (2 + 4) / 2 / 20; run 1: j* = 1 left out,
    # features 0, 2 grow by e^6 and 1 -> (6 + 0) / 2 / 20
    assert torch.allclose(rate, torch.tensor([3 / 20, 3 / 20], dtype=F64))
    A[2, 1, 0, 2] = math.e**2  # run 1 alone changes
    rate = pr.other_feature_rate(_hist(A, [10, 20, 30]), torch.tensor([0, 1]))
    assert torch.allclose(rate, torch.tensor([3 / 20, 4 / 20], dtype=F64))


# -- Table 2 and the summary -----------------------------------------------------------------------


def test_table2_rows_derived_columns_round_to_two_places(monkeypatch):
    table = (
        ("A", 1, 50.0, 0.3, 51.2345, 0.4, 3.0, 0.3, 2.7563, 0.4),
        ("A", 10, 50.0, None, 51.0, None, 3.0, None, 1.0, None),
    )
    monkeypatch.setattr(pr, "TABLE_2", table)
    r0, r1 = pr.table2_rows()
    assert r0["gain"] == 1.23 and r0["delta20_change"] == -0.24
    # both standard deviations combine to hypot(0.3, 0.4) = 0.5
    assert r0["gain_in_sd"] == 2.47  # 1.2345 / 0.5 = 2.469
    assert r0["delta20_change_in_sd"] == -0.49  # -0.2437 / 0.5 = -0.4874
    assert r1["gain_in_sd"] is None and r1["delta20_change_in_sd"] is None
    assert set(r0) == {
        "dataset",
        "rho",
        "gain",
        "delta20_change",
        "gain_in_sd",
        "delta20_change_in_sd",
    }


def test_table2_delta20_in_sd_on_the_transcribed_table():
    rows = {(r["dataset"], r["rho"]): r for r in pr.table2_rows()}
    # CIFAR10-LT rho 10: Delta20 3.42 +- 1.02 -> 2.99 +- 0.92
    want = round((2.99 - 3.42) / math.hypot(1.02, 0.92), 2)
    assert rows[("CIFAR10-LT", 10)]["delta20_change_in_sd"] == want == -0.31
    assert rows[("CIFAR10-LT", 1)]["delta20_change_in_sd"] is None


def test_table2_measures_a_zero_gain_and_a_tie(monkeypatch):
    table = (
        ("A", 1, 50.0, None, 50.0, None, 2.0, None, 2.0, None),
        ("A", 2, 50.0, None, 50.0, None, 2.0, None, 1.0, None),
    )
    monkeypatch.setattr(pr, "TABLE_2", table)
    got = pr.table2_measures()
    assert got["smallest_gain"] == 0.0 and got["smallest_gain_step"] == 0.0
    assert got["delta20_not_falling"] == 1  # the tie of the first row
