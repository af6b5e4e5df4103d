"""Per-layer curvature against the explicit Hessian of a small network: each block's top eigenvalue is
that of the block of the matrix, each trace its diagonal's sum; a layer-wise rescaling moves curvature
from one layer to the next by α², which the whole network's λmax cannot say."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from landscape.curvature import Hessian
from landscape.curvature.layers import Block, per_layer, split, traces
from landscape.data import Samples

pytestmark = pytest.mark.usefixtures("one_thread")


def small_net_and_data(seed: int = 0):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)).double()
    g = torch.Generator().manual_seed(seed + 1)
    data = Samples(torch.randn(40, 4, generator=g, dtype=torch.float64), torch.randint(0, 3, (40,), generator=g))
    return net, data


def explicit(h: Hessian) -> np.ndarray:
    """The whole Hessian, a product per column."""
    return np.stack([h.matvec(e) for e in np.eye(h.dim)], axis=1)


def test_layers_are_modules_in_order_with_their_slices():
    net, data = small_net_and_data()
    h = Hessian(net, data)
    layers = split(h)
    assert [(layer.name, layer.parameters) for layer in layers] == [
        ("0", ("0.weight", "0.bias")),
        ("2", ("2.weight", "2.bias")),
    ]
    assert [layer.size for layer in layers] == [25, 18] and sum(layer.size for layer in layers) == h.dim
    v = np.arange(h.dim, dtype=float)
    assert np.array_equal(layers[1].take(v), v[25:])
    assert np.array_equal(layers[1].put(layers[1].take(v), h.dim), np.r_[np.zeros(25), v[25:]])


def test_each_block_and_its_top_eigenvalue_and_trace_match_the_explicit_hessian():
    net, data = small_net_and_data()
    h = Hessian(net, data)
    full = explicit(h)
    found = per_layer(h, samples=400, tol=1e-8)
    for layer, result in zip(split(h), found):
        index = np.concatenate([np.arange(s.start, s.stop) for s in layer.slices])
        block = full[np.ix_(index, index)]
        v = np.random.default_rng(0).standard_normal(layer.size)
        assert np.allclose(Block(h, layer).matvec(v), block @ v, rtol=1e-10, atol=1e-12)
        assert result.lambda_max == pytest.approx(np.linalg.eigvalsh(block)[-1], rel=1e-6)
        assert result.converged and result.residual < 1e-5
        assert abs(result.trace - np.trace(block)) < 4 * result.trace_stderr + 1e-9
        assert result.weight_norm == pytest.approx(float(np.linalg.norm(h.flat_params()[index])))


def test_traces_share_their_samples_and_repeat_with_the_seed():
    net, data = small_net_and_data()
    h = Hessian(net, data)
    before = h.products
    first = traces(h, split(h), samples=5, seed=3)
    assert h.products - before == 5  # one product per sample serves every layer
    assert traces(h, split(h), samples=5, seed=3) == first
    with pytest.raises(ValueError, match="samples=1"):
        traces(h, split(h), samples=1)


def test_a_layerwise_rescaling_moves_curvature_between_layers_by_alpha_squared():
    net, data = small_net_and_data()
    alpha = 3.0
    scaled = copy.deepcopy(net)
    with torch.no_grad():
        scaled[0].weight.mul_(alpha)
        scaled[0].bias.mul_(alpha)
        scaled[2].weight.div_(alpha)
    a, b = Hessian(net, data), Hessian(scaled, data)
    assert a.mean_loss() == pytest.approx(b.mean_loss(), rel=1e-12)
    full_a, full_b = explicit(a), explicit(b)
    first, second = (np.arange(20), np.arange(25, 40))  # the weights of layer 0 and of layer 2
    for index, factor in ((first, alpha**-2), (second, alpha**2)):
        top_a = np.linalg.eigvalsh(full_a[np.ix_(index, index)])[-1]
        top_b = np.linalg.eigvalsh(full_b[np.ix_(index, index)])[-1]
        assert top_b == pytest.approx(factor * top_a, rel=1e-9)
