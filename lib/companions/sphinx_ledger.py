"""Sphinx hook: read the book's ledger page after every chapter, and always re-read it.

Sphinx reads documents in sorted order, and myst-nb executes a notebook when it reads it, so
without this hook the ledger page (``book/ledger``) would gather the chapters' ledgers before
some of the chapters ran.
"""

LEDGER_DOC = "book/ledger"


def _ledger_last(app, env, docnames):
    if LEDGER_DOC in docnames:
        docnames.remove(LEDGER_DOC)
        docnames.append(LEDGER_DOC)


def _ledger_always_outdated(app, env, added, changed, removed):
    return [LEDGER_DOC] if LEDGER_DOC in env.found_docs else []


def setup(app):
    app.connect("env-before-read-docs", _ledger_last)
    app.connect("env-get-outdated", _ledger_always_outdated)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
