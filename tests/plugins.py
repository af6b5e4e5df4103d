"""Models and data sets that tests plug in with ``--model tests/plugins.py:NAME``."""

import os
import time

import torch
from torch import nn

N_IN, N_OUT, N_SAMPLES = 5, 3, 40


def linear_model():
    """y = W x + b in float64: with MSE its loss along any two directions is an exact quadratic."""
    torch.manual_seed(1)
    return nn.Linear(N_IN, N_OUT).double()


def regression_data():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(N_SAMPLES, N_IN, generator=g, dtype=torch.float64)
    t = torch.randn(N_SAMPLES, N_OUT, generator=g, dtype=torch.float64)
    return (x, t), (x[:10] * 2, t[:10])


class Slow(nn.Module):
    """A small classifier that sleeps at every forward pass: a job that takes a while. With
    ``LANDSCAPE_TEST_HOLD`` naming a file it sleeps only while that file exists: a test holds the job
    while it looks at it, then lets it finish at full speed."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x):
        hold = os.environ.get("LANDSCAPE_TEST_HOLD")
        if hold is None or os.path.exists(hold):
            time.sleep(float(os.environ.get("LANDSCAPE_TEST_SLEEP", "0.05")))
        return self.net(x)


def slow_model():
    return Slow()


class FailsFar(nn.Module):
    """Raises once the weights are far from the origin (its initial weights, as no checkpoint is
    loaded): on a grid 0:1:N only the rank that owns the last points fails."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
        self.start = self.net[1].weight.detach().clone()

    def forward(self, x):
        w = self.net[1].weight
        if (w - self.start).norm() > 0.75 * self.start.norm():
            raise RuntimeError("simulated failure far from the origin")
        return self.net(x)


def failing_model():
    return FailsFar()


class FailsOnRankOne(nn.Module):
    """Raises on MPI rank 1 for a batch of exactly ``$LANDSCAPE_TEST_FAIL_BATCH`` samples: 128 when unset;
    the first batch ``--batch_size auto``'s measurement runs (a failure while every rank measures the
    settings); 2 for the first kernel auto builds (its check of the model on 2 samples)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
        self.batch = int(os.environ.get("LANDSCAPE_TEST_FAIL_BATCH", "128"))

    def forward(self, x):
        from landscape.parallel.comm import launcher_rank

        if launcher_rank() == 1 and x.shape[0] == self.batch:
            raise RuntimeError(f"simulated failure on rank 1 at a batch of {self.batch}")
        return self.net(x)


def measured_always() -> None:
    """These models exist to watch ``auto`` measure, which a surface this small is not otherwise
    (``surface.cost.MEASURE_AFTER``): in the process that builds them, every surface is measured."""
    from landscape.surface import cost

    cost.MEASURE_AFTER = 0.0


def failing_on_rank_one():
    measured_always()
    return FailsOnRankOne()


class MarksBatches(nn.Module):
    """The digits MLP's shape; each rank leaves a file ``RANK-BATCH`` in ``$LANDSCAPE_TEST_SEEN`` for
    every batch size its own forward runs (not a graph traced from it): which ranks ran what."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
        self.seen = set()

    def forward(self, x):
        from landscape.parallel.comm import launcher_rank

        if isinstance(x, torch.Tensor) and x.shape[0] not in self.seen:  # not while torch.fx traces it
            self.seen.add(x.shape[0])
            open(os.path.join(os.environ["LANDSCAPE_TEST_SEEN"], f"{launcher_rank()}-{x.shape[0]}"), "w").close()
        return self.net(x)


def marking_batches():
    measured_always()
    return MarksBatches()


class Diverges(nn.Module):
    """Outputs whose loss is NaN for x > 0, -inf-free: NaN must be stored as a result, not as "to do"."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1, 10))
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x):
        out = self.net(x) * self.scale
        return torch.where(self.scale.sum() > 10, torch.full_like(out, float("nan")), out)


def diverging_model():
    return Diverges()


def not_a_model():
    return "not a model"


def wrong_data():
    return 42


def tensor_data():
    """A Dataset-free pair of tensors and no test split."""
    g = torch.Generator().manual_seed(3)
    return (torch.randn(30, 1, 8, 8, generator=g), torch.randint(0, 10, (30,), generator=g)), None


def exits_at_call():
    raise SystemExit(0)  # a factory that ends the process must not end (or falsely succeed) the job


class ExitsFar(FailsFar):
    """Calls sys.exit(0) once far from the origin: a job must not end there with exit 0."""

    def forward(self, x):
        w = self.net[1].weight
        if (w - self.start).norm() > 0.75 * self.start.norm():
            raise SystemExit(0)
        return self.net(x)


def exiting_model():
    return ExitsFar()
