"""The book tests' shared fixture: each chapter's smoke run, once per test session (worker)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jupyter_client import KernelManager

from companions.book.cli import execute_chapter
from companions.ledger import SMOKE_LEDGER_ENV

#: Set (as .ci/run does) to make a missing or unusable sandbox a failure rather than a skip.
SANDBOX_REQUIRED_ENV = "BOOK_SANDBOX_REQUIRED"


@pytest.fixture(scope="session")
def sandboxed():
    """Grading runs every submission in bubblewrap: skip, saying why, where it is missing or cannot
    start (a fresh machine without it), unless ``$BOOK_SANDBOX_REQUIRED`` is set, where that
    fails."""
    from companions.book import sandbox

    try:
        sandbox.check_available()
    except sandbox.SandboxUnavailable as err:
        if os.environ.get(SANDBOX_REQUIRED_ENV):
            pytest.fail(f"the grading sandbox is required here: {err}")
        pytest.skip(f"the grading sandbox is not available: {err}")


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory):
    """Run each chapter once per session into one shared ledger folder (``smoke_runs.folder``):
    ``$BOOK_SMOKE_LEDGER_DIR`` where it is set (CI keeps them for the page "What each scale
    costs"), else a temporary folder."""
    kept = os.environ.get(SMOKE_LEDGER_ENV)
    folder = Path(kept) if kept else tmp_path_factory.mktemp("smoke-ledgers")
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {}
    kernels: dict[str, object] = {}

    def run(chapter_id: str, keep_kernel: bool = False) -> tuple[Path, Path]:
        """``keep_kernel``: if the chapter runs now, keep its kernel running, with the chapter's
        state, for :func:`take_kernel` (the assignment's judge)."""
        if chapter_id not in results:
            kernel = KernelManager(kernel_name="python3") if keep_kernel else None
            try:
                results[chapter_id] = execute_chapter(
                    chapter_id, "smoke", out_dir=folder, device="cpu", progress=False, kernel=kernel
                )
                if kernel is not None:
                    kernels[chapter_id] = kernel
            except Exception as err:  # remembered, so a later test reports it without rerunning
                results[chapter_id] = err
        result = results[chapter_id]
        if isinstance(result, Exception):
            raise result
        return result

    def take_kernel(chapter_id: str):
        """The running kernel of the chapter's smoke run, now the caller's to shut down; None if
        the run did not keep one or it was taken."""
        return kernels.pop(chapter_id, None)

    run.folder = folder
    run.take_kernel = take_kernel
    yield run
    for kernel in kernels.values():
        kernel.shutdown_kernel(now=True)
