"""Losses by name or as code: per-sample values in closed form, the (sum, sum of squares) of a batch,
labels checked against the model's classes, and a callable's fingerprint in the surface's identity."""

import functools
import math

import pytest
import torch

from landscape.errors import ConfigError, InputError
from landscape.losses import Loss, check_labels, fingerprint, per_sample


def test_cross_entropy_of_equal_scores_is_the_log_of_the_number_of_classes():
    scores = torch.zeros(3, 4, dtype=torch.float64)
    assert per_sample("crossentropy", scores, torch.tensor([0, 1, 3])).tolist() == [math.log(4)] * 3
    # classes along dim 1, a sample's loss the mean over the rest: (B=1, C=2, T=2) with one sure token
    tokens = torch.tensor([[[0.0, 100.0], [0.0, 0.0]]], dtype=torch.float64)
    assert per_sample("crossentropy", tokens, torch.tensor([[0, 0]])).tolist() == [math.log(2) / 2]


def test_mse_makes_labels_one_hot_and_takes_float_targets_as_they_are():
    assert per_sample("mse", torch.zeros(2, 3), torch.tensor([1, 2])).tolist() == pytest.approx([1 / 3, 1 / 3])
    output = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    assert per_sample("mse", output, torch.tensor([[0.0, 0.0], [3.0, 1.0]])).tolist() == [2.5, 5.0]


def test_a_batch_gives_the_sum_and_the_sum_of_squares_a_callable_its_mean_times_the_batch():
    scores, labels = torch.zeros(5, 4, dtype=torch.bfloat16), torch.zeros(5, dtype=torch.long)
    total, squares = Loss("crossentropy").total(scores, labels)
    assert total.dtype == squares.dtype == torch.float64
    assert total.item() == pytest.approx(5 * math.log(4)) and squares.item() == pytest.approx(5 * math.log(4) ** 2)
    assert Loss("crossentropy").of_samples(scores, labels).dtype == torch.float32  # never a bfloat16 softmax

    total, squares = Loss(lambda out, y: out.sum() * 0 + 2.0).total(scores, labels)
    assert total.item() == 10.0 and math.isnan(squares.item())


def test_k_points_outputs_give_k_rows_of_per_sample_losses():
    output = torch.zeros(2, 3, 2)  # (K=2, B=3, C=2)
    output[1, :, 0] = 1.0
    got = Loss("mse").of_samples(output, torch.tensor([0, 0, 1]), points=2)
    assert got.tolist() == [[0.5, 0.5, 0.5], [0.0, 0.0, 1.0]]  # point 1 scores (1, 0): right on class 0
    means = Loss(lambda out, y: out.mean()).batch_total(output, torch.tensor([0, 0, 1]), points=2)
    assert means.tolist() == [0.0, 1.5]


THREE_CLASSES = (
    "the model gives 3 class scores per sample but the labels run from 0 to 3: "
    "expected labels in 0..2 (is num_classes right?)"
)
ONE_CLASS = "the model gives 1 class score per sample but the labels run from 0 to 1"


@pytest.mark.parametrize(
    "output, high, message", [(torch.zeros(5, 3), 3, THREE_CLASSES), (torch.zeros(5), 1, ONE_CLASS)]
)
def test_labels_beyond_the_models_classes_are_refused_naming_both(output, high, message):
    check_labels("crossentropy", torch.zeros(5, 3), 0, 2)
    check_labels("torch.nn:CrossEntropyLoss", output, 0, high)  # a loss as code checks its own labels
    with pytest.raises(InputError) as caught:
        check_labels("crossentropy", output, 0, high)
    assert str(caught.value).startswith(message)


def test_two_callables_that_compute_different_losses_never_share_a_name():
    def scaled(c):
        return lambda out, y: c * out.sum()

    assert fingerprint(scaled(2.0)) == fingerprint(scaled(2.0))
    assert fingerprint(scaled(2.0)) != fingerprint(scaled(3.0))  # the closure differs
    mse = torch.nn.functional.mse_loss
    assert fingerprint(functools.partial(mse, reduction="sum")) != fingerprint(functools.partial(mse))
    smooth = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    assert fingerprint(smooth) != fingerprint(torch.nn.CrossEntropyLoss())

    named = Loss("torch.nn:CrossEntropyLoss")  # a criterion class, made without arguments
    assert isinstance(named.fn, torch.nn.CrossEntropyLoss) and not named.per_sample
    assert named.name == f"torch.nn:CrossEntropyLoss#{fingerprint(torch.nn.CrossEntropyLoss())}"
    assert Loss(smooth).name == f"callable:torch.nn.modules.loss.CrossEntropyLoss#{fingerprint(smooth)}"


@pytest.mark.parametrize(
    "spec, error, message",
    [
        ("hinge", ConfigError, "loss_name=hinge: expected one of crossentropy, mse or package.module:callable"),
        (3, ConfigError, "loss=3: expected crossentropy, mse, package.module:callable or a callable"),
        ("torch.nn:Linear", InputError, "loss_name 'torch.nn:Linear': the class cannot be made without arguments"),
    ],
)
def test_a_loss_that_cannot_be_used_is_refused_by_name(spec, error, message):
    with pytest.raises(error) as caught:
        Loss(spec)
    assert str(caught.value).startswith(message)
