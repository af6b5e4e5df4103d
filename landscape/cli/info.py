"""``landscape info FILE...``: what a surface or direction file holds — grid, quantities, progress,
value ranges, identity, run records — and who wrote it (landscape or the reference code).
``--json`` prints the same as one JSON object per file."""

from __future__ import annotations

import argparse

from ..workflows import info as workflow
from . import boundary

EXAMPLES = """\
examples:
  landscape info demo_out/cnn_bs16_2d.h5
  landscape info demo_out/cnn_bs16_2d.directions.h5 --json
"""


def build_parser(prog: str = "landscape info") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EXAMPLES,
        argument_default=argparse.SUPPRESS,
        description="What a surface or direction file holds.",
    )
    p.add_argument("files", nargs="+", help="surface or direction files (HDF5), of landscape or the reference code")
    p.add_argument("--json", action="store_true", help="one JSON object per file instead of text")
    p.add_argument("--runs", type=int, help="run records to show, the latest last (default: 5)")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape info") -> int:
    given = vars(build_parser(prog).parse_args(argv))
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
