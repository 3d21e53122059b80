"""What the part's claims hand to the ledger, shaped for their rules: each test fails on a plausible
wrong shaping (a slope per NSR mixed up, a NaN run kept, a row without its error)."""

import math

import pytest
import torch

from companions.claims import Every, MeanAbove, Undecided, WithinErrors
from companions.contrastive import decisions as dec
from companions.contrastive.data import run_grid


def test_finite_leaves_out_the_runs_that_measured_nothing():
    assert dec.finite(torch.tensor([1.0, float("nan"), 3.0])) == [1.0, 3.0]
    assert dec.finite([0.5, math.nan]) == [0.5]
    assert dec.finite([]) == []


def test_per_run_needs_two_runs_that_measured_something():
    assert dec.per_run([1.0, float("nan"), 2.0]) == [1.0, 2.0]
    one = dec.per_run(torch.tensor([float("nan"), 0.5]), "runs with a pruned set")
    assert isinstance(one, Undecided) and one.reason.startswith("1 runs with a pruned set")


def test_slopes_by_nsr_are_per_seed_slopes_at_each_nsr():
    # three eps values, two NSRs, two seeds: value = slope * eps + offset per (NSR, seed)
    eps, nsr = [0.1, 0.5, 1.0], [0.05, 1.25]
    e, n, _ = run_grid(eps, nsr, 2)
    slope = {(0.05, 0): 2.0, (0.05, 1): 2.01, (1.25, 0): -1.0, (1.25, 1): -1.01}
    seed = torch.arange(len(e)) % 2
    values = torch.tensor(
        [slope[float(nn), int(s)] * float(ee) + 7 * int(s) for ee, nn, s in zip(e, n, seed)],
        dtype=torch.float64,
    )
    out = dec.slopes_by_nsr(values, eps, nsr, 2)
    assert list(out) == ["NSR 0.05", "NSR 1.25"]
    assert out["NSR 0.05"] == pytest.approx([2.0, 2.01])
    assert out["NSR 1.25"] == pytest.approx([-1.0, -1.01])
    # the shape the registered trend rule reads: growing at the first NSR, falling at the second
    decided = Every(MeanAbove(0.0)).decide(out)
    assert decided.verdict is False


def test_monte_carlo_rows_broadcast_and_refuse_a_zero_error():
    rows = dec.monte_carlo_rows(torch.tensor([1.0, 2.0]), 0.5, torch.tensor([1.0, 1.0]))
    assert rows == [(1.0, 0.5, 1.0), (2.0, 0.5, 1.0)]
    assert WithinErrors(4).decide(rows).verdict is True  # z = 0 and 2
    assert WithinErrors(1).decide(rows).verdict is False
    with pytest.raises(ValueError, match="row 1 has a standard error 0.0"):
        dec.monte_carlo_rows([1.0, 2.0], [0.1, 0.0], 1.0)
