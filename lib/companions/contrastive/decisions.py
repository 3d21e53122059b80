"""Decisions of the part's predictions over seeds: one value per run (run = seed), its mean and
standard error, against a margin fixed in advance (:mod:`companions.stats` does the arithmetic).

Each function returns ``(agrees, summary)``: ``agrees`` is ``True`` (reproduced), ``False``
(differs) or ``None`` (inconclusive: fewer than two runs, or the interval straddles the margin),
and ``summary`` is a small dict ``{"mean", "se", "n"}`` for the ledger's ``observed``.
"""

from __future__ import annotations

import math

from companions.stats import all_of, decide, mean_and_se, t_critical


def _values(values) -> list[float]:
    xs = [float(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]
    return [x for x in xs if not math.isnan(x)]


def summary(values, digits: int = 4) -> dict:
    """``{"mean", "se", "n"}`` of ``values`` (NaNs dropped; ``se`` is ``inf`` below two values)."""
    xs = _values(values)
    if not xs:
        return {"mean": float("nan"), "se": float("inf"), "n": 0}
    if len(xs) < 2:
        return {"mean": round(xs[0], digits), "se": float("inf"), "n": 1}
    m, se, n = mean_and_se(xs)
    return {"mean": float(f"{m:.{digits}g}"), "se": float(f"{se:.{digits}g}"), "n": n}


def above(values, margin: float = 0.0, level: float = 0.95):
    """Whether the mean of ``values`` exceeds ``margin``: ``decide`` with Student's t over the
    runs."""
    xs = _values(values)
    if len(xs) < 2:
        return None, summary(xs)
    m, se, n = mean_and_se(xs)
    return decide(m, se, n, margin, level), summary(xs)


def below(values, margin: float = 0.0, level: float = 0.95):
    """Whether the mean of ``values`` is below ``margin`` (``above`` of the negated values)."""
    agrees, _ = above([-x for x in _values(values)], -margin, level)
    return agrees, summary(values)


def within(values, low: float, high: float, level: float = 0.95):
    """Whether the mean of ``values`` lies in ``[low, high]``: ``True`` when its two-sided
    interval (mean +- t se) lies inside, ``False`` when the interval misses the band, ``None``
    otherwise."""
    if not low < high:
        raise ValueError(f"parameters 'low' = {low}, 'high' = {high}: expected low < high")
    xs = _values(values)
    if len(xs) < 2:
        return None, summary(xs)
    m, se, n = mean_and_se(xs)
    half = t_critical(n - 1, level) * se
    if low <= m - half and m + half <= high:
        return True, summary(xs)
    if m + half < low or m - half > high:
        return False, summary(xs)
    return None, summary(xs)


def undecided(agrees, scale: str = "the paper scale (100 runs per setting)") -> str:
    """The sentence an inconclusive claim's note ends with (empty when decided)."""
    return "" if agrees is not None else f" Undecided at this scale; {scale} would decide."


def trend(slopes, up: bool = True):
    """ "Consistently increases (decreases) with eps_min", one reading for every experiment: at
    every NSR, the mean over seeds of the per-seed least-squares slope is above (below) zero.
    ``slopes``: ``(n_nsr, repeats)``. Returns ``(agrees, {"NSR k": summary})``; one NSR that
    ``differs`` makes the whole ``differs``."""
    verdicts, out = [], {}
    for k, row in enumerate(slopes):
        v, s = (above if up else below)(row, 0.0)
        verdicts.append(v)
        out[f"slope, NSR #{k}"] = s
    return all_of(verdicts), out
