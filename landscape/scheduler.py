"""Running the points of a surface: each rank its block, in rounds that end with a write.

Round 0 evaluates one point per rank and measures it; the ranks agree (one
``max``) on how many points a round holds so that a round lasts about
``round_seconds``.  Every round ends with an exchange of a short status (so an
error at any point stops all ranks together) and the writer's collective write,
so a job killed at any moment loses at most one round.
"""
from __future__ import annotations

import time

import numpy as np

from . import split
from .comm import agree

MAX_ROUND = 4096


def round_length(seconds_per_point: float, round_seconds: float) -> int:
    """Points per round so that a round takes about ``round_seconds``."""
    if seconds_per_point <= 0:
        return MAX_ROUND
    return int(min(MAX_ROUND, max(1, round_seconds // seconds_per_point)))


def run_points(evaluate, points: np.ndarray, todo: np.ndarray, comm, writer, progress=None,
               round_seconds: float = 5.0) -> int:
    """Evaluate every flat point in ``todo`` across the ranks of ``comm``.

    ``evaluate(a, b)`` returns the quantities of one point; ``points[k]`` is the
    ``(a, b)`` of flat point ``k``.  Returns the number of points this rank computed.
    """
    mine = split.share(todo, comm.rank, comm.size)
    steps = split.largest_share(len(todo), comm.size)
    position, length = 0, 1
    while position < steps:
        chunk = mine[position:position + length]
        started = time.perf_counter()
        # Agreed: a point that fails on any rank ends every rank, printed once by rank 0.
        values = agree(comm, lambda: [evaluate(*points[k]) for k in chunk])
        spent = time.perf_counter() - started
        writer.write_round(chunk, np.asarray(values, dtype=np.float64).reshape(len(chunk), len(writer.quantities)))
        if position == 0:
            length = round_length(comm.max(spent / max(1, len(chunk))), round_seconds)
            position = 1
        else:
            position += length
        if progress is not None:
            progress.update(split.done_after(len(todo), comm.size, min(position, steps)))
    return len(mine)
