"""compilation: split_bias and classes_as_rows, the graph passes of UnrolledSweep's compiled passes, and compiled()
with them."""
import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from landscape.surface import compilation
from landscape.surface.compilation import classes_as_rows, compiled, split_bias

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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias", ["after", "before", None])
def test_a_product_read_column_by_column_is_computed_with_the_columns_as_rows(dtype, bias):
    """A bias added after the product (as split_bias writes it) or before it, or none."""
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*shape, generator=g, dtype=dtype) for shape in ((7, 5), (3, 5), (3,)))

    def scores(x, w, b):
        product = x @ w.t()
        columns = {"after": lambda: product + b, "before": lambda: b + product, None: lambda: product}[bias]().unbind(-1)
        return columns[0] * columns[1] - columns[2]

    module = traced(scores, x, w, b)
    split_bias(module.graph)
    unbound = [n for n in module.graph.nodes if n.target is aten.unbind.int]
    assert len(unbound) == 1 and unbound[0].args[1] in (1, -1)
    classes_as_rows(module.graph)
    module.graph.lint()
    module.recompile()
    unbound = [n for n in module.graph.nodes if n.target is aten.unbind.int]
    assert len(unbound) == 1 and unbound[0].args[1] == 0 and unbound[0].meta["val"][0].shape == (7,)
    rows = unbound[0].args[0]
    assert (rows.meta["val"].shape == (3, 7) and rows.meta["val"].is_contiguous()
            and targets(module.graph).count(aten.mm.default) == 1)
    assert torch.allclose(module(x, w, b), scores(x, w, b), rtol=1e-6, atol=1e-6)


def test_products_read_otherwise_and_sums_of_two_products_keep_their_layout():
    """The product read as a whole besides its columns, one added to another product rather than a bias,
    and a product unbound along its rows are left as they are."""
    x, w = torch.randn(7, 5), torch.randn(3, 5)
    def twice(x, w):
        product = x @ w.t()
        return product.unbind(-1)[0] + product.sum()

    cases = [
        (twice, (x, w)),
        (lambda x, w: ((x @ w.t()) + (x @ w.t()).cos()).unbind(-1)[1], (x, w)),
        (lambda x, w: (x @ w.t()).unbind(0)[2], (x, w)),
        (lambda x, w: (x @ w.t()).double().unbind(-1)[0], (x, w)),
    ]
    for fn, args in cases:
        module = traced(fn, *args)
        before = [(node.target, node.args) for node in module.graph.nodes]
        classes_as_rows(module.graph)
        assert [(node.target, node.args) for node in module.graph.nodes] == before


def test_a_product_of_more_inputs_than_rows_inner_keeps_its_layout():
    """Transposed, a product of many inputs and few columns is slower (the demo CNN's classifier)."""
    for inputs, rewritten in ((compilation.ROWS_INNER, True), (compilation.ROWS_INNER + 1, False)):
        module = traced(lambda x, w: (x @ w.t()).unbind(-1)[0], torch.randn(7, inputs), torch.randn(3, inputs))
        classes_as_rows(module.graph)
        unbound = [n for n in module.graph.nodes if n.target is aten.unbind.int]
        assert unbound[0].args[1] in ((0,) if rewritten else (1, -1))


def test_operands_without_fake_values_are_left_alone():
    """A graph's constants may carry no fake value, from which the passes would derive their new nodes'."""
    x, w, b = torch.randn(7, 5), torch.randn(3, 5), torch.randn(3)
    for fn, rewrite in ((lambda x, w, b: (x @ w.t() + b).unbind(-1)[0], classes_as_rows),
                        (lambda x, w, b: F.linear(x, w, b), split_bias)):
        module = traced(fn, x, w, b)
        product = next(node for node in module.graph.nodes if node.target in (aten.mm.default, aten.addmm.default))
        del product.args[-1].meta["val"]  # the weight's operand
        before = [(node.target, node.args) for node in module.graph.nodes]
        rewrite(module.graph)
        assert [(node.target, node.args) for node in module.graph.nodes] == before


@pytest.mark.slow
@pytest.mark.parametrize("cpu_passes", [False, True])
def test_compiled_linear_layers_take_our_passes_only_when_asked_and_agree_with_eager_ones(monkeypatch, cpu_passes):
    """A classifier whose loss reads its scores class by class: with the passes, its linear layers lose their
    addmm and its last product has the classes as rows."""
    from landscape.surface.losses import cross_entropy_terms_by_class
    graphs = []

    def recording(graph):
        graphs.append(targets(graph))
        split_bias(graph)
        graphs.append(targets(graph))

    def rows_recording(graph):
        classes_as_rows(graph)
        graphs.append([node.args[1] for node in graph.nodes if node.target is aten.unbind.int])

    monkeypatch.setattr(compilation, "split_bias", recording)
    monkeypatch.setattr(compilation, "classes_as_rows", rows_recording)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    x, y = torch.randn(50, 6), torch.randint(0, 4, (50,))

    def loss(x, y):
        return cross_entropy_terms_by_class(model(x), y)

    with torch.inference_mode(), torch._inductor.config.patch(fx_graph_cache=False):
        got, expected = compiled(loss, cpu_passes)(x, y), loss(x, y)
    assert torch.allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    assert all(torch.equal(a, b) for a, b in zip(got[1:], expected[1:]))
    if cpu_passes:
        assert len(graphs) == 3 and graphs[0].count(aten.addmm.default) == 2 and aten.addmm.default not in graphs[1]
        assert graphs[2] == [0]
    else:
        assert graphs == []


def test_the_passes_are_keyed_in_inductors_cache_by_this_modules_code():
    from torch._inductor.custom_graph_pass import get_hash_for_files
    passes = compilation._cpu_passes()
    assert passes is compilation._cpu_passes() and passes.uuid() == get_hash_for_files((compilation.__file__,))
