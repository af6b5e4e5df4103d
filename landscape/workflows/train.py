"""``landscape train`` as a function: train a network on one process or data-parallel over MPI ranks.

The parameters are the flags of ``landscape train``; the recipe's hyper-parameters left unset (None)
take the defaults of ``recipe`` (``train.recipes``).  A finished run is left as it is, an interrupted
one resumed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..data import DataConfig
from ..errors import ConfigError
from ..models import ModelConfig
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..train.config import TrainJob, TrainRun
from ..train.job import run_training
from ..train.recipes import Recipe, resolve
from .command import Result, check_known, config_defaults, fields_of

HYPER = tuple(f.name for f in dataclasses.fields(Recipe) if f.name != "recipe")
# the recipe's hyper-parameters default to None: "as the recipe says"
DEFAULTS = {
    **{k: v for k, v in config_defaults(ModelConfig, DataConfig, TrainRun).items() if k not in ("test", "argv")},
    "no_test": False,
    "recipe": "sgd",
    **dict.fromkeys(HYPER),
}
for unused in ("model_file", "allow_pickle", "data_split", "split_idx", "train_subset", "out"):  # not flags of train
    DEFAULTS.pop(unused)
REQUIRED = ("model", "out")  # out: the command line asks for it (a folder named "run" by default would surprise)


@dataclass(frozen=True)
class TrainResult(Result):
    """A finished run: its folder, final checkpoint (what ``landscape surface --model_file`` reads), the
    recipe as resolved, one dict per epoch, and the seconds it took (when it was trained)."""

    out: str
    final: str
    recipe: dict
    history: list[dict] = field(repr=False)
    seconds: float
    resumed_from: int | None = None


def job_of(params: dict, argv: tuple[str, ...] = ()) -> TrainJob:
    check_known(params, (*REQUIRED, *DEFAULTS), "train")
    given = dict(params)
    for name in REQUIRED:  # the command line asks for them; a sweep or an API call may not give them
        if given.get(name) is None:
            raise ConfigError(name, None, "a value (it is required)")
    if given.get("no_test"):
        given["test"] = False
    hyper = {k: given[k] for k in HYPER if given.get(k) is not None}
    return TrainJob(
        model=ModelConfig(**fields_of(given, ModelConfig)),
        data=DataConfig(**fields_of(given, DataConfig)),
        recipe=resolve(given.get("recipe", "sgd"), **hyper),
        run=TrainRun(**fields_of(given, TrainRun), argv=tuple(argv)),
    )


def run(params: dict, argv: tuple[str, ...] = ()) -> TrainResult:
    world = comm_module.world()
    job = agree(world, job_of, params, argv)
    done = run_training(job, world)
    return TrainResult(
        done.out, done.final, dataclasses.asdict(job.recipe), done.history, done.seconds, done.resumed_from
    )
