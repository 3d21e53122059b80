"""Executable companions to the theory of feature learning: the book's shared library.

What a chapter uses: :func:`preset` (its parameters), :func:`setup` (device, dtype, seed),
:class:`Ledger` (its claims), and ``companions.plots`` (the book's figure style).

- The core, shared by every chapter: ``scale``, ``ledger``, ``runtime``, ``train``, ``plots``,
  ``losses``, ``stats``, and ``bench`` (``python -m companions bench``).
- One subpackage per source topic (listed in ``scale.TOPICS``): its ``chapters`` module declares
  the topic's chapters, its other modules hold the mathematics.
- ``book``: the book's machinery (command line, assignments, Sphinx extensions), which nothing
  else imports. See CONTRIBUTING.md for the rules.
"""

import os
import sys

# Threads that wait sleep instead of spinning (see companions.runtime): effective in this process
# only if torch (and so OpenMP) is not loaded yet, and in every process started from here (the
# chapters' kernels). Whether it is in effect here is recorded for companions.runtime.
_PASSIVE = os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE" or (
    "torch" not in sys.modules and "OMP_WAIT_POLICY" not in os.environ
)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from companions import runtime as _runtime  # noqa: E402
from companions.ledger import ClaimFailed, Ledger  # noqa: E402
from companions.runtime import Runtime, setup  # noqa: E402
from companions.scale import (  # noqa: E402
    Chapter,
    Choice,
    Float,
    Int,
    ListOf,
    chapters,
    preset,
    register_chapter,
)

__all__ = [
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
    "preset",
    "register_chapter",
]
__version__ = "0.1.0"
_runtime.OPENMP_PASSIVE = _PASSIVE
