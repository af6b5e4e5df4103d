"""plot_1d: draw one or more 1-D surface files as overlaid loss/accuracy curves.

Figures come from the HDF5 files alone; no model is loaded.
"""

from __future__ import annotations

import argparse

from ..workflows import plots
from .params import main_of, parser_for

EPILOG = """\
examples:
  landscape plot1d demo_out/cnn_bs16_1d.h5
  landscape plot1d bs16.h5 bs1024.h5 --labels "batch 16" "batch 1024" --error --format png pdf
  landscape plot1d interp.h5 --log --loss_min 0.01 --xmin -0.5 --xmax 1.5 --split train --out figures/interp

plot_1d is the same program under the reference code's name.
"""


PARAMS = (plots.Plot1DParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape plot1d") -> argparse.ArgumentParser:
    return parser_for(plots.Plot1DParams, prog, EPILOG)


def main(argv: list[str], prog: str = "landscape plot1d") -> int:
    return main_of(build_parser, plots.run_1d, plots.Plot1DParams)(argv, prog)
