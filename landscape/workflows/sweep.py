"""``landscape sweep`` as a function: train every (recipe, batch size, seed) of a study, each run in a
folder of its own, and keep a manifest of the runs (CSV and JSON).

The sweep's own parameters say what varies (``recipes``, ``batch_sizes``, ``seeds``) and where it goes
(``out``); every other parameter is a ``landscape train`` parameter shared by all runs.  A TOML file
(``config``) may say it all: its ``out``, ``recipes``, ``batch_sizes``, ``seeds`` and a ``[train]``
table, whose sub-tables ``[train.<recipe>]`` hold what only that recipe's runs take (``steps = 2000``
for ``naive``, ``epochs = 30`` for ``linear``: the arms of a study); the parameters given win.  A
finished run is skipped and an unfinished one resumed.  A run whose training loss became NaN or infinite
(``errors.Diverged``) is listed as diverged, not done, and the sweep goes on with the others; it ends
with that error (exit 6) naming the runs that diverged.  A stop signal (SIGTERM, SIGUSR1) stops the run
in training after its step (``train``'s own stop) and the sweep begins no other: it rebuilds the
manifest and ends with ``errors.Stopped`` (exit 143); rerunning resumes.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from .. import checks
from ..data import load_named
from ..errors import ConfigError, Diverged, InputError, Stopped, UsageError, param
from ..io.toml_file import JSON_KEYS, read_toml
from ..parallel import comm as comm_module
from ..parallel import stop
from ..parallel.comm import agree
from ..train import sweep as sweeps
from ..train.config import TrainJob
from ..train.job import run_training
from ..train.recipes import ONLY_FOR
from . import train as training
from .command import Result
from .params import default, option
from .train import DATA, TrainSettings

VARIED = ("recipe", "batch_size", "seed", "out")  # set per run by the sweep
SWEEP = "the sweep"


@dataclass(frozen=True, kw_only=True)
class SweepParams(TrainSettings):
    """``landscape sweep``'s parameters: what varies and where it goes, and the ``landscape train``
    parameters every run shares (``TrainSettings``)."""

    COMMAND = "sweep"
    DESCRIPTION = (
        "Train every combination of recipes, batch sizes and seeds, each run in a folder of its own, and write a "
        "manifest of the runs (CSV and JSON). Other flags are passed to landscape train."
    )
    GROUPS = (SWEEP, *TrainSettings.GROUPS)
    out: str | None = option(None, "the sweep's folder: one sub-folder per run, and the manifest", group=SWEEP)
    recipes: tuple[str, ...] = option(("sgd",), "recipes to train", group=SWEEP)
    batch_sizes: tuple[int, ...] | None = option(None, "global batch sizes", group=SWEEP)
    seeds: tuple[int, ...] = option((0,), "seeds", group=SWEEP)
    config: str | None = option(
        None, "TOML file with out, recipes, batch_sizes, seeds and a [train] table", group=SWEEP
    )
    task: int | None = option(None, "run only the configuration with this index (a job-array task)", group=SWEEP)
    list: bool = option(False, "print the configurations with their index and leave", group=SWEEP)
    model: str | None = option(
        None,
        "registry name (digits_mlp, digits_cnn, resnet20, resnet56, vgg9, ...) or package.module:factory",
        group=DATA,
    )
    by_recipe: dict | None = option(
        None, "{recipe: {train parameter: value}}: what only that recipe's runs take (a config file's "
        "[train.<recipe>] tables)", cli=False,
    )  # fmt: skip


SHARED = ("model", *(f.name for f in dataclasses.fields(TrainSettings)))  # train's parameters, every run's
STUDY_KEYS = (
    "figures",
    "name",
    "jobs",
    "report",
    "rescale",
)  # a landscape study file is a sweep file with these keys more


@dataclass(frozen=True)
class SweepResult(Result):
    """The sweep's folder, its configurations (``name`` by index), and the manifest's rows after this call
    (none when only listed)."""

    out: str
    configurations: list[str]
    rows: list[dict] = field(default_factory=list)
    manifest: str = ""


def config_file(path: str) -> dict:
    """The sweep parameters a TOML file gives: its top keys and its [train] table, as one dict."""
    data = read_toml(path, param("config"))
    train = data.pop("train", {})
    for key in STUDY_KEYS:
        data.pop(key, None)
    unknown = sorted(set(data) - {"out", "recipes", "batch_sizes", "seeds"})
    if unknown or not isinstance(train, dict):
        raise InputError(
            f"{param('config')} {path}: unknown key {unknown[0] if unknown else 'train'!r}; expected out, recipes, "
            "batch_sizes, seeds and a [train] table of landscape train parameters"
        )
    by_recipe = {k: train.pop(k) for k in list(train) if isinstance(train[k], dict) and k not in JSON_KEYS}
    recipes = data.get("recipes", default(SweepParams, "recipes"))
    wrong = sorted(set(by_recipe) - set(recipes))
    if wrong:
        raise InputError(
            f"{param('config')} {path}: [train.{wrong[0]}] is not a recipe of this sweep; expected a table per "
            f"recipe among {', '.join(recipes)}"
        )
    return {**train, **data, **({"by_recipe": by_recipe} if by_recipe else {})}


def refuse_varied(given) -> None:
    """A parameter the sweep sets per run (``VARIED``, but its own ``out``) among ``given`` is refused by name."""
    varied = [k for k in VARIED if k in given and k != "out"]
    if varied:
        raise UsageError(
            f"{param(varied[0])} is set per run by the sweep: give {param('recipes')}, {param('batch_sizes')}, "
            f"{param('seeds')} and the sweep's {param('out')} instead"
        )


def plan(params, argv: tuple[str, ...] = ()):
    """(sweep folder, every configuration, the chosen ones with their train jobs, the settings)."""
    refuse_varied(params if isinstance(params, dict) else {})
    p = SweepParams.given(params)
    given = {k: v for k, v in p.record().items() if p.explicit(k)}
    if p.config:
        given = {**config_file(p.config), **given}
        refuse_varied(given)
        p = SweepParams.of(given)
    if not p.out:
        raise ConfigError("out", p.out, "the sweep's folder (or out in the config file)")
    if not p.batch_sizes:
        raise ConfigError("batch_sizes", p.batch_sizes, "at least one batch size (or batch_sizes in the config file)")
    configs = sweeps.configurations(list(p.recipes), list(p.batch_sizes), list(p.seeds))
    chosen = configs
    if p.task is not None:
        expected = f"an index in 0..{len(configs) - 1} ({len(configs)} configurations; see list)"
        checks.whole("task", p.task, least=0, most=len(configs) - 1, expected=expected)
        chosen = [configs[p.task]]
    shared = {k: v for k, v in given.items() if k in SHARED}
    jobs: list[tuple[sweeps.Configuration, TrainJob]] = []
    for c in configs if p.list else chosen:
        # a recipe's own hyper-parameters (trust, sync_every...) go to the runs of that recipe only
        own = {k: v for k, v in shared.items() if k not in ONLY_FOR or c.recipe in ONLY_FOR[k]}
        own.update((p.by_recipe or {}).get(c.recipe, {}))
        own.update(recipe=c.recipe, batch_size=c.batch_size, seed=c.seed, out=os.path.join(p.out, c.name))
        jobs.append((c, training.job_of(own, argv)))
    return p.out, configs, jobs, p.record(), p.list


def _train_size(job: TrainJob) -> int:
    """The training samples every run of the sweep draws its batches from (the runs share one data set)."""
    d = job.data
    return len(load_named(d.dataset, d.datapath, d.raw_data, d.data_args).train)


def run(params: SweepParams, argv: tuple[str, ...] = ()) -> SweepResult:
    world = comm_module.world()
    out, configs, jobs, settings, listing = agree(world, plan, params, argv)
    names = [c.name for c in configs]
    if listing:
        if world.rank == 0:
            for i, (c, _) in enumerate(jobs):
                print(f"{i}\t{c.name}")
        return SweepResult(out, names)
    epochs = jobs[0][1].recipe.epochs
    train_size = world.bcast(agree(world, lambda: _train_size(jobs[0][1]) if world.rank == 0 else None))
    for _, job in jobs:  # every run's batch sizes against the data, before the first run trains
        job.check_sizes(train_size, world.size)
    agree(world, lambda: os.makedirs(out, exist_ok=True) if world.rank == 0 else None)
    rows, diverged = [], []

    def manifest():
        return agree(world, lambda: sweeps.write_manifest(out, configs, epochs, settings) if world.rank == 0 else None)

    for n, (c, job) in enumerate(jobs):
        signal_name = stop.requested(world)  # between runs; within one, training polls after every step
        if signal_name:
            raise Stopped(stop.stopped_line(signal_name, n, len(jobs)))
        if world.rank == 0:
            print(f"== {c.name} ({configs.index(c) + 1} of {len(configs)})", flush=True)
        try:
            run_training(job, world)
        except Diverged as exc:  # raised by every rank at once, recorded in the run's run.json
            diverged.append(c.name)
            if world.rank == 0:
                print(f"{c.name}: {exc}", flush=True)
        except Stopped:  # by every rank at once, the run saved where it stopped: the next one is not begun
            manifest()
            signal_name = stop.requested(world) or "a signal"  # the rank that received it names it
            raise Stopped(
                stop.stopped_line(signal_name, n, len(jobs), f"runs ({c.name} saved where it stopped)")
            ) from None
        rows = manifest()
    rows = world.bcast(rows)
    if world.rank == 0:
        done = sum(r["done"] for r in rows)
        print(f"{'run':<24}{'test error %':>14}{'train loss':>12}{'seconds':>10}")
        for r in rows:
            print(
                f"{r['run']:<24}{r['test_error']:>14.2f}{r['train_loss']:>12.4f}{r['seconds']:>10.1f}"
                if r["done"]
                else f"{r['run']:<24}{'(diverged)' if r['diverged'] else '(not done)':>14}"
            )
        print(
            f"wrote {os.path.join(out, sweeps.MANIFEST_CSV)} and {sweeps.MANIFEST_JSON}: {done} of {len(rows)} "
            "runs done"
        )
    if diverged:
        raise Diverged(
            f"{len(diverged)} of {len(jobs)} runs diverged ({', '.join(diverged)}): the manifest lists them as "
            "diverged, not done; the other runs are trained"
        )
    return SweepResult(out, names, rows, os.path.join(out, sweeps.MANIFEST_JSON))
