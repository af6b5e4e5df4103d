"""plot_2d: draw one or more 2-D surface files as contour lines, filled contours and 3-D surfaces.

Several files become side-by-side panels sharing levels and one colour bar.
Figures come from the HDF5 files alone; no model is loaded.
"""

from __future__ import annotations

import argparse

from ..workflows import plots
from .params import main_of, parser_for

EPILOG = """\
examples:
  landscape plot2d demo_out/cnn_bs16_2d.h5
  landscape plot2d resnet56.h5 resnet56_noshort.h5 --labels ResNet-56 "no shortcuts" --vmin 0.1 --vmax 10
  landscape plot2d vgg9.h5 --surf_name test_err --log --kind contourf surface --format png pdf --dpi 300
  landscape surface --model digits_cnn --model_file runs/cnn/final.pt --pca_from runs/cnn --x=-6:2:41 --y=-2:2:21
  landscape plot2d runs/cnn/final.pt.surface.h5 --trajectory --kind contour

plot_2d is the same program under the reference code's name.
"""


PARAMS = (plots.Plot2DParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape plot2d") -> argparse.ArgumentParser:
    return parser_for(plots.Plot2DParams, prog, EPILOG)


def main(argv: list[str], prog: str = "landscape plot2d") -> int:
    return main_of(build_parser, plots.run_2d, plots.Plot2DParams)(argv, prog)
