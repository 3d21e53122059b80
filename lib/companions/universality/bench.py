"""The universality topic's case for ``python -m companions bench``: pre-training
(:func:`companions.universality.training.pretrain`) on every task at the
universality-trade-off chapter's default preset."""

from __future__ import annotations

import torch

from companions.bench import BenchCase

PER_CALL = 10


def _build():
    from companions import preset
    from companions.universality import data, training

    cfg = preset("universality-trade-off", "default")
    layout = data.Layout(cfg.s, cfg.r, cfg.T, cfg.n_spurious)
    M = data.dictionary(layout.d, torch.Generator().manual_seed(1), dtype=torch.float64)
    g = torch.Generator().manual_seed(0)

    def step():
        training.pretrain(
            layout,
            M,
            tasks=list(range(cfg.T)),
            steps=PER_CALL,
            batch=cfg.pre_batch,
            lr=cfg.pre_lr,
            generator=g,
        )

    return step


def bench_cases() -> list[BenchCase]:
    return [
        BenchCase(
            "universality",
            "pretrain universality-trade-off default (all T tasks)",
            _build,
            per_call=PER_CALL,
            note=f"{PER_CALL} steps per call, the trainer's setup included",
        )
    ]
