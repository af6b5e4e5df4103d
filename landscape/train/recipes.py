"""Training recipes: the rules that turn a global batch size into an optimizer and a learning rate.

A recipe is a name and a set of defaults; every hyper-parameter can be overridden, and the resolved
values (``Recipe``) are what a checkpoint records, so a run can always be repeated.

- ``sgd``: the CIFAR recipe of Li et al. (2018), after He et al. (2016): SGD, momentum 0.9 (Nesterov),
  weight decay 5e-4, learning rate 0.1, x0.1 at 50 % and 75 % of the epochs, 300 epochs.
- ``naive``: the same rules at any batch size: the learning rate does not follow the batch.  This is
  the large-batch baseline that fails (Keskar et al. 2017; Goyal et al. 2017, Fig. 2).
- ``linear``: the learning rate is ``lr * batch / base_batch`` (base 256), reached by a linear warm-up
  over the first ``warmup_epochs`` epochs (5) that starts at ``lr`` (Goyal et al. 2017, Sec. 2).
- ``lars``: layer-wise adaptive rate scaling (You, Gitman, Ginsburg 2017): each weight tensor's step
  is scaled by its trust ratio ``trust * |w| / (|g| + wd |w|)``; the learning rate follows the batch
  as in ``linear``, with the warm-up (``lars.py``).
- ``adaptive``: big-batch SGD (De, Yadav, Jacobs, Goldstein 2017): the batch grows whenever the
  norm test fails (``adaptive.py``); the learning rate stays at ``lr``.
- ``local``: periodic model averaging every ``sync_every`` local steps (Lin et al. 2020, "local
  SGD"), optionally with SCAFFOLD's control variates (Karimireddy et al. 2020) (``local.py``); the
  learning rate follows the batch as in ``linear``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from ..checks import is_whole
from ..errors import ConfigError

NAMES = ("sgd", "naive", "linear", "lars", "adaptive", "local")
SCALED = ("linear", "lars", "local")  # the learning rate follows the batch: lr * batch / base_batch


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Recipe:
    """The resolved hyper-parameters of a run: everything the optimizer and the schedule depend on.

    ``batch_size`` is the global batch: the samples of one optimizer step, over all ranks.  The budget
    is ``epochs`` or, when ``steps`` is given, that many optimizer steps (the last epoch cut short where
    the budget ends): equal steps at every batch size is the comparison of equal training, equal epochs
    is not.  Step decay multiplies the learning rate by ``gamma`` at each milestone, a fraction of the
    budget: at the start of epoch ``floor(m * epochs)``, or at step ``floor(m * steps)``.  Unused fields
    keep their defaults and are recorded all the same.
    """

    recipe: str = "sgd"
    epochs: int = 300
    steps: int | None = None  # a budget in optimizer steps instead of epochs
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 5e-4
    milestones: tuple[float, ...] = (0.5, 0.75)
    gamma: float = 0.1
    base_batch: int = 256  # linear, lars, local: the batch at which the learning rate is lr
    warmup_epochs: float = 5.0  # linear, lars: epochs of linear warm-up to the scaled rate
    trust: float = 0.001  # lars: trust coefficient (You et al. 2017's eta)
    theta: float = 0.8  # adaptive: the norm test's bound on the gradient's relative error
    max_batch: int | None = None  # adaptive: the largest batch (default: the training set)
    sync_every: int = 4  # local: local steps between model averages
    control_variates: bool = False  # local: SCAFFOLD's correction of the local steps

    def __post_init__(self):
        object.__setattr__(self, "milestones", tuple(self.milestones))
        checks = (
            ("recipe", self.recipe in NAMES, f"one of {', '.join(NAMES)}"),
            ("epochs", is_whole(self.epochs) and self.epochs >= 1, "a positive whole number"),
            ("steps", self.steps is None or (is_whole(self.steps) and self.steps >= 1), "a positive whole number"),
            ("batch_size", is_whole(self.batch_size) and self.batch_size >= 1, "a positive whole number"),
            ("lr", _number(self.lr) and self.lr > 0, "a positive number"),
            ("momentum", _number(self.momentum) and 0 <= self.momentum < 1, "a number with 0 <= momentum < 1"),
            (
                "nesterov",
                isinstance(self.nesterov, bool) and not (self.nesterov and self.momentum == 0),
                "True only with momentum > 0",
            ),
            ("weight_decay", _number(self.weight_decay) and self.weight_decay >= 0, "a number >= 0"),
            (
                "milestones",
                all(_number(m) and 0 < m < 1 for m in self.milestones)
                and list(self.milestones) == sorted(self.milestones),
                "increasing fractions of the epochs, each strictly between 0 and 1",
            ),
            ("gamma", _number(self.gamma) and 0 < self.gamma <= 1, "a number with 0 < gamma <= 1"),
            ("base_batch", is_whole(self.base_batch) and self.base_batch >= 1, "a positive whole number"),
            ("warmup_epochs", _number(self.warmup_epochs) and self.warmup_epochs >= 0, "a number of epochs >= 0"),
            ("trust", _number(self.trust) and self.trust > 0, "a positive number"),
            ("theta", _number(self.theta) and self.theta > 0, "a positive number"),
            (
                "max_batch",
                self.max_batch is None or (is_whole(self.max_batch) and self.max_batch >= self.batch_size),
                f"a whole number >= batch_size ({self.batch_size})",
            ),
            ("sync_every", is_whole(self.sync_every) and self.sync_every >= 1, "a positive whole number of steps"),
            ("control_variates", isinstance(self.control_variates, bool), "True or False"),
        )
        for name, ok, expected in checks:
            if not ok:
                raise ConfigError(name, getattr(self, name), expected, literal=name != "recipe")

    # -- the learning-rate schedule -------------------------------------------------------------------

    def milestone_epochs(self) -> list[int]:
        """0-based epochs at which the rate drops, ``floor(m * epochs)`` (at least 1): 150 and 225 of 300
        with the defaults, 2 and 3 of 5."""
        return [max(1, int(m * self.epochs)) for m in self.milestones]

    def milestone_steps(self) -> list[int]:
        """With a budget in steps: the steps after which the rate drops, ``floor(m * steps)`` (at least 1)."""
        return [max(1, int(m * self.steps)) for m in self.milestones] if self.steps else []

    def finished(self, epoch: int, step: int) -> bool:
        """Whether a run that has completed ``epoch`` epochs and ``step`` steps has spent its budget."""
        return step >= self.steps if self.steps else epoch >= self.epochs

    @property
    def budget(self) -> str:
        """The budget in words: ``300 epochs`` or ``2,000 steps``."""
        n, unit = (self.steps, "step") if self.steps else (self.epochs, "epoch")
        return f"{n:,} {unit}{'s' * (n != 1)}"

    @property
    def peak_lr(self) -> float:
        """The rate after warm-up: ``lr``, or ``lr * batch / base_batch`` for the scaled recipes."""
        return self.lr * self.batch_size / self.base_batch if self.recipe in SCALED else self.lr

    def lr_at(self, epoch: int, fraction: float = 0.0, step: int = 0) -> float:
        """The rate at ``fraction`` (0 <= f < 1) of epoch ``epoch`` (0-based), ``step`` steps done: warm-up,
        then step decay (at epochs, or at steps when the budget is in steps).

        The warm-up of the scaled recipes goes linearly, step by step, from ``min(lr, peak)`` at the
        start of training to the peak at ``warmup_epochs``; a batch at or below ``base_batch`` needs
        none (its peak is at most ``lr``).  A drop that falls inside the warm-up scales it too.
        """
        drops = (
            sum(step >= s for s in self.milestone_steps())
            if self.steps
            else sum(epoch >= e for e in self.milestone_epochs())
        )
        decayed = self.peak_lr * self.gamma**drops
        if self.recipe not in ("linear", "lars") or self.warmup_epochs == 0:
            return decayed
        progress = (epoch + fraction) / self.warmup_epochs
        if progress >= 1:
            return decayed
        start = min(self.lr, self.peak_lr) / self.peak_lr  # the warm-up's factor at the start
        return decayed * (start + (1 - start) * progress)

    def phase(self, epoch: int, fraction: float = 0.0, step: int = 0) -> str:
        """The learning-rate phase in force at the same point as ``lr_at``: ``warm-up`` while the scaled
        recipes' rate climbs, then ``rate 0`` until the first drop, ``rate 1`` after it, and so on.  Two
        networks are compared at matched training loss only within one phase: the rate in force sets how
        sharp a network gets (``report.matching``)."""
        drops = (
            sum(step >= s for s in self.milestone_steps())
            if self.steps
            else sum(epoch >= e for e in self.milestone_epochs())
        )
        warming = (
            self.recipe in ("linear", "lars")
            and self.warmup_epochs > 0
            and self.peak_lr > self.lr
            and (epoch + fraction) / self.warmup_epochs < 1
        )
        return "warm-up" if warming else f"rate {drops}"

    def record(self) -> dict:
        """Every hyper-parameter, as plain values (a checkpoint's metadata, a manifest row)."""
        out = asdict(self)
        out["milestones"] = list(self.milestones)
        return out


def stability_limit(lr: float, momentum: float = 0.0, nesterov: bool = False) -> float:
    """The largest curvature on which gradient descent at rate ``lr`` is stable: 2/η, 2(1 + β)/η with
    heavy-ball momentum β, (2 + 2β)/(η(1 + 2β)) with Nesterov's (the step sizes above which gradient
    descent on a quadratic of curvature λ diverges; Cohen et al. 2021 call λmax meeting it the edge of
    stability)."""
    if nesterov and momentum > 0:
        return (2 + 2 * momentum) / (lr * (1 + 2 * momentum))
    return (2 + 2 * momentum) / lr


# What each recipe changes from the ``sgd`` defaults (``Recipe``'s fields).
CHANGED_BY: dict[str, dict] = {
    "sgd": {},
    "naive": {},
    "linear": {},
    # You et al.'s update: heavy-ball momentum on the scaled step.  With trust 0.001 a tensor moves by
    # lr x 0.001 of its norm per step: their global rates are of order 1-30 (lr 0.1 would move each
    # tensor by 1e-4 of its norm and barely train: measured on digits, 59 % test accuracy after 15
    # epochs at batch 256, against 97 % with lr 10, as with linear).
    "lars": {"nesterov": False, "lr": 10.0},
    "adaptive": {},
    "local": {},
}

# Hyper-parameters that only some recipes use: giving one to another recipe is a mistake, not a no-op.
ONLY_FOR = {
    "base_batch": SCALED,
    "warmup_epochs": ("linear", "lars"),
    "trust": ("lars",),
    "theta": ("adaptive",),
    "max_batch": ("adaptive",),
    "sync_every": ("local",),
    "control_variates": ("local",),
}


def resolve(recipe: str = "sgd", **given) -> Recipe:
    """The recipe ``recipe`` with its defaults, overridden by every ``given`` value that is not None."""
    if recipe not in NAMES:
        raise ConfigError("recipe", recipe, f"one of {', '.join(NAMES)}")
    known = {f.name for f in fields(Recipe)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ConfigError(unknown[0], given[unknown[0]], f"one of the hyper-parameters {', '.join(sorted(known))}")
    given = {k: v for k, v in given.items() if v is not None}
    if "steps" in given and "epochs" in given:
        raise ConfigError(
            "epochs",
            given["epochs"],
            "no value with steps: the budget is in epochs or in steps, not both",
            literal=True,
        )
    for name, value in given.items():
        if name in ONLY_FOR and recipe not in ONLY_FOR[name]:
            raise ConfigError(
                name,
                value,
                f"no value with recipe={recipe}: it applies to recipe {' and '.join(ONLY_FOR[name])} only",
                literal=True,
            )
    return Recipe(recipe=recipe, **{**CHANGED_BY[recipe], **given})


__all__ = ["Recipe", "resolve", "stability_limit", "NAMES", "SCALED"]
