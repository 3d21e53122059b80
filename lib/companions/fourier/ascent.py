"""Random unit neurons and the single-neuron ascent (Lemma C.15 from below), and the
construction's report.
"""

from __future__ import annotations

import math

import torch

from companions.fourier.construction import construction
from companions.fourier.diagnostics import (
    concentration,
    dominant_frequency,
    neuron_spectrum,
    phase_lock,
)
from companions.fourier.network import (
    construction_width,
    dataset,
    forward,
    gamma_star,
    margins,
    neuron_norms,
    norm_ab,
)
from companions.fourier.neuron import neuron_expected_margin_fourier


def random_unit_neurons(
    n: int, p: int, k: int, generator: torch.Generator, dtype=torch.float64, device="cpu"
):
    """``n`` neurons with Gaussian entries, scaled to ``||theta_i||_2 = 1``: ``U (n, k, p)``,
    ``W (n, p)``."""
    V = torch.randn(n, k + 1, p, generator=generator, dtype=dtype)
    V = V / V.pow(2).sum((-1, -2), keepdim=True).sqrt()
    V = V.to(device)
    return V[:, :k], V[:, k]


def single_neuron_ascent(
    p: int,
    k: int,
    starts: int,
    steps: int,
    generator: torch.Generator,
    lr: float = 0.02,
    dtype=torch.float64,
    device="cpu",
):
    """Maximize the single-neuron class-weighted margin over the unit ball (Definition C.13) by Adam
    on ``psi(theta / ||theta||)`` from ``starts`` random starts (vectorized). Returns
    ``(U, W, values)`` with unit-norm neurons and their exact (eq. C.10) objective values."""
    U, W = random_unit_neurons(starts, p, k, generator, dtype, device)
    U, W = U.clone().requires_grad_(True), W.clone().requires_grad_(True)
    opt = torch.optim.Adam([U, W], lr=lr)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        n = neuron_norms(U, W)
        Un, Wn = U / n[:, None, None], W / n[:, None]
        (-neuron_expected_margin_fourier(Un, Wn).sum()).backward()
        opt.step()
    with torch.no_grad():
        n = neuron_norms(U, W)
        Un, Wn = U / n[:, None, None], W / n[:, None]
        return Un, Wn, neuron_expected_margin_fourier(Un, Wn)


def construction_report(
    p: int, k: int, device="cpu", dtype=torch.float64, chunk: int = 4096
) -> dict:
    """Everything Lemma 4.11 / C.18 and Lemma 4.10 / C.15 say about the explicit network, measured
    in ``dtype`` over all ``p^k`` inputs: its width, normalized margin and gamma*, the spread of the
    margins (all points on the margin: q* uniform), the spread of the wrong logits (Condition 4.8),
    the accuracy, the gap to ``C sum_zeta cos_zeta(sum a - c)``, neuron norms, concentration,
    frequencies covered, the phase condition, and each neuron's own class-weighted margin."""
    c = construction(p, k, dtype=dtype, device=device)
    a, y = dataset(p, k, device=device)
    f = forward(c.U, c.W, a, chunk)
    g = margins(f, y)
    wrong = f.scatter(-1, y.unsqueeze(-1), float("nan"))
    spread_wrong = torch.nan_to_num(wrong, nan=float("-inf")).amax(-1) - torch.nan_to_num(
        wrong, nan=float("inf")
    ).amin(-1)
    diff = (a.sum(-1, keepdim=True) - torch.arange(p, device=device)).to(dtype)  # sum a - c
    zetas = torch.arange(1, (p - 1) // 2 + 1, device=device, dtype=dtype)
    target = c.scale * torch.cos(2 * math.pi * diff.unsqueeze(-1) * zetas / p).sum(-1)
    power = neuron_spectrum(c.U, c.W)
    gs = gamma_star(p, k)
    nm = float(g.min() / norm_ab(c.U, c.W, k + 1).pow(k + 1))
    return dict(
        p=p,
        k=k,
        m=c.U.shape[0],
        m_star=construction_width(p, k),
        gamma_star=gs,
        normalized_margin=nm,
        rel_gap=abs(nm / gs - 1),
        raw_margin=float(g.min()),
        margin_spread=float(g.max() - g.min()),
        wrong_spread=float(spread_wrong.max()),
        accuracy=float((f.argmax(-1) == y).double().mean()),
        cosine_gap=float((f - target).abs().max() / target.abs().max()),
        norm_gap=float((neuron_norms(c.U, c.W) - 1).abs().max()),
        min_concentration=float(concentration(power).min()),
        frequencies=sorted(set(dominant_frequency(power).tolist())),
        min_phase_cos=float(phase_lock(c.U, c.W).min()),
        neuron_margin_gap=float((neuron_expected_margin_fourier(c.U, c.W) / gs - 1).abs().max()),
    )
