"""How ranks share a data set: each rank a contiguous shard, the shards of equal size but the last.

``shard(n, rank, size)`` is the one formula: ``ceil(n / size)`` samples a rank, in rank order, so rank r
holds samples ``[r s, (r + 1) s)`` (clipped to n).  Every computation that sums over a data set across
ranks (an evaluation, a Hessian-vector product) takes its part from here, so the parts are the same
wherever the sum is made.
"""

from __future__ import annotations


def shard_size(n: int, size: int) -> int:
    """The samples of the largest shard: ``ceil(n / size)``."""
    return -(-n // size)


def shard(n: int, rank: int, size: int) -> slice:
    """The samples of ``n`` that rank ``rank`` of ``size`` holds, as a slice (empty when n < size)."""
    each = shard_size(n, size)
    return slice(min(n, rank * each), min(n, (rank + 1) * each))


__all__ = ["shard", "shard_size"]
