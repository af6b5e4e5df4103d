"""The ``--bn`` policy: which (bn, dir_type) pairs it accepts and what each resolves to; and recalibration,
checked on one BatchNorm1d layer: full batches drawn by the seed, statistics that are the batches' mean of
means and of unbiased variances, Dropout left off, and the layers put back even when a forward fails."""

import pytest
import torch
from torch import nn
from torch.func import functional_call

from landscape.errors import UsageError
from landscape.surface.batchnorm import BATCH, Recalibrator, resolve


@pytest.mark.parametrize(
    "bn, dir_type, resolved",
    [
        (None, None, ("eval", "weights")),
        (None, "weights", ("eval", "weights")),
        (None, "states", ("states", "states")),
        ("eval", None, ("eval", "weights")),
        ("recalibrate", "weights", ("recalibrate", "weights")),
        ("states", None, ("states", "states")),
        ("states", "states", ("states", "states")),
    ],
)
def test_each_policy_resolves_with_the_direction_type_it_goes_with(bn, dir_type, resolved):
    assert resolve(bn, dir_type) == resolved


def test_moving_the_statistics_with_weights_directions_is_refused_naming_both():
    with pytest.raises(UsageError, match="bn=states moves the running statistics, which needs dir_type=states"):
        resolve("states", "weights")
    with pytest.raises(UsageError, match="bn=recalibrate keeps or re-estimates .* but dir_type=states moves them"):
        resolve("recalibrate", "states")


def network():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.5)).eval()


def test_only_full_batches_are_drawn_unless_the_data_hold_less_than_one():
    inputs = torch.arange(300.0).view(100, 3)
    recal = Recalibrator(network(), inputs, batches=10, batch_size=40, seed=1)
    assert [len(b) for b in recal.batches] == [40, 40]  # two full batches: the last 20 samples left out
    rows = torch.cat(recal.batches)[:, 0]
    assert len(set(rows.tolist())) == 80  # drawn without repetition
    assert all(torch.equal(a, b) for a, b in zip(recal.batches, Recalibrator(network(), inputs, 10, 40, 1).batches))
    assert not torch.equal(recal.batches[0], Recalibrator(network(), inputs, 10, 40, 2).batches[0])
    few = Recalibrator(network(), inputs[:50], batches=10, seed=1)
    assert BATCH == 128 and [len(b) for b in few.batches] == [50]  # one short batch, never a batch of one


def test_the_statistics_are_the_mean_of_the_batches_means_and_unbiased_variances_with_dropout_off():
    model = network()
    inputs = torch.randn(90, 3, generator=torch.Generator().manual_seed(3))
    recal = Recalibrator(model, inputs, batches=3, batch_size=30)
    modes = []

    def forward(batch, fresh):
        modes.append((model[1].training, model[2].training))
        return functional_call(model, fresh, (batch,))

    with torch.no_grad():
        stats = recal.statistics(forward)
        features = [model[0](batch) for batch in recal.batches]
    assert modes == [(True, False)] * 3
    mean = torch.stack([f.mean(0) for f in features]).mean(0)
    var = torch.stack([f.var(0, unbiased=True) for f in features]).mean(0)
    assert torch.allclose(stats["1.running_mean"], mean, atol=1e-6)
    assert torch.allclose(stats["1.running_var"], var, atol=1e-6)
    assert int(stats["1.num_batches_tracked"]) == 3
    assert not model[1].training and model[1].momentum == 0.1


def test_a_failing_forward_leaves_the_layers_as_they_were():
    model = network()
    recal = Recalibrator(model, torch.randn(64, 3), batches=2, batch_size=32)

    def forward(batch, fresh):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        recal.statistics(forward)
    assert not model[1].training and model[1].momentum == 0.1
