"""Small statistics shared by the chapters: deciding an effect against its uncertainty.

A chapter repeats a run over a few seeds and asks whether an effect is there. With n seeds the
mean's standard error has n - 1 degrees of freedom, and the two-sided 95 % critical value is
Student's t, not 2: 12.71 at n = 2, 4.30 at n = 3, 2.78 at n = 5. Deciding on "2 standard errors"
with a handful of seeds calls noise an effect far more often than 5 % of the time.
"""

from __future__ import annotations

import math
from functools import lru_cache

import mpmath


def student_t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` for Student's t with ``df`` degrees of freedom (incomplete beta)."""
    if df <= 0:
        raise ValueError(f"parameter 'df' = {df} is not allowed: expected a positive number")
    x = df / (df + t * t)
    tail = 0.5 * float(mpmath.betainc(df / 2, 0.5, 0, x, regularized=True))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=None)
def t_critical(df: float, level: float = 0.95) -> float:
    """The two-sided critical value ``t`` with ``P(|T| <= t) = level`` for ``df`` degrees of
    freedom (bisection on :func:`student_t_cdf` to 1e-12)."""
    if df <= 0:
        raise ValueError(f"parameter 'df' = {df} is not allowed: expected a positive number")
    if not 0 < level < 1:
        raise ValueError(f"parameter 'level' = {level} is not allowed: expected a number in (0, 1)")
    target = 0.5 + level / 2
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < target:
        hi *= 2
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if student_t_cdf(mid, df) < target else (lo, mid)
    return (lo + hi) / 2


def welch_df(se_a: float, n_a: int, se_b: float, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two means, from their standard
    errors and sample sizes."""
    if n_a < 2 or n_b < 2:
        raise ValueError("Welch's degrees of freedom need at least two samples on each side")
    va, vb = se_a**2, se_b**2
    if va + vb == 0:
        return float(n_a + n_b - 2)
    return (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))


def mean_and_se(values) -> tuple[float, float, int]:
    """``(mean, standard error of the mean, n)`` of a sequence of numbers (n >= 2)."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n < 2:
        raise ValueError(f"a standard error needs at least two values, got {n}")
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, math.sqrt(var / n), n


def decide(effect: float, se: float, n: int, margin: float = 0.0, level: float = 0.95):
    """Whether a mean ``effect`` over ``n`` seeds exceeds ``margin``, against its standard error:
    ``True`` when ``effect - t * se > margin``, ``False`` when ``effect + t * se < margin``, and
    ``None`` (undecided: ``inconclusive``) otherwise, with ``t`` the two-sided critical value for
    ``n - 1`` degrees of freedom. ``margin`` is fixed in advance, from the theory or the source."""
    if n < 2:
        raise ValueError(f"parameter 'n' = {n} is not allowed: a decision needs two seeds or more")
    half = t_critical(n - 1, level) * se
    if effect - half > margin:
        return True
    if effect + half < margin:
        return False
    return None


def monotone(groups, decreasing: bool = True, level: float = 0.95):
    """Whether the means of consecutive groups of repeats (``[[x, ...], [x, ...], ...]``, two or
    more values each) decrease (or increase), each step decided by Welch's t: ``True`` when every
    step goes the stated way beyond its uncertainty, ``False`` when some step goes the other way
    beyond it, ``None`` (inconclusive) otherwise."""
    stats = [mean_and_se(g) for g in groups]
    if len(stats) < 2:
        raise ValueError(f"parameter 'groups' has {len(stats)} group(s): a trend needs two or more")
    verdicts = []
    for (m0, s0, n0), (m1, s1, n1) in zip(stats, stats[1:]):
        effect = (m0 - m1) if decreasing else (m1 - m0)
        se = math.sqrt(s0**2 + s1**2)
        if se == 0:
            verdicts.append(effect > 0 if effect != 0 else None)
            continue
        df = welch_df(s0, n0, s1, n1)
        half = t_critical(df, level) * se
        verdicts.append(True if effect - half > 0 else False if effect + half < 0 else None)
    return all_of(verdicts)


def all_of(verdicts) -> bool | None:
    """One verdict from several (each ``True``, ``False`` or ``None``, as :func:`decide` gives):
    ``False`` if any is ``False``, else ``None`` (inconclusive) if any is ``None``, else ``True``.
    An "in every case" claim decided case by case."""
    verdicts = list(verdicts)
    if any(v is not None and not v for v in verdicts):
        return False
    if any(v is None for v in verdicts):
        return None
    return True


def batch_medians(values, batches: int = 10) -> list[float]:
    """The medians of ``batches`` consecutive equal parts of ``values`` (a leftover of fewer than
    ``batches`` values at the end is dropped): repeats of a median, for :func:`mean_and_se` or
    :func:`monotone`, when the draws are independent and identically distributed."""
    xs = [float(v) for v in values]
    if batches < 2:
        raise ValueError(f"parameter 'batches' = {batches} is not allowed: expected 2 or more")
    size = len(xs) // batches
    if size < 1:
        raise ValueError(
            f"parameter 'values' has {len(xs)} values: {batches} batches need {batches} or more"
        )
    medians = []
    for i in range(batches):
        part = sorted(xs[i * size : (i + 1) * size])
        mid = len(part) // 2
        medians.append(part[mid] if len(part) % 2 else (part[mid - 1] + part[mid]) / 2)
    return medians
