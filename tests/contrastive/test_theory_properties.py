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


@FAST
@given(st.floats(0.0, 2.0), st.integers(1, 64), st.integers(2, 500), st.floats(0.0, 0.5))
def test_survival_threshold_includes_weight_decay(kappa, n_neg, d, lam):
    lhs, threshold = ct.survives_bias_growth(kappa, n_neg, d, lam, c_tau=1.5)
    assert float(lhs) == pytest.approx(1.5 * (1 - 1 / (1 + n_neg)) * kappa)
    assert threshold == pytest.approx(1 / d + lam)  # weight decay raises the threshold
    lhs1, _ = ct.survives_bias_growth(kappa, n_neg, d, lam)
    assert float(lhs1) == pytest.approx(float(lhs) / 1.5)


def test_survival_threshold_rejects_negative_weight_decay():
    with pytest.raises(ValueError, match="'lam' = -0.1 is not allowed: expected lam >= 0"):
        ct.survives_bias_growth(1.0, 4, 10, -0.1)
    assert ct.survives_bias_growth(1.0, 4, 10, 0.0)[1] == pytest.approx(0.1)


@FAST
@given(
    st.floats(0.5, 2.0),
    st.floats(0.01, 0.2),
    st.floats(0.0, 0.5),
    st.integers(1, 16),
    st.integers(10, 10**4),
    st.floats(0.1, 3.0),
)
def test_stage2_time_is_the_log_ratio_over_the_log_rate(kappa, eta, lam, n_neg, d, c_b):
    g = float(ct.growth_rate(kappa, eta, lam, n_neg))
    if g <= 1:
        return
    expected = math.log(math.sqrt(d) / (c_b * math.sqrt(2 * math.log(d) / d))) / math.log(g)
    assert float(ct.stage2_time(kappa, eta, lam=lam, n_neg=n_neg, d=d, c_b=c_b)) == pytest.approx(
        expected
    )
    assert (
        float(ct.stage2_time(kappa, eta, lam=lam, n_neg=n_neg, d=d, c_b=c_b, c_tau=2.0)) < expected
    )


@FAST
@given(st.integers(3, 10**5), RHO, GAMMA, st.floats(0.01, 1.0))
def test_papers_expressions_and_the_exact_count(d, rho, gamma, eta):
    assert ct.paper_lucky_exponent(rho, gamma) == pytest.approx((1 + gamma) / rho**2)
    assert ct.n_i_exact(d, rho, gamma) == pytest.approx(d * ct.prob_ordinary(d, rho, gamma))
    b = ct.paper_prob_B(d, rho, gamma)
    a = (1 - gamma) * rho**2
    p2 = d ** (-a) / math.sqrt(math.log(d))
    assert b["paper"] == 1.0
    assert b["exp(-d^(1-a))"] == pytest.approx(math.exp(-(d ** (1 - a))))
    assert b["(1-p2_paper)^(d-1)"] == pytest.approx((1 - p2) ** (d - 1))
    exact = ct.prob_ordinary(d, rho, gamma)
    assert b["(1-p2_exact)^(d-1)"] == pytest.approx((1 - exact) ** (d - 1))
    ll = math.log(math.log(d)) if d > 15 else None
    if ll and ll > 0:
        t1 = ct.t1_papers(d, 3 * d, eta)
        assert t1["000 (40)"] == pytest.approx(d * math.log(d) / (eta * ll))
        assert t1["001 (33)"] == pytest.approx(3 * t1["000 (40)"])


def test_lucky_monte_carlo_against_the_exact_tails():
    g = torch.Generator().manual_seed(0)
    d, rho, gamma, draws = 6, 0.9, 0.1, 40_000
    mc = ct.prob_lucky_mc(d, rho, gamma, draws, g)
    first = ct.prob_lucky_first(d, rho, gamma)  # the first condition alone: an upper bound
    assert 0 < mc <= first + 4 * math.sqrt(first / draws)
    # both conditions, by a direct draw of the same kind
    t1, t2 = ct.c1(rho, gamma) * math.log(d) / d, ct.c2(rho, gamma) * math.log(d) / d
    x = torch.randn(draws, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    u2 = x**2 / (x**2).sum(-1, keepdim=True)
    direct = float(((u2[:, 0] >= t1) & (u2[:, 1:].max(-1).values <= t2)).double().mean())
    se = math.sqrt(direct * (1 - direct) / draws)
    assert abs(mc - direct) < 5 * math.sqrt(2) * se + 1e-12
    # impossible first condition: exactly 0
    assert ct.prob_lucky_mc(3, 0.1, 0.5, 100, g) == 0.0


# -- T1 with weight decay: the noise coordinates shrink by (1 - eta lam) per step --------------
KAPPAS = [0.9, 0.6, 0.3, 0.1]


@pytest.mark.parametrize("lam", [0.0, 0.05, 0.2])
def test_predicted_t1_solves_its_equation_with_weight_decay(lam):
    eta, n_neg, d1 = 0.05, 15, 300
    t = ct.predicted_t1(KAPPAS, d1, eta, lam, n_neg, c_tau=1.3)
    g = ct.growth_rate(KAPPAS, eta, lam, n_neg, 1.3) / (1 - eta * lam)
    assert float((g ** (2 * t)).sum()) == pytest.approx(d1 - len(KAPPAS), rel=1e-9)
    # weight decay shrinks the noise as fast as the features: the ratio g / r is what grows
    if lam > 0:
        t0 = ct.predicted_t1(KAPPAS, d1, eta, 0.0, n_neg, c_tau=1.3)
        assert t != pytest.approx(t0, rel=1e-3)


def test_predicted_t1_is_infinite_without_growth():
    assert ct.predicted_t1([0.0, 0.0], 100, 0.1, 0.1, 3) == math.inf


def _t1_mc_reference(kappas, d1, m, eta, lam, n_neg, c_tau, runs, seed):
    g = torch.Generator().manual_seed(seed)
    lg = torch.log(ct.growth_rate(kappas, eta, lam, n_neg, c_tau) / (1 - eta * lam))
    d = len(kappas)
    a2 = torch.randn(runs, m, d, generator=g, dtype=torch.float64) ** 2
    n2 = (torch.randn(runs, m, d1 - d, generator=g, dtype=torch.float64) ** 2).sum(-1)
    done = []
    for r in range(runs):
        t = 0
        while True:
            fe = (a2[r] * torch.exp(2 * t * lg)).sum(-1)
            if float((fe / (fe + n2[r])).mean()) >= 0.5:
                break
            t += 1
        done.append(float(t))
    done = torch.tensor(done, dtype=torch.float64)
    return float(done.mean()), float(done.std())


@pytest.mark.parametrize("lam", [0.0, 0.1])
def test_predicted_t1_mc_follows_its_definition(lam):
    args = (KAPPAS, 40, 6, 0.05, lam, 7, 1.2)
    got = ct.predicted_t1_mc(
        KAPPAS,
        40,
        m=6,
        eta=0.05,
        lam=lam,
        n_neg=7,
        c_tau=1.2,
        runs=25,
        generator=torch.Generator().manual_seed(3),
    )
    ref = _t1_mc_reference(*args, runs=25, seed=3)
    assert got == pytest.approx(ref, rel=1e-12)


def test_stage1_recursion_matches_the_growth_and_noise_rates():
    import sympy as sp

    w_new, (al, be, et, la, c, B, kp) = ct.stage1_recursion_symbolic()
    assert sp.simplify(w_new[0] - al * (1 - et * la + et * c * (1 - 1 / B) * kp)) == 0
    assert sp.simplify(w_new[1] - be * (1 - et * la)) == 0
    assert all(s.is_positive for s in (al, be, et, la, c, B, kp))
    assert [str(s) for s in (al, be, et, la, c, B, kp)] == [
        "alpha",
        "beta",
        "eta",
        "lambda",
        "c",
        "B",
        "kappa",
    ]
    # the numeric rates are these factors
    vals = {et: 0.1, la: 0.2, c: 1.5, B: 4, kp: 0.7}
    assert float(w_new[0].subs(vals).subs(al, 1)) == pytest.approx(
        float(ct.growth_rate(0.7, 0.1, 0.2, 3, 1.5))
    )
    assert float(w_new[1].subs(vals).subs(be, 1)) == pytest.approx(ct.noise_rate(0.1, 0.2))


def _lucky_reference(d, rho, gamma, draws, seed):
    t1, t2 = ct.c1(rho, gamma) * math.log(d) / d, ct.c2(rho, gamma) * math.log(d) / d
    g = torch.randn(draws, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    u2 = g**2 / (g**2).sum(-1, keepdim=True)
    others = u2[:, 1:].max(-1).values
    return int(((u2[:, 0] >= t1) & (others <= t2)).sum()) / draws


@pytest.mark.parametrize(
    "d, rho, gamma", [(6, 0.9, 0.1), (12, 1.0, 0.0), (4, 0.8, 0.3), (2, 1.0, 0.0)]
)
def test_lucky_monte_carlo_is_its_definition(d, rho, gamma):
    got = ct.prob_lucky_mc(d, rho, gamma, 900, torch.Generator().manual_seed(2))
    assert got == _lucky_reference(d, rho, gamma, 900, 2)
    if ct.c1(rho, gamma) * math.log(d) / d >= 1:
        assert got == 0.0  # the first condition cannot hold
    else:
        assert got > 0


def test_lucky_monte_carlo_in_one_dimension():
    # d = 1: u^2 = 1 and t1 = t2 = 0, so every draw is lucky (no other coordinate to beat)
    assert ct.prob_lucky_mc(1, 1.0, 0.0, 50, torch.Generator().manual_seed(0)) == 1.0
