"""Data sets by name (``digits``, ``mnist1d``, ``cifar10``, ``cifar100``) or as ``package.module:factory``, and
``DataConfig``: which samples a job evaluates."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import torch

from ..checks import is_whole
from ..errors import ConfigError, InputError
from ..io.paths import config_path
from ..parallel.comm import agree
from ..plugins import call_factory, factory_args, is_plugin
from .cifar import load_cifar
from .digits import load_digits
from .mnist1d import load_mnist1d, samples_of
from .samples import Data, Samples, as_samples, check_fits, chunk, subset

BUILTIN = {
    "digits": "scikit-learn's 8x8 digits",
    "mnist1d": "MNIST-1D, generated (4,000 train / 1,000 test; mnist1d_N: N samples)",
    "cifar10": "CIFAR-10 from datapath",
    "cifar100": "CIFAR-100 from datapath",
}
SUBSET_SEED = 0  # train_subset draws the same samples in every run and on every rank
GIVEN = "api"  # the data were passed in as objects (the Python API), not named


@dataclass(frozen=True)
class DataConfig:
    """Which samples are evaluated: a data set, and optionally one chunk or a seeded subset of its training part."""

    dataset: str = "digits"
    datapath: str | None = None
    raw_data: bool = False
    data_split: int = 1
    split_idx: int = 0
    train_subset: int | None = None
    test: bool = True
    data_args: str = ""  # a plug-in factory's keyword arguments: canonical JSON text, "" for none

    def __post_init__(self):
        object.__setattr__(self, "datapath", config_path(self.datapath, "datapath"))
        object.__setattr__(self, "data_args", factory_args(self.data_args, "data_args"))
        if not isinstance(self.dataset, str):
            raise ConfigError("dataset", self.dataset, "a data set name or package.module:factory")
        if (
            not is_plugin(self.dataset)
            and self.dataset not in BUILTIN
            and self.dataset != GIVEN
            and samples_of(self.dataset) is None
        ):
            raise ConfigError(
                "dataset", self.dataset, f"one of {', '.join(sorted(BUILTIN))}, mnist1d_N, or package.module:factory"
            )
        if self.data_args and not is_plugin(self.dataset):
            raise ConfigError(
                "data_args",
                self.data_args,
                f"no arguments for the built-in data set {self.dataset} (they are for a package.module:factory)",
            )
        if self.dataset in ("cifar10", "cifar100") and not self.datapath:
            raise ConfigError(
                "datapath",
                self.datapath,
                f"the folder holding the {self.dataset} files with dataset={self.dataset} (nothing is downloaded)",
            )
        if not is_whole(self.data_split) or self.data_split < 1:
            raise ConfigError("data_split", self.data_split, "a whole number >= 1", literal=True)
        if not is_whole(self.split_idx) or not 0 <= self.split_idx < self.data_split:
            raise ConfigError(
                "split_idx",
                self.split_idx,
                f"a whole number in 0..{self.data_split - 1} (data_split={self.data_split})",
                literal=True,
            )
        if self.train_subset is not None and (not is_whole(self.train_subset) or self.train_subset < 1):
            raise ConfigError("train_subset", self.train_subset, "a positive number of samples", literal=True)


def load_named(spec: str, datapath: str | None = None, raw: bool = False, args: str = "") -> Data:
    """Train and (optional) test samples of a built-in data set or a plug-in factory (called with the
    keyword arguments ``args``, canonical JSON text)."""
    if is_plugin(spec):
        return from_factory(spec, call_factory(spec, "dataset", args))
    if spec == "digits":
        return Data(spec, *load_digits())
    if samples_of(spec) is not None:
        return Data(spec, *load_mnist1d(spec))
    if spec in ("cifar10", "cifar100"):
        return Data(spec, *load_cifar(spec, datapath, raw=raw))
    raise ConfigError("dataset", spec, f"one of {', '.join(sorted(BUILTIN))}, mnist1d_N, or package.module:factory")


def from_factory(spec: str, made) -> Data:
    """A data factory's result, read as the API reads data: ``(inputs, targets)`` tensors or arrays are the
    training set alone; anything else of two parts is ``(train, test)``, each a pair of tensors, a
    ``Dataset`` or batches, ``test`` possibly None.  Which one it was is said in a note on stderr."""
    if not (isinstance(made, (tuple, list)) and len(made) == 2):
        raise InputError(
            f"dataset {spec!r}: the factory returned {type(made).__name__}, expected (inputs, targets) tensors "
            "(the training set) or (train, test) with test possibly None",
        )
    arrays = (torch.Tensor, np.ndarray)
    if all(isinstance(part, arrays) for part in made):
        train = as_samples(made, f"dataset {spec!r} (inputs, targets)")
        print(
            f"note: dataset {spec} gave a pair of arrays: taken as the training set's (inputs, targets), "
            f"{len(train)} samples, no test set",
            file=sys.stderr,
            flush=True,
        )
        return Data(spec, train, None)
    train = as_samples(made[0], f"dataset {spec!r} train data")
    test = None if made[1] is None else as_samples(made[1], f"dataset {spec!r} test data")
    return Data(spec, train, test)


def made_once(comm, cfg: DataConfig) -> Data | None:
    """A plug-in's data set made on rank 0 alone and sent to the other ranks of ``comm`` (collective):
    a generator runs once per job however many ranks share it, and every rank holds the same samples
    even when the generator draws from an unseeded source.  None for a built-in data set or one rank
    (``load_data`` loads those itself; MNIST-1D is cached on disk, see ``mnist1d``).  Rank 0's failure is
    every rank's (``agree``); the samples travel pickled, so a set of gigabytes belongs in files instead."""
    if comm.size == 1 or not is_plugin(cfg.dataset):
        return None
    made = agree(
        comm, lambda: load_named(cfg.dataset, cfg.datapath, cfg.raw_data, cfg.data_args) if comm.rank == 0 else None
    )
    return comm.bcast(made)


def load_data(cfg: DataConfig, given: Data | None = None) -> Data:
    """The samples ``cfg`` asks for, from the named data set or from ``given`` (the Python API, or the
    samples ``made_once`` sent)."""
    data = given if given is not None else load_named(cfg.dataset, cfg.datapath, cfg.raw_data, cfg.data_args)
    train, test = data.train, (data.test if cfg.test else None)
    if cfg.data_split > 1:  # as the reference code: one chunk of the training data
        train = chunk(train, cfg.data_split, cfg.split_idx)
    if cfg.train_subset is not None:
        train = subset(train, cfg.train_subset, SUBSET_SEED)
    return Data(data.name, train, test)


__all__ = [
    "GIVEN",
    "DataConfig",
    "Data",
    "Samples",
    "as_samples",
    "check_fits",
    "load_data",
    "load_named",
    "made_once",
    "BUILTIN",
    "SUBSET_SEED",
]
