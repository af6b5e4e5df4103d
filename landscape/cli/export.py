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
from .params import parsed, parser_for

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


PARAMS = (workflow.ExportParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape export") -> argparse.ArgumentParser:
    return parser_for(workflow.ExportParams, prog, EXAMPLES)


def main(argv: list[str], prog: str = "landscape export") -> int:
    workflow.run(workflow.ExportParams.of(parsed(build_parser(prog), argv)), argv=(*prog.split(), *argv))
    return 0
