"""companions.gradient_features.theory where the mutants of issue 23 found it untested: values
checked only where a bug vanishes (sigma_plus = 2, B = 1, k odd, w = +-1), boundaries never hit
(d = 1, k = 0, m < e, r / delta < e, <w, x> = b), parameter checks never given a bad value, and
the no-argument symbolic checks compared in full."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
import torch

from companions.gradient_features import data, theory
from tests.gradient_features.test_theory import _mixture

# -- Theorem 3.12 -------------------------------------------------------------------------------


def _plain_terms(r, p, gamma, B_G, B_a1, B_a2, B_b, B_x1, eps, delta, b_tilde=0.0):
    """(3.10)-(3.13) with every constant 1, in plain floats, with the source's two clamps: the
    log in m's third term at 1e-300 and the log m under (3.11)'s square root at 1."""
    m = (r * B_a1 * B_x1) ** 4 * (B_b / B_G) ** 2 / (p * eps**4)
    m += delta**-0.5 + math.log(r / delta) ** 2 / p
    q = (m * p) ** 0.25
    first = math.sqrt(r) * B_a2 * B_b * B_x1 / q + m * b_tilde
    second = math.sqrt(max(math.log(m), 1.0)) / math.sqrt(B_b * B_G) + 1 / (B_x1 * q)
    return math.log10(m), math.log10(first * second / eps)


NAMES = ("gamma", "B_G", "B_a1", "B_a2", "B_b", "B_x1", "eps", "delta")


@pytest.mark.parametrize(
    "args",
    [
        # r / delta = 2 < e: log(r / delta)^2 / p is the largest term of m (the 1e-300 clamp
        # is not hit; a clamp at 1 would change m)
        (1, 0.01, 0.01, 2.0, 0.1, 1.0, 1.0, 0.5, 0.5, 0.5),
        # m about 2.4 < e: log m = 0.88 under the square root is clamped at 1 (not 2)
        (1, 0.5, 0.01, 1.0, 0.5, 1.0, 1.0, 1.0, 1.0, 0.9),
    ],
)
def test_theorem_3_12_terms_small_m_and_the_default_b_tilde(args):
    log_m, log_T = _plain_terms(*args)
    r, p, *rest = args
    got = theory.theorem_3_12_terms(r, p, **dict(zip(NAMES, rest)))  # b_tilde at its default, 0
    assert got["log10_m"] == pytest.approx(log_m, rel=1e-12)
    assert got["log10_T"] == pytest.approx(log_T, rel=1e-12)


def test_theorem_3_12_terms_beyond_float_range_without_b_tilde():
    # p = 1e-300, eps = 0.01: m = 10^300 (2^4 / eps^4 + ln(20)^2) + 1/sqrt(0.1), about 10^309,
    # past the largest float; with b_tilde = 0, 10^log_m must not be formed. In logs, with
    # B_a2 = B_b = B_G = B_x1 = 1: log10 first = log10(sqrt 2) - log10(m p) / 4, and the second
    # factor is sqrt(ln m) + (m p)^(-1/4)
    got = theory.theorem_3_12_terms(
        2, 1e-300, gamma=0.01, B_G=1.0, B_a1=1.0, B_a2=1.0, B_b=1.0, B_x1=1.0, eps=0.01, delta=0.1
    )
    log_mp = math.log10(16e8 + math.log(20) ** 2)  # 1/sqrt(0.1) is 1e-309 of m
    log_m = 300 + log_mp
    assert log_m > math.log10(np.finfo(np.float64).max)
    assert got["log10_m"] == pytest.approx(log_m, rel=1e-12)
    second = math.sqrt(log_m * math.log(10)) + 10 ** (-log_mp / 4)
    want = math.log10(math.sqrt(2)) - log_mp / 4 + math.log10(second) + 2
    assert got["log10_T"] == pytest.approx(want, rel=1e-12)


def test_guarantee_default_delta_is_one_tenth():
    # a parameter set whose m is not all lead term, so that delta shows
    par = dict(r=1, log10_p=math.log10(0.01), gamma=0.01, B_G=2.0, B_a1=0.1, B_a2=1.0, B_b=1.0)
    par["B_x1"] = 0.5
    got = theory.guarantee(par, eps=0.5)
    log_m, log_T = _plain_terms(1, 0.01, 0.01, 2.0, 0.1, 1.0, 1.0, 0.5, 0.5, 0.1)
    assert got["log10_m"] == pytest.approx(log_m, rel=1e-12)
    assert got["log10_T"] == pytest.approx(log_T, rel=1e-12)


# -- Lemma 3.14 and the other no-argument sympy checks: their whole output -----------------------


def test_multi_index_symbolic_in_full():
    # g = ((a^2 - 1)/sqrt 2 + a b)/sqrt 2: d^2/da^2 = 1, d^2/da db = 1/sqrt 2, d^2/db^2 = 0;
    # H's eigenvalues (1 +- sqrt 3)/2, so kappa = 2 / (sqrt 3 - 1) / sqrt 2 = (sqrt 6 + sqrt 2)/2
    mi = theory.multi_index_symbolic()
    assert set(mi) == {"second_moment", "mean", "linear", "H", "rank", "kappa"}
    r2 = 1 / sp.sqrt(2)
    assert mi["H"] == sp.Matrix([[1, r2], [r2, 0]])
    assert sp.simplify(mi["kappa"] - (sp.sqrt(6) + sp.sqrt(2)) / 2) == 0
    assert (mi["second_moment"], mi["mean"], mi["linear"], mi["rank"]) == (1, 0, [0, 0], 2)


def test_multi_index_label_at_a_point():
    # z = (1, 2) (the third coordinate is not used): ((1 - 1)/sqrt 2 + 2)/sqrt 2 = sqrt 2;
    # z = (3, -1): ((9 - 1)/sqrt 2 - 3)/sqrt 2 = 4 - 3/sqrt 2
    X = torch.tensor([[1.0, 2.0, 5.0], [3.0, -1.0, 7.0]], dtype=torch.float64)
    want = torch.tensor([math.sqrt(2), 4 - 3 / math.sqrt(2)], dtype=torch.float64)
    assert torch.allclose(theory.multi_index_label(X), want, rtol=1e-14, atol=0)


# -- Lemma 3.17 ---------------------------------------------------------------------------------


def test_lemma_3_17_log10_p_with_sigma_plus_not_two():
    # test_theory's mixture has sigma_plus = 2, where sigma_plus^2 = 2 sigma_plus; here the means
    # are 1.5 times as long: B_mu1 = 1.2, B_mu2 = sigma_plus = 3
    mix = _mixture()
    mix = data.Mixture(mix.means * 1.5, mix.sigmas, mix.labels, mix.weights)
    tau, d = 2.0, 9
    root = math.sqrt(tau * math.log(d))
    par = theory.lemma_3_17_parameters(mix, tau)
    assert par["log10_p"] == pytest.approx(
        math.log10(1.2 / (3 * root)) - tau * 9 / 1.44 * math.log10(d), rel=1e-13
    )


def test_mixture_ground_truth_batched_and_in_float32():
    # test_theory's mixture: D_j = e_j (j < 4), labels (+, -, +, -), sigma_plus = 2, so
    # g*(x) = sum_j y_j relu(x_j - 2c) / c with c = 2 sqrt(tau log 9); X of three axes, float32
    mix, tau = _mixture(), 0.1
    c = 2 * math.sqrt(tau * math.log(9))
    X = 2 * torch.randn(2, 5, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    X[0, 0, :4] = torch.tensor([2 * c + 1, 2 * c + 2, 0.0, 2 * c + 0.5])  # three active units
    want = sum(s * torch.relu(X[..., j] - 2 * c) / c for j, s in enumerate((1, -1, 1, -1)))
    assert float(want[0, 0]) == pytest.approx((1 - 2 - 0.5) / c)
    got = theory.mixture_ground_truth(mix, tau, X.float())
    assert got.dtype == torch.float32 and got.shape == (2, 5)
    assert torch.allclose(got.double(), want, rtol=1e-5, atol=1e-6)


def _hinge_by_quadrature(d, r, mean_norm, sigma, tau):
    """The two terms of mixture_ground_truth_hinge's bound by numerical integration of the hinge
    against the normal densities (not the closed form in Phi and phi)."""
    with mp.workdps(30):
        c = mp.sqrt(tau * mp.log(d)) * sigma
        mu = mean_norm * mp.sqrt(d)

        def dens(t, m):
            return mp.npdf(t, m, sigma)

        own = mp.quad(
            lambda t: max(0, 1 - max(0, t - 2 * c) / c) * dens(t, mu), [-mp.inf, 2 * c, 3 * c]
        )
        others = (r - 1) * mp.quad(lambda t: (t - 2 * c) / c * dens(t, 0), [2 * c, mp.inf])
        return float(mp.log10(own)), float(mp.log10(others))


def test_mixture_ground_truth_hinge_against_quadrature():
    # moderate parameters, where both terms are of order 0.1 and every piece of the closed form
    # counts (sigma != 1, r = 3)
    args = (10, 3, 0.5, 0.7, 0.5)
    got = theory.mixture_ground_truth_hinge(*args)
    want = _hinge_by_quadrature(*args)
    assert got == pytest.approx(want, rel=1e-12)
    assert -2 < min(want) and max(want) < 0


def test_mixture_ground_truth_hinge_one_component_has_no_others_term():
    own, others = theory.mixture_ground_truth_hinge(10, 1, 0.5, 0.7, 0.5)
    assert others == -math.inf  # (r - 1) = 0: an exact zero, log10 -inf
    assert own == pytest.approx(_hinge_by_quadrature(10, 3, 0.5, 0.7, 0.5)[0], rel=1e-12)


def test_mixture_ground_truth_hinge_far_below_float_range():
    # a mean 10^29 sigma away: the own term is about 10^(-2e57) (the tail Phi(b)), below any float,
    # and its closed form cancels at 60 digits; the log10 returned is below -1e50 either way (-inf
    # where it cancels), not an error
    own, others = theory.mixture_ground_truth_hinge(10, 2, 1e29 / math.sqrt(10), 1.0, 2.0)
    assert own < -1e50
    assert math.isfinite(others) and others < 0


def test_mixture_hinge_bound_value():
    # Lemma 3.17: 3 / d^tau + 4 / (d^(0.9 tau - 1) sqrt(tau log d)); at d = 10, tau = 2:
    # 3/100 + 4 / (10^0.8 sqrt(2 ln 10))
    want = 0.03 + 4 * 10**-0.8 / math.sqrt(2 * math.log(10))
    assert theory.mixture_hinge_bound(10, 2.0) == pytest.approx(want, rel=1e-14)
    assert theory.mixture_hinge_bound(100, 3.0) == pytest.approx(
        3e-6 + 4 / (100**1.7 * math.sqrt(3 * math.log(100))), rel=1e-14
    )


# -- Parity: ground truths and E[yx] ------------------------------------------------------------


def test_parity_ground_truth_block_default_is_xor_and_vanishes_off_the_cube():
    # (B.469): hats centred at the cube's values s = -k, -k + 2, ..., k, giving XOR there
    # (the block's product, (-1)^((k - s) / 2)), zero for |s| > k. The default sign is (B.469)'s
    # (odd k), the other (B.551) its negative; integers throughout.
    for k in (1, 2, 3, 4):
        for s in range(-k - 3, k + 4):
            v = theory.parity_ground_truth_block(k, s)
            w = theory.parity_ground_truth_block(k, s, 0)
            assert type(v) is int and type(w) is int and v == -w
            right = v if k % 2 else w  # (B.469) for odd k, (B.551) for even k
            if abs(s) > k:
                assert right == 0
            elif (k - s) % 2 == 0:
                assert right == (-1) ** ((k - s) // 2)


@pytest.mark.parametrize(
    "k, r, sign_start, want",
    [
        # k = 1, r = 2: a tie xor_1 = -xor_2 has margin 0
        (1, 2, 1, {"min_margin": 0, "xor_on_uniform": True, "points": 4 + 4}),
        # the wrong sign for odd k: every margin is -1, XOR fails
        (3, 1, 0, {"min_margin": -1, "xor_on_uniform": False, "points": 8 + 2}),
        # (B.551) for even k: XOR; the structured patterns +-(1, 1) have margin 1
        (2, 1, 0, {"min_margin": 1, "xor_on_uniform": True, "points": 4 + 2}),
        # even k, r = 2: the other block at s = 0 is XOR(+1, -1) = -1, so the structured
        # patterns' outputs sum to 1 - 1 = 0
        (2, 2, 0, {"min_margin": 0, "xor_on_uniform": True, "points": 16 + 4}),
        # even k, r = 3: structured outputs 1 - 1 - 1 = -1 with y = 1; the uniform part >= 1
        (2, 3, 0, {"min_margin": -1, "xor_on_uniform": True, "points": 64 + 6}),
    ],
)
def test_parity_ground_truth_margins_small_cases(k, r, sign_start, want):
    assert theory.parity_ground_truth_margins(k, r, sign_start) == want


def test_parity_expected_yx_with_one_bit_blocks():
    # k = 1, r = 3: y = Maj(x_1, x_2, x_3) on the uniform part, E[Maj x_1] = Pr[x_1 pivotal] = 1/2,
    # weight 1 - 6 p_A; each structured pattern +-e_j (weight p_A) has y x_j = 1: 2 p_A.
    # E[y x_j] = (1 - 6 p_A)/2 + 2 p_A = 1/2 - p_A
    p_A = Fraction(1, 10)
    assert theory.parity_expected_yx(1, 3, p_A) == [Fraction(1, 2) - p_A] * 3
    # k = 1, r = 2: the tie (+1, -1) has y = -1; uniform E[y x_1] = (1 - 1 + 1 + 1)/4 = 1/2
    assert theory.parity_expected_yx(1, 2, p_A) == [(1 - 4 * p_A) / 2 + 2 * p_A] * 2


def test_parity_expected_yx_is_zero_for_even_k():
    # Remark B.45 for even k: the uniform part gives 0 (k >= 2), and the patterns +-1 on a block
    # have the same y = (+-1)^k = 1, so their x_i cancel
    assert theory.parity_expected_yx(2, 1, Fraction(1, 4)) == [0, 0]
    assert theory.parity_expected_yx(2, 2, Fraction(1, 10)) == [0] * 4


def test_prop_3_23_bound_with_B_not_one():
    # 1/2 - sqrt(N) B / (2^k sqrt 2) at N = 8, B = 2, k = 3: 1/2 - 2 sqrt 2 * 2 / (8 sqrt 2)
    assert theory.prop_3_23_bound(8, 2.0, 3) == pytest.approx(0.0, abs=1e-15)
    assert theory.prop_3_23_bound(2, 0.5, 1) == pytest.approx(0.25, rel=1e-14)


# -- Majority and Lemma B.63 --------------------------------------------------------------------


def test_majority_coefficient_boundaries():
    # Maj_1(x) = x: coefficient 1 on {1}, 0 on the empty set
    assert theory.majority_coefficient(1, 1) == 1 and theory.majority_coefficient(1, 0) == 0
    enum = theory.majority_coefficients_enumerated(7)
    for k in range(8):  # the even sizes (0 included) are 0, as enumeration finds
        assert theory.majority_coefficient(7, k) == enum[k]
        assert type(theory.majority_coefficient(7, k)) is Fraction
    assert enum[0] == enum[2] == enum[4] == enum[6] == 0
    for k in (-1, 8):
        with pytest.raises(
            ValueError, match=rf"^parameter 'k' = {k} is not allowed: it must lie in \[0, d\]$"
        ):
            theory.majority_coefficient(7, k)
    for d in (-1, 0, 4):
        with pytest.raises(ValueError, match=rf"^parameter 'd' = {d} is not allowed"):
            theory.majority_coefficient(d, 0)


def test_majority_coefficients_enumerated_checks_its_input_and_its_symmetry(monkeypatch):
    with pytest.raises(
        ValueError, match=r"^parameter 'd' = 4 is not allowed: Majority needs d odd$"
    ):
        theory.majority_coefficients_enumerated(4)
    # a transform whose size-1 coefficients differ (index i: value i): the check names the size
    # and the first four values of {1, 2, 4, 8, 16}
    monkeypatch.setattr(theory, "walsh_hadamard", lambda f: np.arange(len(f)))
    with pytest.raises(AssertionError, match=r"^coefficients of size 1 differ: \[1, 2, 4, 8\]$"):
        theory.majority_coefficients_enumerated(5)


def test_lemma_b63_printed_values():
    # the lemma as printed: xi_(k-1) prod_A w * w_j for every j. d = 9, A = {0, 1} (k = 2):
    # xi_1 = binom(8, 4) / 2^8 = 35/128 (Maj's degree-1 coefficient), exact Fractions
    w = [1, -1, 1, 1, -1, 1, 1, 1, -1]
    got = theory.lemma_b63_prediction(w, [0, 1], 9, printed=True)
    assert got == [Fraction(35, 128) * -1 * wj for wj in w]
    assert all(type(v) is Fraction for v in got)


def test_uniform_parity_gradient_at_the_threshold():
    # d = 3, w = (1, 1, 1), b = 1, y = x_1: <w, x> > 1 only at x = (1, 1, 1) (the sum 1 is not
    # above b), so g_j = (1/8) y x_j there = 1/8 for every j
    assert theory.uniform_parity_gradient([1, 1, 1], 1, [0], 3) == [Fraction(1, 8)] * 3
