"""``landscape train``: train a network on one process or data-parallel over MPI ranks.

Each flag is one field of ``workflows.train.TrainParams`` (the recipe's hyper-parameters default to
``--recipe``'s own); this module only parses them.
"""

from __future__ import annotations

import argparse

from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..workflows import train as workflow
from .params import parsed, parser_for

EXAMPLES = """\
examples:
  # the demo CNN on 2 ranks, the learning rate scaled to the batch with a warm-up
  mpiexec -n 2 landscape train --model digits_cnn --dataset digits --batch_size 256 \\
      --recipe linear --epochs 5 --out runs/cnn_b256

  # the paper's CIFAR-10 recipe (300 epochs), one rank per GPU under Slurm
  srun landscape train --model resnet56 --dataset cifar10 --datapath data \\
      --recipe sgd --batch_size 128 --out runs/resnet56_b128

  # a surface of the result
  landscape surface --model digits_cnn --model_file runs/cnn_b256/final.pt --x=-1:1:51

Rerunning the same command after an interruption (kill -9, a time limit) continues from the last
checkpoint; a finished run is left as it is.  Exit codes as for landscape surface (143: stopped by
SIGTERM/SIGUSR1 after saving; rerun to resume), and 6: the training loss became NaN or infinite (the
line names the epoch, step and learning rate; the last finite checkpoint is kept, run.json records it).
"""


PARAMS = (workflow.TrainParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape train") -> argparse.ArgumentParser:
    return parser_for(workflow.TrainParams, prog, EXAMPLES)


def main(argv: list[str], prog: str = "landscape train") -> int:
    world = comm_module.world()
    given = agree(world, lambda: parsed(build_parser(prog), argv))
    workflow.run(workflow.TrainParams.of(given), argv=(*prog.split(), *argv))
    return 0
