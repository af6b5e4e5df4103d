"""plot_1d: draw one or more 1-D surface files as overlaid loss/accuracy curves.

Figures come from the HDF5 files alone; no model is loaded.
"""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import InputError, UsageError
from ..plotting import FORMATS
from ..schema import Surface, read_surface
from . import boundary

EPILOG = """\
examples:
  plot_1d demo_out/cnn_bs16.surface.h5
  plot_1d bs16.surface.h5 bs1024.surface.h5 --labels "batch 16" "batch 1024" --error --format png pdf
  plot_1d interp.h5 --log --loss_min 0.01 --xmin -0.5 --xmax 1.5 --split train --out figures/interp
"""


def build_parser() -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog="plot_1d", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Draw 1-D loss surfaces: loss on the left axis, accuracy (or error) on the right; "
                    "several files are overlaid, one colour each. Writes <out>_1d.<format>.")
    add_common_arguments(p)
    p.add_argument("--split", choices=("train", "test", "both"), default="both",
                   help="curves to draw; 'both' draws test curves (dashed) where the file has them (default both)")
    p.add_argument("--error", action="store_true", help="plot the error 100 - accuracy instead of the accuracy")
    p.add_argument("--log", action="store_true", help="log scale for the loss axis")
    for low, high, what in (("xmin", "xmax", "α axis (default: the grid)"),
                            ("loss_min", "loss_max", "loss axis (default: automatic)"),
                            ("acc_min", "acc_max", "accuracy/error axis (default: 0 and 100)")):
        p.add_argument(f"--{low}", type=float, metavar="V", help=f"lower limit of the {what}")
        p.add_argument(f"--{high}", type=float, metavar="V", help=f"upper limit of the {what}")
    return p


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared by plot_1d and plot_2d."""
    p.add_argument("surf_files", nargs="+", metavar="SURF_FILE", help="surface file(s) written by plot_surface")
    p.add_argument("--labels", nargs="+", metavar="LABEL", help="one label per file (default: the file names)")
    p.add_argument("--out", metavar="PREFIX", help="output path prefix (default: the first file without .h5)")
    p.add_argument("--format", nargs="+", choices=FORMATS, default=["png"], dest="formats",
                   help="output format(s) (default png)")
    p.add_argument("--dpi", type=int, default=150, help="resolution of png output (default 150)")
    p.add_argument("--title", help="figure title (default none)")
    p.add_argument("--show", action="store_true", help="also open the figures in a window")
    p.add_argument("--traceback", action="store_true", help="on error, print the full traceback")


def read_inputs(args, prog: str) -> tuple[list[Surface], str]:
    """Validate the flags shared by both programs; read the files; warn about partial ones."""
    if args.labels is not None and len(args.labels) != len(args.surf_files):
        raise UsageError(f"--labels: got {len(args.labels)} labels for {len(args.surf_files)} files; "
                         "expected one label per file")
    if args.dpi <= 0:
        raise UsageError(f"--dpi {args.dpi}: expected a positive number of dots per inch")
    out = args.out or output_prefix(args.surf_files[0])
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise InputError(f"--out {out}: folder {folder} does not exist; expected an existing folder")
    surfaces = [read_surface(path) for path in args.surf_files]
    for s in surfaces:
        total, done = s.done.size, int(s.done.sum())
        if 0 < done < total:
            print(f"{prog}: warning: {s.path}: {done} of {total} points computed; "
                  "the others are left blank", file=sys.stderr)
    return surfaces, out


def output_prefix(path: str) -> str:
    stem, ext = os.path.splitext(path)
    return stem if ext == ".h5" else path


def main(argv: list[str]) -> int:
    from ..plotting import show
    from ..plotting.oned import Style1D, write_1d

    args = build_parser().parse_args(argv)
    style = Style1D(split=args.split, error=args.error, log=args.log, xlim=(args.xmin, args.xmax),
                    loss_lim=(args.loss_min, args.loss_max),
                    acc_lim=(args.acc_min, args.acc_max),
                    title=args.title)
    surfaces, out = read_inputs(args, "plot_1d")
    paths, fig = write_1d(surfaces, out, args.labels, args.formats, args.dpi, style)
    for path in paths:
        print(path)
    if args.show:
        show([fig])
    return 0


entry = boundary.entry(main, "plot_1d")

if __name__ == "__main__":
    sys.exit(boundary.run(main, prog="plot_1d"))
