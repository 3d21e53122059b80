"""Claims registered before they are decided: a chapter's claims and their decision rules.

A chapter declares its claims once, in its topic's ``chapters.py``, apart from the code that
computes them (``Chapter(..., claims=(...))``). Each :class:`Claim` gives its id, the source's own
name of the result it checks, its kind, the statistic in words, the decision rule with its numbers,
and how it could fail. The chapter then hands the ledger only what it measured
(``ledger.record({"claim-id": value})``); the rule decides, here, and the ledger sets the status.

The rules, each a small frozen dataclass with a ``decide`` method and a ``text`` in words:

==========================  ==========================================  ==========================
rule                        decides                                     measured value
==========================  ==========================================  ==========================
:class:`Exact`              equal to a value (numbers, rationals,        a value, or a list of them
                            sympy expressions simplified to it)
:class:`Close`              within a tolerance of a value                a number, or an array
:class:`AtMost`             at most a bound (every element)              a number, or an array
:class:`AtLeast`            at least a bound (every element)             a number, or an array
:class:`MeanAbove`          the mean's interval above a threshold        values per seed, or an
:class:`MeanBelow`          the mean's interval below a threshold        :class:`Estimate`
:class:`MeanInBand`         the mean's interval inside a band            (the same)
:class:`DifferenceAbove`    the interval of mean(a) - mean(b) above a    a pair (a, b) of lists
                            margin (Welch, or paired)
:class:`Trend`              every step of a sweep's means going one      a list of value lists, one
                            way, each step decided by Welch's t          per point of the sweep
:class:`WithinErrors`       estimates within k standard errors of        (estimate, se, exact) rows
                            their exact values
:class:`Every`              another rule, in every case of a dict        ``{case: measured value}``
:class:`RatioOfProportions` the interval of p_a / p_b (two binomial      two pairs (successes,
                            counts, Katz's log method) inside a band    trials)
:class:`OnlyRefutes`        another rule, which may refute but never     what that rule reads
                            confirm (a search, a construction)
==========================  ==========================================  ==========================

A rule's verdict is True, False or None (undecided: only rules with an interval can be
undecided). The kind turns it into a status (:func:`status_of`): ``identity`` and ``bound`` claims
``hold`` or ``fail``, and so does a ``prediction`` with an exact rule; a ``prediction`` decided
with uncertainty (a statistical rule: an interval, standard errors, quantiles of draws), a
``reproduction`` and an ``erratum`` are ``reproduced``, ``differs`` or ``inconclusive``. An
``erratum``'s rule states the source's statement: ``differs`` confirms the erratum; where only a
search or a construction stands against the statement, :class:`OnlyRefutes` keeps a failed search
``inconclusive``. A rule changed after its claim was published is kept, with the date and the
reason, as an :class:`Amendment`: the ledger decides the earlier rule too, where the measured
value fits it, and shows both.
"""

from __future__ import annotations

import math
import numbers
import statistics
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, ClassVar, Mapping, Sequence

from companions import stats

KINDS = ("identity", "bound", "prediction", "reproduction", "erratum")
#: Kinds whose status is holds / fails (a prediction only with an exact rule).
CHECK_KINDS = ("identity", "bound", "prediction")
#: Kinds whose status is reproduced / differs / inconclusive.
COMPARE_KINDS = ("prediction", "reproduction", "erratum")


class BadMeasurement(ValueError):
    """A measured value that its claim's rule cannot decide (wrong shape, NaN, too few seeds)."""


@dataclass(frozen=True)
class Decision:
    """What a rule made of a measured value.

    ``verdict``: True, False, or None (undecided). ``observed``: the value the ledger records (a
    number, a string, or a short dict). ``shown``: the same in a few characters, for tables and
    the inline ``{claim}`` role. ``extra``: fields the ledger adds to the claim (an interval, the
    number of seeds, the values per seed)."""

    verdict: bool | None
    observed: Any
    shown: str
    extra: Mapping[str, Any] = field(default_factory=dict)


def fmt(value: Any) -> str:
    """A number in four significant digits, a list item by item, anything else as text."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return str(value)


def _number(value: Any, what: str) -> float:
    """``value`` as a finite float, else :class:`BadMeasurement` naming ``what``."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        try:
            value = float(value)  # sympy numbers, fractions
        except (TypeError, ValueError):
            raise BadMeasurement(f"{what} must be a number, not {value!r}") from None
    value = float(value)
    if math.isnan(value):
        raise BadMeasurement(f"{what} is NaN")
    return value


def _numbers(value: Any, what: str) -> list[float]:
    """A number, or a (nested) list or array of them, flattened to floats (at least one)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        out = []
        for i, v in enumerate(value):
            out += _numbers(v, f"{what}[{i}]")
        if not out:
            raise BadMeasurement(f"{what} is empty")
        return out
    return [_number(value, what)]


def _values(value: Any, what: str, at_least: int = 2) -> list[float]:
    """Values per seed: a flat list of at least ``at_least`` finite numbers."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BadMeasurement(f"{what} must be a list of values (one per seed), not {value!r}")
    xs = [_number(v, f"{what}[{i}]") for i, v in enumerate(value)]
    if len(xs) < at_least:
        raise BadMeasurement(
            f"{what} has {len(xs)} value(s): deciding with uncertainty needs {at_least} or more"
        )
    return xs


class Rule:
    """A decision rule: ``decide(measured) -> Decision``, and ``text()``, the rule in words with
    its numbers. ``statistical``: whether it decides a measurement with uncertainty (an interval,
    standard errors, quantiles of draws); ``can_be_undecided``: whether it can return None (rules
    with an interval)."""

    statistical: ClassVar[bool] = False
    can_be_undecided: ClassVar[bool] = False

    def decide(self, measured: Any) -> Decision:  # pragma: no cover - every rule overrides it
        raise NotImplementedError

    def text(self) -> str:  # pragma: no cover - every rule overrides it
        raise NotImplementedError


# -------------------------------------------------------------------------------------------------
# Exact rules
# -------------------------------------------------------------------------------------------------
def _items(value: Any) -> Any:
    """A sympy matrix or an array as a flat list; anything else as it is."""
    import sympy

    if isinstance(value, sympy.MatrixBase):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, sympy.Basic):
        value = value.tolist()
    if isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple)) for v in value):
        return [x for v in value for x in (_items(v) if isinstance(v, (list, tuple)) else [v])]
    return value


def _simplified(value: Any) -> Any:
    """A sympy expression simplified (so the ledger shows the residual, not its unsimplified
    form); anything else as it is."""
    import sympy

    return sympy.simplify(value) if isinstance(value, sympy.Basic) else value


def _equal(a: Any, b: Any) -> bool:
    """Exact equality of two items: sympy expressions when their difference simplifies to 0,
    anything else by ``==`` (a NaN is refused)."""
    import sympy

    if isinstance(a, float) and math.isnan(a):
        raise BadMeasurement("the measured value is NaN")
    if isinstance(a, sympy.Basic) or isinstance(b, sympy.Basic):
        return bool(sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0)
    return bool(a == b)


@dataclass(frozen=True)
class Exact(Rule):
    """Equal to ``value`` exactly: a number, a rational, a string, a sympy expression (equal when
    the difference simplifies to 0), or a list (equal item by item). A list, an array or a sympy
    matrix measured against one value is equal when every item is (``Exact(0)`` on the residuals
    of a symbolic identity); the ledger keeps the simplified items."""

    value: Any

    def decide(self, measured: Any) -> Decision:
        items = _items(measured)
        if isinstance(items, (list, tuple)):
            items = [_simplified(x) for x in items]
            target = _items(self.value)
            if isinstance(target, (list, tuple)):
                verdict = len(items) == len(target) and all(map(_equal, items, target))
            else:
                verdict = all(_equal(x, target) for x in items)
            observed = [_short(x) for x in items]
            shown = fmt(observed[:8]) + (f" … ({len(observed)} items)" if len(observed) > 8 else "")
            return Decision(verdict, observed, shown)
        value = _simplified(items)
        observed = _short(value)
        return Decision(_equal(value, self.value), observed, fmt(observed))

    def text(self) -> str:
        return f"= {fmt(self.value)} exactly"


def _short(value: Any) -> Any:
    """A JSON-friendly form of an exact value (sympy objects and fractions as strings)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    return str(value)


@dataclass(frozen=True)
class Close(Rule):
    """Within ``tolerance`` of ``value`` (``relative``: of ``tolerance * |value|``); an array is
    decided by its largest gap."""

    value: float
    tolerance: float
    relative: bool = False

    def decide(self, measured: Any) -> Decision:
        xs = _numbers(measured, "the measured value")
        gaps = [abs(x - self.value) for x in xs]
        worst = xs[max(range(len(xs)), key=gaps.__getitem__)]
        allowed = self.tolerance * (abs(self.value) if self.relative else 1.0)
        verdict = max(gaps) <= allowed
        return Decision(verdict, worst, fmt(worst), {"largest_gap": max(gaps)})

    def text(self) -> str:
        how = (
            f"{fmt(self.tolerance)} x |{fmt(self.value)}|" if self.relative else fmt(self.tolerance)
        )
        return f"within {how} of {fmt(self.value)}"


@dataclass(frozen=True)
class AtMost(Rule):
    """At most ``bound`` (``strict``: below it); an array is decided by its largest element."""

    bound: float
    strict: bool = False

    def decide(self, measured: Any) -> Decision:
        worst = max(_numbers(measured, "the measured value"))
        verdict = worst < self.bound if self.strict else worst <= self.bound
        return Decision(verdict, worst, fmt(worst))

    def text(self) -> str:
        return f"{'<' if self.strict else '<='} {fmt(self.bound)}"


@dataclass(frozen=True)
class AtLeast(Rule):
    """At least ``bound`` (``strict``: above it); an array is decided by its smallest element."""

    bound: float
    strict: bool = False

    def decide(self, measured: Any) -> Decision:
        worst = min(_numbers(measured, "the measured value"))
        verdict = worst > self.bound if self.strict else worst >= self.bound
        return Decision(verdict, worst, fmt(worst))

    def text(self) -> str:
        return f"{'>' if self.strict else '>='} {fmt(self.bound)}"


# -------------------------------------------------------------------------------------------------
# Rules decided with uncertainty
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error, measured over ``n`` independent draws (a Monte Carlo over
    many prompts, where the chapter's library computes the standard error), for the mean rules."""

    mean: float
    se: float
    n: int


def _interval(measured: Any, level: float, critical: float | None, what: str):
    """``(mean, se, n, half-width, values)`` of values per seed or of an :class:`Estimate`."""
    if isinstance(measured, Estimate):
        mean = _number(measured.mean, f"{what}: the estimate's mean")
        se = _number(measured.se, f"{what}: the estimate's standard error")
        n = int(measured.n)
        if se < 0 or n < 2:
            raise BadMeasurement(f"{what}: an estimate needs se >= 0 and n >= 2, got {measured}")
        values = None
    else:
        values = _values(measured, what)
        mean, se, n = stats.mean_and_se(values)
    t = critical if critical is not None else stats.t_critical(n - 1, level)
    return mean, se, n, t * se, values


def _level_text(level: float, critical: float | None) -> str:
    return f"{fmt(critical)} se" if critical is not None else f"{level:.0%} t-interval"


def _seeds_needed(mean: float, sd: float, boundary: float, level: float, most: int = 1000):
    """The fewest values whose interval (same mean and spread) would clear ``boundary``, or None
    if none up to ``most`` would (the mean sits on the boundary). Student's t exceeds the normal
    quantile ``z`` at every size, so no count below ``(z sd / gap)^2`` can do it: the search
    starts there."""
    gap = abs(mean - boundary)
    if gap == 0:
        return None
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    start = max(2, math.floor((z * sd / gap) ** 2)) if sd > 0 else 2
    if start > most:
        return None
    for n in range(start, most + 1):
        if stats.t_critical(n - 1, level) * sd / math.sqrt(n) < gap:
            return n
    return None


def _mean_decision(verdict, mean, *, se, n, half, values, boundaries, level, critical) -> Decision:
    extra: dict[str, Any] = {"se": se, "n": n, "interval": [mean - half, mean + half]}
    if values is not None:
        extra["values"] = values
    if verdict is None and values is not None and critical is None:
        sd = se * math.sqrt(n)
        needs = [_seeds_needed(mean, sd, b, level) for b in boundaries]
        needs = [k for k in needs if k is not None]
        if needs:
            extra["seeds_to_decide"] = min(needs)
    return Decision(verdict, mean, f"{fmt(mean)} ± {fmt(se)} (n = {n})", extra)


@dataclass(frozen=True)
class MeanAbove(Rule):
    """The mean is above ``threshold``: True when its interval lies above, False when it lies
    below, undecided while it straddles. ``level``: the interval's confidence (Student's t with
    n - 1 degrees of freedom); ``critical``: a fixed number of standard errors instead (for an
    :class:`Estimate` over many draws)."""

    threshold: float
    level: float = 0.95
    critical: float | None = None
    statistical: ClassVar[bool] = True
    can_be_undecided: ClassVar[bool] = True

    def decide(self, measured: Any) -> Decision:
        mean, se, n, half, values = _interval(measured, self.level, self.critical, "the values")
        verdict = _fixed(mean - self.threshold, half)
        return _mean_decision(
            verdict,
            mean,
            se=se,
            n=n,
            half=half,
            values=values,
            boundaries=[self.threshold],
            level=self.level,
            critical=self.critical,
        )

    def text(self) -> str:
        return f"mean > {fmt(self.threshold)} ({_level_text(self.level, self.critical)})"


@dataclass(frozen=True)
class MeanBelow(Rule):
    """The mean is below ``threshold`` (as :class:`MeanAbove`, the other way)."""

    threshold: float
    level: float = 0.95
    critical: float | None = None
    statistical: ClassVar[bool] = True
    can_be_undecided: ClassVar[bool] = True

    def decide(self, measured: Any) -> Decision:
        mean, se, n, half, values = _interval(measured, self.level, self.critical, "the values")
        verdict = _fixed(self.threshold - mean, half)
        return _mean_decision(
            verdict,
            mean,
            se=se,
            n=n,
            half=half,
            values=values,
            boundaries=[self.threshold],
            level=self.level,
            critical=self.critical,
        )

    def text(self) -> str:
        return f"mean < {fmt(self.threshold)} ({_level_text(self.level, self.critical)})"


def _fixed(effect: float, half: float) -> bool | None:
    """True when ``effect`` exceeds 0 by more than ``half``, False when it is below 0 by more,
    else None."""
    if effect - half > 0:
        return True
    if effect + half < 0:
        return False
    return None


@dataclass(frozen=True)
class MeanInBand(Rule):
    """The mean lies in ``[low, high]``: True when its whole interval does, False when the
    interval misses the band, undecided otherwise. :func:`MeanWithin` builds the band around a
    target (a source's number, with a margin fixed in advance)."""

    low: float
    high: float
    level: float = 0.95
    critical: float | None = None
    label: str = ""
    statistical: ClassVar[bool] = True
    can_be_undecided: ClassVar[bool] = True

    def __post_init__(self):
        if not self.low < self.high:
            raise ValueError(f"a band needs low < high, got [{self.low}, {self.high}]")

    def decide(self, measured: Any) -> Decision:
        mean, se, n, half, values = _interval(measured, self.level, self.critical, "the values")
        lo, hi = mean - half, mean + half
        if self.low <= lo and hi <= self.high:
            verdict = True
        elif hi < self.low or lo > self.high:
            verdict = False
        else:
            verdict = None
        return _mean_decision(
            verdict,
            mean,
            se=se,
            n=n,
            half=half,
            values=values,
            boundaries=[self.low, self.high],
            level=self.level,
            critical=self.critical,
        )

    def text(self) -> str:
        band = self.label or f"[{fmt(self.low)}, {fmt(self.high)}]"
        return f"mean in {band} ({_level_text(self.level, self.critical)})"


def MeanWithin(  # noqa: N802 - reads as a rule, like the classes
    target: float, margin: float, level: float = 0.95, critical: float | None = None
) -> MeanInBand:
    """The mean within ``margin`` of ``target``: :class:`MeanInBand` on ``target ± margin``."""
    if not margin > 0:
        raise ValueError(f"parameter 'margin' = {margin} is not allowed: expected > 0")
    return MeanInBand(
        target - margin, target + margin, level, critical, label=f"{fmt(target)} ± {fmt(margin)}"
    )


@dataclass(frozen=True)
class DifferenceAbove(Rule):
    """mean(a) - mean(b) exceeds ``margin``: measured as a pair ``(a, b)`` of value lists, one
    value per seed each, decided by the interval of the difference (Welch's t; ``paired``: the
    t-interval of the differences seed by seed, which needs lists of equal length)."""

    margin: float = 0.0
    paired: bool = False
    level: float = 0.95
    statistical: ClassVar[bool] = True
    can_be_undecided: ClassVar[bool] = True

    def decide(self, measured: Any) -> Decision:
        if (
            isinstance(measured, (str, bytes))
            or not isinstance(measured, Sequence)
            or len(measured) != 2
        ):
            raise BadMeasurement(
                f"a difference needs a pair (a, b) of value lists, not {measured!r}"
            )
        a = _values(measured[0], "the values of a")
        b = _values(measured[1], "the values of b")
        if self.paired:
            if len(a) != len(b):
                raise BadMeasurement(f"paired lists differ in length: {len(a)} and {len(b)}")
            mean, se, n = stats.mean_and_se([x - y for x, y in zip(a, b)])
            half = stats.t_critical(n - 1, self.level) * se
        else:
            ma, sa, na = stats.mean_and_se(a)
            mb, sb, nb = stats.mean_and_se(b)
            mean, se, n = ma - mb, math.hypot(sa, sb), min(na, nb)
            df = stats.welch_df(sa, na, sb, nb)
            half = stats.t_critical(df, self.level) * se
        verdict = _fixed(mean - self.margin, half)
        extra = {"se": se, "n": [len(a), len(b)], "interval": [mean - half, mean + half]}
        extra["values"] = [a, b]
        return Decision(verdict, mean, f"{fmt(mean)} ± {fmt(se)} (n = {len(a)}, {len(b)})", extra)

    def text(self) -> str:
        how = "paired" if self.paired else "Welch"
        return f"mean(a) - mean(b) > {fmt(self.margin)} ({self.level:.0%} {how} t-interval)"


@dataclass(frozen=True)
class Trend(Rule):
    """The means of a sweep go one way (``"increasing"`` or ``"decreasing"``): measured as one
    value list per point of the sweep, in order; each step is decided by Welch's t
    (:func:`companions.stats.monotone`): True when every step goes that way beyond its
    uncertainty, False when one step goes the other way beyond it, else undecided."""

    direction: str
    level: float = 0.95
    statistical: ClassVar[bool] = True
    can_be_undecided: ClassVar[bool] = True

    def __post_init__(self):
        if self.direction not in ("increasing", "decreasing"):
            raise ValueError(
                f"parameter 'direction' = {self.direction!r} is not allowed: "
                "expected 'increasing' or 'decreasing'"
            )

    def decide(self, measured: Any) -> Decision:
        if isinstance(measured, (str, bytes)) or not isinstance(measured, Sequence):
            raise BadMeasurement(f"a trend needs one value list per point, not {measured!r}")
        if len(measured) < 2:
            raise BadMeasurement(f"a trend needs two points or more, got {len(measured)}")
        if all(isinstance(g, Estimate) for g in measured):
            return self._decide_estimates(list(measured))
        groups = [_values(g, f"point {i} of the sweep") for i, g in enumerate(measured)]
        verdict = stats.monotone(groups, self.direction == "decreasing", self.level)
        means = [stats.mean_and_se(g)[0] for g in groups]
        return Decision(verdict, means, " → ".join(fmt(m) for m in means), {"values": groups})

    def _decide_estimates(self, points: list[Estimate]) -> Decision:
        """Independent estimates (a Monte Carlo per point): each step by Welch's t on the two
        means and their standard errors."""
        verdicts = []
        for a, b in zip(points, points[1:]):
            effect = (b.mean - a.mean) if self.direction == "increasing" else (a.mean - b.mean)
            se = math.hypot(a.se, b.se)
            if se == 0:
                verdicts.append(None if effect == 0 else effect > 0)
                continue
            df = stats.welch_df(a.se, a.n, b.se, b.n)
            verdicts.append(_fixed(effect, stats.t_critical(df, self.level) * se))
        means = [p.mean for p in points]
        shown = " → ".join(f"{fmt(p.mean)} ± {fmt(p.se)}" for p in points)
        return Decision(stats.all_of(verdicts), means, shown, {"se": [p.se for p in points]})

    def text(self) -> str:
        return f"means {self.direction} at every step ({self.level:.0%} Welch t per step)"


@dataclass(frozen=True)
class WithinErrors(Rule):
    """Monte Carlo estimates agree with their exact values: every row ``(estimate, se, exact)``
    has ``|estimate - exact| <= k se``. ``k`` allows for the many rows compared at once."""

    k: float = 4.0
    statistical: ClassVar[bool] = True

    def decide(self, measured: Any) -> Decision:
        if hasattr(measured, "tolist"):
            measured = measured.tolist()
        rows = list(measured) if isinstance(measured, Sequence) else None
        if not rows or any(not isinstance(r, Sequence) or len(r) != 3 for r in rows):
            raise BadMeasurement(f"expected rows (estimate, se, exact), not {measured!r}")
        zs = []
        for i, (est, se, exact) in enumerate(rows):
            est, se, exact = (_number(v, f"row {i}") for v in (est, se, exact))
            if se <= 0:
                raise BadMeasurement(f"row {i} has a standard error {se}: it must be positive")
            zs.append((est - exact) / se)
        worst = max(zs, key=abs)
        return Decision(abs(worst) <= self.k, worst, f"|z| = {abs(worst):.2f}", {"rows": len(zs)})

    def text(self) -> str:
        return f"|estimate - exact| <= {fmt(self.k)} se in every row"


@dataclass(frozen=True)
class InCentralRange(Rule):
    """A source's number is a plausible draw of the statistic it reports: measured as many
    independent draws of that statistic (a 10-trial mean, drawn again and again), True when
    ``value`` lies in their central ``coverage`` range (the 5-95 % quantiles for 0.9)."""

    value: float
    coverage: float = 0.9
    statistical: ClassVar[bool] = True

    def __post_init__(self):
        if not 0 < self.coverage < 1:
            raise ValueError(f"parameter 'coverage' = {self.coverage} is not allowed: (0, 1)")

    def decide(self, measured: Any) -> Decision:
        draws = sorted(_values(measured, "the draws", at_least=20))
        tail = (1 - self.coverage) / 2
        lo, hi = _quantile(draws, tail), _quantile(draws, 1 - tail)
        mean = sum(draws) / len(draws)
        verdict = lo <= self.value <= hi
        return Decision(
            verdict,
            mean,
            f"mean {fmt(mean)}, central range [{fmt(lo)}, {fmt(hi)}]",
            {"range": [lo, hi], "draws": len(draws)},
        )

    def text(self) -> str:
        return f"{fmt(self.value)} in the central {self.coverage:.0%} of the draws"


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, linear between order statistics (numpy's default)."""
    pos = q * (len(sorted_values) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(sorted_values) - 1)
    return sorted_values[i] + (sorted_values[j] - sorted_values[i]) * (pos - i)


@dataclass(frozen=True)
class Every(Rule):
    """``rule`` in every case: measured as ``{case: value}``; False if any case is False, else
    undecided if any is undecided, else True."""

    rule: Rule

    @property
    def statistical(self) -> bool:  # type: ignore[override]
        return self.rule.statistical

    @property
    def can_be_undecided(self) -> bool:  # type: ignore[override]
        return self.rule.can_be_undecided

    def decide(self, measured: Any) -> Decision:
        if not isinstance(measured, Mapping) or not measured:
            raise BadMeasurement(f"expected a non-empty dict {{case: value}}, not {measured!r}")
        decisions = {}
        for case, value in measured.items():
            try:
                decisions[str(case)] = self.rule.decide(value)
            except BadMeasurement as exc:
                raise BadMeasurement(f"case {case!r}: {exc}") from None
        verdict = stats.all_of(d.verdict for d in decisions.values())
        observed = {case: d.observed for case, d in decisions.items()}
        shown = "; ".join(f"{case}: {d.shown}" for case, d in decisions.items())
        extra = {"cases": {case: dict(d.extra) for case, d in decisions.items() if d.extra}}
        needs = [d.extra.get("seeds_to_decide") for d in decisions.values()]
        needs = [k for k in needs if k]
        if verdict is None and needs:
            extra["seeds_to_decide"] = max(needs)
        return Decision(verdict, observed, shown, extra)

    def text(self) -> str:
        return f"in every case: {self.rule.text()}"


def _counts(value: Any, what: str) -> tuple[int, int]:
    """``(successes, trials)``: whole counts, ``0 <= successes <= trials``, ``trials >= 1``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise BadMeasurement(f"{what} must be a pair (successes, trials), not {value!r}")
    s, n = (_number(v, what) for v in value)
    if s != int(s) or n != int(n) or not 0 <= s <= n or n < 1:
        raise BadMeasurement(f"{what} must be whole counts 0 <= successes <= trials, got {value!r}")
    return int(s), int(n)


@dataclass(frozen=True)
class RatioOfProportions(Rule):
    """The ratio ``p_a / p_b`` of two binomial proportions lies in ``[low, high]`` (``high`` may
    be ``inf``): measured as a pair ``((successes_a, trials_a), (successes_b, trials_b))`` of
    independent counts, decided by the ``level`` interval of the ratio by Katz's log method,
    ``log(p_a / p_b) +- z sqrt(1/s_a - 1/n_a + 1/s_b - 1/n_b)`` (when a success count is 0, every
    success count gets 0.5 and every trial count 1, Haldane's correction): True when the interval
    lies in the band, False when it misses it, undecided while it straddles an end."""

    low: float
    high: float = math.inf
    level: float = 0.95
    statistical: ClassVar[bool] = True
    can_be_undecided: ClassVar[bool] = True

    def __post_init__(self):
        if not 0 <= self.low < self.high:
            raise ValueError(f"a band needs 0 <= low < high, got [{self.low}, {self.high}]")
        if not 0 < self.level < 1:
            raise ValueError(f"parameter 'level' = {self.level} is not allowed: (0, 1)")

    def decide(self, measured: Any) -> Decision:
        pairs = not isinstance(measured, (str, bytes)) and isinstance(measured, Sequence)
        if not pairs or len(measured) != 2:
            raise BadMeasurement(f"a ratio needs two pairs (successes, trials), not {measured!r}")
        (sa, na), (sb, nb) = _counts(measured[0], "arm a"), _counts(measured[1], "arm b")
        fa, ta, fb, tb = float(sa), float(na), float(sb), float(nb)
        if sa == 0 or sb == 0:
            fa, ta, fb, tb = fa + 0.5, ta + 1, fb + 0.5, tb + 1
        ratio = (fa / ta) / (fb / tb)
        z = NormalDist().inv_cdf(0.5 + self.level / 2)
        half = z * math.sqrt(1 / fa - 1 / ta + 1 / fb - 1 / tb)
        lo, hi = ratio * math.exp(-half), ratio * math.exp(half)
        if self.low <= lo and hi <= self.high:
            verdict = True
        elif hi < self.low or lo > self.high:
            verdict = False
        else:
            verdict = None
        extra = {"interval": [lo, hi], "counts": [[sa, na], [sb, nb]]}
        shown = f"{fmt(ratio)} [{fmt(lo)}, {fmt(hi)}] ({sa}/{na} against {sb}/{nb})"
        return Decision(verdict, ratio, shown, extra)

    def text(self) -> str:
        band = (
            f">= {fmt(self.low)}"
            if math.isinf(self.high)
            else f"in [{fmt(self.low)}, {fmt(self.high)}]"
        )
        return f"p_a / p_b {band} ({self.level:.0%} Katz log interval)"


@dataclass(frozen=True)
class OnlyRefutes(Rule):
    """A search or a construction can refute a statement, never confirm it: ``rule`` (the
    statement, as the source makes it) decides as usual, but where it would confirm it, the claim
    stays undecided. An erratum found by a search: a counterexample ``differs``; no
    counterexample is ``inconclusive``, not ``reproduced``."""

    rule: Rule
    can_be_undecided: ClassVar[bool] = True

    @property
    def statistical(self) -> bool:  # type: ignore[override]
        return self.rule.statistical

    def decide(self, measured: Any) -> Decision:
        inner = self.rule.decide(measured)
        verdict = False if inner.verdict is False else None
        return Decision(verdict, inner.observed, inner.shown, inner.extra)

    def text(self) -> str:
        return f"{self.rule.text()}; refutable only (no search confirms it)"


@dataclass(frozen=True)
class Undecided:
    """Recorded in place of a measurement when this run cannot decide the claim at all (its
    parameters are not those the claim is about, or too few seeds reached the state it needs):
    the claim is ``inconclusive``, with ``reason``. It is shown as such in the summary."""

    reason: str

    def __post_init__(self):
        if not str(self.reason).strip():
            raise ValueError("Undecided needs a reason")


# -------------------------------------------------------------------------------------------------
# The declaration
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Amendment:
    """A rule (or a preset) replaced after its claim was published: the date (ISO), the earlier
    rule (a :class:`Rule`, which the ledger decides too where the measured value fits it, or its
    text), and the reason."""

    date: str
    previous: Rule | str
    reason: str

    def record(self) -> dict:
        text = self.previous.text() if isinstance(self.previous, Rule) else str(self.previous)
        return {"date": self.date, "previous": text, "reason": self.reason}


@dataclass(frozen=True)
class Claim:
    """A registered claim.

    - ``id``: unique within its chapter; ``source``: the source's own name of the result
      ("Theorem 8.14", "Table 2"), or "this book";
    - ``kind``: one of :data:`KINDS`; ``statistic``: what is measured, in words;
    - ``rule``: the :class:`Rule` that decides it, with its numbers;
    - ``could_fail``: what a false statement or a plausible bug would make the run show;
    - ``decides``: for a rule that can be undecided, the scale (or compute) that would decide it;
    - ``amended``: earlier rules, each an :class:`Amendment`.
    """

    id: str
    source: str
    kind: str
    statistic: str
    rule: Rule
    could_fail: str
    decides: str = ""
    amended: tuple[Amendment, ...] = ()

    def __post_init__(self):
        where = f"claim {self.id!r}"
        if not self.id or not isinstance(self.id, str):
            raise ValueError(f"a claim needs an id, not {self.id!r}")
        if self.kind not in KINDS:
            raise ValueError(f"{where}: kind {self.kind!r} is not one of {KINDS}")
        if not isinstance(self.rule, Rule):
            raise ValueError(f"{where}: its rule must be a companions.claims rule")
        for name in ("source", "statistic", "could_fail"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"{where}: '{name}' is empty; a claim must say it")
        if self.kind in ("identity", "bound") and self.rule.statistical:
            raise ValueError(
                f"{where}: an {self.kind} holds or fails; its rule cannot be one decided with "
                "uncertainty (a Monte Carlo check is a prediction or a reproduction)"
            )
        if self.rule.can_be_undecided and not self.decides.strip():
            raise ValueError(
                f"{where}: its rule can be undecided, so 'decides' must name the scale or "
                "compute that would decide it"
            )
        if not isinstance(self.amended, tuple) or not all(
            isinstance(a, Amendment) for a in self.amended
        ):
            raise ValueError(f"{where}: 'amended' must be a tuple of Amendment")

    def status(self, verdict: bool | None) -> str:
        """The status a verdict gives this claim (:func:`status_of`)."""
        return status_of(self.kind, self.rule, verdict)


def status_of(kind: str, rule: Rule, verdict: bool | None) -> str:
    """``holds`` / ``fails`` for identities, bounds and predictions with an exact rule;
    ``reproduced`` / ``differs`` / ``inconclusive`` for the rest (a rule decided with uncertainty,
    a reproduction, an erratum)."""
    checked = kind in ("identity", "bound") or (kind == "prediction" and not rule.statistical)
    if checked:
        if verdict is None:  # pragma: no cover - Claim refuses such a rule for these kinds
            raise ValueError(f"a {kind} with an exact rule cannot be undecided")
        return "holds" if verdict else "fails"
    if verdict is None:
        return "inconclusive"
    return "reproduced" if verdict else "differs"


def check_registry(chapter_id: str, claims: Sequence[Claim]) -> tuple[Claim, ...]:
    """The claims of a chapter, validated: each a :class:`Claim`, ids unique."""
    claims = tuple(claims)
    seen = set()
    for claim in claims:
        if not isinstance(claim, Claim):
            raise ValueError(f"chapter {chapter_id!r}: {claim!r} is not a registered Claim")
        if claim.id in seen:
            raise ValueError(f"chapter {chapter_id!r} registers claim {claim.id!r} twice")
        seen.add(claim.id)
    return claims
