"""companions.emergence.theory against independent computations: the bump's two forms, the
candidates' choice from the distance of mu to the half-integers, the pre-activations' maximum in
closed form, brute-force halfspaces, the exact Walsh energies by explicit sums, and every key of
every returned dict read at least once."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F
from statistics import NormalDist

import numpy as np
import pytest
import sympy as sp
import torch

from companions.emergence import data, theory


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- Lemma A.1 and Lemma 2.5 -------------------------------------------------------------------
def test_relu_truncation_and_the_bump_in_both_forms():
    assert [theory.relu(F(x)) for x in (-2, 0, F(1, 2), 3)] == [0, 0, F(1, 2), 3]
    assert [theory.truncated(F(x)) for x in (-1, F(1, 3), F(3, 2), 2)] == [0, F(1, 3), 1, 1]
    for s, a, b in [(F(1), F(2), F(1, 2)), (F(-3, 4), F(-3), F(1, 4)), (F(5, 2), F(1, 3), F(2))]:
        assert theory.bump(s, s, a, b) == a * b == theory.bump_closed_form(s, s, a, b)  # the peak
        for z in [F(n, 8) for n in range(-48, 49)] + [s - b, s + b, F(0)]:
            expected = a * max(0, b - abs(z - s))  # the triangle of (A.5)
            assert theory.bump(z, s, a, b) == expected == theory.bump_closed_form(z, s, a, b)


def _distance_to_half_integers(mu):
    frac = (2 * mu) - math.floor(2 * mu)  # in [0, 1), in units of 1/2
    return min(frac, 1 - frac) / 2


@pytest.mark.parametrize("network, heights, scale", [("2.5", (2, 4), 4), ("A.29", (4, 8), 8)])
def test_the_candidate_is_the_first_whose_biases_clear_one_eighth(network, heights, scale):
    # candidate 1 has biases -(p - mu) + {1/2, 0, -1/2}: all >= 1/8 in absolute value iff mu is
    # at distance >= 1/8 from the half-integers; candidate 2 is shifted by 1/4 (A.11, A.312)
    build = theory.target_network if network == "2.5" else theory.target_network_a29
    k, P = 3, {1, 3}
    for mu in [F(0), F(1, 8), F(7, 60), F(3, 16), F(1, 4), F(5, 16), F(3, 2), F(13, 8), F(9, 7)]:
        net = build(k, P, mu)
        first = _distance_to_half_integers(mu) >= F(1, 8)
        assert net["candidate"] == (1 if first else 2), mu
        shift, h = (F(0), heights[0]) if first else (F(1, 4), heights[1])
        a, b = [], []
        for p in range(k + 1):
            sign = 1 if p in P else -1
            for coef, off in ((h, F(1, 2)), (-2 * h, F(0)), (h, F(-1, 2))):
                a.append(sign * coef * scale * k)
                b.append((mu - p - shift + off) / (scale * k))
        assert sorted(zip(net["a"], net["b"])) == sorted(zip(a, b))
        assert net["scale"] == F(1, scale * k)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_report_of_lemma_2_5_pre_activations_in_closed_form(k):
    # pre-activation of neuron (p, off) at S: (S - p - shift + off) / (4k), so the largest is
    # (k + 1/2) / (4k) for candidate 1 and (k + 3/4) / (4k) for candidate 2
    for mu in (F(1, 4), F(0), F(k, 2) + F(1, 5)):
        r = theory.lemma_2_5_report(k, {1}, mu)
        extra = F(1, 2) if r["candidate"] == 1 else F(3, 4)
        assert r["max_pre"] == (k + extra) / (4 * k)
        assert r["fits"] and r["n"] == 3 * (k + 1)


def test_report_compares_the_last_labels_too(monkeypatch):
    right = theory.target_output
    for wrong_at in (0, 2, 3):

        def output(net, S, mu, wrong_at=wrong_at):
            value = right(net, S, mu)
            return -value if S == wrong_at else value

        monkeypatch.setattr(theory, "target_output", output)
        assert not theory.lemma_2_5_report(3, {1, 3}, F(3, 2))["fits"]
    monkeypatch.setattr(theory, "target_output", right)
    assert theory.lemma_2_5_report(3, {1, 3}, F(3, 2))["fits"]


def test_exhaustive_default_grid_of_mu():
    # mu in {0, 1/7, ..., k}: 7k + 1 values, 2^k label sets
    counts = theory.lemma_2_5_exhaustive(2)
    assert counts["cases"] == 2 * 8 + 4 * 15
    assert 0 < counts["candidate2"] < counts["cases"]


def test_exhaustive_check_is_one_tracked_loop_over_k(monkeypatch):
    from companions import train

    monkeypatch.setenv(train.DRY_RUN_ENV, "1")  # a dry run keeps k = 1 only
    monkeypatch.setattr(train, "_LOOPS", [])
    monkeypatch.setattr(train, "_ACTIVE", [])
    counts = theory.lemma_2_5_exhaustive(3)
    assert counts["cases"] == 2 * 8  # k = 1: 2 label sets, mu in {0, 1/7, ..., 1}
    (loop,) = train.dry_run_loops()
    assert (loop["desc"], loop["planned"], loop["run"]) == ("Lemma 2.5, every k", 3, 1)


def test_target_params_in_the_asked_dtype():
    dist = data.parity_mixture(20, 10, k=3, p_o=F(1, 2), generator=_gen())
    p = theory.target_params(dist, dtype=torch.float32)
    assert p.W.dtype == p.b.dtype == p.a.dtype == torch.float32
    net = theory.target_network(3, dist.P, dist.mu)
    assert p.a.tolist() == [float(v) for v in net["a"]]


# -- Lemma A.29 ----------------------------------------------------------------------------------
def test_lemma_a29_noisy_keys_bound_and_noise_law():
    dist = data.parity_mixture(40, 20, k=3, p_o=F(1, 2), generator=_gen())
    sigma = 0.05
    r = theory.lemma_a29_noisy(dist, sigma, 4000, _gen(1))
    # Pr[|eps| > 1/8] for eps ~ N(0, k sigma^2)
    z = 1 / (8 * math.sqrt(3) * sigma)
    assert r["bound"] == pytest.approx(2 * (1 - NormalDist().cdf(z)), rel=1e-9)
    assert r["candidate"] == 2 and r["eps"].shape == (4000,)
    var = float(r["eps"].var())
    assert abs(var / (3 * sigma**2) - 1) < 5 * math.sqrt(2 / 4000)  # five standard errors
    assert torch.equal(r["good"], r["eps"].abs() <= 0.125)
    # the generator alone decides the draw, not the global one
    torch.manual_seed(5)
    again = theory.lemma_a29_noisy(dist, sigma, 4000, _gen(1))
    assert torch.equal(again["eps"], r["eps"]) and torch.equal(again["margin"], r["margin"])
    # heavy noise (d sigma^2 > sigma~^2) is allowed: the normalisation adds it
    heavy = theory.lemma_a29_noisy(dist, 1.0, 200, _gen(2))
    assert heavy["margin"].isfinite().all()


def test_lemma_a29_noiseless_margins_are_exactly_two():
    # without noise y g* = 2 on every point (heights twice Lemma 2.5's), to float64 precision
    dist = data.parity_mixture(40, 20, k=3, p_o=F(1, 2), generator=_gen())
    r = theory.lemma_a29_noisy(dist, 1e-13, 500, _gen(3))
    assert float((r["margin"] - 2).abs().max()) < 1e-9
    assert float(r["below"].sum()) == 0


# -- Lemma A.8 and the gradient terms ------------------------------------------------------------
def test_lemma_a8_with_a_biased_background():
    dist = data.parity_mixture(12, 9, k=3, p_o=F(1, 3), generator=_gen())
    r = theory.lemma_a8(dist)
    bg = [j for j in range(9) if j not in dist.A]
    assert len(r["E_abs_phi_bg"]) == len(bg) == 6
    assert max(abs(v - r["two_sigma_phi2_sigma"]) for v in r["E_abs_phi_bg"]) < 1e-14
    assert r["one_over_sigma"] == pytest.approx(1 / math.sqrt(float(dist.sigma2)), rel=1e-15)
    # |y| = 1: E|y phi_j| = E|phi_j|, which is at most 1/sigma~ (|phi~_j - E phi~_j| <= 1)
    assert [r["E_abs_y_phi"][j] for j in bg] == pytest.approx(r["E_abs_phi_bg"], abs=1e-14)
    assert max(r["E_abs_y_phi"]) <= r["one_over_sigma"]


def test_gradient_terms_with_weights_off_the_signal_are_beta_gamma_over_sigma():
    # q_A = 0: the activation does not depend on phi_A, so T_j = E[y phi_j] beta = gamma/sigma beta
    dist = data.parity_mixture(12, 9, k=3, p_o=F(1, 2), generator=_gen())
    bg = [j for j in range(9) if j not in dist.A]
    w = dist.M[:, bg] @ torch.linspace(-0.3, 0.4, len(bg), dtype=torch.float64)
    r = theory.gradient_terms(dist, w, 0.3, 0.2)
    assert r["predicted_A"] == pytest.approx(r["beta"] * 0.25 / dist.sigma, rel=1e-14)
    for j in dist.A:
        assert float(r["T"][j]) == pytest.approx(r["predicted_A"], rel=1e-12)
    assert torch.allclose(r["q"], dist.M.T @ w, atol=1e-15)
    again = theory.gradient_terms(dist, w.float(), 0.3, 0.2)  # float32 weights are converted
    assert torch.allclose(again["T"], r["T"], atol=1e-7)


def test_gradient_terms_of_a_given_u_and_of_no_activation():
    dist = data.parity_mixture(12, 9, k=3, p_o=F(1, 2), generator=_gen())
    w = dist.signal_direction * 0.1
    zero = theory.gradient_terms(dist, w, 0.2, 0.1, u=torch.zeros(2**9, dtype=torch.float64))
    assert float(zero["T"].abs().max()) == 0 and zero["T_b"] == 0
    y_terms = theory.gradient_terms(dist, w, 0.2, 0.1)
    double = theory.gradient_terms(dist, w, 0.2, 0.1, u=2 * dist.labels(dist.support()[0]))
    assert torch.allclose(double["T"], 2 * y_terms["T"]) and double["T_b"] == 2 * y_terms["T_b"]
    # a bias far above 1: no neuron is active (s = 0), so T = 0 and T_b = 0
    off = theory.gradient_terms(dist, w, 50.0, 0.0)
    assert float(off["T"].abs().max()) == 0 and off["T_b"] == 0 and off["beta"] == 0


# -- halfspaces on D_A^mix -----------------------------------------------------------------------
def test_halfspace_accuracy_by_hand():
    half = F(1, 2)  # weights 3/8 on z = (1, 1) and (-1, -1), 1/8 on the mixed patterns
    assert theory.halfspace_accuracy([1, 1], 1, half) == F(3, 8)
    assert theory.halfspace_accuracy([1, 1], -1, half) == F(5, 8)
    assert theory.halfspace_accuracy([1, 1], 0, half) == F(5, 8)  # sign 0 = -1 on mixed z
    assert theory.halfspace_accuracy([-1, 1], 1, half) == F(7, 8)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("p_o", [F(1, 2), F(1, 5), F(4, 5)])
def test_best_halfspace_is_the_brute_force_maximum(k, p_o):
    best = max(
        theory.halfspace_accuracy(list(u), F(2 * c + 1, 2), p_o)
        for u in itertools.product(range(-2, 3), repeat=k)
        for c in range(-2 * k - 1, 2 * k + 1)
    )
    assert theory.best_halfspace_accuracy(k, p_o) == best


def test_best_halfspace_for_k_4_and_its_message():
    assert theory.best_halfspace_accuracy(4, F(1, 2)) >= F(3, 4)  # at least the constant +1
    with pytest.raises(
        ValueError,
        match=r"^parameter 'k' = 6 is not allowed: enumeration is exact for k <= 5 only$",
    ):
        theory.best_halfspace_accuracy(6, F(1, 2))


def test_a_float_probability_is_read_as_its_decimal_fraction():
    p, q = 0.123, F(123, 1000)
    assert theory.linear_ceiling(3, p) == 1 - q / 2 + q / 2 * F(2, 4)
    assert theory.mixture_background_covariance(p) == q * (2 * q - 1) ** 2 / (4 * (1 - q))
    majority = sum(
        (q / 8 + ((1 - q) / 2 if abs(sum(z)) == 3 else 0)) * ((sum(z) > 0) == (math.prod(z) > 0))
        for z in itertools.product((-1, 1), repeat=3)
    )
    assert theory.halfspace_accuracy([1, 1, 1], 0, p) == majority
    best = max(
        theory.halfspace_accuracy(list(u), F(2 * c + 1, 2), q)
        for u in itertools.product(range(-2, 3), repeat=3)
        for c in range(-7, 7)
    )
    assert theory.best_halfspace_accuracy(3, p) == best


# -- Theorem 2.2 / A.22 --------------------------------------------------------------------------
def test_fixed_feature_bound_linear_in_B():
    assert theory.fixed_feature_bound(32, 2, 5, 0.5) == pytest.approx(0.5 * (1 - 16 / 32))


def test_integer_features_are_clipped_affine_maps_with_small_integer_weights():
    num = theory.integer_features(3, 300, np.random.default_rng(0), L=100)  # no clipping
    assert num.dtype == np.int64
    Z = theory.cube(3)
    c = num.mean(0)
    U = (Z.T @ num) / 8  # <u, z> + c: z_j is orthogonal to 1 and to the other z's
    assert np.array_equal(Z @ U + c, num)
    assert set(np.unique(U)) == set(range(-2, 3)) and set(np.unique(c)) == set(range(-2, 3))
    clipped = theory.integer_features(5, 50, np.random.default_rng(1))
    assert clipped.min() == -6 and clipped.max() == 6  # the default L = 6 bites


def test_parseval_check_energies_by_explicit_sums():
    D, k, L = 4, 2, 6
    num = theory.integer_features(D, 3, np.random.default_rng(2), L=L)
    r = theory.parseval_check(num, D, k)
    Z = theory.cube(D)
    per_A = []
    for A in itertools.combinations(range(D), k):
        chi = Z[:, list(A)].prod(1)
        per_A.append(sum(int(chi @ num[:, i]) ** 2 for i in range(num.shape[1])))
    assert r["level_k_total"] == sum(per_A) and r["min_per_A"] == min(per_A)
    assert r["count_A"] == 6 and r["total_energy"] == 2**D * int((num**2).sum())
    # in units: min_A ||E[chi_A Psi]||^2 = min_per_A / (unit L^2) with E = mean over 2^D points
    exact = min(
        sum(F(int(Z[:, list(A)].prod(1) @ num[:, i]), 2**D * L) ** 2 for i in range(3))
        for A in itertools.combinations(range(D), k)
    )
    assert F(r["min_per_A"], r["unit"] * L**2) == exact


# -- Theorem 2.4 / A.27 --------------------------------------------------------------------------
def test_sq_numbers_and_pairs():
    r = theory.sq_numbers(6, 2)
    assert r["sq_dim"] == 15 and r["error_threshold_gap"] == F(1, 15**3)
    c = theory.parity_correlations(6, 2)
    assert c["pairs"] == 15 * 14 and c["max_abs_correlation_count"] == 0


@pytest.mark.parametrize("A", [[0], [1, 3], [0, 2, 3]])
def test_sq_concept_counts_the_zeros_in_A(A):
    Z = theory.cube(4)
    g = theory.sq_concept(4, A)
    assert g.dtype.kind == "i"
    assert np.array_equal(g, (Z[:, A] == -1).sum(1) % 2)


def test_binomial_check_counts_cases_and_can_fail(monkeypatch):
    # cases: k = 1 .. D // 16 for D = 16 .. 40: 16 values with one k, 9 with two
    r = theory.binomial_at_least_16_to_k(40)
    assert r == {"cases": 16 + 18, "violations": 0}
    monkeypatch.setattr(theory.math, "comb", lambda n, k: 16**k - 1)
    assert theory.binomial_at_least_16_to_k(40) == {"cases": 34, "violations": 34}
    monkeypatch.setattr(theory.math, "comb", lambda n, k: 16**k)  # equality is no violation
    assert theory.binomial_at_least_16_to_k(40)["violations"] == 0


def test_readings_root_ratio_and_names():
    r = theory.readings_symbolic()
    N, B, k, t = r["symbols"]
    assert [str(x) for x in (N, B, k, t)] == ["N", "B", "k", "t"]
    assert sp.simplify(r["root"] - sp.sqrt(t) / (2 * sp.sqrt(N))) == 0  # < 1/2 when t < 1 <= N
    assert sp.simplify(r["linear"] - 2 ** (-k - sp.Rational(1, 2))) == 0


def test_theorem_2_1_rates_at_the_horizon():
    r = theory.theorem_2_1_rates()
    k, m, T, eps = r["symbols"]
    assert [str(x) for x in (k, m, T, eps)] == ["k", "m", "T", "epsilon"]
    assert r["matches"] and len(r["substituted"]) == 5
    third = m ** sp.Rational(2, 3)
    expected = [k**9 / m, k**8 / third, k**3 / third, k**7 / third, k**2 / third]
    assert all(sp.simplify(a - b) == 0 for a, b in zip(r["at_T"], expected))
    assert r["width"] == [k**12 / eps ** sp.Rational(3, 2)]


def test_lemma_a29_margins_are_the_network_at_s_minus_mu_plus_eps():
    # <w, x> = (S - mu + eps_x) / (8k) with S = sum_{j in A} phi~_j: the margins follow from the
    # returned eps and the same phi~ (the generator's first draw), here with noise heavy enough
    # that pre-activations leave [0, 1] on both sides
    dist = data.parity_mixture(40, 20, k=3, p_o=F(1, 2), generator=_gen())
    r = theory.lemma_a29_noisy(dist, 10.0, 300, _gen(4))
    phi = dist.sample_phi_tilde(300, _gen(4))
    S = phi[:, list(dist.A)].sum(1)
    net = theory.target_network_a29(dist.k, dist.P, dist.mu)
    a = torch.tensor([float(v) for v in net["a"]], dtype=torch.float64)
    b = torch.tensor([float(v) for v in net["b"]], dtype=torch.float64)
    pre = (float(net["scale"]) * (S - float(dist.mu) + r["eps"])).unsqueeze(1) + b
    assert (pre > 2).any() and (pre < 0).any()
    margin = dist.labels(phi) * (pre.clamp(0, 1) @ a)
    assert torch.allclose(r["margin"], margin, rtol=0, atol=1e-9)
    assert torch.equal(r["below"], (r["margin"] < 1).double()) and 0 < float(r["below"].mean()) < 1
