"""Running the points of a surface: each rank its block, in rounds that end with a write.

Round 0 evaluates one chunk of ``per_pass`` points per rank and measures it; the ranks
agree on how many chunks a round holds so that a round lasts about ``round_seconds``.
Within a round the kernel gets one chunk at a time.  Every round ends with an exchange
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


def _evaluate_round(evaluate, points, chunks, per_pass: int, wanted: np.ndarray, width: int, stop):
    """Flat indices and values of the wanted points of ``chunks``, one chunk per pass, until a stop signal."""
    flats, parts = [], []
    for chunk in chunks:
        if stop is not None and stop.received:
            break
        flat = np.arange(chunk * per_pass, min((chunk + 1) * per_pass, len(points)))
        values = np.asarray(evaluate(points[flat]), dtype=np.float64).reshape(len(flat), width)
        keep = wanted[flat]  # points already done are evaluated with their chunk (same bits) but not written
        flats.append(flat[keep])
        parts.append(values[keep])
    if not flats:
        return np.empty(0, np.int64), np.empty((0, width))
    return np.concatenate(flats), np.concatenate(parts)


def run_points(evaluate, points: np.ndarray, todo: np.ndarray, comm, writer, *, progress=None,
               round_seconds: float = 5.0, per_pass: int = 1, stop=None) -> Outcome:
    """Evaluate every flat point in ``todo`` across the ranks of ``comm``.

    ``evaluate(p)`` maps an ``(n, 2)`` array of coefficients to ``(n, q)`` values, ``q =
    len(writer.quantities)``; ``points[k]`` is the ``(a, b)`` of flat point ``k``.  Points go to the
    kernel in chunks of ``per_pass`` consecutive flat indices of the whole grid (chunk ``c`` is
    points ``c*per_pass ... (c+1)*per_pass - 1``), whoever computes them and whatever is already
    done, so a point is always evaluated with the same companions: the values do not depend on the
    number of ranks or on an earlier interruption.  ``stop`` (a ``parallel.stop.StopSignals``)
    ends the run after the round in progress.
    """
    wanted = np.zeros(len(points), bool)
    wanted[np.asarray(todo, np.int64)] = True
    chunks = np.unique(np.asarray(todo, np.int64) // per_pass)
    mine = partition.share(chunks, comm.rank, comm.size)
    steps = partition.largest_share(len(chunks), comm.size)
    width = len(writer.quantities)
    position, length, computed, here = 0, 1, 0, 0
    while position < steps:
        round_chunks = mine[position:position + length]
        started = time.perf_counter()
        # Agreed: a point that fails on any rank ends every rank, printed once by rank 0.
        finished, values = agree(comm, _evaluate_round, evaluate, points, round_chunks, per_pass, wanted, width, stop)
        per_chunk = (time.perf_counter() - started) / max(1, len(round_chunks))
        writer.write_round(finished, values)
        reports = comm.allgather((len(finished), per_chunk, stop.received if stop is not None else None))
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
