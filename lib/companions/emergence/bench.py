"""The emergence topic's case for ``python -m companions bench``: the network trainer
(:func:`companions.emergence.network.train_late`, Adam) at the sizes of the emergence-experiments
chapter's default preset, on Gaussian inputs with random labels (the cost of a step does not
depend on the data)."""

from __future__ import annotations

import torch

from companions.bench import BenchCase
from companions.emergence import network as net

PER_CALL = 10


def _build():
    from companions import preset

    cfg = preset("emergence-experiments", "default")
    g = torch.Generator().manual_seed(0)
    X = torch.randn(cfg.n, cfg.d, generator=g, dtype=torch.float64)
    y = torch.where(torch.rand(cfg.n, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    p = net.symmetric_init(cfg.m, cfg.d, k=cfg.k, sigma_tilde=1.0, gamma=0.5, generator=g)

    def step():
        net.train_late(
            p,
            X,
            y=y,
            steps=PER_CALL,
            batch=cfg.batch,
            generator=g,
            eval_every=10**9,
            progress=False,
        )

    return step


def bench_cases() -> list[BenchCase]:
    return [
        BenchCase(
            "emergence",
            "train_late (Adam) emergence-experiments default: d=100 m=100 batch 1000",
            _build,
            dtype="float64",
            per_call=PER_CALL,
            note=f"{PER_CALL} steps per call, the trainer's setup included",
        )
    ]
