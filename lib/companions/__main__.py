"""``python -m companions``: see :mod:`companions.book.cli`."""

import sys

from companions.book.cli import main

sys.exit(main())
