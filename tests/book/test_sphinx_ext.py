"""The book's Sphinx extensions (``companions.book.sphinx_ledger``,
``companions.book.sphinx_reader``), on a small Sphinx project built in a temporary folder: no
chapter is executed here; a ``source-read`` hook stands in for myst-nb's execution and writes the
chapter's ledger while the page is read."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from companions.book import sphinx_ledger as SL
from companions.book import sphinx_reader as SR

CHAPTER_DOC = "book/part/chap"
CHAPTER_ID = "chap-demo"
LEDGER = {
    "chapter": CHAPTER_ID,
    "scale": "smoke",
    "seed": 3,
    "device": "cpu",
    "params": {},
    "wall_seconds": 12.5,
    "python": "python",
    "claims": [
        {
            "id": f"c{i}",
            "source": "Theorem 1",
            "kind": "identity",
            "status": s,
            "expected": 0,
            "observed": 0,
            "tolerance": 0,
            "note": "",
        }
        for i, s in enumerate(["holds", "holds", "holds", "reproduced", "differs"])
    ],
}

CHAPTER_MD = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A demo chapter

Some maths: $x^2$.

```{code-cell} ipython3
:tags: [parameters]

scale = None
```

```{code-cell} ipython3
ledger.check("c1", "Theorem 1", kind="identity", holds=True)
```
"""

INTRO_MD = """# The book

```{toctree}
part/chap
ledger
```

## At a glance

```{ledger-summary}
```
"""

CONF = """
extensions = ["myst_nb", "companions.book.sphinx_ledger", "companions.book.sphinx_reader"]
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath"]
root_doc = "book/intro"
exclude_patterns = ["_build"]
html_theme = "sphinx_book_theme"
html_theme_options = {{}}
MODE = {mode!r}

def _write_ledger(app, docname, source):
    import json, os, time
    if docname == "book/part/chap" and MODE != "none":
        path = os.path.join(os.environ["BOOK_LEDGER_DIR"], "chap-demo.json")
        with open(path, "w") as fh:
            fh.write({ledger!r})
        if MODE == "stale":
            os.utime(path, (time.time() - 3600, time.time() - 3600))

def setup(app):
    app.connect("source-read", _write_ledger)
"""


@pytest.fixture
def demo_chapter(monkeypatch):
    chapter = SimpleNamespace(id=CHAPTER_ID, notebook=f"{CHAPTER_DOC}.md")
    monkeypatch.setattr(SL.scale, "chapter_pages", lambda: {CHAPTER_DOC: chapter})
    return chapter


def build(
    tmp_path: Path,
    monkeypatch,
    mode: str = "fresh",
    theme_options: dict | None = None,
    chapter_md: str = CHAPTER_MD,
):
    """Build the demo project; returns (html folder, warnings text)."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    src = tmp_path / "src"
    (src / "book" / "part").mkdir(parents=True)
    (src / "book" / "intro.md").write_text(INTRO_MD)
    (src / "book" / "part" / "chap.md").write_text(chapter_md)
    (src / "book" / "ledger.md").write_text(
        "# The ledger\n\nEvery claim.\n\n```{ledger-claims}\n```\n"
    )
    conf = CONF.format(mode=mode, ledger=json.dumps(LEDGER))
    if theme_options:
        conf = conf.replace("html_theme_options = {}", f"html_theme_options = {theme_options!r}")
    (src / "conf.py").write_text(conf)
    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    monkeypatch.setenv("BOOK_LEDGER_DIR", str(ledgers))
    warnings = io.StringIO()
    # as sphinx-build does: each build registers its nodes and directives in a namespace of its
    # own, so an earlier Sphinx in this process (any test, any order) leaves no warnings behind
    with patch_docutils(str(src)), docutils_namespace():
        app = Sphinx(
            str(src),
            str(src),
            str(tmp_path / "html"),
            str(tmp_path / "doctrees"),
            "html",
            status=None,
            warning=warnings,
            freshenv=True,
        )
        app.build()
    return tmp_path / "html", warnings.getvalue()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# -------------------------------------------------------------------------------------------------
# sphinx_ledger
# -------------------------------------------------------------------------------------------------
def test_ledger_page_is_read_last_and_always():
    docs = ["book/a", "book/costs", SL.LEDGER_DOC, "book/z"]
    SL._ledger_last(None, None, docs)
    assert docs == ["book/a", "book/z", SL.LEDGER_DOC, "book/costs"]
    env = SimpleNamespace(
        found_docs={"book/a", SL.LEDGER_DOC, "book/intro"}, companions_summary_docs={"book/intro"}
    )
    assert SL._always_outdated(None, env, set(), set(), set()) == ["book/intro", SL.LEDGER_DOC]
    assert (
        SL._always_outdated(None, SimpleNamespace(found_docs={"book/a"}), set(), set(), set()) == []
    )


def test_status_counts_and_ledger_dir(tmp_path, monkeypatch):
    assert SL.status_counts(LEDGER) == {
        "holds": 3,
        "reproduced": 1,
        "differs": 1,
        "inconclusive": 0,
        "fails": 0,
    }
    monkeypatch.delenv("BOOK_LEDGER_DIR", raising=False)
    (tmp_path / "_toc.yml").write_text("root: x\n")
    (tmp_path / "book").mkdir()
    assert SL.ledger_dir(tmp_path / "book") == tmp_path / "_build" / "ledger"
    monkeypatch.setenv("BOOK_LEDGER_DIR", str(tmp_path / "elsewhere"))
    assert SL.ledger_dir(tmp_path / "book") == tmp_path / "elsewhere"


def test_chapter_docs_are_the_declared_chapters():
    import companions

    docs = SL.scale.chapter_pages()
    for chapter in companions.chapters().values():
        if chapter.id.startswith("_"):
            assert all(c.id != chapter.id for c in docs.values())
        else:
            assert docs[chapter.notebook.removesuffix(".md")].id == chapter.id


def test_banner_summary_notebook_and_mathjax(tmp_path, monkeypatch, demo_chapter):
    html, warnings = build(
        tmp_path,
        monkeypatch,
        "fresh",
        {
            "repository_url": "https://github.com/org/book",
            "repository_branch": "main",
            "launch_buttons": {"binderhub_url": "https://mybinder.org"},
        },
    )
    assert warnings == "", warnings
    page = (html / f"{CHAPTER_DOC}.html").read_text()
    banner = _text(page[page.index("companions-banner") : page.index("Some maths")])
    assert "Rendered at scale smoke (the test scale" in banner and "on cpu , seed 3" in banner
    assert "5 claims: 3 holds , 1 reproduced , 1 differs , 0 inconclusive , 0 fails" in banner
    assert page.index("companions-banner") > page.index("<h1"), "the banner sits under the title"
    assert 'href="../../_notebooks/book/part/chap.ipynb"' in page
    assert (
        "https://colab.research.google.com/github/org/book/blob/gh-pages/_notebooks/book/part/chap.ipynb"
        in page
    )
    assert "https://mybinder.org/v2/gh/org/book/main?urlpath=lab/tree/book/part/chap.md" in page
    assert 'src="../../_static/mathjax/tex-mml-chtml.js' in page and "cdn.jsdelivr" not in page
    assert page.count("THEBE_JS_URL =") <= 1

    intro = _text((html / "book" / "intro.html").read_text())
    assert (
        "chapter scale device claims holds reproduced "
        "differs inconclusive fails A demo chapter smoke cpu 5 3 1 1 0 0" in intro
    )

    nb = nbformat.read(str(html / "_notebooks" / f"{CHAPTER_DOC}.ipynb"), as_version=4)
    nbformat.validate(nb)
    assert (
        SR.SETUP_TAG in nb.cells[1].metadata["tags"]
        and "git+https://github.com/org/book" in nb.cells[1].source
    )
    assert "parameters" in nb.cells[2].metadata["tags"] and "jupytext" not in nb.metadata
    assert (html / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    assert not (html / "_static" / "mathjax" / "tex-svg-full.js").exists(), (
        "only the bundle in use is copied"
    )


def test_missing_ledger_warns(tmp_path, monkeypatch, demo_chapter):
    html, warnings = build(tmp_path, monkeypatch, "none")
    assert f"chapter {CHAPTER_ID!r} wrote no ledger" in warnings
    assert "No ledger of chapter chap-demo was written in this build" in _text(
        (html / f"{CHAPTER_DOC}.html").read_text()
    )
    assert "not run" in _text((html / "book" / "intro.html").read_text())


CITING_MD = (
    CHAPTER_MD
    + """
The run found {claim}`c3`; a sentence citing a dropped claim: {claim}`gone`.

$$\\theta^{(t)}=\\theta^{(t-1)}-\\eta\\nabla\\ell \\tag{8.2}$$ (demo-eq-gd)

As {eq}`demo-eq-gd` says.

| claim | source | status |
|---|---|---|
| c3 | Theorem 1 | reproduced |
"""
)


def test_the_claim_role_renders_status_and_value_linked_to_the_ledger_row(
    tmp_path, monkeypatch, demo_chapter
):
    html, warnings = build(tmp_path, monkeypatch, "fresh", chapter_md=CITING_MD)
    assert "cites claim 'gone', which its ledger does not hold" in warnings
    assert warnings.count("WARNING") == 1, warnings
    page = (html / f"{CHAPTER_DOC}.html").read_text()
    cited = page[page.index("The run found") : page.index("a sentence citing")]
    assert 'href="#ledger-c3"' in cited and "companions-reproduced" in cited
    assert "reproduced" in _text(cited)
    assert 'id="ledger-c3"' in page  # the row of the table whose first cell is the claim
    assert "gone (not in this run" in _text(page)
    # the source's equation number, on the equation and in the reference, and not twice
    assert "(8.2)" in _text(page[page.index("As ") : page.index("says.")])
    assert '<span class="eqno">(8.2)' in page and "\\tag" not in page


def test_stale_ledger_warns(tmp_path, monkeypatch, demo_chapter):
    _, warnings = build(tmp_path, monkeypatch, "stale")
    assert "is older than this build's run" in warnings


# -------------------------------------------------------------------------------------------------
# sphinx_reader
# -------------------------------------------------------------------------------------------------
def test_mathjax_package_is_installed():
    es5 = SR.mathjax_source()
    assert es5 is not None, "django-static-mathjax (requirements.txt) is not installed"
    assert json.loads((es5.parent / "package.json").read_text())["version"].startswith("3.")


def test_launch_urls():
    app = SimpleNamespace(
        config=SimpleNamespace(
            html_theme_options={
                "repository_url": "https://github.com/org/repo.git/",
                "repository_branch": "dev",
                "path_to_docs": "",
                "launch_buttons": {"binderhub_url": "https://mybinder.org/"},
            },
            companions_notebooks_branch="pages",
        )
    )
    assert SR.repository(app) == ("https://github.com/org/repo.git", "org", "repo")
    assert (
        SR.colab_url(app, "book/x/y")
        == "https://colab.research.google.com/github/org/repo/blob/pages/_notebooks/book/x/y.ipynb"
    )
    assert (
        SR.binder_url(app, "book/x/y")
        == "https://mybinder.org/v2/gh/org/repo/dev?urlpath=lab/tree/book/x/y.md"
    )
    app.config.html_theme_options = {"repository_url": "https://gitlab.com/org/repo"}
    assert (
        SR.repository(app) is None
        and SR.colab_url(app, "a") is None
        and SR.binder_url(app, "a") is None
    )


def test_launch_buttons_rewritten(monkeypatch, demo_chapter):
    app = SimpleNamespace(
        config=SimpleNamespace(
            html_theme_options={"repository_url": "https://github.com/o/r"},
            companions_notebooks_branch="gh-pages",
        )
    )

    def context():
        return {
            "header_buttons": [
                {
                    "label": "launch-buttons",
                    "buttons": [
                        {"text": "Binder", "url": "b"},
                        {"text": "Colab", "url": "https://colab/x.md"},
                    ],
                }
            ]
        }

    ctx = context()
    SR._fix_launch_buttons(app, CHAPTER_DOC, "page.html", ctx, None)
    assert [b["url"] for b in ctx["header_buttons"][0]["buttons"]] == [
        "b",
        f"https://colab.research.google.com/github/o/r/blob/gh-pages/_notebooks/{CHAPTER_DOC}.ipynb",
    ]
    ctx = context()
    SR._fix_launch_buttons(app, "book/ledger", "page.html", ctx, None)
    assert [b["text"] for b in ctx["header_buttons"][0]["buttons"]] == ["Binder"], (
        "Colab cannot open a .md"
    )


def test_clean_console_drops_repeated_scripts():
    from sphinx.builders.html._assets import _JavaScript

    body = "const THEBE_JS_URL = 1"
    scripts = [
        _JavaScript("_static/a.js"),
        _JavaScript(None, body=body),
        _JavaScript("", body=body, priority=500),
        _JavaScript("_static/a.js"),
    ]
    ctx = {"script_files": scripts}
    SR._clean_console(None, "p", "page.html", ctx, None)
    assert len(ctx["script_files"]) == 2 and ctx["default_mode"] == "auto"


def test_notebook_of_a_chapter(tmp_path):
    source = tmp_path / "c.md"
    source.write_text(CHAPTER_MD)
    nb = SR.chapter_notebook(source, None)
    assert nb.cells[0].cell_type == "markdown" and SR.SETUP_TAG in nb.cells[1].metadata["tags"]
    assert "'companions'" in nb.cells[1].source
    ns: dict = {}
    exec(
        compile(nb.cells[1].source, "setup-cell", "exec"), ns
    )  # companions is importable: installs nothing


def test_ledger_page_links_every_claim_to_its_cell_and_filters(tmp_path, monkeypatch, demo_chapter):
    html, warnings = build(tmp_path, monkeypatch, "fresh")
    assert warnings == "", warnings
    chapter = (html / f"{CHAPTER_DOC}.html").read_text()
    cell = re.search(r'<div class="cell[^"]*"[^>]*id="claim-c1"', chapter)
    assert cell, "the cell that records claim c1 carries its anchor"
    assert chapter.count('id="claim-') == 1, "claims not computed on the page get no anchor"
    page = (html / "book" / "ledger.html").read_text()
    table = page[
        page.index("companions-ledger-claims") : page.index(
            "</table>", page.index("companions-ledger-claims")
        )
    ]
    rows = re.findall(r'<tr class="[^"]*companions-claim[^"]*"', table)
    assert len(rows) == len(LEDGER["claims"])
    assert 'href="part/chap.html#claim-c1"' in table
    assert table.count("href=") == 1, "a claim without a cell on its page is not linked"
    text = _text(table)
    assert "chapter claim source kind status at paper scale rule observed note" in text
    assert "chap-demo c4 Theorem 1 identity differs" in text
    assert "companions-ledger.js" in page
    script = (html / "_static" / "companions-ledger.js").read_text()
    assert "companions-ledger-claims" in script and "http" not in script.replace("history", "")


def test_anchor_claims_prefers_the_recorded_cell():
    from docutils import nodes as N

    tree = N.section()
    first = N.container(nb_element="cell_code", exec_count=3)
    first += N.literal_block("", 'ledger.check("x", ...)')
    second = N.container(nb_element="cell_code", exec_count=4)
    second += N.literal_block("", "for key in keys: ledger.check(f'b-{key}', ...)")
    tree += [first, second]
    led = {"claims": [{"id": "x", "cell": 4}, {"id": "b-1", "cell": 4}, {"id": "x2"}]}
    placed = SL.anchor_claims(tree, led)
    assert placed == {"x": "claim-x", "b-1": "claim-b-1"}
    assert second["ids"] == ["claim-x", "claim-b-1"] and first["ids"] == []
    assert SL.anchor_claims(tree, {"claims": [{"id": "x"}]}) == {"x": "claim-x"}
    assert first["ids"] == ["claim-x"], "without a recorded cell, the cell naming the id"
