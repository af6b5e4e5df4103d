"""The compiled kernel: a pass's work on one batch (the points' weights, their forwards, the loss and the
counts) as one ``torch.compile``d function, so the loss and the counts fuse into the model's last kernels;
and, where a model begins with a wide linear layer, that layer taken by linearity.

Compiled with static shapes, each batch shape (and number of points per call) once, when first seen;
calls hold at most ``UNROLL`` points, so the graph compiled per shape stays small, and the points of a
pass that do not fill a call go one per call.  Should torch give up compiling (too many shapes), it
must raise rather than quietly run some points eagerly (``_compiled``).

**The first layer by linearity.**  The first layer's output at ``origin + a*dx + b*dy`` is
``F0 + a Fx + b Fy`` with ``F0 = x W0ᵀ + c0``, ``Fx = x Dxᵀ + cx``, ``Fy = x Dyᵀ + cy``: three samples x
outputs arrays made once per surface from the float64 origin and directions and rounded once into the
model's type.  A point then costs that layer two multiply-adds per output instead of a product over its
inputs, fused with what follows.  A model qualifies (``_first_layer``) when its input goes, through
reshapes only, one row per sample, into one plain ``nn.Linear`` used once, whose weights no other layer
shares, of at least ``FAN_IN`` inputs, in float32 or float64, with no forward hooks in the model (neither
the layer nor the model's own forward is run); the rest of the model runs as a ``torch.fx`` graph that
takes the layer's output, which must give the model's own output on a few samples.

This is the one module that reaches into torch's private parts: dynamo's recompilation limits and the
registry of global forward hooks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.func import functional_call

from . import sums
from .base import Kernel
from .batches import SetData
from .problem import Layout, Problem

UNROLL = 8  # points per compiled call at most: the compiled graph grows with each
RECOMPILE_LIMIT = 256  # shapes compiled per function: each batch size and a set's shorter last batch is one
FAN_IN = 32  # inputs of a first layer taken by linearity, at least (below, its product is cheap)
MEMORY = 1 << 30  # bytes the first layer's arrays of one data set may take
_RESHAPES = {"reshape", "view", "flatten", "contiguous"}
_PLAIN = (nn.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear)


def _compiled(function):
    """``function`` through ``torch.compile`` with static shapes, raising when torch would give up
    compiling (compiled and eager values differ in their last bits)."""
    import torch._dynamo as dynamo  # compiling only: dynamo loads much of torch's compiler stack

    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, max(getattr(dynamo.config, name), RECOMPILE_LIMIT))
    if hasattr(dynamo.config, "fail_on_recompile_limit_hit"):
        dynamo.config.fail_on_recompile_limit_hit = True
    return torch.compile(function, dynamic=False)


class Compiled(Kernel):
    name = "compiled"

    def __init__(self, problem: Problem, batch_size: int, points_per_pass: int):
        start = _first_layer(problem)
        self.start = start
        if start is not None:
            problem = _after(problem, start)
        super().__init__(problem, batch_size, points_per_pass)
        self.group = min(points_per_pass, UNROLL)
        self.whole = _compiled(self._whole)  # a pass over one batch holding every set: one call
        self.step = _compiled(self._step)  # one batch of a pass over several
        self.made = _compiled(self._made)  # the points' weights, once per call of a pass over several

    @classmethod
    def refuses(cls, problem: Problem) -> str:
        if problem.recalibrator is not None:
            return "BatchNorm recalibration re-estimates statistics point by point"
        return ""

    def _made(self, coefficients: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        p = self.problem
        stacked = p.origin
        for axis, row in enumerate(p.plane):
            stacked = stacked + coefficients[:, axis : axis + 1] * row
        for start, end in p.variances:
            stacked[:, start:end].clamp_(min=0.0)
        return [p.layout.views(point) for point in stacked.to(p.dtype)]

    def _step(self, coefficients, weights, x, y, runs) -> torch.Tensor:
        p = self.problem
        outputs = torch.stack(
            [
                functional_call(p.model, w, (x if self.start is None else LinearStart.at(x, coefficients[k]),))
                for k, w in enumerate(weights)
            ]
        )
        if p.loss.name == "crossentropy" and p.with_accuracy and outputs.dim() == 3 and y.dim() == 1:
            return _classifier_sums(outputs, y, runs, self._sets())
        return sums.of_outputs(outputs, y, runs, p.loss, p.with_accuracy, self._sets())

    def _whole(self, coefficients, x, y, runs) -> torch.Tensor:
        return sums.finished(self._step(coefficients, self._made(coefficients), x, y, runs))

    def _call(self, coefficients: torch.Tensor) -> torch.Tensor:
        batches = self.problem.sets.batches(self.batch_size)
        if len(batches) == 1 and len(batches[0].runs) == self._sets():
            batch = batches[0]
            return self.whole(coefficients, batch.inputs, batch.targets, batch.runs)
        weights = self.made(coefficients)
        total = 0
        for batch in batches:
            total = total + self.step(coefficients, weights, batch.inputs, batch.targets, batch.runs)
        return sums.finished(total)

    def _pass(self, coefficients: torch.Tensor) -> torch.Tensor:
        full = len(coefficients) - len(coefficients) % self.group
        parts = [self._call(coefficients[i : i + self.group]) for i in range(0, full, self.group)]
        parts += [self._call(coefficients[i : i + 1]) for i in range(full, len(coefficients))]
        return parts[0] if len(parts) == 1 else torch.cat(parts)


def _classifier_sums(scores: torch.Tensor, targets: torch.Tensor, runs: tuple, sets: int) -> torch.Tensor:
    """``sums.of_outputs`` for class scores ``(K, B, C)`` and the cross-entropy, from one maximum per sample
    instead of a log-softmax and an argmax: compiled, one pass over the scores."""
    logits = scores if scores.element_size() >= 4 else scores.float()
    top = logits.amax(dim=-1, keepdim=True)  # NaN wherever a score is NaN
    shifted = logits - top
    label = targets.unsqueeze(-1).expand(*logits.shape[:-1], 1)
    terms = torch.exp(shifted.clamp(min=exp_floor(logits.dtype)))
    losses = (torch.log(terms.sum(dim=-1)) - shifted.gather(-1, label).squeeze(-1)).to(torch.float64)
    classes = torch.arange(logits.shape[-1], device=logits.device)
    tied_before = ((logits == top) & (classes < targets.unsqueeze(-1))).any(dim=-1)
    right = ((logits.gather(-1, label) == top).squeeze(-1) & ~tied_before).to(torch.float64)
    broken = torch.isnan(top.squeeze(-1)).to(torch.float64)
    rows = torch.stack([losses, losses * losses, right, broken], dim=1)  # (K, 4, B)
    parts = {s: rows[..., a:b].sum(dim=-1) for s, a, b in runs}
    zero = rows.new_zeros((len(scores), 4))
    return torch.stack([parts.get(s, zero) for s in range(sets)], dim=1)


def exp_floor(dtype: torch.dtype) -> float:
    """The least whole number whose exp is a normal float64 (-708) for float64 scores, a normal float32
    (-87) for any other."""
    widest = torch.float64 if dtype == torch.float64 else torch.float32
    return float(math.ceil(math.log(torch.finfo(widest).tiny)))


# --------------------------------------------------------------------------- the first layer by linearity


@dataclass(frozen=True)
class LinearStart:
    """The model after its first linear layer (``tail``: a module taking that layer's output), the layer,
    and the names of its weight and bias in the model."""

    tail: nn.Module
    layer: nn.Linear
    weight: str
    bias: str | None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.weight,) if self.bias is None else (self.weight, self.bias)

    @torch.no_grad()
    def features(
        self,
        model: nn.Module,
        inputs: torch.Tensor,
        origin: dict,
        directions: list[dict],
        dtype: torch.dtype,
        rows: int | None = None,
    ) -> torch.Tensor:
        """``(N, 1 + axes, outputs)``: per sample the layer's output at the origin and along each direction,
        in float64 rounded into ``dtype`` (``origin`` and ``directions``: float64 tensors by name; a tensor
        they lack stays as the model has it and does not move), ``rows`` samples at a time."""

        def part(source: dict, name: str | None, fallback):
            if name is None:
                return None
            return source[name] if name in source else fallback(getattr(self.layer, name.rsplit(".", 1)[-1]))

        as_f64 = lambda t: t.detach().to(torch.float64)
        zero = lambda t: torch.zeros_like(t, dtype=torch.float64)
        pairs = [(part(origin, self.weight, as_f64), part(origin, self.bias, as_f64))]
        pairs += [(part(d, self.weight, zero), part(d, self.bias, zero)) for d in directions]
        rows = rows or max(1, (64 << 20) // (len(pairs) * self.layer.out_features * 8))  # 64 MiB of float64 at once
        out = []
        for i in range(0, len(inputs), rows):
            x = _layer_input(model, self.layer, inputs[i : i + rows]).to(torch.float64)
            out.append(torch.stack([x @ w.T + (c if c is not None else 0.0) for w, c in pairs], dim=1).to(dtype))
        return torch.cat(out)

    @staticmethod
    def at(features: torch.Tensor, coefficients: torch.Tensor) -> torch.Tensor:
        """The layer's output at the point ``coefficients`` from a batch of its ``features``."""
        out = features[:, 0]
        for axis in range(features.shape[1] - 1):
            out = out + coefficients[axis].to(features.dtype) * features[:, axis + 1]
        return out


def _after(problem: Problem, start: LinearStart) -> Problem:
    """The problem of the tail: the data replaced by the first layer's features along the plane, the
    layer's tensors left out of the weights (and any the tail does not use)."""
    views = problem.layout.views(problem.origin)
    directions = [problem.layout.views(row) for row in problem.plane]
    data = {
        name: (start.features(problem.model, x, views, directions, problem.dtype), y)
        for name, (x, y) in problem.sets.data.items()
    }
    held = {
        name
        for name, _ in [
            *start.tail.named_parameters(remove_duplicate=False),
            *start.tail.named_buffers(remove_duplicate=False),
        ]
    }
    kept = [name for name in problem.layout.spans if name in held]
    layout = Layout({name: views[name] for name in kept})
    columns = lambda flat: torch.cat(
        [flat[..., slice(*problem.layout.spans[name])] for name in kept] or [flat[..., :0]], dim=-1
    )
    variances = [span for name, span in layout.spans.items() if name.endswith("running_var")]
    return replace(
        problem,
        model=start.tail,
        layout=layout,
        origin=columns(problem.origin),
        plane=columns(problem.plane),
        variances=variances,
        sets=SetData.of(data, problem.loss.per_sample),
    )


class _Reached(Exception):
    def __init__(self, inputs: torch.Tensor):
        super().__init__()
        self.inputs = inputs


def _layer_input(model: nn.Module, layer: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """What ``layer`` receives when ``model`` runs on ``inputs`` (the model run up to it)."""

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


def _hooked(model: nn.Module) -> bool:
    """Whether forward hooks could see or change what the layer or the model computes (the tail runs its
    leaf modules' hooks, but neither the model's own nor the layer's)."""
    from torch.nn.modules import module as hooks

    return bool(hooks._global_forward_hooks or hooks._global_forward_pre_hooks) or any(
        m._forward_hooks or m._forward_pre_hooks for m in model.modules()
    )


def _first_layer(problem: Problem) -> LinearStart | None:
    example = next(iter(problem.sets.data.values()))[0][:2]
    samples = sum(len(y) for _, y in problem.sets.data.values())
    return find(problem.model, problem.dtype, example, samples)


def find(model: nn.Module, dtype: torch.dtype, example: torch.Tensor, samples: int) -> LinearStart | None:
    """The model's first linear layer and the rest of it, where it qualifies (see the module's text);
    ``example``: a few inputs, ``samples``: how many the features will be made of."""
    if dtype not in (torch.float32, torch.float64) or not len(example) or _hooked(model):
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
    if (
        not _alone(graph, model, node)
        or layer.in_features < FAN_IN
        or samples * 3 * layer.out_features * (torch.finfo(dtype).bits // 8) > MEMORY
    ):
        return None
    found = LinearStart(
        graph, layer, f"{node.target}.weight", f"{node.target}.bias" if layer.bias is not None else None
    )
    try:
        with torch.no_grad():  # one row per sample: a reshape that merges or splits samples would misalign batches
            seen = _layer_input(model, layer, example)
    except (Exception, SystemExit):  # noqa: BLE001 - the model's own forward fails: the evaluator's probe says why
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


def _alone(graph: torch.fx.GraphModule, model: nn.Module, node: torch.fx.Node) -> bool:
    """Whether ``node`` calls a plain linear layer on one tensor, without keywords, the only use of the
    layer, whose tensors are a weight and a bias that no other name of the model shares."""
    if (
        node.op != "call_module"
        or type(graph.get_submodule(node.target)) not in _PLAIN
        or node.kwargs
        or len(node.args) != 1
        or not isinstance(node.args[0], torch.fx.Node)
    ):
        return False
    layer = graph.get_submodule(node.target)
    used = [
        n
        for n in graph.graph.nodes
        if n.op in ("call_module", "get_attr")
        and (n.target == node.target or str(n.target).startswith(node.target + "."))
    ]
    shared = [
        name for name, p in model.named_parameters(remove_duplicate=False) if any(p is q for q in layer.parameters())
    ]
    return (
        len(used) == 1
        and len(shared) == len(list(layer.parameters()))
        and not {name for name, _ in layer.named_parameters()} - {"weight", "bias"}
    )


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
