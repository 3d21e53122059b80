"""``.ci/run`` keeps what its test phase writes for the book phase: the ledgers of the smoke runs
and of the paper dry runs, which the page "What each scale costs" reads. Its book phase cleans
``_build`` first; a folder the tests filled and that cleaning removed would leave that page saying
"no paper dry run in this build" on every CI build (as it did until 2026-11-28)."""

from __future__ import annotations

import re

from tests.book.test_chapters import ROOT

SCRIPT = (ROOT / ".ci" / "run").read_text()


def _function(name: str) -> str:
    match = re.search(rf"^{name}\(\) \{{(.*?)^\}}", SCRIPT, re.S | re.M)
    assert match, f".ci/run has no function {name}()"
    return match.group(1)


def test_the_book_phase_keeps_every_ledger_folder_the_tests_write():
    written = set(re.findall(r'_LEDGER_DIR="\$PWD/_build/([\w-]+)"', _function("tests")))
    assert written == {"smoke-ledger", "dry-run-ledger"}
    book = _function("book")
    kept = set(re.findall(r"! -name ([\w-]+)", book))
    assert written <= kept, f"book() removes {sorted(written - kept)} before the build reads it"


def test_the_book_phase_points_the_costs_page_at_those_folders():
    book = _function("book")
    for env, folder in [
        ("BOOK_SMOKE_LEDGER_DIR", "smoke-ledger"),
        ("BOOK_DRY_RUN_LEDGER_DIR", "dry-run-ledger"),
    ]:
        assert f'{env}="$PWD/_build/{folder}"' in book
