"""Contrastive losses shared by the topics (torch only).

Equation numbers are those of Z. Shi's dissertation, Chapter 7 and Appendix F, unless a docstring
says otherwise. Every function works on any leading batch shape and on any device and dtype.

- :func:`logistic`, :func:`linear`, :func:`exponential`: the scalar losses ``ell(t)`` of (7.1);
  the logistic one is the source's default, the linear one is Theorem 7.1's.
- :func:`pair_contrastive`: (7.1), ``E ell(<phi(x), phi(x+) - phi(x-)>)`` with one negative.
- :func:`mean_negative_contrastive`: (F.38), the negative replaced by the mean representation.
- :func:`info_nce`: the InfoNCE (MoCo / SimCLR) loss, ``-log softmax`` of the positive logit, with
  an optional cyclic window of negatives and an optional stop-gradient on the positives' side.
  With a single negative it equals ``logistic`` of ``<h, h+ - h->/tau`` (tested).
"""

from __future__ import annotations

import torch


def logistic(t: torch.Tensor) -> torch.Tensor:
    """``ell(t) = log(1 + exp(-t))`` (Section 7.2), computed stably as ``logaddexp(0, -t)``
    (``softplus`` switches to the identity above 20 and is off by up to ``exp(-20)`` there)."""
    return torch.logaddexp(torch.zeros_like(t), -t)


def linear(t: torch.Tensor) -> torch.Tensor:
    """``ell(t) = -t``, the loss of Theorem 7.1 (contrastive learning as PCA)."""
    return -t


def exponential(t: torch.Tensor) -> torch.Tensor:
    """``ell(t) = exp(-t)``: convex, decreasing and bounded below (Assumption (A3))."""
    return torch.exp(-t)


SCALAR_LOSSES = {"logistic": logistic, "linear": linear, "exponential": exponential}


def _scalar(ell):
    if isinstance(ell, str):
        if ell not in SCALAR_LOSSES:
            raise ValueError(f"loss {ell!r} is not one of {sorted(SCALAR_LOSSES)}")
        return SCALAR_LOSSES[ell]
    return ell


def pair_contrastive(
    h: torch.Tensor, h_pos: torch.Tensor, h_neg: torch.Tensor, ell="logistic"
) -> torch.Tensor:
    """(7.1): the mean over the batch axis (``-2``) of ``ell(<h, h_pos - h_neg>)``.

    ``h, h_pos, h_neg`` have shape ``(..., n, k)``: representations of ``x``, of its positive ``x+``
    and of an independent negative ``x-``. Returns shape ``(...)``.
    """
    t = (h * (h_pos - h_neg)).sum(-1)
    return _scalar(ell)(t).mean(-1)


def mean_negative_contrastive(
    h: torch.Tensor, h_pos: torch.Tensor, ell="logistic", center: torch.Tensor | None = None
) -> torch.Tensor:
    """(F.38): the mean of ``ell(<h, h_pos - E phi(x-)>)``.

    ``E phi(x-)`` is ``center`` when given (shape ``(..., k)``), else the batch mean of ``h`` (the
    negatives are i.i.d. copies of ``x``, so the batch mean estimates it; gradients flow through it,
    as through the population mean). Shapes as in :func:`pair_contrastive`.
    """
    c = h.mean(-2) if center is None else center
    t = (h * (h_pos - c.unsqueeze(-2))).sum(-1)
    return _scalar(ell)(t).mean(-1)


def negative_mask(K: int, n_neg: int, device="cpu") -> torch.Tensor:
    """``(K, K)`` boolean: entry ``(k, k')`` is True when ``k'`` is in anchor ``k``'s denominator,
    that is ``k' = k`` (its positive) or one of the ``n_neg`` next indices, cyclically."""
    offs = (torch.arange(K, device=device)[None, :] - torch.arange(K, device=device)[:, None]) % K
    return offs <= n_neg


def info_nce(
    hx: torch.Tensor,
    hy: torch.Tensor,
    tau: float,
    n_neg: int | None = None,
    stop_grad: bool = False,
) -> torch.Tensor:
    """InfoNCE: ``-(1/K) sum_k log softmax_k'(<hx_k, hy_k'> / tau)[k' = k]``.

    ``hx`` (anchors) and ``hy`` (their positives) have shape ``(..., K, dim)``; the other rows of
    ``hy`` are the negatives, all ``K - 1`` of them, or only the ``n_neg`` cyclically next ones
    (:func:`negative_mask`). ``stop_grad`` detaches ``hy`` (the key side of MoCo).
    Returns shape ``(...)``.
    """
    if tau <= 0:
        raise ValueError(f"parameter 'tau' = {tau} is not allowed: it must be positive")
    K = hx.shape[-2]
    keys = hy.detach() if stop_grad else hy
    S = hx @ keys.transpose(-1, -2) / tau
    if n_neg is not None and n_neg < K - 1:
        S = S.masked_fill(~negative_mask(K, n_neg, hx.device), float("-inf"))
    return -torch.diagonal(torch.log_softmax(S, dim=-1), dim1=-2, dim2=-1).mean(-1)
