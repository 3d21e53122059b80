"""The domain_generalization topic's case for ``python -m companions bench``: the gated trainer
(:func:`companions.domain_generalization.training.train_gated`, nuclear-norm method) at the
dg-nuclear-norm chapter's default task sizes."""

from __future__ import annotations

import torch

from companions.bench import BenchCase

PER_CALL = 20


def _build():
    from companions import preset
    from companions.domain_generalization import data, training

    cfg = preset("dg-nuclear-norm", "default")
    g = torch.Generator().manual_seed(0)
    x, y, dom = data.sample_domains(cfg.task_n, cfg.task_r, cfg.task_d, list(cfg.task_gammas), g)

    def step():
        training.train_gated(
            x,
            y,
            domain=dom,
            method="nu",
            lam=cfg.task_nu,
            steps=PER_CALL,
            batch_per_domain=cfg.task_batch,
            lr=cfg.task_lr,
            generator=g,
        )

    return step


def bench_cases() -> list[BenchCase]:
    return [
        BenchCase(
            "domain_generalization",
            "train_gated (nuclear norm) dg-nuclear-norm default task",
            _build,
            per_call=PER_CALL,
            note=f"{PER_CALL} steps per call, the trainer's setup included",
        )
    ]
