"""Which samples a job evaluates: DataConfig's checks, --data_split chunks, seeded subsets."""

import pytest
import torch

from landscape.data import DataConfig, load_data
from landscape.data.samples import Data, Samples, chunk, subset
from landscape.errors import ConfigError


def _numbered(n):
    return Samples(torch.arange(n, dtype=torch.float32).view(n, 1), torch.arange(n))


def test_chunks_are_equal_and_contiguous_as_in_the_reference():
    data = _numbered(20)
    chunks = [chunk(data, 3, i).targets.tolist() for i in range(3)]
    assert chunks == [list(range(0, 6)), list(range(6, 12)), list(range(12, 18))]  # 18, 19 in no chunk
    assert chunk(data, 4, 3).targets.tolist() == [15, 16, 17, 18, 19]
    assert chunk(data, 1, 0).targets.tolist() == list(range(20))
    piece = chunk(data, 5, 2)
    assert torch.equal(piece.inputs.view(-1), piece.targets.float())  # inputs and targets stay paired


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"data_split": 0}, "data_split=0: expected a whole number >= 1"),
        ({"data_split": -2}, "data_split=-2: expected a whole number >= 1"),
        ({"data_split": 2.0}, "data_split=2.0: expected a whole number >= 1"),
        ({"data_split": 3, "split_idx": 3}, "split_idx=3: expected a whole number in 0..2 (data_split=3)"),
        ({"data_split": 3, "split_idx": -1}, "split_idx=-1: expected a whole number in 0..2"),
        ({"train_subset": 0}, "train_subset=0: expected a positive number of samples"),
        ({"dataset": "imagenet"}, "dataset=imagenet: expected one of cifar10, cifar100, digits"),
        ({"dataset": "cifar10"}, "datapath=None: expected the folder holding the cifar10 files"),
    ],
)
def test_data_config_names_the_parameter_and_what_was_expected(fields, message):
    with pytest.raises(ConfigError) as caught:
        DataConfig(**fields)
    assert message in str(caught.value)
    assert caught.value.field == next(
        k for k in ("datapath", "split_idx", "data_split", "train_subset", "dataset") if k in message.split("=")[0]
    )


def test_a_chunk_larger_than_the_data_is_refused_when_the_data_are_known():
    data = Data("t", _numbered(20), None)
    with pytest.raises(ConfigError, match="data_split=21: expected at most the 20 samples"):
        load_data(DataConfig(data_split=21), given=data)
    assert len(load_data(DataConfig(data_split=20, split_idx=19), given=data).train) == 1


def test_subset_is_a_fixed_seeded_sample_in_data_order():
    data = _numbered(50)
    chosen = subset(data, 10, seed=7).targets.tolist()
    assert len(chosen) == len(set(chosen)) == 10 and chosen == sorted(chosen)
    assert subset(data, 10, seed=7).targets.tolist() == chosen
    assert subset(data, 10, seed=8).targets.tolist() != chosen
    assert set(chosen) <= set(subset(data, 20, seed=7).targets.tolist())  # nested in n
    assert subset(data, 50, seed=7).targets.tolist() == list(range(50))
    with pytest.raises(ConfigError, match="train_subset=51: expected at most the 50 training samples"):
        subset(data, 51, seed=0)


def test_load_data_applies_chunk_then_subset_and_drops_test_when_asked():
    data = Data("t", _numbered(40), _numbered(5))
    got = load_data(DataConfig(data_split=2, split_idx=1, train_subset=5, test=False), given=data)
    assert got.test is None
    assert len(got.train) == 5 and set(got.train.targets.tolist()) <= set(range(20, 40))
