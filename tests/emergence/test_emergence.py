"""Unit tests of companions.emergence (Shi, Wei & Liang 2022; dissertation Chapter 2, Appendix
A)."""

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
    dist = data.parity_mixture(40, 20, k=5, p_o=Fraction(1, 2), generator=_gen())
    assert dist.gamma == Fraction(1, 4)  # (1 - p_o)/2
    assert dist.sigma2 == Fraction(5, 4) + 15 * Fraction(1, 4)  # k/4 + (D-k) p_o (1-p_o)
    assert dist.mean_y == 0 and dist.positive_rate == Fraction(1, 2)
    M = dist.M
    assert torch.allclose(M.T @ M, torch.eye(20, dtype=torch.float64), atol=1e-12)


def test_mixture_gamma_general_p_o():
    for p in (Fraction(1, 5), Fraction(1, 3)):
        dist = data.parity_mixture(30, 20, k=5, p_o=p, generator=_gen())
        assert dist.gamma == (1 - p) / 2
        assert dist.p_relevant == Fraction(1, 2)


def test_sampling_matches_population_moments():
    dist = data.parity_mixture(30, 12, k=3, p_o=Fraction(1, 2), generator=_gen(1))
    x, y, phi = dist.sample(200_000, _gen(2))
    assert abs(float(y.mean())) < 0.01
    assert abs(float((x**2).sum(1).mean()) - 1.0) < 0.01  # sigma~ normalisation: E||x||^2 = 1
    eyx = (y.unsqueeze(1) * x).mean(0)
    target = float(dist.gamma) / dist.sigma * dist.signal_direction
    assert float((eyx - target).norm()) < 0.01


def test_support_sums_to_one_and_marginals():
    dist = data.parity_mixture(12, 8, k=3, p_o=Fraction(1, 3), generator=_gen())
    grid, prob = dist.support()
    assert abs(float(prob.sum()) - 1) < 1e-14
    marg = prob @ grid
    assert torch.allclose(marg, dist.mean_phi, atol=1e-14)


def test_interval_and_without_structure():
    dist = data.interval(40, 36, k=30, generator=_gen())
    assert abs(float(dist.positive_rate) - 0.5836) < 0.01  # Pr[Bin(30, 2/3) >= 20]
    free = data.without_structure(dist)
    assert free.gamma == 0 or free.kind == "uniform"
    assert free.sigma2 == Fraction(36, 4)


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="'D'"):
        data.parity_mixture(10, 20, k=3, p_o=0.5, generator=_gen())
    with pytest.raises(ValueError, match="'p_o'"):
        data.parity_mixture(30, 20, k=3, p_o=0.7, generator=_gen())


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
    dist = data.parity_mixture(30, 16, k=5, p_o=Fraction(1, 2), generator=_gen())
    x, y, _ = dist.sample(3000, _gen(3))
    out = network.forward(theory.target_params(dist), x)
    assert float((out - y).abs().max()) < 1e-12


# ---------------------------------------------------------------------------------------------
# network and training steps
# ---------------------------------------------------------------------------------------------
def test_symmetric_init_output_is_zero():
    p = network.symmetric_init(8, 10, k=3, sigma_tilde=2.0, gamma=0.25, generator=_gen())
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
    p = network.symmetric_init(6, 9, k=3, sigma_tilde=1.5, gamma=0.25, generator=gen)
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
    dist = data.parity_mixture(30, 16, k=5, p_o=Fraction(1, 2), generator=_gen())
    x, y, _ = dist.sample(2000, _gen(1))
    k, m = 5, 10
    p0 = network.symmetric_init(
        m, 30, k=k, sigma_tilde=dist.sigma, gamma=float(dist.gamma), generator=_gen(2)
    )
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
    assert math.isclose(a["step1"]["s"], 5**-1.5) and math.isclose(b["step1"]["s"], 1 / 25)
    with pytest.raises(ValueError, match="'schedule'"):
        network.schedule("A.1", 5, 100, 5.0, 0.25, 600)


# ---------------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------------
def test_linear_ceiling_equals_enumeration():
    for k in (3, 5):
        assert theory.linear_ceiling(k, Fraction(1, 2)) == theory.best_halfspace_accuracy(
            k, Fraction(1, 2)
        )
    assert theory.linear_ceiling(5, Fraction(1, 2)) == Fraction(27, 32)


def test_majority_reaches_the_ceiling_only_for_k_1_mod_4():
    half = Fraction(1, 2)
    # k = 3: majority is anti-correlated with the parity (5/8); (2, 2, -1) reaches 7/8
    assert theory.halfspace_accuracy([1, 1, 1], 0, half) == Fraction(5, 8)
    assert theory.halfspace_accuracy([2, 2, -1], 0, half) == Fraction(7, 8)
    for k in (1, 3, 5, 7, 9):
        maj = theory.halfspace_accuracy([1] * k, 0, half)
        best = theory.halfspace_accuracy(theory.ceiling_weights(k), 0, half)
        assert best == theory.linear_ceiling(k, half)
        assert (maj == best) == (k % 4 == 1)
    with pytest.raises(ValueError, match="'k'"):
        theory.ceiling_weights(4)


def test_lemma_a8_identities():
    dist = data.parity_mixture(12, 9, k=3, p_o=Fraction(1, 2), generator=_gen())
    r = theory.lemma_a8(dist)
    assert abs(r["E_y"]) < 1e-14 and abs(r["E_abs_y"] - 1) < 1e-14
    assert max(abs(v - r["two_sigma_phi2_sigma"]) for v in r["E_abs_phi_bg"]) < 1e-14
    assert max(abs(v - r["gamma_over_sigma"]) for v in r["E_y_phi_A"]) < 1e-14


def test_gradient_terms_symmetric_weights():
    dist = data.parity_mixture(12, 9, k=3, p_o=Fraction(1, 2), generator=_gen())
    w = (
        dist.signal_direction * 0.01
        + dist.M[:, [j for j in range(9) if j not in dist.A]].sum(1) * 0.2
    )
    r = theory.gradient_terms(dist, w, 0.05, 3**-1.5)
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
    assert theory.fixed_feature_bound(32, 4, 5, 0.5, reading="root") == pytest.approx(
        0.5 * (1 - 16 / 32)
    )
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
    p0 = network.symmetric_init(5, 7, k=3, sigma_tilde=1.5, gamma=0.25, generator=gen)
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


# ---------------------------------------------------------------------------------------------
# later additions: analysis, experiments, more closed forms
# ---------------------------------------------------------------------------------------------
def test_class_weights_balance_classes():
    y = torch.tensor([1.0, 1.0, 1.0, -1.0])
    w = network.class_weights(y)
    assert float(w.sum()) == pytest.approx(1.0)
    assert float(w[y > 0].sum()) == pytest.approx(0.5) and float(w[y < 0].sum()) == pytest.approx(
        0.5
    )
    with pytest.raises(ValueError, match="'y'"):
        network.class_weights(torch.ones(3))


def test_sample_with_ratio_exact_counts():
    from companions.emergence import experiments

    dist = data.parity_mixture(20, 10, k=3, p_o=Fraction(1, 2), generator=_gen())
    x, y = experiments.sample_with_ratio(dist, 1000, 0.8, _gen(1))
    assert x.shape == (1000, 20) and int((y == -1).sum()) == 800


def test_run_methods_smoke():
    from companions.emergence import experiments

    dist = data.parity_mixture(24, 12, k=3, p_o=Fraction(1, 2), generator=_gen())
    x, y, _ = dist.sample(600, _gen(1))
    xt, yt, _ = dist.sample(200, _gen(2))
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals={"test": (xt, yt)},
        m=8,
        steps=5,
        batch=100,
        generator_seed=0,
        progress=False,
    )
    for key in experiments.METHODS:
        assert 0 <= out[key]["test"] <= 1
    assert out["network"]["curve"]["step"][-1] == 5


def test_signal_noise_and_epsilon():
    from companions.emergence import analysis

    dist = data.parity_mixture(20, 10, k=3, p_o=Fraction(1, 2), generator=_gen())
    W = torch.stack(
        [dist.signal_direction, dist.M[:, [j for j in range(10) if j not in dist.A][0]]]
    )
    rho = analysis.signal_noise(W, dist)
    assert float(rho[0]) > 1e10 and float(rho[1]) < 1e-10
    assert analysis.epsilon_e(dist, 10) > 0


def test_sample_gradient_terms_match_population_on_support():
    from companions.emergence import analysis

    dist = data.parity_mixture(12, 8, k=3, p_o=Fraction(1, 2), generator=_gen())
    grid, prob = dist.support()
    # sample = the support repeated in proportion to its probabilities (exact when all are multiples
    # of 1/N)
    counts = (prob * 2**14).round().long()
    assert int(counts.sum()) == 2**14
    X = dist.inputs(grid).repeat_interleave(counts, dim=0)
    y = dist.labels(grid).repeat_interleave(counts)
    p0 = network.symmetric_init(
        2, 12, k=3, sigma_tilde=dist.sigma, gamma=float(dist.gamma), generator=_gen(3)
    )
    terms = analysis.sample_gradient_terms(p0, X, y, dist, 0.2)
    exact = theory.gradient_terms(dist, p0.W[0], float(p0.b[0]), 0.2)
    assert torch.allclose(terms["T_A"][0], exact["T"][list(dist.A)], atol=1e-12)
    assert abs(float(terms["beta"][0]) - exact["beta"]) < 1e-12


def test_bound_helpers():
    assert theory.binomial_at_least_16_to_k(200)["violations"] == 0
    r = theory.readings_symbolic()
    assert str(r["linear"]) == "2**(-k - 1/2)"
    assert theory.mixture_background_covariance(Fraction(1, 4)) == Fraction(1, 48)
    assert theory.mixture_background_covariance(Fraction(1, 2)) == 0
    assert theory.nontrivial_size(5) == 512


def test_sq_concept_literal_ignores_A():
    a = theory.sq_concept(6, [0, 1, 2], literal=True)
    b = theory.sq_concept(6, [3, 4, 5], literal=True)
    assert np.array_equal(a, b)
    assert not np.array_equal(theory.sq_concept(6, [0, 1, 2]), theory.sq_concept(6, [3, 4, 5]))


def test_bessel_bound_and_integer_features_range():
    num = theory.integer_features(5, 4, np.random.default_rng(1), L=6)
    assert num.shape == (32, 4) and np.abs(num).max() <= 6
    assert theory.bessel_bound(4, 1.0, 10, 3) == pytest.approx(1 - math.sqrt(4 / 120))


def test_all_emergence_chapters_validate():
    for cid in (
        "emergence-first-steps",
        "emergence-fixed-features",
        "emergence-no-structure",
        "emergence-experiments",
    ):
        companions.preset(cid, "smoke")
    with pytest.raises(ValueError, match="'k'"):
        companions.preset("emergence-first-steps", "smoke", k=4)
    with pytest.raises(ValueError, match="n_values"):
        companions.preset("emergence-experiments", "smoke", n_values=[100, 200])


def test_theorem_2_1_rate_algebra():
    r = theory.theorem_2_1_rates()
    k, m, T, eps = r["symbols"]
    assert r["matches"]
    assert len(r["width"]) == 1
    import sympy as sp

    assert sp.simplify(r["width"][0] - k**12 / eps ** sp.Rational(3, 2)) == 0


def test_decided_directions_and_undecided():
    from companions.emergence import analysis

    assert analysis.decided([0.99, 1.0, 1.0], 0.9)[0] is True
    assert analysis.decided([0.5, 0.52, 0.48], 0.9)[0] is False
    assert analysis.decided([0.5, 0.52, 0.48], 0.6, "below")[0] is True
    assert analysis.decided([0.5, 0.9, 0.1], 0.6, "below")[0] is None
    assert analysis.decided([0.50, 0.51, 0.49], 0.03, "within", target=0.5)[0] is True
    assert analysis.decided([0.70, 0.71, 0.69], 0.03, "within", target=0.5)[0] is False
    with pytest.raises(ValueError, match="'direction'"):
        analysis.decided([1, 2], 0, "sideways")
    with pytest.raises(ValueError, match="'target'"):
        analysis.decided([1, 2], 0, "within")


def test_all_of_combines_verdicts():
    from companions.emergence import analysis

    assert analysis.all_of([True, True]) is True
    assert analysis.all_of([True, None]) is None
    assert analysis.all_of([None, False, True]) is False


def test_lemma_a29_network_margin_on_good_points():
    gen = torch.Generator().manual_seed(0)
    dist = data.parity_mixture(40, 20, k=3, p_o=Fraction(1, 2), generator=gen)
    r = theory.lemma_a29_noisy(dist, 0.05, 4000, gen)
    assert float(r["margin"][r["good"]].min()) >= 1 - 1e-9
    assert float(r["below"].mean()) <= r["bound"]
    # noiseless: every point has margin >= 1 and the candidates' heights are 4 and 8
    net = theory.target_network_a29(3, {1, 3}, Fraction(3, 2))
    assert net["candidate"] == 2 and max(abs(v) for v in net["a"]) == 2 * 8 * 8 * 3
    z = theory.lemma_a29_noisy(dist, 1e-12, 500, gen)
    assert float(z["margin"].min()) >= 1 - 1e-9
