"""The random direction beside the top Hessian eigenvector: one loss axis, the direction's scale in words."""

from __future__ import annotations

import numpy as np

from landscape.io.surface_file import Surface
from landscape.plotting.hessian_1d import RANDOM_WORDS, draw, hessian_words

X = np.linspace(-1.0, 1.0, 21)


def curve(loss) -> Surface:
    return Surface("s.h5", X, None, {"train_loss": np.asarray(loss, float)}, np.ones(len(X), bool), {})


def test_two_panels_share_the_loss_axis_log_where_it_spans_decades():
    random = [curve(0.003 + 2 * X**2), curve(0.2 + 3 * X**2)]
    along = [curve(0.003 + 40 * X**2), curve(0.2 + 60 * X**2)]
    colours = ["#000080", "#ff8000"]
    fig = draw(random, along, ["batch 16", "batch 1024"], colours, eigenvalues=[80.0, 120.0])
    left, right = fig.axes[:2]
    assert left.get_yscale() == right.get_yscale() == "log" and left.get_ylim() == right.get_ylim()
    assert left.get_xlabel() == RANDOM_WORDS and right.get_xlabel() == hessian_words("unit")
    assert "distance moved in weight space" in right.get_xlabel()
    solid = [line for line in right.lines if line.get_linestyle() == "-"]
    assert [line.get_color() for line in solid] == colours
    dotted = [line for line in right.lines if line.get_linestyle() == ":" and len(line.get_xdata()) == len(X)]
    assert np.allclose(dotted[0].get_ydata(), 0.003 + 40 * X**2)  # L(0) + λ t²/2 with λ = 80: the curve itself
    words = [t.get_text() for t in fig.legends[0].texts]
    assert words[:2] == ["batch 16 (λ₁ = 80)", "batch 1024 (λ₁ = 120)"]


def test_a_loss_within_two_decades_stays_linear_and_another_scale_is_named():
    fig = draw([curve(1 + X**2)], [curve(1 + 5 * X**2)], ["a"], ["C0"], scale="filter")
    assert fig.axes[0].get_yscale() == "linear"
    assert "filter" in fig.axes[1].get_xlabel()
    assert not [line for line in fig.axes[1].lines if line.get_linestyle() == ":" and len(line.get_xdata()) > 2]
