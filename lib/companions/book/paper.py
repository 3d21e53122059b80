"""Paper-scale ledgers: a chapter's ``paper`` run, made to its end on a real machine outside CI,
kept in the repository as data (``book/data/ledgers/paper/<chapter>.json``).

``python -m companions run CHAPTER --scale paper --keep`` runs the chapter and then calls
:func:`record`, which writes the run's ledger with its provenance: the commit, whether the
chapter's sources were committed, the date, the machine, the wall and CPU seconds, the peak
memory, and the fingerprint of the chapter's sources (its page and its topic's code,
:func:`companions.ledger.fingerprint`). The book shows each paper ledger beside the default run,
claim by claim, and marks it stale when a source changed since (:func:`companions.ledger.
stale_sources`); :func:`problems` is what CI checks of every committed one.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

from companions import ledger as L

#: What a committed paper ledger's provenance holds.
PROVENANCE_KEYS = (
    "commit",
    "clean",
    "date",
    "machine",
    "wall_seconds",
    "cpu_seconds",
    "peak_memory_mb",
    "sources",
    "command",
)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def machine() -> dict:
    """This machine, in the words a reader needs to compare times: the processor, its cores, the
    memory, the OS and torch's version and threads."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:  # pragma: no cover - not Linux
        pass
    memory = None
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory = round(pages * size / 2**30, 1)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        pass
    import torch

    return {
        "processor": model,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": memory,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def record(chapter_id: str, run_ledger: str | os.PathLike, sources_before: dict, root=None) -> Path:
    """Write the paper ledger of a run: the ledger at ``run_ledger`` (a finished paper-scale run
    of ``chapter_id``, not a dry run) with its provenance, to ``<root>/book/data/ledgers/paper/``.
    ``sources_before`` is the chapter's fingerprint taken when the run started: if a source
    changed during the run, the ledger could belong to neither version, and nothing is written
    (``ValueError``). Returns the path written."""
    root = Path(root) if root is not None else L.find_root(Path(__file__).parent)
    led = json.loads(Path(run_ledger).read_text())
    if led.get("chapter") != chapter_id or led.get("scale") != "paper":
        raise ValueError(f"{run_ledger} is not a paper-scale ledger of chapter {chapter_id!r}")
    if L.is_dry_run(led):
        raise ValueError(f"{run_ledger} is a dry run: its claims are not findings")
    sources = L.fingerprint(chapter_id, root)
    if sources != sources_before:
        every = set(sources) | set(sources_before)
        changed = sorted(p for p in every if sources.get(p) != sources_before.get(p))
        raise ValueError(f"the chapter's sources changed during the run: {changed}")
    dirty = _git(root, "status", "--porcelain", "--", *sources)
    led["provenance"] = {
        "commit": _git(root, "rev-parse", "HEAD"),
        "clean": not dirty,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "wall_seconds": led.get("wall_seconds"),
        "cpu_seconds": led.get("cpu_seconds"),
        "peak_memory_mb": led.get("peak_memory_mb"),
        "sources": sources,
        "command": f"python -m companions run {chapter_id} --scale paper --keep",
    }
    led.pop("python", None)  # a path on the machine that ran it, of no use to a reader
    return L.write_json_atomically(root / L.PAPER_DIR / f"{chapter_id}.json", led)


def problems(path: str | os.PathLike) -> list[str]:
    """What is wrong with a committed paper ledger (empty when it is well-formed): its chapter is
    declared, its scale is ``paper``, it is not a dry run, its provenance is complete, and its
    claims are those the chapter registers (unless it is stale, when registrations may have moved
    on), each with a status."""
    import companions

    path = Path(path)
    try:
        led = json.loads(path.read_text())
    except ValueError as exc:
        return [f"not JSON: {exc}"]
    out = []
    chapter = companions.chapters().get(led.get("chapter"))
    if chapter is None or path.stem != led.get("chapter"):
        return [f"{path.name}: not the ledger of a declared chapter named after the file"]
    if led.get("scale") != "paper":
        out.append(f"scale {led.get('scale')!r}, not 'paper'")
    if L.is_dry_run(led):
        out.append("a dry run")
    prov = led.get("provenance") or {}
    out += [f"provenance lacks {k!r}" for k in PROVENANCE_KEYS if k not in prov]
    claims = led.get("claims") or []
    if any(c.get("status") not in L.STATUSES for c in claims):
        out.append("a claim without a known status")
    if not L.stale_sources(led):
        registered = {c.id for c in chapter.claims}
        recorded = {c["id"] for c in claims if c.get("registered")}
        if registered and recorded != registered:
            out.append(
                f"current, but its claims {sorted(recorded ^ registered)} are not the "
                "registered ones"
            )
    return out
