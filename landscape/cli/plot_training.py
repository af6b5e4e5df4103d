"""``landscape plot-training``: test error against batch size per recipe, and the training curves, from
the manifests of ``landscape sweep``.  Figures come from the manifests and the runs' logs alone."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..parallel.comm import launcher_rank
from . import boundary

EPILOG = """\
examples:
  landscape plot-training sweeps/digits                        # the folder of a sweep
  landscape plot-training a/manifest.json b/manifest.csv --out figures/batch_sweep --format png pdf
"""


def build_parser(prog: str = "landscape plot-training") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EPILOG,
        description="Draw, from sweep manifests, the final "
        "test error against the batch size per recipe (error bars over seeds) and the "
        "test error per epoch. Writes <out>.<format>.",
    )
    p.add_argument("manifests", nargs="+", help="manifest.json, manifest.csv, or a sweep folder")
    p.add_argument("--out", help="file name without extension (default: <first sweep folder>/training)")
    p.add_argument("--format", dest="formats", nargs="+", choices=("png", "pdf", "svg"), default=["png", "pdf"])
    p.add_argument("--dpi", type=int, help="resolution of png output (default 150; 300 with --style paper)")
    p.add_argument(
        "--style",
        choices=("default", "paper", "talk"),
        default="default",
        help="paper: two-column width, 8 pt fonts, colour-blind-safe curves; talk: large",
    )
    p.add_argument("--title", help="figure title")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape plot-training") -> int:
    import os

    from ..plotting.training import write_training
    from ..train.sweep import read_manifest

    if launcher_rank() != 0:
        return 0
    from ..plotting.look import look, use

    args = build_parser(prog).parse_args(argv)
    if args.dpi is None:
        args.dpi = look(args.style).dpi or 150
    if args.dpi < 1:
        raise UsageError(f"--dpi={args.dpi}: expected a positive number of dots per inch")
    rows = [row for path in args.manifests for row in read_manifest(path)]
    first = args.manifests[0]
    out = args.out or os.path.join(first if os.path.isdir(first) else os.path.dirname(first) or ".", "training")
    with use(args.style) as chosen:
        paths = write_training(rows, out, args.formats, args.dpi, args.title, chosen)
    for path in paths:
        print(f"wrote {path}")
    return 0
