"""Models by name: the demo's small networks, the paper's CIFAR zoo, or any ``package.module:factory``."""
from __future__ import annotations

from torch import nn

from .errors import InputError, UsageError
from .plugins import call_factory, is_plugin
from .zoo import REGISTRY as ZOO


class DigitsMLP(nn.Module):
    """64-128-64-10 perceptron for the 8x8 digits images."""

    def __init__(self, hidden: tuple[int, int] = (128, 64), classes: int = 10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64, hidden[0]), nn.ReLU(),
            nn.Linear(hidden[0], hidden[1]), nn.ReLU(),
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
            nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(2 * width * 4 * 4, classes)

    def forward(self, x):
        return self.classifier(self.features(x.reshape(-1, 1, 8, 8)).flatten(1))


# name -> factory(num_classes) -> nn.Module
REGISTRY = {
    "digits_mlp": lambda num_classes=10: DigitsMLP(classes=num_classes),
    "digits_cnn": lambda num_classes=10: DigitsCNN(classes=num_classes),
    **ZOO,
}


def build_model(spec: str, num_classes: int = 10) -> nn.Module:
    """A fresh model from a registry name or a ``package.module:factory`` returning an ``nn.Module``."""
    if is_plugin(spec):
        model = call_factory(spec, "--model")
        if not isinstance(model, nn.Module):
            raise InputError(f"--model {spec!r}: the factory returned {type(model).__name__}, "
                             "expected a torch.nn.Module")
        return model
    if spec not in REGISTRY:
        raise UsageError(f"--model {spec!r}: unknown model; known models are {', '.join(sorted(REGISTRY))}, "
                         "or give package.module:factory")
    if num_classes < 2:
        raise UsageError(f"--num_classes={num_classes}: expected at least 2 classes")
    return REGISTRY[spec](num_classes=num_classes)


__all__ = ["build_model", "REGISTRY", "DigitsMLP", "DigitsCNN"]
