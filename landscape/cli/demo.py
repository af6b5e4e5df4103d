"""``landscape demo``: the small- vs large-batch demo (``workflows.demo``)."""

from __future__ import annotations

import argparse

from ..workflows import demo as workflow
from . import boundary


def build_parser(prog: str = "landscape demo"):
    p = boundary.ArgumentParser(
        prog=prog,
        argument_default=argparse.SUPPRESS,
        description=workflow.__doc__.split("\n\n")[0],
        epilog="example: make demo   (= landscape demo --ranks 2)",
    )
    p.add_argument("--out", help="checkpoints and surface files (default: demo_out)")
    p.add_argument(
        "--figures",
        help="where the figures go (default: demo_out/figures; make figures: figures, the README's)",
    )
    p.add_argument("--ranks", type=int, help="MPI ranks for the surfaces (default: 2)")
    p.add_argument("--quick", action="store_true", help="a few epochs and small grids (the end-to-end test)")
    p.add_argument("--epochs_scale", type=float, help="scale both runs' epochs (default: 1)")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape demo") -> int:
    given = vars(build_parser(prog).parse_args(argv))
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
