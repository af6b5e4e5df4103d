"""Training: deterministic given the initial weights and the seed, lowers the loss, validates its config."""
import copy
import math

import pytest
import torch

from landscape.data.digits import load_digits
from landscape.data.samples import Samples
from landscape.errors import UsageError
from landscape.models import DigitsCNN, DigitsMLP
from landscape.train import (DEMO_EPOCHS, DEMO_LARGE_BATCH, DEMO_SMALL_BATCH, QUICK_EPOCHS, TrainConfig,
                             demo_configs, evaluate, quick_configs, train)


pytestmark = pytest.mark.usefixtures("one_thread")  # small models: threads only add overhead


@pytest.fixture(scope="module")
def data():
    train, test = load_digits()
    # A few hundred images keep every test well under a second.
    return Samples(train.inputs[:300], train.targets[:300]), Samples(test.inputs[:100], test.targets[:100])


def fresh_cnn(seed=0):
    torch.manual_seed(seed)
    return DigitsCNN(width=4)


def fresh_mlp(seed=0):
    torch.manual_seed(seed)
    return DigitsMLP(hidden=(32, 16))


def test_same_init_and_seed_give_identical_weights(data):
    base = fresh_cnn()
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    cfg = TrainConfig(batch_size=32, epochs=3, lr=0.05, seed=7)
    history_a = train(a, *data, cfg, log=None)
    torch.manual_seed(12345)  # the global RNG is not used: disturbing it changes nothing
    history_b = train(b, *data, cfg, log=None)
    for (name, ta), tb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(ta, tb), name
    assert history_a["train_loss"] == history_b["train_loss"]
    assert history_a["steps"] == history_b["steps"]


def test_another_data_order_seed_gives_other_weights(data):
    base = fresh_cnn()
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    train(a, *data, TrainConfig(batch_size=32, epochs=2, lr=0.05, seed=0), log=None)
    train(b, *data, TrainConfig(batch_size=32, epochs=2, lr=0.05, seed=1), log=None)
    assert not torch.equal(a.classifier.weight, b.classifier.weight)


@pytest.mark.parametrize("make", [fresh_cnn, fresh_mlp])
def test_training_lowers_the_loss(data, make):
    model = make()
    before, _ = evaluate(model, data[0])
    history = train(model, *data, TrainConfig(batch_size=16, epochs=5, lr=0.05, milestones=()), log=None)
    assert history["train_loss"] < 0.5 * before
    assert history["train_acc"] > 70.0
    assert 0.0 <= history["test_acc"] <= 100.0 and math.isfinite(history["test_loss"])


def test_history_counts_steps_and_keeps_the_partial_batch(data):
    lines = []
    history = train(fresh_cnn(), data[0], None, TrainConfig(batch_size=64, epochs=2, lr=0.05), log=lines.append)
    assert history["steps"] == 2 * math.ceil(300 / 64)  # 300 = 4 x 64 + 44: the last 44 are a step too
    assert math.isnan(history["test_loss"]) and math.isnan(history["test_acc"])
    assert history["seconds"] >= 0 and history["config"]["batch_size"] == 64
    assert lines and "train loss" in lines[-1]


def test_evaluate_leaves_the_training_mode_as_it_was(data):
    model = fresh_cnn().train()
    evaluate(model, data[1])
    assert model.training


def test_step_decay_schedule():
    cfg = TrainConfig(batch_size=16, epochs=300, lr=0.1)
    assert cfg.milestone_epochs() == [150, 225]  # the reference code's 300-epoch schedule
    assert cfg.lr_at(0) == cfg.lr_at(149) == 0.1
    assert cfg.lr_at(150) == pytest.approx(0.01) and cfg.lr_at(224) == pytest.approx(0.01)
    assert cfg.lr_at(225) == pytest.approx(0.001) and cfg.lr_at(299) == pytest.approx(0.001)
    assert TrainConfig(batch_size=16, epochs=1, lr=0.1).lr_at(0) == 0.1  # one epoch: no decay


def test_demo_configs_differ_only_in_batch_size():
    small, large = demo_configs()
    assert (small.batch_size, large.batch_size) == (DEMO_SMALL_BATCH, DEMO_LARGE_BATCH)
    assert small.epochs == large.epochs == DEMO_EPOCHS
    assert {**vars(small), "batch_size": 0} == {**vars(large), "batch_size": 0}
    assert demo_configs(0.5)[0].epochs == round(DEMO_EPOCHS / 2)
    assert all(c.epochs == QUICK_EPOCHS for c in quick_configs())
    with pytest.raises(UsageError, match="epochs_scale=0"):
        demo_configs(0)


@pytest.mark.parametrize("change, named", [
    ({"batch_size": 0}, "batch_size=0"),
    ({"batch_size": 16.5}, "batch_size=16.5"),
    ({"epochs": 0}, "epochs=0"),
    ({"lr": -0.1}, "lr=-0.1"),
    ({"momentum": 1.0}, "momentum=1.0"),
    ({"momentum": 0.0}, "nesterov=True with momentum=0.0"),
    ({"weight_decay": -1.0}, "weight_decay=-1.0"),
    ({"milestones": (0.5, 1.5)}, r"milestones=\(0.5, 1.5\)"),
    ({"milestones": (0.75, 0.5)}, r"milestones=\(0.75, 0.5\)"),
    ({"gamma": 0.0}, "gamma=0.0"),
])
def test_validation_names_the_value(change, named):
    cfg = TrainConfig(**{"batch_size": 16, "epochs": 2, "lr": 0.1, **change})
    with pytest.raises(UsageError, match=named):
        cfg.validate()


def test_train_validates_before_touching_the_model(data):
    model = fresh_cnn()
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(UsageError, match="lr=0"):
        train(model, *data, TrainConfig(batch_size=16, epochs=1, lr=0), log=None)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
