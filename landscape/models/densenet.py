"""DenseNet-121 (Huang et al. 2017) as trained on CIFAR-10 by Li et al. 2018 (Sec. 6).

This is the ImageNet DenseNet-121 configuration -- growth rate 32, dense
blocks of 6, 12, 24, 16 bottleneck layers, compression 0.5 -- on a CIFAR stem:
a single 3x3 conv to 2 * 32 channels, no stem BatchNorm or max-pool, and a
4x4 average pool before the classifier.  It is not the DenseNet-BC (L=100,
k=12) of Huang et al.'s CIFAR experiments.

Names and order of parameters follow tomgoldstein/loss-landscape
``cifar10/models/densenet.py`` (``DenseNet121``): ``conv1, dense1, trans1, ...,
dense4, bn, linear``; each dense layer is ``bn1, conv1, bn2, conv2``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class DenseLayer(nn.Module):
    """BN-ReLU-conv1x1 to 4k channels, BN-ReLU-conv3x3 to k; new features go in front of the input."""

    def __init__(self, in_planes: int, growth: int):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, 4 * growth, kernel_size=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth)
        self.conv2 = nn.Conv2d(4 * growth, growth, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        out = self.conv2(F.relu(self.bn2(self.conv1(F.relu(self.bn1(x))))))
        # [new, old] order as in the reference: the channel order is what the
        # next layer's weights were trained on.
        return torch.cat([out, x], 1)


class Transition(nn.Module):
    """BN-ReLU-conv1x1 to compress the channels, then 2x2 average pooling."""

    def __init__(self, in_planes: int, out_planes: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_planes)
        self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNet(nn.Module):
    """Four dense blocks joined by three transitions."""

    def __init__(self, blocks=(6, 12, 24, 16), growth: int = 32, reduction: float = 0.5, num_classes: int = 10):
        super().__init__()
        if len(blocks) != 4:
            raise ValueError(f"blocks={blocks!r}: expected four dense-block lengths")
        c = 2 * growth
        self.conv1 = nn.Conv2d(3, c, kernel_size=3, padding=1, bias=False)
        for i, n in enumerate(blocks, start=1):
            setattr(self, f"dense{i}", nn.Sequential(*(DenseLayer(c + j * growth, growth) for j in range(n))))
            c += n * growth
            if i < len(blocks):
                # int(floor(...)) as in the reference; all DenseNet-121 widths are even anyway.
                out = int(c * reduction)
                setattr(self, f"trans{i}", Transition(c, out))
                c = out
        self.bn = nn.BatchNorm2d(c)
        self.linear = nn.Linear(c, num_classes)

    def forward(self, x):
        out = self.conv1(x)
        out = self.trans1(self.dense1(out))
        out = self.trans2(self.dense2(out))
        out = self.trans3(self.dense3(out))
        out = F.relu(self.bn(self.dense4(out)))
        # The final map is 4x4 for 32x32 inputs: a global average, as the reference's avg_pool2d(out, 4).
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


__all__ = ["DenseNet", "DenseLayer", "Transition"]
