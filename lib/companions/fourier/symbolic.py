"""Symbolic identities (sympy, exact): Lemma C.16 (sum-to-product), eq. (C.21), the
construction's identity and the arithmetic of caveat C9.
"""

from __future__ import annotations

import itertools
import math

import sympy as sp

from companions.fourier.construction import _construction_terms


def sum_to_product_residual(k: int, half: bool = False) -> sp.Expr:
    """Lemma C.16, Part 3: ``sum_c (-1)^((k - sum c)/2) (sum_j c_j a_j)^k - 2^k k! prod a_j``,
    expanded (zero when the identity holds). With ``half``, the sum runs over ``c_1 = +1`` only and
    the right side is ``2^(k-1) k! prod a_j`` (the half used by the construction)."""
    a = sp.symbols(f"a1:{k + 1}")
    signs = [c for c in itertools.product((1, -1), repeat=k) if not half or c[0] == 1]
    lhs = sum(
        sp.Integer(-1) ** ((k - sum(c)) // 2) * sum(ci * ai for ci, ai in zip(c, a)) ** k
        for c in signs
    )
    return sp.expand(lhs - (2 ** (k - 1 if half else k)) * sp.factorial(k) * sp.Mul(*a))


def sum_to_product_sign_is_product(k: int) -> bool:
    """``(-1)^((k - sum c)/2) = prod_j c_j`` for every ``c in {+-1}^k``."""
    return all(
        (-1) ** ((k - sum(c)) // 2) == math.prod(c) for c in itertools.product((1, -1), repeat=k)
    )


def cosine_expansion(K: int) -> tuple[sp.Expr, int]:
    """Eq. (C.21) with K variables: ``cos(x_1 + ... + x_K)`` minus
    ``sum_b prod_i cos^(1-b_i) sin^(b_i)(x_i) 1[sum b even] (-1)^[sum b = 2 mod 4]``, expanded,
    and the number of nonzero terms of the sum (``2^(K-1)``)."""
    x = sp.symbols(f"x1:{K + 1}")
    rhs, terms = 0, 0
    for b in itertools.product((0, 1), repeat=K):
        if sum(b) % 2:
            continue
        terms += 1
        rhs += (-1 if sum(b) % 4 == 2 else 1) * sp.Mul(
            *[sp.sin(xi) if bi else sp.cos(xi) for xi, bi in zip(x, b)]
        )
    return sp.expand(sp.expand_trig(sp.cos(sum(x))) - rhs), terms


def construction_identity(k: int) -> sp.Expr:
    """This book's exact check of Lemma C.18 at one frequency, free of beta: with symbols
    ``C_j = cos x_j``, ``S_j = sin x_j`` (j = 1..k) and ``C_w = cos y``, ``S_w = sin y``, the
    sum of the ``2^(2k-1)`` neurons of :func:`construction` (beta = 1) minus
    ``2^(k-1) k! cos(x_1 + ... + x_k - y)``, expanded as a polynomial. Zero when the construction
    computes the cosine exactly."""
    C = sp.symbols(f"C1:{k + 1}")
    S = sp.symbols(f"S1:{k + 1}")
    Cw, Sw = sp.symbols("C_w S_w")

    def trig(j, bit):
        return S[j] if bit else C[j]

    total = 0
    for b, c, s in _construction_terms(k):
        total += sum(c[j] * trig(j, b[j]) for j in range(k)) ** k * s * (-Sw if b[k] else Cw)
    x = sp.symbols(f"x1:{k + 1}")
    y = sp.Symbol("y")
    target = sp.expand(sp.expand_trig(sp.cos(sum(x) - y)))
    target = target.subs(
        {
            **{sp.cos(x[j]): C[j] for j in range(k)},
            **{sp.sin(x[j]): S[j] for j in range(k)},
            sp.cos(y): Cw,
            sp.sin(y): Sw,
        }
    )
    return sp.expand(total - 2 ** (k - 1) * sp.factorial(k) * target)


def dirichlet_sum_minpoly(p: int, x: int) -> sp.Expr:
    """Minimal polynomial (in ``t``) of ``sum_{zeta=1}^{(p-1)/2} cos(2 pi zeta x / p)``, exact:
    ``t - (p-1)/2`` when p | x, ``2t + 1`` (the value -1/2) otherwise."""
    t = sp.Symbol("t")
    value = sum(sp.cos(2 * sp.pi * z * x / p) for z in range(1, (p - 1) // 2 + 1))
    return sp.minimal_polynomial(value, t)


def c9_arithmetic() -> dict:
    """Eq. (C.9): the identity it states, and the arithmetic step it cites.

    Returns the residual of
    ``eta(0) - (1/(p-1)) sum_{delta != 0} eta(delta) - p/(p-1)(eta(0) - E_delta eta)`` with symbolic
    eta values (p = 5, 7), and ``1 - 1/(p-1) - p/(p-1)`` (the cited step) in symbolic p."""
    out = {}
    for p in (5, 7):
        e = sp.symbols(f"e0:{p}")
        lhs = e[0] - sum(e[1:]) / (p - 1)
        rhs = sp.Rational(p, p - 1) * (e[0] - sum(e) / p)
        out[p] = sp.simplify(lhs - rhs)
    P = sp.Symbol("p", positive=True)
    out["step"] = sp.simplify(1 - 1 / (P - 1) - P / (P - 1))
    return out
