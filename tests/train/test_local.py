"""Periodic averaging's bookkeeping: an average right after one does nothing; buffers are averaged with
the parameters but integer counters are not; SCAFFOLD's control variates double the bytes, and a
checkpoint's ``state`` restored puts them back with the anchor at the restored model (averaging every
H steps and the control variates' rule are in test_recipes)."""

import torch
from torch import nn

from landscape.train.local import Averaging


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))


def test_averaging_right_after_an_average_does_nothing():
    calls = []
    a = Averaging(model(), calls.append, sync_every=2, control_variates=False)
    a.average()
    assert calls == [] and a.bytes == 0
    assert a.stepped(0.1) is False and a.stepped(0.1) is True and len(calls) == 1
    a.average()
    assert len(calls) == 1


def test_floating_parameters_and_buffers_are_averaged_in_place_and_the_counters_are_not():
    """A ``mean`` that sets every tensor it is handed to 7: the model's own tensors must change."""
    m = model()
    m[1].num_batches_tracked.fill_(5)
    handed = []

    def mean(tensors):
        handed.append(len(tensors))
        for t in tensors:
            t.fill_(7.0)

    a = Averaging(m, mean, sync_every=1, control_variates=False)
    a.stepped(0.1)
    floats = {k: v for k, v in m.state_dict().items() if v.is_floating_point()}
    assert handed == [6] and all(bool((v == 7.0).all()) for v in floats.values())  # weight, bias, BN ×2, mean, var
    assert int(m[1].num_batches_tracked) == 5  # each rank keeps its own count
    assert a.bytes == 4 * (6 + 3 + 3 + 3 + 3 + 3)  # float32 elements


def test_control_variates_double_the_parameters_bytes_and_a_restored_state_resumes_them():
    m = model()
    a = Averaging(m, lambda tensors: None, sync_every=1, control_variates=True)
    with torch.no_grad():
        m[0].weight.sub_(0.2)
    a.stepped(0.5)
    params = 6 + 3 + 3 + 3  # the control variates travel with the model: one per parameter
    assert a.bytes == 4 * (6 + 3 + 3 + 3 + 3 + 3 + params)
    assert torch.allclose(a.c_own[0], torch.full((3, 2), 0.2 / 0.5)) and torch.count_nonzero(a.c_own[1]) == 0
    saved = a.state()
    fresh_model = model()
    b = Averaging(fresh_model, lambda tensors: None, sync_every=1, control_variates=True)
    b.restore(saved)
    assert all(torch.equal(x, y) for x, y in zip(b.c_own, a.c_own)) and all(
        torch.equal(x, y) for x, y in zip(b.c_all, a.c_all)
    )
    assert all(torch.equal(x, p.detach()) for x, p in zip(b.anchor, fresh_model.parameters()))
    saved["c_own"][0].fill_(9.0)
    assert not torch.equal(a.c_own[0], saved["c_own"][0])  # the state is a copy
