"""Grading that no submission can change: a student's notebook runs in a sandbox
(:mod:`companions.book.sandbox`) and only its answers come back, as JSON data; they are judged in a
separate kernel that never runs student code.

The judge kernel executes the assignment's *solution* notebook once per class (trusted code: the
chapter's own), which leaves every module and helper the hidden tests use. For each student it
deletes the solution's ``answer_*`` names, sets the student's answers (read by
:func:`load_answers`, which builds numbers, lists and sympy expressions from data and never
evaluates text), and runs only the hidden test cells. A question is ``correct``, ``wrong`` (its
test's assertion failed), ``missing`` (an answer it reads was never set) or ``malformed`` (an answer
could not be read back, or the test could not use it).
"""

from __future__ import annotations

import dataclasses
import json
import queue
import re
import threading
from fractions import Fraction
from pathlib import Path

#: The most a student's answers file may hold, and the most values in it (sympy nodes included).
MAX_BYTES = 4 << 20
MAX_NODES = 200_000
MAX_DEPTH = 200
MAX_STRING = 10_000

_SYMPY_FUNCTIONS = {
    "Add",
    "Mul",
    "Pow",
    "exp",
    "log",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "factorial",
    "gamma",
    "binomial",
    "Abs",
    "sign",
    "Max",
    "Min",
    "floor",
    "ceiling",
    "erf",
    "re",
    "im",
    "conjugate",
}
_SYMPY_CONSTANTS = {
    "Pi",
    "Exp1",
    "ImaginaryUnit",
    "Infinity",
    "NegativeInfinity",
    "ComplexInfinity",
    "NaN",
    "EulerGamma",
    "GoldenRatio",
    "Catalan",
    "Zero",
    "One",
    "NegativeOne",
    "Half",
}
_ASSUMPTIONS = {
    "positive",
    "negative",
    "nonnegative",
    "nonpositive",
    "real",
    "integer",
    "nonzero",
    "zero",
    "finite",
    "complex",
    "rational",
    "odd",
    "even",
    "prime",
    "extended_real",
    "extended_positive",
    "extended_negative",
    "extended_nonnegative",
    "extended_nonpositive",
    "extended_nonzero",
    "commutative",
    "imaginary",
    "irrational",
    "algebraic",
    "transcendental",
    "hermitian",
    "antihermitian",
    "infinite",
    "composite",
    "noninteger",
    "polar",
}


class Unreadable:
    """An answer the grader could not read back (its reason is kept for the teacher)."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unreadable({self.reason!r})"


class _Refusal(ValueError):
    pass


def _integer(text) -> int:
    """An integer written in decimal digits (a fraction's numerator or denominator), bounded."""
    if not (isinstance(text, str) and 0 < len(text) <= 4000 and text.lstrip("-").isdigit()):
        raise _Refusal("malformed fraction")
    return int(text)


class _Reader:
    def __init__(self):
        self.nodes = 0
        self.strings: set[str] = set()

    def count(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Refusal("too many values")
        if depth > MAX_DEPTH:
            raise _Refusal("nested too deeply")

    def value(self, data, depth: int = 0):
        self.count(depth)
        if data is None or isinstance(data, (bool, int, float)):
            return data
        if isinstance(data, str):
            if len(data) > MAX_STRING:
                raise _Refusal("string too long")
            if data:
                self.strings.add(data)
            return data
        if isinstance(data, list):
            return [self.value(x, depth + 1) for x in data]
        if isinstance(data, dict) and len(data) == 1:
            ((kind, body),) = data.items()
            if kind == "complex" and isinstance(body, list) and len(body) == 2:
                real, imag = body
                if isinstance(real, (int, float)) and isinstance(imag, (int, float)):
                    return complex(real, imag)
            if kind == "fraction" and isinstance(body, list) and len(body) == 2:
                numerator, denominator = _integer(body[0]), _integer(body[1])
                if denominator == 0:
                    raise _Refusal("malformed fraction")
                return Fraction(numerator, denominator)
            if kind == "dict" and isinstance(body, list):
                out = {}
                for item in body:
                    if not (isinstance(item, list) and len(item) == 2):
                        raise _Refusal("malformed dict")
                    key = self.value(item[0], depth + 1)
                    if isinstance(key, list):
                        key = tuple(key)
                    try:
                        out[key] = self.value(item[1], depth + 1)
                    except TypeError as error:  # an unhashable key
                        raise _Refusal(str(error)) from None
                return out
            if kind == "sympy":
                return self.sympy(body, depth + 1)
        raise _Refusal(f"not an answer value: {type(data).__name__}")

    def sympy(self, node, depth: int):
        """A sympy expression from ``[ClassName, *args]``: only the classes named above, built
        with ``evaluate=False`` (no huge powers computed); no text is ever parsed."""
        import sympy as sp

        self.count(depth)
        if not (isinstance(node, list) and node and isinstance(node[0], str)):
            raise _Refusal("malformed sympy expression")
        kind, args = node[0], node[1:]
        if kind in ("Symbol", "Dummy"):
            if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], dict):
                raise _Refusal("malformed Symbol")
            name, assumptions = args
            if not 0 < len(name) <= 100:
                raise _Refusal("bad symbol name")
            kept = {k: v for k, v in assumptions.items() if k in _ASSUMPTIONS and type(v) is bool}
            try:
                return sp.Symbol(name, **kept)
            except Exception as error:  # inconsistent assumptions
                raise _Refusal(f"Symbol: {error}") from None
        if kind == "Integer":
            if (
                len(args) != 1
                or not isinstance(args[0], str)
                or not re.fullmatch(r"-?\d{1,4000}", args[0])
            ):
                raise _Refusal("malformed Integer")
            return sp.Integer(int(args[0]))
        if kind == "Rational":
            if len(args) != 2 or not all(
                isinstance(a, str) and re.fullmatch(r"-?\d{1,4000}", a) for a in args
            ):
                raise _Refusal("malformed Rational")
            if int(args[1]) == 0:
                raise _Refusal("zero denominator")
            return sp.Rational(int(args[0]), int(args[1]))
        if kind == "Float":
            if (
                len(args) != 2
                or not isinstance(args[0], str)
                or not re.fullmatch(r"-?(\d+\.?\d*(e[-+]?\d+)?|inf|nan)", args[0], re.I)
                or len(args[0]) > 2000
                or type(args[1]) is not int
                or not 1 <= args[1] <= 10_000
            ):
                raise _Refusal("malformed Float")
            return sp.Float(args[0], precision=args[1])
        if kind in _SYMPY_CONSTANTS and not args:
            return getattr(sp.S, kind)
        if kind in _SYMPY_FUNCTIONS and args:
            children = [self.sympy(a, depth + 1) for a in args]
            try:
                return getattr(sp, kind)(*children, evaluate=False)
            except Exception as error:
                raise _Refusal(f"{kind}: {type(error).__name__}") from None
        raise _Refusal(f"sympy {kind!r} is not an allowed answer")


def read_answers(text: str | bytes) -> dict:
    """``{name: value or Unreadable}`` from the JSON a submission's last cell wrote. Untrusted:
    anything but the expected shape becomes :class:`Unreadable` (or, for the whole file, an empty
    answer set), and nothing in it is executed."""
    _UNTRUSTED.clear()
    if len(text) > MAX_BYTES:
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    out, reader = {}, _Reader()
    for name, entry in data.items():
        if not (isinstance(name, str) and re.fullmatch(r"answer_\w{1,100}", name, re.A)):
            continue
        if isinstance(entry, dict) and set(entry) == {"value"}:
            try:
                out[name] = reader.value(entry["value"])
            except (_Refusal, RecursionError, ValueError, OverflowError) as error:
                out[name] = Unreadable(str(error)[:200])
        else:
            reason = entry.get("unreadable") if isinstance(entry, dict) else None
            out[name] = Unreadable(str(reason)[:200] if reason else "unreadable")
    _UNTRUSTED.clear()
    _UNTRUSTED.update(reader.strings)
    return out


def load_answers(path: str | Path) -> dict:
    """:func:`read_answers` of a file (an empty answer set if there is none)."""
    path = Path(path)
    # The student's kernel wrote it: a link (to /dev/zero, to a teacher's file) is not read.
    if path.is_symlink() or not path.is_file():
        return {}
    with path.open("rb") as f:
        return read_answers(f.read(MAX_BYTES + 1))


#: The text among the answers read last (in the judge: the student being judged).
_UNTRUSTED: set[str] = set()


def refuse_parsing() -> None:
    """From now on, in this process, sympy refuses to parse text that holds a string of the answers
    read last (``sympify('...')`` would ``eval`` it): a hidden test that passes a student's string
    to sympy gets an error, not the student's code run. Other text parses as before."""
    import sympy.parsing.sympy_parser as parser

    original = parser.parse_expr
    if getattr(original, "refuses_answers", False):
        return

    def parse_expr(text, *args, **kwargs):
        if isinstance(text, str) and any(s in text for s in _UNTRUSTED):
            raise ValueError("the judge does not parse a student's text as sympy")
        return original(text, *args, **kwargs)

    parse_expr.refuses_answers = True
    parser.parse_expr = parse_expr


# -- the assignment's tests ------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class HiddenTest:
    question: str
    points: float
    source: str

    @property
    def answers(self) -> tuple[str, ...]:
        """The ``answer_*`` names the test reads."""
        return tuple(dict.fromkeys(re.findall(r"\banswer_\w+", self.source)))


def hidden_tests(master) -> list[HiddenTest]:
    """The hidden tests of an otter master notebook (:func:`assign.master_notebook`), in order."""
    tests, current = [], None
    for cell in master.cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            fields = dict(
                line.split(":", 1) for line in cell.source.splitlines()[1:] if ":" in line
            )
            current = (fields["name"].strip(), float(fields["points"]))
        elif cell.cell_type == "code" and "# BEGIN TEST CONFIG" in cell.source and current:
            source = cell.source.split('""" # END TEST CONFIG', 1)[-1].lstrip("\n")
            tests.append(HiddenTest(current[0], current[1], source))
            current = None
    return tests


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the judge found for one question: its status and a note for the teacher (which answers
    were missing or unreadable, or the kind of error); never the expected value."""

    status: str  # correct, wrong, missing, malformed
    note: str = ""


class Judge:
    """A trusted kernel that ran the solution notebook, then judges sets of answers. Its calls run
    on one worker thread (nbclient's kernel client stays on the thread that started it); the
    solution runs while the first submissions execute.

    ``kernel``: a started ``jupyter_client.KernelManager`` whose kernel has *already* run the
    solution's code (the chapter itself, executed by papermill with its kernel kept, as the test
    suite does with :func:`companions.book.cli.execute_chapter`'s ``kernel``): the judge then runs
    nothing of the solution, works in ``workdir``, and shuts that kernel down when it closes. The
    caller vouches that the code it ran is the solution's (``tests/book/test_assign.py`` checks
    that the solution's code cells are the chapter's, grader cells aside)."""

    def __init__(
        self,
        solution: Path,
        tests: list[HiddenTest],
        workdir: Path,
        test_limit=300,
        *,
        kernel=None,
    ):
        self.tests = tests
        self._kernel = kernel
        #: where the solution's own ``answer_*`` values are exported (:meth:`solution_answers`)
        self.solution_answers_file = Path(workdir) / "solution-answers.json"
        self._requests: queue.Queue = queue.Queue()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._serve, args=(Path(solution), Path(workdir), test_limit), daemon=True
        )
        self._thread.start()

    def _serve(self, solution: Path, workdir: Path, test_limit: float) -> None:
        import nbformat
        from nbclient import NotebookClient

        from companions.book import sandbox

        try:
            if self._kernel is not None and not self._kernel.is_alive():
                # a fresh kernel would hold none of the solution's names: refuse, never misjudge
                raise RuntimeError("the kernel handed to the judge is not running")
            nb = nbformat.read(solution, as_version=4)
            nb.cells = [c for c in nb.cells if c.cell_type == "code"]
            count = len(nb.cells)
            nb.cells.append(nbformat.v4.new_code_cell(""))  # the slot each judged cell runs in
            client = NotebookClient(
                nb,
                km=self._kernel,
                timeout_func=lambda cell: test_limit if cell is nb.cells[-1] else None,
                interrupt_on_timeout=True,
                allow_errors=True,
                kernel_name="python3",
                resources={"metadata": {"path": str(workdir)}},
                shutdown_kernel="immediate",
            )
            with client.setup_kernel():
                if self._kernel is not None:  # the solution ran already; work where we would
                    count = 0
                    moved = self._run(
                        client, nb, f"import os as __os\n__os.chdir({str(workdir)!r})"
                    )
                    if moved:
                        raise RuntimeError(
                            f"the judge could not enter {workdir}: {moved[0].evalue}"
                        )
                for i in range(count):
                    client.execute_cell(nb.cells[i], i)
                    errors = [o for o in nb.cells[i].outputs if o.output_type == "error"]
                    if errors:
                        raise RuntimeError(
                            f"the solution notebook failed in cell {i + 1}: "
                            f"{errors[0].ename}: {errors[0].evalue}"
                        )
                # the answers a perfect submission would export, before any are judged
                dumped = self._run(client, nb, sandbox.DUMP_CELL)
                if dumped:
                    raise RuntimeError(
                        f"the solution's answers could not be exported: "
                        f"{dumped[0].ename}: {dumped[0].evalue}"
                    )
                (workdir / sandbox.ANSWERS).replace(self.solution_answers_file)
                self._run(
                    client,
                    nb,
                    "from companions.book import judge as __judge\n__judge.refuse_parsing()",
                )
                self._ready.set()
                while (request := self._requests.get()) is not None:
                    source, reply = request
                    reply.put(self._run(client, nb, source))
        except BaseException as error:  # reported to every caller
            self._error = error
            self._ready.set()
            while (request := self._requests.get()) is not None:
                request[1].put(error)

    @staticmethod
    def _run(client, nb, source: str):
        import nbformat

        cell = nbformat.v4.new_code_cell(source)
        nb.cells[-1] = cell
        client.execute_cell(cell, len(nb.cells) - 1)
        return [o for o in cell.outputs if o.output_type == "error"]

    def _call(self, source: str):
        reply: queue.Queue = queue.Queue()
        self._requests.put((source, reply))
        result = reply.get()
        if isinstance(result, BaseException):
            raise RuntimeError(f"the judge failed: {result}") from result
        return result

    def solution_answers(self) -> Path:
        """The solution's own ``answer_*`` values, exported as a submission's are (by
        :data:`companions.book.sandbox.DUMP_CELL`) once the solution has run: the answers a
        perfect submission exports. Waits for the solution to finish."""
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError(f"the judge failed: {self._error}") from self._error
        return self.solution_answers_file

    def judge(self, answers_file: Path | None) -> dict[str, Verdict]:
        """``{question: Verdict}`` for the answers in ``answers_file`` (None: no answers)."""
        answers = load_answers(answers_file) if answers_file else {}
        path = json.dumps(str(answers_file)) if answers_file else "None"
        self._call(
            "for __n in [__n for __n in globals() if __n.startswith('answer_')]:\n"
            "    del globals()[__n]\n"
            f"globals().update(__judge.load_answers({path}) if {path} else {{}})"
        )
        verdicts = {}
        for test in self.tests:
            missing = [a for a in test.answers if a not in answers]
            unreadable = [a for a in test.answers if isinstance(answers.get(a), Unreadable)]
            if missing:
                verdicts[test.question] = Verdict("missing", "not set: " + ", ".join(missing))
            elif unreadable:
                verdicts[test.question] = Verdict(
                    "malformed", "; ".join(f"{a}: {answers[a].reason}" for a in unreadable)
                )
            else:
                errors = self._call(test.source)
                if not errors:
                    verdicts[test.question] = Verdict("correct")
                elif errors[0].ename == "AssertionError":
                    verdicts[test.question] = Verdict("wrong", ", ".join(test.answers))
                elif errors[0].ename == "NameError" and "answer_" in errors[0].evalue:
                    verdicts[test.question] = Verdict("missing", errors[0].evalue[:200])
                elif errors[0].ename == "KeyboardInterrupt":
                    verdicts[test.question] = Verdict("malformed", "judging it took too long")
                else:
                    verdicts[test.question] = Verdict(
                        "malformed", f"the test could not use it ({errors[0].ename})"
                    )
        return verdicts

    def close(self) -> None:
        self._requests.put(None)
        self._thread.join(timeout=60)
        if self._kernel is not None:  # a kernel handed over is the judge's to shut down
            self._kernel.shutdown_kernel(now=True)
            self._kernel = None
