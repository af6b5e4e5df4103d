"""How ranks share a data set: contiguous shards of ceil(n / size), in rank order, covering every sample once."""

import pytest

from landscape.parallel.partition import shard, shard_size


@pytest.mark.parametrize("n, size", [(10, 1), (10, 3), (4000, 7), (2, 5), (0, 2)])
def test_the_shards_cover_every_sample_once_in_rank_order(n, size):
    parts = [shard(n, rank, size) for rank in range(size)]
    assert [i for part in parts for i in range(n)[part]] == list(range(n))
    assert max(p.stop - p.start for p in parts) == min(n, shard_size(n, size))


def test_the_last_shards_are_the_short_ones():
    assert [shard(10, r, 4) for r in range(4)] == [slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 10)]
    assert shard(2, 4, 5) == slice(2, 2)  # more ranks than samples: the last ones hold none
