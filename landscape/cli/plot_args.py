"""The flags plot1d and plot2d share: the input files and the output."""

from __future__ import annotations

import argparse

from ..plotting import FORMATS
from ..workflows.plots import STYLES


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared by plot1d and plot2d (their defaults: ``workflows.plots.SHARED``)."""
    p.add_argument(
        "surf_files",
        nargs="+",
        metavar="SURF_FILE",
        help="surface file(s) written by landscape surface (or the reference code)",
    )
    p.add_argument("--labels", nargs="+", metavar="LABEL", help="one label per file (default: the file names)")
    p.add_argument("--out", metavar="PREFIX", help="output path prefix (default: the first file without .h5)")
    p.add_argument("--format", nargs="+", choices=FORMATS, dest="formats", help="output format(s) (default: png)")
    p.add_argument("--dpi", type=int, help="resolution of png output (default: 150; 300 with --style paper)")
    p.add_argument(
        "--style",
        choices=STYLES,
        help="paper: one- or two-column widths, 8 pt fonts, colour-blind-safe curves; talk: large (default: default)",
    )
    p.add_argument("--title", help="figure title (default: none)")
    p.add_argument(
        "--mathtext",
        action="store_true",
        help="typeset $...$ in titles and labels as math (default: every text is plain, a $ is a dollar sign)",
    )
    p.add_argument("--show", action="store_true", help="also open the figures in a window")
    p.add_argument("--traceback", action="store_true", help="on error, print the full traceback")


def main_of(build_parser, run):
    """A plot command's ``main``: its flags, parsed, to ``run`` (a ``workflows.plots`` function)."""

    def main(argv: list[str], prog: str) -> int:
        given = vars(build_parser(prog).parse_args(argv))
        given.pop("traceback", None)
        run(given, argv=(*prog.split(), *argv))
        return 0

    return main
