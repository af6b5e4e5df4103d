"""VGG-9 for CIFAR-10, the shallow network without skip connections of Li et al. 2018 (Secs. 3, 5).

Seven 3x3 conv layers (64, 64, M, 128, 128, M, 256, 256, 256, M; Simonyan &
Zisserman 2015 style) followed by one hidden fully connected layer and the
classifier.  Module indices and names follow tomgoldstein/loss-landscape
``cifar10/models/vgg.py`` (``VGG('VGG9')``): ``features.<i>`` counts every
conv, BatchNorm, ReLU and pool, so the conv weights sit at 0, 3, 7, 10, 14, 17,
20 and their BatchNorms one index later.  Unlike the ResNets the convs keep a
bias, because the reference's do.
"""

from __future__ import annotations

from torch import nn

VGG9 = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M")


class VGG(nn.Module):
    """Conv-BN-ReLU feature stack, then Linear-BN-ReLU, then the classifier."""

    def __init__(self, config=VGG9, num_classes: int = 10, image_size: int = 32):
        super().__init__()
        layers, channels, size = [], 3, image_size
        for item in config:
            if item == "M":
                # ceil_mode as in the reference; it only matters for odd map sizes.
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2, ceil_mode=True))
                size = -(-size // 2)
            else:
                layers += [
                    nn.Conv2d(channels, item, kernel_size=3, padding=1),
                    nn.BatchNorm2d(item),
                    nn.ReLU(inplace=True),
                ]
                channels = item
        self.features = nn.Sequential(*layers)
        # The hidden layer sees the flattened final map: 256 * 4 * 4 inputs for CIFAR.
        self.fc = nn.Sequential(
            nn.Linear(channels * size * size, channels), nn.BatchNorm1d(channels), nn.ReLU(inplace=True)
        )
        self.classifier = nn.Linear(channels, num_classes)

    def forward(self, x):
        return self.classifier(self.fc(self.features(x).flatten(1)))


__all__ = ["VGG", "VGG9"]
