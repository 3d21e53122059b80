"""Symbolic checks (sympy, exact) of Lemma 8.13, Theorem 8.14 and the strong-convexity identity."""

from __future__ import annotations

import sympy as sp


def _symbolic_setting(n: int, d: int):
    X = sp.Matrix(n, d, lambda i, j: sp.Symbol(f"x_{i + 1}{j + 1}", real=True))
    y = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"y_{i + 1}", real=True))
    q0 = sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"q_{i + 1}", real=True))
    alpha = sp.Symbol("alpha", real=True, nonzero=True)
    return X, y, q0, alpha


def _symbolic_input(X, y, q0, alpha):
    return sp.Matrix(sp.BlockMatrix([[X, y], [q0.T, sp.Matrix([[alpha]])]]))


def _symbolic_weights(d: int):
    Q = sp.eye(d + 1)
    P = sp.diag(*([1] * d + [0]))
    return Q, P


def _symbolic_attention(Z, Q, P):
    n = Z.rows - 1
    M = sp.zeros(n + 1, n + 1)
    for j in range(n):
        M[n, j] = 1
    return (M.multiply_elementwise(Z * Q * Z.T)) * Z * P


def symbolic_lemma_8_13(n: int = 3, d: int = 2) -> dict:
    """Lemma 8.13 with symbolic X, y, q^(0), alpha. Returns the residuals (all should be 0):
    ``lemma`` (Attn minus the lemma's matrix) and ``corner`` (the (n+1, d+1) entry before P minus
    ``q^T X^T y + alpha ||y||^2``, the step the proof shows before P zeroes it)."""
    X, y, q0, alpha = _symbolic_setting(n, d)
    Z = _symbolic_input(X, y, q0, alpha)
    Q, P = _symbolic_weights(d)
    attn = _symbolic_attention(Z, Q, P)
    claimed = sp.zeros(n + 1, d + 1)
    claimed[n, :d] = q0.T * X.T * X + alpha * y.T * X
    before_P = _symbolic_attention(Z, Q, sp.eye(d + 1))
    corner = before_P[n, d] - (q0.T * X.T * y)[0, 0] - alpha * (y.T * y)[0, 0]
    return {"lemma": (attn - claimed).applyfunc(sp.expand), "corner": sp.expand(corner)}


def symbolic_theorem_8_14(n: int = 3, d: int = 2, loops: int = 3) -> dict:
    """Theorem 8.14 with symbolic X, y (not assumed realizable), q^(0), alpha and per-loop step
    sizes eta_0..eta_{T-1}. Returns residuals that should all be 0:

    - ``tf_minus_gd``: ``TF(Z^(0)) - alpha theta^(T)`` with theta^(0) = -q^(0)/alpha and GD (8.2);
    - ``rows_changed``: rows 1..n of ``Z^(T) - Z^(0)``;
    - ``alpha_changed``: ``Z^(T)_{n+1,d+1} - alpha``;
    - ``hidden_state``: ``q^(t) + alpha theta^(t)`` at every t (the induction of the proof).
    Also returns ``augmented_rank``: the rank of ``[X | y]`` at a rational point where it has its
    generic rank ``min(n, d + 1)``: ``d + 1`` when ``n > d``, so y is not in the column space of X
    there (the identity needs no realizability).
    """
    X, y, q0, alpha = _symbolic_setting(n, d)
    etas = sp.symbols(f"eta_0:{loops}", positive=True)
    Z0 = _symbolic_input(X, y, q0, alpha)
    Q, P = _symbolic_weights(d)
    Z, theta = Z0, -q0 / alpha
    hidden = []
    for eta in etas:
        Z = (Z - eta * _symbolic_attention(Z, Q, P)).applyfunc(sp.expand)
        theta = (theta - eta * (X.T * X * theta - X.T * y)).applyfunc(sp.expand)
        hidden.append((Z[n, :d].T + alpha * theta).applyfunc(sp.expand))
    tf = -Z[n, :d].T
    # The point: [X | y] becomes the Vandermonde matrix of the distinct nodes 1..n (entry (i, j) =
    # (i + 1)^j), whose rank is min(n, d + 1) at every size (a point with repeating values, as
    # before, fell to rank 3 at n = 4, d = 3). Entries that are numbers already stay as they are.
    aug = sp.Matrix(sp.BlockMatrix([[X, y]]))
    point = {
        aug[i, j]: sp.Integer(i + 1) ** j
        for i in range(n)
        for j in range(d + 1)
        if isinstance(aug[i, j], sp.Symbol)
    }
    aug = aug.subs(point)
    return {
        "tf_minus_gd": (tf - alpha * theta).applyfunc(sp.expand),
        "rows_changed": (Z[:n, :] - Z0[:n, :]).applyfunc(sp.expand),
        "alpha_changed": sp.expand(Z[n, d] - alpha),
        "hidden_state": hidden,
        "augmented_rank": aug.rank(),
    }


def symbolic_strong_convexity_identity(n: int = 3, d: int = 2) -> sp.Expr:
    """The exact identity inside Lemma 8.22's proof, as a residual that should be 0:
    ``l(g a + (1-g) b) - g l(a) - (1-g) l(b) + g (1-g) ||X (a - b)||^2 / 2``."""
    X, y, _, _ = _symbolic_setting(n, d)
    a = sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"a_{i + 1}", real=True))
    b = sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"b_{i + 1}", real=True))
    g = sp.Symbol("gamma", real=True)

    def loss(theta):
        r = y - X * theta
        return (r.T * r)[0, 0] / 2

    diff = X * (a - b)
    return sp.expand(
        loss(g * a + (1 - g) * b)
        - g * loss(a)
        - (1 - g) * loss(b)
        + g * (1 - g) * (diff.T * diff)[0, 0] / 2
    )


def symbolic_gatmiry_threshold() -> dict:
    """Theorem 8.17's condition ``8 T d^2 / sqrt(n) <= 2^(-2T)`` solved for n. Returns the residual
    of the equality at ``n = 64 T^2 d^4 16^T`` (should be 0) and the derivative sign of the left
    side in n (negative: the condition holds for every larger n)."""
    T, d, n = sp.symbols("T d n", positive=True)
    lhs = 8 * T * d**2 / sp.sqrt(n)
    n_min = 64 * T**2 * d**4 * 16**T
    residual = sp.simplify(
        sp.powsimp(sp.expand_power_base(lhs.subs(n, n_min), force=True), force=True) - 2 ** (-2 * T)
    )
    slope = sp.simplify(sp.diff(lhs, n))
    return {"residual": residual, "slope_negative": bool(sp.ask(sp.Q.negative(slope)))}
