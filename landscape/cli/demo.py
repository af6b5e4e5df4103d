"""``landscape demo``: the small- vs large-batch demo (``workflows.demo``)."""

from __future__ import annotations

from ..workflows import demo as workflow
from . import boundary


def parser(prog: str = "landscape demo"):
    p = boundary.ArgumentParser(
        prog=prog,
        description=workflow.__doc__.split("\n\n")[0],
        epilog="example: make demo   (= landscape demo --ranks 2)",
    )
    p.add_argument("--out", default="demo_out", help="checkpoints and surface files (default: demo_out)")
    p.add_argument(
        "--figures",
        default="demo_out/figures",
        help="where the figures go (default: demo_out/figures; make figures: figures, the README's)",
    )
    p.add_argument("--ranks", type=int, default=2, help="MPI ranks for the surfaces (default: 2)")
    p.add_argument("--quick", action="store_true", help="a few epochs and small grids (the end-to-end test)")
    p.add_argument("--epochs_scale", type=float, default=1.0, help="scale both runs' epochs (default: 1)")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape demo") -> int:
    args = parser(prog).parse_args(argv)
    workflow.demo(args.out, args.figures, args.ranks, args.quick, args.epochs_scale)
    return 0
