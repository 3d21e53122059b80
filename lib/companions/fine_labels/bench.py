"""The fine_labels topic's case for ``python -m companions bench``: coarse training
(:func:`companions.fine_labels.experiments.run`) at the fine-labels-coarse chapter's default preset
(all its seeds side by side)."""

from __future__ import annotations

import torch

from companions.bench import BenchCase

PER_CALL = 10


def _build():
    import companions
    from companions import preset
    from companions.fine_labels import experiments as fx

    cfg = preset("fine-labels-coarse", "default", device="cpu")
    rt = companions.setup("cpu", 0, dtype="float32", threads=torch.get_num_threads())
    tests = fx.test_sets(fx.data_config(cfg), cfg.seeds, 64, rt.generator(1), rt.device)
    state = {"net": None, "offset": 0}

    def step():
        state["net"], _ = fx.run(
            cfg,
            rt,
            kind="coarse",
            steps=PER_CALL,
            tests=tests,
            net=state["net"],
            offset=state["offset"],
            n_logs=1,
        )
        state["offset"] += 1

    return step


def bench_cases() -> list[BenchCase]:
    return [
        BenchCase(
            "fine_labels",
            "coarse training fine-labels-coarse default (all seeds)",
            _build,
            per_call=PER_CALL,
            note=f"{PER_CALL} fresh batches per call, two logs of the test sets included",
        )
    ]
