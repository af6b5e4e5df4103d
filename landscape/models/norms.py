"""The normalization layers that keep running statistics (BatchNorm): what training moves once per step,
what ``states`` directions move, and what recalibration re-estimates at a grid point."""

from __future__ import annotations

from torch import nn

# torch's BatchNorm layers, by their public classes (their common base is private)
BATCHNORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


def batchnorm_layers(model: nn.Module) -> dict[str, nn.Module]:
    """The BatchNorm layers of ``model`` that keep running statistics, by module name."""
    return {name: m for name, m in model.named_modules() if isinstance(m, BATCHNORMS) and m.track_running_stats}
