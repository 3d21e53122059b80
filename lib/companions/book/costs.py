"""What each scale costs: the chapters' times and memory, and which findings survive a larger scale.

Everything here is read from ledgers that runs already wrote (:mod:`companions.ledger`): the
smoke-scale ledgers the tests keep (``$BOOK_SMOKE_LEDGER_DIR``, CI sets it), the default-scale
ledgers of a book build, and the paper presets' dry runs the tests keep
(``$BOOK_DRY_RUN_LEDGER_DIR``): their first steps only, whose times are extrapolated, never
shown as measured paper-scale times. Nothing is typed by hand. Used by the page ``book/costs.md``.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from companions import ledger as ledger_mod

#: The budgets of ``DESIGN.md`` ("Scales"), in seconds per chapter on a 2-core CPU.
BUDGETS = {"smoke": 60.0, "default": 300.0}


def smoke_dir() -> Path:
    """Where the tests kept the smoke ledgers: ``$BOOK_SMOKE_LEDGER_DIR``, else
    ``<root>/_build/smoke-ledger``."""
    if os.environ.get(ledger_mod.SMOKE_LEDGER_ENV):
        return Path(os.environ[ledger_mod.SMOKE_LEDGER_ENV])
    return ledger_mod.root_or_cwd() / "_build" / "smoke-ledger"


#: Where the tests keep the paper presets' dry-run ledgers (tests/book/test_paper_dry_run.py).
DRY_RUN_LEDGER_ENV = "BOOK_DRY_RUN_LEDGER_DIR"


def dry_run_dir() -> Path:
    """Where the tests kept the paper dry runs' ledgers: ``$BOOK_DRY_RUN_LEDGER_DIR``, else
    ``<root>/_build/dry-run-ledger``."""
    if os.environ.get(DRY_RUN_LEDGER_ENV):
        return Path(os.environ[DRY_RUN_LEDGER_ENV])
    return ledger_mod.root_or_cwd() / "_build" / "dry-run-ledger"


def dry_runs(folder: str | os.PathLike | None = None) -> dict[str, dict]:
    """The paper-scale dry-run ledgers in ``folder`` (default :func:`dry_run_dir`) by chapter; a
    ledger there that is not a dry run is ignored."""
    found = ledger_mod.load(folder or dry_run_dir(), dry_runs=True)
    return {
        led["chapter"]: led
        for led in found
        if ledger_mod.is_dry_run(led) and led.get("scale") == "paper"
    }


_STILL_RUNNING = (
    "stopped at 180 s wall, before its first tracked loop had run one step; it was still in {}"
)
#: chapter -> why the test suite does not dry-run its ``paper`` preset: the paper-size work before
#: its first tracked loop has run one step (or that step itself) takes minutes on a CPU. The rule,
#: fixed before any was measured (2026-11-27): a chapter runs in the suite when its dry run to the
#: end of its first loop takes at most half of the suite's timeout (90 s wall). Measured
#: 2026-11-28, one chapter at a time on the 2-core machine, one thread, stopped at 180 s.
#: ``BOOK_PAPER_DRY_RUN=all`` runs these too (tests/book/test_paper_dry_run.py).
NOT_IN_SUITE: dict[str, str] = {
    "gradient-framework": "its sample alone is seeds x n x d = 10 x 200000 x 1000 float64 = "
    "16 GB, twice the memory cap (measured 2026-11-25)",
    "gradient-parities": _STILL_RUNNING.format(
        "the exact margins of the parity ground truths (every k of gt_k, every r of gt_r)"
    ),
    "fourier-max-margin": _STILL_RUNNING.format(
        "the construction report over all p^k = 47^4 inputs, after 31 s of sympy identities "
        "(k up to 7) and 39 s of brute-force checks before it"
    ),
}


def without_dry_run(dry: dict[str, dict], order: list[str]) -> str:
    """A Markdown list of the chapters in ``order`` that have no paper dry-run ledger in ``dry``,
    each with the reason (:data:`NOT_IN_SUITE`, else that this build found none); empty when every
    chapter has one."""
    missing = [c for c in order if c not in dry]
    lines = [
        f"- `{c}`: {NOT_IN_SUITE.get(c, 'no dry-run ledger found in this build')}" for c in missing
    ]
    if not lines:
        return ""
    return (
        f"Not dry-run at the paper scale in this build: {len(missing)} of {len(order)} "
        "chapters.\n\n" + "\n".join(lines)
    )


def _duration(seconds: float | None) -> str:
    """``–``, ``N s`` below an hour, else ``N.N h``."""
    if seconds is None:
        return "–"
    return f"{_cell(seconds)} s" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def paper_dry_run_table(dry: dict[str, dict], order: list[str]) -> str:
    """One row per chapter with a paper dry run: how far it ran, its steps per loop, loops cut, the
    dry run's wall and CPU seconds and peak memory, and the CPU time extrapolated from the first
    steps of each loop (:func:`companions.train.extrapolated_seconds`): of the whole paper run
    where the dry run ran every cell, of the cells up to its end (``≥``, a lower bound on the
    whole run) where it ended after its first loops (``$COMPANIONS_DRY_RUN_LOOPS``), with the
    name of the last loop it ran. :func:`without_dry_run` lists the chapters it leaves out."""
    rows = [
        "| chapter | ran | steps per loop | loops cut | dry run wall s | dry run CPU s "
        "| peak memory MiB | paper CPU time, extrapolated |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for chapter in order:
        led = dry.get(chapter)
        if led is None:
            continue
        record = led["dry_run"]
        outermost = [loop["desc"] for loop in record["loops"] if loop.get("parent") is None]
        ran = (
            f"to the end of loop {record['ends_after_loops']}"
            + (f" ({outermost[-1]})" if outermost and outermost[-1] else "")
            if record.get("ended")
            else "every cell"
        )
        rows.append(
            f"| {chapter} | {ran} | {record['steps']} | {len(record['loops'])} "
            f"| {_cell(_seconds(led))} | {_cell(_seconds(led, 'cpu_seconds'))} "
            f"| {_cell(led.get('peak_memory_mb'))} | {dry_run_estimate_text(led)} |"
        )
    return "\n".join(rows)


def dry_run_estimate(led: dict) -> tuple[float | None, bool]:
    """The paper run's CPU seconds extrapolated from a dry run's first steps
    (:func:`companions.train.extrapolated_seconds`; ``None`` where a time is missing), and whether
    it is only a lower bound (the dry run ended after its first loops)."""
    from companions.train import extrapolated_seconds

    loops = led["dry_run"]["loops"]
    cpu = _seconds(led, "cpu_seconds")
    known = cpu is not None and all("cpu_seconds" in loop for loop in loops)
    estimate = extrapolated_seconds(cpu, loops, "cpu_seconds") if known else None
    return estimate, bool(led["dry_run"].get("ended"))


def dry_run_estimate_text(led: dict) -> str:
    """:func:`dry_run_estimate` as a table cell: ``≥`` before a lower bound."""
    estimate, lower_bound = dry_run_estimate(led)
    return f"{'≥ ' if lower_bound and estimate is not None else ''}{_duration(estimate)}"


#: A run whose tracked loops took less than this share of its CPU time says little about the
#: first-step extrapolation (which only changes the loops' part): :func:`first_step_summary`
#: leaves it out. Fixed before any run was compared.
LOOP_SHARE_MIN = 0.5


def first_step_checks(
    smoke: dict[str, dict], default: dict[str, dict], order: list[str]
) -> list[dict]:
    """For every real run that recorded its tracked loops (``loops``, see
    :func:`companions.train.tracked_loops`): chapter, scale, its measured CPU seconds, the share of
    them spent in tracked loops, and what a one-step dry run would have extrapolated for it
    (:func:`companions.train.first_step_estimate`), the way the paper column above is made."""
    from companions.train import first_step_estimate

    checks = []
    for chapter in order:
        for led in (smoke.get(chapter), default.get(chapter)):
            loops = (led or {}).get("loops")
            cpu = _seconds(led, "cpu_seconds")
            if not loops or cpu is None or not cpu > 0:
                continue
            in_loops = sum(lp["cpu_seconds"] for lp in loops if lp.get("parent") is None)
            checks.append(
                {
                    "chapter": chapter,
                    "scale": led.get("scale"),
                    "measured": cpu,
                    "loop_share": in_loops / cpu,
                    "estimate": first_step_estimate(cpu, loops, "cpu_seconds"),
                }
            )
    return checks


def first_step_table(checks: list[dict]) -> str:
    """:func:`first_step_checks` as a table, the ratio estimate / measured last."""
    rows = [
        "| chapter | scale | CPU s, measured | in tracked loops | CPU s, first-step estimate "
        "| estimate / measured |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for c in checks:
        rows.append(
            f"| {c['chapter']} | {c['scale']} | {_cell(c['measured'])} "
            f"| {100 * c['loop_share']:.0f} % | {_cell(c['estimate'])} "
            f"| {c['estimate'] / c['measured']:.2f} |"
        )
    return "\n".join(rows)


def first_step_summary(checks: list[dict]) -> str:
    """One sentence per scale: the range and median of estimate / measured over the runs whose
    tracked loops took at least :data:`LOOP_SHARE_MIN` of their CPU time."""
    import statistics

    parts = []
    for scale in dict.fromkeys(c["scale"] for c in checks):
        ratios = sorted(
            c["estimate"] / c["measured"]
            for c in checks
            if c["scale"] == scale and c["loop_share"] >= LOOP_SHARE_MIN
        )
        if ratios:
            parts.append(
                f"at {scale} scale, over the {len(ratios)} run(s) whose tracked loops took at "
                f"least {100 * LOOP_SHARE_MIN:.0f} % of their CPU time, estimate / measured goes "
                f"from {ratios[0]:.2f} to {ratios[-1]:.2f} (median {statistics.median(ratios):.2f})"
            )
    if not parts:
        return "No run of this build recorded tracked loops that took most of its time."
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def first_step_figure(checks: list[dict]):
    """The first-step estimate against the measured CPU time of each run, one marker per scale,
    on log axes with the line estimate = measured."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4.2))
    for scale, marker in zip(dict.fromkeys(c["scale"] for c in checks), "os^"):
        mine = [c for c in checks if c["scale"] == scale]
        ax.scatter(
            [c["measured"] for c in mine],
            [c["estimate"] for c in mine],
            marker=marker,
            c=["tab:blue" if c["loop_share"] >= LOOP_SHARE_MIN else "tab:gray" for c in mine],
            label=scale,
        )
    values = [v for c in checks for v in (c["measured"], c["estimate"])]
    if values:
        lo, hi = min(values) / 1.5, max(values) * 1.5
        ax.plot([lo, hi], [lo, hi], "k--", lw=1)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CPU seconds, measured")
    ax.set_ylabel("CPU seconds, first-step estimate")
    if checks:
        ax.legend(title="scale")
    fig.tight_layout()
    return fig


def by_chapter(ledgers: list[dict]) -> dict[str, dict]:
    return {led["chapter"]: led for led in ledgers}


def machine() -> str:
    """One line on the machine these runs were timed on."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (
        f"{os.cpu_count()} CPU core(s){' (' + model + ')' if model else ''}, {gpu}, "
        f"Python {platform.python_version()}, torch {torch.__version__}"
    )


def _seconds(led: dict | None, key: str = "wall_seconds") -> float | None:
    return None if led is None or led.get(key) is None else float(led[key])


def _cell(value: float | None, budget: float | None = None) -> str:
    if value is None:
        return "–"
    text = f"{value:.0f}" if value >= 10 else f"{value:.1f}"
    if budget is not None and value > budget:
        text += " ⚠"
    return text


def build_scale(default: dict[str, dict]) -> str:
    """The scale the build's ledgers were written at (``default`` unless ``$BOOK_SCALE`` said
    otherwise); ``mixed`` if they disagree."""
    scales = {led.get("scale") for led in default.values()}
    return scales.pop() if len(scales) == 1 else "mixed"


def times_table(smoke: dict[str, dict], default: dict[str, dict], order: list[str]) -> str:
    """One row per chapter: wall and CPU seconds at smoke scale and at the build's scale, threads,
    peak memory; a ⚠ marks a wall time over its budget (:data:`BUDGETS`)."""
    scale = build_scale(default)
    budget = BUDGETS.get(scale)
    rows = [
        f"| chapter | smoke wall s | smoke CPU s | {scale} wall s | {scale} CPU s | threads "
        "| peak memory MiB |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for chapter in order:
        s, d = smoke.get(chapter), default.get(chapter)
        threads = (d or s or {}).get("threads")
        memory = max(
            [led["peak_memory_mb"] for led in (s, d) if led and led.get("peak_memory_mb")],
            default=None,
        )
        rows.append(
            f"| {chapter} | {_cell(_seconds(s), BUDGETS['smoke'])} "
            f"| {_cell(_seconds(s, 'cpu_seconds'))} "
            f"| {_cell(_seconds(d), budget)} | {_cell(_seconds(d, 'cpu_seconds'))} "
            f"| {'–' if threads is None else threads} | {_cell(memory)} |"
        )
    return "\n".join(rows)


def over_budget(smoke: dict[str, dict], default: dict[str, dict]) -> list[str]:
    """``chapter (scale): seconds`` for every wall time over its budget."""
    found = []
    for leds in (smoke, default):
        for chapter, led in sorted(leds.items()):
            seconds, scale = _seconds(led), led.get("scale")
            if seconds is not None and scale in BUDGETS and seconds > BUDGETS[scale]:
                found.append(f"{chapter} ({scale}): {seconds:.0f} s")
    return found


def status_pairs(smoke: dict[str, dict], default: dict[str, dict]) -> list[dict]:
    """Every claim of a chapter with both ledgers: its status at smoke and at default scale
    (None where one scale does not record it)."""
    pairs = []
    for chapter in sorted(set(smoke) & set(default)):
        at_smoke = {c["id"]: c for c in smoke[chapter]["claims"]}
        at_default = {c["id"]: c for c in default[chapter]["claims"]}
        for claim_id in list(dict.fromkeys([*at_default, *at_smoke])):
            s, d = at_smoke.get(claim_id), at_default.get(claim_id)
            pairs.append(
                {
                    "chapter": chapter,
                    "id": claim_id,
                    "source": (d or s)["source"],
                    "kind": (d or s)["kind"],
                    "smoke": s["status"] if s else None,
                    "default": d["status"] if d else None,
                }
            )
    return pairs


def survival_summary(pairs: list[dict]) -> str:
    """Per chapter: claims with the same status at both scales, claims whose status changes, and
    claims recorded at one scale only."""
    chapters = list(dict.fromkeys(p["chapter"] for p in pairs))
    rows = [
        "| chapter | claims | same status | status changes | only at smoke | only at default |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for chapter in chapters:
        mine = [p for p in pairs if p["chapter"] == chapter]
        both = [p for p in mine if p["smoke"] and p["default"]]
        same = sum(p["smoke"] == p["default"] for p in both)
        rows.append(
            f"| {chapter} | {len(mine)} | {same} | {len(both) - same} "
            f"| {sum(p['default'] is None for p in mine)} "
            f"| {sum(p['smoke'] is None for p in mine)} |"
        )
    return "\n".join(rows)


def changes_table(pairs: list[dict]) -> str:
    """The claims whose status differs between the scales (or that one scale does not record)."""
    rows = ["| chapter | claim | source | kind | smoke | default |", "|---|---|---|---|---|---|"]
    for p in pairs:
        if p["smoke"] != p["default"]:
            rows.append(
                f"| {p['chapter']} | {p['id']} | {p['source']} | {p['kind']} "
                f"| {p['smoke'] or '–'} | {p['default'] or '–'} |"
            )
    return "\n".join(rows) if len(rows) > 2 else "Every claim has the same status at both scales."


def times_figure(smoke: dict[str, dict], default: dict[str, dict], order: list[str]):
    """Horizontal bars of each chapter's wall time at both scales, with the budgets drawn."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 0.32 * len(order) + 1.2), sharey=True)
    for ax, (scale, leds) in zip(axes, (("smoke", smoke), (build_scale(default), default))):
        values = [_seconds(leds.get(c)) or 0.0 for c in order]
        budget = BUDGETS.get(scale, float("inf"))
        colors = ["tab:red" if v > budget else "tab:blue" for v in values]
        ax.barh(range(len(order)), values, color=colors)
        if scale in BUDGETS:
            ax.axvline(budget, color="k", ls="--", lw=1)
            ax.set_xlabel(f"{scale}: wall seconds (budget {budget:.0f} s, dashed)")
        else:
            ax.set_xlabel(f"{scale}: wall seconds")
    axes[0].set_yticks(range(len(order)), order)
    axes[0].invert_yaxis()
    fig.tight_layout()
    return fig


def paper_runs_table(order: list[str], root=None) -> str:
    """Markdown: the committed paper ledgers of the chapters in ``order`` (made when, on what,
    wall and CPU minutes, peak memory, stale or not), then every chapter without one, with what
    its paper run needs (``book/data/ledgers/paper-not-run.json``)."""
    rows = [
        "| chapter | made | machine | wall min | CPU min | peak GiB | current |",
        "|---|---|---|---|---|---|---|",
    ]
    missing = []
    for chapter_id in order:
        led = ledger_mod.paper_ledger(chapter_id, root)
        if led is None:
            missing.append(chapter_id)
            continue
        prov = led.get("provenance") or {}
        mach = prov.get("machine") or {}
        stale = ledger_mod.stale_sources(led, root)
        where = f"{mach.get('processor', '?')}, {mach.get('cores', '?')} cores"
        rows.append(
            f"| {chapter_id} | {prov.get('date', '?')}, {str(prov.get('commit', '?'))[:7]} | "
            f"{where} | {_minutes(prov.get('wall_seconds'))} | "
            f"{_minutes(prov.get('cpu_seconds'))} | {_gib(prov.get('peak_memory_mb'))} | "
            + ("stale: " + ", ".join(stale) if stale else "yes")
            + " |"
        )
    text = "\n".join(rows) if len(rows) > 2 else "No paper ledger is committed yet."
    if missing:
        lines = [
            f"- `{c}`: {ledger_mod.paper_not_run(c, root) or 'not run at the paper scale yet.'}"
            for c in missing
        ]
        text += "\n\nWithout a paper ledger:\n\n" + "\n".join(lines)
    return text


def _minutes(seconds) -> str:
    return f"{seconds / 60:.1f}" if isinstance(seconds, (int, float)) else "?"


def _gib(mb) -> str:
    return f"{mb / 1024:.1f}" if isinstance(mb, (int, float)) else "?"
