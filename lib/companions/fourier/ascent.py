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
    *,
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
    p: int, k: int, device="cpu", dtype=torch.float64, chunk: int | None = 4096
) -> dict:
    """Everything Lemma 4.11 / C.18 and Lemma 4.10 / C.15 say about the explicit network, measured
    in ``dtype`` over all ``p^k`` inputs: its width, normalized margin and gamma*, the spread of the
    margins (all points on the margin: q* uniform), the spread of the wrong logits (Condition 4.8),
    the accuracy, the gap to ``C sum_zeta cos_zeta(sum a - c)``, neuron norms, concentration,
    frequencies covered, the phase condition, and each neuron's own class-weighted margin.

    The inputs are evaluated ``chunk`` at a time (None: all at once), so memory stays bounded at
    any ``p^k`` (the cosine target alone is ``p^k * p * (p - 1) / 2`` numbers: 39 GiB at p = 47,
    k = 4); every entry is a minimum, maximum or count, so the report is the same for any
    ``chunk``."""
    c = construction(p, k, dtype=dtype, device=device)
    a, y = dataset(p, k, device=device)
    step = a.shape[0] if chunk is None else chunk
    if step < 1:
        raise ValueError(f"parameter 'chunk' = {chunk!r} is not allowed: expected None or >= 1")
    zetas = torch.arange(1, (p - 1) // 2 + 1, device=device, dtype=dtype)
    g_min = g_max = wrong_spread = gap = target_max = None
    correct = 0
    for i in range(0, a.shape[0], step):
        a_i, y_i = a[i : i + step], y[i : i + step]
        f = forward(c.U, c.W, a_i)
        g = margins(f, y_i)
        wrong = f.scatter(-1, y_i.unsqueeze(-1), float("nan"))
        spread_wrong = torch.nan_to_num(wrong, nan=float("-inf")).amax(-1) - torch.nan_to_num(
            wrong, nan=float("inf")
        ).amin(-1)
        diff = (a_i.sum(-1, keepdim=True) - torch.arange(p, device=device)).to(dtype)  # sum a - c
        target = c.scale * torch.cos(2 * math.pi * diff.unsqueeze(-1) * zetas / p).sum(-1)
        parts = (g.min(), g.max(), spread_wrong.max(), (f - target).abs().max(), target.abs().max())
        if g_min is None:
            g_min, g_max, wrong_spread, gap, target_max = parts
        else:
            g_min, g_max = torch.minimum(g_min, parts[0]), torch.maximum(g_max, parts[1])
            wrong_spread = torch.maximum(wrong_spread, parts[2])
            gap, target_max = torch.maximum(gap, parts[3]), torch.maximum(target_max, parts[4])
        correct += int((f.argmax(-1) == y_i).sum())
    power = neuron_spectrum(c.U, c.W)
    gs = gamma_star(p, k)
    nm = float(g_min / norm_ab(c.U, c.W, k + 1).pow(k + 1))
    return dict(
        p=p,
        k=k,
        m=c.U.shape[0],
        m_star=construction_width(p, k),
        gamma_star=gs,
        normalized_margin=nm,
        rel_gap=abs(nm / gs - 1),
        raw_margin=float(g_min),
        margin_spread=float(g_max - g_min),
        wrong_spread=float(wrong_spread),
        accuracy=correct / a.shape[0],
        cosine_gap=float(gap / target_max),
        norm_gap=float((neuron_norms(c.U, c.W) - 1).abs().max()),
        min_concentration=float(concentration(power).min()),
        frequencies=sorted(set(dominant_frequency(power).tolist())),
        min_phase_cos=float(phase_lock(c.U, c.W).min()),
        neuron_margin_gap=float((neuron_expected_margin_fourier(c.U, c.W) / gs - 1).abs().max()),
    )
