"""The demo's small networks for scikit-learn's 8x8 digits."""

from __future__ import annotations

from torch import nn


class DigitsMLP(nn.Module):
    """A ReLU perceptron with two hidden layers: 64-128-64-10 for the 8x8 digits images (the default);
    40-100-100-10 is MNIST-1D's (``mnist1d_mlp``: Greydanus 2020's baseline, no BatchNorm, so no layer is
    scale-invariant and curvature compares minima, not weight norms)."""

    def __init__(self, hidden: tuple[int, int] = (128, 64), classes: int = 10, inputs: int = 64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(inputs, hidden[0]),
            nn.ReLU(),
            nn.Linear(hidden[0], hidden[1]),
            nn.ReLU(),
            nn.Linear(hidden[1], classes),
        )

    def forward(self, x):
        return self.net(x)


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions with BatchNorm and a linear classifier, for 1x8x8 images.

    Bias-free convolutions followed by BatchNorm, as in the ResNets of the
    paper: the network is scale-invariant in its conv filters, which is exactly
    why filter normalization is needed to compare two of them.
    """

    def __init__(self, width: int = 16, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(2 * width * 4 * 4, classes)

    def forward(self, x):
        return self.classifier(self.features(x.reshape(-1, 1, 8, 8)).flatten(1))
