"""A model called with a point's weights in place of its own, where they go found once, not at every call.

``torch.func.functional_call`` finds, at every call, which of the model's tensors each name stands for
and which names are tied to it, by walking the module tree: 33 µs a call for the digits MLP (one
thread, the Intel Xeon VM of BENCHMARKS.md).  An eager surface pays that once per batch of every
point: 66 µs against 496 for the MLP's forward of the 1,797 digits in batches of 1,024.  ``caller``
finds the slots once: a call puts the weights into them, runs the model and puts the model's own
tensors back, as ``functional_call`` does (the same module dictionaries, so the same arithmetic and
the same bits; a tensor the forward replaced goes back into ``weights``, as there).  Models where
that search could come out otherwise at another call, or that ``functional_call`` treats apart, keep
``functional_call``: tied tensors, scripted modules, ``DataParallel``.  torch.compile traces
``functional_call`` itself into its graph, so compiled passes keep it too.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn
from torch.func import functional_call

Call = Callable[[dict, torch.Tensor], torch.Tensor]


def caller(model: nn.Module, compile: bool = False) -> Call:
    """``call(weights, x)``: ``model``'s output on ``x`` with ``weights`` (tensors by the names of
    ``named_parameters`` and ``named_buffers``, any subset of them) in place of its own."""
    slots = None if compile else WeightSlots.of(model)
    if slots is None:
        return lambda weights, x: functional_call(model, weights, (x,))
    return slots


class WeightSlots:
    """The module dictionary and key that hold each of a model's parameters and buffers, by name."""

    def __init__(self, model: nn.Module, places: dict[str, tuple[dict, str]]):
        self.model, self.places = model, places

    @classmethod
    def of(cls, model: nn.Module) -> "WeightSlots | None":
        """The slots of ``model``, or None where ``functional_call`` must decide at each call."""
        if isinstance(model, (torch.jit.ScriptModule, nn.DataParallel)):
            return None
        places, owners = {}, {}
        for module_name, module in model.named_modules(remove_duplicate=False):
            prefix = f"{module_name}." if module_name else ""
            for store in (module._parameters, module._buffers):
                for key, tensor in store.items():
                    if tensor is None:
                        continue
                    if id(tensor) in owners:  # tied: one name's weights are every name's
                        return None
                    owners[id(tensor)] = prefix + key
                    places[prefix + key] = (store, key)
        return cls(model, places)

    def __call__(self, weights: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        if not weights.keys() <= self.places.keys():  # a name the model lacks: functional_call sets an attribute
            return functional_call(self.model, weights, (x,))
        saved = []
        try:
            for name, tensor in weights.items():
                store, key = self.places[name]
                saved.append((name, store, key, store[key]))
                store[key] = tensor
            return self.model(x)
        finally:
            for name, store, key, tensor in reversed(saved):
                if store[key] is not weights[name]:  # the forward replaced it: functional_call hands it back
                    weights[name] = store[key]
                store[key] = tensor
