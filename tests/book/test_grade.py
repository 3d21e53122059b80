"""Grading a class (companions.book.judge, companions.book.sandbox, assign.grade_class, the CLI's
grade on a folder): answers read back as data, never code; a submission that rebinds the checkers
scores nothing; a notebook that loops, allocates without bound or writes outside its folder is
stopped and reported; a folder gets a gradebook that resumes. Submissions run in the
operating-system sandbox (bubblewrap): notebooks that attack it score nothing and leave nothing;
without bubblewrap, grading stops unless told --no-sandbox.

The unit tests are quick. The class tests build one chapter's assignment (the quickest to run) and
grade small notebooks of it; each notebook costs a kernel start.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import nbformat
import numpy as np
import pytest
import sympy as sp

from companions.book import answers, assign, cli, judge, sandbox
from tests.book.test_chapters import _notebook


# -- answers as data ------------------------------------------------------------------------------
def dump(tmp_path, monkeypatch, **names) -> dict:
    """Run the cell a submission ends with on ``names`` and read back what the grader would."""
    monkeypatch.chdir(tmp_path)
    namespace = dict(names)
    exec(sandbox.DUMP_CELL, namespace)
    return judge.load_answers(tmp_path / sandbox.ANSWERS)


def test_answers_come_back_as_the_same_values(tmp_path, monkeypatch):
    import torch

    k, n = sp.symbols("k n", positive=True)
    expression = n ** (-1 / (k + 1)) * sp.log(sp.Rational(1, 3)) + sp.pi * sp.factorial(k)
    back = dump(
        tmp_path,
        monkeypatch,
        answer_float=0.25,
        answer_int=7,
        answer_numpy=np.float64(1.5),
        answer_array=np.arange(3.0),
        answer_torch=torch.tensor([[1.0, 2.0]]),
        answer_expr=expression,
        answer_float_expr=sp.Float("1.25") * k,
        answer_text="two",
        answer_fraction=Fraction(-5, 8),
        answer_blank=...,
        answer_function=lambda x: x,
        other=3,
    )
    assert back["answer_float"] == 0.25 and back["answer_int"] == 7
    assert back["answer_numpy"] == 1.5 and back["answer_array"] == [0.0, 1.0, 2.0]
    assert back["answer_torch"] == [[1.0, 2.0]] and back["answer_text"] == "two"
    assert back["answer_fraction"] == Fraction(-5, 8)
    assert isinstance(back["answer_fraction"], Fraction)
    assert answers.same_expression(back["answer_expr"], expression)
    assert answers.same_expression(back["answer_float_expr"], 1.25 * k)
    assert "answer_blank" not in back and "other" not in back  # ... is the blank placeholder
    assert isinstance(back["answer_function"], judge.Unreadable)


NESTED: list = [1]
for _ in range(judge.MAX_DEPTH + 5):
    NESTED = [NESTED]


@pytest.mark.parametrize(
    "value",
    [
        {"sympy": ["Function", ["Symbol", "f", {}]]},
        {"sympy": ["__import__", ["Symbol", "os", {}]]},
        {"sympy": ["Integer", "1" * 5000]},
        {"sympy": ["Symbol", "x", {"positive": "__import__('os')"}, "extra"]},
        {"sympy": ["Float", "__import__('os').system('true')", 53]},
        {"code": "print(1)"},
        {"fraction": ["1", "0"]},
        {"fraction": ["1", "2.5"]},
        {"fraction": ["__import__('os')", "1"]},
        NESTED,
        [list(range(judge.MAX_NODES + 1))],
    ],
)
def test_an_answer_outside_the_allowed_shapes_is_unreadable(value):
    read = judge.read_answers(json.dumps({"answer_x": {"value": value}}))
    assert isinstance(read["answer_x"], judge.Unreadable), read


def test_text_is_never_evaluated_as_sympy(tmp_path):
    target = tmp_path / "evaluated"
    attack = f"__import__('pathlib').Path({str(target)!r}).touch()"
    read = judge.read_answers(json.dumps({"answer_x": {"value": attack}}))
    assert read["answer_x"] == attack
    assert not answers.same_expression(read["answer_x"], sp.Symbol("x"))
    judge_source = textwrap.dedent(f"""
        import sympy as sp
        import json
        from companions.book import judge
        judge.refuse_parsing()
        assert sp.sympify("x + 1") == sp.Symbol("x") + 1  # the chapter's own text still parses
        judge.read_answers(json.dumps({{"answer_x": {{"value": {attack!r}}}}}))
        try:
            sp.sympify({attack!r})
        except ValueError as error:
            print(error)
    """)
    done = subprocess.run([sys.executable, "-c", judge_source], capture_output=True, text=True)
    assert not target.exists(), done.stdout + done.stderr
    assert "does not parse a student's text" in done.stdout, done.stdout + done.stderr


def test_a_file_that_is_not_answers_gives_none(tmp_path):
    (tmp_path / "answers.json").symlink_to("/dev/zero")  # would never end, if read
    assert judge.load_answers(tmp_path / "answers.json") == {}
    assert judge.load_answers(tmp_path / "none.json") == {}
    assert judge.read_answers("not json") == {}
    assert judge.read_answers("[1, 2]") == {}
    assert judge.read_answers(" " * (judge.MAX_BYTES + 1)) == {}
    assert judge.read_answers(json.dumps({"os.system": {"value": 1}})) == {}


# -- the audit hook -------------------------------------------------------------------------------
def test_the_audit_hook_refuses_writes_outside_processes_and_its_own_removal(tmp_path):
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("the teacher's file")
    attempts = {
        "write outside": f"open({str(outside / 'new.txt')!r}, 'w')",
        "append outside": f"open({str(outside / 'keep.txt')!r}, 'a')",
        "os.open outside": f"os.open({str(outside / 'new.txt')!r}, os.O_CREAT | os.O_WRONLY)",
        "remove outside": f"os.remove({str(outside / 'keep.txt')!r})",
        "rename outside": f"os.rename({str(outside / 'keep.txt')!r}, 'x')",
        "symlink escape": "os.symlink('/etc', 'link'); open('link/../outside/new.txt', 'w')",
        "subprocess": "subprocess.run(['true'])",
        "os.system": "os.system('true')",
        "fork": "os.fork()",
        "chdir": "os.chdir('/')",
        "another hook": "sys.addaudithook(lambda *a: print('HOOKED')); open('x2', 'w')",
    }
    script = textwrap.dedent(f"""
        import os, subprocess, sys
        from companions.book import sandbox
        os.chdir({str(scratch)!r})
        sandbox.install_audit_hook({str(scratch)!r})
        open("inside.txt", "w").write("ok")
        for name, code in {attempts!r}.items():
            try:
                exec(code)
                print("ALLOWED", name)
            except PermissionError:
                pass
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # A refused sys.addaudithook is silent (CPython swallows the error): the hook is just not added.
    assert done.stdout.split() == ["ALLOWED", "another", "hook"], done.stdout
    assert (scratch / "inside.txt").read_text() == "ok"
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "the teacher's file"


# -- a class ------------------------------------------------------------------------------------
CHAPTER = "fourier-max-margin"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    return assign.build_assignment(CHAPTER, _notebook(CHAPTER), out, scale="smoke")


def small_notebook(path: Path, *cells: str, chapter: str = CHAPTER) -> Path:
    """A submission of ``chapter`` with only these code cells (quick to run)."""
    nb = nbformat.v4.new_notebook(metadata={"otter": {"assignment_name": chapter}})
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells]
    nbformat.write(nb, path)
    return path


def answer_names(bundle) -> list[str]:
    return sorted({a for t in assign.hidden_tests_of(bundle.folder) for a in t.answers})


JUNK = "import sympy as sp\n" + "{names} = " + "sp.Symbol('junk') * 0 + 1"
CHEATS = {
    "checkers": """
        import companions.book.answers as _a
        _a.close_to = lambda *a, **k: True
        _a.same_expression = lambda *a, **k: True
    """,
    "simplify": """
        import sympy
        sympy.simplify = lambda *a, **k: 0
    """,
    "isclose": """
        import math
        math.isclose = lambda *a, **k: True
    """,
    "float": """
        import builtins
        class AnyFloat(float):
            def __sub__(self, other): return 0.0
            def __rsub__(self, other): return 0.0
        builtins.float = AnyFloat
    """,
    "sys.modules": """
        import sys, types
        fake = types.ModuleType("companions.book.answers")
        fake.close_to = fake.same_expression = lambda *a, **k: True
        sys.modules["companions.book.answers"] = fake
    """,
    "equals everything": """
        class Everything:
            def __eq__(self, other): return True
            def __float__(self): return 0.0
        {names} = Everything()
    """,
}


def test_a_class_is_graded_and_no_cheat_scores(bundle, tmp_path, sandboxed):
    names = answer_names(bundle)
    junk = JUNK.format(names=" = ".join(names))
    blank = nbformat.read(bundle.student, 4)
    for code in CHEATS.values():
        code = code.replace("{names}", " = ".join(names))
        blank.cells.append(nbformat.v4.new_code_cell(textwrap.dedent(code)))
    blank.cells.append(nbformat.v4.new_code_cell(junk))
    nbformat.write(blank, tmp_path / "all-cheats.ipynb")
    cheats = [
        small_notebook(
            tmp_path / f"cheat-{i}.ipynb",
            junk,
            code.replace("{names}", " = ".join(names)),
        )
        for i, code in enumerate(CHEATS.values())
    ]
    (tmp_path / "empty.ipynb").write_text("")
    (tmp_path / "notes.txt").write_text("not a notebook")
    other = small_notebook(tmp_path / "other.ipynb", "answer_x = 1", chapter="looped-gd")
    grades = assign.grade_class(
        bundle.folder,
        [
            bundle.solution,
            tmp_path / "all-cheats.ipynb",
            *cheats,
            tmp_path / "empty.ipynb",
            tmp_path / "notes.txt",
            other,
        ],
    )
    full, everything, *rest = grades
    assert full.total == full.max_total == 8, full.table()
    assert set(full.outputs.values()) == {"correct"}
    assert everything.total == 0, everything.table()
    for name, grade in zip(CHEATS, rest[: len(CHEATS)]):
        assert grade.total == 0, (name, grade.table())
        assert not grade.errors, (name, grade.errors)
    assert set(rest[0].outputs.values()) == {"wrong"}  # junk answers are wrong, not missing
    assert set(rest[len(CHEATS) - 1].outputs.values()) == {"malformed"}  # not data
    empty, notes, wrong_chapter = rest[len(CHEATS) :]
    assert empty.total == notes.total == wrong_chapter.total == 0
    assert "empty file" in empty.errors[0]
    assert "not a notebook" in notes.errors[0]
    assert "wrong chapter" in wrong_chapter.errors[0]
    for grade in grades:  # feedback names the status, never the expected value
        assert "junk" not in grade.feedback() and "gamma" not in grade.feedback().split(":")[-1]


def test_the_solutions_own_answers_are_what_a_sandboxed_run_of_it_exports(
    bundle, tmp_path, sandboxed
):
    """The judge's export of the solution's answers (which the suite grades as each chapter's full
    submission) is what a student's run of the solution in the sandbox exports, and scores full."""
    with assign.Grader(bundle.folder) as grader:
        run = grader.grade(bundle.solution, keep_answers=tmp_path / "run.json")
        own = grader.solution_answers()  # lives as long as the grading session
        graded = grader.grade_answers(own)
        exported = json.loads(own.read_text())
    assert set(exported) == set(answer_names(bundle))
    assert exported == json.loads((tmp_path / "run.json").read_text())
    assert graded.total == run.total == run.max_total, (graded.table(), run.table())


NUMBERS = "answer_width = 6\nanswer_raw_margin = 1.0\nanswer_normalized_margin = 1.0"


def started_kernel(cwd: Path, code: str):
    """A ``python3`` kernel started in ``cwd`` that has run ``code``."""
    from jupyter_client import KernelManager

    kernel = KernelManager(kernel_name="python3")
    kernel.start_kernel(cwd=str(cwd))
    client = kernel.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        reply = client.execute_interactive(code, output_hook=lambda msg: None, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
    return kernel


def test_a_grader_handed_a_kernel_judges_in_its_state_and_shuts_it_down(
    bundle, tmp_path, sandboxed
):
    """``Grader(judge_kernel=...)``: the judge runs nothing of the solution; it exports the answers
    the kernel holds (not the solution's), writes nothing where the kernel started, and the kernel
    is shut down with the grader, used or not."""
    where = tmp_path / "kernel-cwd"
    where.mkdir()
    kernel = started_kernel(where, NUMBERS.replace("= 6", "= 7"))
    with assign.Grader(bundle.folder, judge_kernel=kernel) as grader:
        exported = json.loads(grader.solution_answers().read_text())
    assert exported["answer_width"] == {"value": 7}
    assert exported["answer_raw_margin"] == {"value": 1.0}
    assert list(where.iterdir()) == []
    assert not kernel.is_alive()
    unused = started_kernel(where, "x = 1")
    assign.Grader(bundle.folder, judge_kernel=unused).close()
    assert not unused.is_alive()
    with assign.Grader(bundle.folder, judge_kernel=unused) as grader:  # stopped: never a fresh one
        with pytest.raises(RuntimeError, match="not running"):
            grader.solution_answers()


def test_a_dry_run_grader_passes_the_dry_run_to_the_submission_and_only_then(
    bundle, tmp_path, sandboxed
):
    seen = "import os\nanswer_width = int(os.environ.get('COMPANIONS_DRY_RUN', '0'))"
    submission = small_notebook(tmp_path / "env.ipynb", seen)
    for dry_run, expected in ((None, 0), (3, 3)):
        idle = started_kernel(tmp_path, "pass")  # a judge that need not run the solution
        with assign.Grader(bundle.folder, dry_run=dry_run, judge_kernel=idle) as grader:
            grader.grade(submission, keep_answers=tmp_path / "a.json")
        assert json.loads((tmp_path / "a.json").read_text())["answer_width"] == {"value": expected}
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="'dry_run'"):
            assign.Grader(bundle.folder, dry_run=bad)


def test_limits_stop_a_submission_and_the_class_goes_on(bundle, tmp_path, sandboxed):
    outside = tmp_path / "outside"
    outside.mkdir()
    loop = small_notebook(
        tmp_path / "loop.ipynb", NUMBERS, "while True:\n    pass", "answer_gamma = 1"
    )
    deaf = small_notebook(
        tmp_path / "deaf.ipynb",
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
    )
    memory = small_notebook(
        tmp_path / "memory.ipynb", "import numpy as np\nx = np.ones(2 * 10**9)", NUMBERS
    )
    writes = small_notebook(
        tmp_path / "writes.ipynb",
        f"open({str(outside / 'pwned.txt')!r}, 'w').write('x')",
        "import subprocess\nsubprocess.run(['touch', " + repr(str(outside / "p2")) + "])",
        NUMBERS,
    )
    fine = small_notebook(tmp_path / "fine.ipynb", NUMBERS)
    grades = assign.grade_class(
        bundle.folder, [loop, deaf, memory, writes, fine], time_limit=10, memory=3 << 30
    )
    by_name = {g.student: g for g in grades}
    assert any("time limit" in e for e in by_name["loop"].errors), by_name["loop"].errors
    assert by_name["loop"].outputs["fourier-ex-construction-numbers"] == "wrong"  # computed before
    assert by_name["loop"].outputs["fourier-ex-gamma-derive"] == "missing"  # never computed
    assert by_name["deaf"].total == 0 and "time limit" in by_name["deaf"].errors[0]
    assert any("memory" in e for e in by_name["memory"].errors), by_name["memory"].errors
    assert by_name["memory"].outputs["fourier-ex-construction-numbers"] == "wrong"
    assert any("refused" in e for e in by_name["writes"].errors), by_name["writes"].errors
    assert list(outside.iterdir()) == []
    assert by_name["fine"].outputs["fourier-ex-construction-numbers"] == "wrong"
    assert not by_name["fine"].errors


def test_the_cli_grades_a_folder_into_a_gradebook_and_resumes(bundle, tmp_path, capsys, sandboxed):
    folder = tmp_path / "submissions"
    folder.mkdir()
    names = answer_names(bundle)
    small_notebook(folder / "ann.ipynb", "answer_width = 6")
    small_notebook(folder / "bob.ipynb", JUNK.format(names=" = ".join(names)))
    (folder / "cat.ipynb").write_text("{")
    book = tmp_path / "gradebook.csv"
    common = ["--bundle", str(bundle.folder.parent), "--gradebook", str(book)]
    common += ["--feedback", str(tmp_path / "feedback")]
    assert cli.main(["grade", CHAPTER, str(folder), *common]) == 0
    out = capsys.readouterr().out
    assert "[3/3]" in out
    rows = list(csv.DictReader(book.open()))
    assert [r["student"] for r in rows] == ["ann", "bob", "cat"]
    assert rows[0]["total"] == "0" and "not a notebook" in rows[2]["errors"]
    assert "missing" in rows[0]["status"] and "wrong" in rows[1]["status"]
    feedback = (tmp_path / "feedback" / "bob.txt").read_text()
    assert "not correct" in feedback
    # a new submission arrives: only it is graded
    small_notebook(folder / "dan.ipynb", "x = 1")
    assert cli.main(["grade", CHAPTER, str(folder), *common]) == 0
    out = capsys.readouterr().out
    assert "resuming: 3 of 4" in out and "[4/4] dan" in out
    assert [r["student"] for r in csv.DictReader(book.open())] == ["ann", "bob", "cat", "dan"]


def test_wrong_answers_are_the_answers_a_one_percent_off_notebook_would_export(
    tmp_path, monkeypatch, sandboxed
):
    """wrong_answers edits exported JSON; it must match what the kernel's own dump cell exports
    for the same values times 1.01, for every kind of answer the dump cell writes."""
    import fractions

    import sympy as sp

    from companions.book import judge, sandbox

    x = sp.Symbol("x", positive=True)
    values = {
        "answer_int": 6,
        "answer_float": 1.5,
        "answer_zero": 0.0,
        "answer_fraction": fractions.Fraction(3, 7),
        "answer_list": [1, 2.5, fractions.Fraction(1, 3)],
        "answer_complex": 1 + 2j,
        "answer_expression": 2 * x / 3,
        "answer_dict": {1: 0.25},
    }
    off = {
        "answer_int": 6 * 1.01,
        "answer_float": 1.5 * 1.01,
        "answer_zero": 0.01,
        "answer_fraction": fractions.Fraction(3, 7) * fractions.Fraction(101, 100),
        "answer_list": [1.01, 2.5 * 1.01, fractions.Fraction(101, 300)],
        "answer_complex": complex(1.01, 2.02),
        "answer_expression": sp.Rational(101, 100) * 2 * x / 3,
        "answer_dict": {1: 0.25 * 1.01},
    }

    def dump(answers: dict, folder: Path) -> Path:
        folder.mkdir()
        monkeypatch.chdir(folder)
        exec(sandbox.DUMP_CELL, dict(answers))
        return folder / sandbox.ANSWERS

    exported = dump(values, tmp_path / "right")
    expected = judge.read_answers(dump(off, tmp_path / "off").read_text())
    names = [n for n in values if n != "answer_dict"]
    made = judge.read_answers(
        assign.wrong_answers(exported, [*names, "answer_dict"], tmp_path / "w.json").read_text()
    )
    assert set(made) == set(expected)
    for name in values:
        got, want = made[name], expected[name]
        if name == "answer_expression":
            assert (
                sp.simplify(got - want) == 0
                and got != judge.read_answers(exported.read_text())[name]
            )
        elif name == "answer_complex":
            assert got == pytest.approx(want)
        else:
            assert got == want, name
    untouched = judge.read_answers(
        assign.wrong_answers(exported, ["answer_int"], tmp_path / "one.json").read_text()
    )
    assert untouched["answer_float"] == 1.5 and untouched["answer_int"] == 6 * 1.01
    with pytest.raises(assign.AssignmentError, match="answer_nothing"):
        assign.wrong_answers(exported, ["answer_nothing"], tmp_path / "x.json")


# -- the operating-system sandbox -----------------------------------------------------------------
#: The first cell of each attack: where the kernel runs (its process namespace), read back with the
#: answers, so the test can look for any process of it left on the machine.
PIDNS = 'import os\nanswer_pidns = os.readlink("/proc/self/ns/pid")'
#: What an attack does with a notebook it got hold of (the solution, another student's): run the
#: cells that set the answers, with the modules they use.
COPY = """
import json
import sympy as sp
import torch
from companions.fourier import construction as fcon
from companions.fourier import network as fnet


def copy_answers(text):
    for cell in json.loads(text)["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "answer_" in source:
            exec(source, globals())
"""
#: name: (its code cells after PIDNS, what the note in its feedback says)
ATTACKS = {
    "fork bomb": (
        ["import ctypes\nlibc = ctypes.CDLL(None)\nwhile True:\n    libc.fork()"],
        "processes running",
    ),
    "infinite loop": (["while True:\n    pass", "answer_width = 6"], "time limit"),
    "10 GiB": (
        ["import numpy as np\nmemory = np.ones(10 * 2**30 // 8)\nanswer_width = memory.size"],
        "ran out of memory",
    ),
    "solution search": (
        [
            COPY,
            """
            def candidates():
                yield {solution!r}  # where the teacher keeps it, if the student knows
                for top in ("/tmp", "/var/tmp", "/root", "/home", "/work", "/srv", "/opt"):
                    for folder, subfolders, files in os.walk(top):
                        subfolders[:] = [d for d in subfolders if d != "site-packages"]
                        if folder.endswith("/solution") and "{chapter}.ipynb" in files:
                            yield os.path.join(folder, "{chapter}.ipynb")

            found = next((p for p in candidates() if os.path.exists(p)), {solution!r})
            copy_answers(open(found).read())
            """,
        ],
        "FileNotFoundError",
    ),
    "another student": ([COPY, "copy_answers(open({other!r}).read())"], "FileNotFoundError"),
    "ctypes system": (
        [
            COPY,
            """
            import ctypes
            ctypes.CDLL(None).system(b"cp {solution} stolen.ipynb; touch {outside}/ctypes")
            copy_answers(open("stolen.ipynb").read())
            """,
        ],
        "FileNotFoundError",
    ),
    "subprocess": (
        [
            COPY,
            """
            import subprocess
            subprocess.run(["cp", {solution!r}, "stolen.ipynb"])
            subprocess.run(["touch", "{outside}/subprocess"])
            copy_answers(open("stolen.ipynb").read())
            """,
        ],
        "refused",
    ),
    "socket": (
        [
            COPY,
            """
            import socket
            with socket.create_connection(("127.0.0.1", {port})) as s:
                copy_answers(s.makefile().read())
            """,
            # a Python that has no audit hook, started from native code
            """
            import ctypes, sys
            fetch = (
                "import socket; s = socket.create_connection(('127.0.0.1', {port})); "
                "open('fetched.ipynb', 'w').write(s.makefile().read()); "
                "open('{outside}/socket', 'w').write('x')"
            )
            ctypes.CDLL(None).system(f'{{sys.executable}} -c "{{fetch}}"'.encode())
            copy_answers(open("fetched.ipynb").read())
            """,
        ],
        "FileNotFoundError",
    ),
}
#: The attacks that copy answers: unsandboxed, each scores full marks (so each is a real attack).
COPIES = ("solution search", "another student", "ctypes system", "socket")


class Accomplice:
    """A server outside the sandbox that hands the solution notebook to whoever connects."""

    def __init__(self, solution: Path):
        import socketserver
        import threading

        self.connections = 0
        text = solution.read_bytes()

        class Handler(socketserver.StreamRequestHandler):
            def handle(handler):
                self.connections += 1
                handler.wfile.write(text)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def processes_in(namespace: str) -> list[str]:
    """The machine's processes in a process namespace (``pid:[...]``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "ns" / "pid").readlink().name == namespace:
                found.append(entry.name)
        except OSError:
            pass
    return found


def test_attacks_on_the_sandbox_score_nothing_and_leave_nothing(bundle, tmp_path, sandboxed):
    """Each attack scores 0 with a note in its feedback, leaves no file outside its scratch folder
    and no process behind; the copying ones score full marks without the sandbox."""
    outside, folder = tmp_path / "outside", tmp_path / "class"
    outside.mkdir()
    folder.mkdir()
    other = folder / "ann.ipynb"
    other.write_bytes(bundle.solution.read_bytes())  # another student's (perfect) submission
    accomplice = Accomplice(bundle.solution)
    fields = dict(solution=str(bundle.solution), chapter=CHAPTER, other=str(other))
    fields.update(outside=str(outside), port=accomplice.port)
    notebooks = {
        name: small_notebook(
            folder / f"{name.replace(' ', '-')}.ipynb",
            PIDNS,
            *(textwrap.dedent(c).format(**fields) for c in cells),
        )
        for name, (cells, _) in ATTACKS.items()
    }
    try:
        with assign.Grader(bundle.folder, time_limit=12, memory=3 << 30) as grader:
            for name, notebook in notebooks.items():
                kept = tmp_path / f"{notebook.stem}.json"
                grade = grader.grade(notebook, keep_answers=kept)
                assert grade.total == 0, (name, grade.table())
                note = ATTACKS[name][1]
                assert any(
                    line.startswith("note:") and note in line
                    for line in grade.feedback().splitlines()
                ), (name, grade.feedback())
                namespace = json.loads(kept.read_text())["answer_pidns"]["value"]
                assert processes_in(namespace) == [], name
        assert list(outside.iterdir()) == []
        assert accomplice.connections == 0
        with assign.Grader(bundle.folder, sandbox=False) as unsafe:  # the same copies, unsandboxed
            for name in COPIES:
                grade = unsafe.grade(notebooks[name])
                assert grade.total == grade.max_total, (name, grade.table())
        assert accomplice.connections == 1
    finally:
        accomplice.close()


def test_the_sandbox_shows_the_environment_and_not_the_repository(tmp_path):
    from tests.book.test_chapters import ROOT

    shown = sandbox.exposed_paths()
    for path in (ROOT, ROOT / "book", ROOT / "assignments", Path.home()):
        assert not any(sandbox._within(str(path.resolve()), s) for s in shown), (path, shown)
    assert any(sandbox._within(sandbox.__file__, s) for s in shown)  # the package, read-only
    assert any(sandbox._within(sys.prefix, s) for s in shown)
    with pytest.raises(sandbox.SandboxUnavailable, match="move it out"):
        sandbox.check_hidden(Path(sys.prefix) / "assignments", "the assignment folder")


def test_without_bubblewrap_grading_stops_unless_told_to_run_unsandboxed(
    bundle, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(sandbox, "_WORKS", set())
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, but no bwrap
    with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap"):
        assign.Grader(bundle.folder)
    folder = tmp_path / "submissions"
    folder.mkdir()
    small_notebook(folder / "ann.ipynb", NUMBERS)
    book = tmp_path / "gradebook.csv"
    common = ["--bundle", str(bundle.folder.parent), "--gradebook", str(book)]
    assert cli.main(["grade", CHAPTER, str(folder), *common]) == 2
    assert "--no-sandbox" in capsys.readouterr().err and not book.exists()
    assert cli.main(["grade", CHAPTER, str(folder), *common, "--no-sandbox"]) == 0
    assert "warning: --no-sandbox" in capsys.readouterr().err
    rows = list(csv.DictReader(book.open()))
    assert [r["student"] for r in rows] == ["ann"] and "wrong" in rows[0]["status"]
