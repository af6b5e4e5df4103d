"""``landscape sweep``: train every (recipe, batch size, seed) of a study and keep a manifest of the runs.

The sweep's own flags say what varies; every other flag is a ``landscape train`` flag shared by all
runs.  Or a small TOML file says it all (``--config``); flags given on the command line win.
"""

from __future__ import annotations

import argparse

from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..workflows import sweep as workflow
from ..workflows.train import TrainParams
from .params import parsed, parser_for

EXAMPLES = """\
examples:
  # 4 batch sizes x 2 recipes x 2 seeds of the demo CNN, one after the other, on 2 ranks
  mpiexec -n 2 landscape sweep --out sweeps/digits --recipes naive linear --batch_sizes 16 64 256 1024 \\
      --seeds 0 1 --model digits_cnn --dataset digits --epochs 30

  # the same from a file, one configuration per Slurm array task (scripts/slurm/train_array.sbatch)
  landscape sweep --config sweep.toml --list
  srun landscape sweep --config sweep.toml --task $SLURM_ARRAY_TASK_ID

  # the figure: test error against batch size per recipe, and the training curves
  landscape plot-training sweeps/digits

sweep.toml:
  out = "sweeps/digits"
  recipes = ["naive", "linear"]
  batch_sizes = [16, 64, 256, 1024]
  seeds = [0, 1]
  [train]                       # any landscape train flag, without the dashes
  model = "digits_cnn"
  dataset = "digits"
  epochs = 30

A finished run is skipped and an unfinished one resumed, so rerunning the command completes a sweep.
"""


PARAMS = (workflow.SweepParams, TrainParams)  # the parameters whose flags spell its messages (a run's too)


def build_parser(prog: str = "landscape sweep") -> argparse.ArgumentParser:
    return parser_for(workflow.SweepParams, prog, EXAMPLES)


def main(argv: list[str], prog: str = "landscape sweep") -> int:
    world = comm_module.world()

    def parse() -> dict:
        workflow.refuse_varied([f.split("=")[0][2:] for f in argv if f.startswith("--")])  # before "unrecognized"
        return parsed(build_parser(prog), argv)

    given = agree(world, parse)
    workflow.run(workflow.SweepParams.of(given), argv=(*prog.split(), *argv))
    return 0
