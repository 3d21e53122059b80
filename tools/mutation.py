"""Mutation testing of the library, an audit to find weak spots (not a gate, no score target):

    .venv/bin/python tools/mutation.py [MODULE ...] [--time-limit SECONDS] [--report-only]

MODULE is a path relative to ``lib/companions`` (``ledger.py``, ``looped/theory.py``); with none,
every module of the library but the book's machinery. A mutant is a copy of a module with one
plausible bug planted (a flipped sign, a constant off by one, a comparison turned around, a
dropped argument); it *survives* when the module's unit tests still pass. The tool is mutmut
(pinned in requirements.txt): it copies the source once, plants every mutant behind a switch,
imports torch and the tests once, and forks one test run per mutant, running only the tests that
reach the mutated function.

mutmut knows the ``src/`` layout and not ours (``lib/``), so each module is mutated in a staging
folder, ``build/mutation/<module>/``, holding ``src/companions`` (a copy of ``lib/companions``),
the module's unit tests (``tests/core`` for a core module, ``tests/<topic>`` for a topic's) and a
``pyproject.toml`` written here. mutmut checks, before any mutant, that a mutant forced to fail
makes the tests fail, so the tests are known to import the mutated copy. Runs are single-process
at the lowest priority.

The results go to ``build/mutation/results.json`` and ``build/mutation/report.md`` (every
surviving mutant with its diff), which nothing commits. A survivor that computes the same thing as
the original may be listed, with the reason, in ``build/mutation/equivalents.txt`` (one
``mutant-name: reason`` a line); the score is killed / (mutants - equivalents).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path


def targets(root: Path) -> dict[str, list[str]]:
    """Module (relative to lib/companions) -> the unit tests that cover it: ``tests/core`` for a
    core module, ``tests/<topic>`` for a topic's; the book's machinery and modules without a
    function (data only) are left out."""
    lib = root / "lib" / "companions"
    out = {}
    for path in sorted(lib.rglob("*.py")):
        rel = path.relative_to(lib)
        if rel.parts[0] in ("book", "__pycache__") or rel.name in ("__init__.py", "__main__.py"):
            continue
        if "def " not in path.read_text():
            continue
        tests = "tests/core" if len(rel.parts) == 1 else f"tests/{rel.parts[0]}"
        out[rel.as_posix()] = [tests]
    return out


#: What mutmut's exit codes mean (mutmut.stats.status_by_exit_code, flattened).
_KILLED = {"killed", "timeout", "segfault", "caught by type check"}

_STAGING = Path("build/mutation")
_RESULTS = _STAGING / "results.json"
_REPORT = _STAGING / "report.md"
_EQUIVALENTS = _STAGING / "equivalents.txt"

# Run inside the staging folder after mutmut: every mutant's status, and the diff of each that
# was not killed (mutmut's own `results` and `show`, in one process).
_COLLECT = r"""
import json, sys
from mutmut.__main__ import *  # noqa: F403  (mutmut's commands set up its state on import)
from mutmut.configuration import config
from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files

out = {}
for path in walk_mutatable_files():
    m = SourceFileMutationData(path=path)
    m.load()
    for name, code in m.exit_code_by_key.items():
        status = status_by_exit_code[code]
        diff = "" if status == "killed" else get_diff_for_mutant(name, path=path)
        out[name] = {"status": status, "diff": diff}
json.dump(out, sys.stdout)
"""


def _root() -> Path:
    root = Path(__file__).resolve().parents[1]
    if root is None:
        raise SystemExit("run `python -m companions mutate` inside the repository")
    return root


def read_equivalents(path: Path) -> dict[str, str]:
    """``mutant-name: reason`` lines (``#`` comments and blank lines skipped)."""
    if not path.is_file():
        return {}
    found = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, reason = line.partition(":")
        if not sep or not reason.strip():
            raise ValueError(f"{path}:{n}: expected 'mutant-name: reason', got {line!r}")
        found[name.strip()] = reason.strip()
    return found


def score(statuses: dict[str, str], equivalents: dict[str, str]) -> dict:
    """Counts and score of one module's mutants; equivalents leave the denominator."""
    killed = sum(s in _KILLED for s in statuses.values())
    equivalent = [n for n, s in statuses.items() if s not in _KILLED and n in equivalents]
    surviving = sorted(n for n, s in statuses.items() if s not in _KILLED and n not in equivalents)
    counted = len(statuses) - len(equivalent)
    return {
        "mutants": len(statuses),
        "killed": killed,
        "equivalent": len(equivalent),
        "surviving": len(surviving),
        "score": round(100 * killed / counted, 1) if counted else 100.0,
        "surviving_names": surviving,
        "equivalent_names": sorted(equivalent),
    }


def rescore(counts: dict, equivalents: dict[str, str]) -> dict:
    """``counts`` (of :func:`score`) again, with the equivalents listed now."""
    not_killed = counts["surviving_names"] + counts["equivalent_names"]
    equivalent = sorted(n for n in not_killed if n in equivalents)
    surviving = sorted(n for n in not_killed if n not in equivalents)
    counted = counts["mutants"] - len(equivalent)
    return {
        **counts,
        "equivalent": len(equivalent),
        "surviving": len(surviving),
        "score": round(100 * counts["killed"] / counted, 1) if counted else 100.0,
        "surviving_names": surviving,
        "equivalent_names": equivalent,
    }


def _stage_dir(root: Path, module: str) -> Path:
    """Where ``module`` is staged: ``<root>/build/mutation/<module, dotted>``."""
    return root / _STAGING / module.removesuffix(".py").replace("/", ".")


def _stage(root: Path, module: str, tests: list[str]) -> Path:
    stage = _stage_dir(root, module)
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "src").mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root / "lib" / "companions", stage / "src" / "companions", ignore=ignore)
    files = sorted({t.split("::")[0] for t in tests})
    for rel in ["tests/__init__.py", "tests/conftest.py", *files]:
        src = root / rel
        if src.is_dir():  # a whole test folder
            shutil.copytree(src, stage / rel, ignore=ignore, dirs_exist_ok=True)
            continue
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        init = src.parent / "__init__.py"
        if init.is_file():
            shutil.copy2(init, stage / rel.rsplit("/", 1)[0] / "__init__.py")
        shutil.copy2(src, stage / rel)
    shutil.copy2(root / "_toc.yml", stage / "_toc.yml")  # find_root() stops here, not above
    toml = [
        "[tool.pytest.ini_options]",
        'testpaths = ["tests"]',
        "",
        "[tool.mutmut]",
        'source_paths = ["src/companions"]',
        f'only_mutate = ["src/companions/{module}"]',
        # one process, no xdist workers, no cache folder; stop at the first failing test
        'pytest_add_cli_args = ["-p", "no:xdist", "-p", "no:cacheprovider", "-x", "-q"]',
        "pytest_add_cli_args_test_selection = [" + ", ".join(f'"{t}"' for t in tests) + "]",
        'also_copy = ["_toc.yml"]',
        "timeout_multiplier = 10.0",
        "",
    ]
    (stage / "pyproject.toml").write_text("\n".join(toml))
    return stage


def mutate_module(
    root: Path, module: str, tests: list[str], log, time_limit: float | None = None
) -> dict[str, dict]:
    """Run mutmut over one module; every mutant's status (and diff, where it was not killed).
    After ``time_limit`` seconds (None: no limit) mutmut is stopped, and the mutants it had not
    tested yet have the status ``not checked`` (see :func:`tested_only`)."""
    missing = [t for t in tests if not (root / t.split("::")[0]).exists()]
    if missing:
        log(f"[{module}] no such test file, left out: {missing}")
    tests = [t for t in tests if t not in missing]
    stage = _stage(root, module, tests)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = ["nice", "-n", "19", str(mutmut), "run", "--max-children", "1"]
    log(f"[{module}] {' '.join(cmd)}  (in {stage.relative_to(root)})")
    log_path = stage / "mutmut.log"  # written as mutmut goes: its progress can be followed
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(
            cmd,
            cwd=stage,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stopped = False
        try:
            proc.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            stopped = True
            # mutmut stops on Ctrl-C: it ends the mutant in flight and keeps what it has tested
            log(f"[{module}] time limit of {time_limit} s reached: stopping mutmut")
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    check_exit(module, proc.returncode, stopped, log_path)
    out = subprocess.run(
        [sys.executable, "-c", _COLLECT], cwd=stage, env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(f"reading mutmut's results for {module} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def check_exit(module: str, returncode: int, stopped: bool, log_path: Path) -> None:
    """Raise where mutmut failed. A run stopped at its time limit exits non-zero by design (the
    interrupt, or the kill when it did not end within 120 s of it): what it tested is kept, and
    the mutants it had not are ``not checked``."""
    if returncode != 0 and not stopped:
        output = log_path.read_text(errors="replace")
        raise RuntimeError(
            f"mutmut failed on {module} (exit {returncode}); see {log_path}:\n" + output[-3000:]
        )


#: The statuses of mutants that a stopped run never tested (mutmut's exit code None, and the
#: mutant in flight when it was stopped).
_UNTESTED = {"not checked", "check was interrupted by user"}


def tested_only(statuses: dict[str, str]) -> tuple[dict[str, str], int]:
    """The statuses of the mutants that were tested, and how many were not (a stopped run)."""
    tested = {n: s for n, s in statuses.items() if s not in _UNTESTED}
    return tested, len(statuses) - len(tested)


def write_report(root: Path, results: dict) -> Path:
    """Rescore every module with the equivalents listed now; write results.json and report.md."""
    equivalents = read_equivalents(root / _EQUIVALENTS)
    for r in results.values():
        r["first"], r["last"] = rescore(r["first"], equivalents), rescore(r["last"], equivalents)
    results_path = root / _RESULTS
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    lines = [
        "# Mutation testing report",
        "",
        "Written by `python -m companions mutate` (mutmut; see CONTRIBUTING.md). Score = killed /",
        "(mutants - equivalents); *before* is the first run recorded for the module, *after* the",
        "last, both scored with the equivalents listed now in `equivalents.txt` (their reasons",
        "are below, with each mutant's diff). A timeout counts as killed.",
        "",
        "| module | tests | mutants | killed | equivalent | surviving | before % | after % "
        "| last run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for module, r in sorted(results.items()):
        last, first = r["last"], r["first"]
        lines.append(
            f"| {module} | {' '.join('`' + t + '`' for t in r['tests'])} | {last['mutants']} | "
            f"{last['killed']} | {last['equivalent']} | {last['surviving']} | "
            f"{first['score']} | {last['score']} | {r['when']}{_partial(r)} |"
        )
    for module, r in sorted(results.items()):
        last = r["last"]
        if not last["surviving_names"] and not last["equivalent_names"]:
            continue
        lines += ["", f"## {module}", ""]
        if last["surviving_names"]:
            lines += ["Surviving (not yet killed, not listed as equivalent):", ""]
            for name in last["surviving_names"]:
                lines += [f"- `{name}` ({r['diffs'][name]['status']})", "", "```diff"]
                lines += [r["diffs"][name]["diff"], "```", ""]
        if last["equivalent_names"]:
            lines += ["Equivalent:", ""]
            for name in last["equivalent_names"]:
                lines += [f"- `{name}`: {equivalents[name]}", "", "```diff"]
                lines += [r["diffs"][name]["diff"], "```", ""]
    path = root / _REPORT
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


def _partial(entry: dict) -> str:
    """A note for a run stopped before every mutant was tested (its counts are over those that
    were): ``entry["partial"]`` says how many of how many."""
    return f" (partial: {entry['partial']})" if entry.get("partial") else ""


def run(
    modules: list[str] | None = None,
    out=sys.stdout,
    report_only: bool = False,
    time_limit: float | None = None,
) -> int:
    """Mutate ``modules`` (default: every module of :func:`targets`), update the results and
    the report. ``report_only`` mutates
    nothing and rewrites the report from the last results (after editing the equivalents).
    ``time_limit`` (seconds per module) stops a module's run and records it as partial: its score
    is over the mutants tested, which mutmut takes fastest tests first."""
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"parameter 'time_limit' = {time_limit} is not allowed: expected > 0")
    root = _root()
    if report_only:
        results = json.loads((root / _RESULTS).read_text())
        write_report(root, results)
        for module, r in sorted(results.items()):
            print(f"{module}: {r['first']['score']} % -> {r['last']['score']} %", file=out)
        return 0
    table = targets(root)
    modules = modules or list(table)
    unknown = [m for m in modules if m not in table]
    if unknown:
        raise SystemExit(f"unknown module(s) {unknown}: choose from {sorted(table)}")
    results_path = root / _RESULTS
    results: dict = {}
    equivalents = read_equivalents(root / _EQUIVALENTS)

    def log(msg):
        print(msg, file=out, flush=True)

    for module in modules:
        start = time.perf_counter()
        statuses = mutate_module(root, module, table[module], log, time_limit)
        tested, untested = tested_only({n: d["status"] for n, d in statuses.items()})
        counts = score(tested, equivalents)
        keep = set(counts["surviving_names"]) | set(counts["equivalent_names"])
        # read now, not at the start: another run may have recorded its module meanwhile
        results = json.loads(results_path.read_text()) if results_path.is_file() else {}
        entry = results.get(module, {})
        results[module] = {
            "tests": table[module],
            "first": entry.get("first", counts),
            "last": counts,
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": round(time.perf_counter() - start),
            "diffs": {n: d for n, d in statuses.items() if n in keep},
        }
        if untested:
            results[module]["partial"] = (
                f"{len(tested)} of {len(statuses)} mutants tested, the run stopped after "
                f"{time_limit:g} s"
            )
        log(
            f"[{module}] {counts['killed']}/{counts['mutants']} killed, "
            f"{counts['equivalent']} equivalent, {counts['surviving']} surviving: "
            f"{counts['score']} % ({results[module]['seconds']} s)"
        )
        write_report(root, results)
    log(f"report: {_REPORT}")
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="paths relative to lib/companions")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per module")
    parser.add_argument("--report-only", action="store_true", help="rewrite the report only")
    args = parser.parse_args(argv)
    return run(args.modules, report_only=args.report_only, time_limit=args.time_limit)


if __name__ == "__main__":
    raise SystemExit(main())
