"""Graded assignments (companions.book.assign, the CLI's assign/grade/student-edition).

The unit tests build masters from small synthetic chapters; the chapter tests build every chapter's
assignment with otter and grade three submissions: the solution (full marks), the blank student
notebook (zero) and the solution with one answer 1 % off (exactly that question's points lost).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
import pytest

from companions.book import assign, cli
from tests.book.test_chapters import CHAPTER_IDS, _notebook

HEADER = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
        format_version: 0.13
    kernelspec:
      display_name: Python 3 (ipykernel)
      language: python
      name: python3
    ---
    """)


def chapter_text(*parts: str) -> str:
    return HEADER + "\n".join(textwrap.dedent(p) for p in parts)


PARAMETERS = """
```{code-cell} ipython3
:tags: [parameters]

scale = None
seed = 0
```
"""

GRADED = """
(ex-target)=
## Exercises

```{prf:theorem} Theorem 1.2 (a fact)
:label: thm-fact
:nonumber:

It holds, see {cite}`someone2020` and {ref}`the section <ex-target>`.
```

```{exercise}
:label: ex-square

Set `answer_square` to the derivative of $x^2$.
```

```{solution-start} ex-square
:class: dropdown
```

Differentiate.

```{code-cell} ipython3
x = sp.Symbol("x")
answer_square = 2 * x  # SOLUTION
```

```{solution-end}
```

```{code-cell} ipython3
---
tags: [remove-cell]
grader: {question: ex-square, points: 2}
---
assert same_expression(answer_square, 2 * sp.Symbol("x"))
```

```{exercise}
:label: ex-free

Not graded.
```

```{solution} ex-free
:class: dropdown

The secret words.
```
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "chapter.md"
    path.write_text(text)
    return path


# -- markdown -------------------------------------------------------------------------------------
def test_plain_markdown_turns_directives_into_quotes_and_roles_into_text():
    text = assign.plain_markdown(textwrap.dedent(GRADED).split("```{exercise}")[0])
    assert "> **Theorem 1.2 (a fact)**" in text
    assert "[someone2020]" in text and "the section" in text
    assert "{cite}" not in text and "(ex-target)=" not in text and ":label:" not in text


def test_plain_markdown_drops_solutions_and_keeps_exercises():
    text = assign.plain_markdown(
        "```{exercise}\n:label: e1\n\nDo it.\n```\n\n```{solution} e1\n\nDone.\n```"
    )
    assert "**Exercise (e1)**" in text and "Do it." in text and "Done." not in text


# -- questions ------------------------------------------------------------------------------------
def test_questions_finds_the_graded_one_with_its_points(tmp_path):
    found = assign.questions(
        assign.read_chapter(write(tmp_path, chapter_text(PARAMETERS, GRADED))), "demo"
    )
    assert [(q.name, q.points, q.has_prose) for q in found] == [("ex-square", 2.0, True)]


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ("grader: {question: ex-square", "grader: {question: ex-other"),
            "no exercise with :label: ex-other",
        ),
        (("answer_square = 2 * x  # SOLUTION", "answer_square = 2 * x"), "marks no answer line"),
        (("tags: [remove-cell]\ngrader", "tags: []\ngrader"), "must be tagged remove-cell"),
        (("points: 2}", "points: -1}"), "points of 'ex-square' must be a positive number"),
        (
            ("```{solution-start} ex-square", "```{solution-start} ex-elsewhere"),
            "needs a gated solution",
        ),
    ],
)
def test_malformed_questions_are_named(tmp_path, change, message):
    text = chapter_text(PARAMETERS, GRADED).replace(*change)
    with pytest.raises(assign.AssignmentError, match=message):
        assign.questions(assign.read_chapter(write(tmp_path, text)), "demo")


def test_two_grader_cells_for_one_question_are_refused(tmp_path):
    grader = GRADED[
        GRADED.index("```{code-cell} ipython3\n---") : GRADED.index(
            "```{exercise}\n:label: ex-free"
        )
    ]
    with pytest.raises(assign.AssignmentError, match="more than one grader cell"):
        assign.questions(
            assign.read_chapter(write(tmp_path, chapter_text(PARAMETERS, GRADED, grader))), "demo"
        )


def test_master_wraps_the_question_and_drops_other_solutions(tmp_path):
    nb = assign.read_chapter(write(tmp_path, chapter_text(PARAMETERS, GRADED)))
    master = assign.master_notebook(nb, "demo", scale="smoke")
    raw = [c.source.splitlines()[0] for c in master.cells if c.cell_type == "raw"]
    assert raw == [
        "# ASSIGNMENT CONFIG",
        "# BEGIN QUESTION",
        "# BEGIN SOLUTION",
        "# END SOLUTION",
        "# BEGIN TESTS",
        "# END TESTS",
        "# END QUESTION",
    ]
    text = "\n".join(c.source for c in master.cells)
    assert "scale = 'smoke'" in text
    assert "The secret words." not in text and "Differentiate." not in text
    assert "Not graded." in text and assign.INTERPRETATION_PROMPT in text
    tests = [c.source for c in master.cells if "BEGIN TEST CONFIG" in c.source]
    assert len(tests) == 1 and "hidden: true" in tests[0]


def test_master_needs_a_graded_question_and_a_scale_line(tmp_path):
    plain = chapter_text(PARAMETERS, "Just text.\n")
    with pytest.raises(assign.AssignmentError, match="no graded question"):
        assign.master_notebook(assign.read_chapter(write(tmp_path, plain)), "demo")
    no_scale = chapter_text(PARAMETERS.replace("scale = None\n", ""), GRADED)
    with pytest.raises(assign.AssignmentError, match="no 'scale = ...' line"):
        assign.master_notebook(
            assign.read_chapter(write(tmp_path, no_scale)), "demo", scale="smoke"
        )


# -- comparing answers ----------------------------------------------------------------------------
def test_wrong_submission_changes_only_the_named_question(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("a = 3  # SOLUTION", metadata={"otter": {"tests": ["q1"]}}),
        nbformat.v4.new_code_cell("b = 4  # SOLUTION", metadata={"otter": {"tests": ["q2"]}}),
    ]
    nbformat.write(nb, tmp_path / "s.ipynb")
    out = nbformat.read(
        assign.wrong_submission(tmp_path / "s.ipynb", "q2", tmp_path / "w.ipynb"), 4
    )
    assert out.cells[0].source == "a = 3  # SOLUTION"
    assert out.cells[1].source == "b = (4) * 1.01  # deliberately wrong"
    with pytest.raises(assign.AssignmentError, match="'q3'"):
        assign.wrong_submission(tmp_path / "s.ipynb", "q3", tmp_path / "x.ipynb")


# -- the command line -----------------------------------------------------------------------------
def test_assign_refuses_bad_input_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "assignments"
    assert cli.main(["assign", "no-such-chapter", "--out", str(out)]) == 2
    assert "no-such-chapter" in capsys.readouterr().err
    assert cli.main(["assign", CHAPTER_IDS[0], "--scale", "huge", "--out", str(out)]) == 2
    assert "'scale'" in capsys.readouterr().err
    assert cli.main(["assign", "--out", str(out)]) == 2
    assert not out.exists()


def test_grade_refuses_a_missing_bundle_or_submission(tmp_path, capsys):
    assert (
        cli.main(["grade", "looped-gd", str(tmp_path / "none.ipynb"), "--bundle", str(tmp_path)])
        == 2
    )
    assert "no assignment" in capsys.readouterr().err


# -- every chapter's assignment, built and graded by otter ----------------------------------------
@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_every_chapter_has_three_graded_questions(chapter_id):
    found = assign.questions(assign.read_chapter(_notebook(chapter_id)), chapter_id)
    assert len(found) >= 3, (
        f"{chapter_id} has {len(found)} graded questions; the book's convention is 3 or more"
    )


def code_of(nb) -> list[str]:
    """A notebook's code cells as the judge would run them: the assignment build's fixed scale
    and otter's solution markers aside, without the grader (hidden test) cells."""
    return [
        re.sub(r"^scale = .*$", "scale = ...", c.source, flags=re.M).replace("  # SOLUTION", "")
        for c in nb.cells
        if c.cell_type == "code" and "grader" not in c.metadata
    ]


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_assignment_grades_solution_full_blank_zero_and_one_wrong_answer(
    chapter_id, tmp_path, smoke_runs, sandboxed
):
    bundle = assign.build_assignment(chapter_id, _notebook(chapter_id), tmp_path, scale="smoke")
    target = bundle.questions[len(bundle.questions) // 2]
    # One execution of the chapter per submission kind that needs one. The judge uses the kernel in
    # which the chapter's smoke run (test_chapters.py) has just run, rather than run the solution
    # notebook again: the solution's code is the chapter's, grader cells aside (checked here).
    # The judge exports the solution's answers, which are the full submission; the blank student
    # notebook runs in its sandboxed kernel as a dry run (each loop cut to its first step: a blank
    # exports no answer however long it trains); the wrong answer is the full answers with one
    # question's 1 % off (the answers wrong_submission would make). The judge's own run of the
    # solution, and a sandboxed run of a full submission, are tested in tests/book/test_grade.py.
    assert code_of(nbformat.read(bundle.solution, 4)) == code_of(
        assign.read_chapter(_notebook(chapter_id))
    )
    smoke_runs(chapter_id, keep_kernel=True)
    kernel = smoke_runs.take_kernel(chapter_id)  # None if the chapter ran earlier for another test
    with assign.Grader(bundle.folder, judge_kernel=kernel, dry_run=1) as grader:
        blank = grader.grade(bundle.student)
        full = grader.grade_answers(grader.solution_answers())
        names = next(t.answers for t in grader.tests if t.question == target.name)
        wrong = grader.grade_answers(
            assign.wrong_answers(grader.solution_answers(), names, tmp_path / "wrong.json")
        )
    assert full.total == full.max_total == sum(q.points for q in bundle.questions), full.table()
    assert blank.total == 0, blank.table()
    assert set(blank.outputs.values()) == {"missing"}, blank.table()  # blank, not malformed
    assert wrong.outputs[target.name] == "wrong", wrong.table()
    lost = {q: full.scores[q] - wrong.scores[q] for q in full.scores}
    assert lost == {q: (target.points if q == target.name else 0.0) for q in full.scores}, (
        wrong.table()
    )
    student = nbformat.read(bundle.student, 4)
    text = "\n".join(c.source for c in student.cells)
    assert "# SOLUTION" not in text and "grader" not in text
    for cell in nbformat.read(bundle.solution, 4).cells:  # hidden tests only in the autograder
        assert "BEGIN TEST CONFIG" not in cell.source


def test_strip_solutions_leaves_exercises_and_drops_every_solution(tmp_path):
    nb = assign.read_chapter(write(tmp_path, chapter_text(PARAMETERS, GRADED)))
    text = "\n".join(c.source for c in assign.strip_solutions(nb).cells)
    assert "Set `answer_square`" in text and "Not graded." in text and "prf:theorem" in text
    for gone in (
        "# SOLUTION",
        "Differentiate.",
        "The secret words.",
        "same_expression",
        "solution-",
    ):
        assert gone not in text, gone
    assert len(nb.cells) > len(assign.strip_solutions(nb).cells)  # the original is left alone
