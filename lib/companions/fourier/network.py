"""The task (eq. 4.1), the network (eq. 4.2), its norms (Definition C.2) and margins
(Definitions 4.2-4.6), and gamma* (Lemma 4.10 = C.15).

Shapes: a network with ``m`` neurons is ``U`` of shape ``(..., m, k, p)`` (the ``u_{i,j}``) and
``W`` of shape ``(..., m, p)`` (the ``w_i``); leading dimensions are independent runs. Inputs are
integer tuples ``a`` of shape ``(N, k)``. DFT convention (Section 4.4.1):
``f_hat(j) = sum_a f(a) exp(-2 pi i j a / p)``, which is ``torch.fft.fft``. Phases use the
convention of Lemma C.15, ``u(a) = beta cos(theta + 2 pi zeta a / p)``, so
``u_hat(zeta) = (p beta / 2) exp(i theta)``.
"""

from __future__ import annotations

import math

import sympy as sp
import torch


def dataset(p: int, k: int, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """All ``p^k`` tuples ``a`` of Z_p^k (the theory's D_p, Section 4.3.1) and their labels
    ``y = (a_1 + ... + a_k) mod p`` (eq. 4.1). ``a`` has shape ``(p^k, k)``, in lexicographic
    order."""
    grids = (
        torch.cartesian_prod(*[torch.arange(p, device=device)] * k)
        if k > 1
        else torch.arange(p, device=device)[:, None]
    )
    grids = grids.reshape(-1, k)
    return grids, grids.sum(-1) % p


def construction_width(p: int, k: int) -> int:
    """``m* = 2^(2k-1) (p-1)/2`` neurons of Lemma 4.11 / C.18 (Theorem 4.9's width)."""
    return 2 ** (2 * k - 1) * (p - 1) // 2


def hidden(U: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Pre-activations ``u_{i,1}(a_1) + ... + u_{i,k}(a_k)`` of eq. (4.2): shape ``(..., N, m)``."""
    k = U.shape[-2]
    s = sum(U[..., j, :].index_select(-1, a[:, j]) for j in range(k))  # (..., m, N)
    return s.transpose(-1, -2)


def forward(
    U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, chunk: int | None = None
) -> torch.Tensor:
    """``f(theta, a) = sum_i (u_{i,1}(a_1) + ... + u_{i,k}(a_k))^k w_i`` (eq. 4.2), shape
    ``(..., N, p)``.

    With ``chunk``, the inputs are processed ``chunk`` at a time (same result, bounded memory)."""
    k = U.shape[-2]
    if chunk is None or a.shape[0] <= chunk:
        return hidden(U, a).pow(k) @ W
    return torch.cat(
        [hidden(U, a[i : i + chunk]).pow(k) @ W for i in range(0, a.shape[0], chunk)], dim=-2
    )


def neuron_norms(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``||theta_i||_2 = (sum_j ||u_{i,j}||^2 + ||w_i||^2)^(1/2)`` (Section 4.3.1), shape
    ``(..., m)``."""
    return (U.pow(2).sum((-1, -2)) + W.pow(2).sum(-1)).sqrt()


def norm_ab(U: torch.Tensor, W: torch.Tensor, b: float) -> torch.Tensor:
    """``||theta||_{2,b} = (sum_i ||theta_i||_2^b)^(1/b)`` (Definition C.2 with a = 2). The power is
    taken of ``||theta_i||^2`` so that the gradient at a zero neuron is zero, not NaN."""
    sq = U.pow(2).sum((-1, -2)) + W.pow(2).sum(-1)
    return sq.pow(b / 2).sum(-1).pow(1 / b)


def margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``g(theta, x, y) = f[y] - max_{y' != y} f[y']`` (Definition 4.2), per input: shape
    ``(..., N)``."""
    correct = logits.gather(-1, y.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    others = logits.scatter(-1, y.expand(*logits.shape[:-1]).unsqueeze(-1), float("-inf"))
    return correct - others.amax(-1)


def class_weighted_margins(
    logits: torch.Tensor, y: torch.Tensor, tau: torch.Tensor | None = None
) -> torch.Tensor:
    """``g'(theta, x, y) = f[y] - sum_{y' != y} tau(x, y)[y'] f[y']`` (Definition 4.6). ``tau`` of
    shape ``(N, p)`` (its entry at y is ignored) defaults to the uniform weighting ``1/(p-1)`` of
    Theorem 4.9."""
    p = logits.shape[-1]
    correct = logits.gather(-1, y.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    if tau is None:
        return correct - (logits.sum(-1) - correct) / (p - 1)
    tau = tau.scatter(-1, y.unsqueeze(-1), 0.0)
    return correct - (tau * logits).sum(-1)


def margin(
    U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, y: torch.Tensor, chunk: int | None = 4096
) -> torch.Tensor:
    """``h(theta) = min_{D_p} g`` (Definition 4.3), shape ``(...)``."""
    return margins(forward(U, W, a, chunk), y).amin(-1)


def normalized_margin(
    U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, y: torch.Tensor, chunk: int | None = 4096
) -> torch.Tensor:
    """``h(theta / ||theta||_{2,k+1}) = h(theta) / ||theta||_{2,k+1}^(k+1)`` (Definition 4.4; f is
    (k+1)-homogeneous)."""
    k = U.shape[-2]
    return margin(U, W, a, y, chunk) / norm_ab(U, W, k + 1).pow(k + 1)


def gamma_star(p: int, k: int) -> float:
    """``gamma* = 2 k! / ((2k+2)^((k+1)/2) (p-1) p^((k-1)/2))`` (Lemma 4.10 / C.15), as a float."""
    return 2 * math.factorial(k) / ((2 * k + 2) ** ((k + 1) / 2) * (p - 1) * p ** ((k - 1) / 2))


def gamma_star_symbolic(p=None, k=None) -> sp.Expr:
    """The same closed form in sympy (symbols ``p``, ``k`` where not given)."""
    p = sp.Symbol("p", positive=True) if p is None else sp.Integer(p)
    k = sp.Symbol("k", positive=True, integer=True) if k is None else sp.Integer(k)
    return (
        2
        * sp.factorial(k)
        / ((2 * k + 2) ** ((k + 1) / sp.Integer(2)) * (p - 1) * p ** ((k - 1) / sp.Integer(2)))
    )


def is_odd_prime(p: int) -> bool:
    return p > 2 and all(p % q for q in range(2, int(math.isqrt(p)) + 1))


def table(U: torch.Tensor) -> torch.Tensor:
    """The embedding tables of ``U (..., m, k, p)``: ``E (..., k, p, m)`` with ``E[..., j, a, i] =
    u_{i,j}(a)``, a contiguous copy, so the pre-activation of an input is a sum of ``k`` rows."""
    return U.movedim(-3, -1).clone(memory_format=torch.contiguous_format)


def untable(E: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`table`: ``U (..., m, k, p)`` (a view of ``E``)."""
    return E.movedim(-1, -3)


def _table_hidden(E: torch.Tensor, a: torch.Tensor | None) -> torch.Tensor:
    """Pre-activations ``(..., N, m)`` from the tables ``E (..., k, p, m)``: with ``a = None`` on
    all of ``D_p`` in lexicographic order (a broadcast sum, no gather), else the row gather
    ``E_1[a_1] + ... + E_k[a_k]``."""
    *lead, k, p, m = E.shape
    if a is None:
        h = E[..., 0, :, :].reshape(*lead, p, *[1] * (k - 1), m)
        for j in range(1, k):
            shape = [1] * k
            shape[j] = p
            h = h + E[..., j, :, :].reshape(*lead, *shape, m)
        return h.reshape(*lead, p**k, m)
    h = E[..., 0, :, :].index_select(-2, a[:, 0])
    for j in range(1, k):
        h = h + E[..., j, :, :].index_select(-2, a[:, j])
    return h


class _PowerHead(torch.autograd.Function):
    """``f = (E_1[a_1] + ... + E_k[a_k])^k W`` (eq. 4.2) with a hand-written backward: the
    gradient of the tables is a sum of rows (a reshape-and-sum on the full grid, an
    ``index_add`` otherwise), and no intermediate beyond ``h`` and ``h^k`` is kept."""

    @staticmethod
    def forward(ctx, E, W, a):
        k = E.shape[-3]
        h = _table_hidden(E, a)
        act = h * h if k == 2 else h.pow(k)
        ctx.save_for_backward(E, W, a, h, act)
        return act @ W

    @staticmethod
    def backward(ctx, G):
        E, W, a, h, act = ctx.saved_tensors
        *lead, k, p, m = E.shape
        dW = act.transpose(-1, -2) @ G if ctx.needs_input_grad[1] else None
        dE = None
        if ctx.needs_input_grad[0]:
            dh = G @ (k * W).transpose(-1, -2)  # the factor k on the small W, not on dh
            dh.mul_(h if k == 2 else h.pow(k - 1))
            if a is None:
                grid = dh.reshape(*lead, *[p] * k, m)
                nd = len(lead)
                dE = torch.stack(
                    [grid.sum([nd + i for i in range(k) if i != j]) for j in range(k)], dim=-3
                )
            else:
                dE = torch.zeros_like(E)
                for j in range(k):
                    dE[..., j, :, :].index_add_(-2, a[:, j], dh)
        return dE, dW, None


def forward_table(E: torch.Tensor, W: torch.Tensor, a: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`forward` from the tables ``E = table(U)`` (same values; a faster step): logits
    ``(..., N, p)`` on the inputs ``a (N, k)``, or with ``a = None`` on all of ``D_p`` in the order
    of :func:`dataset`."""
    if a is None:
        return _PowerHead.apply(E, W, None)
    return _PowerHead.apply(E, W, a)
