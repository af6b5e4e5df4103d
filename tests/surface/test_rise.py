"""The rise around a surface's centre on closed forms: a parabola f(x) = x² (whose rise at α is α²), the
accuracy falling linearly, and a paraboloid on a grid where the points within a radius can be counted."""

import numpy as np
import pytest

from landscape.errors import InputError
from landscape.io.surface_file import Surface
from landscape.surface.rise import mean_rise_2d, rise_1d, summary_1d, summary_2d


def line(x, **values) -> Surface:
    x = np.asarray(x, dtype=np.float64)
    return Surface("line.h5", x, None, {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}, np.ones(len(x)))


def test_the_1d_rise_is_the_mean_of_both_sides_minus_the_centre_interpolated_between_points():
    x = np.linspace(-1.0, 1.0, 9)  # steps of 0.25
    s = line(x, train_loss=x**2 + 0.5)
    assert rise_1d(s, "train_loss", 0.5) == pytest.approx(0.25)  # on grid points: α² exactly
    assert rise_1d(s, "train_loss", 0.375) == pytest.approx((0.0625 + 0.25) / 2)  # halfway: the chord
    lopsided = line(x, train_loss=np.where(x < 0, -x, 3 * x))
    assert rise_1d(lopsided, "train_loss", 1.0) == pytest.approx(2.0)


def test_the_1d_summary_holds_the_rises_the_range_allows_and_errors_as_percent_points():
    x = np.linspace(-0.5, 0.5, 5)
    s = line(x, train_loss=x**2 + 0.1, train_acc=100 - 40 * np.abs(x), test_acc=np.full(5, 93.0))
    assert summary_1d(s) == pytest.approx(
        {
            "train_loss_at_minimum": 0.1,
            "train_loss_rise_at_0.25": 0.0625,
            "train_error_rise_at_0.25": 10.0,  # accuracy falls by 10 points: the error rises by 10
            "train_loss_rise_at_0.5": 0.25,
            "train_error_rise_at_0.5": 20.0,
            "test_error_at_minimum": 7.0,
        }
    )  # no rise at 1: the grid stops at ±0.5


def test_the_2d_rise_averages_the_points_within_the_radius_centre_included():
    x = y = np.linspace(-1.0, 1.0, 5)
    a, b = np.meshgrid(x, y, indexing="ij")
    loss = a**2 + 2 * b**2 + 1.0
    s = Surface("plane.h5", x, y, {"train_loss": loss}, np.ones((5, 5)))
    # within 0.5: the centre and its four neighbours at distance 0.5, rises 0, 0.25, 0.25, 0.5, 0.5
    assert mean_rise_2d(s, "train_loss", 0.5) == pytest.approx(1.5 / 5)
    assert summary_2d(s) == pytest.approx({"train_loss_at_minimum": 1.0, "mean_train_loss_rise_within_0.5": 0.3})
    loss[0, 0] = np.nan  # a point not computed is left out, not counted as zero
    assert mean_rise_2d(s, "train_loss", 2.0) == pytest.approx(np.nanmean(loss - 1.0))


def test_a_grid_without_the_trained_model_is_refused_naming_the_file():
    with pytest.raises(InputError, match="line.h5: the x coordinates do not include 0"):
        summary_1d(line([-1.0, -0.5, 0.5, 1.0], train_loss=[1.0, 0.5, 0.5, 1.0]))
    x, y = np.array([-1.0, 0.0, 1.0]), np.array([-1.0, 1.0])
    with pytest.raises(InputError, match=r"plane.h5: the grid does not include \(0, 0\)"):
        summary_2d(Surface("plane.h5", x, y, {"train_loss": np.zeros((3, 2))}, np.ones((3, 2))))
