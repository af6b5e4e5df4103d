"""scikit-learn's 8x8 digits: the embedded data set of the demo and the tests (no download)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import InputError
from .samples import Samples

SPLIT_SEED = 0
TEST_FRACTION = 0.2


def load_digits(seed: int = SPLIT_SEED, test_fraction: float = TEST_FRACTION) -> tuple[Samples, Samples]:
    """The 1,797 images scaled to [0, 1] as ``(N, 1, 8, 8)``, split 1,437 / 360 by a fixed seed."""
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError:
        raise InputError("dataset digits needs scikit-learn (pip install scikit-learn)") from None
    bunch = sklearn_digits()
    images = torch.tensor(bunch.images / 16.0, dtype=torch.float32).unsqueeze(1)  # (N, 1, 8, 8)
    labels = torch.tensor(bunch.target, dtype=torch.int64)
    order = torch.as_tensor(np.random.default_rng(seed).permutation(len(labels)))
    n_test = math.ceil(test_fraction * len(labels))  # 360 of 1,797, as scikit-learn's train_test_split
    test, train = order[:n_test], order[n_test:]
    return Samples(images[train], labels[train]), Samples(images[test], labels[test])
