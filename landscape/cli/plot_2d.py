"""plot_2d: draw one or more 2-D surface files as contour lines, filled contours and 3-D surfaces.

Several files become side-by-side panels sharing levels and one colour bar.
Figures come from the HDF5 files alone; no model is loaded.
"""

from __future__ import annotations

import argparse

from ..parallel.comm import launcher_rank
from ..plotting.twod import KINDS
from . import boundary
from .plot_args import add_common_arguments, read_inputs

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
        description="Draw 2-D loss surfaces. Writes <out>_<surf_name>_2dcontour, _2dcontourf and "
        "_3dsurface.<format>; the star marks the trained model at (0, 0).",
    )
    add_common_arguments(p)
    p.add_argument(
        "--surf_name",
        default="train_loss",
        help="quantity to draw: train_loss, train_acc, test_loss, test_acc, or train_err/test_err "
        "(100 - accuracy) (default train_loss)",
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
    p.add_argument("--log", action="store_true", help="log-spaced levels and a log colour scale")
    p.add_argument(
        "--kind",
        nargs="+",
        choices=KINDS,
        default=list(KINDS),
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


def trajectories(surfaces, given: str) -> list:
    """Each surface's trajectory: from ``given``, else from the direction file its latest run used."""
    import os

    from ..errors import InputError
    from ..io.direction_file import read

    found = []
    for s in surfaces:
        candidates = [given] if given else [s.run.get("dir_file", ""), os.path.splitext(s.path)[0] + ".directions.h5"]
        path = next((c for c in candidates if c and os.path.isfile(c)), None)
        if path is None:
            raise InputError(
                f"--trajectory: the direction file of {s.path} ({candidates[0] or 'not recorded'}) does "
                "not exist; give it: --trajectory DIR_FILE"
            )
        d = read(path)
        recorded = s.attrs.get("directions_sha256")
        if recorded and recorded != d.digest:
            raise InputError(
                f"--trajectory: direction file {path} is not the one {s.path} was computed with (its "
                f"directions' digest {d.digest[:12]}… differs from the surface's {str(recorded)[:12]}…): "
                "a path drawn on another plane would be wrong"
            )
        if d.trajectory is None:
            raise InputError(
                f"--trajectory: direction file {path} holds no trajectory (its directions are "
                f"{d.axes[0].kind}); compute the surface with landscape surface --pca_from"
            )
        found.append(d.trajectory)
    return found


def main(argv: list[str], prog: str = "landscape plot2d") -> int:
    from ..plotting import show
    from ..plotting.twod import Style2D, check_2d, write_2d

    if launcher_rank() != 0:  # a serial program started on several ranks: rank 0 draws, once
        return 0
    args = build_parser(prog).parse_args(argv)
    if args.panels is not None and args.panels < 1:
        from ..errors import UsageError

        raise UsageError(f"--panels={args.panels}: expected a positive number of panels per row")
    style = Style2D(
        vmin=args.vmin, vmax=args.vmax, vlevel=args.vlevel, log=args.log, title=args.title, columns=args.panels
    )
    surfaces, out = read_inputs(args, prog)
    check_2d(surfaces, args.surf_name)
    kinds = list(dict.fromkeys(args.kinds))  # each kind once, in the order given
    paths_ = trajectories(surfaces, args.trajectory) if args.trajectory is not None else None
    from ..plotting.look import use

    with use(args.style) as look:
        paths, figures = write_2d(
            surfaces, out, args.surf_name, kinds, args.labels, args.formats, args.dpi, style, paths_, look
        )
    for path in paths:
        print(path)
    if args.show:
        show(figures)
    return 0
