"""The reference code's ImageNet-style ResNets on CIFAR images (``models/resnet_imagenet.py``): four
stages of 64-512 channels after a 3x3 stem, as Li et al.'s ``ResNet18`` (Kuang Liu's CIFAR version)."""

import torch

from landscape.models.zoo import REGISTRY


def test_resnet18_has_the_parameter_count_of_the_cifar_resnet18_everyone_trains():
    model = REGISTRY["resnet18"](num_classes=10)
    assert sum(p.numel() for p in model.parameters()) == 11_173_962  # kuangliu/pytorch-cifar's ResNet18
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)


def test_the_head_alone_grows_with_the_classes():
    count = {n: sum(p.numel() for p in REGISTRY["resnet18"](num_classes=n).parameters()) for n in (10, 100)}
    assert count[100] - count[10] == 90 * (512 + 1)  # 512 features and a bias per class
