"""plot_2d: draw one or more 2-D surface files as contour lines, filled contours and 3-D surfaces.

Several files become side-by-side panels sharing levels and one colour bar.
Figures come from the HDF5 files alone; no model is loaded.
"""

from __future__ import annotations

import argparse

from ..plotting.twod import KINDS
from ..workflows import plots
from . import boundary
from .plot_args import add_common_arguments, main_of

EPILOG = """\
examples:
  landscape plot2d demo_out/cnn_bs16_2d.h5
  landscape plot2d resnet56.h5 resnet56_noshort.h5 --labels ResNet-56 "no shortcuts" --vmin 0.1 --vmax 10
  landscape plot2d vgg9.h5 --surf_name test_err --log --kind contourf surface --format png pdf --dpi 300
  landscape surface --model digits_cnn --model_file runs/cnn/final.pt --pca_from runs/cnn --x=-6:2:41 --y=-2:2:21
  landscape plot2d runs/cnn/final.pt.surface.h5 --trajectory --kind contour

plot_2d is the same program under the reference code's name.
"""


def build_parser(prog: str = "landscape plot2d") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EPILOG,
        argument_default=argparse.SUPPRESS,
        description="Draw 2-D loss surfaces. Writes <out>_<surf_name>_2dcontour, _2dcontourf and "
        "_3dsurface.<format>; a cross (a star in 3-D) marks the trained model at (0, 0).",
    )
    add_common_arguments(p)
    p.add_argument(
        "--surf_name",
        help="quantity to draw: train_loss, train_acc, test_loss, test_acc, or train_err/test_err "
        "(100 - accuracy) (default: train_loss)",
    )
    p.add_argument("--vmin", type=float, help="lowest contour level (default: the minimum of the data)")
    p.add_argument(
        "--vmax",
        type=float,
        help="highest contour level; larger values are clipped in the 3-D surface "
        "(default: the maximum, or the 95th percentile when a few points diverge)",
    )
    p.add_argument(
        "--vlevel", type=float, help="step between contour levels; with --log, in decades (default: about 20 levels)"
    )
    scale = p.add_mutually_exclusive_group()
    scale.add_argument(
        "--log",
        action="store_const",
        const=True,
        help="log-spaced levels and a log colour scale (default: so where every value is positive and they "
        "span more than two decades, no --vlevel is given and the quantity is not an accuracy; else linear)",
    )
    scale.add_argument(
        "--linear", dest="log", action="store_const", const=False, help="evenly spaced levels, a linear colour scale"
    )
    p.add_argument(
        "--kind",
        nargs="+",
        choices=KINDS,
        dest="kinds",
        help="figures to draw (default: all three)",
    )
    p.add_argument(
        "--panels",
        type=int,
        metavar="COLUMNS",
        help="several files: this many panels per row (default: all in one row); every panel shares "
        "the levels and the colour bar",
    )
    p.add_argument(
        "--trajectory",
        nargs="?",
        const="",
        metavar="DIR_FILE",
        help="draw the training path over the contours (surfaces on a pca_from plane): from this "
        "direction file, or by default the one each surface was computed with",
    )
    return p


def main(argv: list[str], prog: str = "landscape plot2d") -> int:
    return main_of(build_parser, plots.run_2d)(argv, prog)
