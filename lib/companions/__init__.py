"""Executable companions to the theory of feature learning: the book's shared library.

What a chapter uses: :func:`preset` and :func:`injected_parameters` (its parameters),
:func:`setup` (device, dtype, seed), :class:`Ledger` (it records what the chapter measured against
the claims registered in the chapter's declaration, :mod:`companions.claims`), :class:`Estimate` and
:class:`Undecided` (measured values of a special kind), and ``companions.plots``.

- The core, shared by every chapter: ``scale``, ``ledger``, ``runtime``, ``train``, ``plots``,
  ``losses``, ``stats``, and ``bench`` (``python -m companions bench``).
- One subpackage per source topic (listed in ``scale.TOPICS``): its ``chapters`` module declares
  the topic's chapters, its other modules hold the mathematics.
- ``book``: the book's machinery (command line, assignments, Sphinx extensions), which nothing
  else imports. See CONTRIBUTING.md for the rules.
"""

import os
import sys
import time

#: When this process first imported the library (a chapter's first code cell): ledgers time the
#: chapter from here, so a chapter that makes its ledger late is not timed short.
IMPORTED_AT = time.perf_counter()


def _busy(cores: int, load: float) -> bool:
    """Whether a 1-minute load average of ``load`` leaves less than one of ``cores`` free."""
    return load > cores - 1


def _choose_wait_policy() -> bool:
    """On a busy machine, ask OpenMP's waiting threads to sleep instead of spinning
    (``OMP_WAIT_POLICY=PASSIVE``, where not set): it takes effect in this process only if torch
    (and so OpenMP) is not loaded yet, and in every process started from here (the chapters'
    kernels). On an idle machine spinning is faster (small operations back to back), so the
    policy is left alone. Returns whether waiting threads sleep in this process."""
    if "OMP_WAIT_POLICY" not in os.environ:
        try:
            busy = _busy(len(os.sched_getaffinity(0)), os.getloadavg()[0])
        except (AttributeError, OSError):  # pragma: no cover (no affinity or load average)
            busy = False
        if not busy:
            return False
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        return "torch" not in sys.modules
    return os.environ["OMP_WAIT_POLICY"].upper() == "PASSIVE"


_PASSIVE = _choose_wait_policy()


def _ask_for_huge_pages() -> None:
    """Ask torch to place its large CPU tensors (2 MiB and more) on transparent huge pages
    (``THP_MEM_ALLOC_ENABLE=1``, where not set). Trainers that allocate large tensors at every
    step spend much of their time in the OS kernel, mapping and zeroing fresh 4 KiB pages:
    ``fine-labels-fine`` at the default scale had 33 of its 87 s in the system. Torch reads the
    variable once, at its first allocation: it takes effect here only if torch is not loaded yet,
    and in every process started from here (the chapters' kernels). Numbers do not change; where
    the OS has huge pages off, nothing does."""
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")


_ask_for_huge_pages()

from companions import runtime as _runtime  # noqa: E402
from companions.claims import Estimate, Undecided  # noqa: E402
from companions.ledger import ClaimFailed, Ledger  # noqa: E402
from companions.runtime import Runtime, setup  # noqa: E402
from companions.scale import (  # noqa: E402
    Chapter,
    Choice,
    Float,
    Int,
    ListOf,
    chapters,
    injected_parameters,
    preset,
    register_chapter,
)

__all__ = [
    "Estimate",
    "Undecided",
    "ClaimFailed",
    "Ledger",
    "Runtime",
    "setup",
    "Chapter",
    "Choice",
    "Float",
    "Int",
    "ListOf",
    "chapters",
    "injected_parameters",
    "preset",
    "register_chapter",
]
__version__ = "0.1.0"
_runtime.OPENMP_PASSIVE = _PASSIVE
