"""Evaluation data as tensors: the embedded digits set, or any ``package.module:factory``.

Data are turned into one pair of tensors ``(inputs, targets)`` per split, once
per rank; evaluation then slices batches out of them, so nothing is decoded or
re-normalized per grid point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .errors import InputError, UsageError
from .plugins import call_factory, is_plugin

DIGITS_SPLIT_SEED = 0
DIGITS_TEST_FRACTION = 0.2


@dataclass
class Split:
    """One evaluation set: ``inputs[n]`` and ``targets[n]``."""

    inputs: torch.Tensor
    targets: torch.Tensor

    def __len__(self) -> int:
        return len(self.targets)

    @property
    def is_classification(self) -> bool:
        return not self.targets.is_floating_point()


@dataclass
class Data:
    name: str
    train: Split
    test: Split | None


def digits(seed: int = DIGITS_SPLIT_SEED, test_fraction: float = DIGITS_TEST_FRACTION) -> tuple[Split, Split]:
    """scikit-learn's 1,797 8x8 digits (no download), scaled to [0, 1], split by a fixed seed."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise InputError("--dataset digits needs scikit-learn (pip install scikit-learn)") from None
    bunch = load_digits()
    images = torch.tensor(bunch.images / 16.0, dtype=torch.float32).unsqueeze(1)  # (N, 1, 8, 8)
    labels = torch.tensor(bunch.target, dtype=torch.int64)
    order = torch.as_tensor(np.random.default_rng(seed).permutation(len(labels)))
    n_test = math.ceil(test_fraction * len(labels))  # 360 of 1,797, as scikit-learn's train_test_split
    test, train = order[:n_test], order[n_test:]
    return Split(images[train], labels[train]), Split(images[test], labels[test])


BUILTIN = {"digits": "scikit-learn's 8x8 digits", "cifar10": "CIFAR-10 from --datapath",
           "cifar100": "CIFAR-100 from --datapath"}


def as_split(obj, what: str) -> Split:
    """A ``torch.utils.data.Dataset`` of ``(input, target)`` items or a pair of tensors -> ``Split``."""
    if isinstance(obj, Split):
        return obj
    if isinstance(obj, (tuple, list)) and len(obj) == 2 and all(isinstance(t, (torch.Tensor, np.ndarray)) for t in obj):
        inputs, targets = (torch.as_tensor(t) for t in obj)
    elif isinstance(obj, torch.utils.data.Dataset):
        try:
            items = [obj[i] for i in range(len(obj))]
            inputs = torch.stack([torch.as_tensor(item[0]) for item in items])
            targets = torch.stack([torch.as_tensor(item[1]) for item in items])
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"{what}: could not read (input, target) items from the Dataset ({exc})") from None
    else:
        raise InputError(f"{what}: expected a torch.utils.data.Dataset or a pair of tensors (inputs, targets), "
                         f"got {type(obj).__name__}")
    if len(inputs) != len(targets):
        raise InputError(f"{what}: {len(inputs)} inputs but {len(targets)} targets")
    if len(targets) == 0:
        raise InputError(f"{what}: the data set is empty")
    return Split(inputs, targets)


def load_data(spec: str, datapath: str | None = None, raw: bool = False) -> Data:
    """Train and (optional) test split of a built-in data set or a plug-in factory."""
    if is_plugin(spec):
        pair = call_factory(spec, "--dataset")
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise InputError(f"--dataset {spec!r}: the factory returned {type(pair).__name__}, "
                             "expected (train, test) with test possibly None")
        train = as_split(pair[0], f"--dataset {spec!r} train split")
        test = None if pair[1] is None else as_split(pair[1], f"--dataset {spec!r} test split")
        return Data(spec, train, test)
    if spec not in BUILTIN:
        raise UsageError(f"--dataset {spec!r}: unknown data set; built in: {', '.join(sorted(BUILTIN))}, "
                         "or give package.module:factory")
    if spec == "digits":
        train, test = digits()
    else:
        from .cifar import load_cifar

        if not datapath:
            raise UsageError(f"--dataset {spec} needs --datapath: the folder holding the data set's files "
                             "(nothing is downloaded)")
        train, test = load_cifar(spec, datapath, raw=raw)
    return Data(spec, train, test)


# --------------------------------------------------------------------------- parts of a split

def split_chunk(split: Split, data_split: int, split_idx: int) -> Split:
    """Chunk ``split_idx`` of ``data_split`` equal, contiguous chunks, as ``--data_split/--split_idx``.

    As in the reference (``dataloader.py``, written for Python 2's integer
    division): each chunk holds ``len // data_split`` samples, chunk ``i`` starts
    at ``i * (len // data_split)``, and the last ``len % data_split`` samples are
    in no chunk.  Equal chunks make the mean of the chunks' losses the loss of
    their union.
    """
    if isinstance(data_split, bool) or not isinstance(data_split, (int, np.integer)) or data_split < 1:
        raise UsageError(f"--data_split {data_split!r}: expected an integer >= 1")
    if isinstance(split_idx, bool) or not isinstance(split_idx, (int, np.integer)) \
            or not 0 <= split_idx < data_split:
        raise UsageError(f"--split_idx {split_idx!r}: expected an integer in 0..{data_split - 1} "
                         f"(--data_split {data_split})")
    size = len(split) // data_split
    if size == 0:
        raise UsageError(f"--data_split {data_split}: larger than the {len(split)} samples to split")
    start = size * split_idx
    return Split(split.inputs[start:start + size], split.targets[start:start + size])


def train_subset(split: Split, n: int, seed: int) -> Split:
    """A fixed random subset of ``n`` samples, drawn with ``seed``, kept in data-set order.

    The subset for ``n`` is contained in the subset for any larger ``n`` with the
    same seed (it is a prefix of one seeded permutation).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= len(split):
        raise UsageError(f"subset size {n!r}: expected an integer in 1..{len(split)} (the samples available)")
    chosen = np.sort(np.random.default_rng(seed).permutation(len(split))[:n])
    index = torch.from_numpy(chosen)
    return Split(split.inputs[index], split.targets[index])
