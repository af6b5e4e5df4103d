"""The MNIST-1D perceptron of the batch-size study: 40-100-100-10, ReLU, no BatchNorm (Greydanus 2020's
MLP baseline).  Without BatchNorm or weight decay, no layer is scale-invariant: curvature measures
compare minima, not weight norms."""

from __future__ import annotations

from torch import nn


class MNIST1DMLP(nn.Module):
    def __init__(self, hidden: tuple[int, int] = (100, 100), classes: int = 10, length: int = 40):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(length, hidden[0]),
            nn.ReLU(),
            nn.Linear(hidden[0], hidden[1]),
            nn.ReLU(),
            nn.Linear(hidden[1], classes),
        )

    def forward(self, x):
        return self.net(x)
