"""Residual units of He et al. 2016, with and without the skip connection.

Li et al. 2018 (Sec. 6) compare ResNets with their ``_noshort`` twins:
the same stack of convolutions with the identity/projection addition removed,
which turns a smooth, convex-looking surface into a chaotic one as depth grows.

Attribute names (``conv1``, ``bn1``, ..., ``shortcut``) are those of the
reference code (tomgoldstein/loss-landscape, ``cifar10/models/resnet.py``) so
that its checkpoints load without renaming keys.
"""

from __future__ import annotations

from torch import nn
from torch.nn import functional as F


def _conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    # Bias-free: every conv is followed by BatchNorm, whose shift makes a bias redundant.
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


def _shortcut(cin: int, cout: int, stride: int, enabled: bool) -> nn.Module | None:
    """The skip path: None when disabled, identity when shapes agree, else a 1x1 projection.

    The reference projects with conv1x1 + BatchNorm whenever the stride or the
    width changes (He et al. 2016, option B), which is why a projection
    shortcut carries parameters ``shortcut.0.weight`` and ``shortcut.1.*``; an
    identity skip has none, so it adds no keys.
    """
    if not enabled:
        return None
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(cout))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions; ``out = relu(bn2(conv2(relu(bn1(conv1 x)))) + skip(x))``."""

    expansion = 1

    def __init__(self, in_planes: int, planes: int, stride: int = 1, shortcut: bool = True):
        super().__init__()
        self.conv1 = _conv3x3(in_planes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = _shortcut(in_planes, planes, stride, shortcut)

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        if self.shortcut is not None:
            out = out + self.shortcut(x)
        return F.relu(out)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3, 1x1 expand by ``expansion``; used by the 4-stage ResNet-50/101/152."""

    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1, shortcut: bool = True):
        super().__init__()
        out_planes = self.expansion * planes
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_planes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_planes)
        self.shortcut = _shortcut(in_planes, out_planes, stride, shortcut)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.shortcut is None:
            # The reference's Bottleneck_noshortcut returns here, without the
            # final ReLU; kept so its trained weights compute the same function.
            return out
        return F.relu(out + self.shortcut(x))


def make_stage(
    block: type[nn.Module], in_planes: int, planes: int, blocks: int, stride: int, shortcut: bool
) -> tuple[nn.Sequential, int]:
    """``blocks`` units, the first one strided; returns the stage and its output width.

    Children are numbered 0..blocks-1 (``layer2.0.conv1``), as in the reference.
    """
    units = []
    for i in range(blocks):
        units.append(block(in_planes, planes, stride if i == 0 else 1, shortcut))
        in_planes = planes * block.expansion
    return nn.Sequential(*units), in_planes


__all__ = ["BasicBlock", "Bottleneck", "make_stage"]
