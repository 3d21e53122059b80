"""``python -m companions``: see :mod:`companions.book.cli`."""

import sys

from companions.book.cli import main

if __name__ == "__main__":
    sys.exit(main())
