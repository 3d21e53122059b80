"""The fourier topic's cases for ``python -m companions bench``: the training step of
:func:`companions.fourier.training.train`, beside the Grokking-style peer on the matched task."""

from __future__ import annotations

import torch

from companions.bench import BenchCase, grokking_peer, grokking_peer_flops
from companions.fourier.network import construction_width, table
from companions.fourier.training import init_network, training_step


def step_flops(p: int, k: int, runs: int, width: int, batch: int = 0) -> float:
    """Matrix-product FLOPs of one step of the trainer: the head ``h^k W`` forward
    (``2 N m p``), its two gradients (twice that); the tables are gathered and summed, no
    product. ``N = p^k`` (full batch) or ``batch``."""
    n = batch or p**k
    return runs * 3 * 2 * n * width * p


def trainer(p, k, *, widths, regularizer, dtype=torch.float32, batch=0, lam=1e-3, wd=0.0, seed=0):
    """``step()`` of :func:`companions.fourier.training.train` with these settings."""

    def build():
        g = torch.Generator().manual_seed(seed)
        U, W = init_network(
            len(widths), max(widths), p=p, k=k, generator=g, widths=widths, dtype=dtype
        )
        E, W = table(U).requires_grad_(True), W.requires_grad_(True)
        if regularizer == "adamw":
            opt = torch.optim.AdamW([E, W], lr=1e-3, betas=(0.9, 0.98), weight_decay=wd)
        else:
            opt = torch.optim.Adam([E, W], lr=1e-3)
        step = training_step(
            p, k, E=E, W=W, opt=opt, generator=g, regularizer=regularizer, lam=lam, batch=batch
        )
        return lambda: step(1e-3)

    return build


def bench_cases() -> list[BenchCase]:
    p, k, m = 97, 2, 500
    matched = "trainer p=97 k=2 m=500 AdamW full batch"
    # the chapter's default preset: seeds=2 runs of width m* and the width sweep, side by side
    dp, dk = 5, 3
    mstar = construction_width(dp, dk)
    widths = [mstar] * 2 + [max(1, round(f * mstar)) for f in (0.25, 0.5, 0.75, 1.0)]
    return [
        BenchCase(
            "fourier",
            matched,
            trainer(p, k, widths=[m], regularizer="adamw", wd=1.0),
            flops=step_flops(p, k, 1, m),
            note="float32 as the chapter now trains",
        ),
        BenchCase(
            "fourier",
            "peer: Grokking-style fcn (one-hot, Linear, x^2, Linear)",
            lambda: grokking_peer(p, m),
            flops=grokking_peer_flops(p, m),
            peer=matched,
            note="written in companions.bench as the reference for d-doshi/Grokking fcn",
        ),
        BenchCase(
            "fourier",
            "trainer p=97 k=2 m=500 AdamW full batch, float64",
            trainer(p, k, widths=[m], regularizer="adamw", dtype=torch.float64, wd=1.0),
            flops=step_flops(p, k, 1, m),
            dtype="float64",
            note="float64, as the chapter trained before",
        ),
        BenchCase(
            "fourier",
            f"fourier-training default: p={dp} k={dk} L_2,k+1 widths {widths}",
            trainer(dp, dk, widths=widths, regularizer="l2k1"),
            flops=step_flops(dp, dk, len(widths), max(widths)),
        ),
    ]
