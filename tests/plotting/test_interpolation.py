"""The interpolation figure, from a record of ``<name>_interpolation.json`` alone: one column per recipe,
the loss (log axis) above the error, seeds thin, their mean bold, the two networks marked at 0 and 1."""

import numpy as np
import pytest

from landscape.plotting.interpolation import draw_interpolation, write_interpolation
from landscape.plotting.look import use

ALPHAS = np.linspace(-0.5, 1.5, 41)


def pair(recipe: str, seed: int, batches=(16, 1024), test: bool = True) -> dict:
    train = 0.01 + (ALPHAS - 0.4) ** 2 * (1 + seed)  # a valley between the two networks
    shown = lambda v: [float(x) for x in v] if test else [None] * len(ALPHAS)
    return {
        "recipe": recipe,
        "seed": seed,
        "from": f"{recipe}_b{batches[0]}_s{seed}",
        "to": f"{recipe}_b{batches[1]}_s{seed}",
        "batch_from": batches[0],
        "batch_to": batches[1],
        "train_loss": [float(x) for x in train],
        "test_loss": shown(train + 0.5),
        "train_error": [float(x) for x in np.minimum(100.0, 10 * train)],
        "test_error": shown(np.minimum(100.0, 10 * train + 5)),
    }


def record(pairs: list[dict]) -> dict:
    return {"alphas": ALPHAS.tolist(), "pairs": pairs, "definition": "w(α) = ...", "citation": "Keskar et al. 2017"}


@pytest.mark.parametrize("style", ["default", "paper"])
def test_the_figure_is_written_in_every_format_asked_for(tmp_path, style):
    data = record([pair("sgd", s) for s in (0, 1, 2)] + [pair("lr", 0, (32, 2048))])
    with use(style) as look:
        paths = write_interpolation(data, str(tmp_path / "card_interpolation"), ("png", "pdf"), 100, look)
    assert paths == [str(tmp_path / "card_interpolation.png"), str(tmp_path / "card_interpolation.pdf")]
    assert all((tmp_path / f"card_interpolation.{ext}").stat().st_size > 1000 for ext in ("png", "pdf"))


def test_one_column_per_recipe_loss_on_a_log_axis_above_the_error_the_ends_named_by_batch_size():
    figure = draw_interpolation(record([pair("sgd", 0), pair("sgd", 1), pair("lr", 0, (32, 2048))]))
    loss, error = figure.axes[0], figure.axes[2]  # row-major: sgd loss, lr loss, sgd error, lr error
    assert loss.get_yscale() == "log" and error.get_yscale() == "linear"
    assert loss.get_title(loc="left") == "(a) sgd, final weights (2 seeds)"
    assert figure.axes[1].get_title(loc="left") == "(b) lr, final weights (1 seed)"
    assert error.get_xlabel().startswith("α") and error.get_ylabel() == "error (%)"
    names = sorted(t.get_text() for ax in figure.axes for child in ax.child_axes for t in child.get_xticklabels())
    assert names == ["batch 1024", "batch 16", "batch 2048", "batch 32"]
    # sgd: per split two thin seed curves and their bold mean; lr: one seed, drawn bold alone
    curves = [line for line in loss.get_lines() if len(line.get_xdata()) == len(ALPHAS)]
    assert len(curves) == 6
    mean = [line for line in curves if line.get_color() == "k"]
    assert len(mean) == 2 and {line.get_linestyle() for line in mean} == {"-", "--"}
    np.testing.assert_allclose(mean[0].get_ydata(), np.mean([pair("sgd", s)["train_loss"] for s in (0, 1)], axis=0))
    assert all(line.get_linewidth() < mean[0].get_linewidth() for line in curves if line.get_color() != "k")
    labels = [t.get_text() for t in figure.legends[0].get_texts()]
    assert labels == ["seed 0", "seed 1", "mean over seeds", "training", "test"]


def test_without_test_values_only_training_is_drawn_and_a_loss_of_zero_keeps_a_linear_axis():
    data = record([pair("sgd", 0, test=False)])
    data["pairs"][0]["train_loss"][5] = 0.0  # a plug-in's loss can reach 0, which a log axis cannot show
    figure = draw_interpolation(data)
    assert figure.axes[0].get_yscale() == "linear"
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["seed 0", "training"]


def test_a_record_without_pairs_is_refused():
    with pytest.raises(ValueError, match="without pairs"):
        draw_interpolation(record([]))
