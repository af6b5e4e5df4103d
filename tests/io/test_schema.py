"""The checksum of a surface point, as the schema defines it: splitmix64's finalizer over the point's flat
index and then over the bits of each value.  Every file ever written is verified against this formula, so it
is pinned here against a reference written with Python integers and splitmix64's published first output.
(That a changed bit or index changes the checksum is tested with the surface file, tests/io/test_surface_file.py.)"""

import struct

import numpy as np

from landscape.io.schema import point_checksums

GOLDEN = 0x9E3779B97F4A7C15
MASK = 2**64 - 1


def mix(h: int) -> int:
    """splitmix64's finalizer (Steele, Lea & Flood 2014), in Python integers."""
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9 & MASK
    h = (h ^ (h >> 27)) * 0x94D049BB133111EB & MASK
    return h ^ (h >> 31)


def by_hand(index: int, values: list[float]) -> int:
    h = mix((index + GOLDEN) & MASK)
    for v in values:
        h = mix(h ^ struct.unpack("<Q", struct.pack("<d", v))[0])
    return h or 1


def no_values(n: int) -> np.ndarray:
    return np.zeros((n, 0))


def test_index_zero_with_no_values_is_splitmix64s_first_output_from_seed_zero():
    assert point_checksums(np.array([0]), no_values(1))[0] == 0xE220A8397B1DCDAF


def test_checksums_of_many_points_are_each_points_own_as_the_formula_gives_them():
    flat = np.array([0, 1, 7, 2**40])
    values = np.array([[0.5, -1.0, 3.0], [np.nan, np.inf, -0.0], [1e-300, -2.5, 0.0], [np.pi, 1.0, 2.0]])
    sums = point_checksums(flat, values)
    assert sums.dtype == np.uint64
    assert [int(s) for s in sums] == [by_hand(int(k), list(v)) for k, v in zip(flat, values)]
    assert [int(point_checksums(flat[k : k + 1], values[k : k + 1])[0]) for k in range(4)] == [int(s) for s in sums]


def test_the_order_of_the_quantities_is_part_of_the_checksum():
    """Hence the writer puts the columns in the alphabetical order of their names."""
    one, other = point_checksums(np.array([3, 3]), np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert one != other


def test_a_checksum_that_comes_out_zero_is_stored_as_one():
    """0 is the fill of points never computed; the finalizer maps 0 to 0, so the index 2**64 - GOLDEN
    (which the index offset turns into 0) with the value +0.0 is the one point whose checksum is 0."""
    index = np.array([2**64 - GOLDEN], dtype=np.uint64)
    assert mix(0) == 0
    assert point_checksums(index, no_values(1))[0] == 1
    assert point_checksums(index, np.array([[0.0]]))[0] == 1
    assert point_checksums(index, np.array([[-0.0]]))[0] == mix(1 << 63) != 1
