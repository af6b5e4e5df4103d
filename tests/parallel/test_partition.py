"""The rank partition: a pure function, checked without MPI."""
import numpy as np
import pytest

from landscape.parallel import partition


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 10, 51, 2601])
@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 16])
def test_blocks_cover_every_point_once_and_are_balanced(n, size):
    todo = np.arange(1000, 1000 + n)
    shares = [partition.share(todo, r, size) for r in range(size)]
    assert np.array_equal(np.concatenate(shares), todo)
    lengths = [len(s) for s in shares]
    assert max(lengths) - min(lengths) <= 1
    assert max(lengths) == partition.largest_share(n, size)


def test_uneven_counts_give_the_extra_points_to_the_first_ranks():
    assert [len(partition.share(np.arange(10), r, 3)) for r in range(3)] == [4, 3, 3]
    assert [partition.block_bounds(10, r, 3) for r in range(3)] == [(0, 4), (4, 7), (7, 10)]


def test_scattered_todo_after_a_resume():
    todo = np.array([3, 4, 9, 11, 12, 20, 21])
    assert [list(partition.share(todo, r, 2)) for r in range(2)] == [[3, 4, 9, 11], [12, 20, 21]]


def test_rank_outside_the_world_is_refused():
    with pytest.raises(ValueError):
        partition.block_bounds(5, 3, 3)
