"""A model that ends with a linear classifier, its class scores made as rows for eager passes.

An eager pass of several points (``UnrolledSweep``) takes the loss and the counts of all its points at
once, class by class along rows of samples (``losses.cross_entropy_terms_eagerly``), so it lays the
class scores out classes x samples.  A model's scores come samples x classes, and copying them into
the other layout, transposed, took the digits MLP 13-25 µs a point (1,797 samples, 10 classes, one
thread of the AMD EPYC VM of BENCHMARKS.md).  When the model's output is a linear layer's, ``x Wᵀ + c``,
the pass computes it transposed instead, ``W xᵀ + c``, straight into its place in the pass's buffer: the
matrix library takes the transposed operand at no cost, and so narrow a product runs faster this way
round (10 x 64 by 64 x 1,797 in the eager passes, under torch's profiler: 73 µs a point against 139 for
the model's 1,797 x 64 by 64 x 10), so no copy is left and the product is cheaper.  It is another order
of the product's sums, so other last bits: surfaces record it (``last_layer`` in their identity).
torch.compile does the same by a pass of its own (``compilation.classes_as_rows``), so this is for eager
passes only.

``find`` says whether a model qualifies: its output is, as it is, the output of one plain ``nn.Linear``
(not a subclass, no parametrization) used once, whose weights no other layer shares, with at most
``compilation.ROWS_INNER`` inputs (past that the transposed product is the slower one) and at least two
outputs, its input one row per sample; float32 or float64 (a low-precision model's surface shows its own
products' rounding); no forward hooks or pre-hooks anywhere in the model (the layer is not run, nor the
model's own forward).  The rest of the model runs as a ``torch.fx`` graph that returns the layer's input
(``LinearEnd.body``), with its ReLUs in place where that changes nothing but the memory gone through
(``in_place``); a model fx cannot trace, or whose graph gives the layer other inputs than the model does
on a few samples (fx records ``v += 1`` on a view of a tensor as ``v + 1``), does not qualify.  The
graph holds the forward's tensor operations only: Python in the forward (a print, a counter) ran once,
while fx traced it.  Nothing here knows about grids, files or ranks.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import nn

from . import in_place
from .compilation import ROWS_INNER
from .first_layer import alone, hooked, layer_input


@dataclass(frozen=True)
class LinearEnd:
    """The model before its last linear layer (``body``, a module returning that layer's input), the layer
    itself and the names of its weight and bias in the model (bias None when it has none)."""

    body: nn.Module
    layer: nn.Linear
    weight: str
    bias: str | None
    held: frozenset[str]   # the names of the body's tensors (an unused head's are not among them)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.weight,) if self.bias is None else (self.weight, self.bias)

    def split(self, weights: dict[str, torch.Tensor]) -> tuple[dict, torch.Tensor, torch.Tensor | None]:
        """A point's ``weights`` (by name) as the body's, and the layer's weight and bias (a tensor the
        point lacks stays as the model has it; one of a module the forward does not use is left out)."""
        body = {name: tensor for name, tensor in weights.items() if name in self.held}
        weight = weights.get(self.weight, self.layer.weight)
        return body, weight, (weights.get(self.bias, self.layer.bias) if self.bias is not None else None)

    @staticmethod
    def rows(weight: torch.Tensor, bias: torch.Tensor | None, features: torch.Tensor,
             out: torch.Tensor) -> torch.Tensor:
        """The layer's output on ``features`` (samples x inputs) transposed, classes x samples, into ``out``."""
        if bias is None:
            return torch.mm(weight, features.t(), out=out)
        return torch.addmm(bias.unsqueeze(1), weight, features.t(), out=out)


def find(model: nn.Module, dtype: torch.dtype, example: torch.Tensor) -> LinearEnd | None:
    """The model's ``LinearEnd`` if it qualifies (see the module's text), else None; ``example``: a few
    inputs (the layer must see one row per sample)."""
    if dtype not in (torch.float32, torch.float64) or hooked(model):
        return None
    try:
        graph = torch.fx.symbolic_trace(model)
    except (Exception, SystemExit):  # noqa: BLE001 - whatever fx cannot trace (the forward is user code)
        return None
    output = next(node for node in graph.graph.nodes if node.op == "output")
    node = output.args[0]
    if not isinstance(node, torch.fx.Node) or len(node.users) != 1 or not alone(graph, model, node):
        return None
    layer = graph.get_submodule(node.target)
    if layer.in_features > ROWS_INNER or layer.out_features < 2:
        return None
    try:
        with torch.no_grad():  # one row per sample: the scores' columns must be the samples
            seen = layer_input(model, layer, example)
    except (Exception, SystemExit):  # noqa: BLE001 - the model's own forward fails: the kernel's probe says why
        return None
    if seen.dim() != 2 or seen.shape[0] != len(example):
        return None
    output.args = (node.args[0],)
    graph.graph.erase_node(node)
    in_place.relus(graph)  # the body is run eagerly, under inference only
    graph.delete_all_unused_submodules()
    graph.recompile()
    with torch.no_grad():  # fx records some Python otherwise (``v += 1`` on a view becomes ``v + 1``)
        if not torch.equal(graph(example), seen):
            return None
    held = frozenset(name for name, _ in itertools.chain(graph.named_parameters(remove_duplicate=False),
                                                         graph.named_buffers(remove_duplicate=False)))
    return LinearEnd(graph, layer, f"{node.target}.weight", f"{node.target}.bias" if layer.bias is not None else None,
                     held)
