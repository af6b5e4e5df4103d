"""ResNet-18/34/50/101/152 with the ImageNet stage layout, run on 32x32 CIFAR images.

The reference code (tomgoldstein/loss-landscape, ``cifar10/models/resnet.py``,
class ``ResNet``, "ImageNet models") keeps He et al. 2016's four stages at
64/128/256/512 channels and blocks per stage (Table 1), but replaces the 7x7
stride-2 stem and max-pool with one 3x3 stride-1 conv, so the stages see
32, 16, 8, 4 pixel maps.  Names and order of parameters follow that class:
``conv1, bn1, layer1..layer4, linear``.
"""

from __future__ import annotations

from torch import nn
from torch.nn import functional as F

from .blocks import BasicBlock, Bottleneck, make_stage

# depth -> (unit, blocks per stage), He et al. 2016, Table 1.
LAYOUTS = {
    18: (BasicBlock, (2, 2, 2, 2)),
    34: (BasicBlock, (3, 4, 6, 3)),
    50: (Bottleneck, (3, 4, 6, 3)),
    101: (Bottleneck, (3, 4, 23, 3)),
    152: (Bottleneck, (3, 8, 36, 3)),
}


class ImageNetResNet(nn.Module):
    """Four-stage ResNet-``depth``; ``shortcut=False`` removes every skip."""

    def __init__(self, depth: int, shortcut: bool = True, num_classes: int = 10):
        super().__init__()
        if depth not in LAYOUTS:
            raise ValueError(f"depth={depth}: expected one of {sorted(LAYOUTS)}")
        block, blocks = LAYOUTS[depth]
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        c = 64
        for i, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks)):
            stage, c = make_stage(block, c, planes, n, 1 if i == 0 else 2, shortcut)
            setattr(self, f"layer{i + 1}", stage)
        self.linear = nn.Linear(c, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        # Global average over the final 4x4 map (the reference's avg_pool2d(out, 4)).
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


__all__ = ["ImageNetResNet", "LAYOUTS"]
