"""Tests of companions.contrastive.metrics written against its surviving mutants (issue 23).

Expected values are small cases worked out by hand (exact binary fractions, so that the
thresholds of the module's docstring are hit exactly), closed forms (a least-squares slope, the
intercept-only ridge fit), and a second implementation that replays the generators the docstrings
name (:func:`metrics.evaluate_runs` seeds ``test_seed + k`` and ``test_seed + 10_000_019 + k``).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from companions.contrastive import data as cd
from companions.contrastive import metrics as cmet
from companions.contrastive import model as cm
from companions.contrastive import training as tr

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


# -- thresholds of the conventions (module docstring) ----------------------------------------------


def test_n_aligned_default_threshold_is_inclusive_and_sign_free():
    # |cos| >= 0.3 (Figure 2): 0.3 and -0.3 count, 0.29 does not; counted over neurons (dim -2)
    C = torch.tensor([[[0.3, 0.29], [-0.3, 0.0], [0.1, -0.31]]], dtype=F64)
    assert cmet.n_aligned(C).tolist() == [[2, 1]]
    assert cmet.n_aligned(C, threshold=0.31).tolist() == [[0, 1]]


def test_max_alignment_is_over_neurons_of_the_absolute_cosine():
    C = torch.tensor([[[0.2, -0.9], [-0.5, 0.4]]], dtype=F64)
    assert cmet.max_alignment(C).tolist() == [[0.5, 0.9]]


def test_pure_neuron_boundaries():
    # pure for j: cos^2_ij >= 0.5 (0.5 counts) and every other cos^2 <= 0.1 (0.1 allowed)
    C2 = torch.tensor(
        [
            [
                [0.5, 0.1, 0.0],  # pure of 0: both boundaries hit exactly
                [0.5, 0.125, 0.0],  # 0.125 > 0.1: not pure
                [0.375, 0.0, 0.0],  # below 0.5
                [0.75, 0.0, 0.0],  # pure of 0
            ]
        ],
        dtype=F64,
    )
    assert cmet.pure_neurons(C2).tolist() == [
        [
            [True, False, False],
            [False, False, False],
            [False, False, False],
            [True, False, False],
        ]
    ]
    # the thresholds are parameters: hi = 0.75 leaves only the last, lo = 0.125 admits the second
    assert cmet.pure_neurons(C2, hi=0.75)[0, :, 0].tolist() == [False, False, False, True]
    assert cmet.pure_neurons(C2, lo=0.125)[0, :, 0].tolist() == [True, True, False, True]


def test_pure_neuron_counts_other_features_only():
    # two features both >= 0.5 (impossible for a unit vector, but the rule is stated per feature):
    # each is "another feature above lo" for the other, so neither is pure
    C2 = torch.tensor([[[0.5, 0.5]]], dtype=F64)
    assert cmet.pure_neurons(C2).tolist() == [[[False, False]]]


def test_mixed_neurons_and_empirical_n_i_boundaries():
    # cos^2 >= 0.1 counts (0.1 included); mixed: two or more such features
    C2 = torch.tensor([[[0.1, 0.1, 0.0], [0.1, 0.0625, 0.0], [0.25, 0.25, 0.25]]], dtype=F64)
    assert cmet.mixed_neurons(C2).tolist() == [[True, False, True]]
    assert cmet.empirical_n_i(C2).tolist() == [[2, 1, 3]]
    assert cmet.mixed_neurons(C2, lo=0.25).tolist() == [[False, False, True]]
    assert cmet.empirical_n_i(C2, lo=0.25).tolist() == [[0, 0, 3]]


def test_by_config_std_is_the_unbiased_one():
    mu, sd = cmet.by_config(
        torch.tensor([1.0, 3.0, 10.0, 10.0], dtype=F64), torch.tensor([0, 0, 1, 1]), 2
    )
    # sample sd of (1, 3): sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2)
    assert mu.tolist() == [2.0, 10.0]
    assert torch.allclose(sd, torch.tensor([2.0**0.5, 0.0], dtype=F64))
    _, sd1 = cmet.by_config(torch.tensor([4.0, 7.0], dtype=F64), torch.tensor([0, 1]), 2)
    assert sd1.tolist() == [0.0, 0.0] and sd1.dtype == F64


# -- Figure 4 --------------------------------------------------------------------------------------


def test_test_cosine_worked_case():
    hx = torch.tensor([[[3.0, 4.0], [1.0, 0.0], [0.0, 0.0], [2.0, 0.0]]], dtype=F64)
    hy = torch.tensor([[[4.0, 3.0], [-2.0, 0.0], [1.0, 1.0], [0.0, 0.0]]], dtype=F64)
    cos, zero = cmet.test_cosine(hx, hy)
    # cosines 24/25, -1, and 0 for the two pairs with a zero embedding; half the pairs are zero
    assert torch.allclose(cos, torch.tensor([(24 / 25 - 1) / 4], dtype=F64))
    assert zero.tolist() == [0.5]


def test_test_cosine_floor_is_a_parameter():
    # an embedding of norm 1e-13 is below the default floor 1e-12: treated as zero
    hx = torch.tensor([[[1e-13, 0.0], [1.0, 0.0]]], dtype=F64)
    hy = torch.tensor([[[1.0, 0.0], [1.0, 0.0]]], dtype=F64)
    cos, zero = cmet.test_cosine(hx, hy)
    assert cos.tolist() == [0.5] and zero.tolist() == [0.5]
    cos, zero = cmet.test_cosine(hx, hy, floor=1e-14)
    assert torch.allclose(cos, torch.tensor([1.0], dtype=F64)) and zero.tolist() == [0.0]
    cos, zero = cmet.test_cosine(hx, hy, floor=2.0)  # everything below the floor
    assert cos.tolist() == [0.0] and zero.tolist() == [1.0]


# -- Figure 5 --------------------------------------------------------------------------------------


def test_regression_target_rejects_an_unknown_target():
    with pytest.raises(ValueError, match="'reg_target' = 'median'"):
        cmet.regression_target(torch.zeros(1, 1, 1, 1), "median")


def test_regression_target_mean_is_over_tokens_and_support_sign_free():
    z = torch.tensor([[[[-1.0, 0.0, 0.5], [0.0, 0.0, 0.25]]]], dtype=F64)  # (1, 1, L=2, 3)
    assert cmet.regression_target(z).tolist() == [[[-0.5, 0.0, 0.375]]]
    assert cmet.regression_target(z, "support").tolist() == [[[1.0, 0.0, 1.0]]]


def _intercept_only_case(ridge=1e-6):
    # f(X) = 0 on every pair: the fit is the intercept alone, the training mean of y shrunk by
    # N / (N + ridge (1 + N / (m + 1))) (G = diag(0, .., 0, N), mean of its diagonal N / (m + 1))
    z_tr = torch.tensor([1.0, 3.0, 2.0, 2.0], dtype=F64)  # mean 2
    z_te = torch.tensor([0.0, 8.0], dtype=F64)
    m = 2
    zt = torch.stack([z_tr, 10 * z_tr, -z_tr], -1)[None, :, None, :]  # (1, 4, L=1, d=3)
    ze = torch.stack([z_te, z_te + 1, 3 * z_te], -1)[None, :, None, :]
    h_tr, h_te = torch.zeros(1, 4, m, dtype=F64), torch.zeros(1, 2, m, dtype=F64)
    return cmet.regression_mse(h_tr, zt, h_test=h_te, z_test=ze, n_maj=1, ridge=ridge), m


def test_regression_mse_intercept_only_closed_form():
    (mse, r), _ = _intercept_only_case()
    # predictions (2, 20, -2); test targets (0, 8), (1, 9), (0, 24)
    errs = [(2 - 0) ** 2 + (2 - 8) ** 2, (20 - 1) ** 2 + (20 - 9) ** 2, 2**2 + 26**2]
    assert torch.allclose(mse, torch.tensor([sum(errs) / 6], dtype=F64), rtol=1e-5)
    # 1 - R^2 on the minority columns 1, 2: mean squared error over the unbiased test variance
    var = [(9 - 1) ** 2 / 2, 24**2 / 2]
    r_expected = ((errs[1] / 2) / var[0] + (errs[2] / 2) / var[1]) / 2
    assert torch.allclose(r, torch.tensor([r_expected], dtype=F64), rtol=1e-5)


def test_regression_mse_ridge_shrinks_by_the_mean_diagonal():
    # a large ridge makes the shrink factor visible: N = 4, m = 2, factor 4 / (4 + ridge (1 + 4/3))
    ridge = 3.0
    (mse, _), _ = _intercept_only_case(ridge)
    c = 4 / (4 + ridge * (1 + 4 / 3))
    pred = [2 * c, 20 * c, -2 * c]
    te = [(0.0, 8.0), (1.0, 9.0), (0.0, 24.0)]
    errs = sum((p - t) ** 2 for p, col in zip(pred, te) for t in col)
    assert torch.allclose(mse, torch.tensor([errs / 6], dtype=F64), rtol=1e-12)


# -- Experiments 3-4, replayed ---------------------------------------------------------------------


def _hist_and_setup():
    s = tr.Setup(d=3, n_maj=1, d1=6, L=2, m=4, K=4, n_neg=3, token_q=0.5)
    R = 3
    M = cd.dictionary(R, s.d1, s.d, g(1))
    W = torch.randn(R, s.m, s.d1, generator=g(2), dtype=F64)
    hist = SimpleNamespace(
        W=W,
        M=M.float(),  # evaluate_runs casts M to W's dtype
        b_final=torch.full((R, s.m), 0.1, dtype=F64) * torch.arange(1, R + 1)[:, None],
        probs=cd.activation_probs([[1.0, 0.5, 0.25]] * R, 0.5),
        sigma=torch.tensor([0.1, 0.3, 0.2], dtype=F64),
    )
    return hist, s


def _embed(hist, s, sel, n, seed):
    """embed_pairs written out: one batch of n pairs, features of both views."""
    M = hist.M[sel].to(F64)
    batch = cd.sample_batch(
        M,
        hist.probs[sel],
        sigma=hist.sigma[sel],
        K=n,
        L=s.L,
        mag_low=s.mag_low,
        q=s.token_q,
        generator=g(seed),
        pooled=s.pooled,
    )
    hx = cm.features(hist.W[sel], batch.x, hist.b_final[sel], s.L, s.att_scale)
    hy = cm.features(hist.W[sel], batch.y, hist.b_final[sel], s.L, s.att_scale)
    return hx, hy, batch.zx


def test_embed_pairs_uses_each_runs_dictionary_bias_and_noise():
    hist, s = _hist_and_setup()
    hist.M = hist.M.to(F64)
    hx, hy, zx = cmet.embed_pairs(hist, s, 5, g(7))
    ex, ey, ez = _embed(hist, s, slice(None), 5, 7)
    assert torch.equal(hx, ex) and torch.equal(hy, ey) and torch.equal(zx, ez)
    assert hx.shape == (3, 5, s.m) and not torch.equal(hx, hy)


@pytest.mark.parametrize("chunk", [1, 2])
def test_evaluate_runs_replays_the_seeded_generators(chunk):
    hist, s = _hist_and_setup()
    runs = slice(0, 3)
    for target in ("mean", "support"):
        got = cmet.evaluate_runs(
            hist, s, runs=runs, test_pairs=6, train_pairs=9, test_seed=5, chunk=chunk, target=target
        )
        cols = []
        for k in range(0, 3, chunk):
            sel = slice(k, min(k + chunk, 3))
            hx, hy, zx = _embed(hist, s, sel, 6, 5 + k)
            # training pairs: the seed test_seed + 10_000_019 + k stated in the source
            htr, _, ztr = _embed(hist, s, sel, 9, 5 + 10_000_019 + k)
            cos, zero = cmet.test_cosine(hx, hy)
            mse, r2 = cmet.regression_mse(
                htr, ztr, h_test=hx, z_test=zx, n_maj=s.n_maj, target=target
            )
            cols.append(torch.stack([cos, zero, mse, r2]))
        want = torch.cat(cols, 1)
        assert len(got) == 4
        for a, b in zip(got, want):
            assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_evaluate_runs_on_a_subset_of_runs():
    hist, s = _hist_and_setup()
    got = cmet.evaluate_runs(
        hist, s, runs=slice(1, 3), test_pairs=6, train_pairs=9, test_seed=0, chunk=5
    )
    sel = slice(1, 3)
    hx, hy, zx = _embed(hist, s, sel, 6, 0)
    htr, _, ztr = _embed(hist, s, sel, 9, 10_000_019)
    cos, zero = cmet.test_cosine(hx, hy)
    mse, r2 = cmet.regression_mse(htr, ztr, h_test=hx, z_test=zx, n_maj=s.n_maj)
    for a, b in zip(got, (cos, zero, mse, r2)):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)


# -- slopes ----------------------------------------------------------------------------------------


def test_stage2_slopes_refuses_t2_at_or_before_t1():
    h = tr.History()
    h.steps = torch.tensor([0, 10, 20])
    h.A = torch.ones(3, 2, 1, 1, dtype=F64)
    h.t1, h.t2 = torch.tensor([5, 10]), torch.tensor([8, 20])  # run 0: both map to step 10
    with pytest.raises(ValueError, match="run 0: T2 is logged at or before T1; lower parameter"):
        cmet.stage2_slopes(h, [0])
    A = torch.ones(3, 2, 1, 1, dtype=F64)
    A[2, 1] = torch.e**5  # run 1: log-growth 5 over steps 10 -> 20
    h.A = A
    assert torch.allclose(cmet.stage2_slopes(h, [1]), torch.tensor([[0.5]], dtype=F64))


def test_stage2_slopes_max_is_over_neurons_of_the_absolute_projection():
    h = tr.History()
    h.steps = torch.tensor([0, 4])
    # two neurons, one feature: |projection| 1 -> e^2 on the negative neuron, the other 1 -> 1
    h.A = torch.tensor([[[[-1.0], [0.5]]], [[[-(torch.e**2)], [1.0]]]], dtype=F64)  # (T, R, m, d)
    h.t1, h.t2 = torch.tensor([0]), torch.tensor([4])
    assert torch.allclose(cmet.stage2_slopes(h, [0]), torch.tensor([[0.5]], dtype=F64))


def test_trend_slopes_closed_form_and_count_check():
    eps = [0.0, 1.0, 3.0]
    vals = torch.tensor([1.0, 0.0, 2.0, 4.0, 7.0, 5.0])  # (eps, NSR = 1, repeat = 2), flattened
    # x - mean = (-4/3, -1/3, 5/3), sum of squares 14/3; slope = sum((x - mean) y) / (14/3)
    # repeat 0: y = (1, 2, 7) -> (29/3) / (14/3) = 29/14; repeat 1: y = (0, 4, 5) -> 7 / (14/3)
    s = cmet.trend_slopes(vals, eps, 1, 2)
    assert s.dtype == F64
    assert torch.allclose(s, torch.tensor([[29 / 14, 3 / 2]], dtype=F64))
    with pytest.raises(ValueError, match=r"has 5 runs: expected len\(eps_grid\) \* n_nsr \* "):
        cmet.trend_slopes(vals[:5], eps, 1, 2)
    with pytest.raises(ValueError, match="= 6"):
        cmet.trend_slopes(vals[:5], eps, 1, 2)


def test_coefficient_ratio_uses_own_feature_and_both_kinds():
    M = torch.eye(4, 3, dtype=F64)[None]  # features 0 majority, 1, 2 minority (n_maj = 1)
    W = torch.zeros(1, 4, 4, dtype=F64)
    W[0, 0, 0] = -4.0  # majority pure, |<w, M_0>| = 4
    W[0, 1, 1] = 1.0  # minority pure, 1
    W[0, 2, 2], W[0, 2, 3] = 3.0, 0.5  # minority pure (cos^2 = 9 / 9.25), |<w, M_2>| = 3
    W[0, 3, 3] = 7.0  # unaligned: no feature
    # minority mean (1 + 3) / 2 = 2 over the majority mean 4
    assert torch.allclose(cmet.coefficient_ratio(W, M, 1), torch.tensor([0.5], dtype=F64))
    # no minority pure neuron (every feature majority): nan; a second run is computed on its own
    assert torch.isnan(cmet.coefficient_ratio(W, M, 3)).all()
    W2 = torch.cat([W, 2 * W.flip(1)])  # the same neurons, scaled: the same ratio
    assert torch.allclose(cmet.coefficient_ratio(W2, M, 1), torch.tensor([0.5, 0.5], dtype=F64))


def test_coefficient_ratio_pure_by_squared_cosine():
    # a minority neuron with cos 0.75 on feature 1 and 0.3 on feature 2: cos^2 = 0.5625 and 0.09,
    # pure of feature 1 (2 cos or cos^3 would not call it pure)
    M = torch.eye(4, 3, dtype=F64)[None]
    W = torch.zeros(1, 2, 4, dtype=F64)
    W[0, 0, 0] = 2.0  # majority pure, projection 2
    W[0, 1, 1], W[0, 1, 2], W[0, 1, 3] = 0.75, 0.3, (1 - 0.5625 - 0.09) ** 0.5
    assert torch.allclose(cmet.coefficient_ratio(W, M, 1), torch.tensor([0.375], dtype=F64))


def test_pure_neurons_with_hi_equal_to_lo():
    # hi = lo = 0.1: cos^2 = 0.1 on feature 0 is at least hi, and no other feature exceeds lo
    C2 = torch.tensor([[[0.1, 0.0, 0.0]]], dtype=F64)
    assert cmet.pure_neurons(C2, hi=0.1, lo=0.1).tolist() == [[[True, False, False]]]


def test_regression_target_support_is_in_the_codes_dtype():
    z = torch.tensor([[[[0.5, 0.0]]]], dtype=torch.float32)
    assert cmet.regression_target(z, "support").dtype == torch.float32


def test_regression_mse_support_target_intercept_only():
    # f(X) = 0: predictions are the training frequencies of each feature (shrink ~1e-6)
    z_tr = torch.tensor([[1.0, 0.0], [-2.0, 0.0], [0.0, 0.0], [0.5, 3.0]], dtype=F64)
    z_te = torch.tensor([[0.0, 0.5], [-2.0, 0.0]], dtype=F64)  # support (0, 1), (1, 0)
    h_tr, h_te = torch.zeros(1, 4, 1, dtype=F64), torch.zeros(1, 2, 1, dtype=F64)
    mse, r = cmet.regression_mse(
        h_tr,
        z_tr[None, :, None],
        h_test=h_te,
        z_test=z_te[None, :, None],
        n_maj=1,
        target="support",
    )
    # support frequencies (3/4, 1/4); test indicators (0, 1), (1, 0) (not the codes' values)
    errs = [(0.75 - 0) ** 2, (0.25 - 1) ** 2, (0.75 - 1) ** 2, (0.25 - 0) ** 2]
    assert torch.allclose(mse, torch.tensor([sum(errs) / 4], dtype=F64), rtol=1e-5)
    # minority column 1: errors (0.75, 0.25), variance of (1, 0) = 1/2
    assert torch.allclose(r, torch.tensor([(0.5625 + 0.0625) / 2 / 0.5], dtype=F64), rtol=1e-5)


def test_regression_mse_small_target_variance():
    # minority targets of variance 1/32 (values 0, 1/4): the ratio is not capped by any floor
    z_tr = torch.tensor([0.0, 0.25, 0.0, 0.25], dtype=F64)  # mean 1/8
    z_te = torch.tensor([0.0, 0.25], dtype=F64)
    zt = torch.stack([z_tr, z_tr], -1)[None, :, None, :]
    ze = torch.stack([z_te, z_te], -1)[None, :, None, :]
    h_tr, h_te = torch.zeros(1, 4, 1, dtype=F64), torch.zeros(1, 2, 1, dtype=F64)
    _, r = cmet.regression_mse(h_tr, zt, h_test=h_te, z_test=ze, n_maj=1)
    # errors 1/8 and -1/8: mean square 1/64 over the variance 1/32 (the unbiased one of 0, 1/4)
    assert torch.allclose(r, torch.tensor([0.5], dtype=F64), rtol=1e-5)


def test_regression_mse_stays_in_the_features_dtype():
    # float32 features under a float64 default: the intercept column and the ridge are float32
    h = torch.randn(1, 8, 2, generator=g(0))
    z = torch.randn(1, 8, 1, 3, generator=g(1))
    want = cmet.regression_mse(h, z, h_test=h, z_test=z, n_maj=1)
    old = torch.get_default_dtype()
    torch.set_default_dtype(F64)
    try:
        got = cmet.regression_mse(h, z, h_test=h, z_test=z, n_maj=1)
    finally:
        torch.set_default_dtype(old)
    assert [t.dtype for t in got] == [torch.float32, torch.float32]
    assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_stage2_slopes_reads_each_runs_own_stages():
    h = tr.History()
    h.steps = torch.tensor([0, 10, 20])
    h.t1, h.t2 = torch.tensor([0, 10]), torch.tensor([20, 20])
    A = torch.ones(3, 2, 1, 1, dtype=F64)
    A[1:, 1] = torch.tensor([math.e, math.e**3], dtype=F64)[:, None, None]  # run 1: 1, e, e^3
    h.A = A
    # run 1 alone: from its T1 (step 10) to its T2 (step 20): log-growth 2 over 10 steps
    assert torch.allclose(cmet.stage2_slopes(h, [1]), torch.tensor([[0.2]], dtype=F64))
    h.t2 = torch.tensor([10, 20])  # run 0's T2 = its T1 is not read for run 1
    assert torch.allclose(cmet.stage2_slopes(h, [1]), torch.tensor([[0.2]], dtype=F64))


def test_test_cosine_needs_norms_strictly_above_the_floor():
    hx = torch.tensor([[[1.0, 0.0], [2.0, 0.0]]], dtype=F64)
    hy = torch.tensor([[[2.0, 0.0], [1.0, 0.0]]], dtype=F64)
    # floor 1: the first pair's hx and the second pair's hy have norm exactly 1, not above it
    cos, zero = cmet.test_cosine(hx, hy, floor=1.0)
    assert cos.tolist() == [0.0] and zero.tolist() == [1.0]


def test_trend_slopes_in_float64_and_exact_message():
    # eps values 1e-9 apart: in float64 the slope of v = 3 eps is 3, in float32 they would collapse
    eps = [1.0, 1.0 + 1e-9, 1.0 + 2e-9]
    vals = 3 * torch.tensor(eps, dtype=F64)
    assert torch.allclose(cmet.trend_slopes(vals, eps, 1, 1), torch.tensor([[3.0]], dtype=F64))
    with pytest.raises(ValueError) as err:
        cmet.trend_slopes(vals[:2], eps, 1, 1)
    assert str(err.value) == (
        "parameter 'values' has 2 runs: expected len(eps_grid) * n_nsr * repeats = 3"
    )
    with pytest.raises(ValueError) as err:
        cmet.trend_slopes(torch.zeros(5), [0.0, 1.0], 2, 3)
    assert str(err.value).endswith("repeats = 12")
