"""``landscape report``: the scorecard of a batch-size study, from a manifest of trained networks.

The flags are the parameters of ``workflows.report``, which does the work.
"""

from __future__ import annotations

import argparse

from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..workflows import report as workflow
from .params import parsed, parser_for

EXAMPLES = """\
examples:
  landscape report study_out/manifest.json --out study_out/report --figures figures --name study
  mpiexec -n 4 landscape report sweeps/r56/manifest.json --datapath data --train_subset 10000 --out r56_report
  landscape report checkpoints.csv --model resnet56 --dataset cifar10 --datapath data --out report
  srun landscape report --config scripts/slurm/study_resnet56.toml     (a study's report step)

checkpoints.csv (a hand-written list; paths relative to the file):
  checkpoint,batch_size,seed,recipe
  runs/b128_s0/model_300.t7,128,0,sgd
  runs/b8192_s0/model_300.t7,8192,0,sgd

Rerunning reads back what each run's folder already holds (out/runs/<run>/measures.json) and
finishes what is missing; other measure settings than the folder's are refused.
"""


def build_parser(prog: str = "landscape report") -> argparse.ArgumentParser:
    return parser_for(workflow.ReportParams, prog, EXAMPLES)


PARAMS = (workflow.ReportParams,)  # the parameters whose flags spell its messages


def main(argv: list[str], prog: str = "landscape report") -> int:
    world = comm_module.world()
    given = agree(world, lambda: parsed(build_parser(prog), argv))
    workflow.run(workflow.ReportParams.of(given), argv=(*prog.split(), *argv))
    return 0
