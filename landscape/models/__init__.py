"""Models by name (the demo's small networks, the paper's CIFAR zoo) or as ``package.module:factory``,
and ``ModelConfig``: which network, with which trained weights."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .. import checks
from ..errors import ConfigError, InputError, describe, param
from ..io.checkpoint import load_into, read_state_dict
from ..io.paths import config_path
from ..plugins import call_factory, factory_args, is_plugin
from .digits import DigitsCNN, DigitsMLP
from .zoo import REGISTRY as ZOO

NUM_CLASSES_HELP = "outputs of a registry model (default: 100 for cifar100, else 10)"

# name -> factory(num_classes) -> nn.Module
REGISTRY = {
    "digits_mlp": lambda num_classes=10: DigitsMLP(classes=num_classes),
    "digits_cnn": lambda num_classes=10: DigitsCNN(classes=num_classes),
    "mnist1d_mlp": lambda num_classes=10: DigitsMLP(hidden=(100, 100), classes=num_classes, inputs=40),
    **ZOO,
}


@dataclass(frozen=True)
class ModelConfig:
    """A network: registry name or plug-in (with its factory's keyword arguments), its output classes,
    and the checkpoint of its trained weights."""

    model: str
    num_classes: int | None = None  # a registry model's outputs: 100 for cifar100, else 10
    model_file: str | None = None
    allow_pickle: bool = False  # unpickle checkpoints fully (they can run code)
    model_args: str = ""  # a plug-in factory's keyword arguments: canonical JSON text, "" for none

    def __post_init__(self):
        object.__setattr__(self, "model_file", config_path(self.model_file, "model_file"))
        object.__setattr__(self, "model_args", factory_args(self.model_args, "model_args"))
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError("model", self.model, "a registry name or package.module:factory")
        if not is_plugin(self.model) and self.model not in REGISTRY:
            raise ConfigError(
                "model", self.model, f"a registry name ({', '.join(sorted(REGISTRY))}) or package.module:factory"
            )
        if self.model_args and not is_plugin(self.model):
            raise ConfigError(
                "model_args",
                self.model_args,
                f"no arguments for the registry model {self.model} (they are for a package.module:factory)",
            )
        if self.num_classes is not None:
            checks.whole("num_classes", self.num_classes, least=2, expected="a whole number of classes, at least 2")

    def classes(self, dataset: str) -> int:
        """Output classes of a registry model: as given, else 100 for CIFAR-100, else 10."""
        return self.num_classes if self.num_classes is not None else (100 if dataset == "cifar100" else 10)


def build_model(spec: str, num_classes: int = 10, args: str = "") -> nn.Module:
    """A fresh model from a registry name or a ``package.module:factory`` returning an ``nn.Module``
    (called with the keyword arguments ``args``, canonical JSON text)."""
    if is_plugin(spec):
        model = call_factory(spec, "model", args)
        if not isinstance(model, nn.Module):
            raise InputError(
                f"model {spec!r}: the factory returned {type(model).__name__}, expected a torch.nn.Module",
            )
        return model
    if spec not in REGISTRY:
        raise ConfigError("model", spec, f"a registry name ({', '.join(sorted(REGISTRY))}) or package.module:factory")
    try:
        return REGISTRY[spec](num_classes=num_classes)
    except (RuntimeError, MemoryError) as exc:  # torch's "can't allocate memory" is a RuntimeError
        raise InputError(
            f"model {spec} with {param('num_classes')}={num_classes} cannot be built ({describe(exc)}): "
            "expected the number of classes of the data",
        ) from None


def load_model(cfg: ModelConfig, classes: int, checkpoint: str | None, seed: int, say=None) -> nn.Module:
    """The network of ``cfg`` with the weights of ``checkpoint`` (or its initial weights, drawn with ``seed``)."""
    torch.manual_seed(seed)  # the same initial weights on every rank
    model = build_model(cfg.model, classes, cfg.model_args)
    if checkpoint:
        for note in load_into(model, read_state_dict(checkpoint, cfg.allow_pickle), checkpoint):
            if say is not None:
                say(f"note: {note}")
    return model


__all__ = ["NUM_CLASSES_HELP", "ModelConfig", "build_model", "load_model", "REGISTRY", "DigitsMLP", "DigitsCNN"]
