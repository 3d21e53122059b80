"""Graded assignments built from the chapters, with otter-grader.

A chapter marks a **graded question** with three pieces, all in its own MyST notebook:

1. an ``{exercise}`` block with a ``:label:`` (the question's name);
2. a gated solution, ``{solution-start} <label>`` ... ``{solution-end}``, whose code cells hold the
   answer; every line a student must write ends with ``# SOLUTION`` (or sits between
   ``# BEGIN SOLUTION`` and ``# END SOLUTION``), otter's own markers;
3. one code cell, tagged ``remove-cell`` so the book does not show it, whose metadata says
   ``grader: {question: <label>, points: N}``: the hidden test. It runs in every build of the book
   and in the chapter's tests, so a solution that stops passing its own test fails there.

:func:`master_notebook` turns the chapter into an otter master notebook; :func:`build_assignment`
runs ``otter assign`` on it and leaves ``student/<chapter>.ipynb`` (solutions removed, tests
hidden, everything else runnable) and ``autograder/<chapter>-autograder.zip``;
:func:`grade_class` grades a class (and :func:`grade` one notebook) without ``otter run``, whose
hidden tests run in the student's own kernel, where a submission can rebind the checkers: each
submission runs sandboxed (:mod:`companions.book.sandbox`), only its ``answer_*`` values come back,
as data, and the hidden tests run on them in a kernel that never runs student code
(:mod:`companions.book.judge`).
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterable

import nbformat

#: Fenced MyST directives: ```{name} args ... ``` or :::{name} args ... ::: (any fence length >= 3).
_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<args>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
_TITLES = {
    "prf:theorem": "Theorem",
    "prf:lemma": "Lemma",
    "prf:definition": "Definition",
    "prf:corollary": "Corollary",
    "prf:proposition": "Proposition",
    "prf:remark": "Remark",
    "prf:proof": "Proof",
    "prf:assumption": "Assumption",
    "prf:conjecture": "Conjecture",
    "prf:example": "Example",
    "prf:property": "Property",
    "prf:observation": "Observation",
    "prf:algorithm": "Algorithm",
    "prf:axiom": "Axiom",
    "prf:criterion": "Criterion",
    "note": "Note",
    "warning": "Warning",
    "important": "Important",
    "tip": "Tip",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "hint": "Hint",
    "seealso": "See also",
    "admonition": "",
}
INTERPRETATION_PROMPT = "_Explain your answer in a markdown cell below this one._"
#: Laptop defaults for one submission: wall-clock seconds and bytes of address space.
TIME_LIMIT = 600.0
MEMORY_LIMIT = 4 << 30


class AssignmentError(ValueError):
    """A chapter's graded questions are malformed; the message names the chapter and the
    question."""


@dataclasses.dataclass(frozen=True)
class Question:
    """One graded question of a chapter."""

    name: str  # the exercise's label
    points: float
    prompt: str  # the exercise, as plain markdown
    has_prose: bool  # its solution explains in words too (an interpretation to write)


# -- MyST blocks --------------------------------------------------------------------------------
@dataclasses.dataclass
class _Block:
    kind: str  # 'text' or a directive name
    text: str  # the raw text (for 'text') or the body (for a directive)
    args: str = ""
    options: dict = dataclasses.field(default_factory=dict)


def _split_blocks(markdown: str) -> list[_Block]:
    """Split a markdown cell into top-level fenced directives and the text between them."""
    blocks, text = [], []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE_OPEN.match(lines[i])
        if not match:
            text.append(lines[i])
            i += 1
            continue
        if text:
            blocks.append(_Block("text", "\n".join(text)))
            text = []
        fence, depth, j = match["fence"], 1, i + 1
        body = []
        while j < len(lines):
            inner = _FENCE_OPEN.match(lines[j])
            if inner and inner["fence"] == fence:
                depth += 1
            elif lines[j].strip() == fence:
                depth -= 1
                if depth == 0:
                    break
            body.append(lines[j])
            j += 1
        options = {}
        while body and (option := _OPTION.match(body[0])):
            options[option["key"]] = option["value"].strip()
            body.pop(0)
        blocks.append(
            _Block(match["name"], "\n".join(body).strip("\n"), match["args"].strip(), options)
        )
        i = j + 1
    if text:
        blocks.append(_Block("text", "\n".join(text)))
    return blocks


def plain_markdown(markdown: str) -> str:
    """MyST markdown as Jupyter renders it: theorem and admonition directives become block quotes
    with a bold title, roles become plain text, label targets go. (Cosmetic: for the student
    notebook, which is read in Jupyter, not Sphinx.)"""
    out = []
    for block in _split_blocks(markdown):
        if block.kind == "text":
            text = re.sub(r"^\([\w:-]+\)=[ \t]*$", "", block.text, flags=re.M)
            out.append(text)
        elif block.kind in ("math",):
            out.append(f"$$\n{block.text}\n$$")
        elif block.kind in ("exercise",):
            title = f"Exercise ({block.options.get('label', '')})" + (
                f": {block.args}" if block.args else ""
            )
            out.append(f"**{title}**\n\n{plain_markdown(block.text)}")
        elif block.kind in ("solution", "solution-start", "solution-end"):
            continue
        else:
            name = _TITLES.get(block.kind, block.kind)
            if name and block.args.startswith(name):  # "Theorem 8.16: ..." already names its kind
                name = ""
            title = " ".join(part for part in (name, block.args) if part)
            quoted = "\n".join(
                f"> {line}" if line else ">" for line in plain_markdown(block.text).splitlines()
            )
            out.append(f"> **{title}**\n>\n{quoted}" if title else quoted)
    text = "\n\n".join(part.strip("\n") for part in out if part.strip())
    text = re.sub(r"\{(?:cite|cite:p|cite:t)\}`([^`]*)`", r"[\1]", text)
    text = re.sub(
        r"\{(?:ref|numref|prf:ref|eq|doc)\}`(?:([^`<]*?)\s*<[^`]*>|([^`]*))`",
        lambda m: (m[1] or m[2]).strip(),
        text,
    )
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _has_solution_marker(code: str) -> bool:
    return bool(re.search(r"#\s*(SOLUTION|BEGIN SOLUTION)\b", code))


# -- the chapter, read as questions ---------------------------------------------------------------
def read_chapter(source: str | Path) -> nbformat.NotebookNode:
    """A chapter's MyST notebook as an nbformat notebook (jupytext)."""
    import jupytext

    return jupytext.read(Path(source))


def _grader(cell) -> dict | None:
    info = cell.get("metadata", {}).get("grader")
    if info is None:
        return None
    if not isinstance(info, dict) or "question" not in info or "points" not in info:
        raise AssignmentError(
            f"a grader cell needs metadata 'grader: {{question: LABEL, points: N}}', got {info!r}"
        )
    return info


def questions(nb: nbformat.NotebookNode, chapter: str = "chapter") -> list[Question]:
    """The graded questions of a chapter, in order, each checked to have its exercise, its gated
    solution with marked answer lines, and exactly one hidden test cell."""
    exercises, solutions, graders = {}, {}, {}
    current = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for block in _split_blocks(cell.source):
                if block.kind == "exercise" and "label" in block.options:
                    exercises[block.options["label"]] = plain_markdown(cell_block_markdown(block))
                elif block.kind == "solution-start":
                    current = block.args
                    solutions[current] = {"code": [], "prose": bool(block.text.strip())}
                elif block.kind == "solution-end":
                    current = None
                elif current is not None and block.kind == "text" and block.text.strip():
                    solutions[current]["prose"] = True
        elif cell.cell_type == "code":
            info = _grader(cell)
            if info is not None:
                name = str(info["question"])
                if name in graders:
                    raise AssignmentError(
                        f"{chapter}: question {name!r} has more than one grader cell"
                    )
                if "remove-cell" not in cell.metadata.get("tags", []):
                    raise AssignmentError(
                        f"{chapter}: the grader cell of {name!r} must be tagged remove-cell"
                    )
                graders[name] = info
            elif current is not None:
                solutions[current]["code"].append(cell.source)
    found = []
    for name, info in graders.items():
        if name not in exercises:
            raise AssignmentError(
                f"{chapter}: grader cell for {name!r}, but no exercise with :label: {name}"
            )
        if name not in solutions or not solutions[name]["code"]:
            raise AssignmentError(
                f"{chapter}: question {name!r} needs a gated solution "
                f"({{solution-start}} {name} ... {{solution-end}}) with code cells"
            )
        unmarked = [code for code in solutions[name]["code"] if not _has_solution_marker(code)]
        if unmarked:
            raise AssignmentError(
                f"{chapter}: a solution cell of {name!r} marks no answer line with "
                f"'# SOLUTION' (it would reach students whole): {unmarked[0][:60]!r}"
            )
        points = info["points"]
        if not isinstance(points, (int, float)) or points <= 0:
            raise AssignmentError(
                f"{chapter}: points of {name!r} must be a positive number, got {points!r}"
            )
        found.append(Question(name, float(points), exercises[name], solutions[name]["prose"]))
    return found


def cell_block_markdown(block: _Block) -> str:
    """An exercise block back as MyST text (for :func:`plain_markdown`)."""
    options = "".join(f":{k}: {v}\n" for k, v in block.options.items())
    return f"```{{exercise}} {block.args}\n{options}\n{block.text}\n```"


# -- the otter master ------------------------------------------------------------------------------
def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def _set_scale(source: str, scale: str | None) -> str:
    if scale is None:
        return source
    new, count = re.subn(
        r"^scale\s*=.*$",
        f"scale = {scale!r}  # set by the assignment build",
        source,
        count=1,
        flags=re.M,
    )
    if not count:
        raise AssignmentError("the parameters cell has no 'scale = ...' line to set")
    return new


def master_notebook(
    nb: nbformat.NotebookNode, chapter: str, scale: str | None = "smoke"
) -> nbformat.NotebookNode:
    """The otter master notebook of a chapter: its cells in order, theorem and admonition blocks as
    plain markdown, the scale fixed to ``scale``, non-graded solutions removed, and each graded
    question wrapped in otter's ``BEGIN QUESTION`` / ``SOLUTION`` / ``TESTS`` raw cells."""
    graded = {q.name: q for q in questions(nb, chapter)}
    if not graded:
        raise AssignmentError(f"{chapter}: no graded question (a code cell with 'grader' metadata)")
    config = {
        "name": chapter,
        "generate": True,
        "run_tests": False,
        "init_cell": False,
        "check_all_cell": False,
        "export_cell": False,
        "solutions_pdf": False,
    }
    out = nbformat.v4.new_notebook(
        metadata={
            "kernelspec": dict(nb.metadata.get("kernelspec", {}))
            or {"name": "python3", "display_name": "Python 3", "language": "python"}
        }
    )
    cells = out.cells
    cells.append(
        _raw(
            "# ASSIGNMENT CONFIG\n" + "\n".join(f"{k}: {json.dumps(v)}" for k, v in config.items())
        )
    )
    solution = None  # label of the solution being read, graded or not
    pending_text: list[str] = []

    def flush():
        text = plain_markdown("\n\n".join(pending_text))
        pending_text.clear()
        if text:
            cells.append(nbformat.v4.new_markdown_cell(text))

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for block in _split_blocks(cell.source):
                if block.kind == "exercise" and block.options.get("label") in graded:
                    flush()
                    q = graded[block.options["label"]]
                    cells.append(_raw(f"# BEGIN QUESTION\nname: {q.name}\npoints: {q.points:g}"))
                    prompt = q.prompt + (f"\n\n{INTERPRETATION_PROMPT}" if q.has_prose else "")
                    cells.append(nbformat.v4.new_markdown_cell(prompt))
                elif block.kind == "solution-start":
                    flush()
                    solution = block.args
                    if solution in graded:
                        cells.append(_raw("# BEGIN SOLUTION"))
                elif block.kind == "solution-end":
                    if solution in graded:
                        cells.append(_raw("# END SOLUTION"))
                    solution = None
                elif solution is not None or block.kind == "solution":
                    continue
                elif block.kind == "exercise":
                    pending_text.append(cell_block_markdown(block))
                elif block.kind == "text":
                    pending_text.append(block.text)
                else:
                    pending_text.append(_reassemble(block))
            continue
        flush()
        info = _grader(cell) if cell.cell_type == "code" else None
        if info is not None:
            header = '""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n'
            cells.extend(
                [
                    _raw("# BEGIN TESTS"),
                    nbformat.v4.new_code_cell(header + cell.source),
                    _raw("# END TESTS"),
                    _raw("# END QUESTION"),
                ]
            )
        elif solution is not None and solution not in graded:
            continue
        elif cell.cell_type == "code":
            source = cell.source
            tags = list(cell.metadata.get("tags", []))
            if "parameters" in tags:
                source = _set_scale(source, scale)
            cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags} if tags else {}))
        else:
            cells.append(nbformat.v4.new_raw_cell(cell.source))
    flush()
    return out


def _reassemble(block: _Block) -> str:
    options = "".join(f":{k}: {v}\n" for k, v in block.options.items())
    return f"```{{{block.kind}}} {block.args}\n{options}\n{block.text}\n```"


# -- otter -----------------------------------------------------------------------------------------
def _otter(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "otter", *args], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"otter {args[0]} failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


@dataclasses.dataclass(frozen=True)
class Bundle:
    """An assignment's files: the otter master, the solution notebook (what a perfect submission
    looks like), the student notebook and the autograder zip."""

    chapter: str
    folder: Path
    master: Path
    solution: Path
    student: Path
    autograder: Path
    questions: tuple[Question, ...]


def build_assignment(
    chapter: str,
    source: str | Path,
    out_dir: str | Path,
    scale: str | None = "smoke",
    time_limit: float | None = None,
    memory: int | None = None,
) -> Bundle:
    """Build ``<out_dir>/<chapter>/``: ``master.ipynb`` (otter's input, with solutions and tests),
    ``solution/<chapter>.ipynb`` (a submission with every answer filled in),
    ``student/<chapter>.ipynb``, ``autograder/<chapter>-autograder.zip`` (for otter's own tools)
    and ``grading.json`` (a submission's time and memory limits). Built in a temporary folder and
    moved into place, so a failure leaves nothing half-written."""
    nb = read_chapter(source)
    master = master_notebook(nb, chapter, scale)
    target = Path(out_dir) / chapter
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{chapter}-") as tmp:
        work = Path(tmp)
        nbformat.write(master, work / f"{chapter}.ipynb")
        _otter("assign", "-v", f"{chapter}.ipynb", "dist", cwd=work)
        final = work / "bundle"
        for part in ("student", "solution", "autograder"):
            (final / part).mkdir(parents=True)
        shutil.copy(work / f"{chapter}.ipynb", final / "master.ipynb")
        shutil.copy(
            work / "dist" / "autograder" / f"{chapter}.ipynb",
            final / "solution" / f"{chapter}.ipynb",
        )
        shutil.copy(
            work / "dist" / "student" / f"{chapter}.ipynb", final / "student" / f"{chapter}.ipynb"
        )
        zips = sorted((work / "dist" / "autograder").glob("*.zip"))
        if len(zips) != 1:
            raise RuntimeError(f"otter assign left {len(zips)} autograder zips for {chapter}")
        shutil.copy(zips[0], final / "autograder" / f"{chapter}-autograder.zip")
        (final / "grading.json").write_text(
            json.dumps(
                {
                    "time_limit": TIME_LIMIT if time_limit is None else time_limit,
                    "memory": MEMORY_LIMIT if memory is None else memory,
                }
            )
        )
        if target.exists():
            shutil.rmtree(target)
        final.rename(target)
    return Bundle(
        chapter,
        target,
        target / "master.ipynb",
        target / "solution" / f"{chapter}.ipynb",
        target / "student" / f"{chapter}.ipynb",
        target / "autograder" / f"{chapter}-autograder.zip",
        tuple(questions(nb, chapter)),
    )


@dataclasses.dataclass(frozen=True)
class Grade:
    """Points per question of one graded submission, with what went wrong (for the teacher) and
    per question feedback (for the student: missing, malformed or wrong; never the expected
    value)."""

    scores: dict  # question -> points earned
    possible: dict  # question -> points possible
    outputs: dict  # question -> status: correct, wrong, missing, malformed
    student: str = ""
    submission: str = ""  # the file's name
    errors: tuple = ()  # what stopped or limited the run: a bad file, the time or memory limit
    notes: dict = dataclasses.field(default_factory=dict)  # question -> note for the teacher

    @property
    def total(self) -> float:
        return sum(self.scores.values())

    @property
    def max_total(self) -> float:
        return sum(self.possible.values())

    def table(self) -> str:
        width = max([len(q) for q in self.scores] + [8])
        lines = [f"{'question':<{width}}  points   status", f"{'-' * width}  -------  ------"]
        lines += [
            f"{q:<{width}}  {self.scores[q]:g} / {self.possible[q]:g}    {self.outputs.get(q, '')}"
            for q in self.scores
        ]
        lines.append(f"{'total':<{width}}  {self.total:g} / {self.max_total:g}")
        lines += [f"error: {e}" for e in self.errors]
        return "\n".join(lines)

    def feedback(self) -> str:
        """For the student: each question's status, and what to check; no expected values."""
        advice = {
            "correct": "correct",
            "wrong": "answered, but not correct: check your computation",
            "missing": "no answer: an answer_... variable it needs was never set",
            "malformed": "the answer could not be read or used: check its type "
            "(a number, a list of numbers, or a sympy expression)",
        }
        lines = [
            f"{q}: {advice.get(self.outputs.get(q, 'missing'), '')} "
            f"({self.scores[q]:g} / {self.possible[q]:g})"
            for q in self.scores
        ]
        lines += [f"note: {e}" for e in self.errors]
        return "\n".join(lines)


class BadSubmission(ValueError):
    """A file that is not a submission of this chapter (not a notebook, empty, another chapter)."""


def check_submission(path: Path, chapter: str, tests) -> None:
    """Raise :class:`BadSubmission` unless ``path`` is a notebook of ``chapter``."""
    if not path.is_file():
        raise BadSubmission("no such file")
    if path.stat().st_size == 0:
        raise BadSubmission("empty file")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:
        raise BadSubmission(f"not a notebook ({type(error).__name__})") from None
    name = nb.metadata.get("otter", {}).get("assignment_name")
    if name is not None and name != chapter:
        raise BadSubmission(f"wrong chapter: a notebook of {name!r}, not {chapter!r}")
    if name is None:
        text = "\n".join(c.source for c in nb.cells)
        if not any(f"({t.question})" in text for t in tests):
            raise BadSubmission(f"wrong chapter: none of the questions of {chapter!r} in it")


def _bundle_folder(bundle) -> Path:
    """The chapter folder of a bundle, from a :class:`Bundle`, the folder, or its autograder zip."""
    if isinstance(bundle, Bundle):
        return bundle.folder
    path = Path(bundle)
    return path.parent.parent if path.suffix == ".zip" else path


#: Errors of a cell that met the sandbox's walls (a file not there, a folder read-only, no network).
_OS_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, OSError)
} | {"gaierror", "herror", "UnsupportedOperation"}


def _execute(
    submission: Path,
    scratch: Path,
    *,
    time_limit: float,
    memory: int,
    dry_run: int | None = None,
    sandboxed: bool = True,
    processes: int | None = None,
) -> list[str]:
    """Run the submission in its sandbox (a separate process group); the errors worth reporting.
    ``dry_run``: ``$COMPANIONS_DRY_RUN`` in the sandbox (each tracked loop keeps that many
    steps). ``sandboxed``: inside the operating-system sandbox (:func:`sandbox.launch`), the only
    writable folder ``scratch``, at most ``processes`` processes; else (``--no-sandbox``) on the
    machine itself, with the audit hook and the time and memory limits only."""
    import os
    import signal

    from companions.book import sandbox

    scratch.mkdir(parents=True)
    for sub in ("tmp", ".cache", ".config", ".jupyter"):
        (scratch / sub).mkdir()
    inside = Path(sandbox.INSIDE_SCRATCH) if sandboxed else scratch
    env = {
        "TMPDIR": str(inside / "tmp"),
        "MPLCONFIGDIR": str(inside / ".config"),
        "IPYTHONDIR": str(inside / ".ipython"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
    }
    if dry_run is not None:
        from companions.train import DRY_RUN_ENV

        env[DRY_RUN_ENV] = str(dry_run)
    report_file = scratch.parent / (scratch.name + "-" + sandbox.REPORT)
    report_fd = os.open(report_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    command = [sys.executable, str(Path(sandbox.__file__).resolve()), "run"]
    command += [sandbox.INSIDE_NOTEBOOK if sandboxed else str(submission), str(inside)]
    command += ["--time-limit", str(time_limit), "--memory", str(memory)]
    command += ["--report-fd", str(report_fd)]
    common = dict(
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=(report_fd,),
    )
    try:
        if sandboxed:
            processes = processes or sandbox.process_limit()
            command += ["--kernel-dir", str(inside / ".jupyter"), "--processes", str(processes)]
            if os.geteuid() == 0:  # the submission runs as an unprivileged user, never as root
                command += ["--drop-to", str(sandbox.UNPRIVILEGED)]
                for path in (scratch, *scratch.iterdir()):
                    os.chown(path, sandbox.UNPRIVILEGED, sandbox.UNPRIVILEGED)
            env["JUPYTER_RUNTIME_DIR"] = str(inside / ".jupyter" / "runtime")
            process = sandbox.launch(
                command,
                scratch,
                sandbox.inside_environment(env),
                notebook=submission,
                cwd=scratch.parent,
                **common,
            )
        else:
            env.update({k: os.environ[k] for k in sandbox.KEEP_ENV if k in os.environ})
            env.update(
                HOME=str(scratch),
                JUPYTER_RUNTIME_DIR=str(scratch.parent / (scratch.name + "-runtime")),
            )
            process = subprocess.Popen(command, cwd=scratch.parent, env=env, **common)
    finally:
        os.close(report_fd)
    errors = []

    def kill() -> None:
        if sandboxed:
            sandbox.stop(process)
        else:
            os.killpg(process.pid, signal.SIGKILL)

    try:
        # A kernel deaf to interrupts (native code, SIGINT ignored) is killed, its group with it
        # (in the sandbox, every process of the sandbox).
        output, _ = process.communicate(timeout=time_limit + sandbox.reserve_for(time_limit) + 20)
    except subprocess.TimeoutExpired:
        kill()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # something still holds its output open: leave it
            pass
        return [f"stopped at the time limit ({time_limit:g} s)"]
    finally:
        if process.poll() is None:
            kill()
    text = report_file.read_text() if report_file.is_file() else ""
    if process.returncode != 0 or not text:
        tail = output.decode(errors="replace").strip().splitlines()[-1:] if output else []
        return [f"the notebook could not be run (exit {process.returncode}) {' '.join(tail)}"]
    report = json.loads(text)
    if report["timed_out"]:
        errors.append(f"stopped at the time limit ({time_limit:g} s)")
    if report["memory"]:
        errors.append(f"ran out of memory (limit {memory / 2**30:g} GiB)")
    if report.get("processes"):
        errors.append(
            f"left {report['processes']} processes running (at most {processes} at once), "
            "stopped with the sandbox"
        )
    refused = [e for e in report["errors"] if "sandbox:" in e]
    errors += [f"refused: {e}" for e in refused[:3]]
    walls = [e for e in report["errors"] if e.split(": ")[1:2] and e.split(": ")[1] in _OS_ERRORS]
    walls = [e for e in walls if "sandbox:" not in e]
    if walls and sandboxed:
        errors += [f"system error: {e}" for e in walls[:3]]
        errors.append(
            "(a graded notebook reads only its own folder and the Python environment, writes "
            "only in its own folder, and has no network)"
        )
    return errors


def hidden_tests_of(bundle) -> list:
    """The hidden tests of a built assignment (:func:`companions.book.judge.hidden_tests`)."""
    from companions.book import judge

    master = _bundle_folder(bundle) / "master.ipynb"
    return judge.hidden_tests(nbformat.read(master, as_version=4))


def limits_of(bundle) -> dict:
    """The time and memory limits the assignment was built with (``grading.json``), else the
    laptop defaults :data:`TIME_LIMIT` and :data:`MEMORY_LIMIT`."""
    limits = {"time_limit": TIME_LIMIT, "memory": MEMORY_LIMIT}
    path = _bundle_folder(bundle) / "grading.json"
    if path.is_file():
        limits.update(json.loads(path.read_text()))
    return limits


class Grader:
    """One grading session of a chapter's class: the judge (a kernel that ran the solution once,
    and never runs student code) stays up while any number of submissions are graded.

    :meth:`grade` executes a submitted notebook in the operating-system sandbox of
    :mod:`companions.book.sandbox` (bubblewrap: its own scratch folder the only one it can write,
    nothing of the machine's files but the Python environment, no network), under the time, memory
    and process limits, with its audit hook; only its ``answer_*`` values come back, as data, and
    :class:`companions.book.judge.Judge` runs the hidden tests on them.
    :meth:`grade_answers` judges answers exported earlier (``keep_answers=`` of :meth:`grade`), so
    a regrade need not run the notebook again. Use it as a context manager.

    ``judge_kernel``: a kernel that already ran the solution's code, handed to the judge instead of
    running the solution again (:class:`companions.book.judge.Judge`'s ``kernel``); the grader
    shuts it down when it closes.

    ``dry_run``: every submission runs as a dry run (``$COMPANIONS_DRY_RUN``, see
    :mod:`companions.train`): each tracked loop keeps its first ``dry_run`` steps, and a check
    that fails does not stop the notebook. A quick check that a bundle grades (the test suite
    grades each chapter's blank student notebook so); never for grading a class, whose answers
    come from the whole run.

    ``sandbox=False`` runs each submission on the machine itself, with the teacher's access to
    files and network (the audit hook and the limits only): unsafe, for notebooks the teacher
    trusts. With the sandbox (the default), a machine where it cannot run raises
    :class:`companions.book.sandbox.SandboxUnavailable` here, saying how to install it.
    ``processes``: the most processes and threads a submission may run at once, in the sandbox
    (default: :func:`companions.book.sandbox.process_limit`)."""

    def __init__(
        self,
        bundle,
        *,
        time_limit: float | None = None,
        memory: int | None = None,
        judge_kernel=None,
        dry_run: int | None = None,
        sandbox: bool = True,
        processes: int | None = None,
    ):
        if dry_run is not None and (
            isinstance(dry_run, bool) or not isinstance(dry_run, int) or dry_run < 1
        ):
            raise ValueError(f"parameter 'dry_run' = {dry_run!r} must be None or an integer >= 1")
        self.dry_run = dry_run
        from companions.book import judge as judge_mod
        from companions.book import sandbox as sandbox_mod

        self.folder = _bundle_folder(bundle).resolve()
        limits = limits_of(self.folder)
        self.time_limit = limits["time_limit"] if time_limit is None else time_limit
        self.memory = limits["memory"] if memory is None else memory
        self.processes = processes or sandbox_mod.process_limit()
        self.sandbox = sandbox
        if sandbox:  # before anything is started: no silent fallback to an unsandboxed run
            sandbox_mod.check_available()
            sandbox_mod.check_hidden(self.folder, "the assignment folder")
        master = self.folder / "master.ipynb"
        solutions = sorted((self.folder / "solution").glob("*.ipynb"))
        if not master.is_file() or len(solutions) != 1:
            raise FileNotFoundError(
                f"no assignment bundle (master.ipynb, solution/) in {self.folder}"
            )
        self.solution = solutions[0]
        self.chapter = self.solution.stem
        self.tests = judge_mod.hidden_tests(nbformat.read(master, as_version=4))
        self.possible = {t.question: t.points for t in self.tests}
        self._judge = None
        self._judge_kernel = judge_kernel
        self._count = 0
        self._tmp = tempfile.TemporaryDirectory(prefix="grade-")

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()
            self._judge = None
        elif self._judge_kernel is not None:  # handed over but never used: still ours to stop
            self._judge_kernel.shutdown_kernel(now=True)
        self._judge_kernel = None
        self._tmp.cleanup()

    def _judge_started(self):
        from companions.book import judge as judge_mod

        if self._judge is None:  # the solution runs while the first submission does
            judge_dir = Path(self._tmp.name) / "judge"
            judge_dir.mkdir()
            self._judge = judge_mod.Judge(
                self.solution, self.tests, judge_dir, kernel=self._judge_kernel
            )
        return self._judge

    def grade(self, submission: str | Path, *, keep_answers: str | Path | None = None) -> Grade:
        """Run and judge one submitted notebook; a bad submission scores zero, with the reason in
        the grade's ``errors``. ``keep_answers``: copy the answers it exported to this file."""
        submission = Path(submission)
        errors: list[str] = []
        try:
            check_submission(submission, self.chapter, self.tests)
        except BadSubmission as error:
            return self._grade(None, submission, [f"bad submission: {error}"], judged=False)
        if self.sandbox:
            from companions.book import sandbox as sandbox_mod

            sandbox_mod.check_hidden(submission.resolve().parent, "the submission's folder")
        judge = self._judge_started()
        self._count += 1
        scratch = Path(self._tmp.name) / f"s{self._count}"
        errors += _execute(
            submission.resolve(),
            scratch,
            time_limit=self.time_limit,
            memory=self.memory,
            dry_run=self.dry_run,
            sandboxed=self.sandbox,
            processes=self.processes,
        )
        answers = scratch / "answers.json"
        try:
            if keep_answers is not None and answers.is_file() and not answers.is_symlink():
                shutil.copyfile(answers, keep_answers)
            return self._grade(answers if answers.is_file() else None, submission, errors, judge)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def solution_answers(self) -> Path:
        """The answers the solution notebook exported when the judge ran it: what a perfect
        submission exports (:meth:`companions.book.judge.Judge.solution_answers`). Grading them
        with :meth:`grade_answers` checks the hidden tests without running the notebook again.
        The file lives as long as this grading session."""
        return self._judge_started().solution_answers()

    def grade_answers(self, answers: str | Path, *, student: str = "") -> Grade:
        """Judge answers exported earlier by a graded submission (no notebook is run)."""
        answers = Path(answers)
        if not answers.is_file():
            raise FileNotFoundError(f"answers: no such file {answers}")
        return self._grade(answers, answers, [], self._judge_started(), student=student)

    def _grade(self, answers, submission: Path, errors, judge=None, *, judged=True, student=""):
        from companions.book import judge as judge_mod

        if judged:
            verdicts = judge.judge(answers)
        else:
            verdicts = {t.question: judge_mod.Verdict("missing") for t in self.tests}
        possible = self.possible
        return Grade(
            {q: (possible[q] if verdicts[q].status == "correct" else 0.0) for q in possible},
            dict(possible),
            {q: verdicts[q].status for q in possible},
            student=student or submission.stem,
            submission=submission.name,
            errors=tuple(errors),
            notes={q: verdicts[q].note for q in possible if verdicts[q].note},
        )


def grade_class(
    bundle,
    submissions: Iterable[str | Path],
    *,
    time_limit: float | None = None,
    memory: int | None = None,
    on_grade=None,
    sandbox: bool = True,
) -> list[Grade]:
    """Grade submissions of one chapter in one :class:`Grader` session (the solution runs once);
    ``on_grade(grade)`` is called after each. ``sandbox=False``: see :class:`Grader` (unsafe)."""
    grades = []
    with Grader(bundle, time_limit=time_limit, memory=memory, sandbox=sandbox) as grader:
        for submission in submissions:
            grades.append(grader.grade(submission))
            if on_grade is not None:
                on_grade(grades[-1])
    return grades


def grade(bundle, submission: str | Path, out_dir: str | Path | None = None, **limits) -> Grade:
    """Grade one submitted notebook (see :func:`grade_class`). ``bundle``: the assignment's folder
    ``<out>/<chapter>``, its :class:`Bundle`, or its autograder zip. ``out_dir``: write
    ``results.json`` there."""
    submission = Path(submission)
    if not submission.is_file():
        raise FileNotFoundError(f"submission: no such file {submission}")
    (result,) = grade_class(bundle, [submission], **limits)
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "results.json").write_text(
            json.dumps(dataclasses.asdict(result), indent=1)
        )
    return result


def chapters_with_questions(sources: Iterable[tuple[str, Path]]) -> dict[str, list[Question]]:
    """``{chapter: questions}`` for the given ``(chapter, source)`` pairs."""
    return {chapter: questions(read_chapter(source), chapter) for chapter, source in sources}


def wrong_submission(solution: str | Path, question: str, out: str | Path) -> Path:
    """A copy of the solution notebook whose answer to ``question`` is off by 1 %: every line of its
    solution cells that ends in ``# SOLUTION`` and assigns a value, ``x = expr``, becomes
    ``x = (expr) * 1.01``. The other answers are untouched, so a grader that works takes away
    exactly this question's points (used by the tests, and by a teacher checking a new question)."""
    nb = nbformat.read(Path(solution), as_version=4)
    changed = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or question not in cell.get("metadata", {}).get(
            "otter", {}
        ).get("tests", []):
            continue
        lines = cell.source.splitlines()
        for i, line in enumerate(lines):
            match = re.match(r"^(\s*[A-Za-z_]\w*\s*=\s*)(.+?)\s*#\s*SOLUTION\s*$", line)
            if match:
                lines[i] = f"{match[1]}({match[2]}) * 1.01  # deliberately wrong"
                changed += 1
        cell.source = "\n".join(lines)
    if not changed:
        raise AssignmentError(
            f"question {question!r}: no 'name = value  # SOLUTION' line to make wrong in {solution}"
        )
    nbformat.write(nb, Path(out))
    return Path(out)


def _off_by_one_percent(data, name: str):
    """An exported answer value (the JSON of :func:`companions.book.judge.read_answers`) made 1 %
    larger; a zero becomes 0.01."""
    if isinstance(data, bool) or data is None or isinstance(data, str):
        raise AssignmentError(f"answer {name!r}: a {type(data).__name__} cannot be made 1 % off")
    if isinstance(data, (int, float)):
        return data * 1.01 if data else 0.01
    if isinstance(data, list):
        return [_off_by_one_percent(x, name) for x in data]
    ((kind, body),) = data.items()
    if kind == "fraction":
        return {"fraction": [str(int(body[0]) * 101), str(int(body[1]) * 100)]}
    if kind == "complex":
        return {"complex": [_off_by_one_percent(x, name) for x in body]}
    if kind == "dict":
        return {"dict": [[k, _off_by_one_percent(v, name)] for k, v in body]}
    if kind == "sympy":
        return {"sympy": ["Mul", ["Rational", "101", "100"], body]}
    raise AssignmentError(f"answer {name!r}: unknown exported kind {kind!r}")


def wrong_answers(answers: str | Path, names: Iterable[str], out: str | Path) -> Path:
    """A copy of exported answers (``keep_answers=`` of :meth:`Grader.grade`) where the answers
    ``names`` are off by 1 %, as :func:`wrong_submission` makes them, without running the notebook
    again: judged with :meth:`Grader.grade_answers`, exactly the question reading them loses its
    points."""
    data = json.loads(Path(answers).read_text())
    names = list(names)
    for name in names:
        if name not in data or set(data[name]) != {"value"}:
            raise AssignmentError(f"answer {name!r} is not among the readable answers in {answers}")
        data[name] = {"value": _off_by_one_percent(data[name]["value"], name)}
    if not names:
        raise AssignmentError("wrong_answers: no answer named")
    Path(out).write_text(json.dumps(data))
    return Path(out)


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a chapter notebook without its solutions: ``{solution}`` blocks, everything from
    ``{solution-start}`` to ``{solution-end}`` (code cells included) and the hidden grader cells go.
    What the student edition of the book offers for download."""
    out = nbformat.from_dict(nb)
    cells, inside = [], False
    for cell in out.cells:
        if cell.cell_type == "markdown":
            kept = []
            for block in _split_blocks(cell.source):
                if block.kind == "solution-start":
                    inside = True
                elif block.kind == "solution-end":
                    inside = False
                elif not inside and block.kind != "solution":
                    kept.append(
                        block.text
                        if block.kind == "text"
                        else cell_block_markdown(block)
                        if block.kind == "exercise"
                        else _reassemble(block)
                    )
            cell.source = "\n\n".join(part.strip("\n") for part in kept if part.strip())
            if cell.source:
                cells.append(cell)
        elif not inside and (cell.cell_type != "code" or _grader(cell) is None):
            cells.append(cell)
    out.cells = cells
    return out
