"""``landscape plot-training``: test error against batch size per recipe, and the training curves, from
the manifests of ``landscape sweep``.  Figures come from the manifests and the runs' logs alone."""

from __future__ import annotations

import argparse

from ..plotting import FORMATS
from ..workflows import plots
from . import boundary
from .plot_args import main_of

EPILOG = """\
examples:
  landscape plot-training sweeps/digits                        # the folder of a sweep
  landscape plot-training a/manifest.json b/manifest.csv --out figures/batch_sweep --format png pdf
"""


def build_parser(prog: str = "landscape plot-training") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EPILOG,
        argument_default=argparse.SUPPRESS,
        description="Draw, from sweep manifests, the final "
        "test error against the batch size per recipe (error bars over seeds) and the "
        "test error per epoch. Writes <out>.<format>.",
    )
    p.add_argument("manifests", nargs="+", help="manifest.json, manifest.csv, or a sweep folder")
    p.add_argument("--out", help="file name without extension (default: <first sweep folder>/training)")
    p.add_argument("--format", dest="formats", nargs="+", choices=FORMATS, help="(default: png pdf)")
    p.add_argument("--dpi", type=int, help="resolution of png output (default 150; 300 with --style paper)")
    p.add_argument(
        "--style",
        choices=("default", "paper", "talk"),
        help="paper: two-column width, 8 pt fonts, colour-blind-safe curves; talk: large",
    )
    p.add_argument("--title", help="figure title")
    p.add_argument(
        "--mathtext",
        action="store_true",
        help="typeset $...$ in titles and labels as math (default: every text is plain, a $ is a dollar sign)",
    )
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape plot-training") -> int:
    return main_of(build_parser, plots.run_training)(argv, prog)
