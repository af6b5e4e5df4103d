"""The CIFAR ResNets of Li et al. 2018: ResNet-20/56/110, wide ResNets, and their ``_noshort`` twins.

Three stages of BasicBlocks at 16k, 32k, 64k channels on 32x32, 16x16, 8x8
maps (He et al. 2016, Sec. 4.2), ``(depth - 2) / 6`` blocks per stage.  k = 1
is the plain ResNet (the reference's ``ResNet_cifar``); k = 2, 4, 8 are the wide
ResNets of Sec. 6 (the reference's ``WResNet_cifar``, "WRN-56-k").  The two
reference classes differ only in k, so one class serves both here.

Parameter/buffer names and order follow tomgoldstein/loss-landscape
``cifar10/models/resnet.py``: ``conv1, bn1, layer1..layer3, linear``.
"""

from __future__ import annotations

from torch import nn
from torch.nn import functional as F

from .blocks import BasicBlock, make_stage


class CifarResNet(nn.Module):
    """ResNet-``depth`` at width multiplier ``width``; ``shortcut=False`` removes every skip."""

    def __init__(self, depth: int, width: int = 1, shortcut: bool = True, num_classes: int = 10):
        super().__init__()
        if depth < 8 or (depth - 2) % 6:
            raise ValueError(f"depth={depth}: a CIFAR ResNet needs depth = 6n + 2 with n >= 1")
        if width < 1:
            raise ValueError(f"width={width}: the width multiplier must be a positive integer")
        n = (depth - 2) // 6
        planes = [16 * width, 32 * width, 64 * width]
        self.conv1 = nn.Conv2d(3, planes[0], kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes[0])
        self.layer1, c = make_stage(BasicBlock, planes[0], planes[0], n, 1, shortcut)
        self.layer2, c = make_stage(BasicBlock, c, planes[1], n, 2, shortcut)
        self.layer3, c = make_stage(BasicBlock, c, planes[2], n, 2, shortcut)
        self.linear = nn.Linear(c, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        # Global average over the final 8x8 map (the reference's avg_pool2d(out, 8)).
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


__all__ = ["CifarResNet"]
