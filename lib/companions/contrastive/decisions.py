"""What the part's claims hand to the ledger: the measured values, shaped as their registered
rules read them (:mod:`companions.claims` decides; nothing here computes a verdict).

* :func:`finite` -- values per run, the runs that measured nothing (NaN) left out;
* :func:`per_run` -- the same, or ``Undecided`` where fewer than two runs measured anything;
* :func:`slopes_by_nsr` -- per NSR, one least-squares slope in ``eps_min`` per seed: what
  ``Every(MeanAbove(0.0))`` (a statistic that grows with ``eps_min`` at every NSR) reads;
* :func:`monte_carlo_rows` -- ``(estimate, standard error, exact)`` rows for ``WithinErrors``.
"""

from __future__ import annotations

import math

import torch

from companions.claims import Undecided
from companions.contrastive.metrics import trend_slopes


def finite(values) -> list[float]:
    """``values`` (a tensor or a sequence, one per run) as floats, NaNs left out: a run that could
    not measure the statistic (no pure neuron of one kind) is no evidence either way."""
    xs = values.tolist() if hasattr(values, "tolist") else list(values)
    return [float(x) for x in xs if not math.isnan(float(x))]


def per_run(values, what: str = "runs"):
    """:func:`finite` values per run for a rule decided over runs, or :class:`Undecided` naming
    how many ``what`` measured the statistic when fewer than two did (a small preset, a run
    without the neurons the statistic reads)."""
    xs = finite(values)
    if len(xs) < 2:
        return Undecided(f"{len(xs)} {what} measured it: deciding over runs needs two or more")
    return xs


def slopes_by_nsr(values, eps_grid, nsr_grid, repeats: int) -> dict[str, list[float]]:
    """``{"NSR <value>": [slope per seed]}``: for the runs of ``data.run_grid(eps_grid, nsr_grid,
    repeats)`` (eps outermost, repeats innermost), each seed's least-squares slope of ``values``
    against ``eps_min`` at each NSR (:func:`metrics.trend_slopes`)."""
    slopes = trend_slopes(torch.as_tensor(values), eps_grid, len(nsr_grid), repeats)
    return {f"NSR {float(v):g}": slopes[k].tolist() for k, v in enumerate(nsr_grid)}


def monte_carlo_rows(estimates, ses, exact) -> list[tuple[float, float, float]]:
    """Rows ``(estimate, se, exact)``, one per entry of the three (broadcast) inputs; a row whose
    standard error is not positive is refused here, naming it, rather than by the rule."""
    e, s, x = torch.broadcast_tensors(
        *(torch.as_tensor(v, dtype=torch.float64) for v in (estimates, ses, exact))
    )
    rows = list(zip(e.flatten().tolist(), s.flatten().tolist(), x.flatten().tolist()))
    for i, (_, se, _) in enumerate(rows):
        if not se > 0:
            raise ValueError(f"row {i} has a standard error {se}: it must be positive")
    return rows
