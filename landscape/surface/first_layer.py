"""A model that begins with a linear layer, evaluated on a plane of weights by that layer's linearity.

The first layer's output at ``origin + a*dx + b*dy`` is ``x Wᵀ + c`` with ``W = W0 + a Dx + b Dy`` and
``c = c0 + a cx + b cy``, so it is ``F0 + a Fx + b Fy`` for ``F0 = x W0ᵀ + c0``, ``Fx = x Dxᵀ + cx`` and
``Fy = x Dyᵀ + cy``: three samples x outputs arrays, made once per surface from the float64 origin and
directions and rounded once into the model's type.  A point then costs that layer two multiply-adds
per output instead of a product over its inputs, which inductor fuses with what follows (the ReLU):
compiled passes only (``UnrolledSweep``).  For the digits MLP (64 inputs, 128 outputs) the first layer
was half of its multiply-adds, and its compiled kernel took 0.76x as long (``scripts/bench_kernel_ab.py``,
8 points per pass).  Eagerly the sum is passes of its own over the arrays (one ``torch.add`` with
alpha per direction at best), which alone took about half the time of the layer's ``addmm`` where
the arrays stayed in the cache from one point to the next (batches of 1,024, 98 µs a point against
187, one thread on the 2-MiB-L2 Xeon), but in the passes they do not: between two points the rest
of the forward goes through as much memory again, and the eager kernel with the layer so taken ran
at 0.99-1.04x the time of the one without (16 and 32 points a pass, batches of 1,024 and 1,797).
The arrays' rounding is no worse than the product's it replaces (which sums 64 rounded float32
products), but it is another rounding: surfaces record it (``first_layer`` in their identity).

``find`` says whether a model qualifies: its input goes, through reshapes only, one row per sample, into
one plain ``nn.Linear`` (not a subclass, no parametrization) used once, whose weights no other layer
shares, with at least ``FAN_IN`` inputs (below that the product is cheap and reading three arrays is
not), in float32 or float64 (a low-precision model's surface shows its own products' rounding), the
arrays within ``MEMORY``, and no forward hooks anywhere in the model (the layer is not run, nor the
model's own forward).  The rest of the model runs as a ``torch.fx`` graph that takes the layer's output
(``LinearStart.tail``); a model fx cannot trace, or whose graph computes otherwise than the model on a
few samples (fx records ``v += 1`` on a view of a tensor as ``v + 1``), does not qualify.  The graph
holds the forward's tensor operations only: Python in the forward (a print, a counter, a sleep) ran
once, while fx traced it.  Nothing here knows about grids, files or ranks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

FAN_IN = 32          # inputs of the first layer at least (the digits MLP's 64 gain; see the module's text)
MEMORY = 1 << 30     # bytes the arrays of one data set may take
_RESHAPES = {"reshape", "view", "flatten", "contiguous"}
# the layer's class exactly (a subclass, a quantization-aware or weight-normed layer computes otherwise), as
# nn.MultiheadAttention's projection names it
_PLAIN = (nn.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear)


class _Reached(Exception):
    """Raised by the hook that catches a layer's input, to stop the forward there."""

    def __init__(self, inputs: torch.Tensor):
        super().__init__()
        self.inputs = inputs


@dataclass(frozen=True)
class LinearStart:
    """The model after its first linear layer (``tail``, a module taking that layer's output), the layer
    itself and the names of its weight and bias in the model (bias None when it has none)."""

    tail: nn.Module
    layer: nn.Linear
    weight: str
    bias: str | None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.weight,) if self.bias is None else (self.weight, self.bias)

    @torch.no_grad()
    def features(self, model: nn.Module, inputs: torch.Tensor, origin: dict, directions: list[dict],
                 dtype: torch.dtype, rows: int | None = None) -> torch.Tensor:
        """``(N, 1 + len(directions), outputs)``: per sample the layer's output at the origin and along each
        direction, in float64 rounded into ``dtype`` (``origin`` and ``directions`` float64 by name; a
        tensor they lack stays as the model has it and does not move)."""
        def part(source: dict, name: str | None, fallback) -> torch.Tensor | None:
            if name is None:
                return None
            return source[name] if name in source else fallback(getattr(self.layer, name.rsplit(".", 1)[-1]))

        as_f64 = lambda t: t.detach().to(torch.float64)
        zero = lambda t: torch.zeros_like(t, dtype=torch.float64)
        pairs = [(part(origin, self.weight, as_f64), part(origin, self.bias, as_f64))]
        pairs += [(part(d, self.weight, zero), part(d, self.bias, zero)) for d in directions]
        out = []
        rows = rows or max(1, (64 << 20) // (len(pairs) * self.layer.out_features * 8))  # 64 MiB of float64 at once
        for start in range(0, len(inputs), rows):
            x = self._inputs(model, inputs[start:start + rows]).to(torch.float64)
            out.append(torch.stack([x @ w.T + (c if c is not None else 0.0)
                                    for w, c in pairs], dim=1).to(dtype))
        return torch.cat(out) if out else inputs.new_zeros((0, len(pairs), self.layer.out_features), dtype=dtype)

    def _inputs(self, model: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
        """What the layer receives from ``inputs`` (the model's reshapes)."""
        return layer_input(model, self.layer, inputs)

    @staticmethod
    def at(features: torch.Tensor, coefficients: torch.Tensor) -> torch.Tensor:
        """The layer's output at the point of ``coefficients`` (a, b) from a batch of ``features``."""
        out = features[:, 0]
        for axis in range(features.shape[1] - 1):
            out = out + coefficients[axis].to(features.dtype) * features[:, axis + 1]
        return out


def find(model: nn.Module, dtype: torch.dtype, example: torch.Tensor, samples: int) -> LinearStart | None:
    """The model's ``LinearStart`` if it qualifies (see the module's text), else None; ``example``: a few
    inputs (the layer must see one row per sample), ``samples``: how many the features will be made of."""
    if dtype not in (torch.float32, torch.float64) or hooked(model):
        return None
    try:
        graph = torch.fx.symbolic_trace(model)
    except (Exception, SystemExit):  # noqa: BLE001 - whatever fx cannot trace (the forward is user code)
        return None
    placeholders = [node for node in graph.graph.nodes if node.op == "placeholder"]
    if len(placeholders) != 1:
        return None
    chain, node = [placeholders[0]], placeholders[0]
    while True:
        if len(node.users) != 1:
            return None
        node = next(iter(node.users))
        if node.op == "call_module" and type(graph.get_submodule(node.target)) in _PLAIN:
            break
        if not _reshapes(node, chain[-1], graph):
            return None
        chain.append(node)
    layer = graph.get_submodule(node.target)
    if (not alone(graph, model, node) or layer.in_features < FAN_IN
            or samples * 3 * layer.out_features * (torch.finfo(dtype).bits // 8) > MEMORY):
        return None
    found = LinearStart(graph, layer, f"{node.target}.weight", f"{node.target}.bias" if layer.bias is not None else None)
    try:
        with torch.no_grad():  # one row per sample: a reshape that merges or splits samples would misalign the batches
            seen = found._inputs(model, example)
    except (Exception, SystemExit):  # noqa: BLE001 - the model's own forward fails: the kernel's probe says why
        return None
    if seen.dim() != 2 or seen.shape[0] != len(example):
        return None
    with graph.graph.inserting_before(chain[0]):
        start = graph.graph.placeholder("start")
    node.replace_all_uses_with(start)
    graph.graph.erase_node(node)
    for dead in reversed(chain):
        graph.graph.erase_node(dead)
    graph.delete_all_unused_submodules()
    graph.recompile()
    try:  # fx records some Python otherwise (``v += 1`` on a view of a tensor becomes ``v + 1``)
        with torch.no_grad():
            output = model(example)
            if not isinstance(output, torch.Tensor) or not torch.equal(graph(layer(seen)), output):
                return None
    except (Exception, SystemExit):  # noqa: BLE001 - user code
        return None
    return found


def alone(graph: torch.fx.GraphModule, model: nn.Module, node: torch.fx.Node) -> bool:
    """Whether ``node`` of ``model``'s traced ``graph`` calls a plain linear layer (``_PLAIN``) on one
    tensor, without keywords, the only use of the layer, whose tensors are a weight and a bias that no
    other name of the model shares."""
    if (node.op != "call_module" or type(graph.get_submodule(node.target)) not in _PLAIN or node.kwargs
            or len(node.args) != 1 or not isinstance(node.args[0], torch.fx.Node)):
        return False
    layer = graph.get_submodule(node.target)
    used = [n for n in graph.graph.nodes if n.op in ("call_module", "get_attr")
            and (n.target == node.target or str(n.target).startswith(node.target + "."))]
    shared = [name for name, p in model.named_parameters(remove_duplicate=False)
              if any(p is q for q in layer.parameters())]
    return (len(used) == 1 and len(shared) == len(list(layer.parameters()))
            and not {name for name, _ in layer.named_parameters()} - {"weight", "bias"})


def layer_input(model: nn.Module, layer: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """What ``layer`` receives when ``model`` runs on ``inputs``, by running the model up to it."""
    def reached(_module, args):
        raise _Reached(args[0])

    handle = layer.register_forward_pre_hook(reached)
    try:
        model(inputs)
    except _Reached as caught:
        return caught.inputs
    finally:
        handle.remove()
    raise RuntimeError("the model did not reach the linear layer")


def hooked(model: nn.Module) -> bool:
    """Whether forward hooks could see or change what the layer or the model computes: the tail, a graph,
    runs its leaf modules' hooks but neither the model's own nor the layer's (which it does not run)."""
    from torch.nn.modules import module as hooks
    return bool(hooks._global_forward_hooks or hooks._global_forward_pre_hooks) or any(
        m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def _reshapes(node: torch.fx.Node, previous: torch.fx.Node, graph: torch.fx.GraphModule) -> bool:
    """Whether ``node`` only reshapes ``previous`` (its one tensor argument)."""
    others = [a for a in [*node.args[1:], *node.kwargs.values()] if isinstance(a, torch.fx.Node)]
    if not node.args or node.args[0] is not previous or others:
        return False
    if node.op == "call_method":
        return node.target in _RESHAPES
    if node.op == "call_function":
        return node.target in (torch.flatten, torch.reshape)
    return node.op == "call_module" and isinstance(graph.get_submodule(node.target), nn.Flatten)
