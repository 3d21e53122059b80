"""Command line of the book:
``python -m companions list | run | ledger | assign | grade | build | student-edition | bench``.

``run`` validates every parameter with :func:`companions.preset` before anything is written, then
converts the chapter's MyST notebook to ``.ipynb`` with jupytext and executes it with papermill in
the chapter's own folder. The executed notebook and the chapter's ledger land in one output folder.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from companions import ledger as ledger_mod
from companions import scale as scale_mod

#: Parameters every chapter takes from the command line's own options, never from ``-p``.
RESERVED = ("scale", "device", "seed", "ledger_dir")
KERNEL = "python3"

EPILOG = """\
examples:
  python -m companions list
  python -m companions run looped-gd --scale smoke --device cpu
  python -m companions run looped-gd --scale paper --device auto -p n_values "[16, 32]" -p d 4
  python -m companions ledger --dir runs/looped-gd-smoke-20260101-120000
  python -m companions assign --all                  \
# assignments/<chapter>/{student,solution,autograder}
  python -m companions grade looped-gd submission.ipynb
  python -m companions grade looped-gd submissions/ --feedback feedback/  # gradebook CSV
  python -m companions student-edition               # the book without solutions, _build/student/
  python -m companions bench --topic fourier --json bench.json   # time the trainers here
  python -m companions run looped-gd --scale paper --keep   # a paper ledger, to commit

'run' is the same as this pipe (papermill cannot read MyST .md notebooks by itself):
  jupytext --to ipynb book/x.md -o - | papermill - out.ipynb -p scale paper
(run it from the notebook's folder, or pass --cwd to papermill, and add -p ledger_dir DIR
to choose where the chapter writes its ledger).
"""


class ChapterExecutionError(RuntimeError):
    """A chapter's notebook raised while it ran; the partial executed notebook is kept."""

    def __init__(
        self, message: str, notebook_path: Path, ledger_path: Path, ename: str | None = None
    ):
        super().__init__(message)
        self.notebook_path = notebook_path
        self.ledger_path = ledger_path
        #: The name of the error the notebook raised; ``None`` where it raised none but wrote no
        #: ledger.
        self.ename = ename


# -- helpers ------------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A ``-p`` value: a Python literal when it parses as one (``4``, ``0.5``, ``[16, 32]``,
    ``None``), else the raw string. Tuples become lists (papermill writes lists, not tuples)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _lists(value)


def _lists(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


def repository_root() -> Path:
    """The book's root (the folder holding ``_toc.yml``): above the package, else above the cwd."""
    import companions

    for start in (Path(companions.__file__).resolve().parent, Path.cwd()):
        root = ledger_mod.find_root(start)
        if root is not None:
            return root
    raise FileNotFoundError(
        "cannot find the book's repository root (a folder holding _toc.yml) above the companions "
        f"package ({Path(companions.__file__).parent}) or the current folder ({Path.cwd()})"
    )


def notebook_source(chapter_id: str) -> Path:
    """The MyST ``.md`` notebook of a chapter (its ``notebook`` path, relative to the root)."""
    chapter = scale_mod.get_chapter(chapter_id)
    path = Path(chapter.notebook)
    if not path.is_absolute():
        path = repository_root() / path
    if path.suffix != ".md":
        path = path.with_name(path.name + ".md")
    if not path.is_file():
        raise FileNotFoundError(
            f"chapter {chapter_id!r} declares notebook {chapter.notebook!r}, "
            f"but {path} does not exist"
        )
    return path


def validate(
    chapter_id: str,
    scale: str | None,
    device: str = "auto",
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
) -> scale_mod.Config:
    """Resolve and validate a run's parameters; a bad value raises ``ValueError`` naming it."""
    params = dict(params or {})
    reserved = sorted(set(params) & set(RESERVED))
    if reserved:
        raise ValueError(
            f"parameter(s) {reserved} cannot be passed with -p: "
            "use --scale, --device, --seed and --out"
        )
    cfg = scale_mod.preset(chapter_id, scale, device=device, seed=seed, **params)
    if cfg["device"] == "cuda":
        from companions.runtime import resolve_device

        resolve_device("cuda")  # raises ValueError naming 'device' where no GPU is visible
    return cfg


def default_out_dir(chapter_id: str, scale: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{chapter_id}-{scale}-{stamp}"


def execute_chapter(
    chapter_id: str,
    scale: str | None,
    *,
    out_dir: str | Path,
    device: str = "auto",
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    progress: bool = True,
    kernel=None,
) -> tuple[Path, Path]:
    """Run one chapter end to end and return ``(executed notebook, ledger)`` paths.

    Every parameter is validated before anything is written (``ValueError`` naming the bad
    parameter). Then the chapter's MyST notebook is converted with jupytext and executed with
    papermill (kernel ``python3``, working directory = the notebook's folder) with the parameters
    ``scale``, ``device``, ``seed``, ``ledger_dir=out_dir`` and ``params``. The executed notebook
    is ``out_dir/<chapter>.ipynb`` and the chapter writes ``out_dir/<chapter>.json``. If a cell
    raises, :class:`ChapterExecutionError` is raised and the partial notebook is kept, except
    :class:`companions.train.DryRunEnded` with its ledger written: a dry run told to end after its
    first loops (``$COMPANIONS_DRY_RUN_LOOPS``) ended there.

    ``kernel``: a ``jupyter_client.KernelManager`` for kernel ``python3``, not yet started. The
    chapter runs in it, and a chapter that ran to its end leaves it running, with the chapter's
    state, for the caller to use and shut down (the test suite hands it to the assignment's judge,
    :class:`companions.book.judge.Judge`). If the chapter fails, it is shut down here.
    """
    import jupytext
    import nbformat
    import papermill
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    params = dict(params or {})
    cfg = validate(chapter_id, scale, device=device, seed=seed, params=params)
    source = notebook_source(chapter_id)
    notebook = jupytext.read(source)

    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / f"{chapter_id}.ipynb"
    ledger_path = out_dir / f"{chapter_id}.json"
    ledger_path.unlink(missing_ok=True)  # never report a stale ledger of an earlier run
    parameters = {
        "scale": cfg.scale,
        "device": device,
        "seed": seed,
        "ledger_dir": str(out_dir),
        **params,
    }

    try:
        with tempfile.TemporaryDirectory(prefix="companions-") as tmp:
            converted = Path(tmp) / f"{chapter_id}.ipynb"
            nbformat.write(notebook, str(converted))
            papermill.execute_notebook(
                str(converted),
                str(executed),
                parameters=parameters,
                kernel_name=KERNEL,
                language="python",
                cwd=str(source.parent),
                progress_bar=progress,
                **({} if kernel is None else {"km": kernel}),
            )
    except PapermillExecutionError as err:
        _stop(kernel)
        if err.ename == "DryRunEnded" and ledger_path.is_file():
            return executed, ledger_path  # ended where $COMPANIONS_DRY_RUN_LOOPS said
        raise ChapterExecutionError(
            f"chapter {chapter_id!r} stopped in cell "
            f"[{err.exec_count}] with {err.ename}: {err.evalue}\n"
            f"The executed notebook, up to the failing cell, is {executed}"
            + (f"\nThe chapter's ledger is {ledger_path}" if ledger_path.is_file() else ""),
            executed,
            ledger_path,
            err.ename,
        ) from err
    except DeadKernelError as err:
        _stop(kernel)
        raise ChapterExecutionError(
            f"chapter {chapter_id!r} stopped: its kernel died ({err}). Out of memory, or killed?"
            + (
                f"\nThe executed notebook, as far as it got, is {executed}"
                if executed.is_file()
                else ""
            ),
            executed,
            ledger_path,
            "DeadKernelError",
        ) from err
    except BaseException:
        _stop(kernel)
        raise
    finally:
        _record_source(executed, source)
    if not ledger_path.is_file():
        _stop(kernel)
        raise ChapterExecutionError(
            f"chapter {chapter_id!r} ran but wrote no ledger at {ledger_path}: "
            "does it call Ledger(cfg).finish()?",
            executed,
            ledger_path,
        )
    return executed, ledger_path


def _stop(kernel) -> None:
    """Shut down a caller's kernel (``execute_chapter(kernel=...)``) that a failed run leaves."""
    if kernel is not None and kernel.has_kernel:
        kernel.shutdown_kernel(now=True)


def _record_source(executed: Path, source: Path) -> None:
    """Point the executed notebook's papermill metadata at the ``.md`` source, not the temp copy."""
    if not executed.is_file():
        return
    import nbformat

    try:
        nb = nbformat.read(str(executed), as_version=4)
    except Exception:  # a half-written notebook is still worth keeping as it is
        return
    nb.metadata.setdefault("papermill", {})["input_path"] = str(source)
    nbformat.write(nb, str(executed))


def ledger_report(ledgers: Sequence[dict]) -> str:
    summary, every = ledger_mod.gathered(list(ledgers))
    return f"## Per chapter\n\n{summary}\n\n## Every claim\n\n{every}"


# -- subcommands --------------------------------------------------------------------------------
def _fmt_value(value: Any) -> str:
    return json.dumps(list(value) if isinstance(value, tuple) else value)


def cmd_list(args: argparse.Namespace) -> int:
    known = scale_mod.chapters()
    if not known:
        print("no chapters are declared in the companions package")
        return 1
    for chapter in known.values():
        print(f"{chapter.id}: {chapter.title}")
        print(f"  notebook: {chapter.notebook}")
        print(
            f"  common:   scale: one of {', '.join(scale_mod.SCALES)} (default: "
            f"${scale_mod.SCALE_ENV} or 'default')"
        )
        for name, spec in scale_mod.COMMON.items():
            print(
                f"            {name}: {spec.describe()}" + (f" -- {spec.doc}" if spec.doc else "")
            )
        print("  parameters:")
        for name, spec in chapter.params.items():
            print(
                f"    {name}: {spec.describe()}"
                + (f" -- {spec.doc}" if getattr(spec, "doc", "") else "")
            )
            values = "  ".join(
                f"{s}={_fmt_value(chapter.presets[s][name])}" for s in scale_mod.SCALES
            )
            print(f"      {values}")
        print()
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {}
    for name, text in args.param or []:
        params[name] = parse_value(text)
    try:
        cfg = validate(args.chapter, args.scale, device=args.device, seed=args.seed, params=params)
        notebook_source(args.chapter)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.keep and (cfg.scale != "paper" or params or args.seed != 0):
        print(
            "error: --keep records a run of the chapter's paper preset as it is: it needs "
            "--scale paper, no -p and seed 0",
            file=sys.stderr,
        )
        return 2
    sources = ledger_mod.fingerprint(args.chapter) if args.keep else None
    out_dir = Path(args.out) if args.out else default_out_dir(args.chapter, cfg.scale)
    print(f"output folder: {out_dir}", flush=True)
    try:
        executed, ledger_path = execute_chapter(
            args.chapter,
            cfg.scale,
            out_dir=out_dir,
            device=args.device,
            seed=args.seed,
            params=params,
            progress=not args.quiet,
        )
    except ChapterExecutionError as err:
        if err.ledger_path.is_file():
            print(ledger_report([json.loads(err.ledger_path.read_text())]))
            if args.keep and err.ename == "ClaimFailed":  # a finished run whose check failed
                _keep(args.chapter, err.ledger_path, sources)
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"executed notebook: {executed}")
    print(f"ledger: {ledger_path}\n")
    print(ledger_report([json.loads(ledger_path.read_text())]))
    if args.keep:
        return _keep(args.chapter, ledger_path, sources)
    return 0


def _keep(chapter_id: str, ledger_path: Path, sources: dict) -> int:
    """Record a finished paper run as the chapter's committed paper ledger
    (:func:`companions.book.paper.record`); 1 if it cannot be recorded."""
    from companions.book import paper

    try:
        kept = paper.record(chapter_id, ledger_path, sources)
    except (ValueError, OSError, subprocess.CalledProcessError) as err:
        print(f"error: the paper ledger was not recorded: {err}", file=sys.stderr)
        return 1
    print(f"paper ledger: {kept} (commit it)")
    return 0


def cmd_ledger(args: argparse.Namespace) -> int:
    folder = Path(args.dir) if args.dir else ledger_mod.default_dir()
    try:
        ledgers = ledger_mod.load(folder, dry_runs=True)  # shown, and marked as dry runs
        report = ledger_report(ledgers) if ledgers else ""
    except (ValueError, KeyError, TypeError) as err:  # a JSON file there that is not a ledger
        print(
            f"error: a file in {folder} is not a chapter ledger ({type(err).__name__}: {err})",
            file=sys.stderr,
        )
        return 2
    if not ledgers:
        print(
            f"no ledgers found in {folder}: run a chapter first (python -m companions run ...), "
            "or point --dir at a folder holding <chapter>.json files",
            file=sys.stderr,
        )
        return 1
    print(report)
    failed = [
        (led["chapter"], c["id"])
        for led in ledgers
        for c in led["claims"]
        if c["status"] == "fails"
    ]
    if failed:
        print(
            f"\n{len(failed)} claim(s) fail: " + ", ".join(f"{ch}/{cid}" for ch, cid in failed),
            file=sys.stderr,
        )
        return 1
    return 0


def _chapters_with_questions(
    requested: Sequence[str], every: bool
) -> tuple[dict[str, Path], list[str]]:
    """``{chapter: source}`` to build, and the chapters skipped for having no graded question."""
    from companions.book import assign

    ids = list(scale_mod.chapters()) if every else list(requested)
    if not ids:
        raise ValueError("name one or more chapters, or pass --all")
    chosen, skipped = {}, []
    for chapter_id in ids:
        scale_mod.get_chapter(chapter_id)  # ValueError naming an unknown chapter
        source = notebook_source(chapter_id)
        if assign.questions(assign.read_chapter(source), chapter_id):
            chosen[chapter_id] = source
        elif every:
            skipped.append(chapter_id)
        else:
            raise ValueError(
                f"chapter {chapter_id!r} has no graded question "
                "(see the README's 'Teaching' section)"
            )
    return chosen, skipped


def cmd_assign(args: argparse.Namespace) -> int:
    from companions.book import assign

    try:
        if args.scale not in scale_mod.SCALES:
            raise ValueError(
                f"parameter 'scale' = {args.scale!r} is not allowed: "
                f"one of {', '.join(scale_mod.SCALES)}"
            )
        chosen, skipped = _chapters_with_questions(args.chapters, args.all)
    except (ValueError, FileNotFoundError, assign.AssignmentError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for chapter_id in skipped:
        print(f"{chapter_id}: no graded question, skipped")
    for chapter_id, source in chosen.items():
        bundle = assign.build_assignment(
            chapter_id,
            source,
            args.out,
            scale=args.scale,
            time_limit=args.time_limit,
            memory=None if args.memory is None else int(args.memory * 2**30),
        )
        points = sum(q.points for q in bundle.questions)
        print(
            f"{chapter_id}: {len(bundle.questions)} graded questions, "
            f"{points:g} points, at scale {args.scale!r}"
        )
        for label, path in (
            ("student notebook", bundle.student),
            ("solution notebook", bundle.solution),
            ("autograder", bundle.autograder),
        ):
            print(f"  {label + ':':<19}{path}")
    return 0


def _submissions(folder: Path, skip: set[Path]) -> list[Path]:
    """Every file directly in ``folder`` (so a stray file is reported, not silently ignored), but
    hidden files and the grader's own outputs."""
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.resolve() not in skip
    )


def _read_gradebook(path: Path) -> dict[str, dict]:
    import csv

    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        return {row["file"]: row for row in csv.DictReader(f) if row.get("file")}


def cmd_grade(args: argparse.Namespace) -> int:
    """One notebook: its table (and ``--json``). A folder: every file in it, each row of the
    gradebook written as soon as it is graded; a second run skips the files already in the
    gradebook, so an interrupted class resumes where it stopped."""
    import csv

    from companions.book import assign

    folder = Path(args.bundle) / args.chapter
    if not (folder / "master.ipynb").is_file():
        print(
            f"error: no assignment at {folder}: "
            f"build it with 'python -m companions assign {args.chapter}'",
            file=sys.stderr,
        )
        return 2
    target = Path(args.submission)
    if not target.exists():
        print(f"error: submission {args.submission!r} does not exist", file=sys.stderr)
        return 2
    limits = {"sandbox": not args.no_sandbox}
    if args.time_limit is not None:
        limits["time_limit"] = args.time_limit
    if args.memory is not None:
        limits["memory"] = int(args.memory * 2**30)
    if args.no_sandbox:
        print(
            "warning: --no-sandbox: every submission runs with your own access to files and "
            "network; grade only notebooks you trust this way",
            file=sys.stderr,
        )
    else:
        from companions.book import sandbox

        try:  # before any gradebook row: grading never falls back to running unsandboxed
            sandbox.check_available()
            sandbox.check_hidden(folder, "the assignment folder")
            sandbox.check_hidden(target if target.is_dir() else target.parent, "the submissions")
        except sandbox.SandboxUnavailable as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if target.is_file():
        result = assign.grade(folder, target, out_dir=args.out, **limits)
        print(result.table())
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {
                        "chapter": args.chapter,
                        "submission": str(args.submission),
                        "scores": result.scores,
                        "possible": result.possible,
                        "status": result.outputs,
                        "errors": list(result.errors),
                        "total": result.total,
                        "max_total": result.max_total,
                    },
                    indent=1,
                )
            )
        return 0

    gradebook = Path(args.gradebook or f"gradebook-{args.chapter}.csv")
    feedback = Path(args.feedback) if args.feedback else None
    done = _read_gradebook(gradebook)
    skip = {gradebook.resolve()}
    if feedback is not None:
        skip |= {p.resolve() for p in feedback.glob("*")} if feedback.is_dir() else set()
    files = _submissions(target, skip)
    todo = [p for p in files if p.name not in done]
    questions = [t.question for t in assign.hidden_tests_of(folder)]
    columns = ["student", "file", *questions, "total", "max_total", "status", "errors"]
    if done and list(next(iter(done.values())).keys()) != columns:
        print(f"error: {gradebook} has other columns; move it away to start over", file=sys.stderr)
        return 2
    if done:
        print(f"resuming: {len(files) - len(todo)} of {len(files)} already in {gradebook}")
    new_file = not gradebook.is_file()
    gradebook.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    count = {"n": len(files) - len(todo)}
    with gradebook.open("a", newline="") as f:
        writer = csv.writer(f)
        if new_file:
            writer.writerow(columns)
            f.flush()

        def record(result) -> None:
            count["n"] += 1
            writer.writerow(
                [
                    result.student,
                    result.submission,
                    *(f"{result.scores.get(q, 0.0):g}" for q in questions),
                    f"{result.total:g}",
                    f"{result.max_total:g}",
                    "; ".join(f"{q}: {s}" for q, s in result.outputs.items()),
                    "; ".join(result.errors),
                ]
            )
            f.flush()
            if feedback is not None:
                feedback.mkdir(parents=True, exist_ok=True)
                (feedback / f"{result.student}.txt").write_text(result.feedback() + "\n")
            problem = f"  [{'; '.join(result.errors)}]" if result.errors else ""
            print(
                f"[{count['n']}/{len(files)}] {result.student}: "
                f"{result.total:g} / {result.max_total:g}{problem} "
                f"({time.monotonic() - start:.0f} s)",
                flush=True,
            )

        try:
            assign.grade_class(folder, todo, on_grade=record, **limits)
        except KeyboardInterrupt:
            print(
                f"interrupted: {count['n']} of {len(files)} in {gradebook}; "
                "run the same command again to grade the rest",
                file=sys.stderr,
            )
            return 130
    print(f"gradebook: {gradebook} ({len(files)} submissions)")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    import os

    from companions import scale as scale_mod
    from companions.book import build

    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        print(f"error: 'jobs' must be at least 1, not {jobs}", file=sys.stderr)
        return 2
    try:  # before anything runs: every chapter would otherwise fail on it, one by one
        scale_mod.resolve_scale(None)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    extra = [a for a in args.extra if a != "--"]
    return build.build(repository_root(), jobs, extra)


def cmd_student_edition(args: argparse.Namespace) -> int:
    """Build the book without solutions: a complete copy of ``_config.yml`` with
    ``companions_student_edition`` set (``--config`` replaces the configuration, it does not add to
    it), which :mod:`companions.book.sphinx_student` reads."""
    import shutil
    import subprocess

    import yaml

    root = repository_root()
    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("sphinx", {}).setdefault("config", {})["companions_student_edition"] = True
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    config_path = out / "_config.student.yml"
    config_path.write_text(
        "# generated by 'python -m companions student-edition' from _config.yml\n"
        + yaml.safe_dump(config, sort_keys=False)
    )
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    command = [
        str(jupyter_book)
        if jupyter_book.exists()
        else shutil.which("jupyter-book") or "jupyter-book",
        "build",
        str(root),
        "--config",
        str(config_path),
        "--path-output",
        str(out),
        "-W",
        "-n",
        "--keep-going",
    ]
    print(" ".join(command), flush=True)
    done = subprocess.run(command)
    if done.returncode == 0:
        print(f"student edition: {out / '_build' / 'html' / 'index.html'}")
    return done.returncode


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m companions",
        description="Run and inspect the chapters of the book.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="{list,run,ledger,assign,grade,build,student-edition,bench}",
    )

    p_list = sub.add_parser(
        "list", help="every chapter, its parameters and their values at each scale"
    )
    p_list.set_defaults(func=cmd_list)

    p_run = sub.add_parser(
        "run",
        help="execute a chapter with papermill",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_run.add_argument("chapter", help="chapter id (see 'list')")
    p_run.add_argument(
        "--scale",
        default=None,
        help=(
            f"one of {', '.join(scale_mod.SCALES)} (default: "
            f"${scale_mod.SCALE_ENV}, else 'default')"
        ),
    )
    p_run.add_argument(
        "--device", default="auto", help="auto (CUDA where present), cpu or cuda (default: auto)"
    )
    p_run.add_argument("--seed", type=int, default=0, help="seed of every random draw (default: 0)")
    p_run.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help='a chapter parameter; VALUE is a Python literal (4, 0.5, "[16, 32]") or a string',
    )
    p_run.add_argument(
        "--out",
        default=None,
        help=(
            "output folder (default: "
            "runs/<chapter>-<scale>-<YYYYmmdd-HHMMSS> under the current folder)"
        ),
    )
    p_run.add_argument("--quiet", action="store_true", help="no progress bar")
    p_run.add_argument(
        "--keep",
        action="store_true",
        help="with --scale paper: record the finished run as the chapter's paper ledger, with its "
        "provenance, in book/data/ledgers/paper/ (to commit)",
    )
    p_run.set_defaults(func=cmd_run)

    p_led = sub.add_parser(
        "ledger", help="gather the ledgers in a folder into two tables (exit 1 if a claim fails)"
    )
    p_led.add_argument(
        "--dir",
        default=None,
        help=(
            "folder of <chapter>.json ledgers (default: "
            f"${ledger_mod.LEDGER_ENV}, else <root>/_build/ledger)"
        ),
    )
    p_led.set_defaults(func=cmd_ledger)

    p_asg = sub.add_parser("assign", help="build graded assignments (otter-grader) from chapters")
    p_asg.add_argument("chapters", nargs="*", help="chapter ids (see 'list')")
    p_asg.add_argument("--all", action="store_true", help="every chapter that has graded questions")
    p_asg.add_argument("--out", default="assignments", help="output folder (default: assignments)")
    p_asg.add_argument(
        "--scale",
        default="smoke",
        help="the scale the student notebook runs at (default: smoke, so grading is quick)",
    )
    p_asg.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds a submission may run when graded (default: 600)",
    )
    p_asg.add_argument(
        "--memory", type=float, default=None, help="GiB a submission may use (default: 4)"
    )
    p_asg.set_defaults(func=cmd_assign)

    p_grd = sub.add_parser(
        "grade",
        help="grade a submitted notebook, or a folder of them (a gradebook CSV): each runs "
        "in an operating-system sandbox (bubblewrap), and only its answers are judged, in a "
        "kernel that never runs student code",
    )
    p_grd.add_argument("chapter", help="chapter id")
    p_grd.add_argument("submission", help="the student's .ipynb, or a folder of submissions")
    p_grd.add_argument(
        "--bundle", default="assignments", help="the folder 'assign' wrote (default: assignments)"
    )
    p_grd.add_argument("--out", default=None, help="one notebook: write results.json here")
    p_grd.add_argument(
        "--json", default=None, help="one notebook: write the points per question to this file"
    )
    p_grd.add_argument(
        "--gradebook",
        default=None,
        help="a folder: the gradebook CSV, appended to and resumed (default: "
        "gradebook-<chapter>.csv)",
    )
    p_grd.add_argument(
        "--feedback", default=None, help="a folder: write <student>.txt feedback files here"
    )
    p_grd.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds per submission (default: the assignment's, else 600)",
    )
    p_grd.add_argument(
        "--memory",
        type=float,
        default=None,
        help="GiB of memory per submission (default: the assignment's, else 4)",
    )
    p_grd.add_argument(
        "--no-sandbox",
        action="store_true",
        help="UNSAFE: run each submission without the operating-system sandbox (bubblewrap), with "
        "your own access to files and network; only for notebooks you trust, such as your own "
        "tests",
    )
    p_grd.set_defaults(func=cmd_grade)

    p_bld = sub.add_parser(
        "build",
        help="build the book as 'jupyter-book build .' does, its chapters executed side by side "
        "first (faster on several cores); arguments after the options go to jupyter-book",
    )
    p_bld.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="chapters executed at once (default: the number of cores)",
    )
    p_bld.add_argument("extra", nargs=argparse.REMAINDER, help="jupyter-book build options")
    p_bld.set_defaults(func=cmd_build)

    p_stu = sub.add_parser("student-edition", help="build the book with the solutions hidden")
    p_stu.add_argument(
        "--out", default="_build/student", help="output folder (default: _build/student)"
    )
    p_stu.set_defaults(func=cmd_student_edition)

    p_bch = sub.add_parser(
        "bench",
        help="time every topic's trainers on this machine (steps/s, GFLOP/s against the "
        "measured matmul peak, peak memory), beside the public peers",
    )
    p_bch.add_argument("--topic", default=None, help="one topic (default: every topic)")
    p_bch.add_argument("--steps", type=int, default=20, help="timed steps per case (default: 20)")
    p_bch.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's own count)"
    )
    p_bch.add_argument("--json", default=None, help="also write the report to this JSON file")
    p_bch.add_argument(
        "--no-memory", action="store_true", help="skip the peak-memory runs (a process per case)"
    )
    p_bch.set_defaults(func=cmd_bench)

    return parser


def cmd_bench(args) -> int:
    from companions import bench

    report = bench.run(
        args.topic, args.steps, args.threads, memory=not args.no_memory, out=sys.stdout
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from companions.book import environment

    args = build_parser().parse_args(argv)
    environment.tune()  # for the kernels this command starts (companions.book.environment)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
