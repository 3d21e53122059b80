"""The Fourier chapters' tables: one row per run, and narrow enough for the page (issue 42: the
training chapter's diagnostics table was wider than the page)."""

import torch

from companions.fourier import report
from companions.fourier import training as ftr

PAGE = 100  # characters: the book's code and its tables' source lines


def _rows(table: str) -> list[str]:
    return table.splitlines()[2:]


def test_diagnostics_and_adamw_tables_have_a_row_per_seed_and_fit_the_page():
    p, k, seeds = 23, 2, 6  # 11 frequencies: the widest per-frequency column of the presets
    run = ftr.train(
        p,
        k,
        widths=[16] * seeds,
        steps=3,
        lr=0.05,
        generator=torch.Generator().manual_seed(0),
        regularizer="adamw",
        log_every=2,
        train_fraction=0.5,
        progress=False,
    )
    init = [ftr.diagnostics(run.U0[i], run.W0[i]) for i in range(seeds)]
    trained = [ftr.diagnostics(run.U[i], run.W[i]) for i in range(seeds)]
    for table in (
        report.diagnostics_table(init, trained),
        report.adamw_table(run, trained, [0.5] * seeds),
    ):
        assert len(_rows(table)) == seeds
        assert max(map(len, table.splitlines())) <= PAGE, table
    # the table reads the runs' own numbers: seed 2's live count and held-out accuracy
    assert (
        f"{trained[2]['live']} / {trained[2]['width']}"
        in _rows(report.diagnostics_table(init, trained))[2]
    )
    assert (
        f"{float(run.test_accuracy[-1, 2]):.3f}"
        in _rows(report.adamw_table(run, trained, [0.5] * seeds))[2]
    )
