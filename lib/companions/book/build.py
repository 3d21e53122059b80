"""Build the book with its chapters executed side by side first (``python -m companions build``).

``jupyter-book build .`` executes the chapters one after another while Sphinx reads them. This
builds the same HTML in less time on a machine with several cores:

1. every chapter of the table of contents is executed by its own kernel, ``jobs`` at a time, each
   kernel given its share of the cores as threads (two kernels that each spin two threads on two
   cores slow each other several-fold); the longest start first where the smoke ledgers of the
   test suite are at hand (``$BOOK_SMOKE_LEDGER_DIR``, as in ``.ci/run``);
2. the executed notebooks go into a fresh jupyter-cache under ``_build/.jupyter_cache``, keyed as
   myst-nb keys them (the code cells and the kernel);
3. ``jupyter-book build`` runs with ``execute_notebooks: cache`` (a copy of ``_config.yml``), so it
   renders the executed notebooks rather than running them again. A page that is not a chapter
   (the ledger page, which gathers every chapter's ledger) runs during the build, after them.

The cache is made fresh at every build, so a change in ``lib/`` is never missed. A chapter that
fails here is not cached: the build then runs it itself and reports its error as usual.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

#: The environment variable through which the ledger extension learns when the chapters of this
#: build started to execute (before Sphinx read them), so that it takes their ledgers as fresh.
EXECUTED_SINCE_ENV = "BOOK_EXECUTED_SINCE"
CACHE = Path("_build") / ".jupyter_cache"
CONFIG_COPY = Path("_build") / ".companions-build.yml"


def threads_per_kernel(jobs: int, cores: int | None = None) -> int:
    """Threads for each of ``jobs`` kernels running at once: the cores shared out, at least one."""
    cores = cores or os.cpu_count() or 1
    return max(1, cores // max(1, jobs))


def read_as_myst_nb(path: Path):
    """The notebook myst-nb makes of a MyST Markdown chapter (so its cache key is myst-nb's)."""
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    return read_myst_markdown_notebook(
        path.read_text(), config=MdParserConfig(), add_source_map=True, path=str(path)
    )


def _execute(path: str, threads: int, timeout: int) -> tuple[str, object, float, str | None]:
    """Run one chapter in its own kernel (in a worker process); its notebook, seconds, error."""
    from jupyter_cache.executors.utils import single_nb_execution

    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)
    nb = read_as_myst_nb(Path(path))
    result = single_nb_execution(
        nb, cwd=str(Path(path).parent), timeout=timeout, allow_errors=False, meta_override=True
    )
    error = None if result.err is None else f"{type(result.err).__name__}: {result.err}"
    return path, result.nb, result.time, error


def chapter_sources(root: Path) -> list[Path]:
    """The chapters of ``_toc.yml`` (declared in ``lib/companions``), in the book's order."""
    from companions.scale import chapter_pages

    declared = chapter_pages()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found = []

    def walk(node):
        if isinstance(node, dict):
            entry = node.get("file")
            if isinstance(entry, str):
                doc = entry[:-3] if entry.endswith(".md") else entry
                if doc in declared:
                    found.append(root / f"{doc}.md")
            for key, value in node.items():
                if key != "file":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return found


def chapter_ids(root: Path) -> list[str]:
    """The ids of the chapters of ``_toc.yml``, in the book's order."""
    from companions.scale import chapter_pages

    declared = chapter_pages()
    return [declared[str(p.relative_to(root).with_suffix(""))].id for p in chapter_sources(root)]


#: Each chapter's wall time at the default scale (seconds), as the book build of ``.ci/run``
#: measured it on the 2-core machine, two chapters at a time with one thread each (2026-11-27; the
#: three emergence chapters whose trainings moved to float32 were measured again after it; for the
#: four contrastive chapters that moved next, the CI time scaled by their kernels' CPU time). Only
#: the order in which the default build starts the chapters reads it: a default run is not its
#: smoke run times a constant (``emergence-target``: 26 s at smoke, 60 s at default), and the
#: chapter started last decides how long the other worker stands idle at the end.
DEFAULT_SECONDS = {
    "emergence-experiments": 259,
    "gemfilter": 251,
    "dg-nuclear-norm": 220,
    "contrastive-stage3": 180,
    "contrastive-pruning": 178,
    "fine-labels-fine": 162,
    "icl-scale-regression": 146,
    "fourier-transformer": 135,
    "gradient-parities": 98,
    "gradient-mixtures": 98,
    "emergence-fixed-features": 90,
    "universality-trade-off": 76,
    "icl-scale-parity": 75,
    "gradient-framework": 69,
    "looped-gd": 63,
    "emergence-no-structure": 60,
    "emergence-target": 60,
    "fourier-training": 54,
    "emergence-first-steps": 47,
    "fine-labels-coarse": 46,
    "contrastive-stage2": 37,
    "contrastive-stage1": 37,
    "fourier-max-margin": 28,
    "contrastive-setting": 23,
    "fine-labels-model": 10,
}


def longest_first(
    sources: list[Path],
    ids: list[str],
    ledger_dir: Path | None,
    measured: dict[str, float] | None = None,
) -> list[Path]:
    """The chapters in the order to start them, longest first, so that the longest chapter does
    not start last while the other workers stand idle.

    ``measured`` (chapter id -> seconds at the scale being built, e.g. :data:`DEFAULT_SECONDS`):
    the chapters it lists go by those times. The others go first (they may be long), by the wall
    time of their smoke ledger in ``ledger_dir``; a chapter without a readable smoke ledger before
    them. Ties keep the book's order. Without ``ledger_dir`` and ``measured``, the book's order.
    """
    if ledger_dir is None and not measured:
        return list(sources)
    measured = measured or {}

    def smoke_seconds(chapter_id: str) -> float:
        if ledger_dir is None:
            return math.inf
        try:
            ledger = json.loads((Path(ledger_dir) / f"{chapter_id}.json").read_text())
            return float(ledger["wall_seconds"]) if ledger.get("scale") == "smoke" else math.inf
        except (OSError, ValueError, KeyError, TypeError):
            return math.inf

    def key(chapter_id: str) -> tuple[int, float]:
        if chapter_id in measured:
            return (1, -float(measured[chapter_id]))
        return (0, -smoke_seconds(chapter_id))

    keys = {path: key(chapter_id) for path, chapter_id in zip(sources, ids)}
    return sorted(sources, key=lambda path: keys[path])


def execute_chapters(
    root: Path, jobs: int, timeout: int = 600, log=print
) -> tuple[dict[str, float], dict[str, str]]:
    """Execute every chapter, ``jobs`` at a time, into a fresh cache under ``root/_build``; longest
    first (:func:`longest_first`): at the default scale by :data:`DEFAULT_SECONDS`, otherwise by
    the smoke ledgers in ``$BOOK_SMOKE_LEDGER_DIR`` where it holds them.
    Returns ``({chapter path: seconds}, {chapter path: error})``."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from companions.ledger import SMOKE_LEDGER_ENV
    from companions.scale import resolve_scale

    smoke = os.environ.get(SMOKE_LEDGER_ENV)
    default_scale = resolve_scale(None) == "default"
    sources = longest_first(
        chapter_sources(root),
        chapter_ids(root),
        Path(smoke) if smoke else None,
        DEFAULT_SECONDS if default_scale else None,
    )
    cache_dir = root / CACHE
    if cache_dir.exists():
        shutil.rmtree(cache_dir)
    cache = get_cache(str(cache_dir))
    threads = threads_per_kernel(jobs)
    log(f"executing {len(sources)} chapters, {jobs} at a time, {threads} thread(s) each")
    seconds, errors = {}, {}
    start = time.monotonic()
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_execute, str(p), threads, timeout) for p in sources]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            path, nb, took, error = future.result()
            name = Path(path).relative_to(root)
            if error is None:
                cache.cache_notebook_bundle(
                    CacheBundleIn(nb, path, data={"execution_seconds": took}),
                    check_validity=False,
                    overwrite=True,
                )
                seconds[path] = took
                log(f"[{done}/{len(sources)}] {name}: {took:.0f} s")
            else:
                errors[path] = error
                log(f"[{done}/{len(sources)}] {name}: FAILED ({error.splitlines()[0][:200]})")
    log(f"chapters executed in {time.monotonic() - start:.0f} s")
    return seconds, errors


def cached_config(root: Path) -> Path:
    """A copy of ``_config.yml`` that renders the chapters from the cache this build filled."""
    config = yaml.safe_load((root / "_config.yml").read_text()) or {}
    execute = config.setdefault("execute", {})
    execute["execute_notebooks"] = "cache"
    execute["cache"] = str((root / CACHE).resolve())
    path = root / CONFIG_COPY
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def build(root: Path, jobs: int, extra: list[str], log=print) -> int:
    """Execute the chapters ``jobs`` at a time, then ``jupyter-book build`` from the cache."""
    if jobs < 1:
        raise ValueError(f"'jobs' must be at least 1, not {jobs}")
    root = root.resolve()
    since = time.time()
    execute_chapters(root, jobs, log=log)
    config = cached_config(root)
    env = dict(os.environ, **{EXECUTED_SINCE_ENV: f"{since:.3f}"})
    book = Path(sys.executable).with_name("jupyter-book")
    command = [str(book) if book.exists() else "jupyter-book", "build", str(root)]
    command += ["--config", str(config), *extra]
    log("$ " + " ".join(command))
    return subprocess.run(command, env=env).returncode
