"""``log_ticks``: a log axis labelled with plain numbers at 1, 2 and 5 times powers of ten, thinned to 1 and 3
times powers of ten, or to the powers of ten, where the axis is too short for its labels side by side."""

import pytest
from matplotlib.figure import Figure

from landscape.plotting import log_ticks


def ticks(low: float, high: float, axis: str, size=(4, 3)) -> list[str]:
    ax = Figure(figsize=size).add_subplot()
    ax.plot([low, high], [low, high])
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_ticks(getattr(ax, f"{axis}axis"))
    ax.figure.canvas.draw()
    low, high = sorted(getattr(ax, f"get_{axis}lim")())
    labels = getattr(ax, f"get_{axis}ticklabels")()
    return [t.get_text() for t in labels if low <= t.get_position()[axis == "y"] <= high]


@pytest.mark.parametrize("axis", ["x", "y"])
def test_two_decades_are_labelled_at_one_two_and_five(axis):
    assert ticks(0.01, 1.0, axis) == ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]


def test_a_long_x_axis_is_labelled_at_the_powers_of_ten_and_a_long_y_axis_is_not():
    assert ticks(0.001, 2.0, "x") == ["0.001", "0.01", "0.1", "1"]
    assert "0.002" in ticks(0.001, 2.0, "y")


def test_a_short_axis_is_thinned_to_what_its_length_holds():
    assert ticks(0.5, 500.0, "y", size=(4, 1.2)) == ["1", "10", "100"]  # a low panel of a summary page
    assert ticks(0.5, 500.0, "y", size=(4, 2.0)) == ["1", "3", "10", "30", "100", "300"]
    assert ticks(0.5, 500.0, "y", size=(4, 6.0))[:3] == ["0.5", "1", "2"]
    assert ticks(0.003, 3.0, "x", size=(3, 3)) == ["0.01", "0.1", "1"]


def test_a_span_under_a_decade_is_labelled_at_every_integer_multiple():
    assert ticks(31.0, 91.0, "y") == ["30", "40", "50", "60", "70", "80", "90"]  # 30: the margin below 31
