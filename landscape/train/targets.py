"""Training to a target: the stop rule, and the training losses at which the weights are kept.

A comparison of networks "at a minimum" needs each of them there: trained until the training loss is at
most ``stop_loss`` or the training error at most ``stop_error`` %, checked at every evaluation, with the
budget (``epochs`` or ``steps``) as the cap.  A run that spends its budget without meeting its rule is
*not at a minimum*, and its record says so (``minimum``): a report names it wherever its values appear.

A comparison "at matched training loss" needs the weights of every run where its loss first crossed the
common level: ``save_at_loss`` lists such levels, and at the first evaluation whose training loss is at or
below a level the weights are written then (``loss_<level>.pt``) with where they were taken: the step, the
epoch, the rate and its phase (``Recipe.phase``), the training loss and error.  A report picks, per arm,
the level every run crossed in its last phase (``report.matching``).  The measured loss lies within one
evaluation's progress below the level, so the evaluation cadence sets how close it is.
"""

from __future__ import annotations

import math

CROSSING_FIELDS = ("level", "file", "step", "epoch", "lr", "phase", "train_loss", "train_error")


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


def new_crossings(levels, crossed: list[dict], row: dict) -> list[float]:
    """The levels of ``levels`` that ``row``'s training loss reaches for the first time (highest first)."""
    done = {c["level"] for c in crossed}
    loss = float(row["train_loss"])
    return sorted((v for v in levels if v not in done and math.isfinite(loss) and loss <= v), reverse=True)


def crossing(level: float, row: dict) -> dict:
    """The record of a crossing at ``row`` (a log row with its ``phase``)."""
    return {
        "level": level,
        "file": crossing_name(level),
        "step": int(row["step"]),
        "epoch": int(row["epoch"]),
        "lr": float(row["lr"]),
        "phase": row["phase"],
        "train_loss": float(row["train_loss"]),
        "train_error": error_of(row),
    }


def reached(stop_loss: float | None, stop_error: float | None, row: dict) -> bool:
    """Whether ``row`` meets the stop rule (False without one)."""
    loss = float(row["train_loss"])
    if stop_loss is not None and math.isfinite(loss) and loss <= stop_loss:
        return True
    return stop_error is not None and error_of(row) <= stop_error


NEAR = 1.2  # a loss within this factor of a pending target is checked after every step


def next_check(step: int, loss: float, levels, crossed: list[dict], stop_loss: float | None, every: int) -> int:
    """The step after which the targets are checked next: ``every`` steps on, or the next step when
    ``loss`` is within ``NEAR`` of a pending level or of the stop loss — so the weights kept at a crossing
    are those of the first step at or below it, not of a check some steps later."""
    done = {c["level"] for c in crossed}
    goals = [v for v in levels if v not in done] + ([stop_loss] if stop_loss is not None else [])
    near = math.isfinite(loss) and any(loss <= NEAR * g for g in goals)
    return step + (1 if near else every)


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


__all__ = [
    "NEAR",
    "next_check",
    "CROSSING_FIELDS",
    "crossing_name",
    "rule_text",
    "new_crossings",
    "crossing",
    "reached",
    "minimum",
    "not_at_minimum",
]
