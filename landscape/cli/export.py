"""``landscape export``: surface files in other tools' formats.

``--vtk``: VTK XML for ParaView (``io.paraview``): a 2-D surface as a structured grid (``.vts``)
whose height is one quantity and whose point data are all of them, a 1-D surface as a polyline
(``.vtu``), one file per surface.  ``--html``: one self-contained web page that turns in 3-D
(``plotting.interactive``), every surface given side by side on one colour scale.  Files are read
from the HDF5 alone; no model is loaded.  ``--out`` is a path without extension, or a folder (one that
exists, or a path ending in ``/``) into which each file's export goes under its input's name.
"""

from __future__ import annotations

import argparse

from ..workflows import export as workflow
from . import boundary

EXAMPLES = """\
examples:
  landscape export demo_out/cnn_bs16_2d.h5 --vtk                      (writes demo_out/cnn_bs16_2d.vts)
  landscape export demo_out/cnn_bs16_2d.h5 --vtk --z test_loss --log --zmax 10 --out figures/bs16
  landscape export demo_out/cnn_bs16_1d.h5 --vtk                      (a polyline: demo_out/cnn_bs16_1d.vtu)
  landscape export demo_out/cnn_bs16_2d.h5 demo_out/cnn_bs1024_2d.h5 --vtk --out figures/
                                              (a folder: figures/cnn_bs16_2d.vts, figures/cnn_bs1024_2d.vts)
  landscape export demo_out/cnn_bs16_2d.h5 demo_out/cnn_bs1024_2d.h5 --html --labels "batch 16" "batch 1024" \
      --out figures/demo_3d                                            (figures/demo_3d.html)
then in ParaView: File > Open the .vts; colour by any quantity; Warp is not needed (z is the height).
"""


def build_parser(prog: str = "landscape export") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EXAMPLES,
        argument_default=argparse.SUPPRESS,
        description="Export surface files: --vtk for ParaView, --html for a 3-D web page.",
    )
    p.add_argument(
        "surf_files", nargs="+", metavar="SURF_FILE", help="surface files (landscape's or the reference code's)"
    )
    p.add_argument("--vtk", action="store_true", help="VTK XML: .vts (2-D structured grid) or .vtu (1-D polyline)")
    p.add_argument("--html", action="store_true", help="one self-contained 3-D web page of all the files")
    p.add_argument("--labels", nargs="+", metavar="LABEL", help="--html: one panel title per file (default: names)")
    p.add_argument("--title", help="--html: the page's title")
    p.add_argument(
        "--z",
        help="the quantity that gives the height; with --html, the one shown first (default: train_loss)",
    )
    p.add_argument(
        "--log", action="store_true", help="height = log10 of the quantity (--html: the page opens on log10)"
    )
    p.add_argument(
        "--zmax",
        type=float,
        help="hide points above this value, in the quantity's own units also with "
        "--log (diverged points would dwarf the rest); --html: gaps in every quantity where --z is above it",
    )
    p.add_argument(
        "--out",
        metavar="PREFIX",
        help="output path without extension (--vtk: one input file only; default: the first input's path without "
        ".h5); or a folder (existing, or ending in /): each export goes into it named after its input "
        "(s.h5 -> FOLDER/s.vts; --html: the first input's name)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write over an existing checkpoint, HDF5 file, training log, manifest or run record "
        "(refused otherwise; never over an input surface file)",
    )
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def main(argv: list[str], prog: str = "landscape export") -> int:
    given = vars(build_parser(prog).parse_args(argv))
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
