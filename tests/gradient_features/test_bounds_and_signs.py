"""The pieces issue 41 added: the smoothed hinge and Theorem 3.4's run (the second layer on a frozen
first step), the negative-sign count of Lemma 3.21, and the closed forms behind the chapters'
"no run can" numbers (Lemma 3.14, Theorem B.69, the constant of Lemma B.34, the proofs' bias), each
on a case worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from companions.gradient_features import data as gdata
from companions.gradient_features import experiments as ex
from companions.gradient_features import network as nw
from companions.gradient_features import theory

F64 = torch.float64


# ---------------------------------------------------------------------------------------------
# The smoothed hinge (D1 of gradient-framework)
# ---------------------------------------------------------------------------------------------
def test_smooth_hinge_values_and_slopes_by_hand():
    z = torch.tensor([-1.0, 0.0, 1.0, 2.0, 3.0], dtype=F64)
    assert nw.smooth_hinge(z).tolist() == [2.0, 1.0, 0.25, 0.0, 0.0]
    assert nw.smooth_hinge_slope(z).tolist() == [-1.0, -1.0, -0.5, 0.0, 0.0]


def test_smooth_hinge_meets_assumption_3_1_and_is_smooth():
    z = torch.linspace(-3, 4, 701, dtype=F64, requires_grad=True)
    loss = nw.smooth_hinge(z)
    (grad,) = torch.autograd.grad(loss.sum(), z)
    slope = nw.smooth_hinge_slope(z.detach())
    assert torch.allclose(grad, slope, atol=1e-12)  # the slope is the derivative
    assert bool((slope <= 0).all()) and bool((slope >= -1).all())  # decreasing, 1-Lipschitz
    curvature = (slope[1:] - slope[:-1]) / (z[1:] - z[:-1]).detach()
    assert float(curvature.min()) >= -1e-12  # convex
    assert float(curvature.max()) <= nw.SMOOTH_HINGE_CURVATURE + 1e-9


# ---------------------------------------------------------------------------------------------
# Theorem 3.4's second layer
# ---------------------------------------------------------------------------------------------
def test_second_layer_loss_and_gradient_by_hand():
    F = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=F64)
    y = torch.tensor([1.0, -1.0], dtype=F64)
    loss, grad = ex.second_layer_loss(F, y, torch.tensor([0.5, 0.5], dtype=F64))
    # z = (0.5, -1): losses 1.5^2 / 4 = 0.5625 and 2, slopes -0.75 and -1
    assert loss == pytest.approx((0.5625 + 2.0) / 2)
    assert grad.tolist() == pytest.approx([-0.375, 1.0])
    assert ex.second_layer_loss(F, y, torch.tensor([0.5, 0.5], dtype=F64), grad=False) == (
        pytest.approx(1.28125),
        None,
    )
    # F^T F / n = diag(1/2, 2): L = 1/2 * 2
    assert ex.smoothness(F) == pytest.approx(1.0)


def test_ball_minimum_on_the_boundary_and_inside():
    F = torch.ones(2, 1, dtype=F64)
    y = torch.ones(2, dtype=F64)
    # the loss decreases in a: the minimum over |a| <= 0.5 is at a = 0.5, l(0.5) = 0.5625
    assert ex.ball_minimum(F, y, 0.5, 200) == pytest.approx(0.5625, abs=1e-9)
    assert ex.ball_minimum(F, y, 3.0, 200) == pytest.approx(0.0, abs=1e-9)  # l = 0 from a = 2
    with pytest.raises(ValueError, match="parameter 'radius' = 0"):
        ex.ball_minimum(F, y, 0.0, 5)
    # several radii at once give what each gives alone
    assert ex.ball_minima(F, y, [0.5, 3.0], 200) == pytest.approx([0.5625, 0.0], abs=1e-9)


def test_second_layer_descent_steps_by_hand():
    F, y = torch.ones(2, 1, dtype=F64), torch.ones(2, dtype=F64)
    a1 = torch.zeros(1, dtype=F64)
    # eta = 1: a = 0 (loss 1, slope -1), 1 (loss 1/4, slope -1/2), 1.5 (loss 1/16)
    run = ex.second_layer_descent(
        F, y, a1=a1, steps=3, step_size=lambda t: 1.0, F_test=2 * F[:1], y_test=y[:1]
    )
    assert run["train"] == pytest.approx(0.0625)
    assert run["test"] == pytest.approx(0.0)  # the test feature 2 gives z = 2 at a = 1
    # eta^(t) = 1/t from t = 2: a = 0, 1/2 (loss 9/16), 1/2 + 3/4 / 3 = 3/4 (loss 25/64)
    assert ex.second_layer_descent(F, y, a1=a1, steps=3, step_size=lambda t: 1 / t)[
        "train"
    ] == pytest.approx(25 / 64)
    assert ex.second_layer_descent(F, y, a1=a1, steps=1, step_size=lambda t: 1.0)[
        "train"
    ] == pytest.approx(1.0)
    both = ex.second_layer_descents(
        F, y, a1=a1, steps=3, schedules=[lambda t: 1.0, lambda t: 1 / t]
    )
    assert [r["train"] for r in both] == pytest.approx([0.0625, 25 / 64])


def _run(best_test, best_train, radii):
    return {
        "one_over_L": {"test": best_test, "train": 0.0},
        "one_over_t": {"test": 0.0, "train": best_train},
        "radii": radii,
    }


def test_theorem_3_4_excesses_by_hand():
    radii = {
        0.5: {"opt_test": 0.2, "opt_term": 0.1, "complexity": 0.05, "opt_train": 0.15},
        1.0: {"opt_test": 0.1, "opt_term": 0.2, "complexity": 0.1, "opt_train": 0.05},
    }
    # bounds 0.35 and 0.4: the best is 0.35
    assert ex.theorem_3_4_excess(_run(0.3, 0.0, radii)) == pytest.approx(-0.05)
    # 0.3 - 0.15 - 0.1 = 0.05 and 0.3 - 0.05 - 0.2 = 0.05; 0.4: 0.15 and 0.15
    assert ex.one_over_t_excess(_run(0.0, 0.3, radii)) == pytest.approx(0.05)
    assert ex.one_over_t_excess(_run(0.0, 0.4, radii)) == pytest.approx(0.15)


def test_frozen_first_layer_run_terms():
    mix = gdata.orthogonal_mixture(6, 2, 1.0, 1.0)
    run = ex.frozen_first_layer_run(
        mix,
        m=2,
        n=300,
        n_test=400,
        sigma_w=6**-0.5,
        b_tilde=0.5,
        eta1=0.2,
        steps=20,
        opt_steps=50,
        generator=torch.Generator().manual_seed(4),
    )
    assert set(run["radii"]) == set(ex.RADII)
    assert run["B_x"] > 0 and run["L"] > 0
    for B, r in run["radii"].items():
        assert r["opt_term"] == pytest.approx(run["L"] * (run["a1_sq"] + B * B) / 20)
        assert r["complexity"] > 0
    # nested balls: the minimum can only fall as the radius grows (up to FISTA's error)
    opts = [run["radii"][B]["opt_train"] for B in sorted(ex.RADII)]
    assert all(b <= a + 1e-6 for a, b in zip(opts, opts[1:]))
    assert 0 <= run["one_over_L"]["train"] <= 1.0  # a^(1) is one of the iterates, loss <= 1 + ...


# ---------------------------------------------------------------------------------------------
# Lemma 3.21's negative sign
# ---------------------------------------------------------------------------------------------
def test_sign_counts_asks_for_both_signs_at_the_documented_cone_norm_and_bias(monkeypatch):
    calls = []

    def fake(dist, D, gammas, B_G, sigma_w, b_tilde, neurons, n, generator, chunk=512, sign=1):
        calls.append((list(gammas), B_G, sigma_w, b_tilde, neurons, n, sign))
        return torch.tensor([[1 if sign == 1 else 0, 2, 3]])

    monkeypatch.setattr(ex, "population_counts", fake)
    par = gdata.Parity(36, 4, 3, 0.1, 0.05)
    out = ex.sign_counts(par, neurons=7, n=11, generator=torch.Generator())
    assert out == {1: (6, 21), -1: (5, 21)}
    sw = 1 / 6
    for call, sign in zip(calls, (1, -1)):
        assert call[0] == [ex.SIGN_GAMMA] and call[4:] == (7, 11, sign)
        assert call[1] == pytest.approx(ex.SIGN_BG_FRACTION * 2 * 0.1)  # sqrt(k) p_A, k = 4
        assert call[2] == pytest.approx(sw)
        assert call[3] == pytest.approx(ex.SIGN_BIAS * 2 * sw)


def test_sign_counts_negative_sign_follows_eyx_for_one_block():
    # r = 1: a negative bias fires almost everywhere and G ~ E[yx], along D_1
    par = gdata.Parity(20, 3, 1, 0.2, 0.05)
    out = ex.sign_counts(par, neurons=50, n=4000, generator=torch.Generator().manual_seed(1))
    assert out[-1][1] == out[1][1] == 50
    assert out[-1][0] >= 45


# ---------------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------------
def test_source_b_tilde_by_hand():
    prm = {"B_G": 16.0, "B_a2": 2.0, "B_b": 1.0, "B_a1": 0.5}
    # 16^(1/4) * 2 * 1 / (sqrt(4) * 0.5) = 4
    assert theory.source_b_tilde(prm, 4.0) == pytest.approx(4.0)


def test_lemma_3_14_term_and_width_by_hand():
    prm = {"r": 1, "B_a1": 1.0, "B_x1": 1 / math.sqrt(2), "gamma": 0.0, "B_b": 2.0, "B_G": 1.0}
    prm["log10_p"] = 0.0
    # lead 1, sqrt(2 B_b / B_G) = 2, (m p)^(-1/4) = 0.1 at m = 10^4
    assert theory.lemma_3_14_term(prm, 4.0) == pytest.approx(0.2)
    assert theory.lemma_3_14_width(prm, target=0.2) == pytest.approx(4.0)
    prm["log10_p"] = -2.0
    assert theory.lemma_3_14_width(prm, target=0.2) == pytest.approx(6.0)
    assert theory.lemma_3_14_term(prm, 6.0) == pytest.approx(0.2)
    prm["gamma"] = 0.25  # sqrt(gamma) = 0.5 > 0.2: never
    assert theory.lemma_3_14_width(prm, target=0.2) == math.inf


def test_lemma_b34_constant_and_its_smallest_d():
    # 4 sqrt(8 ln 300 / 300) = 1.5600: d = 300 is outside B_mu1 = 1
    assert theory.lemma_b34_mean_norm(300, 8.0, 1.0) == pytest.approx(1.5600044, rel=1e-6)
    assert theory.lemma_b34_mean_norm(300, 8.0, 2.0) == pytest.approx(3.1200089, rel=1e-6)
    d = theory.lemma_b34_smallest_d(8.0, 1.0, 1.0)
    assert theory.lemma_b34_mean_norm(d, 8.0, 1.0) <= 1 < theory.lemma_b34_mean_norm(d - 1, 8, 1)
    assert d == 866
    assert theory.lemma_b34_smallest_d(8.0, 1.0, 100.0) == 3
    with pytest.raises(ValueError, match="no d"):
        theory.lemma_b34_smallest_d(8.0, 1.0, 1e-6, most=1000)


def test_theorem_b69_requirements_by_hand():
    got = theory.theorem_b69_requirements(10, 2, kappa=1.0, tau=2, n=10, m=10, eps=0.1)
    log_nmd = math.log(1000)
    log10_m = 2 * math.log10(2) + 13 * math.log10(log_nmd) + 1
    assert got["log10_m"] == pytest.approx(log10_m)
    assert got["log10_n"] == pytest.approx(math.log10(200 * log_nmd**3 + 10**log10_m))
    assert got["log10_T"] == pytest.approx(2 * log10_m + 1)
    assert got["d_ok"] is True
    assert (
        theory.theorem_b69_requirements(2, 2, kappa=1.0, tau=2, n=10, m=10, eps=0.1)["d_ok"]
        is False
    )


def test_hinge_upper_bound_in_log10_and_the_guarantee_with_the_bias():
    own, others = theory.mixture_ground_truth_hinge(50, 4, 1.0, 1.0, 8.0)
    got = theory.mixture_ground_truth_hinge_log10(50, 4, 1.0, 1.0, 8.0)
    assert got == pytest.approx(math.log10(10**own + 10**others), rel=1e-12)
    prm = theory.lemma_3_21_parameters(100, 5, 1, 0.1, 0.05, 8.0)
    bt = theory.source_b_tilde(prm, 8.0)
    with_b = theory.guarantee(prm, b_tilde=bt)
    assert with_b["log10_T"] > theory.guarantee(prm)["log10_T"] + with_b["log10_m"] / 2
    direct = theory.theorem_3_12_terms(
        prm["r"],
        10 ** prm["log10_p"],
        gamma=prm["gamma"],
        B_G=prm["B_G"],
        B_a1=prm["B_a1"],
        B_a2=prm["B_a2"],
        B_b=prm["B_b"],
        B_x1=prm["B_x1"],
        eps=0.1,
        delta=0.1,
        b_tilde=bt,
    )
    assert with_b == pytest.approx(direct)
