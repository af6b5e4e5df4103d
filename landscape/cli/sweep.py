"""``landscape sweep``: train every (recipe, batch size, seed) of a study and keep a manifest of the runs.

The sweep's own flags say what varies; every other flag is a ``landscape train`` flag shared by all
runs.  Or a small TOML file says it all (``--config``); flags given on the command line win.
"""

from __future__ import annotations

import argparse
import os

from ..errors import InputError, UsageError
from ..io.toml_file import table_flags, toml
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..train import sweep as sweeps
from ..train.job import run_training
from ..train.recipes import ONLY_FOR
from . import boundary
from . import train as train_cli

VARIED = ("--recipe", "--batch_size", "--seed", "--out")
STUDY_KEYS = ("figures", "name", "jobs", "report")

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


def _config_file(path: str) -> tuple[dict, list[str]]:
    """The sweep settings and the train flags of a TOML file."""
    tomllib = toml()
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(f"config {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"config {path} cannot be read as TOML ({exc})") from None
    train = data.pop("train", {})
    for key in STUDY_KEYS:  # a landscape study file is a sweep file with these keys more
        data.pop(key, None)
    unknown = sorted(set(data) - {"out", "recipes", "batch_sizes", "seeds"})
    if unknown or not isinstance(train, dict):
        raise InputError(
            f"config {path}: unknown key {unknown[0] if unknown else 'train'!r}; expected out, recipes, "
            "batch_sizes, seeds and a [train] table of landscape train flags",
        )
    return data, table_flags(train)


def plan(argv: list[str], prog: str):
    """(sweep folder, configurations, the chosen ones with their train jobs, settings) from the flags."""
    args, rest = build_parser(prog).parse_known_args(argv)
    given = vars(args)
    settings, file_flags = _config_file(given["config"]) if "config" in given else ({}, [])
    settings.update({k: v for k, v in given.items() if k in ("out", "recipes", "batch_sizes", "seeds")})
    for flag in rest:
        if flag.split("=")[0] in VARIED:
            raise UsageError(
                f"{flag.split('=')[0]} is set per run by the sweep: give --recipes, --batch_sizes, "
                "--seeds and the sweep's --out instead"
            )
    if not settings.get("out"):
        raise UsageError("--out (or out in the config file): the sweep's folder is needed")
    if not settings.get("batch_sizes"):
        raise UsageError("--batch_sizes (or batch_sizes in the config file): at least one batch size is needed")
    configs = sweeps.configurations(
        settings.get("recipes", ["sgd"]), settings["batch_sizes"], settings.get("seeds", [0])
    )
    chosen = configs
    if "task" in given:
        if not 0 <= given["task"] < len(configs):
            raise UsageError(
                f"--task={given['task']}: expected an index in 0..{len(configs) - 1} "
                f"({len(configs)} configurations; see --list)"
            )
        chosen = [configs[given["task"]]]
    out = settings["out"]
    shared = vars(train_cli.build_parser("landscape train").parse_args([*file_flags, *rest, "--out", out]))
    jobs = []
    for c in configs if given.get("list") else chosen:
        # a recipe's own hyper-parameters (--trust, --sync_every...) go to the runs of that recipe only
        own = {k: v for k, v in shared.items() if k not in ONLY_FOR or c.recipe in ONLY_FOR[k]}
        own.update(recipe=c.recipe, batch_size=c.batch_size, seed=c.seed, out=os.path.join(out, c.name))
        flags = [
            *file_flags,
            *rest,
            "--recipe",
            c.recipe,
            "--batch_size",
            str(c.batch_size),
            "--seed",
            str(c.seed),
            "--out",
            own["out"],
        ]
        jobs.append((c, train_cli.job_from_args(own, flags, "landscape train")))
    settings = {**settings, "train_flags": [*file_flags, *rest]}
    return out, configs, jobs, settings, given


def main(argv: list[str], prog: str = "landscape sweep") -> int:
    world = comm_module.world()
    out, configs, jobs, settings, given = agree(world, plan, argv, prog)
    epochs = jobs[0][1].recipe.epochs
    if given.get("list"):
        if world.rank == 0:
            for i, (c, _) in enumerate(jobs):
                print(f"{i}\t{c.name}")
        return 0
    agree(world, lambda: os.makedirs(out, exist_ok=True) if world.rank == 0 else None)
    for c, job in jobs:
        if world.rank == 0:
            print(f"== {c.name} ({configs.index(c) + 1} of {len(configs)})", flush=True)
        run_training(job, world)
        rows = agree(world, lambda: sweeps.write_manifest(out, configs, epochs, settings) if world.rank == 0 else None)
    if world.rank == 0:
        done = sum(r["done"] for r in rows)
        print(f"{'run':<24}{'test error %':>14}{'train loss':>12}{'seconds':>10}")
        for r in rows:
            print(
                f"{r['run']:<24}{r['test_error']:>14.2f}{r['train_loss']:>12.4f}{r['seconds']:>10.1f}"
                if r["done"]
                else f"{r['run']:<24}{'(not done)':>14}"
            )
        print(
            f"wrote {os.path.join(out, sweeps.MANIFEST_CSV)} and {sweeps.MANIFEST_JSON}: {done} of {len(rows)} "
            "runs done"
        )
    return 0
