"""Running the tests in parallel (``pytest -n auto``, pytest-xdist), as the README and CI do.

- Each worker gets its share of the cores as torch and OpenMP threads, set before torch is imported
  and inherited by the chapters' kernels, so that two workers never fight over the same cores
  (two 2-thread jobs on 2 cores slow each other several-fold). An explicit ``OMP_NUM_THREADS``
  is kept.
- The settings that speed up kernels on a busy machine (:mod:`companions.book.environment`) are
  set here, as the CLI sets them, before the workers start.
- Tests that share an expensive fixture run on one worker (``--dist loadgroup``, set in
  pyproject.toml): the tests that use one chapter's smoke run, and each module with a
  module-scoped fixture. (pytest 9 ignores the group xdist 3.8 writes into a test's id, so
  requirements.txt holds pytest at 8.4; ``tests/core/test_parallel.py`` fails if groups stop
  working.)
"""

from __future__ import annotations

import os

import pytest

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def worker_threads(cores: int, workers: int) -> int:
    """Threads per worker: the cores shared out, at least one."""
    return max(1, cores // max(1, workers))


def pytest_configure(config):
    from companions.book import environment

    environment.tune()  # the settings the CLI gives kernels, for the workers and their kernels
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers and not any(v in os.environ for v in _THREAD_VARIABLES):
        threads = str(worker_threads(os.cpu_count() or 1, int(workers)))
        for variable in _THREAD_VARIABLES:
            os.environ[variable] = threads


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(m.name == "xdist_group" for m in item.iter_markers()):
            continue
        if "smoke_runs" in getattr(item, "fixturenames", ()):
            # one chapter's tests share its smoke run; chapters spread over the workers
            chapter = getattr(item, "callspec", None) and item.callspec.params.get("chapter_id")
            item.add_marker(pytest.mark.xdist_group(f"smoke-run-{chapter or 'all'}"))
            continue
        if _has_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _has_module_fixture(item) -> bool:
    """Whether the test uses a module- or session-scoped fixture of this project (pytest's own,
    such as ``tmp_path_factory``, are cheap and do not count)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in info.names_closure:
        for definition in info.name2fixturedefs.get(name, ()):
            if definition.baseid and definition.scope in ("module", "package", "session"):
                return True
    return False
