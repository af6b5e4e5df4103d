"""The configuration of a surface job: one validated part per concern (model, grid, data, directions,
evaluation, and how the job runs), and the file names they imply."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import checks
from ..data import DataConfig
from ..errors import ConfigError
from ..grid import Grid
from ..io import paths
from ..io.writer import IO_MODES
from ..models import ModelConfig
from ..parallel import devices
from . import batchnorm
from .direction_set import DirectionConfig
from .evaluation import EvaluationConfig


@dataclass(frozen=True)
class RunConfig:
    """Where the surface goes and how the job runs."""

    surf_file: str | None = None  # default: <model_file>.surface.h5, or surface.h5
    threads: int | None = None  # torch threads per rank; default: the node's cores / its ranks
    io: str = "auto"  # mpio, gather, auto
    round_seconds: float = 5.0  # target time between writes: the most a crash can lose
    quiet: bool = False
    progress_seconds: float | None = None  # between progress lines; default 1 in a terminal, 60 in a file
    device: str = "auto"  # auto (CUDA when there is one), cpu, cuda, cuda:N
    allow_shared_gpus: bool = False  # let several ranks of a node share a GPU
    argv: tuple[str, ...] = ()  # the command line, for the run record
    settings: dict = field(default_factory=dict, compare=False)  # the command's parameters, for the run record

    def __post_init__(self):
        object.__setattr__(self, "surf_file", paths.config_path(self.surf_file, "surf_file"))
        devices.check_spec(self.device)
        if self.threads is not None:
            checks.whole("threads", self.threads, expected="a positive number of threads")
        if self.io not in IO_MODES:
            raise ConfigError("io", self.io, f"one of {', '.join(IO_MODES)}")
        if (
            isinstance(self.round_seconds, bool)
            or not isinstance(self.round_seconds, (int, float))
            or not math.isfinite(self.round_seconds)
            or self.round_seconds <= 0
        ):
            raise ConfigError("round_seconds", self.round_seconds, "a positive, finite number of seconds", literal=True)
        if self.progress_seconds is not None and (
            isinstance(self.progress_seconds, bool)
            or not isinstance(self.progress_seconds, (int, float))
            or not math.isfinite(self.progress_seconds)
            or self.progress_seconds < 0
        ):
            raise ConfigError(
                "progress_seconds", self.progress_seconds, "a finite number of seconds >= 0", literal=True
            )


@dataclass(frozen=True)
class SurfaceJob:
    """Everything a surface depends on, one validated part per concern."""

    model: ModelConfig
    grid: Grid
    data: DataConfig = DataConfig()
    directions: DirectionConfig = DirectionConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    run: RunConfig = RunConfig()

    def __post_init__(self):
        self.directions.check_grid(self.grid.ndim)
        batchnorm.resolve(self.evaluation.bn, self.directions.dir_type)

    @property
    def surf_file(self) -> str:
        model_file = self.model.model_file
        return self.run.surf_file or (f"{model_file}.surface.h5" if model_file else "surface.h5")

    @property
    def dir_file(self) -> str:
        surf = self.surf_file
        return self.directions.dir_file or f"{surf[:-3] if surf.endswith('.h5') else surf}.directions.h5"

    def wanted_dir_type(self) -> str | None:
        """The direction type asked for, by dir_type or implied by bn; None: the default or the file's."""
        if self.evaluation.bn is None:
            return self.directions.dir_type
        return batchnorm.resolve(self.evaluation.bn, self.directions.dir_type)[1]
