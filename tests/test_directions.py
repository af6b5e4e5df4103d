"""Directions: filter normalization, ignored 1-D tensors, states, targets, seeds."""

import pytest
import torch

from landscape import directions as dirs
from landscape.errors import ConfigError, InputError, MismatchError
from landscape.models import DigitsCNN, DigitsMLP


def trained_like(model):
    torch.manual_seed(5)
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.is_floating_point():
                t.add_(torch.randn_like(t) * 0.3)
    return model


def draw(origin, norm="filter", ignore="biasbn", seed=0):
    return dirs.random_direction(origin, norm, ignore, torch.Generator().manual_seed(seed))


def test_each_filter_has_the_norm_of_the_weights_filter():
    origin = dirs.origin_tensors(trained_like(DigitsCNN()), "weights")
    d = draw(origin)
    checked = 0
    for name, w in origin.items():
        if w.dim() <= 1:
            continue
        for j in range(w.shape[0]):  # conv output channel, or linear output row
            assert torch.allclose(d[name][j].norm(), w[j].norm(), rtol=1e-9, atol=1e-12), (name, j)
            checked += 1
    assert checked == 16 + 32 + 10


def test_biasbn_zeroes_one_dimensional_tensors_and_keeps_the_others():
    origin = dirs.origin_tensors(trained_like(DigitsCNN()), "weights")
    d = draw(origin)
    for name, w in origin.items():
        if w.dim() <= 1:
            assert torch.count_nonzero(d[name]) == 0, name
        else:
            assert torch.count_nonzero(d[name]) == w.numel(), name


def test_without_ignore_one_dimensional_tensors_are_normalized_entry_by_entry():
    origin = dirs.origin_tensors(trained_like(DigitsMLP()), "weights")
    d = draw(origin, ignore="none")
    bias = "net.1.bias"
    assert torch.allclose(d[bias].abs(), origin[bias].abs(), rtol=1e-9)


def test_layer_weight_and_unit_normalizations():
    origin = dirs.origin_tensors(trained_like(DigitsMLP()), "weights")
    raw = draw(origin, norm="none")
    name = "net.1.weight"
    assert torch.allclose(draw(origin, "layer")[name].norm(), origin[name].norm())
    assert torch.allclose(draw(origin, "weight")[name], raw[name] * origin[name])
    assert torch.allclose(draw(origin, "dlayer")[name].norm(), torch.tensor(1.0, dtype=torch.float64))
    assert torch.allclose(draw(origin, "dfilter")[name].norm(dim=1), torch.ones(128, dtype=torch.float64))


def test_states_include_batchnorm_running_statistics():
    model = trained_like(DigitsCNN())
    weights = dirs.origin_tensors(model, "weights")
    states = dirs.origin_tensors(model, "states")
    assert "features.1.running_var" in states and "features.1.running_var" not in weights
    assert "features.1.num_batches_tracked" not in states  # integer buffers are never moved
    assert set(weights) < set(states)


def test_same_seed_same_direction_other_seed_other_direction():
    origin = dirs.origin_tensors(trained_like(DigitsCNN()), "weights")
    a, b, c = draw(origin, seed=3), draw(origin, seed=3), draw(origin, seed=4)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["classifier.weight"], c["classifier.weight"])


def test_target_direction_reaches_the_target_at_one():
    origin = dirs.origin_tensors(trained_like(DigitsCNN()), "states")
    target = {k: v + 1.5 for k, v in origin.items()}
    d = dirs.target_direction(origin, target)
    assert all(torch.equal(origin[k] + d[k], target[k]) for k in origin)


def test_mismatched_direction_names_what_differs():
    origin = dirs.origin_tensors(DigitsCNN(), "weights")
    other = dirs.origin_tensors(DigitsMLP(), "weights")
    with pytest.raises(MismatchError, match="made for another model: missing"):
        dirs.check_matches(other, origin, "direction file d.h5")
    with pytest.raises(InputError, match="does not match the model"):
        dirs.target_direction(origin, other)


def test_bad_settings_name_the_parameter():
    with pytest.raises(ConfigError, match="ynorm=sideways: expected one of filter"):
        dirs.check_norm("sideways", "ynorm")
    with pytest.raises(ConfigError, match="dir_type=grads: expected one of weights, states"):
        dirs.check_dir_type("grads")
