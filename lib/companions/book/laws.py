"""A chapter's time at three sizes, and the law fitted to them (``python -m companions law``).

The paper presets are sized for a GPU, and most would take hours on a 2-core CPU. Rather than guess
their time from one step (the dry runs of ``tests/book/test_paper_dry_run.py``), :func:`measure`
runs a chapter to its end at a few points of the path from its ``default`` preset (``t = 0``) to
its ``paper`` preset (``t = 1``) that :func:`companions.scale.between` defines, and :func:`fit`
fits ``log(CPU seconds) = a + b t`` to them by least squares. If the chapter's cost is a product of
powers of its parameters, that law is exact, and ``exp(a + b)`` is its time at paper scale.

Two numbers say how far to trust it, both computed from the runs:

- ``held_out``: the law fitted to all points but the largest, evaluated at the largest, over its
  measured time (1 is a perfect extrapolation over that stretch of the path);
- ``paper``: where the law predicts a paper run within ``paper_under`` seconds, :func:`measure`
  runs the paper preset too, and records its CPU time beside the prediction; a run that goes on
  past :data:`PAPER_LIMIT` times ``paper_under`` seconds is stopped and recorded as such
  (``stopped_after``).

The records are JSON files in :data:`LAW_DIR`, one per chapter, with the machine, its speed
(:func:`reference_seconds`), the date and the commit they were measured on; the page "What each
scale costs" reads them. They are measured offline (a record takes minutes to hours), never by CI.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator, Sequence

from companions import scale as scale_mod

#: Where the records live, relative to the repository root.
LAW_DIR = Path("book") / "data" / "scaling-laws"
#: The sizes measured when none are given: the default preset and two points past it (sizes
#: about 1.1 to 1.6 times the default ones at ``t = 0.1`` for most chapters).
DEFAULT_POINTS = (0.0, 0.05, 0.1)
#: A paper run (``paper_under``) is stopped after this many times ``paper_under`` seconds (wall),
#: and recorded as stopped: the law was wrong by more than that.
PAPER_LIMIT = 2.0
#: Threads per chapter: CI runs two chapters at a time with one thread each, so a record made
#: with one thread compares with the page's other times.
DEFAULT_THREADS = 1


def fit(ts: Sequence[float], seconds: Sequence[float]) -> dict:
    """Least-squares fit of ``log(seconds) = a + b t``; at least three points, at two sizes or
    more, every time positive.

    Returns ``a``, ``b``, ``paper_seconds`` (``exp(a + b)``, the law at ``t = 1``), ``factor``
    (``exp(b)``: how many times longer the paper preset runs than the default one, by the law),
    ``rms_log_residual`` and ``held_out`` (see the module's docstring)."""
    ts, seconds = [float(t) for t in ts], [float(s) for s in seconds]
    if len(ts) != len(seconds):
        raise ValueError(f"{len(ts)} sizes but {len(seconds)} times")
    if len(ts) < 3:
        raise ValueError(f"parameter 'points' = {ts} is not allowed: expected at least 3 sizes")
    if len(set(ts)) < 2:
        raise ValueError(f"parameter 'points' = {ts} is not allowed: expected two sizes or more")
    if min(seconds) <= 0:
        raise ValueError(f"times {seconds} are not allowed: expected positive seconds")
    a, b = _line(ts, [math.log(s) for s in seconds])
    residuals = [math.log(s) - (a + b * t) for t, s in zip(ts, seconds)]
    last = max(range(len(ts)), key=ts.__getitem__)
    rest = [i for i in range(len(ts)) if i != last]
    held_out = None
    if len({ts[i] for i in rest}) >= 2:
        a_rest, b_rest = _line([ts[i] for i in rest], [math.log(seconds[i]) for i in rest])
        held_out = math.exp(a_rest + b_rest * ts[last]) / seconds[last]
    return {
        "a": a,
        "b": b,
        "paper_seconds": math.exp(a + b),
        "factor": math.exp(b),
        "rms_log_residual": math.sqrt(sum(r * r for r in residuals) / len(residuals)),
        "held_out": held_out,
    }


def _line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Intercept and slope of the least-squares line through ``(x, y)``."""
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((u - mx) ** 2 for u in x)
    slope = sum((u - mx) * (v - my) for u, v in zip(x, y)) / sxx
    return my - slope * mx, slope


def check_points(chapter_id: str, points: Sequence[float]) -> list[dict]:
    """The parameters at each point (:func:`companions.scale.between`), every one validated before
    anything runs; a bad point raises ``ValueError`` naming it."""
    if len(points) < 3:
        raise ValueError(
            f"parameter 'points' = {list(points)} is not allowed: expected at least 3 sizes"
        )
    if len(set(points)) != len(points):
        raise ValueError(f"parameter 'points' = {list(points)} is not allowed: a size repeats")
    found = []
    for t in points:
        try:
            found.append(scale_mod.between(chapter_id, t))
        except ValueError as err:
            raise ValueError(f"chapter {chapter_id!r} at t = {t}: {err}") from None
    return found


@contextlib.contextmanager
def _threads(threads: int) -> Iterator[None]:
    """Set the kernels' thread count (they inherit the environment), and put it back."""
    saved = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    os.environ.update({v: str(threads) for v in saved})
    try:
        yield
    finally:
        for variable, value in saved.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value


@contextlib.contextmanager
def _runs_folder(threads: int) -> Iterator[Path]:
    """A temporary folder for the runs' notebooks and ledgers, with the kernels' threads set."""
    with _threads(threads), tempfile.TemporaryDirectory(prefix="companions-law-") as tmp:
        yield Path(tmp)


def _law_allows_paper(law: dict, paper_under: float | None) -> bool:
    """Whether the paper preset is run: ``paper_under`` is given and the law's paper-scale time
    is at most that."""
    return paper_under is not None and law["paper_seconds"] <= paper_under


def _run(
    chapter_id: str, scale: str, params: dict | None, out: Path, limit: float | None = None
) -> dict | None:
    """Run the chapter to its end on the CPU; its ledger, or ``None`` where it was stopped after
    ``limit`` seconds (wall). A claim that fails at this size still gives a whole run's time (the
    ledger is written before the check raises); any other stop is an error."""
    from jupyter_client import KernelManager

    from companions.book.cli import KERNEL, ChapterExecutionError, execute_chapter

    kernel = KernelManager(kernel_name=KERNEL)
    timer = None if limit is None else threading.Timer(limit, kernel.interrupt_kernel)
    try:
        if timer is not None:
            timer.start()
        _, ledger_path = execute_chapter(
            chapter_id, scale, out, device="cpu", params=params, progress=False, kernel=kernel
        )
    except ChapterExecutionError as err:
        if timer is not None and timer.finished.is_set() and err.ename == "KeyboardInterrupt":
            return None
        if err.ename != "ClaimFailed" or not err.ledger_path.is_file():
            raise
        ledger_path = err.ledger_path
    finally:
        if timer is not None:
            timer.cancel()
        if kernel.has_kernel:
            kernel.shutdown_kernel(now=True)
    return json.loads(ledger_path.read_text())


#: Steps of the reference workload (:func:`reference_seconds`).
REFERENCE_STEPS = 1000

_REFERENCE_SCRIPT = """
import time
import torch
torch.manual_seed(0)
x, y = torch.randn(256, 64), torch.randn(256, 1)
net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
def step():
    opt.zero_grad()
    ((net(x) - y) ** 2).mean().backward()
    opt.step()
for _ in range(20):
    step()
best = float("inf")
for _ in range(3):
    start = time.process_time()
    for _ in range({steps}):
        step()
    best = min(best, time.process_time() - start)
print(best)
"""


def reference_seconds(threads: int, steps: int = REFERENCE_STEPS) -> float:
    """CPU seconds of ``steps`` Adam steps of a small float32 network (256 rows, 64 -> 256 -> 1;
    the best of three), in a fresh Python with ``threads`` threads, as the runs' kernels have.
    Machines that describe themselves alike have differed twofold in speed between sessions; this
    number, kept with a record, says how fast its machine was."""
    with _threads(threads):
        done = subprocess.run(
            [sys.executable, "-c", _REFERENCE_SCRIPT.format(steps=steps)],
            capture_output=True,
            text=True,
            check=True,
        )
    return float(done.stdout.strip())


def _point(t: float | str, led: dict) -> dict:
    return {
        "t": t,
        "cpu_seconds": led["cpu_seconds"],
        "wall_seconds": led["wall_seconds"],
        "peak_memory_mb": led["peak_memory_mb"],
        "params": led["params"],
    }


def _commit(root: Path) -> str | None:
    """The commit the runs were made on (``-dirty`` after it where tracked files had changed)."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=7"],
            cwd=root,
            capture_output=True,
            text=True,
        )
    except OSError:  # pragma: no cover (no git)
        return None
    return done.stdout.strip() or None


def measure(
    chapter_id: str,
    points: Sequence[float] = DEFAULT_POINTS,
    threads: int = DEFAULT_THREADS,
    paper_under: float | None = None,
    progress: bool = True,
) -> dict:
    """Run ``chapter_id`` to its end at each point of ``points`` (on the CPU, ``threads`` threads),
    fit the law (:func:`fit`) to their CPU times, and, where the law's paper time is at most
    ``paper_under`` seconds, run the paper preset too. Returns the record :func:`save` writes.
    Every point is validated first (:func:`check_points`)."""
    from tqdm.auto import tqdm

    from companions.book.cli import repository_root
    from companions.book.costs import machine

    _refuse_bad_settings(threads, paper_under)
    params = check_points(chapter_id, points)
    commit = _commit(repository_root())  # before the runs: the code they ran
    reference = reference_seconds(threads)
    runs = []
    with _runs_folder(threads) as tmp:
        for i in tqdm(range(len(points)), desc=f"{chapter_id}: sizes", disable=not progress):
            led = _run(chapter_id, "default", params[i], tmp / str(i))
            runs.append(_point(points[i], led))
        law = fit([r["t"] for r in runs], [r["cpu_seconds"] for r in runs])
        paper = None
        if _law_allows_paper(law, paper_under):
            paper = _paper_run(chapter_id, paper_under, tmp / "paper")
    return {
        "chapter": chapter_id,
        "measured": datetime.date.today().isoformat(),
        "commit": commit,
        "machine": machine(),
        "threads": threads,
        "reference_seconds": reference,
        "runs": runs,
        "law": law,
        "paper_under": paper_under,
        "paper": paper,
    }


def _refuse_bad_settings(
    threads: int, paper_under: float | None, paper_required: bool = False
) -> None:
    """Refuse, naming the parameter, a dry run, ``threads`` below 1 and a ``paper_under`` that is
    not positive (or missing, where ``paper_required``: ``None`` is :func:`measure`'s "no paper
    run")."""
    from companions import ledger as ledger_mod

    if os.environ.get(ledger_mod.DRY_RUN_ENV):
        raise ValueError(
            f"${ledger_mod.DRY_RUN_ENV} is set: the runs would stop after one step of each loop, "
            "and their times would not be a whole run's; unset it"
        )
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"parameter 'threads' = {threads!r} is not allowed: expected >= 1")
    if paper_under is None and not paper_required:
        return
    if paper_under is None or not paper_under > 0:
        raise ValueError(
            f"parameter 'paper_under' = {paper_under!r} is not allowed: expected seconds > 0"
        )


def _paper_run(chapter_id: str, paper_under: float, out: Path) -> dict:
    """The paper preset run to its end, or stopped after :data:`PAPER_LIMIT` × ``paper_under``
    seconds (wall)."""
    limit = PAPER_LIMIT * paper_under
    led = _run(chapter_id, "paper", None, out, limit=limit)
    return {"t": "paper", "stopped_after": limit} if led is None else _point("paper", led)


def measure_paper(record: dict, paper_under: float) -> dict:
    """``record`` with its paper run made again under a new ``paper_under`` (with the record's
    threads), where its law predicts at most that many CPU seconds; the sizes' runs and the law
    are kept, and the paper run carries its own date and commit. For a paper run that a smaller
    ``paper_under`` stopped, or never made."""
    from companions.book.cli import repository_root

    _refuse_bad_settings(record["threads"], paper_under, paper_required=True)
    if not _law_allows_paper(record["law"], paper_under):
        raise ValueError(
            f"parameter 'paper_under' = {paper_under:g} is not allowed for "
            f"{record['chapter']!r}: its law predicts {record['law']['paper_seconds']:.3g} CPU s "
            "at paper scale, more than that"
        )
    commit = _commit(repository_root())
    reference = reference_seconds(record["threads"])
    with _runs_folder(record["threads"]) as tmp:
        paper = _paper_run(record["chapter"], paper_under, tmp)
    paper.update(
        measured=datetime.date.today().isoformat(), commit=commit, reference_seconds=reference
    )
    return {**record, "paper_under": paper_under, "paper": paper}


def law_dir() -> Path:
    """Where the records are kept: :data:`LAW_DIR` under the repository root (found above the
    package, else above the current folder)."""
    from companions.book.cli import repository_root

    return repository_root() / LAW_DIR


def _record_path(chapter_id: str, folder: str | os.PathLike | None) -> Path:
    """``<folder>/<chapter_id>.json``, ``folder`` by default :func:`law_dir`."""
    return _folder(folder) / f"{chapter_id}.json"


def _folder(folder: str | os.PathLike | None) -> Path:
    return Path(folder) if folder is not None else law_dir()


def save(record: dict, folder: str | os.PathLike | None = None) -> Path:
    """Write ``record`` to ``<folder>/<chapter>.json`` (default :func:`law_dir`), atomically."""
    from companions.ledger import write_json_atomically

    return write_json_atomically(_record_path(record["chapter"], folder), record)


def load_one(chapter_id: str, folder: str | os.PathLike | None = None) -> dict | None:
    """The record of ``chapter_id`` in ``folder`` (default :func:`law_dir`), or ``None``."""
    path = _record_path(chapter_id, folder)
    return json.loads(path.read_text()) if path.is_file() else None


def load(folder: str | os.PathLike | None = None) -> dict[str, dict]:
    """Every record in ``folder`` (default :func:`law_dir`), by chapter."""
    folder = _folder(folder)
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        found[record["chapter"]] = record
    return found


def range_comparison(narrow: dict[str, dict], wide: dict[str, dict]) -> str:
    """For every chapter with a paper run in both sets of records, law / measured at paper scale
    from each, with the largest ``t`` each law was fitted over: whether measuring further along
    the path brings the law nearer the paper run. A run stopped at its limit gives a bound: law /
    measured was below law / (the seconds it had run)."""
    rows = []
    for chapter in sorted(set(narrow) & set(wide)):
        ratios = []
        for record in (narrow[chapter], wide[chapter]):
            paper, law = record.get("paper"), record["law"]["paper_seconds"]
            if paper is None:
                break
            top = max(r["t"] for r in record["runs"])
            if "stopped_after" in paper:
                ratios.append(f"below {law / paper['stopped_after']:.2f}, stopped (t ≤ {top:g})")
            else:
                ratios.append(f"{law / paper['cpu_seconds']:.2f} (t ≤ {top:g})")
        if len(ratios) == 2:
            rows.append(f"`{chapter}` {ratios[0]} → {ratios[1]}")
    if not rows:
        return "No chapter has a paper run in both sets of records."
    return "At paper scale, law / measured, fitted over the narrow and the wide range: " + (
        "; ".join(rows) + "."
    )


def law_text(law: dict) -> str:
    """A fitted law as ``CPU s ≈ A × F^t``."""
    return f"{_number(math.exp(law['a']))} × {_number(law['factor'])}^t"


def _number(value: float) -> str:
    """Three significant digits below 100, whole numbers below a million, else powers of ten."""
    if value < 100:
        return f"{value:.3g}"
    return f"{value:.0f}" if value < 1e6 else f"{value:.2e}"


def law_table(records: dict[str, dict], dry: dict[str, dict], order: list[str]) -> str:
    """One row per chapter with a record: the sizes and CPU seconds measured, the law, its
    paper-scale time, the held-out check, the paper run where one was made, and beside them the
    paper time the chapter's dry run extrapolated from its first steps
    (:func:`companions.book.costs.dry_run_estimate`)."""
    from companions.book.costs import _duration, dry_run_estimate_text

    rows = [
        "| chapter | t | CPU s at each t | law (CPU s) | paper, by the law | held out ¹ "
        "| paper, measured | paper, first-step estimate | measured on |",
        "|---|---|---|---|--:|--:|--:|--:|---|",
    ]
    for chapter in order:
        record = records.get(chapter)
        if record is None:
            continue
        runs, law, paper = record["runs"], record["law"], record.get("paper")
        held = "–" if law["held_out"] is None else f"{law['held_out']:.2f}"
        measured = "–"
        if paper is not None and "stopped_after" in paper:
            measured = f"stopped after {_duration(paper['stopped_after'])} wall"
        elif paper is not None:
            ratio = law["paper_seconds"] / paper["cpu_seconds"]
            measured = f"{_duration(paper['cpu_seconds'])} (law / measured {ratio:.2f})"
        estimate = dry_run_estimate_text(dry[chapter]) if chapter in dry else "–"
        sizes = ", ".join(f"{r['t']:g}" for r in runs)
        times = ", ".join(f"{r['cpu_seconds']:.0f}" for r in runs)
        rows.append(
            f"| {chapter} | {sizes} | {times} | {law_text(law)} "
            f"| {_duration(law['paper_seconds'])} | {held} | {measured} | {estimate} "
            f"| {_measured_on(record)} |"
        )
    return "\n".join(rows)


def _measured_on(record: dict) -> str:
    """The record's date, commit and reference seconds (:func:`reference_seconds`, where it has
    them), and its paper run's where ``--paper-only`` made it later and they differ."""

    def when(part: dict) -> str:
        text = f"{part['measured']}, {part.get('commit') or '?'}"
        if part.get("reference_seconds") is not None:
            text += f", reference {part['reference_seconds']:.2f} s"
        return text

    paper = record.get("paper") or {}
    if paper.get("measured") is None or when(paper) == when(record):
        return when(record)
    return f"{when(record)}; paper run {when(paper)}"


def law_summary(records: dict[str, dict]) -> str:
    """What the records say about the laws themselves: the range of the held-out ratios, and for
    each paper run made, law / measured (or, for a run stopped at its limit, how many times the
    law's prediction it had run by then)."""
    if not records:
        return "No record yet."
    held = sorted(r["law"]["held_out"] for r in records.values() if r["law"]["held_out"])
    parts = [f"{len(records)} chapter(s) have a record."]
    if held:
        parts.append(
            f"Held out, the law fitted to the smaller sizes predicts the largest within "
            f"{held[0]:.2f}–{held[-1]:.2f} times its measured time."
        )
    paper = [
        (chapter, r["law"]["paper_seconds"], r["paper"])
        for chapter, r in sorted(records.items())
        if r.get("paper") is not None
    ]
    runs = [
        f"`{chapter}` {law / p['cpu_seconds']:.2f}"
        for chapter, law, p in paper
        if "stopped_after" not in p
    ]
    stopped = [
        f"`{chapter}` (still running after {p['stopped_after'] / law:.1f} times the law's time)"
        for chapter, law, p in paper
        if "stopped_after" in p
    ]
    limits = sorted({r["paper_under"] for r in records.values() if r.get("paper_under")})
    if limits:
        parts.append(
            "A paper run was made where the law predicted at most "
            + " or ".join(f"{limit:g}" for limit in limits)
            + " CPU s (`--paper-under`), and stopped if still running after "
            + f"{PAPER_LIMIT:g} times that."
        )
    if paper:
        low = sum("stopped_after" in p or law < p["cpu_seconds"] for _, law, p in paper)
        parts.append(f"The law was too low in {low} of the {len(paper)} paper run(s) made.")
    if runs:
        parts.append("At paper scale, law / measured: " + ", ".join(runs) + ".")
    if stopped:
        parts.append("Paper runs stopped at their limit: " + ", ".join(stopped) + ".")
    return " ".join(parts)


def without_law(records: dict[str, dict], order: list[str], points=DEFAULT_POINTS) -> str:
    """A Markdown list of the chapters without a record, each with why: the error
    :func:`check_points` gives at ``points`` (a size the chapter does not accept), else that no
    record was made."""
    lines = []
    for chapter in order:
        if chapter in records:
            continue
        try:
            check_points(chapter, points)
        except ValueError as err:
            lines.append(f"- `{chapter}`: the path is blocked: {err}")
        else:
            lines.append(
                f"- `{chapter}`: no record made yet (`python -m companions law {chapter}`)"
            )
    return "\n".join(lines)


#: Markers of the runs, cycled with the colours so that 20 chapters or more stay apart (the star
#: and the triangle mark paper runs).
_MARKERS = "osDvPX"


def law_figure(records: dict[str, dict], order: list[str]):
    """CPU seconds against ``t`` on a log axis: each chapter's runs (markers), its law extended to
    ``t = 1`` (line, dashed past the largest size measured) and its paper run where one was made
    (star; a triangle at the wall time after which a paper run was stopped)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.8))
    colours = plt.get_cmap("tab20").colors
    for i, chapter in enumerate([c for c in order if c in records]):
        record = records[chapter]
        runs, law = record["runs"], record["law"]
        colour = colours[i % len(colours)]
        ts = [r["t"] for r in runs]
        ax.plot(
            ts,
            [r["cpu_seconds"] for r in runs],
            _MARKERS[i % len(_MARKERS)],
            color=colour,
            label=chapter,
        )
        last = max(ts)
        for lo, hi, style in ((min(ts), last, "-"), (last, 1.0, "--")):
            grid = [lo + (hi - lo) * step / 20 for step in range(21)]
            ax.plot(
                grid, [math.exp(law["a"] + law["b"] * t) for t in grid], style, color=colour, lw=1
            )
        paper = record.get("paper")
        if paper is not None and "stopped_after" in paper:
            ax.plot([1.0], [paper["stopped_after"]], "^", ms=9, color=colour)
        elif paper is not None:
            ax.plot([1.0], [paper["cpu_seconds"]], "*", ms=12, color=colour)
    ax.set_yscale("log")
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("t  (0: default preset, 1: paper preset)")
    ax.set_ylabel("CPU seconds")
    if records:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
