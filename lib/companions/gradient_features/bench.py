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
        m=cfg.m,
        n=n,
        sigma_a=1.0,
        sigma_w=1 / math.sqrt(cfg.d),
        b_tilde=cfg.sigma,
        eta1=cfg.eta1,
        generator=g,
        dtype=torch.float32,
        device="cpu",
    )

    def step():
        nw.train(
            net1,
            X,
            y=y,
            steps=PER_CALL,
            lr=cfg.lr,
            train_first_layer=True,
            optimizer="adam",
            batch=cfg.batch,
            generator=g,
            progress=False,
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
