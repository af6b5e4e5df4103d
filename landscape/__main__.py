"""``python -m landscape <command> ...`` is the ``landscape`` command."""

import sys

from .cli.main import main

sys.exit(main())
