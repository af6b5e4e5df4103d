"""Running the points of a surface: ranks take chunks of points from a shared counter, in rounds
that end with a write.

Round 0 evaluates one chunk of ``per_pass`` points per rank and times it; then each rank claims
chunks one at a time until its round has lasted about ``round_seconds``.  Every round ends with an
exchange of a short status (so an error at any point stops all ranks together), the writer's
collective write, and one ``allgather`` of (points done, stop signal, counter exhausted): a job
killed at any moment loses at most one round, and a job asked to stop (``parallel.stop``) saves
its round and stops on every rank.  A rank that has not reached the end of its round 3 s plus a round
plus two chunks after a stop signal is lost (Slurm signals the ranks left when a node dies): rank 0,
waiting for it, names it and leaves with ``RanksLost`` instead of hanging in the collective call (its
abort ends the others).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import CollectiveFailure, RanksLost
from .comm import PATIENCE_SECONDS, agree


@dataclass(frozen=True)
class Outcome:
    """What a run of the scheduler did."""

    computed: int  # points computed by all ranks together
    computed_here: int  # points computed by this rank
    stopped_by: str | None  # the signal that ended the run early, or None


@dataclass
class _Round:
    """What one rank did in one round."""

    flat: np.ndarray  # the points it computed that were to do
    values: np.ndarray  # their values
    chunks: int  # chunks it evaluated
    seconds: float  # spent evaluating them
    exhausted: bool  # its last claim found the counter past the last chunk


@dataclass(frozen=True)
class _Work:
    """What every round of one run evaluates: the points, in chunks of ``per_pass`` flat indices claimed
    from ``counter``, those ``wanted`` (not done already) written, ``width`` values each."""

    evaluate: Callable[[np.ndarray], np.ndarray]
    points: np.ndarray
    chunks: np.ndarray
    counter: object  # comm.counter(): claim(n) -> the next index
    per_pass: int
    wanted: np.ndarray
    width: int
    stop: object  # parallel.stop.StopSignals, or None


@dataclass(frozen=True)
class _Report:
    """What each rank tells the others at the end of a round."""

    computed: int  # points it computed
    stopped_by: str | None  # the stop signal it received
    exhausted: bool  # its last claim found the counter past the last chunk
    rate: float  # points per second
    chunk_seconds: float  # seconds per chunk


def _evaluate_round(work: _Work, deadline: float | None, per_chunk: float) -> _Round:
    """Claim chunks one at a time and evaluate them until the round's deadline (the next chunk would
    end past it), the last chunk, or a stop signal; ``deadline=None``: exactly one chunk (round 0)."""
    evaluate, points, chunks, counter, stop = work.evaluate, work.points, work.chunks, work.counter, work.stop
    per_pass, wanted, width = work.per_pass, work.wanted, work.width
    flats, parts, count, started, exhausted = [], [], 0, time.perf_counter(), False
    while not (stop is not None and stop.received):
        if count and (deadline is None or time.perf_counter() + per_chunk > deadline):
            break
        index = counter.claim(1)
        if index >= len(chunks):
            exhausted = True
            break
        chunk = chunks[index]
        flat = np.arange(chunk * per_pass, min((chunk + 1) * per_pass, len(points)))
        values = np.asarray(evaluate(points[flat]), dtype=np.float64).reshape(len(flat), width)
        keep = wanted[flat]  # points already done are evaluated with their chunk (same bits) but not written
        flats.append(flat[keep])
        parts.append(values[keep])
        count += 1
        per_chunk = (time.perf_counter() - started) / count
    flat = np.concatenate(flats) if flats else np.empty(0, np.int64)
    values = np.concatenate(parts) if parts else np.empty((0, width))
    return _Round(flat, values, count, time.perf_counter() - started, exhausted)


def run_points(
    evaluate,
    points: np.ndarray,
    todo: np.ndarray,
    comm,
    writer,
    *,
    progress=None,
    round_seconds: float = 5.0,
    per_pass: int = 1,
    stop=None,
) -> Outcome:
    """Evaluate every flat point in ``todo`` across the ranks of ``comm``.

    ``evaluate(p)`` maps an ``(n, 2)`` array of coefficients to ``(n, q)`` values, ``q =
    len(writer.quantities)``; ``points[k]`` is the ``(a, b)`` of flat point ``k``.  Points go to the
    kernel in chunks of ``per_pass`` consecutive flat indices of the whole grid (chunk ``c`` is
    points ``c*per_pass ... (c+1)*per_pass - 1``), whoever computes them and whatever is already
    done, so a point is always evaluated with the same companions: the values do not depend on the
    number of ranks or on an earlier interruption.

    Ranks take chunks one at a time from a counter they share (``comm.counter``: one-sided on
    rank 0, which computes too), so slow ranks and expensive regions of the grid leave nobody
    idle for longer than a chunk.  A round lasts about ``round_seconds`` and ends with the writer's
    collective write and one ``allgather`` of (points done, stop signal, counter exhausted); the
    run ends when every rank found the counter past the last chunk.  ``stop`` (a
    ``parallel.stop.StopSignals``) ends the run after the round in progress.
    """
    wanted = np.zeros(len(points), bool)
    wanted[np.asarray(todo, np.int64)] = True
    chunks = np.unique(np.asarray(todo, np.int64) // per_pass)
    width = len(writer.quantities)
    counter = comm.counter()
    work = _Work(evaluate, points, chunks, counter, per_pass, wanted, width, stop)
    computed, here, per_chunk, first = 0, 0, 0.0, True
    try:
        while True:
            deadline = None if first else time.perf_counter() + round_seconds  # round 0: one chunk, timed
            # Agreed: a point that fails on any rank ends every rank, printed once by rank 0.
            done = agree(comm, _evaluate_round, work, deadline, per_chunk)
            if done.chunks:
                per_chunk = done.seconds / done.chunks
            writer.write_round(done.flat, done.values)
            rate = len(done.flat) / done.seconds if done.seconds > 0 else 0.0
            chunk_seconds = done.seconds / done.chunks if done.chunks else 0.0
            reports = comm.allgather(
                _Report(
                    len(done.flat), stop.received if stop is not None else None, done.exhausted, rate, chunk_seconds
                )
            )
            # After a stop signal a rank reaches the end of its round within a chunk, and one that did not
            # receive it within a round; one that has not a few seconds more later is lost with its node
            # (or killed): rank 0 names it and leaves.
            comm.watch(stop, PATIENCE_SECONDS + round_seconds + 2 * max(r.chunk_seconds for r in reports))
            computed += sum(r.computed for r in reports)
            here += len(done.flat)
            if progress is not None:
                progress.update(computed, rates=[r.rate for r in reports])
            stopped_by = next((r.stopped_by for r in reports if r.stopped_by), None)
            if stopped_by or all(r.exhausted for r in reports):
                counter.free()
                return Outcome(computed, here, stopped_by)
            first = False
    except CollectiveFailure:  # every rank is here: the window can be freed together
        counter.free()
        raise
    except RanksLost as lost:  # rank 0 alone: what the rounds before saved goes into its end record
        lost.computed = computed
        raise
    finally:
        comm.watch(None, None)
