"""A training run's configuration with plain values: the micro-batch each rank takes, batch sizes checked
against the data and each other, the defaults of the evaluation and checkpoint intervals, what the
weights depend on (the identity a resume must match), and settings that cannot hold refused by name."""

import pytest

from landscape.data import DataConfig
from landscape.errors import ConfigError
from landscape.models import ModelConfig
from landscape.train.config import TrainJob, TrainRun
from landscape.train.recipes import resolve

MLP, MNIST1D = ModelConfig("mnist1d_mlp"), DataConfig("mnist1d_400")


def job(recipe="sgd", data=MNIST1D, **run):
    return TrainJob(MLP, data, resolve(recipe, **run.pop("recipe_args", {})), TrainRun(**run))


def test_each_rank_takes_an_equal_share_of_the_batch_and_adaptive_at_least_four_micro_batches():
    sgd = job(recipe_args={"batch_size": 128})
    assert [sgd.micro_batch(r) for r in (1, 3, 128, 200)] == [128, 43, 1, 1]  # ceil(128 / ranks), at least 1
    adaptive = job("adaptive", recipe_args={"batch_size": 128})
    assert [adaptive.micro_batch(r) for r in (1, 4, 8)] == [32, 32, 16]  # its variance needs several
    assert job(micro_batch=10, recipe_args={"batch_size": 128}).micro_batch(4) == 10  # given: kept


def test_batch_sizes_are_checked_against_the_training_set_and_each_other():
    job(recipe_args={"batch_size": 400}).check_sizes(train_size=400, ranks=2)
    cases = [
        (job(recipe_args={"batch_size": 401}), r"^batch_size=401: expected at most the 400 training samples"),
        (
            job(micro_batch=200, recipe_args={"batch_size": 100}),
            r"^micro_batch=200: expected at most batch_size \(100\)",
        ),
        (
            job("adaptive", micro_batch=60, recipe_args={"batch_size": 100}),
            r"^micro_batch=60: expected at most batch_size / 2 \(50\)",
        ),
        (job("adaptive", recipe_args={"max_batch": 800}), r"^max_batch=800: expected at most the 400 training samples"),
    ]
    for built, words in cases:
        with pytest.raises(ConfigError, match=words):
            built.check_sizes(train_size=400, ranks=1)


def test_intervals_default_to_every_epoch_or_a_hundredth_of_the_steps():
    by_epochs = job()
    assert (by_epochs.eval_every, by_epochs.save_every, by_epochs.target_every) == (1, 1, 10)
    by_steps = job(recipe_args={"steps": 250, "milestones": ()})
    assert (by_steps.eval_every, by_steps.save_every) == (2, 2)  # 250 // 100
    assert job(recipe_args={"steps": 50, "milestones": ()}).eval_every == 1  # never 0
    assert job(eval_every=3, save_every=6, target_every=4).save_every == 6
    assert job(eval_every=3).save_every == 3  # weights at every evaluation
    assert job().loss(classification=True).name == "crossentropy" and job().loss(False).name == "mse"
    assert job(loss_name="mse").loss(classification=True).name == "mse"


def test_the_identity_holds_what_the_weights_depend_on_and_only_that():
    plain = job(seed=3, quiet=True, eval_every=5).identity(ranks=2, train_size=400, loss=job().loss(True))
    assert {
        k: plain[k] for k in ("loss_name", "model", "dataset", "train_samples", "micro_batch", "seed", "augment")
    } == {
        "loss_name": "crossentropy",
        "model": "mnist1d_mlp",
        "dataset": "mnist1d_400",
        "train_samples": 400,
        "micro_batch": 64,  # the default batch of 128 over 2 ranks
        "seed": 3,
        "augment": "none",
    }
    assert plain.items() >= resolve("sgd").record().items()
    assert not {"ranks", "stop_loss", "stop_error", "quiet", "eval_every", "out"} & plain.keys()
    local = job("local", stop_loss=0.05).identity(ranks=4, train_size=400, loss=job().loss(True))
    assert local["ranks"] == 4 and (local["stop_loss"], local["stop_error"]) == (0.05, None)
    cifar = TrainJob(ModelConfig("resnet20"), DataConfig("cifar10", datapath="data"), resolve("sgd"))
    assert cifar.augmented and cifar.identity(1, 50000, cifar.loss(True))["augment"] == "standard"


@pytest.mark.parametrize(
    "build, words",
    [
        (
            lambda: TrainJob(ModelConfig("mnist1d_mlp", model_file="a.pt"), MNIST1D, resolve()),
            "^model_file=a.pt: expected nothing",
        ),
        (lambda: job(augment="standard"), "^augment=standard: expected none or auto for dataset=mnist1d_400"),
        (lambda: TrainRun(augment="mixup"), "^augment=mixup: expected one of auto, none, standard"),
        (lambda: TrainRun(micro_batch=0), "^micro_batch=0: expected a positive whole number of samples"),
        (lambda: TrainRun(seed=-1), "^seed=-1"),
        (lambda: TrainRun(save_every=0), "^save_every=0: expected a positive whole number of epochs"),
        (lambda: TrainRun(out=""), "^out="),
    ],
)
def test_settings_that_cannot_hold_are_refused_by_name(build, words):
    with pytest.raises(ConfigError, match=words):
        build()
