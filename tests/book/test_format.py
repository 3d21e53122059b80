"""Code is formatted and linted with the pinned ruff (pyproject.toml [tool.ruff], line length 100):
``lib/``, ``tests/``, and every chapter's code cells (read through jupytext as notebooks, which
ruff checks cell by cell)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
RUFF = [sys.executable, "-m", "ruff"]


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([*RUFF, *args], cwd=cwd, capture_output=True, text=True)


def _chapters() -> list[Path]:
    return sorted(p for p in (ROOT / "book").rglob("*.md") if "kernelspec:" in p.read_text())


@pytest.fixture(scope="module")
def chapter_notebooks(tmp_path_factory) -> Path:
    """Every chapter as an ``.ipynb`` in one folder (named after its path), for ruff."""
    folder = tmp_path_factory.mktemp("chapters")
    for path in _chapters():
        name = "_".join(path.relative_to(ROOT).with_suffix(".ipynb").parts)
        jupytext.write(jupytext.read(path), folder / name)
    # ruff reads its settings from the project: give the copies the repository's pyproject.toml
    (folder / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    return folder


def test_ruff_is_the_pinned_version():
    pinned = re.search(r"^ruff==(\S+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned, "requirements.txt pins no ruff"
    assert _ruff("--version").stdout.split()[-1] == pinned.group(1)


def test_library_and_tests_are_formatted():
    result = _ruff("format", "--check", "lib", "tests")
    assert result.returncode == 0, "run `ruff format lib tests`:\n" + result.stdout + result.stderr


def test_library_and_tests_pass_lint():
    result = _ruff("check", "lib", "tests", "--output-format", "concise")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr


def test_chapter_cells_are_formatted(chapter_notebooks):
    result = _ruff("format", "--check", ".", cwd=chapter_notebooks)
    assert result.returncode == 0, (
        "reformat the chapters' cells with "
        "`jupytext --pipe 'ruff format -' book/<part>/<chapter>.md`:\n"
        + result.stdout
        + result.stderr
    )


def test_chapter_cells_pass_lint(chapter_notebooks):
    """No line of a chapter's code is wider than 100 characters (E501), among the other rules."""
    result = _ruff("check", ".", "--output-format", "concise", cwd=chapter_notebooks)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr


def test_every_chapter_is_checked(chapter_notebooks):
    assert len(list(chapter_notebooks.glob("*.ipynb"))) == len(_chapters()) >= 14
