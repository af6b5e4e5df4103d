"""The loop itself, in one process: a stop mid-epoch and a restore continue exactly (augmentation on),
accumulation over micro-batches is the full batch's gradient, and CIFAR folders train end to end."""

import pickle

import numpy as np
import pytest
import torch
from torch import nn

from landscape.data import Samples
from landscape.parallel.distributed import Collective
from landscape.train.loop import Trainer
from landscape.train.recipes import resolve

from conftest import run


def small_cnn():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1, bias=False),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Linear(16, 10),
    )


def images(n=40):
    g = torch.Generator().manual_seed(1)
    return Samples(torch.randn(n, 3, 32, 32, generator=g), torch.randint(0, 10, (n,), generator=g))


def trainer(model, data, recipe):
    return Trainer(
        model,
        recipe,
        data,
        micro_batch=4,
        seed=3,
        collective=Collective(),
        device="cpu",
        fill=torch.tensor([-1.0, -1.0, -1.0]),
    )


def test_a_stop_mid_epoch_and_a_restore_continue_exactly_with_augmentation():
    data, recipe = images(), resolve("linear", batch_size=8, epochs=3, lr=0.05)
    whole = trainer(small_cnn(), data, recipe)
    for epoch in range(3):
        whole.run_epoch(epoch)

    first = trainer(small_cnn(), data, recipe)
    first.run_epoch(0)
    steps = iter(range(100))
    first.stop_requested = lambda: next(steps) == 1  # stop after the second step of epoch 1
    assert first.run_epoch(1) is None and first.position.offset == 16
    saved_state, saved_weights = first.state(), {k: v.clone() for k, v in first.module.state_dict().items()}

    second = trainer(small_cnn(), data, recipe)  # a new process: fresh model and optimizer, then the checkpoint
    second.module.load_state_dict(saved_weights)
    second.restore(saved_state)
    for epoch in range(second.position.epoch, 3):
        second.run_epoch(epoch)
    for name, value in whole.module.state_dict().items():
        assert torch.equal(value, second.module.state_dict()[name]), name


def test_micro_batches_add_up_to_the_gradient_of_the_whole_batch():
    """An MLP (no BatchNorm: its batch statistics would differ by design): one step with micro-batches
    of 4 moves the weights as one step on all 12 samples at once, to float32 summation order."""
    data = Samples(torch.randn(12, 8, generator=torch.Generator().manual_seed(0)), torch.arange(12) % 3)

    def mlp():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 5), nn.Tanh(), nn.Linear(5, 3))

    recipe = resolve("naive", batch_size=12, epochs=1, lr=0.5, momentum=0.0, nesterov=False, weight_decay=0.0)
    a, b = mlp(), mlp()
    Trainer(a, recipe, data, 4, 0, Collective(), "cpu").step(torch.arange(12), None, 0.5)
    Trainer(b, recipe, data, 12, 0, Collective(), "cpu").step(torch.arange(12), None, 0.5)
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.allclose(x, y, rtol=1e-6, atol=1e-7), name
    reference = mlp()
    loss = nn.functional.cross_entropy(reference(data.inputs), data.targets)
    loss.backward()
    with torch.no_grad():
        for p in reference.parameters():
            p -= 0.5 * p.grad
    for (name, x), y in zip(a.state_dict().items(), reference.state_dict().values()):
        assert torch.allclose(x, y, rtol=1e-6, atol=1e-7), name


def cifar_folder(root, n=24):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(1, 6):
        with open(folder / f"data_batch_{i}", "wb") as f:
            pickle.dump(
                {
                    b"data": rng.integers(0, 256, (n // 5 + 1, 3072), dtype=np.uint8),
                    b"labels": rng.integers(0, 10, n // 5 + 1).tolist(),
                },
                f,
            )
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": rng.integers(0, 256, (8, 3072), dtype=np.uint8), b"labels": [1] * 8}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({b"label_names": [f"c{i}".encode() for i in range(10)]}, f)
    return root


@pytest.mark.slow
def test_a_cifar_folder_trains_with_the_standard_augmentation(tmp_path):
    root = cifar_folder(tmp_path / "data")
    out = tmp_path / "run"
    done = run(
        "train",
        [
            "--model",
            "resnet20",
            "--dataset",
            "cifar10",
            "--datapath",
            str(root),
            "--batch_size",
            "10",
            "--epochs",
            "1",
            "--threads",
            "1",
            "--out",
            str(out),
        ],
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    meta = torch.load(out / "final.pt", weights_only=True)["meta"]
    assert meta["identity"]["augment"] == "standard" and meta["identity"]["train_samples"] == 25
    plain = run(
        "train",
        [
            "--model",
            "resnet20",
            "--dataset",
            "cifar10",
            "--datapath",
            str(root),
            "--batch_size",
            "10",
            "--epochs",
            "1",
            "--threads",
            "1",
            "--augment",
            "none",
            "--out",
            str(tmp_path / "plain"),
        ],
    )
    assert plain.returncode == 0, plain.stderr
    a, b = (torch.load(p / "final.pt", weights_only=True)["state_dict"] for p in (out, tmp_path / "plain"))
    assert not torch.equal(
        a["conv1.weight"] if "conv1.weight" in a else next(iter(a.values())),
        b["conv1.weight"] if "conv1.weight" in b else next(iter(b.values())),
    )
