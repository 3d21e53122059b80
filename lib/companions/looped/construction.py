"""The setting (Definitions 8.2-8.7) and the construction of Lemma 8.13: prompts, the
input matrix, linear attention, the looped transformer and the gradient descent it runs (Theorem
8.14).

Shapes: a batch of prompts is ``X`` of shape ``(..., n, d)``, ``y`` of shape ``(..., n)``, the
transformer's state ``Z`` of shape ``(..., n+1, d+1)``. Everything here is device- and
dtype-agnostic; the chapter works in float64.
"""

from __future__ import annotations

import torch

from companions.incontext import sample_prompts  # noqa: F401  (moved to the core)


def causal_mask(n: int, dtype=torch.float64, device="cpu") -> torch.Tensor:
    """The mask M of Definition 8.6: ``(n+1) x (n+1)``, ones in the last row except its last
    entry."""
    M = torch.zeros(n + 1, n + 1, dtype=dtype, device=device)
    M[n, :n] = 1
    return M


def input_matrix(
    X: torch.Tensor, y: torch.Tensor, alpha, q0: torch.Tensor | None = None
) -> torch.Tensor:
    """``Z^(0) = [[X, y], [q0^T, alpha]]`` of Definition 8.5 (``q0 = 0`` by default)."""
    *batch, n, d = X.shape
    Z = X.new_zeros(*batch, n + 1, d + 1)
    Z[..., :n, :d] = X
    Z[..., :n, d] = y
    if q0 is not None:
        Z[..., n, :d] = q0
    Z[..., n, d] = torch.as_tensor(alpha, dtype=X.dtype, device=X.device)
    return Z


def construction_weights(
    d: int, dtype=torch.float64, device="cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """``Q = I_{d+1}`` and ``P = blockdiag(I_d, 0)`` of Lemma 8.13."""
    Q = torch.eye(d + 1, dtype=dtype, device=device)
    P = torch.eye(d + 1, dtype=dtype, device=device)
    P[d, d] = 0
    return Q, P


def linear_attention(Z: torch.Tensor, Q: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """``Attn(Z; Q, P) = (M o (Z Q Z^T)) Z P`` of Definition 8.6, computed as written (O(n^2 d))."""
    M = causal_mask(Z.shape[-2] - 1, dtype=Z.dtype, device=Z.device)
    return (M * (Z @ Q @ Z.transpose(-1, -2))) @ Z @ P


def linear_attention_last_row(Z: torch.Tensor, Q: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """The same attention in O(n d^2): only the last row of M is nonzero, so only the last row of
    the output is, and it equals ``(z_{n+1}^T Q Z_{1:n}^T) Z_{1:n} P``."""
    n = Z.shape[-2] - 1
    scores = Z[..., n:, :] @ Q @ Z[..., :n, :].transpose(-1, -2)  # (..., 1, n)
    out = torch.zeros_like(Z)
    out[..., n:, :] = scores @ Z[..., :n, :] @ P
    return out


def _per_loop(etas, loops: int | None, like: torch.Tensor) -> torch.Tensor:
    """Step sizes as a tensor whose first axis runs over the loops: a scalar is repeated ``loops``
    times; a tensor of shape ``(T,)`` or ``(T, *batch)`` is taken as it is."""
    etas = torch.as_tensor(etas, dtype=like.dtype, device=like.device)
    if etas.dim() == 0:
        if loops is None:
            raise ValueError("parameter 'loops' is required when a single step size is given")
        etas = etas.expand(loops)
    elif loops is not None and etas.shape[0] != loops:
        raise ValueError(f"parameter 'etas' has {etas.shape[0]} step sizes but 'loops' = {loops}")
    if not bool((etas > 0).all()):
        raise ValueError(
            "parameter 'etas' is not allowed: Definition 8.7 needs every step size eta^(t) > 0"
        )
    return etas


def looped_transformer(
    Z0: torch.Tensor,
    Q: torch.Tensor,
    P: torch.Tensor,
    etas,
    *,
    loops: int | None = None,
    faithful: bool = True,
    trajectory: bool = False,
):
    """The linear looped transformer of Definition 8.7.

    ``Z^(t) = Z^(t-1) - eta^(t-1) Attn(Z^(t-1); Q, P)`` for ``t = 1..T`` and
    ``TF(Z^(0)) = -(Z^(T)_{n+1, 1:d})^T``. ``etas`` holds one step size per loop (shape ``(T,)``, or
    ``(T, *batch)`` for a per-prompt step size such as ``1/||X^T X||``), or a scalar with ``loops``.
    ``faithful`` uses the masked O(n^2 d) attention as written; otherwise the equal O(n d^2) form.

    Returns ``(TF output, Z^(T))``, or with ``trajectory=True`` the outputs after every loop,
    shape ``(T+1, ..., d)`` (index 0 is ``-q^(0)``), and ``Z^(T)``.
    """
    etas = _per_loop(etas, loops, Z0)
    attn = linear_attention if faithful else linear_attention_last_row
    n, d = Z0.shape[-2] - 1, Z0.shape[-1] - 1
    Z = Z0
    outputs = [-Z[..., n, :d]] if trajectory else None
    for eta in etas:
        Z = Z - eta.reshape(*eta.shape, 1, 1) * attn(Z, Q, P)
        if trajectory:
            outputs.append(-Z[..., n, :d])
    return (torch.stack(outputs), Z) if trajectory else (-Z[..., n, :d], Z)


def looped_transformer_gram(
    Z0: torch.Tensor,
    Q: torch.Tensor,
    P: torch.Tensor,
    etas,
    *,
    loops: int | None = None,
    trajectory=False,
):
    """:func:`looped_transformer` in Gram form (same values, to round-off, as ``faithful=False``).

    Attention changes only the query row ``z`` (the mask's last row), so the context rows
    ``Z_{1:n}`` never change, and the last-row attention ``(z^T Q Z_{1:n}^T) Z_{1:n} P`` equals
    ``z^T Q C P`` with ``C = Z_{1:n}^T Z_{1:n}``, built once per prompt: each loop costs
    O(d^2) instead of O(n d). Returns what :func:`looped_transformer` returns."""
    etas = _per_loop(etas, loops, Z0)
    n, d = Z0.shape[-2] - 1, Z0.shape[-1] - 1
    context = Z0[..., :n, :]
    C = context.transpose(-1, -2) @ context
    z = Z0[..., n:, :]
    outputs = [-z[..., 0, :d]] if trajectory else None
    for eta in etas:
        zQ = z @ Q  # one product for the batch (Q is shared)
        zQC = (zQ.transpose(-1, -2) * C).sum(-2, keepdim=True)  # per prompt: no tiny bmm
        z = z - eta.reshape(*eta.shape, 1, 1) * (zQC @ P)
        if trajectory:
            outputs.append(-z[..., 0, :d])
    Z = torch.cat([context, z], dim=-2)
    return (torch.stack(outputs), Z) if trajectory else (-z[..., 0, :d], Z)


def gradient_descent(
    X: torch.Tensor,
    y: torch.Tensor,
    etas,
    loops: int | None = None,
    theta0: torch.Tensor | None = None,
) -> torch.Tensor:
    """Gradient descent (8.2) on ``l(theta) = ||y - X theta||^2 / 2``, gradient (8.1).
    Returns every iterate, shape ``(T+1, ..., d)``."""
    etas = _per_loop(etas, loops, X)
    theta = X.new_zeros(X.shape[:-2] + X.shape[-1:]) if theta0 is None else theta0
    H, b = X.transpose(-1, -2) @ X, (X.transpose(-1, -2) @ y.unsqueeze(-1)).squeeze(-1)
    iterates = [theta]
    for eta in etas:
        grad = (H @ theta.unsqueeze(-1)).squeeze(-1) - b
        theta = theta - eta.unsqueeze(-1) * grad
        iterates.append(theta)
    return torch.stack(iterates)
