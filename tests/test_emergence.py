"""Unit tests of companions.emergence (Shi, Wei & Liang 2022; dissertation Chapter 2, Appendix A)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import companions
from companions.emergence import baselines, data, network, theory


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
def test_mixture_closed_forms():
    dist = data.parity_mixture(40, 20, 5, Fraction(1, 2), _gen())
    assert dist.gamma == Fraction(1, 4)  # (1 - p_o)/2
    assert dist.sigma2 == Fraction(5, 4) + 15 * Fraction(1, 4)  # k/4 + (D-k) p_o (1-p_o)
    assert dist.mean_y == 0 and dist.positive_rate == Fraction(1, 2)
    M = dist.M
    assert torch.allclose(M.T @ M, torch.eye(20, dtype=torch.float64), atol=1e-12)


def test_mixture_gamma_general_p_o():
    for p in (Fraction(1, 5), Fraction(1, 3)):
        dist = data.parity_mixture(30, 20, 5, p, _gen())
        assert dist.gamma == (1 - p) / 2
        assert dist.p_relevant == Fraction(1, 2)


def test_sampling_matches_population_moments():
    dist = data.parity_mixture(30, 12, 3, Fraction(1, 2), _gen(1))
    x, y, phi = dist.sample(200_000, _gen(2))
    assert abs(float(y.mean())) < 0.01
    assert abs(float((x**2).sum(1).mean()) - 1.0) < 0.01  # sigma~ normalisation: E||x||^2 = 1
    eyx = (y.unsqueeze(1) * x).mean(0)
    target = float(dist.gamma) / dist.sigma * dist.signal_direction
    assert float((eyx - target).norm()) < 0.01


def test_support_sums_to_one_and_marginals():
    dist = data.parity_mixture(12, 8, 3, Fraction(1, 3), _gen())
    grid, prob = dist.support()
    assert abs(float(prob.sum()) - 1) < 1e-14
    marg = prob @ grid
    assert torch.allclose(marg, dist.mean_phi, atol=1e-14)


def test_interval_and_without_structure():
    dist = data.interval(40, 36, 30, _gen())
    assert abs(float(dist.positive_rate) - 0.5836) < 0.01  # Pr[Bin(30, 2/3) >= 20]
    free = data.without_structure(dist)
    assert free.gamma == 0 or free.kind == "uniform"
    assert free.sigma2 == Fraction(36, 4)


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="'D'"):
        data.parity_mixture(10, 20, 3, 0.5, _gen())
    with pytest.raises(ValueError, match="'p_o'"):
        data.parity_mixture(30, 20, 3, 0.7, _gen())


# ---------------------------------------------------------------------------------------------
# Lemma 2.5
# ---------------------------------------------------------------------------------------------
def test_lemma_2_5_exhaustive_small():
    counts = theory.lemma_2_5_exhaustive(4, 4)
    assert counts["cases"] > 0
    assert all(counts[k] == 0 for k in ("misfit", "size", "a_bound", "b_bound", "pre_bound"))


def test_lemma_2_5_would_fail_with_relu_mismatch():
    # a wrong label set makes the exact check fail: the check can fail
    net = theory.target_network(3, {1, 3}, Fraction(3, 2))
    assert theory.target_output(net, 2, Fraction(3, 2)) == -1
    assert theory.target_output(net, 1, Fraction(3, 2)) == 1


def test_target_params_fit_samples():
    dist = data.parity_mixture(30, 16, 5, Fraction(1, 2), _gen())
    x, y, _ = dist.sample(3000, _gen(3))
    out = network.forward(theory.target_params(dist), x)
    assert float((out - y).abs().max()) < 1e-12


# ---------------------------------------------------------------------------------------------
# network and training steps
# ---------------------------------------------------------------------------------------------
def test_symmetric_init_output_is_zero():
    p = network.symmetric_init(8, 10, 3, 2.0, 0.25, _gen())
    x = torch.randn(50, 10, dtype=torch.float64)
    assert float(network.forward(p, x).abs().max()) < 1e-12


def test_smoothed_relu_closed_form():
    z = torch.linspace(-1, 2, 7, dtype=torch.float64)
    s = 0.3
    xi = torch.randn(400_000, generator=_gen(5), dtype=torch.float64) * s
    mc = network.truncated_relu(z.unsqueeze(1) + xi.unsqueeze(0)).mean(1)
    assert torch.allclose(network.smoothed_relu(z, s), mc, atol=3e-3)
    zz = z.clone().requires_grad_(True)
    network.smoothed_relu(zz, s).sum().backward()
    assert torch.allclose(zz.grad, network.smoothed_relu_derivative(z, s), atol=1e-12)


def test_gradients_match_autograd():
    gen = _gen(7)
    p = network.symmetric_init(6, 9, 3, 1.5, 0.25, gen)
    p.a = p.a + 0.3 * torch.randn(12, generator=gen, dtype=torch.float64)  # g != 0
    X = torch.randn(40, 9, generator=gen, dtype=torch.float64)
    y = torch.sign(torch.randn(40, generator=gen, dtype=torch.float64))
    for s in (0.2, 0.0):
        g = network.gradients(p, X, y, s)
        W, b, a = (t.clone().requires_grad_(True) for t in (p.W, p.b, p.a))
        loss = network.hinge(y, network.forward(network.Params(W, b, a), X, s))
        loss.backward()
        assert torch.allclose(g.W, W.grad, atol=1e-12)
        assert torch.allclose(g.b, b.grad, atol=1e-12)
        assert torch.allclose(g.a, a.grad, atol=1e-12)


def test_forgetful_first_step_erases_init():
    dist = data.parity_mixture(30, 16, 5, Fraction(1, 2), _gen())
    x, y, _ = dist.sample(2000, _gen(1))
    k, m = 5, 10
    p0 = network.symmetric_init(m, 30, k, dist.sigma, float(dist.gamma), _gen(2))
    for name in network.SCHEDULES:
        sched = network.schedule(name, k, m, dist.sigma, float(dist.gamma), 100)
        p1, _ = network.first_two_steps(p0, x, y, sched)
        g = network.gradients(p0, x, y, sched["step1"]["s"])
        expected = -sched["step1"]["eta"] * g.W
        assert float((p1.W - expected).norm() / expected.norm()) < 1e-5
        # w^(1) lies in span(M)
        proj = dist.M @ (dist.M.T @ p1.W.T)
        assert float((proj - p1.W.T).norm() / p1.W.norm()) < 1e-6


def test_schedules_differ_as_the_source_says():
    a = network.schedule("A.214", 5, 100, 5.0, 0.25, 600)
    b = network.schedule("A.274", 5, 100, 5.0, 0.25, 600)
    assert math.isclose(b["step1"]["eta"] / a["step1"]["eta"], 5.0)  # sigma~ vs sigma~^2
    assert math.isclose(a["step1"]["s"], 5 ** -1.5) and math.isclose(b["step1"]["s"], 1 / 25)
    with pytest.raises(ValueError, match="'schedule'"):
        network.schedule("A.1", 5, 100, 5.0, 0.25, 600)


# ---------------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------------
def test_linear_ceiling_equals_enumeration():
    for k in (3, 5):
        assert theory.linear_ceiling(k, Fraction(1, 2)) == theory.best_halfspace_accuracy(k, Fraction(1, 2))
    assert theory.linear_ceiling(5, Fraction(1, 2)) == Fraction(27, 32)


def test_lemma_a8_identities():
    dist = data.parity_mixture(12, 9, 3, Fraction(1, 2), _gen())
    r = theory.lemma_a8(dist)
    assert abs(r["E_y"]) < 1e-14 and abs(r["E_abs_y"] - 1) < 1e-14
    assert max(abs(v - r["two_sigma_phi2_sigma"]) for v in r["E_abs_phi_bg"]) < 1e-14
    assert max(abs(v - r["gamma_over_sigma"]) for v in r["E_y_phi_A"]) < 1e-14


def test_gradient_terms_symmetric_weights():
    dist = data.parity_mixture(12, 9, 3, Fraction(1, 2), _gen())
    w = dist.signal_direction * 0.01 + dist.M[:, [j for j in range(9) if j not in dist.A]].sum(1) * 0.2
    r = theory.gradient_terms(dist, w, 0.05, 3 ** -1.5)
    TA = r["T"][list(dist.A)]
    assert float(TA.max() - TA.min()) < 1e-14  # equal q_j on A -> equal T_j (permutation symmetry)


def test_walsh_parseval_exact():
    rng = np.random.default_rng(0)
    num = theory.integer_features(6, 5, rng)
    r = theory.parseval_check(num, 6, 3)
    assert r["parseval_exact"] and r["level_k_total"] <= r["total_energy"]
    assert r["count_A"] == math.comb(6, 3)


def test_fixed_feature_bound_readings():
    assert theory.fixed_feature_bound(32, 1, 5, 0.5) == pytest.approx(0.5 * (1 - 8 / 32))
    assert theory.fixed_feature_bound(32, 4, 5, 0.5, reading="root") == pytest.approx(0.5 * (1 - 16 / 32))
    with pytest.raises(ValueError, match="'reading'"):
        theory.fixed_feature_bound(1, 1, 5, 0.5, reading="x")


def test_sq_numbers_and_uncorrelated_parities():
    assert theory.sq_numbers(100, 5)["sq_dim"] == 75_287_520
    assert theory.sq_numbers(100, 5)["queries"] == pytest.approx(211.13, abs=0.01)
    r = theory.parity_correlations(7, 3)
    assert r["max_abs_correlation_count"] == 0 and r["concepts"] == 35


# ---------------------------------------------------------------------------------------------
# baselines
# ---------------------------------------------------------------------------------------------
def test_linearised_network_is_first_order():
    gen = _gen(3)
    p0 = network.symmetric_init(5, 7, 3, 1.5, 0.25, gen)
    lin = baselines.Linearised(p0)
    X = torch.randn(30, 7, generator=gen, dtype=torch.float64)
    eps = 1e-6
    dW = torch.randn_like(p0.W) * eps
    db = torch.randn_like(p0.b) * eps
    da = torch.randn_like(p0.a) * eps
    with torch.no_grad():
        lin.dW.copy_(dW), lin.db.copy_(db), lin.da.copy_(da)
        moved = network.forward(network.Params(p0.W + dW, p0.b + db, p0.a + da), X)
        assert torch.allclose(lin(X), moved - network.forward(p0, X), atol=1e-10)


def test_standardised_probe_separable():
    gen = _gen(4)
    X = torch.randn(500, 3, generator=gen, dtype=torch.float64)
    y = torch.sign(X[:, 0] + 0.1)
    r = baselines.standardised_probe(X, y, X, y)
    assert r["train"] > 0.99


def test_chapters_registered():
    assert "emergence-target" in companions.chapters()
    with pytest.raises(ValueError, match="'k'"):
        companions.preset("emergence-target", "smoke", k=40, D=32)
