"""What a surface job is asked to do: one validated dataclass, filled by the CLI or the Python API.

``None`` in a field means "not given": a default applies, or, for direction
settings, whatever an existing direction file says.  Validation names the
offending flag and what was expected.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import batchnorm
from . import directions as dirs
from .errors import UsageError
from .evaluation import DTYPES
from .grid import Axis, Grid
from .losses import BUILTIN as BUILTIN_LOSSES
from .plugins import is_plugin

SUBSET_SEED = 0  # --train_subset draws the same samples in every run and on every rank
DEFAULTS = {"dir_type": "weights", "xnorm": "filter", "xignore": "biasbn", "seed": 0}


@dataclass
class SurfaceConfig:
    """Everything a surface depends on; ``None`` means "not given" (a default, or the direction file's)."""

    model: str
    model_file: str | None = None
    model_file2: str | None = None
    model_file3: str | None = None
    dataset: str = "digits"
    num_classes: int | None = None
    datapath: str | None = None
    raw_data: bool = False
    data_split: int = 1
    split_idx: int = 0
    train_subset: int | None = None
    allow_pickle: bool = False
    x: str = "-1:1:51"
    y: str | None = None
    dir_type: str | None = None
    xnorm: str | None = None
    xignore: str | None = None
    ynorm: str | None = None
    yignore: str | None = None
    same_dir: bool = False
    seed: int | None = None
    dir_file: str | None = None
    surf_file: str | None = None
    batch_size: int = 128
    loss_name: str = "crossentropy"
    bn: str | None = None
    bn_batches: int = 10
    dtype: str = "float32"
    threads: int | None = None
    test: bool = True
    io: str = "auto"
    round_seconds: float = 5.0
    quiet: bool = False
    argv: list[str] = field(default_factory=list)

    def grid(self) -> Grid:
        return Grid(Axis.parse(self.x, "--x"), None if self.y is None else Axis.parse(self.y, "--y"))

    def validate(self) -> None:
        grid = self.grid()
        if self.dtype not in DTYPES:
            raise UsageError(f"--dtype={self.dtype}: expected one of {', '.join(DTYPES)}")
        if self.batch_size < 1:
            raise UsageError(f"--batch_size={self.batch_size}: expected a positive number")
        if self.dir_type is not None:
            dirs.check_dir_type(self.dir_type)
        batchnorm.resolve(self.bn, self.dir_type)
        if self.bn_batches < 1:
            raise UsageError(f"--bn_batches={self.bn_batches}: expected a positive number of batches")
        if not is_plugin(self.loss_name) and self.loss_name not in BUILTIN_LOSSES:
            raise UsageError(f"--loss_name={self.loss_name}: expected one of {', '.join(BUILTIN_LOSSES)} "
                             "or package.module:callable")
        for flag in ("xnorm", "ynorm"):
            if getattr(self, flag) is not None:
                dirs.AxisSettings(norm=getattr(self, flag))
        for flag in ("xignore", "yignore"):
            if getattr(self, flag) is not None:
                dirs.AxisSettings(ignore=getattr(self, flag))
        if grid.ndim == 1 and (self.model_file3 or self.same_dir):
            raise UsageError("--model_file3 and --same_dir need a 2-D grid: add --y=MIN:MAX:NUM")
        if self.model_file3 and self.same_dir:
            raise UsageError("--model_file3 and --same_dir both define the y direction: give one")
        for axis, target, how in (("x", self.model_file2, "--model_file2"), ("y", self.model_file3, "--model_file3"),
                                  ("y", self.same_dir, "--same_dir")):
            for setting in ("norm", "ignore"):
                if target and getattr(self, f"{axis}{setting}") is not None:
                    raise UsageError(f"--{axis}{setting} does not apply with {how}: that direction is "
                                     f"{'the x direction' if how == '--same_dir' else 'a difference of models'}")
        if self.seed is not None and not 0 <= self.seed < 2**63:
            raise UsageError(f"--seed={self.seed}: expected a whole number from 0 to 2**63-1")
        if self.train_subset is not None and self.train_subset < 1:
            raise UsageError(f"--train_subset={self.train_subset}: expected a positive number of samples")
        if self.data_split < 1 or not 0 <= self.split_idx < self.data_split:
            raise UsageError(f"--data_split={self.data_split} --split_idx={self.split_idx}: expected "
                             "data_split >= 1 and 0 <= split_idx < data_split")
        if self.round_seconds <= 0:
            raise UsageError(f"round length {self.round_seconds}: expected a positive number of seconds")

    def classes(self) -> int:
        """Output classes of a registry model: as given, else 100 for CIFAR-100, else 10."""
        return self.num_classes or (100 if self.dataset == "cifar100" else 10)

    def wanted_dir_type(self) -> str | None:
        """The direction type asked for, by --dir_type or implied by --bn; None: default or the file's."""
        return self.dir_type if self.bn is None else batchnorm.resolve(self.bn, self.dir_type)[1]

    def paths(self) -> tuple[str, str]:
        surf = self.surf_file or (f"{self.model_file}.surface.h5" if self.model_file else "surface.h5")
        stem = surf[:-3] if surf.endswith(".h5") else surf
        return surf, self.dir_file or f"{stem}.directions.h5"
