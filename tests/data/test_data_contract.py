"""One data contract: a data factory returns what the API takes, ``(inputs, targets)`` arrays (the training
set alone) or ``(train, test)``; which one was taken is said."""

import numpy as np
import pytest
import torch

from landscape.data import from_factory
from landscape.errors import InputError


def test_a_pair_of_arrays_is_the_training_set_and_says_so(capsys):
    x, y = np.zeros((30, 4), np.float32), np.arange(30) % 3
    data = from_factory("f.py:make", (x, y))
    assert len(data.train) == 30 and data.test is None
    assert "taken as the training set's (inputs, targets), 30 samples, no test set" in capsys.readouterr().err


def test_two_pairs_are_train_and_test_and_a_dataset_or_none_works_too(capsys):
    pair = (torch.zeros(20, 4), torch.zeros(20, dtype=torch.long))
    data = from_factory("f.py:make", (pair, pair[:1] and (torch.ones(5, 4), torch.zeros(5, dtype=torch.long))))
    assert len(data.train) == 20 and len(data.test) == 5
    dataset = torch.utils.data.TensorDataset(*pair)
    assert from_factory("f.py:make", (dataset, None)).test is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("made", [torch.zeros(3), (1, 2, 3), "data"])
def test_anything_else_is_one_line_saying_what_is_expected(made):
    with pytest.raises(
        InputError, match=r"expected \(inputs, targets\) tensors \(the training set\) or \(train, test\)"
    ):
        from_factory("f.py:make", made)
