"""Spectra and closed forms: Definition 8.12 (the condition number), Theorems 8.16, 8.17 and
8.25, and this book's derivations D1-D8.
"""

from __future__ import annotations

import math

import torch

#: The most matrices one batched ``eigvalsh`` call takes on a GPU: cuSOLVER's batched solver asked
#: for over 100 GiB of workspace for 262144 matrices of 4 x 4 (the paper preset's kappa draws).
CUDA_EIGH_BATCH = 1 << 14


def eigvalsh_in_parts(G: torch.Tensor, max_batch: int | None) -> torch.Tensor:
    """``torch.linalg.eigvalsh(G)`` over the batch of symmetric matrices ``G`` (``(..., d, d)``),
    at most ``max_batch`` matrices per call (None: one call)."""
    batch = G.shape[:-2]
    if max_batch is None or G.dim() < 3 or G[..., 0, 0].numel() <= max_batch:
        return torch.linalg.eigvalsh(G)
    flat = G.reshape(-1, *G.shape[-2:])
    parts = [torch.linalg.eigvalsh(part) for part in flat.split(max_batch)]
    return torch.cat(parts).reshape(*batch, G.shape[-1])


def gram_eigenvalues(X: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of ``X^T X`` in ascending order, shape ``(..., d)``; on a GPU, in batches of
    at most :data:`CUDA_EIGH_BATCH` matrices."""
    G = X.transpose(-1, -2) @ X
    return eigvalsh_in_parts(G, CUDA_EIGH_BATCH if G.is_cuda else None)


def condition_number(X: torch.Tensor) -> torch.Tensor:
    """``kappa = lambda_max(X^T X) / lambda_min(X^T X)`` (Definition 8.12); ``inf`` when
    singular, that is when ``lambda_min <= d eps lambda_max`` (``eps`` the dtype's machine
    epsilon, ``d`` the number of columns)."""
    eig = gram_eigenvalues(X)
    lam_min = eig[..., 0]
    kappa = eig[..., -1] / lam_min
    singular = lam_min <= eig[..., -1] * eig.shape[-1] * torch.finfo(eig.dtype).eps
    return torch.where(singular, torch.full_like(kappa, math.inf), kappa)


def smoothness(X: torch.Tensor) -> torch.Tensor:
    """``L = ||X^T X||`` (Lemma 8.20), the step size of Theorem 8.25 being ``1/L``."""
    return gram_eigenvalues(X)[..., -1]


def exact_error_curves(X: torch.Tensor, theta_star: torch.Tensor, alpha, eta, loops: int):
    """(D1) Exact error of GD from ``theta^(0) = 0`` with a constant step ``eta`` (per prompt).

    With ``X^T X = V diag(lambda) V^T`` and ``c = V^T theta*``:
    ``theta^(t) - theta* = -(I - eta X^T X)^t theta*``, hence
    ``err_t = |alpha| |sum_i c_i^2 (1 - eta lambda_i)^t|`` and
    ``||theta^(t) - theta*||^2 = sum_i c_i^2 (1 - eta lambda_i)^(2t)``.
    Each term is a power of a float, with no cancellation, so these curves have no round-off floor.
    Returns ``(err, sq_dist)``, each of shape ``(T+1, ...)``.
    """
    lam, V = torch.linalg.eigh(X.transpose(-1, -2) @ X)
    c2 = ((V.transpose(-1, -2) @ theta_star.unsqueeze(-1)).squeeze(-1)) ** 2
    eta = torch.as_tensor(eta, dtype=X.dtype, device=X.device)
    factor = 1 - eta.unsqueeze(-1) * lam  # (..., d)
    t = torch.arange(loops + 1, dtype=X.dtype, device=X.device).reshape(-1, *([1] * factor.dim()))
    powers = factor.unsqueeze(0) ** t
    err = abs(float(alpha)) * (c2 * powers).sum(-1).abs()
    sq = (c2 * powers**2).sum(-1)
    return err, sq


def _as_tensor(x) -> torch.Tensor:
    """A tensor as it is; a python or numpy number in float64 (``torch.as_tensor`` would make a
    python float a float32 tensor, and the bounds below would lose half their digits)."""
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=torch.float64)


def bound_theorem_8_16(kappa, loops, alpha=1.0):
    """Theorem 8.16: ``|<TF, theta*> - alpha| <= |alpha| exp(-T / (2 kappa))``."""
    return abs(alpha) * torch.exp(-_as_tensor(loops) / (2 * _as_tensor(kappa)))


def bound_tight(kappa, loops, alpha=1.0):
    """(D2) ``|alpha| (1 - 1/kappa)^T``: every factor ``1 - lambda_i / L`` lies in
    ``[0, 1 - 1/kappa]``. It is at most ``|alpha| exp(-T/kappa)``, tighter than Theorem 8.16 by a
    factor 2 in the exponent."""
    return abs(alpha) * (1 - 1 / _as_tensor(kappa)) ** _as_tensor(loops)


def bound_theorem_8_25(kappa, loops, radius=1.0):
    """Theorem 8.25: ``||theta* - theta^(T)||^2 <= exp(-T / kappa) R^2`` with ``eta = 1/L``."""
    return torch.exp(-_as_tensor(loops) / _as_tensor(kappa)) * radius**2


def loops_needed_theorem_8_16(kappa: float, alpha: float, eps: float) -> float:
    """(D8) Loops after which Theorem 8.16 guarantees error <= eps:
    ``2 kappa ln(|alpha| / eps)``."""
    return max(0.0, 2 * kappa * math.log(abs(alpha) / eps))


def loops_needed_tight(kappa: float, alpha: float, eps: float) -> float:
    """(D8) The same from (D2): ``ln(eps / |alpha|) / ln(1 - 1/kappa)``."""
    if kappa == 1:
        return 1.0
    return max(0.0, math.log(eps / abs(alpha)) / math.log(1 - 1 / kappa))


def gatmiry_min_samples(loops: int, d: int) -> int:
    """Theorem 8.17's condition ``8 T d^2 / sqrt(n) <= 2^(-2T)`` holds iff
    ``n >= 64 T^2 d^4 16^T``."""
    return 64 * loops**2 * d**4 * 16**loops


def gatmiry_error_bound(loops: int, d: int, n: int) -> float:
    """Theorem 8.17's error bound ``8 T d^2 2^(2T) / sqrt(n)``."""
    return 8 * loops * d**2 * 4.0**loops / math.sqrt(n)


def marchenko_pastur_kappa(ratio_d_over_n):
    """(D7) The limit of kappa for Gaussian X as n, d -> infinity with d/n -> r < 1:
    ``((1 + sqrt r) / (1 - sqrt r))^2`` (the ratio of the edges of the Marchenko-Pastur law)."""
    r = torch.as_tensor(ratio_d_over_n, dtype=torch.float64)
    if (r >= 1).any() or (r <= 0).any():
        raise ValueError("parameter 'ratio_d_over_n' must lie in (0, 1)")
    return ((1 + r.sqrt()) / (1 - r.sqrt())) ** 2


def fixed_step_rate(X: torch.Tensor, eta) -> torch.Tensor:
    """(D5) Per-prompt contraction factor ``max_i |1 - eta lambda_i|`` of GD with a fixed step:
    it converges iff this is < 1, i.e. iff ``0 < eta < 2 / lambda_max``."""
    eig = gram_eigenvalues(X)
    return (
        (1 - torch.as_tensor(eta, dtype=X.dtype, device=X.device).unsqueeze(-1) * eig)
        .abs()
        .amax(-1)
    )


def null_space_error(X: torch.Tensor, theta_star: torch.Tensor, alpha=1.0) -> torch.Tensor:
    """(D6) For n < d, GD from 0 stays in the row space of X and converges to its projection of
    theta*, so the error tends to ``|alpha| ||P_null theta*||^2`` (mean ``|alpha| (d - n)/d``)."""
    proj = torch.linalg.pinv(X) @ X
    row = (proj @ theta_star.unsqueeze(-1)).squeeze(-1)
    return abs(alpha) * ((theta_star - row) ** 2).sum(-1)


def prediction_error(outputs: torch.Tensor, theta_star: torch.Tensor, alpha) -> torch.Tensor:
    """``|<q, theta*> - alpha|`` of Definition 8.4, for outputs of shape ``(..., d)``."""
    return ((outputs * theta_star).sum(-1) - alpha).abs()
