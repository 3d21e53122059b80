"""Fourier diagnostics of a network: Figures 4.1 and 4.2, Lemma C.15's form, Lemma C.20."""

from __future__ import annotations

import math

import torch

from companions.fourier.network import dataset, forward, neuron_norms


def stacked(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``V_i = [u_{i,1}; ...; u_{i,k}; w_i]`` of shape ``(..., m, k+1, p)``."""
    return torch.cat([U, W.unsqueeze(-2)], dim=-2)


def folded_power(v: torch.Tensor) -> torch.Tensor:
    """One-sided power spectrum of real vectors along the last axis: ``P(0) = |v_hat(0)|^2`` and
    ``P(zeta) = |v_hat(zeta)|^2 + |v_hat(-zeta)|^2`` for zeta = 1..(p-1)/2 (p odd): shape
    ``(..., (p+1)/2)``. Folding +-zeta is what makes a real single-frequency vector have normalized
    power 1."""
    p = v.shape[-1]
    pw = torch.fft.fft(v).abs().pow(2)
    half = (p - 1) // 2
    return torch.cat([pw[..., :1], pw[..., 1 : half + 1] + pw[..., p - half :].flip(-1)], dim=-1)


def neuron_spectrum(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Per-neuron folded power summed over its k+1 vectors: shape ``(..., m, (p+1)/2)``."""
    return folded_power(stacked(U, W)).sum(-2)


def concentration(power: torch.Tensor) -> torch.Tensor:
    """``max_{zeta >= 1} P(zeta) / sum_{zeta >= 0} P(zeta)``: 1 for a single nonzero frequency."""
    return power[..., 1:].amax(-1) / power.sum(-1).clamp_min(1e-300)


def dominant_frequency(power: torch.Tensor) -> torch.Tensor:
    """``argmax_{zeta >= 1} P(zeta)`` (values in 1..(p-1)/2)."""
    return power[..., 1:].argmax(-1) + 1


def two_sided_max_power(v: torch.Tensor) -> torch.Tensor:
    """Figure 4.2's "maximum normalized power" taken literally:
    ``max_i |v_hat[i]|^2 / sum_j |v_hat[j]|^2`` over the unfolded spectrum. It is 1/2 for any real
    single-frequency vector (the erratum)."""
    pw = torch.fft.fft(v).abs().pow(2)
    return pw.amax(-1) / pw.sum(-1).clamp_min(1e-300)


def phase_lock(U: torch.Tensor, W: torch.Tensor, zeta: torch.Tensor | None = None) -> torch.Tensor:
    """``cos(sum_j theta_{u_j} - theta_w)`` at each neuron's (dominant) frequency, with
    ``theta = arg v_hat(zeta)``; 1 when the phases satisfy Lemma C.15's condition. Shape
    ``(..., m)``."""
    if zeta is None:
        zeta = dominant_frequency(neuron_spectrum(U, W))
    V = torch.fft.fft(stacked(U, W))  # (..., m, k+1, p)
    at = V.gather(-1, zeta.unsqueeze(-1).unsqueeze(-1).expand(*V.shape[:-1], 1)).squeeze(
        -1
    )  # (..., m, k+1)
    ang = torch.angle(at)
    return torch.cos(ang[..., :-1].sum(-1) - ang[..., -1])


def balance(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``||w_i|| / mean_j ||u_{i,j}||``: 1 at a maximizer of Lemma C.15 (all norms 1/sqrt(k+1))."""
    return W.norm(dim=-1) / U.norm(dim=-1).mean(-1)


def live_neurons(U: torch.Tensor, W: torch.Tensor, fraction: float = 0.1) -> torch.Tensor:
    """Neurons with ``||theta_i|| > fraction * max_j ||theta_j||`` (boolean, shape ``(..., m)``)."""
    n = neuron_norms(U, W)
    return n > fraction * n.amax(-1, keepdim=True)


def network_dft(U: torch.Tensor, W: torch.Tensor, p: int) -> torch.Tensor:
    """The (k+1)-dimensional DFT of ``f(a_1, ..., a_k, c)`` (Section C.8.2), shape
    ``(p,) * (k+1)``."""
    k = U.shape[-2]
    a, _ = dataset(p, k, device=U.device)
    f = forward(U, W, a, chunk=4096).reshape(*([p] * (k + 1)))
    return torch.fft.fftn(f)


def trig_interpolant(v: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The real function sharing the DFT of ``v`` (Figure 4.1's pale blue curve):
    ``(1/p) sum_{|j| <= (p-1)/2} v_hat(j) exp(2 pi i j t / p)`` at real points ``t``."""
    p = v.shape[-1]
    vh = torch.fft.fft(v.to(torch.float64))
    js = torch.arange(-(p - 1) // 2, (p - 1) // 2 + 1)
    coef = vh[..., js % p]
    basis = torch.exp(
        2j * math.pi * js.to(torch.float64)[:, None] * t.to(torch.float64)[None, :] / p
    )
    return (coef @ basis).real / p


def diagonal_dft_ratio(U: torch.Tensor, W: torch.Tensor, p: int) -> float:
    """Lemma C.20's statistic of a network: ``min_j Re f_hat(j, ..., j, -j) / max_j |f_hat(j, ...,
    j, -j)|`` over ``j = 1..p-1``. It is 1 for the max-margin network (every diagonal entry equals
    ``lambda p^k``), positive when every frequency adds to the correct logit (the lemma), and of
    either sign for a random network."""
    k = U.shape[-2]
    fh = network_dft(U, W, p)
    diag = torch.stack([fh[(j,) * k + ((-j) % p,)] for j in range(1, p)])
    return float(diag.real.min() / diag.abs().max())


def vector_power(U: torch.Tensor) -> torch.Tensor:
    """Figure 4.2's maximum normalized power of ``u_{i,1}``, with +-zeta folded: the
    concentration of the folded power of ``U[..., 0, :]``, one value per neuron (shape
    ``U.shape[:-2]``). 1 for a single-frequency vector, about its share of the largest folded
    frequency otherwise."""
    return concentration(folded_power(U[..., 0, :]))


def live_power_quantile(U: torch.Tensor, W: torch.Tensor, q: float = 0.05) -> float:
    """The ``q`` quantile over the live neurons of one network (:func:`live_neurons`) of
    :func:`vector_power`: Figure 4.2's "almost 1 for all neurons" read off a histogram as the
    5th percentile (``q = 0.05``) in its top bin."""
    if not 0 <= q <= 1:
        raise ValueError(f"parameter 'q' = {q!r} is not allowed: expected a number in [0, 1]")
    power = vector_power(U[live_neurons(U, W)])
    return float(torch.quantile(power.to(torch.float64), q))
