"""plot_1d: draw one or more 1-D surface files as overlaid loss/accuracy curves.

Figures come from the HDF5 files alone; no model is loaded.
"""

from __future__ import annotations

import argparse

from ..workflows import plots
from . import boundary
from .plot_args import add_common_arguments, main_of

EPILOG = """\
examples:
  landscape plot1d demo_out/cnn_bs16_1d.h5
  landscape plot1d bs16.h5 bs1024.h5 --labels "batch 16" "batch 1024" --error --format png pdf
  landscape plot1d interp.h5 --log --loss_min 0.01 --xmin -0.5 --xmax 1.5 --split train --out figures/interp

plot_1d is the same program under the reference code's name.
"""


def build_parser(prog: str = "landscape plot1d") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EPILOG,
        argument_default=argparse.SUPPRESS,
        description="Draw 1-D loss surfaces: loss on the left axis, accuracy (or error) on the right; "
        "several files are overlaid, one colour each. Writes <out>_1d.<format>.",
    )
    add_common_arguments(p)
    p.add_argument(
        "--split",
        choices=("train", "test", "both"),
        help="curves to draw; 'both' draws test curves (dashed) where the file has them (default: both)",
    )
    p.add_argument("--error", action="store_true", help="plot the error 100 - accuracy instead of the accuracy")
    scale = p.add_mutually_exclusive_group()
    scale.add_argument(
        "--log",
        action="store_const",
        const=True,
        help="log scale for the loss axis (default: log where every loss drawn is positive and they span "
        "more than two decades, else linear)",
    )
    scale.add_argument("--linear", dest="log", action="store_const", const=False, help="linear scale for the loss axis")
    for low, high, what, defaults in (
        ("xmin", "xmax", "α axis", ("the grid's", "the grid's")),
        ("loss_min", "loss_max", "loss axis", ("automatic", "automatic")),
        ("acc_min", "acc_max", "accuracy/error axis", ("0", "100")),
    ):
        p.add_argument(f"--{low}", type=float, metavar="V", help=f"lower limit of the {what} (default: {defaults[0]})")
        p.add_argument(f"--{high}", type=float, metavar="V", help=f"upper limit of the {what} (default: {defaults[1]})")
    return p


def main(argv: list[str], prog: str = "landscape plot1d") -> int:
    return main_of(build_parser, plots.run_1d)(argv, prog)
