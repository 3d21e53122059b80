"""Executable companions to the theory of feature learning: the book's shared library.

What a chapter uses: :func:`preset` and :func:`injected_parameters` (its parameters),
:func:`setup` (device, dtype, seed), :class:`Ledger` (it records what the chapter measured against
the claims registered in the chapter's declaration, :mod:`companions.claims`), :class:`Estimate` and
:class:`Undecided` (measured values of a special kind), and ``companions.plots``.

- The core, shared by every chapter: ``scale``, ``claims``, ``ledger``, ``runtime``, ``train``,
  ``plots``, ``losses``, ``stats``, and ``bench`` (``python -m companions bench``).
- Importing the package changes nothing in the environment: the settings that speed up kernels on
  a busy machine are set by the commands that start them (:mod:`companions.book.environment`).
- One subpackage per source topic (listed in ``scale.TOPICS``): its ``chapters`` module declares
  the topic's chapters, its other modules hold the mathematics.
- ``book``: the book's machinery (command line, assignments, Sphinx extensions), which nothing
  else imports. See CONTRIBUTING.md for the rules.
"""

import time

#: When this process first imported the library (a chapter's first code cell): ledgers time the
#: chapter from here, so a chapter that makes its ledger late is not timed short.
IMPORTED_AT = time.perf_counter()

# The imports come after IMPORTED_AT (they take most of a chapter's import time).
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
