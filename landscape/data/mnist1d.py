"""MNIST-1D (Greydanus 2020): ten 1-D templates of digits, shifted, scaled, sheared and noised into
sequences of 40 values; the CPU-scale data set of the batch-size study.

Generated here with the ``mnist1d`` package's own generator (``mnist1d.data.make_dataset`` with its
``get_dataset_args()``), never its download path: compute nodes have no internet, and the generator
with its fixed seed (42) gives the same samples on every machine.  ``mnist1d`` is the package's 5,000
samples, split 4,000 training / 1,000 test as the package splits them; ``mnist1d_N`` generates N
samples (a multiple of 10: the generator makes N / 10 per class), split 80 / 20 the same way.  The
generator seeds numpy's and Python's global generators; their states are restored afterwards.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import random
import re

import numpy as np
import torch

from ..errors import ConfigError, InputError
from ..io.atomic import write_file
from ..io.paths import cache_folder
from .samples import Samples

DEFAULT_SAMPLES = 5000
NAME = re.compile(r"mnist1d(?:_(\d+))?")
KEYS = ("x", "y", "x_test", "y_test")


def samples_of(name: str) -> int | None:
    """How many samples the data set ``name`` generates (None when it is not an MNIST-1D name)."""
    found = NAME.fullmatch(name)
    if found is None:
        return None
    if found.group(1) is None:
        return DEFAULT_SAMPLES
    n = int(found.group(1))
    if n < 20 or n % 10:
        raise ConfigError("dataset", name, "mnist1d, or mnist1d_N with N a multiple of 10, at least 20")
    return n


def cache_file(n: int) -> str:
    """Where the generated samples of ``mnist1d_N`` are kept between processes: ``$LANDSCAPE_CACHE`` or
    ``~/.cache/landscape``, named by N and the generator's version (each training and report process
    would otherwise spend seconds generating the same samples again)."""
    folder = cache_folder()
    try:
        version = importlib.metadata.version("mnist1d")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return os.path.join(folder, f"mnist1d_{n}_v{version}.npz")


def _cached(path: str, n: int) -> dict | None:
    """The arrays of a cache file, or None when it is missing or not what the generator makes (then the
    samples are generated again): plain arrays only, nothing unpickled."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            made = {key: stored[key] for key in KEYS}
    except (OSError, ValueError, KeyError):
        return None
    train, test = len(made["x"]), len(made["x_test"])
    shapes = made["x"].shape == (train, 40) and made["x_test"].shape == (test, 40) and train + test == n
    labels = all(np.isin(made[y], np.arange(10)).all() for y in ("y", "y_test"))
    return made if shapes and labels and len(made["y"]) == train and len(made["y_test"]) == test else None


def _generated(n: int, name: str) -> dict:
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError:
        raise InputError(f"dataset {name} needs the mnist1d package (pip install mnist1d)") from None
    args = get_dataset_args()
    args.num_samples = n
    numpy_state, python_state = np.random.get_state(), random.getstate()
    try:
        made = make_dataset(args)
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)
    return {key: np.asarray(made[key]) for key in KEYS}


def load_mnist1d(name: str = "mnist1d") -> tuple[Samples, Samples]:
    """Training and test samples ``(N, 40)`` float32 with labels 0..9 (from the cache when it holds them)."""
    n = samples_of(name)
    if n is None:
        raise ConfigError("dataset", name, "mnist1d, or mnist1d_N with N a multiple of 10")
    path = cache_file(n)
    made = _cached(path, n)
    if made is None:
        made = _generated(n, name)
        buffer = io.BytesIO()
        np.savez(buffer, **made)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_file(path, buffer.getvalue())
        except OSError:  # a read-only home: generated each time, nothing lost
            pass
    as_samples = [
        Samples(torch.tensor(made[x], dtype=torch.float32), torch.tensor(made[y], dtype=torch.int64))
        for x, y in (("x", "y"), ("x_test", "y_test"))
    ]
    return as_samples[0], as_samples[1]


__all__ = ["load_mnist1d", "samples_of", "DEFAULT_SAMPLES"]
