"""The rank partition: which points each rank computes.  Pure functions, no MPI.

A job's points-to-do are cut into ``size`` contiguous blocks whose lengths differ
by at most one.  Contiguous blocks keep each rank's writes close together in the
file; the evaluation of a point does not depend on who computes it, so the
result is identical for any number of ranks.
"""
from __future__ import annotations

import numpy as np


def block_bounds(n: int, rank: int, size: int) -> tuple[int, int]:
    """``[start, stop)`` of rank ``rank``'s block of ``n`` items split ``size`` ways."""
    if size < 1 or not 0 <= rank < size:
        raise ValueError(f"rank {rank} is not in a world of size {size}")
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def share(todo: np.ndarray, rank: int, size: int) -> np.ndarray:
    """This rank's block of the flat point indices ``todo``."""
    start, stop = block_bounds(len(todo), rank, size)
    return np.asarray(todo)[start:stop]


def largest_share(n: int, size: int) -> int:
    """Length of the longest block: every rank runs this many steps in lockstep rounds."""
    return -(-n // size)
