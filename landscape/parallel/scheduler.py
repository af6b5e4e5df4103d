"""Running the points of a surface: each rank its block, in rounds that end with a write.

Round 0 evaluates one point per rank and measures it; the ranks agree on how many
points a round holds so that a round lasts about ``round_seconds``.  Within a round
the kernel gets ``per_pass`` points at a time.  Every round ends with an exchange
of a short status (so an error at any point stops all ranks together), the
writer's collective write, and one ``allgather`` of (points done, seconds per
point, stop signal): a job killed at any moment loses at most one round, and a job
asked to stop (``parallel.stop``) saves its round and stops on every rank.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import partition
from .comm import agree

MAX_ROUND = 4096


@dataclass(frozen=True)
class Outcome:
    """What a run of the scheduler did."""

    computed: int              # points computed by all ranks together
    computed_here: int         # points computed by this rank
    stopped_by: str | None     # the signal that ended the run early, or None


def round_length(seconds_per_point: float, round_seconds: float) -> int:
    """Points per round so that a round takes about ``round_seconds``."""
    if seconds_per_point <= 0:
        return MAX_ROUND
    return int(min(MAX_ROUND, max(1, round_seconds // seconds_per_point)))


def _evaluate_round(evaluate, points, chunk, width: int, per_pass: int, stop) -> np.ndarray:
    """Values of the points of ``chunk`` in order, ``per_pass`` at a time, until a stop signal."""
    parts = []
    for start in range(0, len(chunk), per_pass):
        if stop is not None and stop.received:
            break
        parts.append(np.asarray(evaluate(points[chunk[start:start + per_pass]]), dtype=np.float64))
    return np.concatenate(parts).reshape(-1, width) if parts else np.empty((0, width))


def run_points(evaluate, points: np.ndarray, todo: np.ndarray, comm, writer, *, progress=None,
               round_seconds: float = 5.0, per_pass: int = 1, stop=None) -> Outcome:
    """Evaluate every flat point in ``todo`` across the ranks of ``comm``.

    ``evaluate(p)`` maps an ``(n, 2)`` array of coefficients to ``(n, q)`` values, ``q =
    len(writer.quantities)``; ``points[k]`` is the ``(a, b)`` of flat point ``k``.
    ``stop`` (a ``parallel.stop.StopSignals``) ends the run after the round in progress.
    """
    mine = partition.share(todo, comm.rank, comm.size)
    steps = partition.largest_share(len(todo), comm.size)
    width = len(writer.quantities)
    position, length, computed, here = 0, 1, 0, 0
    while position < steps:
        chunk = mine[position:position + length]
        started = time.perf_counter()
        # Agreed: a point that fails on any rank ends every rank, printed once by rank 0.
        values = agree(comm, _evaluate_round, evaluate, points, chunk, width, per_pass, stop)
        finished = chunk[:len(values)]
        per_point = (time.perf_counter() - started) / max(1, len(finished))
        writer.write_round(finished, values)
        reports = comm.allgather((len(finished), per_point, stop.received if stop is not None else None))
        computed += sum(r[0] for r in reports)
        here += len(finished)
        if progress is not None:
            progress.update(computed)
        stopped_by = next((r[2] for r in reports if r[2]), None)
        if stopped_by:
            return Outcome(computed, here, stopped_by)
        if position == 0:
            length = round_length(max(r[1] for r in reports), round_seconds)
            position = 1
        else:
            position += length
    return Outcome(computed, here, None)
