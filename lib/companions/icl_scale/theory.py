"""Closed forms of Section 5.4 and Appendix D.2: Lemma 5.1 (the reduced loss), Lemma D.1 (its
minimum and eq. (D.4)), Theorem 5.4.1 (the optimal rank-r solution), Theorems 5.4.2 and 5.4.3 (the
evaluation loss with label noise), and this book's extension of Theorem 5.4.2 to sign flips.

The matrix functions take torch tensors (float64) or sympy matrices (exact rationals) alike; the
spectral closed forms take lists of numbers of any kind (float, Fraction, sympy Rational), sorted
``lambda_1 >= ... >= lambda_d`` as in Section 5.4.1; they are exact when the eigenvalues are
Fractions or sympy Rationals (plain ints divide to floats).
"""

from __future__ import annotations

import itertools

import sympy as sp
import torch


# -- matrices: torch or sympy ------------------------------------------------------------------
def _is_sympy(A) -> bool:
    return isinstance(A, sp.MatrixBase)


def _trace(A):
    return A.trace() if _is_sympy(A) else torch.trace(A)


def _eye_like(A):
    if _is_sympy(A):
        return sp.eye(A.shape[0])
    return torch.eye(A.shape[0], dtype=A.dtype, device=A.device)


def gamma(Lam, N):
    """``Gamma = (1 + 1/N) Lambda + tr(Lambda)/N I`` (Lemma 5.1)."""
    one = sp.Integer(1) if _is_sympy(Lam) else 1.0
    return (one + one / N) * Lam + _trace(Lam) / N * _eye_like(Lam)


def reduced_loss(U, u, Lam, N):
    """``l~(U, u) = tr[u^2/2 Gamma Lambda U Lambda U^T - u Lambda^2 U^T]`` (Lemma 5.1)."""
    G = gamma(Lam, N)
    half = sp.Rational(1, 2) if _is_sympy(Lam) else 0.5
    return _trace(half * u**2 * G @ Lam @ U @ Lam @ U.T - u * Lam @ Lam @ U.T)


def loss_constant(Lam):
    """The constant of Lemma 5.1: ``C = tr(Lambda)/2`` (this book's derivation; the source leaves
    it unnamed)."""
    half = sp.Rational(1, 2) if _is_sympy(Lam) else 0.5
    return half * _trace(Lam)


def population_loss(U, u, Lam, N):
    """``L = 1/2 E (y_hat - <w, x_q>)^2 = l~(U, u) + C`` for the blocks of eq. (5.3),
    ``rho = N``."""
    return reduced_loss(U, u, Lam, N) + loss_constant(Lam)


def minimum_reduced_loss(Lam, N):
    """Lemma D.1: ``min l~ = -1/2 tr(Lambda^2 Gamma^{-1})``, at ``U = c Gamma^{-1}``,
    ``u = 1/c``."""
    G = gamma(Lam, N)
    Ginv = G.inv() if _is_sympy(G) else torch.linalg.inv(G)
    half = sp.Rational(1, 2) if _is_sympy(Lam) else 0.5
    return -half * _trace(Lam @ Lam @ Ginv)


def gap_d4(U, u, Lam, Lam_sqrt, N):
    """Right side of eq. (D.4): ``1/2 ||Gamma^{1/2}(u Lambda^{1/2} U Lambda^{1/2} - Lambda
    Gamma^{-1})||_F^2``, written as ``1/2 tr(A^T Gamma A)`` so that it stays rational."""
    G = gamma(Lam, N)
    Ginv = G.inv() if _is_sympy(G) else torch.linalg.inv(G)
    A = u * Lam_sqrt @ U @ Lam_sqrt - Lam @ Ginv
    half = sp.Rational(1, 2) if _is_sympy(Lam) else 0.5
    return half * _trace(A.T @ G @ A)


# -- Theorem 5.4.1 -------------------------------------------------------------------------------
def _spectrum(eigenvalues):
    lam = list(eigenvalues)
    if any(a < b for a, b in zip(lam, lam[1:])) or any(x < 0 for x in lam):
        raise ValueError(
            f"parameter 'eigenvalues' = {lam} is not allowed: Section 5.4.1 sorts them as "
            "lambda_1 >= ... >= lambda_d >= 0"
        )
    return lam


def _check_rank(r, d):
    if not 0 <= r <= d:
        raise ValueError(f"parameter 'r' = {r} is not allowed: expected 0 <= r <= d = {d}")


def optimal_v(eigenvalues, N, r):
    """Theorem 5.4.1: ``v_i* = N / ((N+1) lambda_i + tr D)`` for ``i <= r``, else 0."""
    lam = _spectrum(eigenvalues)
    _check_rank(r, len(lam))
    tr = sum(lam)
    return [N / ((N + 1) * x + tr) if i < r else 0 * x for i, x in enumerate(lam)]


def optimal_U(Q, eigenvalues, N, r, c=1):
    """``U* = c Q V* Q^T`` (Theorem 5.4.1); ``u* = 1/c``. ``Q`` a torch tensor or sympy matrix."""
    v = optimal_v(eigenvalues, N, r)
    V = sp.diag(*v) if _is_sympy(Q) else torch.diag(torch.tensor([float(x) for x in v]))
    if not _is_sympy(Q):
        V = V.to(Q.dtype).to(Q.device)
    return c * Q @ V @ Q.T


def diagonal_loss(v, eigenvalues, N):
    """``L`` at ``U = Q diag(v) Q^T``, ``u = 1``: ``tr D/2 + sum_i (lambda_i' lambda_i^2 v_i^2/2
    - lambda_i^2 v_i)`` with ``lambda_i' = (1 + 1/N) lambda_i + tr D/N`` (proof of Theorem
    5.4.1, eqs. (D.1)-(D.3))."""
    lam = _spectrum(eigenvalues)
    tr = sum(lam)
    total = tr / 2
    for x, vi in zip(lam, v):
        lp = ((N + 1) * x + tr) / N
        total += lp * x**2 * vi**2 / 2 - x**2 * vi
    return total


def optimal_loss(eigenvalues, N, r):
    """``L*_r = tr D/2 - 1/2 sum_{i<=r} N lambda_i^2 / ((N+1) lambda_i + tr D)`` (this book's
    evaluation of Theorem 5.4.1's optimum)."""
    lam = _spectrum(eigenvalues)
    _check_rank(r, len(lam))
    tr = sum(lam)
    return tr / 2 - sum((N * x**2 / ((N + 1) * x + tr) for x in lam[:r]), 0 * tr) / 2


def best_subset_losses(eigenvalues, N, r):
    """``{subset: L}`` for every ``r``-subset ``S`` of directions, with ``v_i = 1/lambda_i'`` on
    ``S`` and 0 elsewhere (the exchange argument of the proof of Theorem 5.4.1)."""
    lam = _spectrum(eigenvalues)
    tr = sum(lam)
    out = {}
    for S in itertools.combinations(range(len(lam)), r):
        v = [N / ((N + 1) * x + tr) if i in S else 0 * x for i, x in enumerate(lam)]
        out[S] = diagonal_loss(v, lam, N)
    return out


def stationary_point_symbolic(d: int = 3):
    """Solve ``d l~ / d v_i = 0`` for diagonal ``V`` with symbolic ``lambda_1..lambda_d, N``;
    returns ``(solution, claimed)``, lists of sympy expressions (Theorem 5.4.1)."""
    lam = sp.symbols(f"lambda1:{d + 1}", positive=True)
    N = sp.Symbol("N", positive=True)
    v = sp.symbols(f"v1:{d + 1}", real=True)
    D, V = sp.diag(*lam), sp.diag(*v)
    loss = reduced_loss(V, sp.Integer(1), D, N)
    sol = sp.solve([sp.diff(loss, vi) for vi in v], v, dict=True)
    tr = sum(lam)
    claimed = [N / ((N + 1) * x + tr) for x in lam]
    return [sol[0][vi] for vi in v], claimed


def g_derivative():
    """``g(x) = x^2 / ((1 + 1/N) x + T/N)`` of the proof of Theorem 5.4.1 and ``g'(x)``, with
    ``T = tr D``; returns ``(g', numerator of g' over a common denominator)``."""
    x, N, T = sp.symbols("x N T", positive=True)
    g = x**2 / ((1 + 1 / N) * x + T / N)
    dg = sp.together(sp.diff(g, x))
    return dg, sp.factor(sp.numer(dg))


# -- Theorems 5.4.2 and 5.4.3 -------------------------------------------------------------------
def theorem_5_4_2(eigenvalues, N, *, M, sigma2, s, xi, r):
    """Theorem 5.4.2 as stated: the evaluation loss of the optimal rank-r LSA (``c = 1``,
    ``rho = M``) on the task ``w = Q(s + xi)``, ``s`` supported on the first ``r`` directions and
    ``xi`` on the rest."""
    lam = _spectrum(eigenvalues)
    v = optimal_v(lam, N, r)
    if any(si != 0 for si in s[r:]) or any(xj != 0 for xj in xi[:r]):
        raise ValueError(f"parameters 's', 'xi': s must vanish past r = {r} and xi up to it")
    sD3 = sum(vi**2 * x**3 * si**2 for vi, x, si in zip(v, lam, s))
    wD = sum(x * (si + xj) ** 2 for x, si, xj in zip(lam, s, xi))
    trV2D2 = sum(vi**2 * x**2 for vi, x in zip(v, lam))
    xiD = sum(x * xj**2 for x, xj in zip(lam, xi))
    bias = sum(s[i] ** 2 * lam[i] * (lam[i] * v[i] - 1) ** 2 for i in range(r))
    return sD3 / M + (wD + sigma2) * trV2D2 / M + xiD + bias


def theorem_5_4_2_large_n(eigenvalues, M, sigma2, s, xi, r):
    """The source's approximation for ``N lambda_r >> tr D``:
    ``||xi||_D^2 + ((r+1)||s||_D^2 + r ||xi||_D^2 + r sigma^2) / M``."""
    lam = _spectrum(eigenvalues)
    sD = sum(x * si**2 for x, si in zip(lam, s))
    xiD = sum(x * xj**2 for x, xj in zip(lam, xi))
    return xiD + ((r + 1) * sD + r * xiD + r * sigma2) / M


def theorem_5_4_3(eigenvalues, N, *, M, sigma2, s, r, r2):
    """Theorem 5.4.3: ``L(f_{r'}) - L(f_r) = (||s||_D^2 + sigma^2)/M sum_{r<i<=r'} (N lambda_i /
    ((N+1) lambda_i + tr D))^2`` for ``w = Q s``, ``s`` supported on the first ``r``."""
    lam = _spectrum(eigenvalues)
    if not 0 <= r <= r2 <= len(lam):
        raise ValueError(f"parameters 'r', 'r2' = {r}, {r2}: expected 0 <= r <= r2 <= d")
    tr = sum(lam)
    sD = sum(x * si**2 for x, si in zip(lam, s))
    return (sD + sigma2) / M * sum((N * x / ((N + 1) * x + tr)) ** 2 for x in lam[r:r2])


def evaluation_loss(eigenvalues, v, w, M, sigma2=0, flip=0):
    """This book's closed form of ``E (y_hat - <w, x_q>)^2`` for ``U = Q diag(v) Q^T``, ``u = 1``,
    ``rho = M``, coordinates ``w`` in the basis ``Q``, label noise ``sigma^2`` and then sign flips
    with probability ``flip`` (``m = 1 - 2 flip``):

    ``sum_i lambda_i (m lambda_i v_i - 1)^2 w_i^2 + ((||w||_D^2 + sigma^2) sum_i lambda_i^2 v_i^2
    + (2 - m^2) sum_i lambda_i^3 v_i^2 w_i^2) / M``.

    With ``flip = 0`` and ``v = v*`` it is Theorem 5.4.2; derivation in the chapter."""
    lam = list(eigenvalues)
    m = 1 - 2 * flip
    wD = sum(x * wi**2 for x, wi in zip(lam, w))
    bias = sum(x * (m * x * vi - 1) ** 2 * wi**2 for x, vi, wi in zip(lam, v, w))
    trV2D2 = sum(x**2 * vi**2 for x, vi in zip(lam, v))
    cubic = sum(x**3 * vi**2 * wi**2 for x, vi, wi in zip(lam, v, w))
    return bias + ((wD + sigma2) * trV2D2 + (2 - m**2) * cubic) / M


# -- exact helpers -------------------------------------------------------------------------------
def cayley_orthogonal(d: int, seed: int) -> sp.Matrix:
    """A rational orthogonal ``d x d`` matrix, ``(I - S)(I + S)^{-1}`` for a skew-symmetric
    integer ``S`` with entries in ``[-3, 3]`` drawn from ``seed``: an exact non-diagonal basis."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randint(-3, 4, (d, d), generator=g).tolist()
    S = sp.Matrix(d, d, lambda i, j: A[i][j] if i < j else (-A[j][i] if i > j else 0))
    eye = sp.eye(d)
    return (eye - S) * (eye + S).inv()


def flip_gap_symbolic(d: int = 4, r: int = 2, r2: int = 4):
    """``L(f_{r'}) - L(f_r)`` of :func:`evaluation_loss` at ``v = v*`` for a task in the top-r
    directions, with symbolic eigenvalues, ``N``, ``M``, ``sigma^2``, task coordinates and flip
    probability ``f``; returns ``(gap, d gap / d f)``."""
    lam = sp.symbols(f"lambda1:{d + 1}", positive=True)
    N, M, s2, f = sp.symbols("N M sigma2 f", positive=True)
    s = list(sp.symbols(f"s1:{r + 1}", real=True)) + [0] * (d - r)
    tr = sum(lam)
    vstar = [N / ((N + 1) * x + tr) for x in lam]
    v_r = [vstar[i] if i < r else 0 for i in range(d)]
    v_r2 = [vstar[i] if i < r2 else 0 for i in range(d)]
    gap = evaluation_loss(lam, v_r2, s, M, s2, f) - evaluation_loss(lam, v_r, s, M, s2, f)
    return gap, sp.cancel(sp.diff(gap, f))


def loss_at_best_u(Us: torch.Tensor, Lam: torch.Tensor, N) -> torch.Tensor:
    """``min_u L(U, u)`` for a batch ``Us`` of shape ``(b, d, d)`` (Lemma 5.1): ``l~`` is
    quadratic in ``u``, ``a u^2/2 - b u`` with ``a = tr(Gamma Lambda U Lambda U^T)`` and
    ``b = tr(Lambda^2 U^T)``, so the minimum is ``C - b^2 / (2a)`` (at ``u = b/a``)."""
    G = gamma(Lam, N)
    a = torch.einsum("ij,bjk,kl,bil->b", G @ Lam, Us, Lam, Us)
    b = torch.einsum("ij,bij->b", Lam @ Lam, Us)
    return loss_constant(Lam) - 0.5 * b**2 / a
