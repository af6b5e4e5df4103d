"""1-D curves: the loss axis logarithmic by default where the losses span decades; colours as given."""

from __future__ import annotations

import numpy as np
import pytest

from landscape.io.surface_file import Surface
from landscape.plotting.oned import Style1D, draw_1d

X = np.linspace(-1.0, 1.0, 21)


def curve(loss, path="s.h5") -> Surface:
    values = {"train_loss": np.asarray(loss, dtype=float), "train_acc": 100 - 10 * np.abs(X)}
    return Surface(path, X, None, values, np.ones(len(X), dtype=bool), {"loss_name": "crossentropy"})


@pytest.mark.parametrize(
    "loss, scale",
    [
        (0.003 + 40 * X**2, "log"),  # a basin of 0.003 under a rim of 40
        (0.5 + 40 * X**2, "linear"),  # under two decades
        (40 * X**2, "linear"),  # a loss of exactly 0 at the centre
    ],
)
def test_the_default_scale_is_log_where_the_losses_span_more_than_two_decades(loss, scale):
    ax = draw_1d([curve(loss)]).axes[0]
    assert ax.get_yscale() == scale
    assert ("log scale" in ax.get_ylabel()) is (scale == "log")


def test_log_and_linear_given_are_kept_and_several_curves_decide_together():
    wide, narrow = curve(0.003 + 0.2 * X**2, "a.h5"), curve(1.0 + 40 * X**2, "b.h5")
    assert draw_1d([wide]).axes[0].get_yscale() == "linear"  # 0.003 to 0.2: under two decades alone
    assert draw_1d([wide, narrow]).axes[0].get_yscale() == "log"  # 0.003 to 41 together
    assert draw_1d([wide, narrow], style=Style1D(log=False)).axes[0].get_yscale() == "linear"
    assert draw_1d([wide], style=Style1D(log=True)).axes[0].get_yscale() == "log"
    assert draw_1d([wide, narrow], style=Style1D(loss_lim=(0.0, None))).axes[0].get_yscale() == "linear"


def test_curves_take_the_colours_given():
    colours = [(0.1, 0.2, 0.5, 1.0), (0.9, 0.5, 0.1, 1.0)]
    fig = draw_1d([curve(1 + X**2, "a.h5"), curve(2 + X**2, "b.h5")], ["A", "B"], colours=colours)
    drawn = [line.get_color() for line in fig.axes[0].lines if len(line.get_xdata()) == len(X)]
    assert drawn[:2] == colours
    legend = {
        text.get_text(): line.get_color() for text, line in zip(fig.legends[0].texts, fig.legends[0].legend_handles)
    }
    assert legend["A"] == colours[0] and legend["B"] == colours[1]
