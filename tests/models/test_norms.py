"""Which layers keep running statistics (``models/norms.py``): what states directions move and
recalibration re-estimates."""

from torch import nn

from landscape.models.norms import batchnorm_layers


def test_only_batchnorm_layers_that_track_running_statistics_are_found_by_name():
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3),
        nn.BatchNorm2d(4),
        nn.BatchNorm2d(4, track_running_stats=False),  # normalizes by the batch alone: nothing to move
        nn.Flatten(),
        nn.LayerNorm(4),  # no running statistics
        nn.BatchNorm1d(4),
    )
    found = batchnorm_layers(model)
    assert list(found) == ["1", "5"]
    assert found["1"] is model[1] and found["5"] is model[5]
    assert batchnorm_layers(nn.Linear(2, 2)) == {}
