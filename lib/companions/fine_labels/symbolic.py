"""Sympy checks of the source's closed forms: each returns ``(holds, expression shown)``.

Exact arithmetic throughout (sympy rationals and symbols).
"""

from __future__ import annotations

import sympy as sp

d, L, c0, t, C, A0, k, ell = sp.symbols("d L c_0 t C A_0 k ell", positive=True)


def prop_exponents() -> dict[str, bool]:
    """Props. 1 and 2: ``d^(2+2c0) e^(-(4+2c0) L/2) = d^c0`` and ``d^(1+2c0) e^(-(2+2c0) L/2)
    = d^c0`` with ``L = log d``: equal detector counts for both widths (eqs. 20-22)."""
    Ld = sp.log(d)
    coarse = d ** (2 + 2 * c0) * sp.exp(-(4 + 2 * c0) * Ld / 2)
    fine = d ** (1 + 2 * c0) * sp.exp(-(2 + 2 * c0) * Ld / 2)
    return {
        "coarse": sp.simplify(sp.powsimp(coarse / d**c0, force=True)) == 1,
        "fine": sp.simplify(sp.powsimp(fine / d**c0, force=True)) == 1,
    }


def tail_ratio_exponent() -> sp.Expr:
    """The exponential part of ``p1 / p2`` (eqs. 20-21), which Prop. 1 item 2 needs to be
    ``1 - O(L^-5)``: ``exp(-(c_b^2/2)(L + L^-5)) / exp(-(c_b^2/2)(L - L^-5))``."""
    cb2 = 4 + 2 * c0
    r = sp.exp(-cb2 / 2 * (L + L**-5)) / sp.exp(-cb2 / 2 * (L - L**-5))
    return sp.simplify(r)


def eq26_identity() -> bool:
    """Eq. (26): ``sqrt(L + x) - sqrt(L - x) = 2x / (sqrt(L + x) + sqrt(L - x))``."""
    x = sp.symbols("x", positive=True)
    lhs = sp.sqrt(L + x) - sp.sqrt(L - x)
    rhs = 2 * x / (sp.sqrt(L + x) + sp.sqrt(L - x))
    return sp.simplify(sp.radsimp(lhs - rhs)) == 0


def eq29_union_bound() -> sp.Expr:
    """Eq. (29)'s failure probability ``m d d^-5`` with ``m = d^(2+2c0)``, divided by the claimed
    ``d^-2``: a positive power of ``d`` (so the claim ``< d^-2`` is false)."""
    return sp.powsimp(sp.simplify(d ** (2 + 2 * c0) * d * d**-5 / d**-2), force=True)


def lemma_d2_series() -> sp.Expr:
    """Lemma D.2: ``1 - logit = 1/(1 + e^(1/d))`` to second order in ``1/d``."""
    u = sp.symbols("u", positive=True)
    return sp.series(1 / (1 + sp.exp(u)), u, 0, 3).removeO().subs(u, 1 / d)


def lemma_e4_ode() -> sp.Expr:
    """Lemma E.4: the solution of ``A' = C e^-A``, ``A(0) = A0``."""
    Af = sp.Function("A")
    sol = sp.dsolve(sp.Eq(Af(t).diff(t), C * sp.exp(-Af(t))), Af(t), ics={Af(0): A0})
    sols = sol if isinstance(sol, list) else [sol]
    real = [s.rhs for s in sols if s.rhs.subs({t: 1, C: 1, A0: 0}).is_real]
    return sp.simplify(real[0])


def phase1_counts(s_star, N, P, k) -> tuple[sp.Expr, sp.Expr]:
    """Eqs. (44), (67): expected (sample, patch) pairs carrying v_+ and v_{+,c} in a batch."""
    common = sp.Rational(s_star, P) * P * sp.Rational(N, 2)
    fine = sp.Rational(s_star, P) * P * sp.Rational(N, 2 * k)
    return common, fine


def fine_step_ratio_at_init() -> sp.Expr:
    """Lemma G.2 at t = 0: ``(1 - k l) / (1 - l)`` at ``l = 1/(2k)``."""
    return sp.simplify(((1 - k * ell) / (1 - ell)).subs(ell, 1 / (2 * k)))


def nonnegative_for_k_at_least_1(expr: sp.Expr) -> bool:
    """Whether a rational function of ``k`` is >= 0 for every real ``k >= 1``: with ``k = 1 + j``
    its numerator and denominator must be polynomials in ``j`` with coefficients of one sign."""
    j = sp.symbols("j", nonnegative=True)
    num, den = sp.fraction(sp.together(sp.expand(expr.subs(k, 1 + j))))
    cn = sp.Poly(sp.expand(num), j).all_coeffs()
    cd = sp.Poly(sp.expand(den), j).all_coeffs()
    if all(c == 0 for c in cn):
        return True
    pos = all(c >= 0 for c in cn) and all(c >= 0 for c in cd)
    neg = all(c <= 0 for c in cn) and all(c <= 0 for c in cd)
    return bool(pos or neg)


def lemma_g2_interval() -> dict[str, bool]:
    """Eqs. (209)-(210): with ``0 <= F <= B <= log(3/2)`` on all 2k outputs, the own logit lies
    between ``1/(1 + (2k-1) 3/2)`` (own F = 0, the others at B) and ``(3/2)/(3/2 + 2k - 1)``
    (own F = B, the others 0); so it lies in ``[1/(3k), 3/(4k)]`` and the common-detector
    coefficient ``1 - k l`` in ``[1/4, 2/3]``. Checked for every real k >= 1."""
    e_b = sp.Rational(3, 2)
    lo = 1 / (1 + (2 * k - 1) * e_b)
    hi = e_b / (e_b + 2 * k - 1)
    ok = nonnegative_for_k_at_least_1
    return {
        "own logit >= 1/(3k)": ok(lo - 1 / (3 * k)),
        "own logit <= 3/(4k)": ok(3 / (4 * k) - hi),
        "coefficient >= 1/4": ok((1 - k * hi) - sp.Rational(1, 4)),
        "coefficient <= 2/3": ok(sp.Rational(2, 3) - (1 - k * lo)),
    }


def prop_exponent_residuals() -> list[sp.Expr]:
    """Props. 1 and 2 as residuals for an exact claim: ``d^(2+2c0) e^(-(4+2c0) L/2) / d^c0 - 1``
    and ``d^(1+2c0) e^(-(2+2c0) L/2) / d^c0 - 1`` with ``L = log d`` (both 0)."""
    Ld = sp.log(d)
    coarse = d ** (2 + 2 * c0) * sp.exp(-(4 + 2 * c0) * Ld / 2)
    fine = d ** (1 + 2 * c0) * sp.exp(-(2 + 2 * c0) * Ld / 2)
    return [sp.simplify(sp.powsimp(x / d**c0, force=True)) - 1 for x in (coarse, fine)]


def tail_ratio_residuals() -> list[sp.Expr]:
    """Prop. 1 item 2 as residuals: the exponential part of ``p1 / p2`` minus
    ``exp(-2(2+c0)/L^5)``, and its first-order term ``lim (ratio - 1) L^5`` plus ``2(2+c0)``
    (both 0: the ratio is ``1 - O(L^-5)``)."""
    ratio = tail_ratio_exponent()
    return [
        sp.simplify(ratio - sp.exp(-2 * (2 + c0) / L**5)),
        sp.simplify(sp.limit((ratio - 1) * L**5, L, sp.oo) + 2 * (2 + c0)),
    ]


def eq29_exponent(c0_value) -> sp.Expr:
    """The exponent ``e`` in eq. (29)'s ``m d d^-5 / d^-2 = d^e`` with ``m = d^(2+2c0)``, at
    ``c0 = c0_value`` (exact): the printed ``< d^-2`` needs ``e < 0``."""
    ratio = eq29_union_bound()
    return sp.simplify(sp.expand_log(sp.log(ratio), force=True) / sp.log(d)).subs(
        c0, sp.nsimplify(c0_value)
    )
