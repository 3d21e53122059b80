"""Chapters run where only the package's declared dependencies are installed (Colab, a download).

``test_chapters_run_without_the_book_machinery`` blocks the imports of the book's tools (Sphinx,
docutils, MyST, otter, selenium, papermill, jupytext, nbformat, nbclient, jupyter-book) in a fresh
interpreter, then resolves every chapter's preset at every scale and runs one chapter's code cells
(the hidden grading cells included) at the smoke scale. ``test_downloaded_notebook_in_a_fresh_venv``
does it for real: a new virtual environment whose only install is what the generated notebook's
setup cell installs. It needs the package index and several minutes, so it runs only with
``BOOK_FRESH_VENV=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext
import pytest

from companions import scale
from companions.book import sphinx_reader

ROOT = Path(__file__).resolve().parents[2]
#: The chapter whose code cells are run (a quick one at smoke scale).
CHAPTER = "contrastive-setting"
BLOCKED = (
    "sphinx",
    "docutils",
    "myst_nb",
    "myst_parser",
    "otter",
    "selenium",
    "papermill",
    "jupytext",
    "nbformat",
    "nbclient",
    "jupyter_book",
)

#: Runs in a fresh interpreter: the import blocker, every preset, then the chapter's cells.
RUNNER = textwrap.dedent(
    """
    import importlib.abc, json, os, sys

    BLOCKED = set(sys.argv[2].split(","))

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")

    sys.meta_path.insert(0, Blocked())
    for name in list(sys.modules):
        if name.split(".")[0] in BLOCKED:
            del sys.modules[name]

    import companions
    from companions.scale import SCALES

    resolved = 0
    for chapter in companions.chapters():
        for scale in SCALES:
            companions.preset(chapter, scale)
            resolved += 1
    print("presets resolved:", resolved)

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    cells = json.loads(open(sys.argv[1]).read())
    for i, source in enumerate(cells):
        result = shell.run_cell(source, silent=True)
        if not result.success:
            print(f"cell {i} failed:\\n{source}", file=sys.stderr)
            sys.exit(1)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    if leaked:
        sys.exit(f"blocked modules were imported anyway: {leaked}")
    print("cells run:", len(cells))
    """
)


def chapter_cells(chapter_id: str, ledger_dir: Path) -> list[str]:
    """The chapter's code cells, with the smoke scale, the CPU and ``ledger_dir`` injected after
    its parameters cell (as papermill would)."""
    nb = jupytext.read(ROOT / scale.get_chapter(chapter_id).notebook)
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cells.append(cell.source)
        if "parameters" in cell.metadata.get("tags", []):
            cells.append(f"scale = 'smoke'\ndevice = 'cpu'\nledger_dir = {str(ledger_dir)!r}")
    return cells


def _run(python: str, chapter_id: str, tmp_path: Path, env: dict | None = None):
    ledger_dir = tmp_path / "ledger"
    cells = tmp_path / "cells.json"
    cells.write_text(json.dumps(chapter_cells(chapter_id, ledger_dir)))
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    chapter_dir = (ROOT / scale.get_chapter(chapter_id).notebook).parent
    result = subprocess.run(
        [python, str(runner), str(cells), ",".join(BLOCKED)],
        cwd=chapter_dir,
        capture_output=True,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ledger = json.loads((ledger_dir / f"{chapter_id}.json").read_text())
    assert ledger["scale"] == "smoke" and ledger["claims"]
    assert not [c for c in ledger["claims"] if c["status"] == "fails"]
    return result


def test_chapters_run_without_the_book_machinery(tmp_path):
    result = _run(sys.executable, CHAPTER, tmp_path)
    assert f"presets resolved: {3 * len(scale.chapters())}" in result.stdout


def test_the_blocker_blocks(tmp_path):
    """The runner really refuses the blocked imports: a cell importing one of them fails."""
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    cells = tmp_path / "cells.json"
    cells.write_text(json.dumps(["import docutils"]))
    result = subprocess.run(
        [sys.executable, str(runner), str(cells), ",".join(BLOCKED)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and "blocked by the test" in result.stdout + result.stderr


def test_setup_cell_installs_the_requirement_it_is_given(monkeypatch):
    monkeypatch.delenv(sphinx_reader.PACKAGE_ENV, raising=False)
    url = "https://github.com/org/book"
    assert sphinx_reader.package_requirement(url) == f"companions @ git+{url}"
    assert sphinx_reader.package_requirement(None) == "companions"
    monkeypatch.setenv(sphinx_reader.PACKAGE_ENV, "/some/checkout")
    assert sphinx_reader.package_requirement(url) == "/some/checkout"
    source = sphinx_reader.setup_cell_source("/some/checkout")
    compile(source, "setup", "exec")
    assert "'/some/checkout'" in source and 'find_spec("companions") is None' in source


@pytest.mark.skipif(
    os.environ.get("BOOK_FRESH_VENV") != "1",
    reason="builds a fresh virtual environment from the package index; set BOOK_FRESH_VENV=1",
)
def test_downloaded_notebook_in_a_fresh_venv(tmp_path, monkeypatch):
    """A fresh venv, no install but the generated notebook's setup cell pointed at this checkout
    (``BOOK_PACKAGE``); then the chapter's cells run there with the book's tools blocked.
    ``PIP_CONSTRAINT`` may pin torch to a wheel at hand (on Colab torch is preinstalled)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    monkeypatch.setenv(sphinx_reader.PACKAGE_ENV, str(ROOT))
    nb = sphinx_reader.chapter_notebook(ROOT / scale.get_chapter(CHAPTER).notebook)
    setup = next(c for c in nb.cells if sphinx_reader.SETUP_TAG in c.metadata.get("tags", []))
    subprocess.run([python, "-c", setup.source], check=True, timeout=1800)
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout
    installed = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert not installed & {"sphinx", "papermill", "otter-grader", "selenium", "jupytext"}
    _run(python, CHAPTER, tmp_path)
