"""Scale presets and parameter validation for every chapter.

Each topic subpackage declares its chapters in its ``chapters`` module with
:func:`register_chapter`; :func:`chapters` imports ``companions.<topic>.chapters`` for every topic
in :data:`TOPICS`, an explicit list, and nothing else (never the book's machinery).

A chapter resolves its parameters with :func:`preset`, which merges the preset of the requested
scale with the reader's overrides and validates every value: a bad value raises a ``ValueError``
that names the parameter, its value and what is allowed.
"""

from __future__ import annotations

import importlib
import numbers
import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

SCALES = ("smoke", "default", "paper")
DEVICES = ("auto", "cpu", "cuda")
#: Environment variable that replaces the default scale of every chapter (jupyter-book cannot
#: pass notebook parameters, so a build picks its scale this way).
SCALE_ENV = "BOOK_SCALE"


def _fail(name: str, value: Any, allowed: str) -> None:
    raise ValueError(f"parameter {name!r} = {value!r} is not allowed: expected {allowed}")


@dataclass(frozen=True)
class Int:
    """An integer in ``[low, high]`` (either end may be ``None``)."""

    low: int | None = None
    high: int | None = None
    doc: str = ""

    def describe(self) -> str:
        return "an integer" + _range_text(self.low, self.high)

    def validate(self, name: str, value: Any) -> int:
        if isinstance(value, bool) or not (
            isinstance(value, numbers.Integral) or _is_integral(value)
        ):
            _fail(name, value, self.describe())
        value = int(value)
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            _fail(name, value, self.describe())
        return value


@dataclass(frozen=True)
class Float:
    """A finite real number in ``[low, high]``; ``low_open``/``high_open`` exclude an end."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    doc: str = ""

    def describe(self) -> str:
        return "a real number" + _range_text(self.low, self.high, self.low_open, self.high_open)

    def validate(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            _fail(name, value, self.describe())
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            _fail(name, value, self.describe())
        too_low = self.low is not None and (
            value <= self.low if self.low_open else value < self.low
        )
        too_high = self.high is not None and (
            value >= self.high if self.high_open else value > self.high
        )
        if too_low or too_high:
            _fail(name, value, self.describe())
        return value


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of strings."""

    options: tuple[str, ...]
    doc: str = ""

    def describe(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def validate(self, name: str, value: Any) -> str:
        if value not in self.options:
            _fail(name, value, self.describe())
        return value


@dataclass(frozen=True)
class ListOf:
    """A non-empty list whose every item satisfies ``item`` (an :class:`Int` or :class:`Float`)."""

    item: Int | Float
    min_len: int = 1
    max_len: int | None = None
    doc: str = ""

    def describe(self) -> str:
        size = f"at least {self.min_len}" + (f" and at most {self.max_len}" if self.max_len else "")
        return f"a list of {size} items, each {self.item.describe()}"

    def validate(self, name: str, value: Any) -> tuple:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            _fail(name, value, self.describe())
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            _fail(name, value, self.describe())
        return tuple(self.item.validate(f"{name}[{i}]", v) for i, v in enumerate(value))


def _is_integral(value: Any) -> bool:
    """True for a real number with no fractional part (``4.0`` is accepted as ``4``)."""
    return isinstance(value, numbers.Real) and float(value).is_integer()


def _range_text(low, high, low_open=False, high_open=False) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" {'>' if low_open else '>='} {low}"
    if low is None:
        return f" {'<' if high_open else '<='} {high}"
    return f" in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"


Spec = Int | Float | Choice | ListOf


@dataclass(frozen=True)
class Chapter:
    """A chapter of the book: its id, notebook, parameter specs and presets per scale.

    ``claims`` are the chapter's registered claims (:class:`companions.claims.Claim`), declared
    before the chapter decides them; its ledger decides each from what the chapter measured.

    ``checks`` are cross-parameter constraints: callables taking the resolved parameter dict and
    returning an error message (naming the parameter) or ``None``. ``snap`` moves a point between
    the presets (:func:`between`) to the nearest one the checks accept (a prime, a multiple): it
    takes the parameter dict and the point's ``t``, returns the moved copy, and leaves each preset
    as it is.
    """

    id: str
    title: str
    notebook: str  # path relative to the repository root
    params: Mapping[str, Spec]
    presets: Mapping[str, Mapping[str, Any]]
    checks: tuple = ()
    snap: Callable[[dict, float], dict] | None = None
    claims: tuple = ()

    def __post_init__(self):
        from companions.claims import check_registry

        object.__setattr__(self, "claims", check_registry(self.id, self.claims))
        missing = [s for s in SCALES if s not in self.presets]
        if missing:
            raise ValueError(f"chapter {self.id!r} has no preset for scale(s) {missing}")
        for scale, values in self.presets.items():
            unknown = set(values) - set(self.params)
            absent = set(self.params) - set(values)
            if unknown or absent:
                raise ValueError(
                    f"chapter {self.id!r}, preset {scale!r}: "
                    f"unknown {sorted(unknown)}, missing {sorted(absent)}"
                )


_REGISTRY: dict[str, Chapter] = {}
_TOPIC: dict[str, str] = {}  # chapter id -> the topic whose chapters module declared it


def register_chapter(chapter: Chapter) -> Chapter:
    """Declare a chapter (called at import time by its topic's ``chapters`` module, which is
    remembered as the chapter's topic: :func:`topic_of`)."""
    import sys

    existing = _REGISTRY.get(chapter.id)
    if existing is not None and existing != chapter:
        raise ValueError(f"chapter id {chapter.id!r} is declared twice")
    _REGISTRY[chapter.id] = chapter
    caller = sys._getframe(1).f_globals.get("__name__", "")
    parts = caller.split(".")
    if len(parts) == 3 and parts[0] == "companions" and parts[2] == "chapters":
        _TOPIC[chapter.id] = parts[1]
    return chapter


#: The topic subpackages, in the order of the book's parts. Discovery imports
#: ``companions.<topic>.chapters`` for each of them, and nothing else.
TOPICS = (
    "emergence",
    "gradient_features",
    "fourier",
    "looped",
    "icl_scale",
    "contrastive",
    "fine_labels",
    "domain_generalization",
    "universality",
    "gemfilter",
)

_DISCOVERED = False


def chapters() -> dict[str, Chapter]:
    """All chapters declared by the topics of :data:`TOPICS`, by id (imported once)."""
    global _DISCOVERED
    if not _DISCOVERED:
        for topic in TOPICS:
            importlib.import_module(f"companions.{topic}.chapters")
        _DISCOVERED = True
    return dict(sorted(_REGISTRY.items()))


def topic_of(chapter_id: str) -> str:
    """The topic (a name of :data:`TOPICS`) whose ``chapters`` module declares the chapter."""
    chapters()
    if chapter_id not in _TOPIC:
        raise ValueError(f"chapter {chapter_id!r} is declared by no topic of {TOPICS}")
    return _TOPIC[chapter_id]


def chapter_pages() -> dict[str, Chapter]:
    """The book's declared chapters by page (notebook path without ``.md``); chapters whose id
    starts with ``_`` (test fixtures) are left out."""
    return {
        chapter.notebook.removesuffix(".md"): chapter
        for chapter in chapters().values()
        if not chapter.id.startswith("_")
    }


def get_chapter(chapter_id: str) -> Chapter:
    known = chapters()
    if chapter_id not in known:
        raise ValueError(f"chapter {chapter_id!r} is not known: expected one of {sorted(known)}")
    return known[chapter_id]


def resolve_scale(scale: str | None) -> str:
    """``None`` means: ``$BOOK_SCALE`` if set, otherwise ``'default'``."""
    if scale is None:
        scale = os.environ.get(SCALE_ENV) or "default"
        if scale not in SCALES:
            raise ValueError(
                f"environment variable {SCALE_ENV} = {scale!r} is not allowed: "
                f"expected one of {SCALES}"
            )
    if scale not in SCALES:
        _fail("scale", scale, "one of " + ", ".join(repr(s) for s in SCALES))
    return scale


class Config(Mapping):
    """Resolved, validated, read-only parameters of one chapter run (attribute and key access)."""

    def __init__(self, chapter: str, scale: str, values: Mapping[str, Any]):
        object.__setattr__(self, "_data", MappingProxyType(dict(values)))
        object.__setattr__(self, "chapter", chapter)
        object.__setattr__(self, "scale", scale)

    def __getitem__(self, key):
        return self._data[key]

    def __getattr__(self, key):
        if key.startswith("_"):  # copy/pickle probe private names before _data exists
            raise AttributeError(key)
        try:
            return self._data[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        raise AttributeError("Config is read-only")

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self._data.items())
        return f"Config({self.chapter!r}, scale={self.scale!r}, {body})"

    def summary(self, runtime: str) -> str:
        """One Markdown sentence for a chapter's opening cell: the scale, ``runtime`` (the
        runtime's ``describe()``) and every knob of :meth:`params`, lists joined by commas."""
        knobs = "; ".join(
            f"`{k}` = {', '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in self.params().items()
        )
        return f"Scale `{self.scale}`; {runtime}. Parameters: {knobs}."

    def params(self) -> dict:
        """The chapter's own knobs as plain JSON-friendly values (for the ledger)."""
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in self._data.items()
            if k not in ("device", "seed", "ledger_dir")
        }


COMMON = {
    "device": Choice(DEVICES, doc="'auto' picks CUDA where present"),
    "seed": Int(0, 2**31 - 1, doc="seed of every random draw"),
}


def preset(chapter_id: str, scale: str | None = None, **overrides: Any) -> Config:
    """Parameters of ``chapter_id`` at ``scale``, with ``overrides`` applied and validated.

    Overrides equal to ``None`` are ignored, so a notebook can pass its whole parameters cell
    (where ``None`` means "take the preset"). Returns a read-only :class:`Config`.
    """
    chapter = get_chapter(chapter_id)
    scale = resolve_scale(scale)
    specs = {**COMMON, **chapter.params}
    unknown = sorted(set(overrides) - set(specs) - {"ledger_dir"})
    if unknown:
        raise ValueError(
            f"parameter(s) {unknown} not known to chapter {chapter_id!r}: "
            f"expected some of {sorted(specs)}"
        )
    values = {"device": "auto", "seed": 0, **chapter.presets[scale]}
    values.update({k: v for k, v in overrides.items() if v is not None and k != "ledger_dir"})
    resolved = {name: specs[name].validate(name, values[name]) for name in specs}
    for check in chapter.checks:
        message = check(resolved)
        if message:
            raise ValueError(message)
    if overrides.get("ledger_dir") is not None:
        resolved["ledger_dir"] = str(overrides["ledger_dir"])
    return Config(chapter_id, scale, resolved)


#: The first line of the cell papermill injects after a notebook's ``parameters`` cell.
PAPERMILL_MARK = "# Parameters"
#: The parameters every chapter's ``parameters`` cell sets itself.
COMMON_CELL = ("scale", "device", "seed", "ledger_dir")


def injected_parameters(namespace: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The chapter's knobs that papermill injected (``papermill -p NAME VALUE``, or ``python -m
    companions run CHAPTER -p NAME VALUE``), for :func:`preset`: the names its injected cell
    assigns, but for the four every parameters cell sets (:data:`COMMON_CELL`), with their values
    in ``namespace`` (the notebook's globals; by default IPython's user namespace). Outside a
    kernel, or when nothing was injected, ``{}``.

    The injected cell is found in the kernel's input history: it is the cell run just before the
    one calling this (papermill puts it right after the parameters cell), and it starts with
    papermill's mark, ``# Parameters``. A chapter's parameters cell names only the four common
    parameters, so each knob is written once, in the chapter's declaration; a name that is not a
    knob of the chapter reaches :func:`preset`, which names it in its error."""
    import ast

    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the package
        return {}
    shell = get_ipython()
    if shell is None:
        return {}
    history = shell.user_ns.get("_ih") or []
    if len(history) < 2:
        return {}
    source = history[-2]  # the last entry is the cell running now
    if not source.lstrip().startswith(PAPERMILL_MARK):
        return {}
    namespace = shell.user_ns if namespace is None else namespace
    names = []
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign):
            names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return {n: namespace[n] for n in names if n not in COMMON_CELL and n in namespace}


def toward(start: float, end: float, t: float) -> float:
    """``start`` at ``t = 0``, ``end`` at ``t = 1``: geometric between two positive numbers (so a
    size grows by the same factor over each equal step of ``t``), linear otherwise."""
    if t == 0 or start == end:
        return start
    if t == 1:
        return end
    if start > 0 and end > 0:
        return start * (end / start) ** t
    return start + (end - start) * t


def _read_at(values: Sequence, j: int, n: int) -> float:
    """Item ``j`` of ``n`` evenly spaced positions along ``values`` (the first at its first item,
    the last at its last), read between its neighbours with :func:`toward`."""
    if n == 1 or len(values) == 1:
        return values[0]
    i, rest = divmod(j * (len(values) - 1), n - 1)
    if rest == 0:
        return values[i]
    return toward(values[i], values[i + 1], rest / (n - 1))


def between(chapter_id: str, t: float) -> dict[str, Any]:
    """The parameters of ``chapter_id`` a fraction ``t`` of the way from its ``default`` preset
    (``t = 0``) to its ``paper`` preset (``t = 1``), validated; used to time a chapter at sizes
    between the two (``python -m companions law``).

    - A number moves geometrically where both ends are positive (:func:`toward`), else linearly;
      an :class:`Int` is rounded.
    - A list's length moves the same way (rounded); its items are read at evenly spaced positions
      along the default list and along the paper list, and moved between the two. Integer items
      are rounded, and a repeated one is dropped.
    - A :class:`Choice` keeps its default value until ``t = 1``.
    - Last, the chapter's :attr:`Chapter.snap` moves the point to the nearest one it accepts.

    If a run's cost is a product of powers of its parameters, its logarithm is linear in ``t``
    along this path. Both ends give the presets themselves. A point the chapter does not accept
    (a check of its own, a rounded value out of range) raises the ``ValueError`` of
    :func:`preset`, which names the parameter.
    """
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or not 0 <= t <= 1:
        _fail("t", t, "a real number in [0, 1]")
    chapter = get_chapter(chapter_id)
    start, end = chapter.presets["default"], chapter.presets["paper"]
    values: dict[str, Any] = {}
    for name, spec in chapter.params.items():
        a, b = start[name], end[name]
        if isinstance(spec, Choice):
            values[name] = b if t == 1 else a
        elif isinstance(spec, ListOf):
            n = round(toward(len(a), len(b), t))
            items = [toward(_read_at(a, j, n), _read_at(b, j, n), t) for j in range(n)]
            if isinstance(spec.item, Int):
                items = list(dict.fromkeys(round(v) for v in items))
            values[name] = items
        elif isinstance(spec, Int):
            values[name] = round(toward(a, b, t))
        else:
            values[name] = toward(a, b, t)
    if chapter.snap is not None:
        values = chapter.snap(dict(values), t)
    preset(chapter_id, "default", **values)
    return values


def nearest_int(value: int, accepts: Callable[[int], bool], low: int = 1) -> int:
    """The integer nearest ``value``, at least ``low``, that ``accepts`` takes (the smaller of two
    as near), searched up to ``10 max(value, low) + 99`` away, else ``ValueError``; for
    :attr:`Chapter.snap`."""
    for step in range(10 * max(value, low) + 100):
        for candidate in (value - step, value + step):
            if candidate >= low and accepts(candidate):
                return candidate
    raise ValueError(f"no integer near {value} (at least {low}) is accepted")


def is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0
