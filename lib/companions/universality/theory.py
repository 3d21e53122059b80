"""Closed forms of Section 7.2.2 and Appendix F.2, and projections onto the representation class.

Everything here is float64 unless the caller passes another dtype.
"""

from __future__ import annotations

import math

import torch

from companions import losses
from companions.universality.data import Layout


def beta_of_alpha(alpha: float, s: int, r: int, T: int) -> float:
    """Proposition 7.3: ``beta = min(1, (r - alpha s) / (T (r - s)))``."""
    return min(1.0, (r - alpha * s) / (T * (r - s)))


def mixture_objective(
    alphas,
    s: int,
    *,
    r: int,
    T: int,
    samples: int,
    generator: torch.Generator,
    loss: str = "logistic",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(F.97) with beta of Proposition 7.3: ``f(alpha) = E ell(alpha Z + beta(alpha) Z_1)``,
    ``Z ~ chi2_s``, ``Z_1 ~ chi2_{r-s}``, by Monte Carlo with common random numbers.

    Returns ``(f, se)``: the estimates at each alpha, and the standard error of ``f(alpha) - f(1)``
    (the same draws are used at every alpha, so differences are far more precise than values).
    """
    ell = losses.SCALAR_LOSSES[loss]
    Z = (torch.randn(samples, s, generator=generator, dtype=torch.float64) ** 2).sum(-1)
    Z1 = (torch.randn(samples, r - s, generator=generator, dtype=torch.float64) ** 2).sum(-1)
    vals = torch.stack([ell(a * Z + beta_of_alpha(a, s, r, T) * Z1) for a in alphas])
    ref = ell(1.0 * Z + beta_of_alpha(1.0, s, r, T) * Z1)
    se = (vals - ref).std(-1) / math.sqrt(samples)
    return vals.mean(-1), se


def theory_loadings(layout: Layout, pre_tasks, alpha: float = 1.0) -> torch.Tensor:
    """Squared loadings ``a_j^2`` of the optimal representation (Lemma F.3, Propositions 7.3, 7.4):
    ``alpha`` on ``S``, ``beta`` on ``P_t`` for each pre-training task, 0 on the rest.

    With one task this is Proposition 7.4 (``beta = 1``); with ``r = 2s`` and ``alpha = 1`` it is
    Proposition F.8 (``beta = 1/K`` for ``K`` tasks).
    """
    pre_tasks = list(pre_tasks)
    a2 = torch.zeros(layout.d, dtype=torch.float64)
    a2[layout.shared()] = alpha
    beta = beta_of_alpha(alpha, layout.s, layout.r, len(pre_tasks))
    for t in pre_tasks:
        a2[layout.private(t)] = beta
    return a2


def representation(
    a2: torch.Tensor, M: torch.Tensor, Q: torch.Tensor | None = None, k: int | None = None
):
    """(F.43): ``W = Q diag(sqrt(a2))[:k] M^T`` (``M^{-1} = M^T`` for orthonormal ``M``)."""
    d = a2.numel()
    k = d if k is None else k
    A = torch.diag(a2.sqrt())[:k]
    W = A @ M.T.to(a2.dtype)
    return W if Q is None else Q.to(a2.dtype) @ W


def loadings(W: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """``a_j^2 = ||(W M)_{:, j}||^2``: how strongly the representation encodes feature ``z_j``."""
    return ((W.to(M.dtype) @ M) ** 2).sum(0)


def probe_norm(v1: float, v2: float, alpha: float, beta: float) -> float:
    """(F.68): ``B_{phi*, t} = sqrt(v_{t,1}/alpha + v_{t,2}/beta)``, least norm of an exact
    probe."""
    return math.sqrt(v1 / alpha + v2 / beta)


def rademacher_leading(v1, v2, *, alpha, beta, s, r, m) -> float:
    """The leading term of Lemma F.5's Rademacher complexity (F.91), unit variances:
    ``sqrt((v1/alpha + v2/beta)(s alpha + (r - s) beta) / m)``."""
    return math.sqrt((v1 / alpha + v2 / beta) * (s * alpha + (r - s) * beta) / m)


def rademacher_mc(alpha, beta, *, v1, v2, s, r, m, draws, generator) -> tuple[float, float]:
    """(F.75) by Monte Carlo: ``(B/m) E ||A sum_i z^(i)||`` with ``A = diag(sqrt(alpha) on S,
    sqrt(beta) on P_t)``. Returns ``(mean, standard error)``."""
    scale = torch.cat([torch.full((s,), math.sqrt(alpha)), torch.full((r - s,), math.sqrt(beta))])
    Zs = torch.randn(draws, m, r, generator=generator, dtype=torch.float64).sum(1)
    vals = probe_norm(v1, v2, alpha, beta) / m * (Zs * scale.double()).norm(dim=-1)
    return float(vals.mean()), float(vals.std() / math.sqrt(draws))


def cr_sqrt_beta(T: int, s: int, gamma: float) -> float:
    """Proposition F.9: ``sqrt(beta_CR) = min(1, sqrt(1/T) + gamma / sqrt(s))`` on ``P_t``."""
    return min(1.0, math.sqrt(1 / T) + gamma / math.sqrt(s))


def _project_singular_values(sv: torch.Tensor, fro: float | None) -> torch.Tensor:
    """Euclidean projection of nonnegative ``sv`` onto ``{0 <= x <= 1, ||x|| <= fro}``:
    ``x = min(1, sv / (1 + mu))`` with the least ``mu >= 0`` that meets the ball. Exact: with the
    ``c`` largest values clipped at 1, ``(1 + mu)^2 = (sum of the other sv^2) / (fro^2 - c)``; the
    right ``c`` is the first one consistent with the clipping."""
    x = sv.clamp(max=1.0)
    if fro is None or float((x**2).sum()) <= fro**2:
        return x
    desc, _ = torch.sort(sv, descending=True)
    tail = torch.flip(torch.cumsum(torch.flip(desc**2, [0]), 0), [0])  # sum of desc[c:]^2
    for c in range(min(int(fro**2), desc.numel() - 1) + 1):
        if fro**2 - c <= 0:
            break
        scale = math.sqrt(float(tail[c]) / (fro**2 - c))
        if scale >= 1 and (c == 0 or float(desc[c - 1]) >= scale) and float(desc[c]) <= scale:
            return (sv / scale).clamp(max=1.0)
    raise ValueError(f"no projection onto the ball of radius {fro}: it must exceed 0")


def project_representation(W: torch.Tensor, fro: float | None) -> torch.Tensor:
    """Projection onto ``Phi = {W : ||W|| <= 1, ||W||_F <= fro}`` (Section 7.2.2 with
    ``fro = sqrt(r)``; ``fro = None`` keeps only the spectral constraint). Both norms are unitarily
    invariant, so the projection acts on the singular values alone."""
    U, sv, Vh = torch.linalg.svd(W, full_matrices=False)
    return (U * _project_singular_values(sv, fro)) @ Vh


def project_cr(
    W: torch.Tensor,
    W_star: torch.Tensor,
    gamma: float,
    fro: float | None = None,
    tol: float = 1e-6,
    max_iters: int = 2000,
) -> torch.Tensor:
    """Projection onto (F.105) ``{||W - W*||_F <= gamma} n {||W|| <= 1}`` (and ``||W||_F <= fro``
    when given), by Dykstra's alternating projections, iterated until an iterate moves by less
    than ``tol`` (Frobenius) or ``max_iters``. ``cr_residual`` measures how far the result is from
    the set."""
    X = W.clone()
    P = torch.zeros_like(W)
    Qd = torch.zeros_like(W)
    for _ in range(max_iters):
        X_old = X
        Y = X + P
        D = Y - W_star
        n = float(D.norm())
        Yb = W_star + D * (gamma / n) if n > gamma else Y
        P = Y - Yb
        Z = Yb + Qd
        X = project_representation(Z, fro)
        Qd = Z - X
        if float((X - X_old).norm()) < tol:
            break
    return X


def cr_residual(W: torch.Tensor, W_star: torch.Tensor, gamma: float) -> float:
    """How far ``W`` is outside (F.105): ``max(||W - W*||_F - gamma, ||W|| - 1, 0)``."""
    W64, Ws = W.double(), W_star.double()
    ball = float((W64 - Ws).norm()) - gamma
    spec = float(torch.linalg.matrix_norm(W64, ord=2)) - 1
    return max(ball, spec, 0.0)


def rademacher_lower(v1, v2, *, alpha, beta, s, r, m) -> float:
    """This book's lower bound on (F.75) by the Gaussian Poincare inequality: with ``X = A sum_i
    z^(i)``, ``||X||`` is ``sqrt(m) max(sqrt(alpha), sqrt(beta))``-Lipschitz in a standard
    Gaussian, so ``Var ||X|| <= m max(alpha, beta)`` and ``E||X|| >= sqrt(mu - m max(alpha,
    beta))`` with ``mu = E||X||^2 = m (s alpha + (r - s) beta)``; times ``B / m``."""
    mu = m * (s * alpha + (r - s) * beta)
    return probe_norm(v1, v2, alpha, beta) / m * math.sqrt(max(mu - m * max(alpha, beta), 0.0))


def leading_term_f8(T, r, m, u_norm, L=1):
    """Proposition F.8's leading term with ``v_{t,1} = v_{t,2} = ||u||^2/2`` (no O(1) term):
    ``4L sqrt((v1 + T v2)/m) sqrt(r (T+1)/(2T))``. Works on numbers and on sympy symbols."""
    v = u_norm**2 / 2
    return 4 * L * ((v + T * v) / m) ** 0.5 * (r * (T + 1) / (2 * T)) ** 0.5


def leading_term_74(r, m, u_norm, L=1):
    """Proposition 7.4's leading term ``4L sqrt(r/m) ||u_t^*||``."""
    return 4 * L * (r / m) ** 0.5 * u_norm
