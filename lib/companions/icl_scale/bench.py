"""The icl_scale topic's case for ``python -m companions bench``: the rank-r linear
transformer's trainer (:func:`companions.icl_scale.experiments.train_rank_r`) at the
icl-scale-regression chapter's default preset (largest rank)."""

from __future__ import annotations

import torch

from companions.bench import BenchCase

PER_CALL = 10


def _build():
    from companions import preset
    from companions.icl_scale import data, experiments

    cfg = preset("icl-scale-regression", "default")
    d = len(cfg.eigenvalues)
    Q = data.random_orthogonal(d, torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(0)
    r = max(cfg.train_ranks)

    def step():
        experiments.train_rank_r(
            r,
            list(cfg.eigenvalues),
            Q=Q,
            N=cfg.n_train,
            steps=PER_CALL,
            batch=cfg.train_batch,
            lr=cfg.train_lr,
            generator=g,
            progress=False,
        )

    return step


def bench_cases() -> list[BenchCase]:
    return [
        BenchCase(
            "icl_scale",
            "train_rank_r icl-scale-regression default: r=4 N=8 batch 512",
            _build,
            per_call=PER_CALL,
            note=f"{PER_CALL} steps per call, the trainer's setup included",
        )
    ]
