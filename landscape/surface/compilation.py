"""How a sweep's work is compiled: ``torch.compile`` with static shapes, and one graph pass of our own.

A linear layer reaches inductor as ``addmm(bias, x, weight)``; on a CPU torch runs that by copying
the bias into every row of the output before the matrix product adds onto it, a pass over the
whole output (digits MLP, 1,797 samples: 31 µs for the first layer's 1,797 x 128, about as long as
its ReLU).  ``split_bias`` writes it as ``mm(x, weight) + bias``, so the bias is added by the kernel
inductor makes anyway for what follows (the ReLU, the loss's reductions), as it is after a vmapped
``bmm``; it does so whatever follows, since where nothing fuses the add costs the pass the copy did.
The sum is formed in another order, so its last bits may differ from ``addmm``'s: only the passes
whose files record it (``UnrolledSweep``'s, ``sweep.UNROLLED_PASSES``) compile with it.  bfloat16
and float16 keep ``addmm``: there its product is rounded only once.  torch's inductor is imported
only when something is compiled, and a torch without custom graph passes compiles without it.
"""
from __future__ import annotations

import functools

import torch

RECOMPILE_LIMIT = 256  # shapes compiled per step: each batch size (and a set's shorter last batch) is one


def split_bias(graph: torch.fx.Graph) -> None:
    """In an aten graph whose nodes carry their (fake) values, each CPU float32 or float64 ``addmm`` of a
    1-D bias becomes ``mm`` + bias."""
    aten = torch.ops.aten
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.addmm.default or node.kwargs or len(node.args) > 3:
            continue
        bias, left, right = node.args
        value = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
        if value is None or value.dim() != 1 or value.device.type != "cpu" or value.dtype not in (torch.float32,
                                                                                                    torch.float64):
            continue
        with graph.inserting_before(node):
            product = graph.call_function(aten.mm.default, (left, right))
            product.meta["val"] = aten.mm.default(left.meta["val"], right.meta["val"])
            total = graph.call_function(aten.add.Tensor, (product, bias))
            total.meta["val"] = aten.add.Tensor(product.meta["val"], value)
        node.replace_all_uses_with(total)
        graph.erase_node(node)


@functools.cache
def _bias_apart():
    """``split_bias`` as an inductor post-grad pass (None where this torch has none); its uuid, inductor's
    cache key for the graphs it compiled, is a hash of this file, so a changed pass is never served
    graphs the old one made."""
    try:
        from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files
    except ImportError:
        return None

    class BiasApart(CustomGraphPass):
        def __call__(self, graph: torch.fx.Graph) -> None:
            split_bias(graph)

        def uuid(self) -> bytes:
            return get_hash_for_files((__file__,))

    return BiasApart()


def compiled(step, split_biases: bool = False):
    """``step`` through ``torch.compile`` with static shapes: each batch shape is compiled once, when
    first seen (symbolic shapes were tried: they recompiled all the same for convolutions and broke
    inductor on ResNet-20).  Should torch ever give up compiling (too many recompilations), it must
    raise rather than quietly run some points eagerly, since compiled and eager values differ in
    their last bits.  ``split_biases``: with ``split_bias``."""
    import torch._dynamo as dynamo
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, max(getattr(dynamo.config, name), RECOMPILE_LIMIT))
    if hasattr(dynamo.config, "fail_on_recompile_limit_hit"):
        dynamo.config.fail_on_recompile_limit_hit = True
    apart = _bias_apart() if split_biases else None
    options = {"post_grad_custom_post_pass": apart} if apart is not None else None
    return torch.compile(step, dynamic=False, options=options)
