"""What plot1d and plot2d share: the arguments for input files and output, and reading the files."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import InputError, UsageError
from ..io.surface_file import Surface, read
from ..plotting import FORMATS

MAX_DPI = 2400  # a 6.4-inch figure is then 15,000 pixels wide; more is a typo


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared by plot1d and plot2d."""
    p.add_argument(
        "surf_files",
        nargs="+",
        metavar="SURF_FILE",
        help="surface file(s) written by landscape surface (or the reference code)",
    )
    p.add_argument("--labels", nargs="+", metavar="LABEL", help="one label per file (default: the file names)")
    p.add_argument("--out", metavar="PREFIX", help="output path prefix (default: the first file without .h5)")
    p.add_argument(
        "--format", nargs="+", choices=FORMATS, default=["png"], dest="formats", help="output format(s) (default png)"
    )
    p.add_argument("--dpi", type=int, help="resolution of png output (default 150; 300 with --style paper)")
    p.add_argument(
        "--style",
        choices=("default", "paper", "talk"),
        default="default",
        help="paper: one- or two-column widths, 8 pt fonts, colour-blind-safe curves; talk: large (default: default)",
    )
    p.add_argument("--title", help="figure title (default none)")
    p.add_argument("--show", action="store_true", help="also open the figures in a window")
    p.add_argument("--traceback", action="store_true", help="on error, print the full traceback")


def read_inputs(args, prog: str) -> tuple[list[Surface], str]:
    """Validate the flags shared by both programs; read the files; warn about partial ones."""
    if args.labels is not None and len(args.labels) != len(args.surf_files):
        raise UsageError(
            f"--labels: got {len(args.labels)} labels for {len(args.surf_files)} files; expected one label per file"
        )
    from ..plotting.look import look

    if args.dpi is None:
        args.dpi = look(args.style).dpi or 150
    if not 0 < args.dpi <= MAX_DPI:
        raise UsageError(f"--dpi {args.dpi}: expected a number of dots per inch from 1 to {MAX_DPI}")
    out = args.out or output_prefix(args.surf_files[0])
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise InputError(f"--out {out}: folder {folder} does not exist; expected an existing folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: folder {folder} is not writable; expected a folder the figures can go to")
    surfaces = [read(path) for path in args.surf_files]
    for s in surfaces:
        if not s.values:
            raise InputError(
                f"{s.path} holds coordinates but no quantities; expected datasets such as train_loss "
                "(a surface file written by landscape surface or the reference code)"
            )
        total, done = s.done.size, int(s.done.sum())
        if 0 < done < total:
            print(
                f"{prog}: warning: {s.path}: {done} of {total} points computed; the others are left blank",
                file=sys.stderr,
            )
    return surfaces, out


def output_prefix(path: str) -> str:
    stem, ext = os.path.splitext(path)
    return stem if ext == ".h5" else path
