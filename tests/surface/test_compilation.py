"""compilation: split_bias, the graph pass of UnrolledSweep's compiled passes, and compiled() with it."""
import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from landscape.surface import compilation
from landscape.surface.compilation import compiled, split_bias

aten = torch.ops.aten


def traced(fn, *args):
    """``fn``'s aten graph, each node carrying its fake value, as inductor's post-grad passes see it."""
    return make_fx(fn, tracing_mode="fake")(*args)


def targets(graph) -> list:
    return [node.target for node in graph.nodes if node.op == "call_function"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_linear_layer_becomes_a_product_and_a_bias_added_after_it(dtype):
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*shape, generator=g, dtype=dtype) for shape in ((7, 5), (3, 5), (3,)))
    module = traced(lambda x, w, b: torch.relu(F.linear(x, w, b)), x, w, b)
    assert aten.addmm.default in targets(module.graph)
    split_bias(module.graph)
    module.recompile()
    assert aten.addmm.default not in targets(module.graph)
    assert aten.mm.default in targets(module.graph) and aten.add.Tensor in targets(module.graph)
    assert torch.allclose(module(x, w, b), torch.relu(F.linear(x, w, b)), rtol=1e-6, atol=1e-6)


def test_low_precision_and_a_full_matrix_added_keep_their_addmm():
    """bfloat16's addmm rounds the product once; a 2-D input is not a bias broadcast over the rows."""
    x, w, b = torch.randn(7, 5, dtype=torch.bfloat16), torch.randn(3, 5, dtype=torch.bfloat16), torch.randn(3)
    low = traced(lambda x, w, b: F.linear(x, w, b), x, w, b.bfloat16())
    full = traced(lambda c, x, w: torch.addmm(c, x, w.t()), torch.randn(7, 3), x.float(), w.float())
    for module in (low, full):
        before = targets(module.graph)
        split_bias(module.graph)
        assert targets(module.graph) == before


@pytest.mark.parametrize("split_biases", [False, True])
def test_compiled_linear_layers_split_their_biases_only_when_asked_and_agree_with_eager_ones(monkeypatch,
                                                                                          split_biases):
    graphs = []

    def recording(graph):
        graphs.append(targets(graph))
        split_bias(graph)
        graphs.append(targets(graph))

    monkeypatch.setattr(compilation, "split_bias", recording)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(50, 6)
    with torch.inference_mode(), torch._inductor.config.patch(fx_graph_cache=False):
        assert torch.allclose(compiled(model, split_biases)(x), model(x), rtol=1e-5, atol=1e-6)
    if split_biases:
        assert len(graphs) == 2 and graphs[0].count(aten.addmm.default) == 2 and aten.addmm.default not in graphs[1]
    else:
        assert graphs == []


def test_the_pass_is_keyed_in_inductors_cache_by_this_modules_code():
    from torch._inductor.custom_graph_pass import get_hash_for_files
    apart = compilation._bias_apart()
    assert apart is compilation._bias_apart() and apart.uuid() == get_hash_for_files((compilation.__file__,))
