"""The digits set read from scikit-learn's data file equals what scikit-learn's own loader gives."""

import numpy as np
import torch
from sklearn.datasets import load_digits as sklearn_digits

from landscape.data import digits


def test_the_file_read_directly_holds_what_scikit_learns_loader_returns(monkeypatch):
    bunch = sklearn_digits()
    train, test = digits.load_digits()
    assert (len(train), len(test)) == (1437, 360)
    images = torch.cat([train.inputs, test.inputs])
    labels = torch.cat([train.targets, test.targets])
    order = np.random.default_rng(digits.SPLIT_SEED).permutation(1797)
    order = np.concatenate([order[360:], order[:360]])  # the split: test first in the permutation
    assert torch.equal(images, torch.tensor(bunch.images[order] / 16.0, dtype=torch.float32).unsqueeze(1))
    assert torch.equal(labels, torch.tensor(bunch.target[order]))

    monkeypatch.setattr(digits, "BUNDLED", "no/such/file.csv.gz")  # scikit-learn moved its file
    again, _ = digits.load_digits()
    assert torch.equal(again.inputs, train.inputs) and torch.equal(again.targets, train.targets)
