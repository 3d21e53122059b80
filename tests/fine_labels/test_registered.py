"""Tests of what the fine-labels chapters hand to their registered claims (issue 43): the
singleton detectors and the spread of their updates (eqs. 32, 201, 204), Definition G.2's T0,
the closed forms of the early window of Theorem 5.1, the per-seed statistics, and the
transcription's standard deviations. Every expected value is computed by hand or independently."""

import math

import pytest
import sympy as sp
import torch

import companions
from companions.fine_labels import data as fdata
from companions.fine_labels import experiments as fx
from companions.fine_labels import model as fmodel
from companions.fine_labels import symbolic as fsym
from companions.fine_labels import tables as ftab
from companions.fine_labels import theory as fth
from companions.fine_labels import training as ftrain

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


# -- singleton detectors and the spread of their updates ----------------------------------------
def test_singleton_detectors_need_one_feature_above_and_every_other_below():
    W0 = torch.zeros(1, 4, 5)  # features 0..2; element 3, 4 are no feature
    W0[0, 0, 0] = 2.0  # a singleton of feature 0
    W0[0, 1, 0], W0[0, 1, 1] = 2.0, 1.2  # above high on 0, between low and high on 1: not one
    W0[0, 2, 2], W0[0, 2, 4] = 2.0, 5.0  # a large non-feature element does not count
    W0[0, 3, 1] = 1.4  # below high: no detector at all
    s = fmodel.singleton_detectors(W0, torch.arange(3), 1.5, 1.0)
    assert s[0].tolist() == [
        [True, False, False],
        [False, False, False],
        [False, False, True],
        [False, False, False],
    ]


def test_update_spread_is_zero_for_identical_updates_and_measures_a_difference():
    W0 = torch.randn(1, 4, 3, generator=g(), dtype=F64)
    single = torch.zeros(1, 4, 2, dtype=torch.bool)
    single[0, 0, 0] = single[0, 1, 0] = True  # output 0 (rows 0, 1), feature 0
    single[0, 2, 1] = True  # output 1 has a single detector: no group of two
    dw = torch.tensor([1.0, 2.0, 2.0], dtype=F64)
    W = W0.clone()
    W[0, 0] += dw
    W[0, 1] += dw
    W[0, 2] += 7.0
    assert fmodel.update_spread(W, W0, single, 2).tolist() == [pytest.approx(0.0, abs=1e-15)]
    W[0, 1] += torch.tensor([0.0, 0.0, 0.6], dtype=F64)  # mean (1, 2, 2.3); deviation 0.3 each
    want = 0.3 / math.sqrt(1 + 4 + 2.3**2)
    assert float(fmodel.update_spread(W, W0, single, 2)[0]) == pytest.approx(want, rel=1e-12)
    # nothing moved, or no group of two: NaN
    assert math.isnan(float(fmodel.update_spread(W0, W0, single, 2)[0]))
    lone = single.clone()
    lone[0, 1, 0] = False
    assert math.isnan(float(fmodel.update_spread(W, W0, lone, 2)[0]))


def test_update_spread_groups_by_output_not_across_outputs():
    W0 = torch.zeros(2, 4, 2, dtype=F64)
    single = torch.zeros(2, 4, 1, dtype=torch.bool)
    single[:, :, 0] = True  # every neuron; outputs own rows {0, 1} and {2, 3}
    W = W0.clone()
    W[:, :2, 0] += 1.0  # output 0 moves by (1, 0), output 1 by (0, 1): each group is uniform
    W[:, 2:, 1] += 1.0
    assert fmodel.update_spread(W, W0, single, 2).tolist() == [0.0, 0.0]
    # one group of four: mean (1/2, 1/2), each deviation of norm sqrt(1/2), as the mean's
    assert fmodel.update_spread(W, W0, single, 1).tolist() == [pytest.approx(1.0)] * 2


def test_one_coarse_step_moves_singleton_detectors_together():
    dc = fdata.DataConfig(d=12, k=2, P=8, s_star=2, sigma_zeta=0.01)
    s0 = 1e-3
    net = fmodel.init(2, 2, m=200, d=12, sigma0=s0, tau=1.0, g=g(1), dtype=F64)
    W0 = net.W.clone()
    single = fmodel.singleton_detectors(W0, torch.arange(6), 1.5 * s0, 0.5 * s0)
    X, y, _ = fdata.sample(dc, 2, 8, False, g(2), dtype=F64)
    ftrain.sgd_step(net, X, labels=y, eta=0.1, lam_b=30.0)
    spread = fmodel.update_spread(net.W, W0, single, 2)
    assert bool(torch.isfinite(spread).all()) and float(spread.max()) < 1e-10
    # the coefficients of another output's neurons (repeat for repeat_interleave) break it
    start = fmodel.Net(W0.clone(), torch.full((2, 400), -s0, dtype=F64), 2, 200)
    coef = ftrain.label_dL_dF(lambda f: f, fmodel.forward(start, X), y).repeat(1, 1, 200)
    gate = (fmodel.preactivations(start, X) > 0).double() * coef[:, :, None, :]
    grad = torch.bmm(gate.reshape(2, 64, -1).transpose(1, 2), X.reshape(2, 64, 12))
    bad = fmodel.update_spread(W0 - 0.1 / 8 * grad, W0, single, 2)
    assert float(bad.max()) > 1e-3


def test_own_features_are_the_superclass_common_and_the_groups_subclass_features():
    coarse = ftrain.own_features(2, 2)  # features v+, v-, v+0, v+1, v-0, v-1
    assert coarse.tolist() == [[1, 0, 1, 1, 0, 0], [0, 1, 0, 0, 1, 1]]
    fine = ftrain.own_features(4, 2)  # outputs (+,0), (+,1), (-,0), (-,1)
    assert fine[1].tolist() == [1, 0, 0, 1, 0, 0] and fine[2].tolist() == [0, 1, 0, 0, 1, 0]
    grouped = ftrain.own_features(4, 4)  # two groups of two subclasses per superclass
    assert grouped[3].tolist() == [0, 1, 0, 0, 0, 0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="'C'"):
        ftrain.own_features(6, 4)


def test_a_short_coarse_run_keeps_its_singleton_detectors_together():
    cfg = companions.preset("fine-labels-coarse", "smoke", device="cpu", steps=12, n_logs=4)
    rt = companions.setup("cpu", 0, dtype="float32")
    tests = fx.test_sets(fx.data_config(cfg), cfg.seeds, 16, rt.generator(1), rt.device)
    _, h = fx.run(cfg, rt, kind="coarse", steps=cfg.steps, tests=tests)
    spread = h["spread"]
    assert h["spread"].shape == (len(h["t"]), cfg.seeds)
    assert bool(torch.isfinite(spread[1:]).any()) and float(spread[1:].nan_to_num(0).max()) < 1e-5


# -- Definition G.2: any output ------------------------------------------------------------------
def test_T0_is_reached_by_an_output_other_than_the_samples_label():
    dc = fdata.DataConfig(d=8, k=2, P=6, s_star=2, sigma_zeta=1e-6)
    W = torch.zeros(1, 4, 8, dtype=F64)
    W[0, 0, 1] = 1.0  # output (+,0) responds to v_-, which only '-' samples (labels 2, 3) carry
    net = fmodel.Net(W, torch.zeros(1, 4, dtype=F64), 4, 1)
    X, y, _ = fdata.sample(dc, 1, 4, False, g(3), dtype=F64)
    tests = {"easy": (X, y)}
    fine = fx.labeller("fine", 2)
    h = ftrain.train(
        net,
        dc,
        steps=2,
        N=4,
        eta=1e-9,
        lam_b=10.0,
        labels_of=fine,
        g=g(4),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.5,
        delta=0.1,
        B=1.5,
    )
    assert h["T0"].tolist() == [0]  # F_(+,0) = 2 on a '-' sample at t = 0; its own outputs are 0


# -- the early window of Theorem 5.1 ------------------------------------------------------------
def test_relu_mean_against_a_hand_value_and_quadrature():
    assert fth.relu_mean(1.0, 0.0) == pytest.approx(1 / math.sqrt(2 * math.pi))
    x = torch.linspace(-12, 12, 200_001, dtype=F64)
    dens = torch.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)
    quad = float(torch.trapezoid(torch.relu(3.0 * x - 1.75) * dens, x))
    assert fth.relu_mean(3.0, 1.75) == pytest.approx(quad, rel=1e-8)
    with pytest.raises(ValueError, match="'scale'"):
        fth.relu_mean(0.0, 1.0)


def test_zeta_star_and_feature_responses_are_sums_of_relu_means():
    assert fth.zeta_star_response(128, 1.75, 4.0) == pytest.approx(128 * fth.relu_mean(4.0, 1.75))
    assert fth.feature_response_at_init(128, 1.75, 3) == pytest.approx(
        3 * 128 * fth.relu_mean(1.0, 1.75)
    )
    gen = g(5)
    w = torch.randn(400_000, generator=gen, dtype=F64) * 4.0  # <w, zeta*> over sigma0, ||zeta*|| 4
    mc = float(torch.relu(w - 1.75).mean())
    assert fth.relu_mean(4.0, 1.75) == pytest.approx(mc, rel=5e-3)


def test_feature_noise_onset_by_hand():
    # alpha (w0 + A) - tau - A / lam = 0 at A = (1.75 - 0.5 * 2) / (0.5 - 1/30)
    assert fth.feature_noise_onset(2.0, 1.75, 0.5, 30.0) == pytest.approx(0.75 / (0.5 - 1 / 30))
    assert fth.feature_noise_onset(4.0, 1.75, 0.5, 30.0) == 0.0  # it fires already
    with pytest.raises(ValueError, match="'alpha'"):
        fth.feature_noise_onset(2.0, 1.75, 0.02, 30.0)


def test_early_window_growth_by_hand():
    # s* (w0 - tau + A/k) = s_dag (alpha (w0 + A) - tau - A/lam) at A = 3.22 / 0.35833...
    got = fth.early_window_growth(2.26, 1.75, alpha=0.4, lam_b=30.0, s_star=3, s_dagger=2, k=8)
    want = (3 * 0.51 + 2 * (1.75 - 0.4 * 2.26)) / (2 * (0.4 - 1 / 30) - 3 / 8)
    assert got == pytest.approx(want, rel=1e-12)
    lhs = 3 * (2.26 - 1.75 + got / 8)
    rhs = 2 * (0.4 * (2.26 + got) - 1.75 - got / 30)
    assert lhs == pytest.approx(rhs, rel=1e-12)
    assert (
        fth.early_window_growth(2.26, 1.75, alpha=0.1, lam_b=30.0, s_star=3, s_dagger=2, k=8)
        == math.inf
    )  # rho < 1: never


# -- per-seed statistics --------------------------------------------------------------------------
def test_lowest_mean_picks_the_row_with_the_lowest_mean():
    values = [[0.5, 0.4], [0.1, 0.6], [0.2, 0.3]]  # means 0.45, 0.35, 0.25
    assert fx.lowest_mean(values) == (2, [0.2, 0.3])
    with pytest.raises(ValueError, match="shape"):
        fx.lowest_mean([0.1, 0.2])


def test_common_detector_projection_by_hand():
    W0 = torch.zeros(1, 4, 3)  # m = 2: output 0 rows {0, 1}, output 1 rows {2, 3}
    W0[0, 0, 0], W0[0, 1, 0], W0[0, 3, 1] = 2.0, 3.0, 7.0
    W0[0, 2, 0] = 100.0  # output 1's projection on v_+ is not a common detector of output 1
    det = W0 >= 1.0
    assert fx.common_detector_projection(W0, det, 2) == pytest.approx((2 + 3 + 7) / 3)


def test_max_common_ratio_by_hand():
    k = 2
    counts = torch.zeros(1, 4, 6)  # outputs (+,0), (+,1), (-,0), (-,1); features v+, v-, ...
    counts[0, 2, 1], counts[0, 3, 1] = 3.0, 9.0  # '-' outputs on v_-: max 9
    counts[0, 0, 0], counts[0, 1, 0] = 4.0, 8.0  # '+' outputs on v_+: max 8
    counts[0, 0, 2], counts[0, 1, 3] = 2.0, 4.0  # own subclass features of '+': mean 3
    counts[0, 2, 4], counts[0, 3, 5] = 4.0, 4.0  # of '-': mean 4
    assert fx.max_common_ratio(counts, k) == [pytest.approx((9 / 3 + 8 / 4) / 2)]


def test_margin_fits_recover_a_line_and_jensen_lowers_the_mean_margin_estimator():
    t = torch.arange(10, dtype=F64)
    # two samples whose e^F + F are the lines 1 + 2t and 1 + 6t (F solves e^F + F = c)
    F = torch.stack([_solve(1 + 2 * t), _solve(1 + 6 * t)], -1)[:, None, :]  # (L, S = 1, n = 2)
    half = (t >= 4).numpy()
    fits = fx.margin_fits(t.numpy(), F, half)
    slope, r2 = fits["per sample"]
    assert slope[0] == pytest.approx(4.0, rel=1e-9) and r2[0] == pytest.approx(1.0, abs=1e-12)
    assert fits["mean margin"][0][0] < 4.0  # e^(mean F) <= mean e^F: a lower slope


def _solve(c):
    F = torch.log(c)
    for _ in range(60):  # Newton on e^F + F = c
        F = F - (F.exp() + F - c) / (F.exp() + 1)
    return F


def test_active_feature_counts_and_bias_rates_by_hand():
    k, m = 1, 2
    W = torch.zeros(1, 4, 4)  # features v+, v-, v+0, v-0
    W[0, 0, 0], W[0, 1, 0] = 1.0, 1.0  # output + : two neurons on v+
    W[0, 0, 2] = 1.0  # one on v+0
    W[0, 2, 1] = 1.0  # output - : one neuron on v-, none on v-0
    net = fmodel.Net(W, torch.full((1, 4), -0.5), 2, m)
    n_c, n_f = fx.active_feature_counts(net, k)
    assert n_c == [pytest.approx(1.5)] and n_f == [pytest.approx(0.5)]
    db = torch.tensor([[-0.1, -0.3, -0.2, 0.0]])
    dA = torch.zeros(1, 4, 4)
    dA[0, :, 0] = torch.tensor([2.0, 3.0, 0.0, 0.0])
    dA[0, 2, 1] = 4.0
    det = torch.zeros(1, 4, 4, dtype=torch.bool)
    det[0, 0, 0] = det[0, 1, 0] = det[0, 2, 1] = True
    rate = fx.bias_rates(db, dA, det, m, 30.0)[0]
    assert rate == pytest.approx(30.0 * (-0.05 - 0.1 - 0.05) / 3)


def test_subclass_detector_activity_and_feature_noise_terms_by_hand():
    k, m = 1, 2
    W = torch.zeros(1, 4, 4)
    W[0, 0, 2] = 2.0  # a '+' singleton of v+0, silent on v+
    W[0, 1, 2], W[0, 1, 0] = 2.0, 2.0  # a '+' neuron on v+0 and v+ (not a singleton)
    W[0, 2, 1] = 3.0  # a '-' neuron on v-
    net = fmodel.Net(W, torch.full((1, 4), -1.0), 2, m)
    single = fmodel.singleton_detectors(W, torch.arange(4), 1.5, 0.5)
    assert fx.subclass_detector_activity(net, single, k) == (1.0, 0.0)
    X = torch.zeros(1, 2, 3, 4)
    X[0, 0, 0, 1] = 0.5  # a '+' sample with one feature-noise patch 0.5 v_-
    X[0, 1, 0, 0] = 0.5  # a '-' sample with 0.5 v_+
    y = torch.tensor([[0, 1]])
    terms = fx.feature_noise_terms(net, X, y, 0.5, 2)
    # wrong outputs: '-' on the first sample relu(1.5 - 1) = 0.5; '+' on the second
    # relu(2 * 0.5 - 1) = 0 (neuron 1) and 0: mean 0.25
    assert terms["measured"] == pytest.approx(0.25)
    # printed: s_dagger relu(w + b) per output: '+' (0 + 1) and '-' 2, mean over outputs 2 * 1.5
    assert terms["printed"] == pytest.approx(2 * (1.0 + 2.0) / 2)
    # restored: relu(0.5 w + b): '+' 0, '-' 0.5
    assert terms["restored"] == pytest.approx(2 * (0.0 + 0.5) / 2)


# -- symbolic residuals ---------------------------------------------------------------------------
def test_symbolic_residuals_vanish_and_the_eq_29_exponent_is_2_c0():
    assert fsym.prop_exponent_residuals() == [0, 0]
    assert fsym.tail_ratio_residuals() == [0, 0]
    assert fsym.eq29_exponent(0.05) == sp.Rational(1, 10)
    assert fsym.eq29_exponent(0.01) == sp.Rational(1, 50)


# -- the transcription --------------------------------------------------------------------------
def test_every_table_keeps_the_standard_deviations_the_paper_prints():
    for rows in ftab.TABLE_1.values():
        assert all(std is not None and std > 0 for _, _, std in rows)
    assert ftab.TABLE_1["Rebalanced"][0] == (88, 5.18, 0.054)
    assert ftab.TABLE_1["Whole-dataset kMeans"][0] == (22, 5.52, 0.015)
    assert ftab.TABLE_2["70 epochs"][5] == (4.85, 0.018)
    assert ftab.TABLE_3["Random ID"][6] == (5.13, 0.072)
    assert ftab.TABLE_6["Random"][2] == (23.65, 0.071)
    assert ftab.TABLE_7[4][3] == (77.53, 0.078)
    assert ftab.TABLE_8[0] == (81.45, 0.021)
    assert ftab.figure_2_curve() == {0: 82.51, 1: 81.28, 2: 80.26, 4: 77.53, 6: 75.53, 9: 72.75}
    assert ftab.pm((5.18, 0.054)) == "5.18 ± 0.054"
    assert "77.53 ± 0.078" in ftab.all_tables()[-1]


# -- the registered readings ----------------------------------------------------------------------
def test_the_readings_of_the_orders_keep_o1_and_omega1_apart():
    from companions.fine_labels import chapters as fch

    assert fch.SMALL_ERROR < fch.OMEGA_1 <= 0.5  # Omega(1) no more than the coin flip
    assert fch.GAP == pytest.approx(fch.OMEGA_1 - fch.SMALL_ERROR) and fch.GAP > 0
    claims = {c.id: c for c in companions.chapters()["fine-labels-coarse"].claims}
    assert claims["thm-5-1-hard-error-every-time"].rule.threshold == fch.OMEGA_1
