"""The single-neuron class-weighted margin (Definitions C.12-C.13, Lemma C.14, eq. C.10)."""

from __future__ import annotations

import math

import torch

from companions.fourier.network import class_weighted_margins, hidden


def neuron_logits(U: torch.Tensor, W: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Every neuron's own output ``phi(theta_i, a)``: shape ``(..., m, N, p)``."""
    k = U.shape[-2]
    return hidden(U, a).pow(k).transpose(-1, -2).unsqueeze(-1) * W.unsqueeze(-2)


def neuron_expected_margin(
    U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Brute force: ``E_{a ~ D_p}[g'(theta_i, a, y)]`` with uniform tau for every neuron, which is
    ``eta(0) - E_{delta != 0} eta(delta)`` (Definitions C.12, C.13): shape ``(..., m)``."""
    return class_weighted_margins(neuron_logits(U, W, a), y).mean(-1)


def neuron_expected_margin_fourier(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """The same quantity by eq. (C.10):
    ``k! / ((p-1) p^k) sum_{j != 0} w_hat(-j) prod_i u_hat_i(j)``."""
    k, p = U.shape[-2], U.shape[-1]
    uh = torch.fft.fft(
        U.to(torch.complex128) if U.dtype == torch.float64 else U.to(torch.complex64)
    )
    wh = torch.fft.fft(W.to(uh.dtype))
    w_minus = torch.roll(torch.flip(wh, [-1]), 1, -1)  # w_hat(-j) = w_hat(p - j)
    terms = (uh.prod(-2) * w_minus)[..., 1:].sum(-1)
    return (math.factorial(k) / ((p - 1) * p**k)) * terms.real


def eta(
    U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, multilinear_only: bool = False
) -> torch.Tensor:
    """``eta(delta) = E_a[(u_1(a_1) + ... + u_k(a_k))^k w(a_1 + ... + a_k - delta)]`` for
    delta = 0..p-1 (Definition C.12) for one neuron ``U (k, p)``, ``W (p,)``; with
    ``multilinear_only``, the term ``k! E_a[w(.) prod_i u_i(a_i)]`` (the proof's eta-tilde times
    k!)."""
    k, p = U.shape
    vals = torch.stack([U[j, a[:, j]] for j in range(k)])  # (k, N)
    s = math.factorial(k) * vals.prod(0) if multilinear_only else vals.sum(0).pow(k)
    total = a.sum(-1)
    return torch.stack([(s * W[(total - d) % p]).mean() for d in range(p)])
