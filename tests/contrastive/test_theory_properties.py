"""Property tests (hypothesis) of closed forms in companions.contrastive.theory, across their
domain: a slip such as rho for rho^2 vanishes at rho = 1, so rho ranges over (0, 1]."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.contrastive import theory as ct

FAST = settings(max_examples=30, deadline=None, derandomize=True)
RHO = st.floats(0.05, 1.0)
GAMMA = st.floats(0.0, 0.9)


@FAST
@given(RHO, GAMMA, st.floats(0.1, 0.9))
def test_c1_c2_scale_as_rho_squared_and_their_product_is_free_of_rho(rho, gamma, c):
    assert ct.c1(rho, gamma) == pytest.approx(2 * (1 + gamma) / rho**2)
    assert ct.c2(rho, gamma) == pytest.approx(2 * (1 - gamma) * rho**2)
    assert ct.c1(c * rho, gamma) == pytest.approx(ct.c1(rho, gamma) / c**2)
    assert ct.c2(c * rho, gamma) == pytest.approx(ct.c2(rho, gamma) * c**2)
    assert ct.c1(rho, gamma) * ct.c2(rho, gamma) == pytest.approx(4 * (1 - gamma**2))
    assert ct.c1(rho, gamma) >= ct.c2(rho, gamma)


@FAST
@given(st.integers(2, 400), st.floats(-0.5, 1.5))
def test_beta_tail_is_the_beta_survival_function(d, t):
    got = ct.beta_tail(d, t)
    if t >= 1:
        assert got == 0.0
    elif t <= 0:
        assert got == 1.0
    else:
        exact = 1 - float(mpmath.betainc(0.5, (d - 1) / 2, 0, t, regularized=True))
        assert got == pytest.approx(exact, abs=1e-12)
        assert 0 <= got <= 1
        assert ct.beta_tail(d, min(1.0, t + 0.05)) <= got  # a survival function decreases


def test_beta_tail_at_d_two_is_the_arcsine_law():
    # u^2 ~ Beta(1/2, 1/2): Pr[u^2 >= t] = 1 - (2/pi) asin(sqrt(t))
    for t in (0.1, 0.5, 0.9):
        assert ct.beta_tail(2, t) == pytest.approx(1 - 2 / math.pi * math.asin(math.sqrt(t)))


@FAST
@given(st.integers(3, 300), RHO, GAMMA)
def test_probabilities_of_definition_b1_use_c1_and_c2(d, rho, gamma):
    assert ct.prob_ordinary(d, rho, gamma) == pytest.approx(
        ct.beta_tail(d, 2 * (1 - gamma) * rho**2 * math.log(d) / d)
    )
    assert ct.prob_lucky_first(d, rho, gamma) == pytest.approx(
        ct.beta_tail(d, 2 * (1 + gamma) / rho**2 * math.log(d) / d)
    )
    assert ct.prob_lucky_first(d, rho, gamma) <= ct.prob_ordinary(d, rho, gamma)


@FAST
@given(
    st.floats(0.0, 2.0),
    st.floats(0.001, 0.5),
    st.floats(0.0, 1.0),
    st.integers(1, 64),
    st.floats(0.1, 3.0),
)
def test_growth_rate_closed_form(kappa, eta, lam, n_neg, c_tau):
    g = float(ct.growth_rate(kappa, eta, lam, n_neg, c_tau))
    assert g == pytest.approx(1 - eta * lam + eta * c_tau * (1 - 1 / (1 + n_neg)) * kappa)
    assert float(ct.growth_rate(0.0, eta, lam, n_neg, c_tau)) == pytest.approx(
        ct.noise_rate(eta, lam)
    )
    assert ct.noise_rate(eta, lam) == pytest.approx(1 - eta * lam)
    assert float(ct.growth_rate(kappa, eta, lam, n_neg)) == pytest.approx(
        float(ct.growth_rate(kappa, eta, lam, n_neg, 1.0))
    )
    # vectorised over features
    many = ct.growth_rate([kappa, 2 * kappa], eta, lam, n_neg, c_tau)
    assert many.shape == (2,) and many.dtype == torch.float64
