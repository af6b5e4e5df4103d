"""``landscape export``: surface files in other tools' formats.

``--vtk``: VTK XML for ParaView (``io.paraview``): a 2-D surface as a structured grid (``.vts``)
whose height is one quantity and whose point data are all of them, a 1-D surface as a polyline
(``.vtu``), one file per surface.  ``--html``: one self-contained web page that turns in 3-D
(``plotting.interactive``), every surface given side by side on one colour scale.  Files are read
from the HDF5 alone; no model is loaded.
"""

from __future__ import annotations

import argparse
import math
import os

from ..errors import InputError, UsageError
from . import boundary

EXAMPLES = """\
examples:
  landscape export demo_out/cnn_bs16_2d.h5 --vtk                      (writes demo_out/cnn_bs16_2d.vts)
  landscape export demo_out/cnn_bs16_2d.h5 --vtk --z test_loss --log --zmax 10 --out figures/bs16
  landscape export demo_out/cnn_bs16_1d.h5 --vtk                      (a polyline: demo_out/cnn_bs16_1d.vtu)
  landscape export demo_out/cnn_bs16_2d.h5 demo_out/cnn_bs1024_2d.h5 --html --labels "batch 16" "batch 1024" \
      --out figures/demo_3d                                            (figures/demo_3d.html)
then in ParaView: File > Open the .vts; colour by any quantity; Warp is not needed (z is the height).
"""


def build_parser(prog: str = "landscape export") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog, epilog=EXAMPLES, description="Export surface files: --vtk for ParaView, --html for a 3-D web page."
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
        default="train_loss",
        help="the quantity that gives the height; with --html, the one shown first (default: train_loss)",
    )
    p.add_argument("--log", action="store_true", help="height = log10 of the quantity")
    p.add_argument(
        "--zmax",
        type=float,
        help="hide points above this value, in the quantity's own units also with "
        "--log (diverged points would dwarf the rest)",
    )
    p.add_argument(
        "--out",
        metavar="PREFIX",
        help="output path without extension (--vtk: one input file only; default: the first input's path without .h5)",
    )
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def main(argv: list[str], prog: str = "landscape export") -> int:
    from ..io.paraview import write_vtk
    from ..io.surface_file import read

    args = build_parser(prog).parse_args(argv)
    if not (args.vtk or args.html):
        raise UsageError("nothing to export: give --vtk, --html or both")
    if args.labels is not None and len(args.labels) != len(args.surf_files):
        raise UsageError(
            f"--labels: got {len(args.labels)} labels for {len(args.surf_files)} files; expected one label per file"
        )
    if args.vtk and args.out and len(args.surf_files) > 1:
        raise UsageError(
            f"--out {args.out}: one prefix for {len(args.surf_files)} files; give one file, or no "
            "--out (each file's export goes beside it)"
        )
    if args.zmax is not None and not (math.isfinite(args.zmax) and (args.zmax > 0 or not args.log)):
        raise UsageError(
            f"--zmax={args.zmax:g}: expected a finite number" + (", positive with --log" if args.log else "")
        )
    stems = [args.out or os.path.splitext(path)[0] for path in args.surf_files]
    for stem in stems:
        folder = os.path.dirname(os.path.abspath(stem))
        if not os.path.isdir(folder):
            raise InputError(f"--out {stem}: folder {folder} does not exist; expected an existing folder")
    surfaces = [read(path) for path in args.surf_files]  # every file checked before any is written
    from ..io.paraview import quantities
    from ..io.paths import output_path

    for surface in surfaces:
        if args.z not in quantities(surface):
            raise UsageError(
                f"--z={args.z}: {surface.path} has no such quantity; expected one of {', '.join(quantities(surface))}"
            )
    outputs = [stem + (".vts" if s.ndim == 2 else ".vtu") for s, stem in zip(surfaces, stems)] if args.vtk else []
    for path in outputs + ([stems[0] + ".html"] if args.html else []):
        output_path(path, "file", "out")  # a folder, a device or an unwritable folder: refused before writing
        folder = os.path.dirname(os.path.abspath(path))
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"--out {path}: folder {folder} is not writable; expected a folder the files can go to")
    if args.html:
        from ..plotting import interactive

        page = interactive.build(
            surfaces, args.labels, args.title, args.z
        )  # checked (2-D, shared quantities) before writing
    try:
        if args.vtk:
            for surface, stem in zip(surfaces, stems):
                print(write_vtk(surface, stem, args.z, args.log, args.zmax))
        if args.html:
            print(interactive.save(page, stems[0] + ".html"))
    except OSError as exc:  # a folder that takes no files (/proc, a read-only mount as root, a full disk)
        raise InputError(f"--out {exc.filename}: cannot be written ({exc.strerror}); choose another --out") from None
    return 0
