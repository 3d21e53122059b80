"""Mutation tests of companions.fourier.symbolic (issue 23): each identity is a theorem, so its
residual is zero at every size tried, and each count is the closed form the docstring states
(Lemma C.16, eq. C.21, Lemma C.18, the Dirichlet sum, eq. C.9)."""

import pytest
import sympy as sp

from companions.fourier import symbolic as fsym


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("half", [False, True])
def test_sum_to_product_residual_is_zero_at_every_k(k, half):
    assert fsym.sum_to_product_residual(k, half=half) == 0


def test_sum_to_product_residual_defaults_to_the_full_sum():
    # At k = 2 the full signed sum is (a+b)^2 - (a-b)^2 - (-a+b)^2 + (-a-b)^2 = 8ab = 2^2 2! ab,
    # the half sum (c_1 = 1) is 4ab = 2^1 2! ab: with half=True as the default the residual of
    # a call without it would be -4ab, not zero.
    assert fsym.sum_to_product_residual(2) == 0
    assert fsym.sum_to_product_residual(3) == 0


def test_sum_to_product_residual_at_k_0_is_the_empty_identity():
    # one empty sign vector: (-1)^0 * (empty sum)^0 = 1 = 2^0 0! (empty product)
    assert fsym.sum_to_product_residual(0) == 0


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_sum_to_product_sign_is_product_holds(k):
    assert fsym.sum_to_product_sign_is_product(k) is True


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5, 6])
def test_cosine_expansion_is_exact_with_2_to_the_K_minus_1_terms(K):
    # K = 6 is the first size with sum(b) = 6, where the sign (-1)^[sum b = 2 mod 4] is -1 again
    residual, terms = fsym.cosine_expansion(K)
    assert residual == 0 and terms == 2 ** (K - 1)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_construction_identity_is_zero(k):
    assert fsym.construction_identity(k) == 0


@pytest.mark.parametrize("p", [3, 5, 7])
def test_dirichlet_sum_minpoly_at_multiples_and_non_multiples(p):
    t = sp.Symbol("t")
    # p | x: every cosine is 1, the sum is (p-1)/2; otherwise the half Dirichlet sum is -1/2
    for x in (0, p):
        assert sp.expand(fsym.dirichlet_sum_minpoly(p, x) - (t - sp.Rational(p - 1, 2))) == 0
    for x in {1, 2, p - 1}:
        assert fsym.dirichlet_sum_minpoly(p, x) == 2 * t + 1


def test_c9_arithmetic_is_zero_at_5_and_7_and_the_cited_step_is_minus_2_over_p_minus_1():
    out = fsym.c9_arithmetic()
    assert set(out) == {5, 7, "step"}
    assert out[5] == 0 and out[7] == 0
    P = sp.Symbol("p", positive=True)  # the symbol the source declares
    # 1 - 1/(p-1) - p/(p-1) = (p - 1 - 1 - p)/(p - 1) = -2/(p - 1)
    assert sp.simplify(out["step"] + 2 / (P - 1)) == 0
    assert out["step"].free_symbols == {P}
