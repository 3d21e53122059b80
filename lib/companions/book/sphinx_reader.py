"""Sphinx extension: the rendered book as a reader meets it, offline and downloadable.

1. **MathJax without network.** ``mathjax_path`` is pointed at ``_static/mathjax/tex-mml-chtml.js``
   and MathJax 3.2.2 is copied there from the PyPI package ``django-static-mathjax`` (pinned in
   requirements.txt; it is MathJax's own ``es5`` build, packaged as static files), so the HTML book
   typesets its maths in a classroom without internet. A ``mathjax_path`` set by the user is left
   alone; a missing package is a warning (an error under ``-W``).
2. **Notebooks.** Every chapter page's source (a MyST notebook) is converted with jupytext to
   ``_notebooks/<docname>.ipynb`` in the HTML output at the end of each build, with one setup cell
   added that installs the book's library where it is missing (Colab, a lone download). Nothing
   generated is committed.
3. **Launch links.** Colab opens a notebook from a GitHub branch, and the repository commits no
   ``.ipynb``: Colab links point at ``_notebooks/<docname>.ipynb`` on the branch that holds the
   published HTML (``companions_notebooks_branch``, default ``gh-pages``, where
   ``ghp-import -n -p -f _build/html`` puts it). The theme's Colab button, which would point at the
   ``.md`` source, is rewritten accordingly (and dropped on pages that are not chapters). Binder
   builds the repository's environment (requirements.txt, ``.binder/``) and opens the ``.md``
   notebook with Jupytext. The repository is the one given once, as ``repository.url``, in
   ``_config.yml``.
4. **The source's equation numbers.** A displayed equation written with ``\\tag{8.2}`` (MathJax
   shows the tag in a notebook) is numbered (8.2) on the page, and ``{eq}`` cites it as (8.2):
   the tag is taken out of the LaTeX and becomes the equation's number (with ``math_numfig``
   off, so that Sphinx does not number it again). Equations without a tag keep Sphinx's numbers.
5. **A clean console.** Two theme-stack slips that print errors in every page's browser console
   are mended (a doubled sphinx-thebe script, an empty theme mode), so the browser test can
   require a console free of errors.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path
from urllib.parse import quote

from sphinx.util import logging

logger = logging.getLogger(__name__)

NOTEBOOK_DIR = "_notebooks"
MATHJAX_BUNDLE = "tex-mml-chtml.js"  # the bundle Sphinx's default CDN address names
MATHJAX_STATIC = "mathjax"  # under _static/
COLAB_URL = "https://colab.research.google.com"
SETUP_TAG = "companions-setup"


# -------------------------------------------------------------------------------------------------
# 1. MathJax
# -------------------------------------------------------------------------------------------------
def mathjax_source() -> Path | None:
    """The ``es5`` folder of the installed MathJax package, or None where it is not installed."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        es5 = Path(location) / "static" / "mathjax" / "es5"
        if (es5 / MATHJAX_BUNDLE).is_file():
            return es5
    return None


def _mathjax_config(app, config):
    from sphinx.ext.mathjax import MATHJAX_URL

    if not config.companions_offline_mathjax or config.mathjax_path != MATHJAX_URL:
        return
    if mathjax_source() is None:
        logger.warning(
            "MathJax is not installed (django-static-mathjax, in requirements.txt): the book "
            f"will load it from {MATHJAX_URL} and show raw TeX without network",
            type="companions",
            subtype="mathjax",
        )
        return
    config.mathjax_path = f"{MATHJAX_STATIC}/{MATHJAX_BUNDLE}"


def _ignore_other_bundles(folder, names):
    """Of the top-level combined bundles keep the one in use; keep every component folder."""
    if Path(folder) != mathjax_source():
        return []
    keep = {MATHJAX_BUNDLE, "core.js", "loader.js", "startup.js", "latest.js"}
    return [n for n in names if n.endswith(".js") and n not in keep]


def copy_mathjax(outdir: str | Path) -> Path | None:
    """Copy MathJax into ``<outdir>/_static/mathjax``; returns the target, or None without
    MathJax."""
    source = mathjax_source()
    if source is None:
        return None
    target = Path(outdir) / "_static" / MATHJAX_STATIC
    shutil.copytree(source, target, ignore=_ignore_other_bundles, dirs_exist_ok=True)
    return target


# -------------------------------------------------------------------------------------------------
# 2. Notebooks
# -------------------------------------------------------------------------------------------------
def repository(app) -> tuple[str, str, str] | None:
    """``(url, org, repo)`` of the book's GitHub repository from ``repository.url``, or None."""
    url = str(app.config.html_theme_options.get("repository_url", "") or "").rstrip("/")
    if "github.com/" not in url:
        return None
    parts = url.split("github.com/", 1)[1].split("/")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        return None
    return url, parts[0], parts[1].removesuffix(".git")


#: Environment variable naming what a downloaded notebook installs instead of the package from the
#: book's repository: a local path or any pip requirement (a book that is not published yet).
PACKAGE_ENV = "BOOK_PACKAGE"


def package_requirement(repo_url: str | None) -> str:
    """The pip requirement a downloaded notebook installs: ``$BOOK_PACKAGE`` if set, else the
    package from the book's repository. It brings the package's declared dependencies only, which
    are what running a chapter needs (``pyproject.toml``); building and grading are the ``book``
    extra."""
    override = os.environ.get(PACKAGE_ENV, "").strip()
    if override:
        return override
    return f"companions @ git+{repo_url}" if repo_url else "companions"


def setup_cell_source(requirement: str) -> str:
    """The notebook's first code cell: install ``requirement`` where ``companions`` is missing."""
    return (
        "# Added by the book's build: on Colab, or anywhere the book's library is missing,\n"
        "# install it with what running a chapter needs.\n"
        "import importlib.util, subprocess, sys\n"
        'if importlib.util.find_spec("companions") is None:\n'
        '    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", '
        f"{requirement!r}])"
    )


def chapter_notebook(source: str | Path, repo_url: str | None = None):
    """The chapter's MyST notebook as an nbformat notebook, with the setup cell after its title."""
    import jupytext
    import nbformat

    nb = jupytext.read(str(source))
    nb.metadata.pop("jupytext", None)
    setup = setup_cell_source(package_requirement(repo_url))
    cell = nbformat.v4.new_code_cell(setup, metadata={"tags": [SETUP_TAG]})
    at = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
    nb.cells.insert(at, cell)
    for c in nb.cells:  # jupytext gives no ids; nbformat 4.5 wants them
        c.setdefault("id", nbformat.corpus.words.generate_corpus_id())
    nbformat.validate(nb)
    return nb


def write_notebooks(app) -> list[Path]:
    """Write ``_notebooks/<docname>.ipynb`` for every chapter page of the build."""
    import nbformat

    from companions.scale import chapter_pages

    repo = repository(app)
    written = []
    for docname in sorted(chapter_pages()):
        if docname not in app.env.found_docs:
            continue
        target = Path(app.outdir) / NOTEBOOK_DIR / f"{docname}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nb = chapter_notebook(app.env.doc2path(docname), repo[0] if repo else None)
        if getattr(
            app.config, "companions_student_edition", False
        ):  # the student edition offers no solutions
            from companions.book.assign import strip_solutions

            nb = strip_solutions(nb)
        nbformat.write(nb, str(target))
        written.append(target)
    return written


# -------------------------------------------------------------------------------------------------
# 3. Launch links
# -------------------------------------------------------------------------------------------------
def colab_url(app, docname: str) -> str | None:
    repo = repository(app)
    if repo is None:
        return None
    _, org, name = repo
    branch = app.config.companions_notebooks_branch
    return f"{COLAB_URL}/github/{org}/{name}/blob/{branch}/{NOTEBOOK_DIR}/{quote(docname)}.ipynb"


def binder_url(app, docname: str) -> str | None:
    repo = repository(app)
    options = app.config.html_theme_options
    binderhub = str(options.get("launch_buttons", {}).get("binderhub_url", "") or "").rstrip("/")
    if repo is None or not binderhub:
        return None
    _, org, name = repo
    branch = options.get("repository_branch") or "main"
    book = str(options.get("path_to_docs", "") or "").strip("/")
    path = f"{book}/{docname}.md" if book else f"{docname}.md"
    return f"{binderhub}/v2/gh/{org}/{name}/{branch}?urlpath=lab/tree/{quote(path)}"


def notebook_links(app, docname: str) -> list[tuple[str, str]]:
    """``(text, uri)`` of the chapter's notebook download and launches (for its banner)."""
    from sphinx.util.osutil import relative_uri

    here = app.builder.get_target_uri(docname)
    links = [
        ("download the notebook (.ipynb)", relative_uri(here, f"{NOTEBOOK_DIR}/{docname}.ipynb"))
    ]
    for text, url in (
        ("open in Colab", colab_url(app, docname)),
        ("launch on Binder", binder_url(app, docname)),
    ):
        if url:
            links.append((text, url))
    return links


def _fix_launch_buttons(app, pagename, templatename, context, doctree):
    from companions.scale import chapter_pages

    is_chapter = pagename in chapter_pages()
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        kept = []
        for button in group.get("buttons", []):
            if button.get("text") == "Colab":
                url = colab_url(app, pagename) if is_chapter else None
                if url is None:
                    continue
                button = {**button, "url": url}
            kept.append(button)
        group["buttons"] = kept


def _clean_console(app, pagename, templatename, context, doctree):
    """Mend two slips of the theme stack that print errors in every page's browser console.

    sphinx-thebe's inline configuration is registered twice (once with filename None, once with
    ''), and a second ``const THEBE_JS_URL`` is a SyntaxError; pydata-sphinx-theme's layout reads
    a ``default_mode`` that nothing sets, and logs "Got invalid theme mode" for the empty value
    (``auto``, following the reader's system, is the theme's documented default)."""
    scripts = context.get("script_files")
    if scripts:
        seen, kept = set(), []
        for js in scripts:
            attributes = {k: v for k, v in getattr(js, "attributes", {}).items() if k != "priority"}
            key = (getattr(js, "filename", js) or "", tuple(sorted(attributes.items())))
            if key not in seen:
                seen.add(key)
                kept.append(js)
        context["script_files"] = kept
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


def _build_finished(app, exc):
    if exc is not None or getattr(app.builder, "format", "") != "html":
        return
    if (
        app.config.companions_offline_mathjax
        and app.config.mathjax_path == f"{MATHJAX_STATIC}/{MATHJAX_BUNDLE}"
    ):
        copy_mathjax(app.outdir)
    write_notebooks(app)


TAG = re.compile(r"\\tag\{([^{}]+)\}")


def source_numbers(app, doctree) -> None:
    """``\\tag{X}`` in a displayed equation becomes its number X, for the page and for ``{eq}``
    (the tag leaves the LaTeX, so it is not shown twice)."""
    from docutils import nodes

    domain = app.env.get_domain("math")
    for node in doctree.findall(nodes.math_block):
        latex = node.astext()
        found = TAG.search(latex)
        if found is None:
            continue
        number = found.group(1).strip()
        node.children = [nodes.Text(TAG.sub("", latex, count=1))]
        node["number"] = number
        if node.get("label"):
            domain.equations[node["label"]] = (app.env.docname, number)


def setup(app):
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("doctree-read", source_numbers)
    app.add_config_value("companions_offline_mathjax", True, "html", types=[bool])
    app.add_config_value("companions_notebooks_branch", "gh-pages", "html", types=[str])
    app.connect("config-inited", _mathjax_config)
    app.connect("html-page-context", _clean_console, priority=900)
    app.connect("html-page-context", _fix_launch_buttons, priority=600)
    app.connect("build-finished", _build_finished)
    static = Path(__file__).with_name("static")
    app.connect("builder-inited", lambda app: _add_static(app, static))
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _add_static(app, static: Path):
    if getattr(app.builder, "format", "") != "html" or not static.is_dir():
        return
    app.config.html_static_path.append(str(static))
    app.add_css_file("companions.css")
