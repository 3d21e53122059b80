"""The built HTML book, as a reader meets it, in a real headless browser (Debian's chromium driven
through chromedriver by selenium), served on localhost with no other network.

For every chapter of ``_toc.yml``: the title, a theorem box, a figure, typeset maths (MathJax from
the build, not a CDN), no traceback or error output, the banner with the scale, device and claim
counts of the chapter's ledger, the notebook download and the Colab/Binder links. Then the search
page finds a theorem by name, the introduction's ledger at a glance and the ledger page list every
chapter, and screenshots of two pages are kept in ``_build/browser/``. Every figure of a chapter is
captioned and cited, every cross-reference lands on an element that exists, and the ledger page's
table of every claim filters by chapter, kind and status and links each claim to its cell; two
chapters' screenshots are kept beside the others (``chapter-<id>.png``).

The ledger page's filter and links are also tested on a tiny book built here (the Sphinx project of
``tests/book/test_sphinx_ext.py``), which needs only the browser, not the built book.

It needs a built book (``jupyter-book build .``) and a browser (``apt-get install chromium
chromium-driver``). Without them it is skipped with the reason; with ``BOOK_BROWSER_REQUIRED=1`` (as
``.ci/run`` runs it, after its book build) a skip is a failure. Environment:

- ``BOOK_HTML_DIR``: the built HTML (default ``_build/html``)
- ``BOOK_BROWSER_ARTIFACTS``: where screenshots go (default ``_build/browser``)
- ``CHROMIUM``, ``CHROMEDRIVER``: the browser and its driver (default: found on ``PATH``)
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote_plus, unquote, unquote_plus, urljoin, urlparse

import pytest

import companions
from companions.ledger import STATUSES
from tests.book.test_chapters import toc_files  # the one reader of _toc.yml the tests share

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("BOOK_HTML_DIR") or ROOT / "_build" / "html")
ARTIFACTS = Path(os.environ.get("BOOK_BROWSER_ARTIFACTS") or ROOT / "_build" / "browser")
LEDGERS = Path(os.environ.get("BOOK_LEDGER_DIR") or ROOT / "_build" / "ledger")
REQUIRED = os.environ.get("BOOK_BROWSER_REQUIRED", "") not in ("", "0")
THEOREM_BOXES = "div.proof.theorem, div.proof.lemma, div.proof.proposition, div.proof.corollary"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
)
WAIT = 30  # seconds for a page's scripts (MathJax, search) to finish


def unavailable(reason: str):
    """Skip, or fail where the browser test is required (``BOOK_BROWSER_REQUIRED=1``)."""
    if REQUIRED:
        pytest.fail(f"{reason} (BOOK_BROWSER_REQUIRED is set, so this is a failure, not a skip)")
    pytest.skip(reason)


def _chapters() -> list[tuple[str, str]]:
    """``(docname, chapter id)`` of every declared chapter listed in ``_toc.yml``, in toc order."""
    declared = {
        ch.notebook.removesuffix(".md"): ch.id
        for ch in companions.chapters().values()
        if not ch.id.startswith("_")
    }
    toc = toc_files()
    return [(doc, declared[doc]) for doc in toc if doc in declared]


CHAPTERS = _chapters()

#: Under pytest-xdist (``pytest -n 2``, as ``.ci/run`` runs this file) the tests share out over this
#: many browsers, one per worker: each group gets its own server and browser (module fixtures).
BROWSERS = 2


def on_browser(index: int):
    """The xdist group of the ``index``-th test of a kind: the tests alternate between browsers."""
    return pytest.mark.xdist_group(f"browser-{index % BROWSERS}")


#: Each chapter's parameters, shared out over the browsers.
CHAPTER_PARAMS = [
    pytest.param(d, c, id=c, marks=on_browser(i)) for i, (d, c) in enumerate(CHAPTERS)
]


# -------------------------------------------------------------------------------------------------
# Fixtures: the built HTML, a local server, a browser
# -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def html_dir() -> Path:
    if not (HTML / "index.html").is_file():
        unavailable(
            f"no built HTML book at {HTML}: build it first "
            "(BOOK_SCALE=smoke .venv/bin/jupyter-book build . -W -n --keep-going)"
        )
    missing = [doc for doc, _ in CHAPTERS if not (HTML / f"{doc}.html").is_file()]
    if missing:
        unavailable(
            f"the HTML at {HTML} is older than _toc.yml, it lacks {missing}: rebuild the book"
        )
    built = (
        (HTML / "searchindex.js").stat().st_mtime if (HTML / "searchindex.js").is_file() else 0.0
    )
    sources = [
        ROOT / "_toc.yml",
        ROOT / "_config.yml",
        *(ROOT / f"{doc}.md" for doc, _ in CHAPTERS),
        *(ROOT / "lib" / "companions").glob("sphinx_*.py"),
    ]
    newer = [str(p.relative_to(ROOT)) for p in sources if p.is_file() and p.stat().st_mtime > built]
    if newer:
        unavailable(f"the HTML at {HTML} is older than {newer}: rebuild the book")
    return HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(html_dir) -> str:
    """The HTML served on 127.0.0.1 (a free port); yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _find(env: str, *names: str) -> str | None:
    if os.environ.get(env):
        return os.environ[env] if shutil.which(os.environ[env]) else None
    for name in names:
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def browser(site):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (pip install -r requirements.txt)")
    chromium = _find("CHROMIUM", "chromium", "chromium-browser")
    driver_path = _find("CHROMEDRIVER", "chromedriver")
    if not chromium or not driver_path:
        unavailable(
            "no browser: install Debian's chromium and chromium-driver "
            "(apt-get install chromium chromium-driver), or set CHROMIUM and CHROMEDRIVER"
        )
    profile = tempfile.mkdtemp(prefix="book-browser-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# -------------------------------------------------------------------------------------------------
# Helpers run in the page
# -------------------------------------------------------------------------------------------------
MATHJAX_DONE = """
const done = arguments[arguments.length - 1];
const start = Date.now();
(function wait() {
  if (!Array.from(document.scripts).some(s => /mathjax/i.test(s.src))) {
    done("no MathJax on this page");
  } else if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(() => done("ok"), (e) => done("MathJax failed: " + e));
  } else if (Date.now() - start > 20000) {
    done("MathJax never started (script " +
         Array.from(document.scripts).map(s => s.src)
           .filter(s => /mathjax/i.test(s)).join(", ") + ")");
  } else { setTimeout(wait, 100); }
})();
"""

PAGE_FACTS = """
const main = document.querySelector("main") || document.body;
const origin = location.origin;
const foreign = [];
for (const el of document.querySelectorAll("script[src], link[rel=stylesheet][href], img[src]")) {
  const url = new URL(el.getAttribute("src") || el.getAttribute("href"), location.href);
  if (url.origin !== origin && url.protocol !== "data:") foreign.push(url.href);
}
for (const e of performance.getEntriesByType("resource")) {
  const url = new URL(e.name);
  if (url.origin !== origin && url.protocol !== "data:" && url.protocol !== "blob:")
    foreign.push(url.href);
}
const imgs = Array.from(main.querySelectorAll("img"));
const boxes = Array.from(document.querySelectorAll(arguments[0]));
const math = Array.from(main.querySelectorAll("span.math, div.math"));
return {
  h1: (main.querySelector("h1") || {innerText: ""}).innerText.replace(/#\\s*$/, "").trim(),
  title: document.title,
  theorem_titles: boxes.map(b => (b.querySelector(".admonition-title") || b).innerText.trim()),
  theorem_visible: boxes.filter(b => b.getBoundingClientRect().height > 0).length,
  figures: imgs.filter(i => i.complete && i.naturalWidth > 0 && !i.closest(".companions-banner"))
               .length,
  broken_images: imgs.filter(i => i.complete && i.naturalWidth === 0).map(i => i.src),
  typeset: main.querySelectorAll("mjx-container").length,
  math_spans: math.length,
  untypeset: math.filter(m => !m.querySelector("mjx-container")).map(m => m.innerText.slice(0, 80)),
  merrors: main.querySelectorAll("mjx-merror").length,
  mathjax_src: Array.from(document.scripts).map(s => s.src).filter(s => /mathjax/i.test(s)),
  errors: Array.from(main.querySelectorAll(".output.traceback, .output.error, .output.stderr"))
               .map(e => e.innerText.slice(0, 200)),
  outputs: Array.from(main.querySelectorAll(".cell_output")).map(e => e.innerText).join("\\n"),
  text: main.innerText,
  foreign: foreign,
  banner: (document.querySelector(".companions-banner") || {innerText: null}).innerText,
  banner_links: Array.from(document.querySelectorAll(".companions-banner a"))
                  .map(a => [a.innerText, a.href]),
  launch_links: Array.from(document.querySelectorAll("a")).map(a => a.href)
                  .filter(h => /colab\\.research\\.google\\.com|mybinder\\.org/.test(h)),
};
"""


def load(browser, url: str) -> None:
    """``browser.get(url)``, then wait (up to ``WAIT`` s) until the document is ``url``'s and has
    finished loading.

    Under two browsers and a busy server, CI found pages read right after ``get`` that were not
    yet there: "no MathJax on this page", "no table of every claim" on the ledger page, and a
    chapter whose only ids were the theme's header ones. A page that never loads still fails, and
    the message says where the browser was."""
    browser.get(url)
    want = urlparse(url)._replace(fragment="")
    want = (want.path, unquote_plus(want.query))
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        here, ready = browser.execute_script("return [document.URL, document.readyState]")
        got = urlparse(here)
        if (got.path, unquote_plus(got.query)) == want and ready == "complete":
            return
        time.sleep(0.1)
    raise AssertionError(f"{url} did not load in {WAIT} s; the browser is at {page_state(browser)}")


def open_page(browser, url: str, maths: bool = True) -> dict:
    """Load a page, wait for MathJax to finish typesetting (``maths``: the page must have MathJax),
    and return what :data:`PAGE_FACTS` reads off it."""
    load(browser, url)
    state = browser.execute_async_script(MATHJAX_DONE)
    assert state == "ok" or (not maths and state == "no MathJax on this page"), f"{url}: {state}"
    return browser.execute_script(PAGE_FACTS, THEOREM_BOXES)


def console_errors(browser) -> list[str]:
    return [
        e["message"]
        for e in browser.get_log("browser")
        if e.get("level") == "SEVERE" and "favicon.ico" not in e.get("message", "")
    ]


@pytest.fixture(scope="module")
def page_cache(browser) -> dict:
    """What each page showed this module's browser, loaded once: a chapter's page serves its four
    tests, and a page that many chapters cross-reference is read once."""
    return {}


def chapter_facts(browser, site: str, cache: dict, docname: str) -> dict:
    """The chapter page loaded once per browser (:func:`open_page`): :data:`PAGE_FACTS` with the
    console errors of the load (``console``), :data:`FIGURE_FACTS` (``figure_facts``) and
    :data:`XREF_FACTS` (``xrefs``)."""
    key = ("chapter", docname)
    if key not in cache:
        console_errors(browser)  # what earlier pages logged is theirs, checked where they loaded
        facts = open_page(browser, urljoin(site, f"{docname}.html"))
        facts["console"] = console_errors(browser)
        facts["figure_facts"] = browser.execute_script(FIGURE_FACTS)
        facts["xrefs"] = browser.execute_script(XREF_FACTS)
        cache[key] = facts
    return cache[key]


def element_ids(browser, cache: dict, url: str) -> tuple[set[str], list[str]]:
    """The ``id`` of every element of the page at ``url`` (its fragment aside), loaded once per
    browser, and the console errors of that load."""
    page = urlparse(url)._replace(fragment="").geturl()
    key = ("ids", page)
    if key not in cache:
        console_errors(browser)
        load(browser, page)
        ids = browser.execute_script(
            "return Array.from(document.querySelectorAll('[id]')).map(e => e.id)"
        )
        cache[key] = (set(ids), console_errors(browser))
    return cache[key]


def _ledger(chapter_id: str) -> dict:
    path = LEDGERS / f"{chapter_id}.json"
    if not path.is_file():
        pytest.fail(
            f"no ledger {path} beside the built HTML: build the book and the test with the same "
            "BOOK_LEDGER_DIR"
        )
    return json.loads(path.read_text())


def _theorem_name(title: str) -> str:
    """A theorem box title ``Theorem (Theorem 8.16: main result)`` as a search query: its name
    (``main result``) where it has one, else the whole title without numbers."""
    inner = re.sub(r"^\w+\s*\((.*)\)\s*$", r"\1", title.strip(), flags=re.S)
    name = re.sub(
        r"^(Theorem|Lemma|Proposition|Corollary)s?\s+[\d.,\s–-]+(and\s+[\d.]+\s*)?[:(]?\s*",
        "",
        inner,
        flags=re.I,
    ).strip(" ):")
    words = [w for w in re.findall(r"[A-Za-z][\w'-]{2,}", name)]
    return " ".join(words[:6]) if words else re.sub(r"[\d.]+", " ", inner).strip()


# -------------------------------------------------------------------------------------------------
# The tests
# -------------------------------------------------------------------------------------------------
def test_toc_has_chapters():
    assert CHAPTERS, "_toc.yml lists no declared chapter: the browser test would check nothing"


@pytest.mark.parametrize("docname,chapter_id", CHAPTER_PARAMS)
def test_chapter_page(browser, site, page_cache, docname, chapter_id):
    page = chapter_facts(browser, site, page_cache, docname)
    where = f"{docname}.html"

    assert page["h1"], f"{where}: no title"
    assert page["h1"] in page["title"], (
        f"{where}: title {page['h1']!r} not in the window title {page['title']!r}"
    )
    assert page["theorem_titles"], f"{where}: no theorem box ({THEOREM_BOXES})"
    assert page["theorem_visible"] >= 1, f"{where}: the theorem boxes have no height"
    assert page["figures"] >= 1, f"{where}: no figure shown"
    assert not page["broken_images"], f"{where}: images that did not load: {page['broken_images']}"
    assert page["typeset"] >= 1, f"{where}: no maths typeset by MathJax"
    assert not page["untypeset"], f"{where}: maths left as raw TeX: {page['untypeset'][:5]}"
    assert page["merrors"] == 0, f"{where}: {page['merrors']} MathJax errors"
    assert page["mathjax_src"] and all(s.startswith(site) for s in page["mathjax_src"]), (
        f"{where}: MathJax not served by the book itself: {page['mathjax_src']}"
    )
    assert not page["foreign"], (
        f"{where}: the page reached beyond the book: {sorted(set(page['foreign']))}"
    )
    assert not page["errors"], f"{where}: error output in cells: {page['errors']}"
    assert "Traceback (most recent call last)" not in page["text"], (
        f"{where}: a traceback in the page"
    )
    raised = re.findall(r"^\w*(?:Error|Exception): .*$", page["outputs"], flags=re.M)
    assert not raised, f"{where}: an exception in a cell's output: {raised[:3]}"
    assert not page["console"], f"{where}: console errors {page['console']}"

    # The banner says what the reader is looking at, as the chapter's ledger recorded it.
    led = _ledger(chapter_id)
    banner = page["banner"]
    assert banner, f"{where}: no banner under the title"
    assert f"Rendered at scale {led['scale']}" in banner and f"on {led['device']}" in banner, banner
    for status in STATUSES:
        count = sum(c["status"] == status for c in led["claims"])
        assert f"{count} {status}" in banner, (
            f"{where}: banner lacks '{count} {status}': {banner!r}"
        )

    # The notebook download is a valid notebook of this chapter; Colab and Binder are linked.
    links = dict(page["banner_links"])
    notebook = next((href for text, href in links.items() if ".ipynb" in text), None)
    assert notebook and notebook.startswith(site), f"{where}: no notebook download in {links}"
    with urllib.request.urlopen(notebook, timeout=10) as response:
        nb = json.loads(response.read())
    assert nb["nbformat"] == 4 and any(
        "parameters" in c.get("metadata", {}).get("tags", []) for c in nb["cells"]
    ), f"{notebook}: not the chapter's notebook (no cell tagged 'parameters')"
    colab = [h for h in page["launch_links"] if "colab.research.google.com" in h]
    binder = [h for h in page["launch_links"] if "mybinder.org" in h]
    assert colab and all(urlparse(h).path.endswith(f"{docname}.ipynb") for h in colab), (
        f"{where}: Colab {colab}"
    )
    assert binder and all(f"{docname}.md" in h for h in binder), f"{where}: Binder {binder}"


@pytest.mark.parametrize("docname,chapter_id", CHAPTER_PARAMS)
def test_search_finds_a_theorem(browser, site, page_cache, docname, chapter_id):
    page = chapter_facts(browser, site, page_cache, docname)
    assert page["theorem_titles"], f"{docname}: no theorem box to search for"
    named = [t for t in page["theorem_titles"] if ":" in t or "(" in t.split("(", 1)[-1]]
    query = _theorem_name((named or page["theorem_titles"])[0])
    assert query, f"no search query from {page['theorem_titles'][0]!r}"
    load(browser, urljoin(site, f"search.html?q={quote_plus(query)}"))
    deadline = time.time() + WAIT
    hrefs = []
    while time.time() < deadline:
        hrefs = browser.execute_script(
            "return Array.from(document.querySelectorAll('ul.search li a')).map(a => a.href)"
        )
        finished = browser.execute_script(
            "const s = document.querySelector('.search-summary'); return s ? s.innerText : ''"
        )
        # the summary is set when the search finishes ("found N page(s)"); wait for all N entries
        # too, since the list is filled item by item and a search can be started twice (theme and
        # Sphinx)
        done = re.search(r"found (\d+)", finished)
        if (done and len(hrefs) >= int(done.group(1))) or "did not match" in finished:
            break
        time.sleep(0.2)
    assert any(urlparse(h).path.endswith(f"/{docname}.html") for h in hrefs), (
        f"searching {query!r} did not find {docname}.html: {hrefs} (summary: {finished!r})"
    )


@on_browser(0)
def test_intro_ledger_page_and_screenshots(browser, site):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.get(urljoin(site, "index.html"))  # the book's front door redirects to the introduction
    deadline = time.time() + WAIT
    while time.time() < deadline and browser.execute_script("return location.pathname").endswith(
        "/index.html"
    ):
        time.sleep(0.1)
    intro = open_page(browser, browser.current_url, maths=False)
    assert intro["h1"], "the introduction has no title"
    assert not intro["foreign"], f"the introduction reached beyond the book: {intro['foreign']}"
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.companions-ledger-summary tbody tr'))"
        ".map(r => [r.innerText, Array.from(r.querySelectorAll('a')).map(a => a.href)])"
    )
    assert rows, "the introduction has no 'ledger at a glance' table"
    browser.execute_script(
        "document.querySelector('table.companions-ledger-summary')"
        ".scrollIntoView({block: 'center'})"
    )
    browser.save_screenshot(str(ARTIFACTS / "intro.png"))

    ledger_page = open_page(browser, urljoin(site, "book/ledger.html"), maths=False)
    assert (
        not ledger_page["errors"] and "Traceback (most recent call last)" not in ledger_page["text"]
    )
    for docname, chapter_id in CHAPTERS:
        assert chapter_id in ledger_page["text"], (
            f"the ledger page does not list chapter {chapter_id}"
        )
        led = _ledger(chapter_id)
        row = next(
            (
                text
                for text, hrefs in rows
                if any(urlparse(h).path.endswith(f"/{docname}.html") for h in hrefs)
            ),
            None,
        )
        assert row is not None, f"the ledger at a glance has no row linking {docname}.html: {rows}"
        cells = [c.strip() for c in row.split("\t")]
        counts = [str(sum(c["status"] == s for c in led["claims"])) for s in STATUSES]
        assert cells[1:] == [led["scale"], led["device"], str(len(led["claims"])), *counts], (
            f"the ledger at a glance says {cells} for {chapter_id}, its ledger says otherwise"
        )

    first, _ = CHAPTERS[0]
    open_page(browser, urljoin(site, f"{first}.html"))
    browser.save_screenshot(str(ARTIFACTS / "chapter.png"))
    for name in ("intro.png", "chapter.png"):
        shot = ARTIFACTS / name
        assert shot.is_file() and shot.stat().st_size > 10_000, (
            f"screenshot {shot} is missing or empty"
        )


# -------------------------------------------------------------------------------------------------
# Captions, cross-references, the filterable ledger
# -------------------------------------------------------------------------------------------------
FIGURE_FACTS = """
const main = document.querySelector("main") || document.body;
const outputs = Array.from(main.querySelectorAll(".cell_output img"));
const bare = outputs.filter(i => !i.closest("figure") || !i.closest("figure").querySelector(
  "figcaption") || !i.closest("figure").querySelector("figcaption").innerText.trim());
const figures = Array.from(main.querySelectorAll("figure")).filter(f => f.querySelector("img"));
const cited = id => Array.from(main.querySelectorAll("a[href]")).some(
  a => a.getAttribute("href").endsWith("#" + id) && !a.closest("figure"));
return {
  images: outputs.length,
  uncaptioned: bare.map(i => (i.closest(".cell") || {id: "?"}).id || i.src.slice(-40)),
  uncited: figures.map(f => f.id).filter(id => id && !cited(id)),
  unnamed: figures.filter(f => !f.id).length,
};
"""

XREF_FACTS = """
const main = document.querySelector("main") || document.body;
const links = Array.from(main.querySelectorAll("a.reference.internal[href]"));
const here = location.pathname;
const broken = [];
const proofs = [];
for (const a of links) {
  const url = new URL(a.getAttribute("href"), location.href);
  if (url.pathname === here && url.hash) {
    const target = document.getElementById(decodeURIComponent(url.hash.slice(1)));
    if (!target) broken.push(a.getAttribute("href"));
    else if (target.closest(".proof, [class*=proof]")) proofs.push(a.innerText.trim());
  }
}
return {same_page: links.length, broken: broken, proof_refs: proofs,
        other_pages: links.filter(a => new URL(a.href).pathname !== here).map(a => a.href)};
"""


@pytest.mark.parametrize("docname,chapter_id", CHAPTER_PARAMS)
def test_figures_are_captioned_named_and_cited(browser, site, page_cache, docname, chapter_id):
    facts = chapter_facts(browser, site, page_cache, docname)["figure_facts"]
    assert facts["images"] >= 1, f"{docname}: no figure"
    assert not facts["uncaptioned"], f"{docname}: figures without a caption: {facts['uncaptioned']}"
    assert facts["unnamed"] == 0, f"{docname}: {facts['unnamed']} figures without a name"
    assert not facts["uncited"], f"{docname}: figures the text never cites: {facts['uncited']}"


@pytest.mark.parametrize("docname,chapter_id", CHAPTER_PARAMS)
def test_cross_references_land(browser, site, page_cache, docname, chapter_id):
    facts = chapter_facts(browser, site, page_cache, docname)["xrefs"]
    assert not facts["broken"], f"{docname}: references to nothing on the page: {facts['broken']}"
    assert facts["proof_refs"], f"{docname}: no theorem, lemma or definition is cross-referenced"
    for url in sorted(set(facts["other_pages"])):  # every one: each page is loaded once
        parsed = urlparse(url)
        if not parsed.fragment:
            continue
        ids, console = element_ids(browser, page_cache, url)
        assert unquote(parsed.fragment) in ids, (
            f"{docname}: the reference {url} lands on no element"
        )
        assert not console, f"{url}: console errors {console}"


FILTER_ROWS = """
const table = document.querySelector("table.companions-ledger-claims");
if (!table) return null;
const rows = Array.from(table.tBodies[0].rows);
const head = Array.from(table.tHead.rows[0].cells).map(c => c.innerText.trim());
const col = head.indexOf(arguments[0]);
return {
  total: rows.length,
  shown: rows.filter(r => !r.hidden).map(r => r.cells[col].innerText.trim()),
  count: (document.querySelector(".companions-ledger-count") || {innerText: ""}).innerText,
  links: rows.map(r => (r.querySelector("a[href*='#claim-']") || {href: null}).href)
             .filter(h => h),
};
"""


def choose(browser, name: str, value: str):
    """Pick ``value`` in the ledger page's filter ``name`` as a reader would."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    select = browser.find_element(
        By.CSS_SELECTOR, f".companions-ledger-filters select[name={name}]"
    )
    Select(select).select_by_value(value)


def poll(browser, script: str, *args):
    """``script``'s first non-null answer within ``WAIT`` seconds, else its last one (null): after
    :func:`load`, for what the page's own scripts set up (the ledger page's filters)."""
    deadline = time.monotonic() + WAIT
    while True:
        answer = browser.execute_script(script, *args)
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def page_state(browser) -> str:
    """Where the browser is, for an assertion's message."""
    return browser.execute_script(
        "return `${document.URL} (${document.readyState}, title ${JSON.stringify(document.title)},"
        " ${document.body ? document.body.innerText.length : 0} characters of text)`"
    )


def check_ledger_filters_and_links(browser, url: str) -> dict:
    """On the ledger page at ``url``: each filter shows only its rows and says how many, the
    choice lands in the address, and a claim's link opens its chapter on the claim's cell."""
    load(browser, url)
    start = poll(browser, FILTER_ROWS, "status")
    assert start is not None, (
        f"{url}: no table of every claim; the browser is at {page_state(browser)}"
    )
    assert len(start["shown"]) == start["total"] > 0, f"{url}: rows hidden before any filter"
    assert f"{start['total']} of {start['total']} claims shown" in start["count"]
    for column in ("status", "kind", "chapter"):
        values = sorted(set(browser.execute_script(FILTER_ROWS, column)["shown"]))
        value = values[-1]
        choose(browser, column, value)
        after = browser.execute_script(FILTER_ROWS, column)
        assert after["shown"] and set(after["shown"]) == {value}, (column, value, after["shown"])
        assert f"{column}={quote_plus(value)}" in browser.current_url, browser.current_url
        assert f"{len(after['shown'])} of {start['total']} claims shown" in after["count"]
        choose(browser, column, "")
    load(browser, url + "?status=" + quote_plus(sorted(set(start["shown"]))[0]))
    assert len(set(poll(browser, FILTER_ROWS, "status")["shown"])) == 1, (
        "a filter in the address is not applied when the page opens"
    )
    assert start["links"], f"{url}: no claim links to its cell"
    for link in start["links"][:5]:
        load(browser, link)
        # a cell with several claims carries the first id itself and the others on empty spans
        # just before it (docutils' way with several ids)
        on_cell = poll(
            browser,
            "const t = document.getElementById(decodeURIComponent(location.hash.slice(1)));"
            "if (!t) return false;"
            "let n = t; while (n && n.tagName === 'SPAN' && !n.className) n = n.nextElementSibling;"
            "return !!(t.closest('.cell') || (n && n.classList.contains('cell')))",
        )
        assert on_cell, (
            f"{link} does not open on a code cell; the browser is at {page_state(browser)}"
        )
    return start


@on_browser(1)
def test_ledger_page_filters_and_links_claims(browser, site):
    facts = check_ledger_filters_and_links(browser, urljoin(site, "book/ledger.html"))
    claims = sum(len(_ledger(chapter_id)["claims"]) for _, chapter_id in CHAPTERS)
    assert facts["total"] == claims, f"the ledger page lists {facts['total']} of {claims} claims"
    load(browser, urljoin(site, "book/ledger.html?status=differs"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "ledger-differs.png"))


@on_browser(1)
def test_the_pages_on_running_and_teaching_open_clean(browser, site):
    for page, words in (("book/running.html", "make test"), ("book/teaching.html", "bubblewrap")):
        facts = open_page(browser, urljoin(site, page), maths=False)
        assert facts["h1"], f"{page} has no title"
        assert words in facts["text"], f"{page} does not say {words!r}"
        assert not facts["errors"] and not facts["foreign"], (page, facts["errors"])
        assert not console_errors(browser), f"{page}: {console_errors(browser)}"


SCREENSHOT_CHAPTERS = ("fourier-max-margin", "looped-gd")


def save_chapter_screenshots(browser, site: str, chapters, folder: Path) -> list[Path]:
    """A screenshot of each chapter's first figure, caption in view (``chapter-<id>.png``)."""
    folder.mkdir(parents=True, exist_ok=True)
    shots = []
    for docname, chapter_id in chapters:
        open_page(browser, urljoin(site, f"{docname}.html"))
        browser.execute_script(
            "const f = document.querySelector('main figure, main .cell_output img');"
            "if (f) f.scrollIntoView({block: 'center'});"
        )
        shot = folder / f"chapter-{chapter_id}.png"
        browser.save_screenshot(str(shot))
        shots.append(shot)
    return shots


@on_browser(1)
def test_chapter_screenshots(browser, site):
    chosen = [(d, c) for d, c in CHAPTERS if c in SCREENSHOT_CHAPTERS] or CHAPTERS[:2]
    for shot in save_chapter_screenshots(browser, site, chosen, ARTIFACTS):
        assert shot.stat().st_size > 10_000, f"screenshot {shot} is empty"


# -------------------------------------------------------------------------------------------------
# The same on a tiny book, built here: needs the browser, not the built book
# -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_browser():
    chromium = _find("CHROMIUM", "chromium", "chromium-browser")
    driver_path = _find("CHROMEDRIVER", "chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (pip install -r requirements.txt)")
    if not chromium or not driver_path:
        unavailable("no browser: install Debian's chromium and chromium-driver")
    profile = tempfile.mkdtemp(prefix="book-browser-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@on_browser(0)
def test_tiny_book_ledger_filters_and_links(tiny_browser, tmp_path, monkeypatch):
    from tests.book import test_sphinx_ext as tiny

    chapter = tiny.SimpleNamespace(id=tiny.CHAPTER_ID, notebook=f"{tiny.CHAPTER_DOC}.md")
    monkeypatch.setattr(tiny.SL.scale, "chapter_pages", lambda: {tiny.CHAPTER_DOC: chapter})
    html, _ = tiny.build(tmp_path, monkeypatch, "fresh")
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/book/ledger.html"
        facts = check_ledger_filters_and_links(tiny_browser, url)
        assert facts["total"] == len(tiny.LEDGER["claims"])
        assert len(facts["links"]) == 1 and facts["links"][0].endswith("chap.html#claim-c1")
    finally:
        server.shutdown()
        server.server_close()
