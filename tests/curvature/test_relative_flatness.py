"""Relative flatness (Petzka et al. 2021) against its definition computed from the explicit Hessian, a
least-squares model where it is ‖w‖² tr H in closed form, and the rescalings it must not see (and one it
does, so that the test can fail)."""

import copy

import numpy as np
import pytest
import torch

from landscape.curvature import Hessian
from landscape.curvature.relative_flatness import relative_flatness

from .test_layers import explicit, small_net_and_data
from .test_sharpness import least_squares

pytestmark = pytest.mark.usefixtures("one_thread")


def by_definition(h: Hessian) -> dict[str, float]:
    """Σ_{s,s'} ⟨W_s, W_s'⟩ Σ_j H[(s,j),(s',j)] for every parameter tensor, from the explicit Hessian."""
    full, flat, out, start = explicit(h), h.flat_params(), {}, 0
    for name, shape, size in zip(h.names, h.shapes, h.sizes):
        rows = shape[0]
        w = flat[start : start + size].reshape(rows, -1)
        block = full[start : start + size, start : start + size].reshape(rows, w.shape[1], rows, w.shape[1])
        out[name] = float(np.einsum("ab,ajbj->", w @ w.T, block))
        start += size
    return out


def test_a_single_output_least_squares_model_has_the_closed_form_norm_squared_times_trace():
    model, samples, D, w = least_squares()
    h = Hessian(model, samples, loss="mse")
    exact = float(w @ w) * 2 * D.sum()  # H = 2 diag(D); one row: κ = ‖w‖² tr H
    assert by_definition(h)["weight"] == pytest.approx(exact, rel=1e-10)
    found = relative_flatness(h, samples=20, seed=0)  # H diagonal: each Rademacher sample is exact
    assert found.value == pytest.approx(exact, rel=1e-10) and found.stderr < 1e-10 * exact


def test_the_estimate_is_unbiased_for_the_definition_on_a_network_with_biases():
    net, data = small_net_and_data()
    h = Hessian(net, data)
    exact = by_definition(h)
    found = relative_flatness(h, samples=400, seed=1)
    assert abs(found.value - sum(exact.values())) < 4 * found.stderr
    assert found.products == 400
    for module in ("0", "2"):
        value, stderr = found.by_layer[module]
        assert abs(value - exact[f"{module}.weight"] - exact[f"{module}.bias"]) < 4 * stderr + 1e-12
    assert found.record()["by_layer"]["0"]["value"] == found.by_layer["0"][0]


def test_a_layerwise_rescaling_leaves_it_unchanged_sample_by_sample_and_changes_the_trace():
    net, data = small_net_and_data()
    scaled = copy.deepcopy(net)
    with torch.no_grad():
        scaled[0].weight.mul_(3.0)
        scaled[0].bias.mul_(3.0)
        scaled[2].weight.div_(3.0)
    a, b = Hessian(net, data), Hessian(scaled, data)
    first, second = relative_flatness(a, samples=6, seed=2), relative_flatness(b, samples=6, seed=2)
    assert second.value == pytest.approx(first.value, rel=1e-9)
    exact_a, exact_b = by_definition(a), by_definition(b)
    assert exact_b == pytest.approx(exact_a, rel=1e-9)
    trace_a, trace_b = (np.trace(explicit(h)) for h in (a, b))
    assert abs(trace_b - trace_a) > 0.1 * abs(trace_a)  # what the measure is for


def test_a_units_own_rescaling_leaves_its_tensor_unchanged_and_the_next_tensor_not():
    net, data = small_net_and_data()
    alphas = torch.tensor([0.5, 2.0, 3.0, 1.0, 0.25], dtype=torch.float64)
    scaled = copy.deepcopy(net)
    with torch.no_grad():
        scaled[0].weight.mul_(alphas[:, None])
        scaled[0].bias.mul_(alphas)
        scaled[2].weight.div_(alphas[None, :])
    a, b = Hessian(net, data), Hessian(scaled, data)
    assert a.mean_loss() == pytest.approx(b.mean_loss(), rel=1e-12)
    exact_a, exact_b = by_definition(a), by_definition(b)
    for name in ("0.weight", "0.bias", "2.bias"):
        assert exact_b[name] == pytest.approx(exact_a[name], rel=1e-9)
    assert abs(exact_b["2.weight"] - exact_a["2.weight"]) > 1e-3 * abs(exact_a["2.weight"])


def test_too_few_samples_are_refused():
    net, data = small_net_and_data()
    with pytest.raises(ValueError, match="samples=1"):
        relative_flatness(Hessian(net, data), samples=1)
