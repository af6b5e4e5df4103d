"""How a sweep's work is compiled: ``torch.compile`` with static shapes, and two graph passes of our own.

A linear layer reaches inductor as ``addmm(bias, x, weight)``; on a CPU torch runs that by copying
the bias into every row of the output before the matrix product adds onto it, a pass over the
whole output (digits MLP, 1,797 samples: 31 µs for the first layer's 1,797 x 128, about as long as
its ReLU).  ``split_bias`` writes it as ``mm(x, weight) + bias``, so the bias is added by the kernel
inductor makes anyway for what follows (the ReLU, the loss's reductions), as it is after a vmapped
``bmm``; it does so whatever follows, since where nothing fuses the add costs the pass the copy did.

A model's class scores are a samples x classes product, each sample's few scores side by side;
``losses.cross_entropy_terms_by_class`` reads them class by class, which runs fastest when each
class's scores lie side by side instead.  ``classes_as_rows`` computes a product that is only read
column by column transposed, ``mm(weight.T, x.T)``, so its columns are rows (the matrix library
takes either operand transposed at no cost).

Both change the order of a sum, so its last bits: only the passes whose files record them
(``UnrolledSweep``'s, ``sweep.COMPILED_PASSES``) compile with them.  bfloat16 and float16 keep
``addmm``: there its product is rounded only once.  torch's inductor is imported only when something
is compiled, and a torch without custom graph passes compiles without them.
"""
from __future__ import annotations

import functools

import torch

RECOMPILE_LIMIT = 256  # shapes compiled per step: each batch size (and a set's shorter last batch) is one
# classes_as_rows transposes products of this many inputs (the inner dimension) at most: the transposed
# (1,797 x K) by (K x 10) product took the time of the plain one up to K = 256 (105 µs) and 2.2x it at
# K = 512 (501 against 232 µs, one thread of the Xeon), which cost the demo CNN's 512-input classifier 2.4 %
# of a point; past it the class-by-class loss reads its scores strided (a few µs a point).
ROWS_INNER = 256


def split_bias(graph: torch.fx.Graph) -> None:
    """In an aten graph whose nodes carry their (fake) values, each CPU float32 or float64 ``addmm`` of a
    1-D bias becomes ``mm`` + bias."""
    aten = torch.ops.aten
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.addmm.default or node.kwargs or len(node.args) > 3:
            continue
        bias, left, right = node.args
        value = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
        if not _cpu_float(value) or value.dim() != 1 or not _carry_values(left, right):
            continue
        with graph.inserting_before(node):
            total = _call(graph, aten.add.Tensor, _call(graph, aten.mm.default, left, right), bias)
        node.replace_all_uses_with(total)
        graph.erase_node(node)


def classes_as_rows(graph: torch.fx.Graph) -> None:
    """In an aten graph whose nodes carry their (fake) values, a CPU float32 or float64 ``mm`` of at most
    ``ROWS_INNER`` inputs, with or without a 1-D bias added, that is only unbound along its last dimension
    is computed transposed and unbound along its first: the same columns, each now contiguous."""
    aten = torch.ops.aten
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.unbind.int or node.kwargs:
            continue
        source, dim = node.args[0], (node.args[1] if len(node.args) > 1 else 0)
        value = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
        if not _cpu_float(value) or value.dim() != 2 or dim not in (1, -1) or len(source.users) != 1:
            continue
        product, bias = source, None
        if source.target is aten.add.Tensor and len(source.args) == 2 and not source.kwargs:
            product, bias = (source.args if _is(source.args[0], aten.mm.default) else source.args[::-1])
            bias_value = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
            if bias_value is None or bias_value.dim() != 1:
                continue
        if not _is(product, aten.mm.default) or len(product.users) != 1:
            continue
        left, right = product.args
        if not _carry_values(left, right) or left.meta["val"].shape[-1] > ROWS_INNER:
            continue
        with graph.inserting_before(node):
            rows = _call(graph, aten.mm.default, _call(graph, aten.permute.default, right, [1, 0]),
                         _call(graph, aten.permute.default, left, [1, 0]))
            if bias is not None:
                rows = _call(graph, aten.add.Tensor, rows, _call(graph, aten.unsqueeze.default, bias, 1))
            columns = _call(graph, aten.unbind.int, rows, 0)
        node.replace_all_uses_with(columns)
        for gone in (node, source, product) if bias is not None else (node, product):
            graph.erase_node(gone)


def _cpu_float(value) -> bool:
    return value is not None and value.device.type == "cpu" and value.dtype in (torch.float32, torch.float64)


def _carry_values(*nodes) -> bool:
    """Whether ``nodes`` all carry the fake values ``_call`` derives its own from (graph constants may not)."""
    return all(isinstance(n, torch.fx.Node) and "val" in n.meta for n in nodes)


def _is(node, target) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target is target


def _call(graph: torch.fx.Graph, target, *args) -> torch.fx.Node:
    """A new node of ``target`` on ``args``, carrying its fake value as the nodes around it do."""
    node = graph.call_function(target, args)
    node.meta["val"] = target(*(a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args))
    return node


@functools.cache
def _cpu_passes():
    """``split_bias`` and then ``classes_as_rows`` as an inductor post-grad pass (None where this torch has
    none); its uuid, inductor's cache key for the graphs it compiled, is a hash of this file, so a changed
    pass is never served graphs the old one made."""
    try:
        from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files
    except ImportError:
        return None

    class CpuPasses(CustomGraphPass):
        def __call__(self, graph: torch.fx.Graph) -> None:
            split_bias(graph)
            classes_as_rows(graph)

        def uuid(self) -> bytes:
            return get_hash_for_files((__file__,))

    return CpuPasses()


def cpu_passes_available() -> bool:
    """Whether this torch takes our graph passes (a torch without custom post-grad passes compiles without)."""
    return _cpu_passes() is not None


def compiled(step, cpu_passes: bool = False):
    """``step`` through ``torch.compile`` with static shapes: each batch shape is compiled once, when
    first seen (symbolic shapes were tried: they recompiled all the same for convolutions and broke
    inductor on ResNet-20).  Should torch ever give up compiling (too many recompilations), it must
    raise rather than quietly run some points eagerly, since compiled and eager values differ in
    their last bits.  ``cpu_passes``: with ``split_bias`` and ``classes_as_rows``."""
    import torch._dynamo as dynamo
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, max(getattr(dynamo.config, name), RECOMPILE_LIMIT))
    if hasattr(dynamo.config, "fail_on_recompile_limit_hit"):
        dynamo.config.fail_on_recompile_limit_hit = True
    passes = _cpu_passes() if cpu_passes else None
    options = {"post_grad_custom_post_pass": passes} if passes is not None else None
    return torch.compile(step, dynamic=False, options=options)
