"""What a surface costs from the model's shape (``surface/cost.py``): counts a hand can check, and the
start ``auto`` takes from them."""

import math

import pytest
import torch
from torch import nn

from landscape.heap import LARGEST_THRESHOLD
from landscape.surface import cost


def test_a_linear_layer_costs_inputs_times_outputs_and_makes_its_outputs():
    shape = cost.shape_of(nn.Linear(3, 5), torch.zeros(4, 3))
    assert shape == cost.Shape(activation_bytes=5 * 4, largest_activation=5 * 4, macs=3 * 5, output_bytes=5 * 4)


def test_a_convolution_costs_each_output_its_kernel_over_its_group_s_channels():
    plain = cost.shape_of(nn.Conv2d(2, 4, 3, padding=1), torch.zeros(2, 2, 5, 5))
    assert plain.macs == (4 * 5 * 5) * 2 * 9 and plain.activation_bytes == 4 * 5 * 5 * 4
    grouped = cost.shape_of(nn.Conv2d(2, 4, 3, padding=1, groups=2), torch.zeros(2, 2, 5, 5))
    assert grouped.macs == (4 * 5 * 5) * 1 * 9


def test_every_leaf_output_counts_and_the_model_is_left_in_its_mode():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.train()
    shape = cost.shape_of(model, torch.zeros(3, 4))
    assert shape.activation_bytes == (8 + 8 + 2) * 4 and shape.largest_activation == 8 * 4
    assert shape.macs == 4 * 8 + 8 * 2 and model.training


@pytest.mark.parametrize(
    "per_sample, largest, longest, expected",
    [
        (1 << 10, 1 << 10, 1797, 1797),  # 1 KiB a sample: the whole pass fits
        (1 << 20, 1 << 16, 10_000, 256),  # 1 MiB a sample: 256 fit the 256 MiB budget
        (3 << 20, 1 << 16, 10_000, 64),  # 85 fit: the power of two below
        (1 << 20, 1 << 16, 100, 100),  # fewer samples than fit: all of them
        (1 << 10, LARGEST_THRESHOLD, 10_000, cost.SMALLEST_BATCH),  # one activation past the heap's threshold
    ],
)
def test_the_start_is_the_whole_pass_or_the_largest_power_of_two_that_fits(per_sample, largest, longest, expected):
    assert cost.start_batch(cost.Shape(per_sample, largest, 1.0), longest) == expected


def test_the_predicted_time_is_the_forward_work_at_the_optimistic_rate():
    shape = cost.Shape(1.0, 1.0, macs=1e9)
    assert math.isclose(cost.predicted_seconds(shape, samples=100, points=10), 2e12 / cost.FLOPS["cpu"])
    assert math.isclose(cost.predicted_seconds(shape, 100, 10, threads=2), 1e12 / cost.FLOPS["cpu"])
    assert math.isclose(cost.predicted_seconds(shape, 100, 10, device="cuda:1", threads=8), 2e12 / cost.FLOPS["cuda"])


@pytest.mark.parametrize(
    "batch, longest, points, output_bytes, expected",
    [
        (5000, 5000, 441, 40, 16),  # the MNIST-1D MLP on 21 x 21: its whole set in one batch, 16 points
        (5000, 5000, 51, 40, 2),  # a 51-point line: a pass at most a sixteenth of it
        (5000, 5000, 9, 40, 1),  # 3 x 3
        (128, 10_000, 441, 40, 1),  # passes split into batches (ResNet-20 on CIFAR): one point
        (10_000, 10_000, 441, 1 << 10, 2),  # 16 points' outputs would pass the heap's threshold: 3 fit
    ],
)
def test_points_per_pass_start_above_one_only_where_a_pass_is_one_batch(batch, longest, points, output_bytes, expected):
    shape = cost.Shape(1.0, 1.0, 1.0, output_bytes)
    assert cost.start_points(shape, batch, longest, points) == expected
