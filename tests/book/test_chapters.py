"""Every chapter of ``_toc.yml`` runs end to end at smoke scale, and its ledger says what it should.

The chapters are found from ``_toc.yml`` and the chapters declared in ``lib/companions`` (with
``register_chapter``): adding a chapter to both makes it tested here, and a toc entry that is not a
declared chapter fails :func:`test_every_toc_file_is_a_declared_chapter`.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import papermill
import pytest
import yaml
from jupyter_client import KernelManager
from papermill.iorw import load_notebook_node
from papermill.parameterize import parameterize_notebook

import companions
from companions.claims import CHECK_KINDS, COMPARE_KINDS

ROOT = Path(__file__).resolve().parents[2]
#: toc entries that are not chapters
PAGES = {"book/intro", "book/ledger", "book/costs", "book/running", "book/teaching"}
LEDGER_PAGE = ROOT / "book" / "ledger.md"
CLAIM_KEYS = {"id", "source", "kind", "status", "expected", "observed", "tolerance", "note"}
#: What a registered claim's ledger entry says (companions.claims).
REGISTERED_KEYS = {
    "id",
    "source",
    "kind",
    "status",
    "statistic",
    "rule",
    "could_fail",
    "observed",
    "note",
}
LEDGER_KEYS = {"chapter", "scale", "seed", "device", "params", "wall_seconds", "python", "claims"}
REQUIRED_PARAMETERS = ("scale", "device", "seed", "ledger_dir")


def _strip_md(path: str) -> str:
    return path[:-3] if path.endswith(".md") else path


def toc_files(node=None) -> list[str]:
    """Every ``file:`` entry of ``_toc.yml``, in order, at any depth (parts, chapters, sections)."""
    if node is None:
        node = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("file"), str):
            found.append(_strip_md(node["file"]))
        for key, value in node.items():
            if key != "file":
                found += toc_files(value)
    elif isinstance(node, list):
        for item in node:
            found += toc_files(item)
    return found


def declared_chapters() -> dict:
    """The book's declared chapters by notebook path without ``.md`` (test chapters excluded)."""
    return {
        _strip_md(ch.notebook): ch
        for ch in companions.chapters().values()
        if not ch.id.startswith("_")
    }


TOC_FILES = toc_files()
DECLARED = declared_chapters()
CHAPTER_IDS = [DECLARED[f].id for f in TOC_FILES if f in DECLARED]


def _notebook(chapter_id: str) -> Path:
    return ROOT / (_strip_md(companions.chapters()[chapter_id].notebook) + ".md")


# ---------------------------------------------------------------------------------------------
# The table of contents and the declared chapters agree
# ---------------------------------------------------------------------------------------------
def test_toc_lists_chapters():
    assert TOC_FILES, "_toc.yml lists no file"
    assert len(TOC_FILES) == len(set(TOC_FILES)), "a file is listed twice in _toc.yml"


@pytest.mark.parametrize("path", TOC_FILES)
def test_every_toc_file_is_a_declared_chapter(path):
    assert (ROOT / (path + ".md")).is_file(), f"_toc.yml lists {path}, but {path}.md does not exist"
    assert path in DECLARED or path in PAGES, (
        f"{path} is in _toc.yml but no topic module declares it: add register_chapter(Chapter(..., "
        f"notebook='{path}.md', ...)) to its module in lib/companions"
    )


@pytest.mark.parametrize("chapter_id", [ch.id for ch in DECLARED.values()])
def test_every_declared_chapter_is_in_the_toc(chapter_id):
    notebook = _strip_md(companions.chapters()[chapter_id].notebook)
    assert notebook in TOC_FILES, (
        f"chapter {chapter_id!r} ({notebook}.md) is declared but not listed in _toc.yml"
    )


# ---------------------------------------------------------------------------------------------
# Lint: the anatomy every chapter notebook shares
# ---------------------------------------------------------------------------------------------
def _front_matter(path: Path) -> dict:
    text = path.read_text()
    assert text.startswith("---\n"), f"{path} does not start with a jupytext YAML header"
    return yaml.safe_load(text[4 : text.index("\n---", 4)])


def _parameters_cell(path: Path):
    cells = [
        c
        for c in jupytext.read(path).cells
        if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])
    ]
    assert len(cells) == 1, (
        f"{path} has {len(cells)} cells tagged 'parameters' (expected exactly one)"
    )
    assigned = {}
    for stmt in ast.parse(cells[0].source).body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            assigned[stmt.target.id] = stmt.value
    return assigned


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_chapter_header(chapter_id):
    header = _front_matter(_notebook(chapter_id))
    rep = header.get("jupytext", {}).get("text_representation", {})
    assert (
        rep.get("extension") == ".md"
        and rep.get("format_name") == "myst"
        and rep.get("format_version")
    ), f"incomplete jupytext header: {header.get('jupytext')}"
    kernel = header.get("kernelspec", {})
    assert kernel.get("name") == "python3", (
        f"kernelspec name must be 'python3', not {kernel.get('name')!r}"
    )
    assert kernel.get("language") == "python" and kernel.get("display_name")


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_chapter_parameters_cell(chapter_id):
    """Parameters are written once: the cell sets the four every chapter takes, and the knobs
    live in the chapter's declaration; papermill's injected values reach preset() through
    companions.injected_parameters() (test_an_injected_knob_reaches_the_chapter)."""
    assigned = _parameters_cell(_notebook(chapter_id))
    assert sorted(assigned) == sorted(REQUIRED_PARAMETERS), (
        f"the parameters cell sets {sorted(assigned)}: it sets {list(REQUIRED_PARAMETERS)} "
        "only (the knobs are declared in the chapter's Chapter, in its topic's chapters.py)"
    )
    # None lets $BOOK_SCALE / $BOOK_LEDGER_DIR choose during a book build (jupyter-book passes no
    # parameters)
    for name in ("scale", "ledger_dir"):
        assert isinstance(assigned[name], ast.Constant) and assigned[name].value is None, (
            f"'{name}' must default to None in the parameters cell"
        )
    source = _notebook(chapter_id).read_text()
    assert "**companions.injected_parameters()" in source, (
        "the chapter's preset() call does not take papermill's injected knobs"
    )


PRF_BLOCK = re.compile(r"^(?::::+|```)\{prf:(\w+)\}[^\n]*\n((?::[a-z_]+:[^\n]*\n)*)", re.M)


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_theorems_carry_the_sources_numbers_only(chapter_id):
    """A prf block numbered by the book renders "Theorem 13.2 (Theorem 5.4.2 ...)": every block
    but proofs is :nonumber:, its title carrying the source's number."""
    text = _notebook(chapter_id).read_text()
    numbered = [
        kind
        for kind, options in PRF_BLOCK.findall(text)
        if kind != "proof" and ":nonumber:" not in options
    ]
    assert not numbered, f"prf blocks without :nonumber:: {numbered}"


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_no_ipynb_twin_is_committed(chapter_id):
    twin = _notebook(chapter_id).with_suffix(".ipynb").relative_to(ROOT)
    try:
        tracked = subprocess.run(
            ["git", "ls-files", "--", str(twin)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: look at the folder
        tracked = str(twin) if (ROOT / twin).exists() else ""
    assert not tracked, f"{twin} is committed next to its MyST source: remove it (git rm --cached)"


# ---------------------------------------------------------------------------------------------
# Every chapter runs at smoke scale through papermill, and its ledger is sound
# ---------------------------------------------------------------------------------------------
# (the fixture smoke_runs is in tests/book/conftest.py)


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_chapter_runs_at_smoke_scale(smoke_runs, chapter_id):
    executed, ledger_path = smoke_runs(chapter_id)
    assert executed.is_file()
    ledger = json.loads(ledger_path.read_text())
    assert LEDGER_KEYS <= set(ledger), f"ledger lacks {LEDGER_KEYS - set(ledger)}"
    assert ledger["chapter"] == chapter_id and ledger["scale"] == "smoke"
    assert ledger["device"] == "cpu" and ledger["seed"] == 0
    # The budget (smoke under 60 s on 2 cores) is reported, not asserted: a time taken beside other
    # tests says little. `python -m companions ledger --budgets` and the page "What each scale
    # costs" show each chapter's time against it.
    assert ledger["wall_seconds"] > 0
    # the kernel ran this environment's Python (a foreign user-level 'python3' kernel would not)
    assert Path(ledger["python"]).is_relative_to(Path(sys.prefix).absolute()), (
        f"the chapter ran in {ledger['python']}, outside {sys.prefix}: register the kernel with "
        "'python -m ipykernel install --sys-prefix --name python3'"
    )

    claims = ledger["claims"]
    assert len(claims) >= 5, f"only {len(claims)} claims"
    assert len({c["id"] for c in claims}) == len(claims), "claim ids repeat"
    registered = {c.id for c in companions.chapters()[chapter_id].claims}
    assert {c["id"] for c in claims if c.get("registered")} == registered, (
        "the ledger's registered claims are not the chapter's declared ones"
    )
    for claim in claims:
        if claim.get("registered"):
            missing = REGISTERED_KEYS - set(claim)
            assert not missing, f"claim {claim['id']} lacks {missing}"
            if claim["status"] == "inconclusive":
                assert claim.get("decides") or claim["note"].strip(), (
                    f"claim {claim['id']} is inconclusive and says nothing of what would decide it"
                )
            continue
        assert CLAIM_KEYS <= set(claim), f"claim {claim.get('id')} lacks {CLAIM_KEYS - set(claim)}"
        assert claim["source"], f"claim {claim['id']} names no source"
        checked = claim["status"] in ("holds", "fails")
        compared = claim["status"] in ("reproduced", "differs", "inconclusive")
        assert (checked and claim["kind"] in CHECK_KINDS) or (
            compared and claim["kind"] in COMPARE_KINDS
        ), claim
        if claim["status"] in ("differs", "inconclusive"):
            assert claim["note"].strip(), f"claim {claim['id']} is {claim['status']} without a note"
    failed = [c["id"] for c in claims if c["status"] == "fails"]
    assert not failed, f"claims fail: {failed}"


#: One redraw of a tqdm text bar, e.g.
#: "training seed 0:  40%|####      | 600/1500 [00:04<00:06, 140.2it/s]".
PROGRESS_BAR = re.compile(r"^[^|\n]*\d+%\|[^|]*\| *\d+/\d+ \[[^\]]*\]$")


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_chapter_writes_nothing_to_stderr_but_progress_bars(smoke_runs, chapter_id):
    """The book build hides a chapter's stderr (its progress bars); any other stderr output, such as
    a warning, must not hide there, so it fails here."""
    executed, _ = smoke_runs(chapter_id)
    nb = nbformat.read(str(executed), as_version=4)
    stray = [
        piece
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream" and out.get("name") == "stderr"
        for piece in re.split(r"[\r\n]+", out.get("text", ""))
        if piece.strip() and not PROGRESS_BAR.match(piece.strip())
    ]
    assert not stray, f"chapter {chapter_id!r} wrote to stderr: {stray[:3]}"


def test_progress_bar_pattern():
    assert PROGRESS_BAR.match("training seed 0:  40%|####      | 600/1500 [00:04<00:06, 140.2it/s]")
    assert not PROGRESS_BAR.match("UserWarning: something is off")


@pytest.fixture(scope="module")
def one_kernel():
    """One ``python3`` kernel for every chapter's bad-parameter run (each run starts from
    ``%reset -f``): a kernel start per chapter costs more than the cells it runs."""
    kernel = KernelManager(kernel_name="python3")
    kernel.start_kernel(cwd=str(ROOT))
    client = kernel.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    yield client
    client.stop_channels()
    kernel.shutdown_kernel(now=True)


def _run_until_error(client, nb, cwd: Path) -> dict | None:
    """Run the notebook's code cells in the kernel from a clean namespace in ``cwd``; the first
    error's reply content (``ename``, ``evalue``), or None if every cell ran."""
    start = client.execute_interactive(
        f"%reset -f\nimport os\nos.chdir({str(cwd)!r})\ndel os", output_hook=lambda msg: None
    )
    assert start["content"]["status"] == "ok", start["content"]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        reply = client.execute_interactive(cell.source, output_hook=lambda msg: None, timeout=600)
        if reply["content"]["status"] == "error":
            return reply["content"]
    return None


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_chapter_stops_on_a_bad_parameter(chapter_id, tmp_path, one_kernel):
    """The chapter with papermill's parameters injected (bypassing the CLI's own validation) must
    stop at its preset cell with a ValueError naming the parameter, before it writes a ledger."""
    notebook = _notebook(chapter_id)
    converted = tmp_path / "in.ipynb"
    nbformat.write(jupytext.read(notebook), str(converted))
    injected = parameterize_notebook(
        load_notebook_node(str(converted)),
        {"scale": "smoke", "device": "cpu", "seed": -1, "ledger_dir": str(tmp_path / "led")},
    )
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in injected.cells)
    error = _run_until_error(one_kernel, injected, notebook.parent)
    assert error is not None, "the chapter ran to its end with seed = -1"
    assert error["ename"] == "ValueError" and "'seed'" in error["evalue"], error
    assert not (tmp_path / "led").exists()


def _injected(chapter_id: str, tmp_path: Path, parameters: dict):
    """The chapter's notebook with papermill's parameters injected, cut after its preset cell."""
    converted = tmp_path / "in.ipynb"
    nbformat.write(jupytext.read(_notebook(chapter_id)), str(converted))
    nb = parameterize_notebook(load_notebook_node(str(converted)), parameters)
    last = next(i for i, c in enumerate(nb.cells) if "companions.preset(" in c.source)
    nb.cells = nb.cells[: last + 1]
    return nb


def test_an_injected_knob_reaches_the_chapter_and_an_unknown_one_is_named(tmp_path, one_kernel):
    """papermill -p d 5 (a knob the parameters cell does not name) reaches preset(); -p bogus 1
    stops the chapter with an error naming 'bogus'."""
    chapter_id = "looped-gd"
    common = {"scale": "smoke", "device": "cpu", "ledger_dir": str(tmp_path / "led")}
    nb = _injected(chapter_id, tmp_path, {**common, "d": 5})
    assert _run_until_error(one_kernel, nb, _notebook(chapter_id).parent) is None
    reply = one_kernel.execute_interactive("assert cfg.d == 5, cfg.d", output_hook=lambda m: None)
    assert reply["content"]["status"] == "ok", reply["content"]
    nb = _injected(chapter_id, tmp_path, {**common, "bogus": 1})
    error = _run_until_error(one_kernel, nb, _notebook(chapter_id).parent)
    assert error is not None and error["ename"] == "ValueError" and "bogus" in error["evalue"]


def test_ledger_page_gathers_every_chapter(tmp_path):
    """The page ``book/ledger.md`` shows a ledger of every chapter. The ledgers are written here
    through :class:`companions.Ledger`, one claim each, so that this test needs no chapter run
    (each chapter's own ledger is asserted by its smoke test; the browser test reads the page the
    book build renders from the default runs)."""
    folder = tmp_path / "ledgers"
    for chapter_id in CHAPTER_IDS:
        led = companions.Ledger(
            companions.preset(chapter_id, "smoke", device="cpu"), device="cpu", ledger_dir=folder
        )
        if led.registered:
            led.record({next(iter(led.registered)): companions.Undecided("a probe of the page")})
        else:
            led.check(
                "page-probe", "this test", kind="identity", holds=True, expected=1, observed=1
            )
        led.write()
    converted = tmp_path / "ledger.ipynb"
    nbformat.write(jupytext.read(LEDGER_PAGE), str(converted))
    nb = papermill.execute_notebook(
        str(converted),
        str(tmp_path / "ledger-out.ipynb"),
        kernel_name="python3",
        cwd=str(LEDGER_PAGE.parent),
        parameters={"ledger_dir": str(folder)},
        progress_bar=False,
    )
    shown = json.dumps(
        [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]
    )
    for chapter_id in CHAPTER_IDS:
        assert f"| {chapter_id} | smoke |" in shown, f"the ledger page does not show {chapter_id}"


# ---------------------------------------------------------------------------------------------
# Parameters of the first chapter are validated with clear messages
# ---------------------------------------------------------------------------------------------
def test_looped_bad_parameters_are_named():
    with pytest.raises(ValueError, match="n_values"):
        companions.preset("looped-gd", "smoke", n_values=[0])
    with pytest.raises(ValueError, match="'scale'"):
        companions.preset("looped-gd", "huge")
    with pytest.raises(ValueError, match="'d'"):
        companions.preset("looped-gd", "smoke", d=0)
    cfg = companions.preset("looped-gd", "smoke")
    assert cfg.scale == "smoke" and cfg.chapter == "looped-gd"


# ---------------------------------------------------------------------------------------------
# How a page reads (DESIGN.md): each section's claims in one collapsed cell at its end
# ---------------------------------------------------------------------------------------------
RECORDS_A_CLAIM = re.compile(r"\bledger\.(record|check|check_close|check_at_most|compare)\(")
COLLAPSED = {"hide-cell", "remove-cell"}
READS_A_STATUS = re.compile(r"\bledger\.(choose|status)\(")


def _sections(cells) -> list[tuple[str, list]]:
    """The chapter's code cells grouped by section: a markdown line ``# ...``, ``## ...`` (any
    level) opens a new section, wherever it stands in its cell."""
    sections = [("the chapter's opening", [])]
    for cell in cells:
        if cell.cell_type == "code":
            sections[-1][1].append(cell)
            continue
        for line in cell.source.splitlines():
            if re.match(r"#+ ", line):
                sections.append((line.strip(), []))
    return sections


@pytest.mark.parametrize("chapter_id", CHAPTER_IDS)
def test_claims_are_recorded_in_one_collapsed_cell_at_each_sections_end(chapter_id):
    for name, code in _sections(jupytext.read(_notebook(chapter_id)).cells):
        recording = [i for i, c in enumerate(code) if RECORDS_A_CLAIM.search(c.source)]
        assert len(recording) <= 1, f"section {name!r} records claims in {len(recording)} cells"
        for i in recording:
            tags = set(code[i].metadata.get("tags", []))
            assert tags & COLLAPSED, (
                f"section {name!r} records claims in a visible cell: tag it hide-cell"
            )
            later = [c for c in code[i + 1 :] if not READS_A_STATUS.search(c.source)]
            assert not later, (
                f"section {name!r} records its claims before its last code cell: move them to "
                "the section's end (only a cell that words a conclusion from a status, with "
                "ledger.choose, may follow)"
            )
