"""The gradient_features topic's case for ``python -m companions bench``: Algorithm 1's later
steps (:func:`companions.gradient_features.network.train`, Adam on both layers) after its first
step, on the XOR mixture at the gradient-mixtures chapter's default preset (all seeds at once)."""

from __future__ import annotations

import math

import torch

from companions.bench import BenchCase

PER_CALL = 10


def _build():
    from companions import preset
    from companions.gradient_features import data as gdata
    from companions.gradient_features import experiments as gx
    from companions.gradient_features import network as nw

    cfg = preset("gradient-mixtures", "default", device="cpu")
    g = torch.Generator().manual_seed(0)
    n = max(cfg.n_values)
    _, net1, X, y = gx.one_step(
        gdata.xor_mixture(cfg.d, cfg.sigma),
        cfg.seeds,
        cfg.m,
        n,
        1.0,
        1 / math.sqrt(cfg.d),
        cfg.sigma,
        cfg.eta1,
        g,
        torch.float32,
        "cpu",
    )

    def step():
        nw.train(
            net1, X, y, PER_CALL, cfg.lr, True, "adam", batch=cfg.batch, generator=g, progress=False
        )

    return step


def bench_cases() -> list[BenchCase]:
    return [
        BenchCase(
            "gradient_features",
            "Algorithm 1's later steps, gradient-mixtures default (XOR mixture, all seeds)",
            _build,
            per_call=PER_CALL,
            note=f"{PER_CALL} Adam steps per call, the optimizer's setup included",
        )
    ]
