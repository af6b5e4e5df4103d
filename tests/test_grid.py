"""Grid parsing and the [i, j] <-> (x[i], y[j]) convention."""

import numpy as np
import pytest

from landscape.errors import UsageError
from landscape.grid import Axis, Grid


@pytest.mark.parametrize(
    "spec, lo, hi, num",
    [
        ("-1:1:51", -1.0, 1.0, 51),
        ("0:1:5", 0.0, 1.0, 5),
        ("-2:0:3", -2.0, 0.0, 3),
        ("-0.5:1.5:41", -0.5, 1.5, 41),
        ("1e-1:2:2", 0.1, 2.0, 2),
    ],
)
def test_parses_integers_floats_and_zero_bounds(spec, lo, hi, num):
    assert Axis.parse(spec) == Axis(lo, hi, num)


@pytest.mark.parametrize(
    "spec, words",
    [
        ("1:-1:5", "MIN 1 below MAX -1"),
        ("a:b:c", "numbers for MIN and MAX"),
        ("-1:1:0", "at least 2"),
        ("-1:1:-3", "at least 2"),
        ("-1:1", "expected MIN:MAX:NUM"),
        ("-1:1:5.5", "whole number"),
        ("1:1:5", "MIN 1 below MAX 1"),
        ("-inf:1:5", "finite"),
        ("", "expected MIN:MAX:NUM"),
    ],
)
def test_bad_specs_name_the_value(spec, words):
    with pytest.raises(UsageError) as info:
        Axis.parse(spec, "--y")
    assert f"--y={spec}" in str(info.value) and words in str(info.value)


def test_endpoints_exact_and_centre_of_symmetric_odd_axis_is_exactly_zero():
    for num in (3, 5, 11, 21, 51, 101, 1001):
        for hi in (1.0, 0.3, 2.5, 1e-3):
            x = Axis(-hi, hi, num).coordinates()
            assert x[0] == -hi and x[-1] == hi
            assert x[num // 2] == 0.0
            assert np.all(np.diff(x) > 0)
            assert np.allclose(x, np.linspace(-hi, hi, num), rtol=0, atol=1e-15)


def test_value_ij_belongs_to_point_x_i_y_j_on_non_square_grid():
    grid = Grid(Axis(-1, 1, 5), Axis(0, 3, 4))
    assert grid.shape == (5, 4) and grid.size == 20
    x, y = grid.xcoordinates(), grid.ycoordinates()
    points = grid.points(np.arange(grid.size))
    for k in range(grid.size):
        i, j = grid.index(k)
        assert (points[k] == (x[i], y[j])).all()
        assert grid.point(k) == (x[i], y[j])
    # a surface f(x, y) filled point by point has f[i, j] == f(x[i], y[j])
    values = np.empty(grid.shape)
    for k in range(grid.size):
        values[grid.index(k)] = points[k][0] * 10 + points[k][1]
    assert np.array_equal(values, x[:, None] * 10 + y[None, :])


def test_one_dimensional_grid():
    grid = Grid(Axis(-1, 1, 7))
    assert grid.ndim == 1 and grid.shape == (7,)
    assert grid.point(6) == (1.0, 0.0)
    assert grid.ycoordinates() is None


def test_a_grid_beyond_the_coordinate_limit_is_refused():
    from landscape.grid import LIMIT, Axis

    assert Axis.parse(f"-{LIMIT:g}:{LIMIT:g}:3", "x").coordinates()[-1] == LIMIT
    with pytest.raises(UsageError, match="small enough for every coefficient to be finite, at most 1e"):
        Axis.parse("-1e13:1e13:3", "x")
