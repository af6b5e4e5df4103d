"""``landscape plot-training``: test error against batch size per recipe, and the training curves, from
the manifests of ``landscape sweep``.  Figures come from the manifests and the runs' logs alone."""

from __future__ import annotations

import argparse

from ..workflows import plots
from .params import main_of, parser_for

EPILOG = """\
examples:
  landscape plot-training sweeps/digits                        # the folder of a sweep
  landscape plot-training a/manifest.json b/manifest.csv --out figures/batch_sweep --format png pdf
"""


PARAMS = (plots.TrainingPlotParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape plot-training") -> argparse.ArgumentParser:
    return parser_for(plots.TrainingPlotParams, prog, EPILOG)


def main(argv: list[str], prog: str = "landscape plot-training") -> int:
    return main_of(build_parser, plots.run_training, plots.TrainingPlotParams)(argv, prog)
