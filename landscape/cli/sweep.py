"""``landscape sweep``: train every (recipe, batch size, seed) of a study and keep a manifest of the runs.

The sweep's own flags say what varies; every other flag is a ``landscape train`` flag shared by all
runs.  Or a small TOML file says it all (``--config``); flags given on the command line win.
"""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..workflows import sweep as workflow
from . import boundary
from . import train as train_cli

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


def build_parser(prog: str = "landscape sweep") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        argument_default=argparse.SUPPRESS,
        epilog=EXAMPLES,
        description="Train every combination of recipes, batch sizes and seeds, each "
        "run in a folder of its own, and write a manifest of the runs "
        "(CSV and JSON). Other flags are passed to landscape train.",
    )
    p.add_argument("--out", help="the sweep's folder: one sub-folder per run, and the manifest")
    p.add_argument("--recipes", nargs="+", help="recipes to train (default: sgd)")
    p.add_argument("--batch_sizes", nargs="+", type=int, help="global batch sizes")
    p.add_argument("--seeds", nargs="+", type=int, help="seeds (default: 0)")
    p.add_argument("--config", help="TOML file with out, recipes, batch_sizes, seeds and a [train] table")
    p.add_argument("--task", type=int, help="run only the configuration with this index (a job-array task)")
    p.add_argument("--list", action="store_true", help="print the configurations with their index and leave")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return {**train_cli.spelling(), **boundary.flags(build_parser())}


def _train_params(flags: list[str], prog: str) -> dict:
    """``landscape train`` flags given to the sweep, as parameters (none required: the runs need them)."""
    parser = train_cli.build_parser(prog)
    for action in parser._actions:
        action.required = False
    given = vars(parser.parse_args(flags))
    given.pop("traceback", None)
    return given


def main(argv: list[str], prog: str = "landscape sweep") -> int:
    world = comm_module.world()

    def parse() -> dict:
        args, rest = build_parser(prog).parse_known_args(argv)
        varied = [f.split("=")[0] for f in rest if f.split("=")[0] in ("--recipe", "--batch_size", "--seed", "--out")]
        if varied:
            raise UsageError(
                f"{varied[0]} is set per run by the sweep: give --recipes, --batch_sizes, --seeds and "
                "the sweep's --out instead"
            )
        given = {**_train_params(rest, prog), **vars(args)}
        given.pop("traceback", None)
        return given

    given = agree(world, parse)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
