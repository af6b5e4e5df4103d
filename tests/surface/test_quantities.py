"""The quantity registry: every stored quantity declared once, with its words and units."""

import pytest

from landscape.errors import InputError
from landscape.plotting import quantity_label
from landscape.surface import quantities
from landscape.surface.quantities import Metric, Quantity


def test_names_parse_into_a_data_set_and_a_metric():
    q = quantities.parse("test_loss_se")
    assert q == Quantity("test", quantities.LOSS_SE) and q.name == "test_loss_se"
    assert q.long_name == "standard error of the mean loss on the test data"
    assert q.units("crossentropy") == "nats" and q.units("mse") == "squared target units"
    assert quantities.parse("train_acc").units() == "%"
    assert quantities.parse("train_eig_ratio") == Quantity("train", quantities.EIG_RATIO)  # curvature maps
    with pytest.raises(InputError, match="train_eig_mean"):
        quantities.parse("train_eig_mean")


def test_what_the_kernel_stores_for_classification_and_regression():
    names = lambda qs: [q.name for q in qs]
    assert names(quantities.forward_quantities(["train", "test"], True)) == [
        "train_loss",
        "train_acc",
        "test_loss",
        "test_acc",
    ]
    assert names(quantities.forward_quantities(["train"], False, stderr=True)) == ["train_loss", "train_loss_se"]


def test_a_new_metric_is_one_registration_and_plots_know_its_words():
    metric = quantities.register(
        Metric("grad_norm", "gradient norm", "norm of the gradient of the mean loss", "", "gradient")
    )
    try:
        assert (
            quantities.parse("train_grad_norm").long_name
            == "norm of the gradient of the mean loss on the training data"
        )
        assert quantity_label("train_grad_norm") == "training gradient norm"
        with pytest.raises(ValueError, match="already registered differently"):
            quantities.register(Metric("grad_norm", "other", "other", "", "gradient"))
    finally:
        quantities.METRICS.pop(metric.key)


def test_plot_words_come_from_the_registry():
    assert quantity_label("test_acc") == "test accuracy (%)"
    assert quantity_label("train_err") == "training error (%)"
    assert quantity_label("loss", {"loss_name": "mse"}) == "loss (MSE)"
    assert quantity_label("something_else") == "something_else"
    source, to_err = quantities.derived("test_err")
    assert source == "test_acc" and to_err(97.5) == 2.5
