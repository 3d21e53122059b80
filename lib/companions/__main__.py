"""``python -m companions``: see :mod:`companions.cli`."""

import sys

from companions.cli import main

sys.exit(main())
