"""``landscape train`` as a function: train a network on one process or data-parallel over MPI ranks.

``TrainParams`` are the flags of ``landscape train``; the recipe's hyper-parameters left unset (None)
take the defaults of ``recipe`` (``train.recipes``).  ``TrainSettings`` are those a sweep shares among
its runs.  A finished run is left as it is, an interrupted one resumed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..data import BUILTIN as BUILTIN_DATA
from ..data import DataConfig
from ..models import NUM_CLASSES_HELP, ModelConfig
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..train.config import AUGMENTS, TrainJob, TrainRun
from ..train.job import run_training
from ..train.recipes import NAMES, Recipe, resolve
from .command import Result, fields_of
from .params import REQUIRED, Params, default, option

HYPER = tuple(f.name for f in dataclasses.fields(Recipe) if f.name != "recipe")  # None: as the recipe says
DATA = "model and data"
RECIPE = "recipe (defaults depend on --recipe; every value is recorded)"
RUN = "output and execution"


def _r(name: str):
    return default(Recipe, name)


@dataclass(frozen=True, kw_only=True)
class TrainSettings(Params):
    """The parameters of ``landscape train`` that a sweep shares among its runs (all but the model, the
    recipe, the batch size, the seed and the folder)."""

    GROUPS = (DATA, RECIPE, RUN)
    num_classes: int | None = option(None, NUM_CLASSES_HELP, group=DATA)
    model_args: str = option(
        default(ModelConfig, "model_args"),
        "keyword arguments of a plug-in model factory, a JSON object: '{\"width\": 64}'",
        metavar="JSON",
        shown="none",
        group=DATA,
    )
    dataset: str = option(
        default(DataConfig, "dataset"), f"{', '.join(BUILTIN_DATA)} or package.module:factory", group=DATA
    )
    data_args: str = option(
        default(DataConfig, "data_args"),
        "keyword arguments of a plug-in data set factory, a JSON object: '{\"n\": 512}'",
        metavar="JSON",
        shown="none",
        group=DATA,
    )
    datapath: str | None = option(None, "folder of the CIFAR files (nothing is downloaded)", group=DATA)
    raw_data: bool = option(False, "images scaled to [0, 1] without normalization", group=DATA)
    no_test: bool = option(False, "do not evaluate the test set each epoch", group=DATA)
    epochs: int | None = option(None, "the budget in epochs", shown=_r("epochs"), group=RECIPE)
    steps: int | None = option(
        None,
        "the budget in optimizer steps instead (equal steps at every batch size: the comparison of equal "
        "training); milestones, --eval_every and --save_every then count steps",
        group=RECIPE,
    )
    lr: float | None = option(None, "learning rate; linear, lars, local: at base_batch", shown=_r("lr"), group=RECIPE)
    momentum: float | None = option(None, "SGD's momentum", shown=_r("momentum"), group=RECIPE)
    nesterov: bool | None = option(
        None,
        switches=(
            ("--nesterov", True, "Nesterov momentum (default: on, off for lars)"),
            ("--no-nesterov", False, "plain momentum"),
        ),
        group=RECIPE,
    )
    weight_decay: float | None = option(None, "L2 weight decay", shown=_r("weight_decay"), group=RECIPE)
    milestones: tuple[float, ...] | None = option(
        None,
        "fractions of the budget (epochs or steps) where the rate drops",
        nargs="*",
        shown=" ".join(map(str, _r("milestones"))),
        group=RECIPE,
    )
    gamma: float | None = option(None, "factor of each drop", shown=_r("gamma"), group=RECIPE)
    base_batch: int | None = option(None, "linear, lars, local: the batch of lr", shown=_r("base_batch"), group=RECIPE)
    warmup_epochs: float | None = option(
        None, "linear, lars: warm-up epochs", shown=f"{_r('warmup_epochs'):g}", group=RECIPE
    )
    trust: float | None = option(None, "lars: trust coefficient", shown=_r("trust"), group=RECIPE)
    theta: float | None = option(None, "adaptive: the norm test's theta", shown=_r("theta"), group=RECIPE)
    max_batch: int | None = option(None, "adaptive: largest batch", shown="the training set", group=RECIPE)
    sync_every: int | None = option(None, "local: steps between model averages", shown=_r("sync_every"), group=RECIPE)
    control_variates: bool | None = option(None, "local: SCAFFOLD's correction of local steps", group=RECIPE)
    micro_batch: int | None = option(
        None,
        "samples per forward pass, and BatchNorm's batch: give it to get the same run on any number of ranks",
        shown="batch_size / ranks",
        group=RUN,
    )
    augment: str = option(
        default(TrainRun, "augment"),
        "auto: random crop and flip for CIFAR, none otherwise",
        choices=AUGMENTS,
        group=RUN,
    )
    loss_name: str | None = option(
        None,
        "crossentropy, mse (one-hot targets for classes) or package.module:callable",
        shown="crossentropy for class labels, mse for float targets",
        group=RUN,
    )
    save_every: int | None = option(
        None, "epochs (or steps) between weight files", shown="at each evaluation", group=RUN
    )
    eval_every: int | None = option(
        None,
        "epochs (or steps) between evaluations of the train and test sets, a log row each",
        shown="every epoch, or every hundredth of --steps",
        group=RUN,
    )
    curvature_every: int | None = option(
        None,
        "every K steps (and at step 0) the top Hessian eigenvalue of the training loss, column lambda_max of "
        "log.csv (Lanczos, tol 1e-3, float32)",
        metavar="K",
        group=RUN,
    )
    curvature_points: int | None = option(
        None,
        "instead of --curvature_every: about N values of λmax evenly spaced over the budget, every max(1, "
        "floor(steps / N)) steps (an epoch is ceil(samples / batch_size) steps): the same resolution along "
        "training at every batch size",
        metavar="N",
        group=RUN,
    )
    stop_loss: float | None = option(
        None,
        "stop at the first evaluation whose training loss is at most LOSS: training to a minimum, the budget "
        "(--epochs or --steps) its cap; a run that spends its budget first is recorded as not at a minimum "
        "(run.json's minimum)",
        metavar="LOSS",
        group=RUN,
    )
    stop_error: float | None = option(
        None,
        "stop at the first evaluation whose training error is at most PERCENT %% (with --stop_loss: whichever "
        "comes first)",
        metavar="PERCENT",
        group=RUN,
    )
    save_at_loss: tuple[float, ...] = option(
        default(TrainRun, "save_at_loss"),
        "keep the weights where the training loss first falls to each LOSS, checked at every evaluation "
        "(loss_<LOSS>.pt, with the step, rate and its phase, in run.json's crossings): the networks a report "
        "compares at matched training loss",
        metavar="LOSS",
        shown="none",
        group=RUN,
    )
    target_every: int | None = option(
        None,
        "steps between checks of --stop_loss, --stop_error and --save_at_loss (the training loss alone, no row), "
        "and after every step once the loss is within 20 %% of a pending target",
        metavar="K",
        shown="10",
        group=RUN,
    )
    threads: int | None = option(None, "torch threads per rank (default: the node's cores / its ranks)", group=RUN)
    device: str = option(default(TrainRun, "device"), DEVICE_HELP, group=RUN)
    allow_shared_gpus: bool = option(False, SHARED_GPUS_HELP, group=RUN)
    progress_seconds: float | None = option(
        None,
        "seconds between epoch lines (the first and last always; log.csv has every epoch)",
        metavar="S",
        shown="every epoch in a terminal, 60 in a file",
        group=RUN,
    )
    quiet: bool = option(False, "no per-epoch lines", group=RUN)
    allow_nonfinite: bool = option(
        False,
        "go on when the training loss becomes NaN or infinite (default: stop with exit code 6, the last finite "
        "checkpoint kept)",
        group=RUN,
    )


@dataclass(frozen=True, kw_only=True)
class TrainParams(TrainSettings):
    """``landscape train``'s parameters."""

    COMMAND = "train"
    DESCRIPTION = (
        "Train a registry or plug-in model on one process or data-parallel over MPI ranks, with the recipes of "
        "the large-batch literature; checkpoints every epoch, resumable."
    )
    model: str = option(
        REQUIRED,
        "registry name (digits_mlp, digits_cnn, resnet20, resnet56, vgg9, ...) or package.module:factory",
        group=DATA,
    )
    recipe: str = option(
        "sgd",
        "sgd (the paper's), naive (same lr at any batch), linear (lr x batch/256, warm-up), lars, adaptive "
        "(growing batch), local (periodic averaging)",
        choices=NAMES,
        group=RECIPE,
    )
    batch_size: int | None = option(
        None,
        "global batch: samples per optimizer step over all ranks",
        shown=f"{_r('batch_size')}; adaptive: the first batch",
        group=RECIPE,
    )
    seed: int = option(default(TrainRun, "seed"), "initial weights, data order and augmentation", group=RUN)
    out: str = option(
        REQUIRED, "folder of the checkpoints (epoch_NNNN.pt, final.pt, latest.pt), log.csv and run.json", group=RUN
    )


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


def job_of(params, argv: tuple[str, ...] = ()) -> TrainJob:
    """The run the parameters (a ``TrainParams`` or a dict of those given) describe."""
    p = TrainParams.given(params)
    given = p.record()
    given["test"] = not p.no_test
    hyper = {k: given[k] for k in HYPER if given.get(k) is not None}
    if isinstance(hyper.get("milestones"), list):
        hyper["milestones"] = tuple(hyper["milestones"])
    return TrainJob(
        model=ModelConfig(**fields_of(given, ModelConfig)),
        data=DataConfig(**fields_of(given, DataConfig)),
        recipe=resolve(p.recipe, **hyper),
        run=TrainRun(
            **{**fields_of(given, TrainRun), "save_at_loss": tuple(p.save_at_loss)},
            argv=tuple(argv),
            settings=p.record(),
        ),
    )


def run(params: TrainParams, argv: tuple[str, ...] = ()) -> TrainResult:
    world = comm_module.world()
    job = agree(world, job_of, params, argv)
    done = run_training(job, world)
    return TrainResult(
        done.out, done.final, dataclasses.asdict(job.recipe), done.history, done.seconds, done.resumed_from
    )
