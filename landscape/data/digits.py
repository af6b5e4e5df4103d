"""scikit-learn's 8x8 digits: the embedded data set of the demo and the tests (no download)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import torch

from ..errors import InputError
from .samples import Samples

SPLIT_SEED = 0
TEST_FRACTION = 0.2
BUNDLED = Path("datasets", "data", "digits.csv.gz")  # in the scikit-learn package: 64 pixels and the label a row


def load_digits(seed: int = SPLIT_SEED, test_fraction: float = TEST_FRACTION) -> tuple[Samples, Samples]:
    """The 1,797 images scaled to [0, 1] as ``(N, 1, 8, 8)``, split 1,437 / 360 by a fixed seed."""
    rows = _rows()
    images = torch.tensor(rows[:, :-1].reshape(-1, 8, 8) / 16.0, dtype=torch.float32).unsqueeze(1)  # (N, 1, 8, 8)
    labels = torch.tensor(rows[:, -1].astype(np.int64))
    order = torch.as_tensor(np.random.default_rng(seed).permutation(len(labels)))
    n_test = math.ceil(test_fraction * len(labels))  # 360 of 1,797, as scikit-learn's train_test_split
    test, train = order[:n_test], order[n_test:]
    return Samples(images[train], labels[train]), Samples(images[test], labels[test])


def _rows() -> np.ndarray:
    """The data file scikit-learn ships, read without importing scikit-learn (whose import takes longer
    than everything else a small surface does); its own loader where the file is not where it was."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise InputError("dataset digits needs scikit-learn (pip install scikit-learn)")
    bundled = Path(spec.origin).parent / BUNDLED
    if bundled.is_file():
        return np.loadtxt(bundled, delimiter=",")
    from sklearn.datasets import load_digits as sklearn_digits  # heavy: only where the file has moved

    bunch = sklearn_digits()
    return np.column_stack([bunch.data, bunch.target])
