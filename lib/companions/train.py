"""The training loop shared by chapters: progress bar, loss history, optional early stop.

Every long loop of the library goes through :func:`progress` (its text progress bar). Setting the
environment variable ``COMPANIONS_DRY_RUN`` to a number ``n`` >= 1 makes it a *dry run*: each loop
that :func:`progress` tracks stops after its first ``n`` iterations, while everything else (sample
draws, evaluation, exact checks) runs at the chapter's size. Running a ``paper`` preset this way on
a CPU checks its shapes, memory and device placement in seconds; its claims are not findings, so
the ledger of a dry run says so (``dry_run`` in the ledger, see :mod:`companions.ledger`), a
failing check does not stop it, and the book's pages leave it out. :func:`dry_run_loops` lists the
loops it cut, with their planned and run iterations and time.

Setting ``COMPANIONS_DRY_RUN_LOOPS`` to ``k`` as well *ends* the dry run when its ``k``-th
outermost tracked loop has run its steps: every open ledger is written as it stands
(the callbacks of :func:`on_dry_run_end`: the ledger's, its ``dry_run`` marked ``ended``) and
:class:`DryRunEnded`
is raised, which ``python -m companions run`` counts as a run that ended where it was told to. The
cells before that point run at the chapter's size, so a ``paper`` preset's data, model and first
training steps are checked in seconds even where its later cells take minutes on a CPU.

A real run records its tracked loops too (:func:`tracked_loops`, written to the ledger as
``loops``): the loops a dry run would have run, with the time of their first step as well as of
all of them, so that :func:`first_step_estimate` can say what a dry run's extrapolation
(:func:`extrapolated_seconds`) would have predicted for a run whose time is known.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
from tqdm.std import tqdm  # plain text bars: tqdm.auto needs ipywidgets in a notebook

#: A dry run's environment variable: the steps each tracked loop keeps (:func:`dry_run_steps`).
DRY_RUN_ENV = "COMPANIONS_DRY_RUN"
#: Ends a dry run after this many outermost tracked loops (:func:`dry_run_loop_limit`).
DRY_RUN_LOOPS_ENV = "COMPANIONS_DRY_RUN_LOOPS"

_LOOPS: list[dict] = []
#: Called, in order, when a dry run ends early: each returns what it wrote (the ledger registers
#: the writing of every open ledger, :func:`companions.ledger.write_open`).
_ON_END: list = []


def on_dry_run_end(callback) -> None:
    """Call ``callback()`` when a dry run ends after its first tracked loops (once per callback;
    what it returns, a list of paths, is named in :class:`DryRunEnded`)."""
    if callback not in _ON_END:
        _ON_END.append(callback)


_STATE = {"ended": False, "outermost_done": 0}  # a dry run's end (COMPANIONS_DRY_RUN_LOOPS)


class DryRunEnded(Exception):
    """A dry run ended after its first tracked loops, as ``$COMPANIONS_DRY_RUN_LOOPS`` asked."""


def _env_count(name: str, what: str, unset: str) -> int | None:
    """The count in the environment variable ``name``, or None when it is unset, empty or ``0``."""
    text = os.environ.get(name, "").strip()
    if text in ("", "0"):
        return None
    if not text.isdigit():
        raise ValueError(
            f"environment variable {name} = {text!r} is not allowed: "
            f"expected a number of {what} >= 1 (or 0 / unset: {unset})"
        )
    return int(text)


def dry_run_steps() -> int | None:
    """The iterations each tracked loop keeps in a dry run (``$COMPANIONS_DRY_RUN``), or None
    when this is not a dry run (unset, empty or ``0``)."""
    return _env_count(DRY_RUN_ENV, "steps", "no dry run")


def dry_run_loop_limit() -> int | None:
    """After how many outermost tracked loops a dry run ends (``$COMPANIONS_DRY_RUN_LOOPS``), or
    None: unset, empty or ``0``, or not a dry run (:func:`dry_run_steps` is None)."""
    if dry_run_steps() is None:
        return None
    return _env_count(DRY_RUN_LOOPS_ENV, "loops", "run every loop")


def dry_run_ended() -> bool:
    """Whether this process's dry run has ended (:class:`DryRunEnded` was raised)."""
    return _STATE["ended"]


def dry_run_loops() -> list[dict]:
    """The loops :func:`progress` cut in this process's dry run, in the order they started:
    ``desc``, ``planned`` and ``run`` iterations, the wall and CPU ``seconds`` / ``cpu_seconds``
    spent in the iterations run (their bodies included), the same of the first iteration alone
    (``first_seconds`` / ``first_cpu_seconds``, absent when none ran), and ``parent``: the index
    in this list of the tracked loop it ran inside, or None."""
    return [dict(loop) for loop in _LOOPS]


def tracked_loops() -> list[dict]:
    """The tracked loops of this process, as :func:`dry_run_loops` gives them. In a real run,
    those a dry run would also have run: every outermost loop, and each loop started during the
    *first* iteration of a loop listed (later iterations' inner loops are timed only as part of
    their parent). Their ``run``, ``seconds`` and ``cpu_seconds`` are then those of the whole loop.
    """
    return dry_run_loops()


_ACTIVE: list[int] = []  # indices in _LOOPS of the tracked loops running now, innermost last
_UNLISTED = -1  # in _ACTIVE: a real run's loop that tracked_loops leaves out


def _timed(iterable: Iterable, record: dict, index: int):
    """Yield from ``iterable``, adding to ``record`` the iterations and the seconds they took
    (each iteration's loop body included: it runs while this generator is suspended), and the
    seconds of the first iteration alone."""
    start, cpu = time.perf_counter(), time.process_time()
    _ACTIVE.append(index)
    try:
        for item in iterable:
            yield item
            record["run"] += 1
            if record["run"] == 1:
                record["first_seconds"] = round(time.perf_counter() - start, 4)
                record["first_cpu_seconds"] = round(time.process_time() - cpu, 4)
    finally:
        if index in _ACTIVE:
            _ACTIVE.remove(index)
        record["seconds"] = round(record["seconds"] + time.perf_counter() - start, 4)
        record["cpu_seconds"] = round(record["cpu_seconds"] + time.process_time() - cpu, 4)
    if record["parent"] is None:  # an outermost loop that ran all its steps (not broken off)
        _STATE["outermost_done"] += 1
        limit = dry_run_loop_limit()
        if limit is not None and _STATE["outermost_done"] >= limit:
            _end_dry_run(limit)


def _end_dry_run(limit: int):
    """Write every open ledger as it stands (:func:`on_dry_run_end`), then raise
    :class:`DryRunEnded`."""
    _STATE["ended"] = True
    written = [path for callback in _ON_END for path in callback()]
    raise DryRunEnded(
        f"the dry run ends after its first {limit} tracked loop(s) ({DRY_RUN_LOOPS_ENV}={limit}); "
        f"ledger(s) written: {', '.join(str(p) for p in written) or 'none'}"
    )


def extrapolated_seconds(total: float, loops: list[dict], key: str = "seconds") -> float:
    """A run's time had every loop of a dry run gone its ``planned`` length: ``total`` (the dry
    run's time, wall or CPU as ``key`` says) with each outermost loop's time replaced by its
    iterations' mean time times ``planned``, where an iteration's time counts each inner loop at
    its own extrapolated length. The first iterations often cost more than later ones (warm-up,
    a log at step 0), so this tends to overestimate."""

    def full(i: int) -> float:
        loop = loops[i]
        children = [j for j, c in enumerate(loops) if c.get("parent") == i]
        if not loop["run"] or loop["planned"] is None:
            return loop[key]
        own = loop[key] - sum(loops[j][key] for j in children)
        return loop["planned"] * (own + sum(full(j) for j in children)) / loop["run"]

    top = [i for i, loop in enumerate(loops) if loop.get("parent") is None]
    return total - sum(loops[i][key] for i in top) + sum(full(i) for i in top)


def first_step_estimate(total: float, loops: list[dict], key: str = "seconds") -> float:
    """What a one-step dry run's extrapolation (:func:`extrapolated_seconds`) would predict for a
    real run that took ``total`` (wall or CPU seconds, as ``key`` says) and tracked ``loops``
    (:func:`tracked_loops`): each outermost loop's measured time is replaced by its planned
    iterations times the time of its first iteration, where that first iteration's inner loops
    count at their own first-step estimate. Set beside ``total``, it shows how far the
    extrapolation of the paper dry runs can be trusted at the scales that do run to the end.
    A loop of unknown length, or that ran no iteration, counts as measured."""
    first_key = f"first_{key}"

    def estimate(i: int) -> float:
        loop = loops[i]
        if not loop["run"] or loop["planned"] is None or first_key not in loop:
            return loop[key]
        children = [j for j, c in enumerate(loops) if c.get("parent") == i]
        own = loop[first_key] - sum(loops[j][key] for j in children)
        return loop["planned"] * (own + sum(estimate(j) for j in children))

    top = [i for i, loop in enumerate(loops) if loop.get("parent") is None]
    return total - sum(loops[i][key] for i in top) + sum(estimate(i) for i in top)


def progress(iterable: Iterable, desc: str = "", disable: bool = False, **options) -> tqdm:
    """A text progress bar over ``iterable`` (tqdm's, with ``desc``, ``disable`` and any other
    tqdm ``options``), the one every long loop of the library uses.

    In a dry run (:func:`dry_run_steps`) the loop stops after its first ``n`` iterations and is
    recorded in :func:`dry_run_loops`; otherwise it runs every iteration, as
    ``tqdm(iterable, ...)`` would, and is timed into :func:`tracked_loops`."""
    try:
        planned = len(iterable)  # type: ignore[arg-type]
    except TypeError:
        planned = None
    steps = dry_run_steps()
    if steps is None:
        return _tracked_bar(iterable, planned, desc, disable, options)
    if isinstance(iterable, range):
        kept: Iterable = iterable[:steps]
    else:
        kept = itertools.islice(iterable, steps)
    total = (
        len(kept) if isinstance(kept, range) else None if planned is None else min(planned, steps)
    )
    record = _new_record(desc, planned, _ACTIVE[-1] if _ACTIVE else None)
    options.setdefault("total", total)
    timed = _timed(kept, record, len(_LOOPS) - 1)
    bar = _TimedBar(timed, desc=f"{desc} (dry run)", disable=disable, **options)
    bar.timed = timed
    return bar


def _tracked_bar(
    iterable: Iterable, planned: int | None, desc: str, disable: bool, options: dict
) -> tqdm:
    """A real run's bar over ``iterable`` (of ``planned`` iterations, None if unknown): tqdm's,
    timed into :func:`tracked_loops` where a dry run would have run the loop, else only marked
    as running (so its inner loops are left out)."""
    parent = _ACTIVE[-1] if _ACTIVE else None
    listed = parent is None or (parent != _UNLISTED and _LOOPS[parent]["run"] == 0)
    options.setdefault("total", planned)
    if listed:
        record = _new_record(desc, planned, parent)
        timed = _timed(iterable, record, len(_LOOPS) - 1)
    else:
        timed = _marked(iterable)
    bar = _TimedBar(timed, desc=desc, disable=disable, **options)
    bar.timed = timed
    return bar


def _new_record(desc: str, planned: int | None, parent: int | None) -> dict:
    """A new loop's entry, appended to ``_LOOPS`` (its index: ``len(_LOOPS) - 1``)."""
    record = {
        "desc": desc,
        "planned": planned,
        "run": 0,
        "seconds": 0.0,
        "cpu_seconds": 0.0,
        "parent": parent,
    }
    _LOOPS.append(record)
    return record


def _marked(iterable: Iterable):
    """Yield from ``iterable`` with :data:`_UNLISTED` on top of ``_ACTIVE`` meanwhile."""
    _ACTIVE.append(_UNLISTED)
    try:
        yield from iterable
    finally:
        if _UNLISTED in _ACTIVE:
            _ACTIVE.reverse()
            _ACTIVE.remove(_UNLISTED)  # the innermost one: this loop's
            _ACTIVE.reverse()


class _TimedBar(tqdm):
    """A timed loop's bar: closing it ends its timing too, even after a ``break``."""

    timed = None

    def close(self):
        if self.timed is not None:
            self.timed.close()
        super().close()


_progress = progress  # fit's own argument 'progress' shadows the function


@dataclass
class History:
    """Per-step records of a run: ``steps``, ``loss`` and any extra metrics the step returned."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    stopped_early: bool = False

    def record(self, step: int, loss: float, **metrics: float) -> None:
        self.steps.append(step)
        self.loss.append(loss)
        for k, v in metrics.items():
            self.metrics.setdefault(k, []).append(float(v))


def fit(
    loss_fn: Callable[[int], torch.Tensor | tuple[torch.Tensor, dict]],
    parameters,
    *,
    steps: int,
    lr: float = 1e-2,
    optimizer: str = "adam",
    log_every: int = 10,
    stop_below: float | None = None,
    desc: str = "training",
    progress: bool = True,
) -> History:
    """Minimise ``loss_fn(step)`` over ``parameters`` for ``steps`` steps.

    ``loss_fn`` draws its own batch for the given step (so runs are reproducible from a seeded
    generator) and returns the loss, or ``(loss, metrics_dict)``. The loss is recorded every
    ``log_every`` steps and at the last step. Stops early when the loss drops below
    ``stop_below``; a non-finite loss raises ``FloatingPointError`` naming the step.
    """
    if steps < 1:
        raise ValueError(f"parameter 'steps' = {steps!r} is not allowed: expected an integer >= 1")
    if lr <= 0:
        raise ValueError(f"parameter 'lr' = {lr!r} is not allowed: expected a real number > 0")
    params = list(parameters)
    optimizers = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}
    if optimizer not in optimizers:
        raise ValueError(
            f"parameter 'optimizer' = {optimizer!r} is not allowed: "
            f"expected one of {sorted(optimizers)}"
        )
    opt = optimizers[optimizer](params, lr=lr)
    history = History()
    bar = _progress(range(steps), desc=desc, disable=not progress, mininterval=0.5)
    for step in bar:
        opt.zero_grad(set_to_none=True)
        out = loss_fn(step)
        loss, metrics = out if isinstance(out, tuple) else (out, {})
        value = float(loss.detach())
        if not math.isfinite(value):
            bar.close()
            raise FloatingPointError(
                f"loss became {value} at step {step}: lower 'lr' or check the model"
            )
        loss.backward()
        opt.step()
        last = step == steps - 1
        if step % log_every == 0 or last or (stop_below is not None and value < stop_below):
            history.record(step, value, **metrics)
            bar.set_postfix(loss=f"{value:.3g}", refresh=False)
        if stop_below is not None and value < stop_below:
            history.stopped_early = True
            break
    bar.close()
    return history
