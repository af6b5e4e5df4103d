"""What a training run holds while it trains (``Session``: set up once, handed to the epochs, the log rows
and the checkpoints) and what a finished run reports (``Result``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..data import Samples
from ..losses import Loss
from ..parallel.comm import MpiComm, SerialComm
from ..parallel.distributed import Collective
from . import targets
from .config import TrainJob


@dataclass
class Result:
    """What a finished (or already finished) run reports."""

    out: str
    final: str
    history: list[dict]
    seconds: float
    resumed_from: int | None = None


@dataclass
class Session:
    """What a run has set up before its first step, handed to the epochs and the checkpoints."""

    job: TrainJob
    comm: SerialComm | MpiComm  # parallel.comm's communicator
    say: Callable[..., None]  # print on rank 0 unless quiet; a no-op elsewhere
    model: torch.nn.Module
    collective: Collective  # parallel.distributed's gradient collective
    train: Samples
    test: Samples | None
    fill: torch.Tensor | None  # augmentation's fill value
    loss: Loss
    identity: dict
    threads: int
    device: str
    diverged: dict | None = None  # where the training loss first became non-finite (allow_nonfinite goes on)
    curvature_every: int | None = None  # steps between λmax values (TrainJob.curvature_interval)
    watch: targets.Watch | None = None  # the stop rule and the levels whose weights are kept
