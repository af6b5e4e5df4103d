"""A training log's rows: when one is due (every ``eval_every`` of the budget's unit, a λmax every
``curvature_every`` steps), what it holds (the steps since the last row, the train and test sets
evaluated, the learning-rate phase, λmax), and the run's mean rate over them."""

from __future__ import annotations

import math

from .curvature import top_eigenvalue
from .loop import Trainer, evaluate
from .session import Session


def row_due(s: Session, step: int, epoch: int | None = None, paused: bool = True) -> bool:
    """Whether a log row is due after ``step`` steps (mid-epoch: ``paused``) or at the end of ``epoch``
    epochs: an evaluation every ``eval_every`` of the budget's unit, a λmax every ``curvature_every`` steps."""
    job = s.job
    if s.curvature_every and step % s.curvature_every == 0:
        return True
    if job.recipe.steps:
        return step % job.eval_every == 0
    return not paused and epoch is not None and epoch % job.eval_every == 0


def count(unlogged: dict, stats, logged: dict) -> None:
    """Add to ``unlogged`` the steps of ``stats`` (an epoch, or the part of one so far) not yet counted:
    those after ``logged``, the part of the epoch counted at an earlier pause."""
    part = {
        "steps": stats.steps - logged.get("steps", 0),
        "samples": stats.samples - logged.get("samples", 0),
        "loss_sum": stats.running_loss * stats.samples - logged.get("loss_sum", 0.0),
        "seconds": stats.seconds - logged.get("seconds", 0.0),
        "comm_seconds": stats.comm_seconds - logged.get("comm_seconds", 0.0),
        "comm_bytes": stats.comm_bytes - logged.get("comm_bytes", 0),
    }
    for key, value in part.items():
        unlogged[key] = unlogged.get(key, 0) + value
    if stats.batches:
        unlogged["batches"] = unlogged.get("batches", []) + list(stats.batches[len(logged.get("batches", [])) :])


def row(s: Session, trainer: Trainer, unlogged: dict, lr: float, batch: int) -> dict:
    """One log row: the steps since the last row (``unlogged``), the train and test sets evaluated, and
    λmax where it is due."""
    position = trainer.position
    train_loss, train_acc = evaluate(s.model, s.train, s.device, s.collective, s.loss)
    test_loss, test_acc = (
        evaluate(s.model, s.test, s.device, s.collective, s.loss) if s.test is not None else (math.nan, math.nan)
    )
    lambda_max = residual = math.nan
    if s.curvature_every and position.step % s.curvature_every == 0:
        lambda_max, residual = top_eigenvalue(trainer.module, s.train, s.loss, s.comm, s.device)
    seconds, samples = unlogged.get("seconds", 0.0), unlogged.get("samples", 0)
    row = {
        "epoch": position.epoch if not position.offset else position.epoch + 1,
        "step": position.step,
        "lr": lr,
        "phase": phase(s, trainer),
        "batch": batch,
        "running_loss": unlogged["loss_sum"] / samples if samples else math.nan,
        "train_loss": train_loss,
        "train_acc": train_acc,
        "test_loss": test_loss,
        "test_acc": test_acc,
        "seconds": seconds,
        "images_per_second": samples / seconds if seconds > 0 else 0.0,
        "comm_share": min(1.0, unlogged.get("comm_seconds", 0.0) / seconds) if seconds > 0 else 0.0,
        "comm_bytes": unlogged.get("comm_bytes", 0),
        "steps": unlogged.get("steps", 0),
        "lambda_max": lambda_max,
        "lambda_max_residual": residual,
    }
    if unlogged.get("batches"):
        row["batches"] = " ".join(map(str, unlogged["batches"]))
    return row


def phase(s: Session, trainer: Trainer) -> str:
    """The learning-rate phase of the last step taken (``Recipe.phase``): the one its weights come from."""
    position, n = trainer.position, len(s.train)
    last = max(0, position.step - 1)
    if position.offset:
        epoch, fraction = position.epoch, max(0, position.offset - position.batch) / n
    else:
        epoch, fraction = max(0, position.epoch - 1), max(0, n - position.batch) / n if position.step else 0.0
    return s.job.recipe.phase(epoch, fraction, last)


def last_row(history: list[dict], trainer: Trainer) -> dict:
    if history:
        return history[-1]
    return {
        "epoch": trainer.position.epoch,
        "step": trainer.position.step,
        **{k: math.nan for k in ("train_loss", "train_acc", "test_loss", "test_acc")},
    }


def mean_rate(history: list[dict]) -> float:
    seconds = sum(r["seconds"] for r in history)
    images = sum(r["images_per_second"] * r["seconds"] for r in history)
    return images / seconds if seconds > 0 else 0.0
