"""Tests of companions.fine_labels.symbolic written against its mutants (issue 23): each closed
form worked out by hand (the series, the ODE's solution, the ratios), the dicts' keys, and the
sign test on rational functions of k at each of its branches."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.fine_labels import symbolic as fsym

d, L, c0, t, C, A0, k = fsym.d, fsym.L, fsym.c0, fsym.t, fsym.C, fsym.A0, fsym.k


def same(a, b) -> bool:
    return sp.simplify(a - b) == 0


def test_prop_exponents_keys_and_values():
    # d^(2+2c0) d^-(2+c0) = d^c0 and d^(1+2c0) d^-(1+c0) = d^c0 (L = log d)
    assert fsym.prop_exponents() == {"coarse": True, "fine": True}


def test_tail_ratio_exponent():
    # exp(-(c_b^2/2)(L + L^-5) + (c_b^2/2)(L - L^-5)) = exp(-c_b^2 L^-5), c_b^2 = 4 + 2 c0
    assert same(fsym.tail_ratio_exponent(), sp.exp(-(4 + 2 * c0) / L**5))


def test_eq26_identity_holds():
    assert fsym.eq26_identity() is True


def test_eq29_union_bound():
    # d^(2+2c0) d d^-5 / d^-2 = d^(2 c0)
    assert same(fsym.eq29_union_bound(), d ** (2 * c0))
    assert fsym.eq29_union_bound() == d ** (2 * c0)  # as one power, not merely equal


def test_lemma_d2_series_to_second_order():
    # 1/(1+e^u) = 1/2 - u/4 + 0 u^2 + u^3/48 + ...: to second order, 1/2 - 1/(4d) exactly
    got = fsym.lemma_d2_series()
    assert sp.expand(got - (sp.Rational(1, 2) - 1 / (4 * d))) == 0


def test_lemma_e4_ode_solution():
    # A = log(C t + e^A0): A' = C / (C t + e^A0) = C e^-A, A(0) = A0
    got = fsym.lemma_e4_ode()
    assert same(got, sp.log(C * t + sp.exp(A0)))
    assert same(sp.diff(got, t) - C * sp.exp(-got), 0)
    assert same(got.subs(t, 0), A0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(1, 500), st.integers(1, 40), st.integers(1, 12))
def test_phase1_counts_closed_form(s_star, N, P, kk):
    # (s*/P) P (N/2) = s* N / 2 and (s*/P) P N/(2k) = s* N / (2k), exact rationals
    common, fine = fsym.phase1_counts(s_star, N, P, kk)
    assert common == sp.Rational(s_star * N, 2)
    assert fine == sp.Rational(s_star * N, 2 * kk)
    assert isinstance(common, sp.Rational) and isinstance(fine, sp.Rational)


def test_phase1_counts_small_case():
    assert fsym.phase1_counts(3, 128, 16, 8) == (192, 24)
    assert fsym.phase1_counts(1, 3, 2, 2) == (sp.Rational(3, 2), sp.Rational(3, 4))


def test_fine_step_ratio_at_init():
    # (1 - k/(2k)) / (1 - 1/(2k)) = (1/2) / ((2k-1)/(2k)) = k / (2k - 1)
    assert same(fsym.fine_step_ratio_at_init(), k / (2 * k - 1))


@pytest.mark.parametrize(
    "expr, expected",
    [
        (sp.Add(k, -k, evaluate=False), True),  # zero numerator
        (sp.Integer(0) * k, True),
        (1 / (3 * k * (6 * k - 1)), True),  # both positive
        ((1 - 2 * k) / (1 - 3 * k), True),  # both negative for k >= 1
        (-(k**2) - 1, False),  # negative numerator, positive denominator
        (-1 / (k + 1), False),
        (1 / (1 - 2 * k), False),  # positive numerator, negative denominator
        ((k - 2) / (k + 1), False),  # numerator of mixed sign: j - 1
        ((2 - k) / (1 - 3 * k), False),  # mixed numerator 1 - j over negative denominator
        (k - 1, True),  # zero at k = 1, nonnegative
        (1 - k, False),
        (sp.Integer(5) + 0 * k, True),
        (k / (1 - 2 * k), False),  # numerator j + 1 (all coefficients 1), denominator -2j - 1
        (k**2 - 2 * k + 2, True),  # j^2 + 1: a zero coefficient in the numerator
        (1 / (k**2 - 2 * k + 2), True),  # a zero coefficient in the denominator
        ((1 - k) / (1 - 2 * k), True),  # -j / (-2j - 1): a zero coefficient, both nonpositive
        ((1 - 2 * k) / (-(k**2) + 2 * k - 2), True),  # -(2j + 1) / -(j^2 + 1)
        (-1 / k, False),  # -1 / (j + 1)
    ],
)
def test_nonnegative_for_k_at_least_1_branches(expr, expected):
    assert fsym.nonnegative_for_k_at_least_1(expr) is expected


def test_lemma_g2_interval_keys_and_values():
    assert fsym.lemma_g2_interval() == {
        "own logit >= 1/(3k)": True,
        "own logit <= 3/(4k)": True,
        "coefficient >= 1/4": True,
        "coefficient <= 2/3": True,
    }


def test_lemma_g2_interval_margins(monkeypatch):
    # lo = 1/(1 + (2k-1) 3/2) = 2/(6k-1), hi = (3/2)/(3/2 + 2k - 1) = 3/(4k+1); the four margins
    # handed to the sign test, worked out by hand:
    expected = [
        1 / (3 * k * (6 * k - 1)),  # 2/(6k-1) - 1/(3k)
        3 / (4 * k * (4 * k + 1)),  # 3/(4k) - 3/(4k+1)
        3 / (4 * (4 * k + 1)),  # 1 - 3k/(4k+1) - 1/4
        1 / (3 * (6 * k - 1)),  # 2/3 - 1 + 2k/(6k-1)
    ]
    seen = []
    real = fsym.nonnegative_for_k_at_least_1

    def recording(expr):
        seen.append(expr)
        return real(expr)

    monkeypatch.setattr(fsym, "nonnegative_for_k_at_least_1", recording)
    assert all(fsym.lemma_g2_interval().values())
    assert len(seen) == 4
    for got, want in zip(seen, expected):
        assert same(got, want), (got, want)
