"""Sympy checks of the closed forms of Appendix E (exact, symbolic)."""

from __future__ import annotations

import sympy as sp

z, c, g, r, d, t = sp.symbols("z c gamma r d t", real=True)


def lemma_e_1() -> dict:
    """Lemma E.1: l = ln(1 + e^-z). Returns residuals that are 0 exactly when each part holds.

    ``derivative``: l' + 1/(1 + e^z); ``second``: l'' - s(1 - s) with s = 1/(1 + e^-z) (> 0);
    ``third``: l''' + s(1 - s)(2s - 1), and 2s - 1 = tanh(z/2) > 0 for z > 0 (so l' is strictly
    concave there); ``shift``: the identity behind (4), e^c (1 + e^z) - (1 + e^(z + c)) - (e^c - 1),
    with e^c - 1 > 0 exactly for c > 0 (``shift_positive``).
    """
    ell = sp.log(1 + sp.exp(-z))
    s = 1 / (1 + sp.exp(-z))
    d1, d2, d3 = (sp.diff(ell, z, k) for k in (1, 2, 3))
    out = {
        "derivative": sp.simplify(d1 + 1 / (1 + sp.exp(z))),
        "second": sp.simplify(d2 - s * (1 - s)),
        # l''' = -s(1-s)(2s-1): negative for z > 0 (s > 1/2), so l' is strictly concave on [0, inf)
        "third": sp.simplify(d3 + s * (1 - s) * (2 * s - 1)),
        "shift": sp.simplify(sp.exp(c) * (1 + sp.exp(z)) - (1 + sp.exp(z + c)) - (sp.exp(c) - 1)),
    }
    positive_set = sp.solve_univariate_inequality(sp.exp(c) - 1 > 0, c, relational=False)
    out["shift_positive"] = positive_set == sp.Interval.open(0, sp.oo)
    zp = sp.Symbol("z", positive=True)
    sp_ = 1 / (1 + sp.exp(-zp))
    out["two_s_minus_one_is_tanh"] = (
        sp.simplify((2 * sp_ - 1 - sp.tanh(zp / 2)).rewrite(sp.exp)) == 0
    )
    return out


def lemma_e_3() -> dict:
    """Lemma E.3: means and variances of U[0, 1] and D_gamma by integration of their densities."""
    x = sp.Symbol("x", real=True)
    mean_u = sp.integrate(x, (x, 0, 1))
    var_u = sp.integrate(x**2, (x, 0, 1)) - mean_u**2
    dens_neg, dens_pos = sp.Rational(1, 2) - g, sp.Rational(1, 2) + g
    mean_g = sp.integrate(dens_neg * x, (x, -1, 0)) + sp.integrate(dens_pos * x, (x, 0, 1))
    var_g = (
        sp.integrate(dens_neg * x**2, (x, -1, 0))
        + sp.integrate(dens_pos * x**2, (x, 0, 1))
        - mean_g**2
    )
    mass = sp.integrate(dens_neg, (x, -1, 0)) + sp.integrate(dens_pos, (x, 0, 1))
    return {
        "mean_u": mean_u,
        "var_u": var_u,
        "mean_g": sp.simplify(mean_g),
        "mass_g": sp.simplify(mass),
        "var_g_residual": sp.simplify(var_g - (sp.Rational(1, 3) - g**2)),
    }


def hoeffding_exponent(deviation, ranges_squared_sum):
    """Hoeffding: P[sum (X_i - E X_i) >= t] <= exp(-2 t^2 / sum (b_i - a_i)^2); the exponent."""
    return 2 * deviation**2 / ranges_squared_sum


def lemma_e_4() -> dict:
    """Lemma E.4's two exponents from Hoeffding: (d - r) gamma^2 / 2 and r / 8 (residuals)."""
    first = hoeffding_exponent((d - r) * g, 4 * (d - r))  # U terms in [-1, 1]: range 2
    second = hoeffding_exponent(r / 2 - r / 4, r)  # R terms in [0, 1]: range 1, deviation r/2 - r/4
    return {"first": sp.simplify(first - (d - r) * g**2 / 2), "second": sp.simplify(second - r / 8)}


def steps_e38_e41() -> dict:
    """(E.39)-(E.41): the algebra behind alpha / beta < 3 / (4 gamma).

    ``e39``: e^(-x)(1/2 + gamma) - (1/2 - gamma) - (2 gamma - (1 - e^(-x)))
    = (1 - e^(-x))(1/2 - gamma),
    which is >= 0, so (E.39) follows from (E.38). ``e41``: for gamma > 2/sqrt(r),
    3/(4 gamma) - 1/(2 gamma - 2/sqrt(r)) has the sign of gamma - 3/sqrt(r) (numerator, factored).
    ``e40``: 1 - e^(-x) <= x for x >= 0 (the derivative of x - 1 + e^(-x) is 1 - e^(-x) >= 0).
    """
    x = sp.Symbol("x", nonnegative=True)
    e39 = sp.simplify(
        sp.exp(-x) * (sp.Rational(1, 2) + g)
        - (sp.Rational(1, 2) - g)
        - (2 * g - (1 - sp.exp(-x)))
        - (1 - sp.exp(-x)) * (sp.Rational(1, 2) - g)
    )
    rp = sp.Symbol("r", positive=True)
    diff = sp.together(sp.Rational(3, 4) / g - 1 / (2 * g - 2 / sp.sqrt(rp)))
    num, den = sp.fraction(diff)
    e41 = sp.simplify(num / (g - 3 / sp.sqrt(rp)))
    e40 = sp.simplify(sp.diff(x - 1 + sp.exp(-x), x) - (1 - sp.exp(-x)))
    return {"e39": e39, "e41_ratio": e41, "e41_den": sp.factor(den), "e40": e40}


def steps_e47_e53() -> dict:
    """(E.47)-(E.53): the shift (E.47), the expansion (E.50), (E.52), and what (E.51), (E.53) need.

    Residuals are 0 when the step is an identity. ``e51_needs``: 4d <= 5(d - r) iff d >= 5r;
    ``e53_needs``: (4(d - r) gamma^2 - 3r)/10 >= r/10 iff (d - r) gamma^2 >= r.
    """
    tdev = -3 * r / (8 * g) + (d - r) * g
    e50 = sp.expand(2 * tdev**2) - (
        9 * r**2 / (32 * g**2) + 2 * (d - r) ** 2 * g**2 - sp.Rational(3, 2) * r * (d - r)
    )
    e52 = sp.simplify(
        (2 * (d - r) ** 2 * g**2 - sp.Rational(3, 2) * r * (d - r)) / (5 * (d - r))
        - (4 * (d - r) * g**2 - 3 * r) / 10
    )
    # (E.47): (3/(4g)) sum_R z + sum_U z >= 0  <=>  (3/(4g)) sum_R (z - 1/2) + sum_U (z + g) >= tdev
    sr, su = sp.symbols("S_R S_U", real=True)
    e47 = sp.expand(
        (3 / (4 * g)) * (sr - r / 2) + (su + (d - r) * g) - tdev - ((3 / (4 * g)) * sr + su)
    )
    e53 = sp.expand(
        (4 * (d - r) * g**2 - 3 * r) / 10 - r / 10 - sp.Rational(4, 10) * ((d - r) * g**2 - r)
    )
    return {"e47": e47, "e50": sp.expand(e50), "e52": e52, "e53": e53}


def hoeffding_ranges() -> dict:
    """The erratum in (E.49): the sum of squared ranges is 9r/(16 gamma^2) + 4(d - r), not 4d.

    The R terms (3/(4 gamma))(z_j - 1/2) have range 3/(4 gamma); the U terms z_j + gamma range 2.
    ``excess`` = true - printed = r (9/(16 gamma^2) - 4): positive exactly when gamma < 3/8.
    With c = (d - r) gamma^2 / r the corrected exponent is r f(c), f(c) = 2(c - 3/8)^2/(9/16 + 4c);
    ``f_at_1`` = f(1) and ``f_increasing`` whether f' > 0 on c >= 1: so the exponent is at least
    f(1) r > r/10 under Proposition 6.3's d > r/gamma^2 + r (c > 1), and the conclusion survives.
    """
    true_sum = r * (3 / (4 * g)) ** 2 + (d - r) * 2**2
    excess = sp.factor(sp.simplify(true_sum - 4 * d))
    gp = sp.Symbol("gamma", positive=True)
    crossing = sp.solve(sp.Eq(9 / (16 * gp**2), 4), gp)
    cc = sp.Symbol("c", positive=True)
    f = 2 * (cc - sp.Rational(3, 8)) ** 2 / (sp.Rational(9, 16) + 4 * cc)
    rp, gp2, dp = sp.symbols("r gamma d", positive=True)
    tdev = -3 * rp / (8 * gp2) + (dp - rp) * gp2
    corrected = 2 * tdev**2 / (rp * (3 / (4 * gp2)) ** 2 + 4 * (dp - rp))
    as_f = rp * f.subs(cc, (dp - rp) * gp2**2 / rp)
    deriv = sp.factor(sp.diff(f, cc))
    u = sp.Symbol("u", nonnegative=True)  # c = 1 + u
    increasing = all(
        coef > 0 for coef in sp.Poly(sp.numer(sp.together(deriv.subs(cc, 1 + u))), u).coeffs()
    )
    return {
        "true_sum": true_sum,
        "excess": excess,
        "crossing": crossing,
        "f_at_1": f.subs(cc, 1),
        "corrected_minus_rf": sp.simplify(corrected - as_f),
        "f_increasing": increasing,
    }


def min_f_from_one() -> sp.Expr:
    """The minimum of f(c) = 2 (c - 3/8)^2 / (9/16 + 4c) over c >= 1 (sympy, exact): the smallest
    corrected Hoeffding exponent over r under Proposition 6.3's d > r/gamma^2 + r."""
    cc = sp.Symbol("c", positive=True)
    f = 2 * (cc - sp.Rational(3, 8)) ** 2 / (sp.Rational(9, 16) + 4 * cc)
    return sp.minimum(f, cc, sp.Interval(1, sp.oo))


def appendix_e() -> dict:
    """The chapter's sympy measurements of Appendix E, keyed by claim id: the residuals of Lemma
    E.4's exponents; the steps (E.38)-(E.41) of Lemma E.6 (two residuals and whether the factor
    of (E.41) is positive); the residuals of (E.47)-(E.53) of Proposition E.8; and the minimum of
    the corrected (E.49) exponent over r (:func:`min_f_from_one`)."""
    e4, e38, e47 = lemma_e_4(), steps_e38_e41(), steps_e47_e53()
    return {
        "lemma-e4-exponents": [e4["first"], e4["second"]],
        "lemma-e6-steps-e38-e41": [e38["e39"], e38["e40"], bool(e38["e41_ratio"].is_positive)],
        "prop-e8-steps-e47-e53": list(e47.values()),
        "e49-corrected-conclusion-survives": min_f_from_one(),
    }
