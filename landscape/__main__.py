"""``python -m landscape <command> ...`` is the ``landscape`` command."""

import sys

from .cli.main import main

if __name__ == "__main__":  # not when a tool imports the package's modules (the docs' API reference)
    sys.exit(main())
