"""``landscape curvature``: the Hessian's extreme eigenvalues, trace, spectral density and sharpness of one
trained network, on one process or with the ranks sharing the data.

Writes one JSON file with every number and the settings that produced it, prints a summary, and
draws the spectral density (``--density``).  The measures are those of ``landscape.curvature``.
"""

from __future__ import annotations

import argparse

from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..workflows import curvature as workflow
from .params import parsed, parser_for

EXAMPLES = """\
examples:
  landscape curvature --model digits_cnn --model_file demo_out/cnn_bs16/final.pt --k 3 --trace 100 \\
      --density --sharpness adaptive average --out demo_out/cnn_bs16_curvature.json
  mpiexec -n 4 landscape curvature --model resnet56 --model_file r56.t7 --dataset cifar10 \\
      --datapath data --train_subset 10000 --k 1 --out r56_curvature.json
"""


def build_parser(prog: str = "landscape curvature") -> argparse.ArgumentParser:
    return parser_for(workflow.CurvatureParams, prog, EXAMPLES)


PARAMS = (workflow.CurvatureParams,)  # the parameters whose flags spell its messages


def main(argv: list[str], prog: str = "landscape curvature") -> int:
    world = comm_module.world()
    given = agree(world, lambda: parsed(build_parser(prog), argv))
    workflow.run(workflow.CurvatureParams.of(given), argv=(*prog.split(), *argv))
    return 0
