"""Sphinx extension: the book's ledger in the rendered pages.

1. The ledger page (``book/ledger``) and the page of costs (``book/costs``) are read after every
   chapter, and always re-read. Sphinx reads
   documents in sorted order, and myst-nb executes a notebook when it reads it, so without this the
   ledger page would gather the chapters' ledgers before some of the chapters ran.
2. Every chapter page (a ``_toc.yml`` entry declared with ``register_chapter``) gets a banner under
   its title: the scale, device and seed it was rendered at, and the counts of its claims by status,
   read from ``<ledger dir>/<chapter>.json``, which the chapter wrote while the book executed it
   (myst-nb runs the notebook in the read phase, just before ``doctree-read``). A ledger missing or
   older than that execution is a warning (an error under ``-W``): the banner would misreport.
   With :mod:`companions.book.sphinx_reader` loaded, the banner also links the chapter's notebook
   and its Colab and Binder launches.
3. The ``ledger-summary`` directive (used by the introduction) renders one row per chapter of the
   book with its scale, device and claim counts, filled in after every chapter has run; a page that
   uses it is always re-read.
4. Every claim gets an anchor, ``claim-<id>``, on the code cell of its chapter that computed it
   (the cell whose execution count the ledger recorded, else the cell whose source names the claim
   id in quotes), and the ``ledger-claims`` directive (used by the ledger page) lists every claim of
   the book, each linked to that cell, in a table that the static script ``companions-ledger.js``
   lets the reader filter by chapter, kind and status, offline.

5. The ``claim`` role, ``{claim}`claim-id```, renders a claim of the page's chapter inline: its
   status and what it observed, linked to its row in the chapter's ledger table (the rows of that
   table get ids ``ledger-<id>``). A page that cites a claim its ledger does not hold gets a warning
   (an error under ``-W``), so a sentence cannot cite a claim that was dropped or renamed.

The banner, the summary and the ledger page count registered claims only
(:func:`companions.ledger.counted`); a ledger page row shows a claim's rule, and every amendment
of it, with its date and reason.

Nothing here is typed by hand: every number comes from the ledgers the chapters wrote.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from companions import scale
from companions.ledger import (
    STATUSES,
    claim_note,
    counted,
    observed_text,
    paper_ledger,
    paper_not_run,
    provenance_text,
    stale_sources,
)

LEDGER_DOC = "book/ledger"
#: Pages that gather what the chapters wrote: read after every chapter, and always re-read.
GATHERING_DOCS = (LEDGER_DOC, "book/costs")
SCALE_MEANING = {
    "smoke": "the test scale: tiny sizes, a quick check, its numbers are rough",
    "default": "the book's scale: small sizes that run on a laptop CPU",
    "paper": "the source's own sizes",
}

logger = logging.getLogger(__name__)


# -------------------------------------------------------------------------------------------------
# Which pages are chapters, and where their ledgers are
# -------------------------------------------------------------------------------------------------
def ledger_dir(srcdir: str | os.PathLike) -> Path:
    """Where the chapters of a build write their ledgers: as :func:`companions.ledger.default_dir`,
    but found from the book's source folder rather than the current directory."""
    from companions import ledger

    if os.environ.get(ledger.LEDGER_ENV):
        return Path(os.environ[ledger.LEDGER_ENV])
    root = ledger.find_root(srcdir)
    return (root or Path(srcdir)) / "_build" / "ledger"


def status_counts(led: dict) -> dict:
    """``{status: number of counted claims}`` for every status, in their order (registered
    claims only, where the ledger has any: :func:`companions.ledger.counted`)."""
    claims = counted(led.get("claims", []))
    return {s: sum(c.get("status") == s for c in claims) for s in STATUSES}


# -------------------------------------------------------------------------------------------------
# 1. The ledger page last
# -------------------------------------------------------------------------------------------------
def _ledger_last(app, env, docnames):
    for doc in GATHERING_DOCS:
        if doc in docnames:
            docnames.remove(doc)
            docnames.append(doc)


def _always_outdated(app, env, added, changed, removed):
    docs = set(getattr(env, "companions_summary_docs", set()))
    docs.update(doc for doc in GATHERING_DOCS if doc in env.found_docs)
    return sorted(docs & env.found_docs)


def _purge(app, env, docname):
    getattr(env, "companions_summary_docs", set()).discard(docname)
    getattr(env, "companions_claim_anchors", {}).pop(docname, None)
    getattr(env, "companions_read_started", {}).pop(docname, None)


def _add_script(app):
    """The ledger page's filter (a static script, no network), for HTML builds."""
    if getattr(app.builder, "format", "") != "html":
        return
    static = Path(__file__).with_name("static")
    if str(static) not in app.config.html_static_path:
        app.config.html_static_path.append(str(static))
    app.add_js_file("companions-ledger.js")


def _merge(app, env, docnames, other):
    env.companions_summary_docs = getattr(env, "companions_summary_docs", set()) | (
        getattr(other, "companions_summary_docs", set()) & set(docnames)
    )


# -------------------------------------------------------------------------------------------------
# 2. The banner of a chapter page
# -------------------------------------------------------------------------------------------------
class chapter_banner(nodes.General, nodes.Element):
    """Placeholder under a chapter's title: ``chapter`` (id) and ``ledger`` (its JSON, or None).
    Replaced by ordinary nodes once the builder is known (:func:`_resolve`)."""


class ledger_summary(nodes.General, nodes.Element):
    """Placeholder of the ``ledger-summary`` directive, filled in at write time."""


def _source_read(app, docname, source):
    if not hasattr(app.env, "companions_read_started"):
        app.env.companions_read_started = {}
    app.env.companions_read_started[docname] = time.time()


def _read_ledger(app, docname: str, chapter) -> dict | None:
    path = ledger_dir(app.srcdir) / f"{chapter.id}.json"
    if not path.is_file():
        logger.warning(
            f"chapter {chapter.id!r} wrote no ledger at {path} while the book ran it: "
            "its banner has no scale, device or claims",
            location=docname,
            type="companions",
            subtype="ledger",
        )
        return None
    started = getattr(app.env, "companions_read_started", {}).get(docname)
    executed_since = os.environ.get("BOOK_EXECUTED_SINCE")  # set by companions.book.build
    if started is not None and executed_since:
        started = min(started, float(executed_since))
    if started is not None and path.stat().st_mtime < started - 1.0:
        logger.warning(
            f"the ledger {path} is older than this build's run of chapter {chapter.id!r} "
            "(was the notebook executed?): its banner would describe another run",
            location=docname,
            type="companions",
            subtype="ledger",
        )
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        logger.warning(
            f"the ledger {path} is not JSON ({exc})",
            location=docname,
            type="companions",
            subtype="ledger",
        )
        return None
    if not isinstance(data, dict) or data.get("chapter") != chapter.id or "claims" not in data:
        logger.warning(
            f"{path} is not the ledger of chapter {chapter.id!r}",
            location=docname,
            type="companions",
            subtype="ledger",
        )
        return None
    return data


def _add_banner(app, doctree):
    docname = app.env.docname
    chapter = scale.chapter_pages().get(docname)
    if chapter is None:
        for node in list(doctree.findall(claim_ref)):
            logger.warning(
                f"claim {node['claim']!r} is cited on a page that is not a chapter",
                location=node,
                type="companions",
                subtype="claim",
            )
            node.replace_self(nodes.literal("", node["claim"]))
        return
    led = _read_ledger(app, docname, chapter)
    banner = chapter_banner(chapter=chapter.id, ledger=led)
    anchors = getattr(app.env, "companions_claim_anchors", None)
    if anchors is None:
        anchors = app.env.companions_claim_anchors = {}
    anchors[docname] = anchor_claims(doctree, led) if led is not None else {}
    rows = anchor_ledger_rows(doctree, led) if led is not None else {}
    resolve_claim_roles(doctree, led, rows, docname)
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is not None and section.children and isinstance(section[0], nodes.title):
        section.insert(1, banner)
    else:
        doctree.insert(0, banner)


def claim_anchor(claim_id: str) -> str:
    """The HTML id of a claim's cell on its chapter page."""
    return nodes.make_id(f"claim-{claim_id}")


def anchor_claims(doctree: nodes.Node, led: dict) -> dict:
    """Put an id ``claim-<id>`` on the code cell that computed each claim of ``led``: the cell
    whose execution count is the claim's ``cell`` (recorded by the ledger in the same run), else
    the first cell whose source contains the claim id in quotes. Returns ``{claim id: anchor}``
    for the claims placed."""
    cells = [
        node for node in doctree.findall(nodes.container) if node.get("nb_element") == "cell_code"
    ]
    by_count = {c.get("exec_count"): c for c in cells if c.get("exec_count") is not None}

    def source(cell):
        block = next(iter(cell.findall(nodes.literal_block)), None)
        return block.astext() if block is not None else ""

    placed = {}
    for claim in led.get("claims", []):
        cid = str(claim.get("id", ""))
        cell = by_count.get(claim.get("cell"))
        if cell is None:
            cell = next(
                (c for c in cells if f'"{cid}"' in source(c) or f"'{cid}'" in source(c)), None
            )
        if cell is None or not cid:
            continue
        anchor = claim_anchor(cid)
        if anchor not in cell["ids"]:
            cell["ids"].append(anchor)
        placed[cid] = anchor
    return placed


def row_anchor(claim_id: str) -> str:
    """The HTML id of a claim's row in its chapter's ledger table."""
    return nodes.make_id(f"ledger-{claim_id}")


def anchor_ledger_rows(doctree: nodes.Node, led: dict) -> dict:
    """Put an id ``ledger-<id>`` on the row of each claim in the chapter's ledger table: the last
    table row of the page whose first cell is the claim's id (the ledger table comes last; the
    sections' claims cells show the same rows earlier). Returns ``{claim id: anchor}``."""
    ids = {str(c.get("id")) for c in led.get("claims", [])}
    last = {}
    for row in doctree.findall(nodes.row):
        entries = [e for e in row.children if isinstance(e, nodes.entry)]
        if entries and entries[0].astext().strip() in ids:
            last[entries[0].astext().strip()] = row
    placed = {}
    for cid, row in last.items():
        anchor = row_anchor(cid)
        if anchor not in row["ids"]:
            row["ids"].append(anchor)
        placed[cid] = anchor
    return placed


class claim_ref(nodes.Inline, nodes.TextElement):
    """Placeholder of the ``claim`` role (``claim``: the id), resolved at ``doctree-read``."""


def claim_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{claim}`id```: the claim's status and observed value, inline, from the page's ledger."""
    cid = text.strip()
    return [claim_ref(rawtext, cid, claim=cid)], []


def claim_inline(claim: dict, refuri: str | None) -> nodes.Node:
    """A claim as inline nodes: its status (coloured), then what it observed."""
    status = str(claim.get("status", ""))
    box = nodes.inline(classes=["companions-claim-ref"])
    box += nodes.inline("", status, classes=["companions-status", f"companions-{status}"])
    box += nodes.Text(f" ({observed_text(claim)})")
    if refuri is None:
        return box
    ref = nodes.reference("", "", internal=True, refuri=refuri, reftitle=str(claim.get("id")))
    ref += box
    return ref


def resolve_claim_roles(doctree: nodes.Node, led: dict | None, rows: dict, docname: str) -> None:
    """Replace every ``claim`` role of the page by :func:`claim_inline`; a claim the ledger does
    not hold is a warning, and renders as its id with "not in this run's ledger"."""
    by_id = {str(c.get("id")): c for c in (led or {}).get("claims", [])}
    for node in list(doctree.findall(claim_ref)):
        cid = node["claim"]
        claim = by_id.get(cid)
        if claim is None:
            if led is not None:
                logger.warning(
                    f"the page cites claim {cid!r}, which its ledger does not hold",
                    location=node,
                    type="companions",
                    subtype="claim",
                )
            node.replace_self(nodes.literal("", f"{cid} (not in this run's ledger)"))
            continue
        anchor = rows.get(cid)
        node.replace_self(claim_inline(claim, f"#{anchor}" if anchor else None))


def _status_nodes(counts: dict) -> list[nodes.Node]:
    out = []
    for i, status in enumerate(STATUSES):
        if i:
            out.append(nodes.Text(", "))
        out.append(
            nodes.inline(
                "",
                f"{counts[status]} {status}",
                classes=["companions-status", f"companions-{status}"],
            )
        )
    return out


def _link(app, fromdoc: str, todoc: str, text: str) -> nodes.Node:
    if todoc not in app.env.found_docs:
        return nodes.Text(text)
    uri = app.builder.get_relative_uri(fromdoc, todoc)
    return nodes.reference("", text, internal=True, refuri=uri)


def banner_nodes(app, docname: str, chapter_id: str, led: dict | None) -> nodes.container:
    """The banner as ordinary docutils nodes (text and links), for any builder."""
    box = nodes.container(classes=["companions-banner"])
    if led is None:
        box += nodes.paragraph(
            "",
            f"No ledger of chapter {chapter_id} was written in this build: "
            "what this page shows was not checked.",
        )
        return box
    scale = str(led.get("scale"))
    para = nodes.paragraph()
    para += nodes.Text("Rendered at scale ")
    para += nodes.strong("", scale)
    if scale in SCALE_MEANING:
        para += nodes.Text(f" ({SCALE_MEANING[scale]})")
    para += nodes.Text(" on ")
    para += nodes.strong("", str(led.get("device")))
    para += nodes.Text(
        f", seed {led.get('seed')}; its code ran for {float(led.get('wall_seconds', 0)):.0f} s."
    )
    box += para

    counts = status_counts(led)
    para = nodes.paragraph()
    para += nodes.Text(f"Its ledger: {len(counted(led['claims']))} claims: ")
    para += _status_nodes(counts)
    para += nodes.Text(" (listed at the end of the page and in ")
    para += _link(app, docname, LEDGER_DOC, "the book's ledger")
    para += nodes.Text(").")
    box += para
    if scale != "paper":
        box += paper_paragraph(chapter_id, led)

    if (
        getattr(app.builder, "format", "") == "html"
        and "companions.book.sphinx_reader" in app.extensions
    ):
        from companions.book import sphinx_reader

        links = sphinx_reader.notebook_links(app, docname)
        if links:
            para = nodes.paragraph(classes=["companions-notebook-links"])
            para += nodes.Text("Run it yourself: ")
            for i, (text, uri) in enumerate(links):
                if i:
                    para += nodes.Text(" · ")
                para += nodes.reference("", text, refuri=uri, classes=["companions-launch"])
            box += para
    return box


def paper_paragraph(chapter_id: str, led: dict) -> nodes.paragraph:
    """The banner's line on the paper scale: the committed paper ledger's counts and provenance,
    how many claims change status, and whether it is stale; or what a paper run needs."""
    para = nodes.paragraph(classes=["companions-paper"])
    try:
        paper = paper_ledger(chapter_id)
    except (OSError, ValueError) as exc:
        para += nodes.Text(f"Its paper-scale ledger cannot be read: {exc}.")
        return para
    if paper is None:
        needs = paper_not_run(chapter_id)
        para += nodes.Text("No paper-scale ledger is committed" + (f": {needs}" if needs else "."))
        return para
    para += nodes.Text(f"At the paper scale ({provenance_text(paper)}): ")
    para += _status_nodes(status_counts(paper))
    changes = [
        c
        for c in counted(paper["claims"])
        for d in counted(led["claims"])
        if c["id"] == d["id"] and c["status"] != d["status"]
    ]
    para += nodes.Text(f"; {len(changes)} claims change status from this run.")
    stale = stale_sources(paper)
    if stale:
        para += nodes.Text(" ")
        para += nodes.strong("", "Stale")
        para += nodes.Text(f": changed since it was made: {', '.join(stale)}.")
    return para


# -------------------------------------------------------------------------------------------------
# 3. The ledger at a glance
# -------------------------------------------------------------------------------------------------
class LedgerSummary(SphinxDirective):
    """``ledger-summary``: a table of every chapter of the book with its scale, device and claim
    counts, from the ledgers written in this build."""

    has_content = False

    def run(self):
        if not hasattr(self.env, "companions_summary_docs"):
            self.env.companions_summary_docs = set()
        self.env.companions_summary_docs.add(self.env.docname)
        return [ledger_summary()]


def summary_rows(app) -> list[tuple[str, str, dict | None]]:
    """``(docname, chapter id, ledger or None)`` for every chapter page of this book, in toc
    order."""
    chapters = scale.chapter_pages()
    order = {doc: i for i, doc in enumerate(getattr(app.env, "companions_toc_order", []))}
    docs = sorted(
        (d for d in chapters if d in app.env.found_docs), key=lambda d: (order.get(d, 1e9), d)
    )
    folder = ledger_dir(app.srcdir)
    rows = []
    for doc in docs:
        path = folder / f"{chapters[doc].id}.json"
        led = None
        if path.is_file():
            try:
                led = json.loads(path.read_text())
            except ValueError:
                led = None
        rows.append((doc, chapters[doc].id, led))
    return rows


def summary_table(app, fromdoc: str) -> nodes.Node:
    head = ["chapter", "scale", "device", "claims", *STATUSES]
    rows = summary_rows(app)
    if not rows:
        return nodes.paragraph("", "This build has no chapters yet.")
    table = nodes.table(classes=["companions-ledger-summary"])
    group = nodes.tgroup(cols=len(head))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in head]

    def row(cells):
        r = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += (
                nodes.paragraph("", "", cell)
                if isinstance(cell, nodes.Node)
                else nodes.paragraph("", str(cell))
            )
            r += entry
        return r

    thead = nodes.thead()
    thead += row(head)
    group += thead
    body = nodes.tbody()
    total = {s: 0 for s in STATUSES}
    claims = 0
    for doc, chapter_id, led in rows:
        title = app.env.titles.get(doc)
        name = title.astext() if title is not None else chapter_id
        link = _link(app, fromdoc, doc, name)
        if led is None:
            body += row([link, "not run", "", "", "", "", "", ""])
            continue
        counts = status_counts(led)
        for s in STATUSES:
            total[s] += counts[s]
        claims += len(counted(led["claims"]))
        body += row(
            [
                link,
                led.get("scale"),
                led.get("device"),
                len(counted(led["claims"])),
                *(counts[s] for s in STATUSES),
            ]
        )
    if len(rows) > 1:
        body += row(["all chapters", "", "", claims, *(total[s] for s in STATUSES)])
    group += body
    return table


class ledger_claims(nodes.General, nodes.Element):
    """Placeholder of the ``ledger-claims`` directive, filled in at write time."""


class LedgerClaims(SphinxDirective):
    """``ledger-claims``: every claim of the book's chapters, one row each, linked to the cell of
    its chapter that computed it; the rendered table can be filtered by chapter, kind and status
    (``static/companions-ledger.js``)."""

    has_content = False

    def run(self):
        if not hasattr(self.env, "companions_summary_docs"):
            self.env.companions_summary_docs = set()
        self.env.companions_summary_docs.add(self.env.docname)
        return [ledger_claims()]


CLAIM_COLUMNS = (
    "chapter",
    "claim",
    "source",
    "kind",
    "status",
    "at paper scale",
    "rule",
    "observed",
    "note",
)


def claims_table(app, fromdoc: str) -> nodes.Node:
    """The table of every claim, for :class:`LedgerClaims`."""
    from companions.ledger import _fmt

    rows = [(doc, cid, led) for doc, cid, led in summary_rows(app) if led is not None]
    if not rows:
        return nodes.paragraph("", "This build has no chapter ledgers yet.")
    anchors = getattr(app.env, "companions_claim_anchors", {})
    table = nodes.table(classes=["companions-ledger-claims"])
    group = nodes.tgroup(cols=len(CLAIM_COLUMNS))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in CLAIM_COLUMNS]

    def row(cells, classes=()):
        r = nodes.row(classes=list(classes))
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            para += cell if isinstance(cell, nodes.Node) else nodes.Text(str(cell))
            entry += para
            r += entry
        return r

    thead = nodes.thead()
    thead += row(CLAIM_COLUMNS)
    group += thead
    body = nodes.tbody()
    for doc, chapter_id, led in rows:
        placed = anchors.get(doc, {})
        uri = app.builder.get_relative_uri(fromdoc, doc) if doc in app.env.found_docs else None
        try:
            paper = paper_ledger(chapter_id) if led.get("scale") != "paper" else None
        except (OSError, ValueError):
            paper = None
        at_paper = {c["id"]: c for c in (paper or {}).get("claims", [])}
        for claim in counted(led["claims"]):
            cid = str(claim.get("id", ""))
            if uri is not None and cid in placed:
                link = nodes.reference("", cid, internal=True, refuri=f"{uri}#{placed[cid]}")
            else:
                link = nodes.literal("", cid)
            status = str(claim.get("status", ""))
            body += row(
                [
                    chapter_id,
                    link,
                    claim.get("source", ""),
                    claim.get("kind", ""),
                    nodes.inline("", status, classes=["companions-status", f"companions-{status}"]),
                    _paper_cell(at_paper.get(cid)),
                    claim.get("rule") or _fmt(claim.get("expected")),
                    observed_text(claim),
                    claim_note(claim),
                ],
                classes=["companions-claim"],
            )
    group += body
    return table


def _paper_cell(claim: dict | None) -> nodes.Node:
    """A claim's status at the paper scale, for the ledger page ("—" where none)."""
    if claim is None:
        return nodes.Text("—")
    status = str(claim.get("status", ""))
    return nodes.inline("", status, classes=["companions-status", f"companions-{status}"])


def _note_toc_order(app, env):
    """Remember the order of documents in the toctree (for the summary's rows)."""
    try:
        root = app.config.root_doc
        order = [root]
        tree = env.get_doctree(root) if root in env.found_docs else None
        if tree is not None:
            from sphinx import addnodes

            for toc in tree.findall(addnodes.toctree):
                order += [doc for _, doc in toc["entries"] if doc]
        env.companions_toc_order = order
    except Exception:  # noqa: BLE001 - the order is cosmetic; a sorted list is fine too
        env.companions_toc_order = []


# -------------------------------------------------------------------------------------------------
def _resolve(app, doctree, docname):
    for node in list(doctree.findall(chapter_banner)):
        node.replace_self(banner_nodes(app, docname, node["chapter"], node["ledger"]))
    for node in list(doctree.findall(ledger_summary)):
        node.replace_self(summary_table(app, docname))
    for node in list(doctree.findall(ledger_claims)):
        node.replace_self(claims_table(app, docname))


def _visit_skip(self, node):
    raise nodes.SkipNode


def setup(app):
    skip = (_visit_skip, None)
    app.add_node(chapter_banner, html=skip, latex=skip, text=skip, man=skip, texinfo=skip)
    app.add_node(ledger_summary, html=skip, latex=skip, text=skip, man=skip, texinfo=skip)
    app.add_node(ledger_claims, html=skip, latex=skip, text=skip, man=skip, texinfo=skip)
    app.add_node(claim_ref, html=skip, latex=skip, text=skip, man=skip, texinfo=skip)
    app.add_role("claim", claim_role)
    app.add_directive("ledger-summary", LedgerSummary)
    app.add_directive("ledger-claims", LedgerClaims)
    app.connect("builder-inited", _add_script)
    app.connect("env-before-read-docs", _ledger_last)
    app.connect("env-get-outdated", _always_outdated)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("source-read", _source_read)
    app.connect("doctree-read", _add_banner)
    app.connect("env-updated", _note_toc_order)
    app.connect("doctree-resolved", _resolve)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
