"""The contrastive topic's case for ``python -m companions bench``: the vectorised trainer
(:func:`companions.contrastive.training.train`) at the contrastive-stage1 chapter's default
preset (all its repeats side by side)."""

from __future__ import annotations

import torch

from companions.bench import BenchCase

PER_CALL = 10


def _build():
    from companions import preset
    from companions.contrastive import chapters, training

    cfg = preset("contrastive-stage1", "default")
    S = chapters.setup_from(cfg, bias=False)
    eps = torch.full((cfg.repeats,), cfg.eps_min, dtype=torch.float64)
    nsr = torch.full((cfg.repeats,), cfg.nsr, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)

    def step():
        training.train(
            S, eps, nsr=nsr, steps=PER_CALL, generator=g, log_every=10**9, progress=False
        )

    return step


def bench_cases() -> list[BenchCase]:
    return [
        BenchCase(
            "contrastive",
            "train contrastive-stage1 default (all repeats)",
            _build,
            dtype="float64",
            per_call=PER_CALL,
            note=f"{PER_CALL} steps per call, the trainer's setup included",
        )
    ]
