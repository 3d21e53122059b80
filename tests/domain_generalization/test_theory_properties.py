"""Property tests (hypothesis) of companions.domain_generalization.theory: closed forms across
their domain, symmetries, scalings, and the hypotheses' boundaries."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.domain_generalization import theory as th

FAST = settings(max_examples=30, deadline=None, derandomize=True)


@FAST
@given(st.floats(-30, 30))
def test_logistic_and_its_derivative(z):
    x = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    val = th.logistic(x)
    assert float(val.detach()) == pytest.approx(math.log1p(math.exp(-z)), rel=1e-12, abs=3e-9)
    # softplus switches to the identity beyond 20 and is off by up to exp(-20) ~ 2e-9 there
    # (companions.losses.logistic is exact); far below any of the chapter's tolerances
    assert float((val - th.logistic(-x)).detach()) == pytest.approx(-z, abs=3e-9)
    (grad,) = torch.autograd.grad(val, x)
    assert float(th.logistic_derivative(x.detach())) == pytest.approx(float(grad), abs=3e-9)
    assert float(th.logistic_derivative(x.detach())) == pytest.approx(-1 / (1 + math.exp(z)))


@FAST
@given(
    st.floats(-2, 2), st.floats(-2, 2), st.floats(0.0, 1.0), st.integers(1, 5), st.integers(1, 5)
)
def test_l2_objective_is_the_mean_loss_plus_the_penalty(alpha, beta, lam, r, extra):
    g = torch.Generator().manual_seed(0)
    s_r, s_u = torch.randn(50, generator=g, dtype=torch.float64), torch.randn(50, generator=g)
    d = r + extra
    expected = float(th.logistic(alpha * s_r + beta * s_u).mean()) + lam / 2 * (
        r * alpha**2 + extra * beta**2
    )
    assert th.l2_objective(alpha, beta, s_r=s_r, s_u=s_u, lam=lam, r=r, d=d) == pytest.approx(
        expected
    )


@FAST
@given(
    st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.floats(0.5, 3),
)
def test_wilson_upper_is_its_closed_form(kn, z):
    k, n = kn
    p = k / n
    upper = (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n
    )
    got = th.wilson_upper(k, n, z)
    assert got == pytest.approx(min(1.0, upper), rel=1e-12)
    assert p - 1e-12 <= got <= 1.0
    if k == 0:
        assert got == pytest.approx(z * z / (n + z * z))
    if k == n:
        assert got == pytest.approx(1.0)
    assert th.wilson_upper(k, n) == pytest.approx(th.wilson_upper(k, n, 1.96))
    # more data (same proportion) narrows the interval
    assert th.wilson_upper(4 * k, 4 * n, z) <= got + 1e-12


@pytest.mark.parametrize("k, n", [(-1, 5), (6, 5), (0, 0), (1, -3)])
def test_wilson_upper_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError, match=f"'k' = {k} is not allowed with n = {n}"):
        th.wilson_upper(k, n)


@FAST
@given(
    st.floats(0.1, 3),
    st.floats(0.1, 3),
    st.integers(1, 30),
    st.integers(1, 30),
    st.floats(0.0, 0.5),
    st.floats(0.2, 5),
)
def test_normal_ood_accuracy_closed_form_scaling_and_sign(alpha, beta, r, extra, gamma, c):
    d = r + extra
    acc = th.normal_ood_accuracy(alpha, beta, r, d, gamma)
    mean = alpha * r / 2 - beta * extra * gamma
    sd = math.sqrt(alpha**2 * r / 12 + beta**2 * extra * (1 / 3 - gamma**2))
    assert acc == pytest.approx(0.5 * (1 + math.erf(mean / (sd * math.sqrt(2)))))
    assert th.normal_ood_accuracy(c * alpha, c * beta, r, d, gamma) == pytest.approx(acc)
    assert th.normal_ood_accuracy(-alpha, -beta, r, d, gamma) == pytest.approx(1 - acc)


@FAST
@given(st.integers(1, 400), st.floats(0.05, 0.5))
def test_bounds_of_proposition_6_3_are_their_formulas(r, gamma):
    assert th.gamma_interval(r) == (pytest.approx(3 / math.sqrt(r)), 0.5)
    assert th.lambda_floor(r) == pytest.approx(math.sqrt(r) * math.exp(-math.sqrt(r) / 5))
    assert th.d_floor(r, gamma) == pytest.approx(r / gamma**2 + r)
    assert th.ood_bound(r) == pytest.approx(math.exp(-r / 10))
    d = int(th.d_floor(r, gamma)) + 7
    t = -3 * r / (8 * gamma) + (d - r) * gamma
    assert th.hoeffding_t(r, d, gamma) == pytest.approx(t)
    assert th.hoeffding_exponent_as_printed(r, d, gamma) == pytest.approx(2 * t * t / (4 * d))
    corrected = 2 * t * t / (9 * r / (16 * gamma**2) + 4 * (d - r))
    assert th.hoeffding_exponent_corrected(r, d, gamma) == pytest.approx(corrected)


def test_hypotheses_are_strict_at_their_boundaries():
    r = 100
    lo, hi = th.gamma_interval(r)
    gamma = 0.4
    d = th.d_floor(r, gamma)
    lam = th.lambda_floor(r)
    ok = th.hypotheses(r, math.ceil(d) + 1, gamma, 2 * lam)
    assert ok == {"gamma": True, "d": True, "lambda": True, "r": True}
    assert th.hypotheses(r, 10**6, lo, 1.0)["gamma"] is False
    assert th.hypotheses(r, 10**6, hi, 1.0)["gamma"] is False
    assert th.hypotheses(r, int(d), gamma, 1.0)["d"] is False  # d_floor(100, 0.4) = 725
    assert th.hypotheses(r, 500, 0.5, 1.0)["d"] is False  # d = d_floor(100, 1/2) = 500 exactly
    assert th.hypotheses(r, 501, 0.5, 1.0)["d"] is True
    assert th.hypotheses(r, 10**6, gamma, lam)["lambda"] is False
    assert th.hypotheses(r, 10**6, gamma, 1.5 * lam, omega_constant=2.0)["lambda"] is False
    assert th.hypotheses(20, 10**6, 0.49, 1.0)["r"] is True
    assert th.hypotheses(19, 10**6, 0.49, 1.0)["r"] is False


@FAST
@given(st.floats(0.0, 20.0), st.floats(0.0, 1.0))
def test_two_d_accuracy_symmetry_and_inverse(t, p):
    acc = th.two_d_accuracy(t, p)
    h = 1 - t / 2 if t <= 1 else 1 / (2 * t)
    assert acc == pytest.approx(p + (1 - p) * h)
    assert th.two_d_accuracy(-t, 1 - p) == pytest.approx(acc)  # flipping x2 and its alignment
    assert th.two_d_accuracy(0.0, p) == 1.0
    if 0 < p < 1 and t > 0.01:
        back = th.two_d_t_for_accuracy(acc, p)
        assert back == pytest.approx(t, rel=1e-6)


def test_two_d_accuracy_is_continuous_at_one_and_the_inverse_checks_its_range():
    for p in (0.2, 0.9):
        assert th.two_d_accuracy(1 - 1e-12, p) == pytest.approx(th.two_d_accuracy(1 + 1e-12, p))
        with pytest.raises(ValueError, match="'acc'"):
            th.two_d_t_for_accuracy(p / 2, p)
    assert th.two_d_t_for_accuracy(1.0, 0.5) == pytest.approx(0.0, abs=1e-9)


def _brute_max_id(ood, p, steps=40):
    """The bound by brute force on a grid of (S, T) in [0, 2]^2 (exact fractions)."""
    q, best = 1 - p, None
    for i in range(steps + 1):
        s = Fraction(2 * i, steps)
        t = (2 * ood - q * s) / p
        if 0 <= t <= 2:
            v = (p * s + q * t) / 2
            best = v if best is None else max(best, v)
    return best


@FAST
@given(st.integers(1, 19), st.integers(0, 20))
def test_two_d_max_id_against_a_grid_and_at_the_symmetric_split(pi, oi):
    p, ood = Fraction(pi, 20), Fraction(oi, 20)
    got = th.two_d_max_id_given_ood(ood, p)
    grid = _brute_max_id(ood, p)
    assert grid is None or got >= grid
    assert th.two_d_max_id_given_ood(ood, Fraction(1, 2)) == ood  # ID = OOD at p = 1/2
    one = th.two_d_max_id_given_ood_one_sided(ood, p)
    assert 0 <= one <= 1 and 0 <= got <= 1
    assert th.two_d_max_id_given_ood_one_sided(ood, Fraction(1, 2)) == ood


@FAST
@given(st.integers(0, 10**6), st.integers(1, 5), st.integers(1, 5), st.floats(0.1, 10))
def test_matrix_norms_scale_as_they_should(seed, a, b, c):
    m = torch.randn(a, b, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    s = torch.linalg.svdvals(m)
    assert float(th.nuclear_norm(m)) == pytest.approx(float(s.sum()))
    assert float(th.nuclear_norm(-c * m)) == pytest.approx(c * float(s.sum()))
    sr = float(th.stable_rank(m))
    assert sr == pytest.approx(float((s**2).sum() / s[0] ** 2))
    assert float(th.stable_rank(c * m)) == pytest.approx(sr)
    assert 1 - 1e-12 <= sr <= min(a, b) + 1e-12
    printed = float(th.stable_rank_as_printed(m))
    assert printed == pytest.approx(sr * float(s[0]))
    assert float(th.stable_rank_as_printed(c * m)) == pytest.approx(c * printed)
    batch = torch.stack([m, 2 * m])
    assert th.nuclear_norm(batch).shape == (2,) and th.stable_rank(batch).shape == (2,)
    assert torch.allclose(th.stable_rank(batch), torch.tensor([sr, sr], dtype=torch.float64))
    assert torch.allclose(
        th.stable_rank_as_printed(batch), torch.tensor([printed, 2 * printed], dtype=torch.float64)
    )


def _grid_max_id(ood, p, steps=40):
    """max ID on {OOD = ood} over the segment, parametrised by S and by T (exact fractions): the
    two grids hold both ends of the segment, where the maximum of a linear function lies."""
    q, vals = 1 - p, []
    for i in range(steps + 1):
        side = Fraction(2 * i, steps)
        t = (2 * ood - q * side) / p
        if 0 <= t <= 2:
            vals.append((p * side + q * t) / 2)
        s = (2 * ood - p * side) / q
        if 0 <= s <= 2:
            vals.append((p * s + q * side) / 2)
    return max(vals) if vals else None


@FAST
@given(st.integers(1, 19), st.integers(0, 20))
def test_two_d_max_id_is_the_best_end_of_the_segment(pi, oi):
    p, ood = Fraction(pi, 20), Fraction(oi, 20)
    assert th.two_d_max_id_given_ood(ood, p) == _grid_max_id(ood, p)


def _grid_one_sided(ood, p, steps=20):
    q = 1 - p
    w_id, w_ood = (p / 2, q / 2, Fraction(1, 2)), (q / 2, p / 2, Fraction(1, 2))
    best = None
    for free in range(3):
        i, j = [k for k in range(3) if k != free]
        for a in range(steps + 1):
            for b in range(steps + 1):
                x = [Fraction(0)] * 3
                x[i], x[j] = Fraction(a, steps), Fraction(b, steps)
                x[free] = (ood - w_ood[i] * x[i] - w_ood[j] * x[j]) / w_ood[free]
                if 0 <= x[free] <= 1:
                    v = sum(w * y for w, y in zip(w_id, x))
                    best = v if best is None else max(best, v)
    return best


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.integers(1, 9), st.integers(0, 10))
def test_two_d_one_sided_bound_is_the_best_feasible_point(pi, oi):
    p, ood = Fraction(pi, 10), Fraction(oi, 10)
    assert th.two_d_max_id_given_ood_one_sided(ood, p) == _grid_one_sided(ood, p)


def test_two_d_bounds_refuse_an_unreachable_accuracy():
    for f in (th.two_d_max_id_given_ood, th.two_d_max_id_given_ood_one_sided):
        with pytest.raises(ValueError, match="'ood' = .* no classifier has this OOD accuracy"):
            f(Fraction(3, 2), Fraction(1, 3))
    with pytest.raises(ValueError, match="'acc' = 0.1 is not allowed: not reached for t >= 0"):
        th.two_d_t_for_accuracy(0.1, 0.8)
    # both ends of the range are reached
    far = th.two_d_accuracy(1e6, 0.3)
    assert th.two_d_t_for_accuracy(far, 0.3) == pytest.approx(1e6, rel=1e-9)


@pytest.mark.parametrize("lam", [0.002, 0.02, 0.1])
def test_l1_alpha_solves_its_equation(lam):
    g = torch.Generator().manual_seed(0)
    r = 5
    s_r = torch.rand(4000, r, generator=g, dtype=torch.float64).sum(-1)
    alpha = th._l1_alpha(s_r, lam, r, 1e-12)
    lhs = float((torch.sigmoid(-alpha * s_r) * s_r).mean())
    assert alpha > 0 and lhs == pytest.approx(lam * r, rel=1e-8)


def test_l1_alpha_is_zero_when_the_penalty_outweighs_every_feature():
    s_r = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)  # E[S_R] / 2 = 1 = lam r at lam = 1/2
    assert th._l1_alpha(s_r, 0.5, 2, 1e-12) == 0.0
    assert th._l1_alpha(s_r, 0.6, 2, 1e-12) == 0.0
    assert th._l1_alpha(s_r, 0.4, 2, 1e-12) > 0


def _sup_lambda(r, d, grid):
    c = math.log1p(math.exp(-d / math.sqrt(r)))
    ts = torch.tensor(grid, dtype=torch.float64)
    g = torch.exp(r * torch.log(-torch.expm1(-ts) / ts))
    return max(0.0, float((2 * (c - g) / (r * ts**2)).max()))


@pytest.mark.parametrize("r, d", [(4, 2), (9, 4), (16, 30)])
def test_lemma_6_1_counterexample_lambda_is_the_supremum(r, d):
    fine = [10 ** (-2 + 7 * i / 200000) for i in range(200001)]
    exact = _sup_lambda(r, d, fine)
    got = th.lemma_6_1_counterexample_lambda(r, d)
    assert exact > 0 and got == pytest.approx(exact, rel=1e-6) and got <= exact


def test_solve_full_l2_takes_float32_draws_in_float64():
    g = torch.Generator().manual_seed(1)
    z = torch.rand(300, 4, generator=g) * 2 - 0.5
    w32 = th.solve_full_l2(z, 0.1)
    w64 = th.solve_full_l2(z.double(), 0.1)
    assert w32.dtype == torch.float64 and torch.equal(w32, w64)
    # the optimum: the gradient of mean l(z w) + lam/2 |w|^2 vanishes
    m = z.double() @ w64
    grad = -(z.double() * torch.sigmoid(-m)[:, None]).mean(0) + 0.1 * w64
    assert float(grad.abs().max()) < 1e-10


def _sums(seed=0, n=5000, r=8, d=40, gamma=0.45):
    from companions.domain_generalization import data

    return data.sample_sums(n, r, d=d, gamma=gamma, generator=torch.Generator().manual_seed(seed))


def test_solve_l1_records_the_kkt_slack_and_its_standard_error():
    s_r, s_u = _sums()
    for lam in (0.3, 0.01, 1e-4):
        opt = th.solve_l1(s_r, s_u, lam=lam, r=8, d=40, gamma=0.45)
        a = th._l1_alpha(s_r.double(), lam, 8, 1e-12)
        neg = torch.sigmoid(-a * s_r.double())
        assert opt.kkt_slack == pytest.approx(lam - 0.45 * float(neg.mean()), rel=1e-12)
        assert opt.kkt_slack_se == pytest.approx(0.45 * float(neg.std()) / math.sqrt(len(neg)))
        assert (opt.beta == 0.0) == (opt.kkt_slack >= 0)
        if opt.beta == 0.0:
            assert opt.alpha == a
    with pytest.raises(ValueError, match="'lam' = 0 is not allowed: expected a real number > 0"):
        th.solve_l1(s_r, s_u, lam=0, r=8, d=40, gamma=0.45)


def test_solve_l1_with_beta_solves_both_stationarity_equations():
    s_r, s_u = _sums(seed=1)
    opt = th.solve_l1(s_r, s_u, lam=1e-4, r=8, d=40, gamma=0.45)
    assert opt.beta > 0 and opt.kkt_slack < 0
    neg = torch.sigmoid(-(opt.alpha * s_r + opt.beta * s_u))
    assert float((neg * s_r).mean()) == pytest.approx(1e-4 * 8, abs=1e-9)
    assert float((neg * s_u).mean()) == pytest.approx(1e-4 * 32, abs=1e-9)


def test_newton_counts_its_iterations_and_converges_quadratically():
    s_r, s_u = _sums(seed=2, d=12, r=3, gamma=0.3)
    opt = th.solve_l2(s_r, s_u, lam=0.05, r=3, d=12)
    assert 1 <= opt.iterations <= 8 and opt.gradient_norm < 1e-12
    # already converged at the start: no step taken
    assert th.solve_l2(s_r, s_u, lam=0.05, r=3, d=12, tol=1e9).iterations == 0
    # never converged: every allowed step is taken, the last gradient reported
    capped = th.solve_l2(s_r, s_u, lam=0.05, r=3, d=12, tol=0.0, max_iter=3)
    assert capped.iterations == 3 and 0 < capped.gradient_norm < 1
    assert th.solve_l2(s_r, s_u, lam=0.05, r=3, d=12, max_iter=0).gradient_norm == math.inf
    one = th.solve_l2(s_r, s_u, lam=0.05, r=3, d=12, tol=0.0, max_iter=1)
    assert one.iterations == 1 and (one.alpha, one.beta) != (0.0, 0.0)


# A problem on which Newton's full step overshoots (found by a search: at the sixth step the
# objective would rise from 0.18 to 1.0), so the backtracking line search is exercised.
_OVERSHOOT = torch.tensor(
    [
        [-0.14512444378164036, 0.7468515304786014],
        [14.522979529644802, -28.019988964442845],
        [3.5246670514059715, 46.28346795404422],
        [6.489993374133356, -7.095725427604152],
    ],
    dtype=torch.float64,
)
_OVERSHOOT_LAM = 0.00012491561917396307


def _objective(x):
    return float(th.logistic(_OVERSHOOT @ x).mean()) + _OVERSHOOT_LAM / 2 * float((x**2).sum())


def test_newton_backtracks_where_the_full_step_overshoots():
    opt = th.solve_l2(_OVERSHOOT[:, 0], _OVERSHOOT[:, 1], lam=_OVERSHOOT_LAM, r=1, d=2)
    x = torch.tensor([opt.alpha, opt.beta], dtype=torch.float64)
    m = _OVERSHOOT @ x
    grad = -(_OVERSHOOT * torch.sigmoid(-m)[:, None]).mean(0) + _OVERSHOOT_LAM * x
    assert opt.gradient_norm < 1e-12 and float(grad.abs().max()) < 1e-10
    assert opt.iterations < 100
    # the same optimum without the reduction (its own line search), and a true minimum
    w = th.solve_full_l2(_OVERSHOOT, _OVERSHOOT_LAM)
    assert torch.allclose(w, x, rtol=1e-8, atol=1e-10)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        near = x + 0.01 * torch.randn(2, generator=g, dtype=torch.float64)
        assert _objective(near) >= _objective(x)
    assert th.l2_objective(
        opt.alpha,
        opt.beta,
        s_r=_OVERSHOOT[:, 0],
        s_u=_OVERSHOOT[:, 1],
        lam=_OVERSHOOT_LAM,
        r=1,
        d=2,
    ) == pytest.approx(_objective(x))


def test_solvers_take_float32_sums_in_float64():
    s_r, s_u = _sums(seed=3)
    for lam in (0.01, 1e-4):
        a = th.solve_l1(s_r.float(), s_u.float(), lam=lam, r=8, d=40, gamma=0.45)
        b = th.solve_l1(s_r.float().double(), s_u.float().double(), lam=lam, r=8, d=40, gamma=0.45)
        assert (a.alpha, a.beta, a.kkt_slack) == (b.alpha, b.beta, b.kkt_slack)
    a = th.solve_l2(s_r.float(), s_u.float(), lam=0.05, r=8, d=40)
    b = th.solve_l2(s_r.float().double(), s_u.float().double(), lam=0.05, r=8, d=40)
    assert (a.alpha, a.beta) == (b.alpha, b.beta)
