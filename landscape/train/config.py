"""What a training run is: the model, the data, the recipe and how the run goes, each part validated
where it is built; and what its weights depend on (``TrainJob.identity``), which a resume must match."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import checks
from ..data import DataConfig
from ..errors import ConfigError
from ..io import paths
from ..losses import Loss
from ..models import ModelConfig
from ..parallel import devices
from ..plugins import canonical
from .recipes import Recipe

AUGMENTS = ("auto", "none", "standard")
TARGET_EVERY = 10  # steps between checks of a run's targets (train.targets), unless given
ADAPTIVE_MICRO_BATCHES = 4  # adaptive's default micro-batches per step (its variance estimate needs >= 2)
AUGMENTABLE = ("cifar10", "cifar100")


@dataclass(frozen=True)
class TrainRun:
    """Where a run writes and how it runs (nothing here changes the trained weights but ``micro_batch``,
    ``seed``, ``augment`` and ``loss_name``).  ``eval_every`` and ``save_every`` count in the budget's
    unit (epochs, or steps when the recipe's budget is in steps); ``curvature_every`` counts steps."""

    out: str = "run"
    micro_batch: int | None = None  # samples per forward pass and BatchNorm batch; default batch / ranks
    seed: int = 0  # initial weights, data order, augmentation
    augment: str = "auto"  # auto: standard for CIFAR, none for the rest
    save_every: int | None = None  # epochs (or steps) between weight files (default: at each evaluation)
    eval_every: int | None = None  # epochs (or steps) between evaluations, a log row each (default: every
    # epoch, or every hundredth of a budget in steps)
    curvature_every: int | None = None  # steps between λmax of the training loss in the log (and at step 0)
    curvature_points: int | None = None  # instead: about this many λmax values, evenly spaced over the budget
    stop_loss: float | None = None  # stop at the first evaluation with train loss <= this (train.targets)
    stop_error: float | None = None  # ... or with train error <= this, in %; the budget is then the cap
    save_at_loss: tuple[float, ...] = ()  # keep the weights where train loss first falls to each level
    target_every: int | None = None  # steps between checks of those targets (default: TARGET_EVERY)
    loss_name: str | None = None  # crossentropy, mse or package.module:callable (default: by the data's targets)
    threads: int | None = None
    device: str = "auto"
    allow_shared_gpus: bool = False
    quiet: bool = False
    allow_nonfinite: bool = False  # go on when the training loss is NaN or infinite (else: stop, exit 6)
    progress_seconds: float | None = None  # between epoch lines; default every epoch in a terminal, 60 s in a file
    argv: tuple[str, ...] = ()
    settings: dict = field(default_factory=dict, compare=False)  # the command's parameters, for run.json

    def __post_init__(self):
        object.__setattr__(self, "out", paths.config_path(self.out, "out"))
        if self.progress_seconds is not None:
            checks.number(
                "progress_seconds", self.progress_seconds, least=0, expected="a finite number of seconds >= 0"
            )
        if not self.out:
            raise ConfigError("out", self.out, "a folder for the checkpoints")
        if self.micro_batch is not None:
            checks.whole("micro_batch", self.micro_batch, expected="a positive whole number of samples")
        checks.whole("seed", self.seed, least=0, most=checks.SEED_MAX)
        if self.augment not in AUGMENTS:
            raise ConfigError("augment", self.augment, f"one of {', '.join(AUGMENTS)}")
        for name in ("save_every", "eval_every"):
            if getattr(self, name) is not None:
                checks.whole(name, getattr(self, name), expected="a positive whole number of epochs (or steps)")
        if self.curvature_every is not None:
            checks.whole("curvature_every", self.curvature_every, expected="a positive whole number of steps")
        if self.curvature_points is not None:
            checks.whole("curvature_points", self.curvature_points, expected="a positive whole number of λmax values")
            if self.curvature_every is not None:
                raise ConfigError(
                    "curvature_points", self.curvature_points, "no value with curvature_every (one or the other)"
                )
        if self.loss_name is not None:
            Loss(self.loss_name)  # its own check: a name, or a plug-in that loads
        devices.check_spec(self.device)
        if self.stop_loss is not None:
            checks.number("stop_loss", self.stop_loss, above=0, expected="a positive, finite training loss")
        if self.stop_error is not None:
            checks.number(
                "stop_error", self.stop_error, least=0, below=100, expected="a training error in %, from 0 to below 100"
            )
        levels = self.save_at_loss
        if isinstance(levels, (int, float)) and not isinstance(levels, bool):
            levels = (levels,)
        if not isinstance(levels, (tuple, list)):
            raise ConfigError("save_at_loss", levels, "a list of positive training losses", literal=True)
        for level in levels:
            checks.number("save_at_loss", level, above=0, expected="positive, finite training losses")
        object.__setattr__(self, "save_at_loss", tuple(sorted({float(v) for v in levels}, reverse=True)))
        if self.target_every is not None:
            checks.whole("target_every", self.target_every, expected="a positive whole number of steps")


@dataclass(frozen=True)
class TrainJob:
    """Everything a training run depends on, one validated part per concern."""

    model: ModelConfig
    data: DataConfig
    recipe: Recipe
    run: TrainRun = field(default_factory=TrainRun)

    def __post_init__(self):
        if self.model.model_file is not None:
            raise ConfigError(
                "model_file",
                self.model.model_file,
                "nothing: training starts from weights drawn with seed (resume by rerunning the same command)",
            )
        if self.run.curvature_points is not None and self.recipe.recipe == "adaptive" and not self.recipe.steps:
            raise ConfigError(
                "curvature_points",
                self.run.curvature_points,
                "a budget in --steps with recipe adaptive (its batch grows, so its epochs' steps are not known "
                "in advance), or --curvature_every",
            )
        wants = self.run.augment
        if wants == "standard" and self.data.dataset not in AUGMENTABLE:
            raise ConfigError(
                "augment",
                wants,
                f"none or auto for dataset={self.data.dataset} (the standard "
                "augmentation crops and flips CIFAR's 32x32 images)",
            )

    def curvature_interval(self, train_size: int) -> int | None:
        """Steps between λmax values: ``curvature_every``, or the budget's steps / ``curvature_points``
        (at least 1; an epoch is ceil(train_size / batch_size) steps)."""
        run, r = self.run, self.recipe
        if run.curvature_points is None:
            return run.curvature_every
        total = r.steps or r.epochs * math.ceil(train_size / r.batch_size)
        return max(1, total // run.curvature_points)

    @property
    def augmented(self) -> bool:
        return self.run.augment == "standard" or (self.run.augment == "auto" and self.data.dataset in AUGMENTABLE)

    def micro_batch(self, ranks: int) -> int:
        """Samples per forward pass: as given, else one micro-batch per rank per step (``adaptive``: at
        least ``ADAPTIVE_MICRO_BATCHES``, its variance estimate needs several)."""
        parts = max(ranks, ADAPTIVE_MICRO_BATCHES) if self.recipe.recipe == "adaptive" else ranks
        return self.run.micro_batch or max(1, math.ceil(self.recipe.batch_size / parts))

    def check_sizes(self, train_size: int, ranks: int) -> None:
        """Batch sizes against the training set and each other (raised before anything is written)."""
        r, micro = self.recipe, self.micro_batch(ranks)
        if r.batch_size > train_size:
            raise ConfigError("batch_size", r.batch_size, f"at most the {train_size} training samples", literal=True)
        if r.max_batch is not None and r.max_batch > train_size:
            raise ConfigError("max_batch", r.max_batch, f"at most the {train_size} training samples", literal=True)
        if micro > r.batch_size:
            raise ConfigError("micro_batch", micro, f"at most batch_size ({r.batch_size})", literal=True)
        if r.recipe == "adaptive" and 2 * micro > r.batch_size:
            raise ConfigError(
                "micro_batch",
                micro,
                f"at most batch_size / 2 ({r.batch_size // 2}) with recipe "
                "adaptive: its norm test estimates the gradient's variance from at least two "
                "micro-batches per step",
                literal=True,
            )

    @property
    def eval_every(self) -> int:
        """Epochs (or steps) between evaluations: as given, else 1 epoch or a hundredth of the steps."""
        if self.run.eval_every is not None:
            return self.run.eval_every
        return max(1, self.recipe.steps // 100) if self.recipe.steps else 1

    @property
    def target_every(self) -> int:
        """Steps between checks of the stop rule and the save_at_loss levels: as given, else ``TARGET_EVERY``."""
        return self.run.target_every or TARGET_EVERY

    @property
    def save_every(self) -> int:
        """Epochs (or steps) between weight files: as given, else at every evaluation."""
        return self.run.save_every if self.run.save_every is not None else self.eval_every

    def loss(self, classification: bool) -> Loss:
        """The training loss: as given, else cross-entropy for class labels and MSE for float targets."""
        return Loss(self.run.loss_name or ("crossentropy" if classification else "mse"))

    def identity(self, ranks: int, train_size: int, loss: Loss) -> dict:
        """What the weights depend on: a resume must find the same (the number of ranks only matters
        to ``local``, whose ranks hold their own optimizer and control variates)."""
        out = {
            "loss_name": loss.name,
            "model": canonical(self.model.model),  # a plug-in by its file's absolute path: found from anywhere
            "num_classes": self.model.classes(self.data.dataset),
            "dataset": canonical(self.data.dataset),
            "raw_data": self.data.raw_data,
            "train_samples": train_size,
            "micro_batch": self.micro_batch(ranks),
            "seed": self.run.seed,
            "augment": "standard" if self.augmented else "none",
            **self.recipe.record(),
        }
        if self.recipe.recipe == "local":
            out["ranks"] = ranks
        if self.run.stop_loss is not None or self.run.stop_error is not None:  # only then: as identities were
            out.update(stop_loss=self.run.stop_loss, stop_error=self.run.stop_error)
        for key, args in (("model_args", self.model.model_args), ("data_args", self.data.data_args)):
            if args:  # only then: runs without them keep the identity they always had
                out[key] = args
        return out
