"""A training run from start to end: configuration, then named steps (device, data, model, ranks,
resume, epochs, checkpoints).

The only module of ``train/`` that composes the pieces.  It talks to other ranks through the MPI
communicator of ``parallel.comm`` (agreement, stop signals, gathering states for a checkpoint) and
hands the trainer a ``parallel.distributed`` collective for gradients; rank 0 writes every file.

A training loss that becomes NaN or infinite stops the run (``errors.Diverged``, exit 6) unless
``allow_nonfinite``: every rank learns of it at the same step (the stop poll after each step carries it,
and the loss sums of an epoch or a pause are added over ranks), no checkpoint of non-finite weights is
written, and ``run.json`` records where it happened (``diverged``: epoch, step, learning rate, loss).
"""

from __future__ import annotations

import math
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import replace

import numpy as np
import torch

from ..data import Samples, check_fits, load_named, made_once
from ..data.cifar import black
from ..errors import InputError, LandscapeError, MismatchError, Stopped, describe, param
from ..io.atomic import remove_stale_partials_in
from ..io.lock import SurfaceLock
from ..losses import Loss, check_labels
from ..models import build_model
from ..parallel import devices, distributed
from ..parallel import stop as stop_signals
from ..parallel.comm import agree, same_everywhere, threads_per_rank
from . import checkpoints as files
from . import records, rows, targets
from .config import TrainJob
from .loop import Trainer, evaluate
from .session import Result, Session


def _data(job: TrainJob, device: str, ranks: int, made=None):
    """The training (and test) samples: ``made`` when rank 0 made them for everyone (``made_once``)."""
    data = (
        made
        if made is not None
        else load_named(job.data.dataset, job.data.datapath, job.data.raw_data, job.data.data_args)
    )
    train = data.train
    if len(train) == 0:
        raise InputError(f"dataset {job.data.dataset}: the training set is empty")
    job.check_sizes(len(train), ranks)
    fill = None
    if job.augmented:
        fill = black(job.data.dataset, job.data.raw_data)
    if device != "cpu":  # the whole set on the GPU once: batches and augmentation are indexed there
        train = Samples(train.inputs.to(device), train.targets.to(device))
    test = data.test if job.data.test else None
    return train, test, fill


def _model(job: TrainJob, device: str, train: Samples, loss: Loss) -> torch.nn.Module:
    """The initial network, checked against two samples of the data (its input shape, its classes)
    before any folder is made: a model that does not fit its data is one line, not a traceback."""
    torch.manual_seed(job.run.seed)  # the same initial weights on every rank, for every batch size
    model = build_model(job.model.model, job.model.classes(job.data.dataset), job.model.model_args).to(device)
    if not any(p.requires_grad for p in model.parameters()):
        raise InputError(
            f"model {job.model.model} has no trainable parameters (none, or all with requires_grad=False): "
            "expected a network with weights to train"
        )
    output = check_fits(model, train, job.model.model, job.data.dataset)
    try:
        if train.is_classification:
            check_labels(loss.name, output, int(train.targets.min()), int(train.targets.max()))
        loss.total(output, train.targets[:2])
    except LandscapeError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code
        raise InputError(
            f"model {job.model.model} cannot be trained on dataset {job.data.dataset} ({describe(exc)[:200]})",
        ) from None
    return model


def _line(row: dict, recipe, test_set: bool) -> str:
    """The epoch line; its columns are the same whatever the values (a diverged run shows nan)."""
    test = f"  test {row['test_loss']:.4f} / {row['test_acc']:.2f} %" if test_set else ""
    where = f"step {row['step']}/{recipe.steps}" if recipe.steps else f"epoch {row['epoch']}/{recipe.epochs}"
    sharp = f"  λmax {row['lambda_max']:.4g}" if not math.isnan(row.get("lambda_max", math.nan)) else ""
    return (
        f"{where}  loss {row['running_loss']:.4f}  train {row['train_loss']:.4f} / "
        f"{row['train_acc']:.2f} %{test}  lr {row['lr']:.4g}  batch {row['batch']}  "
        f"{row['images_per_second']:,.0f} img/s  comm {100 * row['comm_share']:.0f} %  ({row['seconds']:.1f} s)" + sharp
    )


def run_training(job: TrainJob, comm, say=print) -> Result:
    """Train as ``job`` says on the ranks of ``comm``, resuming what ``job.run.out`` holds."""
    say = say if (comm.rank == 0 and not job.run.quiet) else (lambda *_: None)
    agree(comm, same_everywhere, comm, "the training", replace(job, run=replace(job.run, argv=())))
    threads = agree(comm, threads_per_rank, comm, job.run.threads)
    torch.set_num_threads(threads.count)
    device = agree(comm, devices.for_rank, job.run.device, comm, job.run.allow_shared_gpus)
    out = job.run.out
    made = made_once(comm, job.data)  # a plug-in's generated data set: made once, sent to every rank
    train, test, fill = agree(comm, _data, job, device, comm.size, made)
    loss = job.loss(train.is_classification)
    model = agree(comm, _model, job, device, train, loss)
    identity = job.identity(comm.size, len(train), loss)
    agree(comm, _make_folder, out, comm.rank)
    with (
        SurfaceLock(out, " ".join(job.run.argv), what="training folder", field="out", doing="being trained")
        if comm.rank == 0
        else nullcontext()
    ):
        agree(comm, lambda: remove_stale_partials_in(out) if comm.rank == 0 else None)  # of killed runs
        stored = agree(comm, files.load_latest, out)
        if stored is not None:
            agree(comm, _same_run, job, stored, identity, comm.size)
        collective = agree(comm, distributed.collective, comm, device)
        session = Session(job, comm, say, model, collective, train, test, fill, loss, identity, threads.count, device)
        session.curvature_every = job.curvature_interval(len(train))
        try:
            return _epochs(session, stored)
        finally:
            collective.close()


def _make_folder(out: str, rank: int) -> None:
    if os.path.exists(out) and not os.path.isdir(out):
        raise InputError(f"{param('out')}={out} is a file: expected a folder for the run's checkpoints")
    if rank == 0:
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"{param('out')}={out} cannot be made ({exc.strerror}): expected a folder this job may write"
            ) from None


def _same_run(job: TrainJob, stored: dict, identity: dict, ranks: int) -> None:
    """A resume must continue the same run; a default micro-batch that moved with the number of ranks
    is named as such."""
    before = stored.get("meta", {}).get("identity", {})
    if job.run.micro_batch is None and before.get("micro_batch") not in (None, identity["micro_batch"]):
        raise MismatchError(
            f"{job.run.out} holds a run started on {stored['meta'].get('ranks')} rank(s) with "
            f"micro-batches of {before['micro_batch']} (the default, batch_size / ranks); on "
            f"{ranks} rank(s) the default is {identity['micro_batch']}: give {param('micro_batch')} "
            f"{before['micro_batch']} to resume it here",
        )
    files.check_same_run(stored, identity, job.run.out)


def _epochs(session: Session, stored: dict | None) -> Result:
    """Train to the end of the budget: whole epochs, paused after a step where an evaluation or a λmax
    is due; a log row at each evaluation, a stop signal honoured after any step or epoch."""
    s = session
    job, comm, say, model, train, device = s.job, s.comm, s.say, s.model, s.train, s.device
    recipe, out = job.recipe, job.run.out
    micro = job.micro_batch(comm.size)
    trainer = Trainer(model, recipe, train, micro, job.run.seed, s.collective, device, s.fill, s.loss)
    history: list[dict] = []
    resumed_from = None
    crossed, reached = [], False  # the levels crossed and whether the rule was met (a resume: its own)
    if stored is not None:
        model.load_state_dict({k: v.to(device) for k, v in stored["state_dict"].items()})
        ranks = stored["ranks"]
        trainer.restore(ranks[comm.rank] if len(ranks) == comm.size else ranks[0])
        history = list(stored["meta"].get("history", []))
        s.diverged = stored["meta"].get("diverged")  # trained on past a divergence (allow_nonfinite)
        crossed, reached = list(stored["meta"].get("crossings", [])), bool(stored["meta"].get("reached", False))
        resumed_from = trainer.position.epoch
        if stored["meta"].get("ranks") != comm.size:
            say(
                f"note: this run started on {stored['meta'].get('ranks')} ranks and continues on {comm.size}: "
                "values may differ from an uninterrupted run in the last bits"
            )
    watch = s.watch = targets.Watch(job.run, recipe, job.target_every, crossed, reached, trainer.position.step)
    if recipe.finished(trainer.position.epoch, trainer.position.step) or reached:
        why = f"its rule ({targets.rule_text(job.run.stop_loss, job.run.stop_error)}) met" if reached else recipe.budget
        say(f"{out}: already trained ({why}); nothing to do")
        return Result(out, os.path.join(out, files.FINAL), history, 0.0, resumed_from)
    if resumed_from is not None:
        where = f" (step {trainer.position.step}, sample {trainer.position.offset})" if trainer.position.offset else ""
        say(f"resuming {out} at epoch {trainer.position.epoch + 1}{where}")
    else:
        say(
            f"training {job.model.model} on {job.data.dataset} ({len(train)} samples): recipe {recipe.recipe}, "
            f"batch {recipe.batch_size} ({micro} per pass), {recipe.budget}, loss {s.loss.name}, {comm.size} "
            f"rank(s) x {s.threads} thread(s) on {device}"
            + (f"; until {rule}" if (rule := targets.rule_text(job.run.stop_loss, job.run.stop_error)) else "")
        )
    every = job.run.progress_seconds
    if every is None:
        every = 0.0 if sys.stdout.isatty() else 60.0
    last_line = -math.inf
    signals = stop_signals.installed()
    allow = job.run.allow_nonfinite
    diverging = False  # the last poll found a non-finite training loss on some rank

    def stop_requested() -> bool:
        """One collective after a step: a stop signal on any rank, or (unless allowed) a non-finite loss."""
        nonlocal diverging
        flags = np.array(
            [signals is not None and bool(signals.received), trainer.nonfinite is not None and not allow], np.float64
        )
        comm.sum_(flags)
        diverging = bool(flags[1] > 0)
        return bool(flags.any())

    def check(loss: float) -> None:
        """``loss`` is the same on every rank (a sum over ranks, or an evaluation)."""
        if (diverging or not math.isfinite(loss)) and (not allow or s.diverged is None):
            records.diverge(s, trainer, history, loss)

    trainer.stop_requested = stop_requested
    trainer.pause_after = lambda step: _due(s, step)
    trainer.after_step = lambda step, lr, epoch, fraction: watch.remember(
        step, lr, epoch, fraction, trainer.module.state_dict()
    )
    watch.remember(trainer.position.step, math.nan, trainer.position.epoch, 0.0, model.state_dict())  # the start
    started = time.perf_counter()
    first_row = True
    unlogged = dict(stored["meta"].get("unlogged") or {}) if stored is not None else {}  # steps since the last row
    if not history and s.curvature_every:  # λmax at step 0, before any step
        history.append(rows.row(s, trainer, {}, recipe.lr_at(0, 0.0, 0), trainer.position.batch))
    while not (recipe.finished(trainer.position.epoch, trainer.position.step) or watch.reached):
        epoch = trainer.position.epoch
        # the part of this epoch already counted (after a pause; a stop's part is counted when it goes on)
        logged = trainer.position.partial.get("logged") if trainer.position.offset else None
        stats = trainer.run_epoch(epoch)
        paused = stats is None
        check(trainer.position.partial.get("loss_sum", 0.0) if paused else stats.running_loss)
        if paused and logged is not None:
            trainer.position.partial["logged"] = logged
        if paused and not _due(s, trainer.position.step):  # a stop signal: save where we are, then leave together
            records.save(s, trainer, history, unlogged, weights=False)
            raise Stopped(
                f"stopped by {signals.received if signals else 'a signal'} at epoch {epoch + 1}, "
                f"step {trainer.position.step}; rerun the same command to resume"
            )
        stats = trainer.partial_stats() if paused else stats
        rows.count(unlogged, stats, logged or {})
        if paused:
            trainer.position.partial["logged"] = {k: v for k, v in trainer.position.partial.items() if k != "logged"}
        finished = recipe.finished(trainer.position.epoch, trainer.position.step)
        wrote = False
        row_due = finished or rows.row_due(s, trainer.position.step, trainer.position.epoch, paused)
        if not row_due and watch.due(trainer.position.step):
            loss_now, acc_now = evaluate(s.model, s.train, s.device, s.collective, s.loss)
            if watch.pending_after(trainer.position.step, loss_now, acc_now):  # nothing crossed: no row
                continue
            row_due = True  # a level crossed or the rule met: a row, and the weights
        if row_due:
            row = rows.row(s, trainer, unlogged, stats.lr, stats.batch)
            check(row["train_loss"])  # the weights after a step whose own loss was still finite
            history.append(row)
            unlogged = {}
            crossings = _crossings(s, trainer, row)
            if watch.met(row):
                watch.reached = finished = True
                _end_at_stop_loss(s, trainer, row, crossings)
            if finished or first_row or time.perf_counter() - last_line >= every:  # batch logs stay short
                say(_line(history[-1], recipe, s.test is not None))
                last_line, first_row = time.perf_counter(), False
            count = trainer.position.step if recipe.steps else trainer.position.epoch
            saved = finished or (count % job.save_every == 0 and (recipe.steps or not paused))
            records.save(s, trainer, history, unlogged, weights=saved, final=finished, crossings=crossings)
            wrote = True
        if not finished and stop_requested():  # between steps or epochs: also when an epoch is one step
            check(0.0)
            if not wrote:
                records.save(s, trainer, history, unlogged, weights=False)
            raise Stopped(
                f"stopped by {signals.received if signals else 'a signal'} after epoch {trainer.position.epoch}"
                f", step {trainer.position.step}; rerun the same command to resume"
            )
    seconds = time.perf_counter() - started
    if comm.rank == 0:
        ended = f"its rule met at step {trainer.position.step}" if watch.reached else recipe.budget
        say(
            f"wrote {os.path.join(out, files.FINAL)} ({ended}; this run {seconds:.1f} s "
            "with evaluation and checkpoints)"
        )
        late = targets.not_at_minimum({"done": True, "minimum": watch.minimum(history[-1])}) if history else None
        if late:
            say(f"note: {late}")
    return Result(out, os.path.join(out, files.FINAL), history, seconds, resumed_from)


def _due(s: Session, step: int, epoch: int | None = None, paused: bool = True) -> bool:
    """Whether training pauses after ``step`` steps for a log row (``_row_due``) or a check of its targets
    (``targets.Watch``)."""
    return rows.row_due(s, step, epoch, paused) or s.watch.due(step)


def _end_at_stop_loss(s: Session, trainer: Trainer, row: dict, crossings: list[tuple[dict, dict]]) -> None:
    """A run stopped by ``stop_loss`` ends with the weights where its loss first reached it (its crossing,
    kept within 5 % below), not those of the check that found it some steps later: ``row`` (the last of
    the log) is evaluated again on them and takes their step."""
    stop = next(((r, w) for r, w in crossings if r["level"] == s.job.run.stop_loss), None)
    if stop is None:
        return
    record, weights = stop
    trainer.module.load_state_dict(weights)
    train_loss, train_acc = evaluate(s.model, s.train, s.device, s.collective, s.loss)
    test_loss, test_acc = (
        evaluate(s.model, s.test, s.device, s.collective, s.loss) if s.test is not None else (math.nan, math.nan)
    )
    row.update(step=record["step"], train_loss=train_loss, train_acc=train_acc, test_loss=test_loss, test_acc=test_acc)


def _crossings(s: Session, trainer: Trainer, row: dict) -> list[tuple[dict, dict]]:
    """The levels ``row`` reaches for the first time, each with the weights where the path first reached
    it (``targets.Watch.crossings``), the kept weights evaluated in the model and the current ones put back."""
    model = trainer.module
    if not targets.new_crossings(s.watch.levels, s.watch.crossed, row):
        s.watch.last_check = trainer.position.step
        return []
    current = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def loss_at(weights: dict) -> tuple[float, float]:
        model.load_state_dict(weights)
        return evaluate(model, s.train, s.device, s.collective, s.loss)

    try:
        return s.watch.crossings(row, trainer.position.step, loss_at)
    finally:
        model.load_state_dict(current)


__all__ = ["Result", "Session", "run_training"]
