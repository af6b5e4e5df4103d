"""Training to a target: the stop rule, and the training losses at which the weights are kept.

A comparison of networks "at a minimum" needs each of them there: trained until the training loss is at
most ``stop_loss`` or the training error at most ``stop_error`` %, checked every ``target_every`` steps,
with the budget (``epochs`` or ``steps``) as the cap.  A run that spends its budget without meeting its
rule is *not at a minimum*, and its record says so (``minimum``): a report names it wherever its values
appear.

A comparison "at matched training loss" needs the weights of every run where its loss first fell to a
common level: ``save_at_loss`` lists such levels (the stop loss is one too).  The weights after each of
the steps since the last check are kept in memory (``Recent``), so when a check finds a level crossed the
first step at or below it is found among them, and where that step went more than 5 % below the level,
the point of its update where the loss is the level (``locate``): the kept network's training loss is
the level to within 5 %, whatever the rate.  It is written then (``loss_<level>.pt``) with where it was
taken: the step and the share of its update, the rate and its phase (``Recipe.phase``), the training
loss and error.  A report picks, per arm, the level every run crossed in its last phase
(``report.matching``).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

CROSSING_FIELDS = ("level", "file", "step", "fraction", "lr", "phase", "train_loss", "train_error")


def crossing_name(level: float) -> str:
    """The file of the weights saved where the training loss first fell to ``level``: ``loss_0.01.pt``."""
    return f"loss_{level:g}.pt"


def rule_text(stop_loss: float | None, stop_error: float | None) -> str:
    """The stop rule in words (``train loss <= 0.01``), or "" for none."""
    parts = []
    if stop_loss is not None:
        parts.append(f"train loss <= {stop_loss:g}")
    if stop_error is not None:
        parts.append(f"train error <= {stop_error:g} %")
    return " or ".join(parts)


def error_of(row: dict) -> float:
    """A log row's training error in % (its ``train_acc`` is in %)."""
    return 100.0 - float(row["train_acc"])


def levels_of(save_at_loss, stop_loss: float | None) -> tuple[float, ...]:
    """The levels whose weights are kept: ``save_at_loss`` and the stop loss (highest first)."""
    return tuple(sorted({*save_at_loss, *([stop_loss] if stop_loss is not None else [])}, reverse=True))


def new_crossings(levels, crossed: list[dict], row: dict) -> list[float]:
    """The levels of ``levels`` that ``row``'s training loss reaches for the first time (highest first)."""
    done = {c["level"] for c in crossed}
    loss = float(row["train_loss"])
    return sorted((v for v in levels if v not in done and math.isfinite(loss) and loss <= v), reverse=True)


def crossing(level: float, found: dict) -> dict:
    """The record of a crossing (``locate``'s result): the level, its file, the step (and the fraction of
    that step's update: 1 for the whole), its rate and phase, the training loss and error there."""
    return {
        "level": level,
        "file": crossing_name(level),
        "step": int(found["step"]),
        "fraction": float(found["fraction"]),
        "lr": float(found["lr"]),
        "phase": found["phase"],
        "train_loss": float(found["train_loss"]),
        "train_error": error_of(found),
    }


def reached(stop_loss: float | None, stop_error: float | None, row: dict) -> bool:
    """Whether ``row`` meets the stop rule (False without one)."""
    loss = float(row["train_loss"])
    if stop_loss is not None and math.isfinite(loss) and loss <= stop_loss:
        return True
    return stop_error is not None and error_of(row) <= stop_error


WITHIN = 0.05  # the kept weights' training loss lies within this share below the level


@dataclass
class Kept:
    """The weights after ``step`` steps, with the rate and phase of that step."""

    step: int
    lr: float
    phase: str
    weights: dict


class Recent:
    """The weights after each of the last ``size`` steps: where a check finds a level crossed, the first
    step at or below it is looked for among them (``locate``), so checks may be steps apart."""

    def __init__(self, size: int):
        self.kept: deque[Kept] = deque(maxlen=size)

    def push(self, step: int, lr: float, phase: str, state: dict) -> None:
        self.kept.append(Kept(step, lr, phase, {k: v.detach().clone() for k, v in state.items()}))

    def since(self, step: int) -> list[Kept]:
        """The kept weights after ``step`` steps and later, oldest first."""
        return [k for k in self.kept if k.step >= step]


def _between(a: dict, b: dict, t: float) -> dict:
    """The weights a fraction ``t`` of the way from ``a`` to ``b`` (integer entries, counters: ``b``'s)."""
    return {k: a[k] + t * (b[k] - a[k]) if b[k].is_floating_point() else b[k] for k in b}


def locate(level: float, kept: list[Kept], loss_at, within: float = WITHIN, halvings: int = 30) -> dict:
    """Where the training path first reaches ``level``: the first of ``kept`` (consecutive steps, oldest
    first, the last at or below the level; the first, where it is the state of the last check, above it)
    whose loss (``loss_at(weights) -> (loss, accuracy %)``) is at most ``level``; when that step went more
    than ``within`` below the level, the point of its update where the loss is the level to within
    ``within``, by bisection along the update (the path of SGD is the polyline of its iterates: a point
    of it is a network trained by the same process, stopped part of the way through its last step).
    Returns ``{"step", "fraction", "lr", "phase", "weights", "train_loss", "train_acc"}``."""
    before = None
    for item in kept:
        loss, acc = loss_at(item.weights)
        if loss <= level:
            break
        before = item
    found = {"step": item.step, "fraction": 1.0, "lr": item.lr, "phase": item.phase, "weights": item.weights}
    if before is None or loss >= (1 - within) * level:
        return {**found, "train_loss": loss, "train_acc": acc}
    low, high = 0.0, 1.0  # loss above the level at low, more than `within` below it at high
    best = (1.0, item.weights, loss, acc)
    for _ in range(halvings):
        t = (low + high) / 2
        weights = _between(before.weights, item.weights, t)
        loss_t, acc_t = loss_at(weights)
        if loss_t > level:
            low = t
        else:
            best = (t, weights, loss_t, acc_t)
            if loss_t >= (1 - within) * level:
                break
            high = t
    t, weights, loss, acc = best
    return {**found, "fraction": t, "weights": weights, "train_loss": loss, "train_acc": acc}


def minimum(stop_loss: float | None, stop_error: float | None, row: dict, stopped: bool) -> dict | None:
    """``run.json``'s record of the stop rule at the run's last row: whether it was met (``reached``), and
    where; None for a run without a rule."""
    rule = rule_text(stop_loss, stop_error)
    if not rule:
        return None
    return {
        "rule": rule,
        "reached": stopped,
        "step": int(row["step"]),
        "train_loss": float(row["train_loss"]),
        "train_error": error_of(row),
    }


def not_at_minimum(record: dict) -> str | None:
    """Why a finished run is not at a minimum (its budget ran out before its stop rule was met), or None."""
    found = record.get("minimum")
    if not record.get("done") or not found or found.get("reached"):
        return None
    return (
        f"not at a minimum: its budget ended at step {found['step']} with train loss {found['train_loss']:.4g} "
        f"and error {found['train_error']:.2f} %, before its rule ({found['rule']})"
    )


class Watch:
    """A run's targets as it trains: the stop rule and the levels whose weights are kept (``run``: its
    ``TrainRun``; ``recipe``: for the phase of each step; ``every``: steps between checks).  It keeps the
    weights after each step while a target is pending (``remember``), says when a check is due (``due``),
    checks the training loss alone (``pending_after``), and finds where a level was first reached
    (``crossings``), evaluating kept weights through ``loss_at(weights) -> (loss, accuracy %)``."""

    def __init__(self, run, recipe, every: int, crossed=(), reached: bool = False, step: int = 0):
        self.run, self.recipe, self.every = run, recipe, every
        self.levels = levels_of(run.save_at_loss, run.stop_loss)
        self.crossed, self.reached = list(crossed), reached
        self.last_check, self.recent = step, Recent(every + 1)

    def watching(self) -> bool:
        """Whether a target is pending: a level not yet crossed, or a stop rule."""
        return self.run.stop_loss is not None or self.run.stop_error is not None or len(self.crossed) < len(self.levels)

    def due(self, step: int) -> bool:
        return self.watching() and step - self.last_check >= self.every

    def remember(self, step: int, lr: float, epoch: int, fraction: float, state: dict) -> None:
        """After each step while a target is pending: its weights, rate and phase."""
        if self.watching():
            self.recent.push(step, lr, self.recipe.phase(epoch, fraction, max(0, step - 1)), state)

    def met(self, row: dict) -> bool:
        """Whether ``row`` (a log row, or just its training loss and accuracy) meets the stop rule."""
        return reached(self.run.stop_loss, self.run.stop_error, row)

    def pending_after(self, step: int, loss: float, acc: float) -> bool:
        """A check (no row due) of the training loss alone: True when it crossed no level and met no rule
        (nothing to write), False when a row is to be made."""
        probe = {"train_loss": loss, "train_acc": acc}
        if self.met(probe) or new_crossings(self.levels, self.crossed, probe):
            return False
        self.last_check = step
        return True

    def crossings(self, row: dict, step: int, loss_at) -> list[tuple[dict, dict]]:
        """The levels ``row`` (of the current weights, after ``step`` steps) reaches for the first time,
        each with where the path first reached it among the steps since the last check: (record, weights);
        every one is added to ``crossed``."""
        found = []
        kept = self.recent.since(self.last_check)
        for level in new_crossings(self.levels, self.crossed, row):
            where = locate(level, kept, loss_at)
            found.append((crossing(level, where), where["weights"]))
        self.crossed += [record for record, _ in found]
        self.last_check = step
        return found

    def minimum(self, row: dict) -> dict | None:
        return minimum(self.run.stop_loss, self.run.stop_error, row, self.reached)


__all__ = [
    "Watch",
    "WITHIN",
    "Kept",
    "Recent",
    "locate",
    "CROSSING_FIELDS",
    "crossing_name",
    "levels_of",
    "rule_text",
    "new_crossings",
    "crossing",
    "reached",
    "minimum",
    "not_at_minimum",
]
