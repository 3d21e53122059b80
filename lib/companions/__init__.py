"""Executable companions to the theory of feature learning: the book's shared library.

The core (``scale``, ``ledger``, ``runtime``, ``train``, ``plots``, ``cli``) is shared by every
chapter; each source topic has its own module (``looped``, ...), which also declares its chapters.
"""

from companions.ledger import ClaimFailed, Ledger
from companions.runtime import Runtime, setup
from companions.scale import Chapter, Choice, Float, Int, ListOf, chapters, preset, register_chapter

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
