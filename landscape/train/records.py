"""What a training run writes as it goes, rank 0 for every rank: at a checkpoint its weights (the
epoch's or step's, final, and those kept where the loss first fell to a level), its latest state, its
log.csv and its run.json (settings and where it stands); and, when the training loss is not finite,
where that happened, recorded before the run stops (``divergence``)."""

from __future__ import annotations

import math
import os

from ..io import run_files
from ..parallel import devices
from ..parallel.comm import agree
from ..provenance import command_line, machine, versions
from . import checkpoints as files
from . import divergence, rows
from .config import TrainJob
from .loop import Trainer
from .session import Session


def meta_of(job: TrainJob, identity: dict, row: dict, ranks: int, threads: int, device: str) -> dict:
    return {
        "kind": "landscape training checkpoint",
        "identity": identity,
        "epoch": row["epoch"],
        "step": row["step"],
        "ranks": ranks,
        "threads": threads,
        **devices.record(device),
        "metrics": {k: row[k] for k in ("train_loss", "train_acc", "test_loss", "test_acc")},
        "command": command_line(list(job.run.argv)) if job.run.argv else "",
        "settings": job.run.settings,
        "versions": versions(),
    }


def save(
    session: Session,
    trainer: Trainer,
    history: list[dict],
    unlogged: dict,
    weights: bool,
    final: bool = False,
    crossings: list[tuple[dict, dict]] = (),
) -> None:
    """Rank 0 writes the epoch's files; every rank hands over its state (local's ranks differ).  Weights
    that are not finite are never written unless allowed (a step whose own loss was finite may have
    made them so)."""
    job, comm, identity = session.job, session.comm, session.identity
    if not job.run.allow_nonfinite and comm.max(0.0 if divergence.finite(trainer.module) else 1.0) > 0:
        diverge(session, trainer, history, math.nan)
    states = comm.gather(trainer.state()) if job.recipe.recipe == "local" else [trainer.state()]

    def write():
        if comm.rank != 0:
            return
        out, state = job.run.out, trainer.module.state_dict()
        row = rows.last_row(history, trainer)
        meta = meta_of(job, identity, row, comm.size, session.threads, session.device)
        if session.diverged is not None:
            meta["diverged"] = session.diverged
        meta.update(crossings=session.watch.crossed, reached=session.watch.reached)
        for record, kept in crossings:  # the weights where the training loss first fell to a level
            files.save_weights(out, record["file"], kept, {**meta, "crossing": record})
        if weights:
            name = files.step_name(row["step"]) if job.recipe.steps else files.epoch_name(row["epoch"])
            files.save_weights(out, name, state, meta)
        if final:
            files.save_weights(out, files.FINAL, state, meta)
        files.save_latest(out, state, {**meta, "history": history, "unlogged": unlogged}, states)
        run_files.write_log(out, history)
        done = final or job.recipe.finished(trainer.position.epoch, trainer.position.step)
        run_files.write_run(out, run_record(session, row, meta, history, done))

    agree(comm, write)


def run_record(session: Session, row: dict, meta: dict, history: list[dict], done: bool) -> dict:
    """``run.json``: the run's settings and where it stands (the last row, as the checkpoints hold it)."""
    return {
        "out": session.job.run.out,
        "done": done,
        "identity": session.identity,
        "epoch": row["epoch"],
        "step": row["step"],
        "phase": row.get("phase", ""),  # the learning-rate phase the run ended in
        "metrics": meta["metrics"],
        "seconds": sum(r["seconds"] for r in history),
        "ranks": session.comm.size,
        "images_per_second": rows.mean_rate(history),
        "machine": machine(),
        "command": meta["command"],
        "settings": meta.get("settings", {}),
        **({"diverged": session.diverged} if session.diverged is not None else {}),
        "crossings": session.watch.crossed,
        **({"minimum": found} if (found := session.watch.minimum(row)) is not None else {}),
    }


def diverge(s: Session, trainer: Trainer, history: list[dict], loss: float) -> None:
    """Every rank at once, when the training loss (``loss``, or a rank's step) is not finite: where it
    happened becomes ``s.diverged``.  With ``allow_nonfinite`` a note, and the run goes on; else ``run.json``
    records it (not done) and the run stops, its last finite checkpoint kept."""
    job, comm, position = s.job, s.comm, trainer.position
    here = divergence.seen(
        position.epoch + 1 if position.offset else position.epoch,
        position.step,
        trainer.optimizer.param_groups[0]["lr"],
        loss,
    )
    where = divergence.first(comm.allgather(trainer.nonfinite), here)
    s.diverged = {**where, "allowed": job.run.allow_nonfinite}
    if job.run.allow_nonfinite:
        s.say(f"note: {divergence.what(where)}; going on, as allow_nonfinite asks")
        return

    def write():
        if comm.rank == 0:
            row = rows.last_row(history, trainer)
            meta = meta_of(job, s.identity, row, comm.size, s.threads, s.device)
            run_files.write_run(job.run.out, run_record(s, row, meta, history, done=False))

    agree(comm, write)
    latest = os.path.join(job.run.out, files.LATEST)
    raise divergence.stopped(where, latest if os.path.exists(latest) else None)
