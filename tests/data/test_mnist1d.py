"""MNIST-1D generated offline by the package's own generator: the package's split, the same samples on
every call, the caller's random state left alone, sizes by name, and the study's perceptron."""

import os
import random

import numpy as np
import pytest
import torch

from landscape.data import DataConfig, load_data
from landscape.data.mnist1d import cache_file, load_mnist1d
from landscape.errors import ConfigError
from landscape.models import build_model


def test_the_default_is_the_packages_4000_and_1000_sequences_of_40():
    train, test = load_mnist1d()
    assert train.inputs.shape == (4000, 40) and test.inputs.shape == (1000, 40)
    assert train.inputs.dtype == torch.float32 and set(train.targets.tolist()) == set(range(10))
    assert abs(float(torch.cat([train.inputs, test.inputs]).std()) - 1) < 1e-3  # the package's standardization


def test_a_size_by_name_is_generated_the_same_every_time_and_leaves_the_global_generators_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("LANDSCAPE_CACHE", str(tmp_path))  # generated here, not read from a cache
    np.random.seed(5)
    random.seed(5)
    first = load_mnist1d("mnist1d_200")
    assert (np.random.rand(), random.random()) == (np.random.RandomState(5).rand(), random.Random(5).random())
    second = load_data(DataConfig("mnist1d_200"))
    assert first[0].inputs.shape == (160, 40) and first[1].inputs.shape == (40, 40)
    assert torch.equal(first[0].inputs, second.train.inputs) and torch.equal(first[1].targets, second.test.targets)


@pytest.mark.parametrize("name", ["mnist1d_15", "mnist1d_10", "mnist1d_x", "mnist2d"])
def test_other_names_are_refused_with_what_is_expected(name):
    with pytest.raises(ConfigError, match="mnist1d"):
        DataConfig(name)


def test_the_perceptron_is_40_100_100_10_with_relu_and_no_batchnorm():
    model = build_model("mnist1d_mlp")
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert shapes == [(100, 40), (100,), (100, 100), (100,), (10, 100), (10,)]
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    assert model(torch.zeros(3, 40)).shape == (3, 10)


def test_generated_once_then_read_back_from_the_cache_and_a_bad_cache_file_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("LANDSCAPE_CACHE", str(tmp_path / "cache"))
    path = cache_file(200)
    assert path.startswith(str(tmp_path / "cache")) and not (tmp_path / "cache").exists()
    made = load_mnist1d("mnist1d_200")
    stored = os.path.getmtime(path)
    again = load_mnist1d("mnist1d_200")  # read back: the file is not written again
    assert os.path.getmtime(path) == stored
    assert all(torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets) for a, b in zip(made, again))
    with open(path, "wb") as handle:
        handle.write(b"not an npz")
    remade = load_mnist1d("mnist1d_200")
    assert torch.equal(remade[0].inputs, made[0].inputs)
    assert torch.equal(load_mnist1d("mnist1d_200")[1].targets, made[1].targets)  # the rewritten cache reads back
    monkeypatch.setenv("LANDSCAPE_CACHE", "/proc/no-such-folder")  # not writable: generated, nothing fails
    assert torch.equal(load_mnist1d("mnist1d_200")[0].inputs, made[0].inputs)
