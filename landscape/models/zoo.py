"""The CIFAR-10/100 model zoo of Li et al. 2018, "Visualizing the Loss Landscape of Neural Nets".

Every name of the paper's reference code (tomgoldstein/loss-landscape,
``cifar10/model_loader.py``, dict ``models``) maps to a factory
``factory(num_classes=10) -> nn.Module`` whose ``state_dict`` has the same
keys, shapes and order as the reference model of that name, so a reference
checkpoint (``torch.load(f)['state_dict']``) loads with ``strict=True``
(``landscape.checkpoint`` strips the ``module.`` prefix of ``nn.DataParallel``
checkpoints, which the reference handles by wrapping the model).

``_noshort`` names are the same networks with every skip connection removed
(Sec. 6); they lack the projection-shortcut keys of their twins.
"""

from __future__ import annotations

from torch import nn

from .densenet import DenseNet
from .resnet import CifarResNet
from .resnet_imagenet import ImageNetResNet
from .vgg import VGG


def _factory(build, **fixed):
    """``factory(num_classes=10)``: the architecture is fixed by the name, only the head size is free."""

    def factory(num_classes: int = 10) -> nn.Module:
        return build(num_classes=num_classes, **fixed)

    return factory


def _cifar_resnets() -> dict:
    # Three-stage ResNets (resnet20...) and wide ResNets (wrn56_2...); which
    # depth/width pairs exist, with or without shortcuts, is the reference's choice.
    table = {}
    for depth in (20, 56, 110):
        table[f"resnet{depth}"] = _factory(CifarResNet, depth=depth)
    for depth in (20, 32, 44, 56, 110):
        table[f"resnet{depth}_noshort"] = _factory(CifarResNet, depth=depth, shortcut=False)
    # "50_16": depth 50 at 16 base channels, i.e. the plain width.
    table["resnet50_16_noshort"] = _factory(CifarResNet, depth=50, shortcut=False)
    for k in (2, 4, 8):
        table[f"wrn56_{k}"] = _factory(CifarResNet, depth=56, width=k)
        table[f"wrn56_{k}_noshort"] = _factory(CifarResNet, depth=56, width=k, shortcut=False)
    for k in (2, 4):
        table[f"wrn110_{k}_noshort"] = _factory(CifarResNet, depth=110, width=k, shortcut=False)
    return table


def _imagenet_resnets() -> dict:
    table = {}
    for depth in (18, 34, 50, 101, 152):
        table[f"resnet{depth}"] = _factory(ImageNetResNet, depth=depth)
        table[f"resnet{depth}_noshort"] = _factory(ImageNetResNet, depth=depth, shortcut=False)
    return table


REGISTRY = {
    "vgg9": _factory(VGG),
    "densenet121": _factory(DenseNet),
    **_imagenet_resnets(),
    **_cifar_resnets(),
}

__all__ = ["REGISTRY", "CifarResNet", "ImageNetResNet", "VGG", "DenseNet"]
