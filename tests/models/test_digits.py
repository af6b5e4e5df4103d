"""The demo's networks (``models/digits.py``): their layers and parameter counts, counted by hand."""

import torch

from landscape.models.digits import DigitsCNN, DigitsMLP


def test_the_mlp_is_64_128_64_10_with_its_hand_counted_parameters():
    model = DigitsMLP()
    assert sum(p.numel() for p in model.parameters()) == (64 * 128 + 128) + (128 * 64 + 64) + (64 * 10 + 10)
    assert model(torch.zeros(5, 8, 8)).shape == (5, 10)  # an 8x8 digit, flattened


def test_the_cnn_has_two_convolutions_with_batchnorm_and_one_linear_head():
    model = DigitsCNN()
    convolutions = 1 * 16 * 9 + 16 * 32 * 9  # 3x3, no bias (BatchNorm follows)
    batchnorms = 2 * 16 + 2 * 32  # weight and bias
    head = (32 * 4 * 4) * 10 + 10  # 8x8 pooled once to 4x4
    assert sum(p.numel() for p in model.parameters()) == convolutions + batchnorms + head
    assert model(torch.zeros(3, 1, 8, 8)).shape == (3, 10)
    assert DigitsCNN(classes=3)(torch.zeros(1, 1, 8, 8)).shape == (1, 3)
