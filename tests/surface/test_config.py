"""One configuration per concern, checked with plain values where it is built; errors name the parameter."""

import math

import pytest

from landscape.data import DataConfig
from landscape.errors import ConfigError, UsageError
from landscape.grid import Grid
from landscape.models import ModelConfig
from landscape.surface.config import RunConfig, SurfaceJob
from landscape.surface.direction_set import DirectionConfig
from landscape.surface.evaluation import EvaluationConfig

MODEL = ModelConfig("digits_cnn")


def job(**parts):
    return SurfaceJob(model=MODEL, grid=parts.pop("grid", Grid.parse("-1:1:5")), **parts)


def test_defaults_live_in_the_configurations():
    j = job()
    assert j.evaluation == EvaluationConfig("crossentropy", "auto", "auto", "auto", "float32", None, 10)
    assert j.data.dataset == "digits" and j.run.round_seconds == 5.0 and j.run.io == "auto"
    assert j.surf_file == "surface.h5" and j.dir_file == "surface.directions.h5"
    with_file = SurfaceJob(model=ModelConfig("digits_cnn", model_file="runs/a.pt"), grid=Grid.parse("-1:1:5"))
    assert with_file.surf_file == "runs/a.pt.surface.h5" and with_file.dir_file == "runs/a.pt.surface.directions.h5"


@pytest.mark.parametrize(
    "build, field, words",
    [
        (lambda: EvaluationConfig(batch_size=0), "batch_size", "batch_size=0: expected a positive whole number"),
        (
            lambda: EvaluationConfig(dtype="int8"),
            "dtype",
            "dtype=int8: expected one of float32, float64, bfloat16, float16",
        ),
        (lambda: EvaluationConfig(loss_name="hinge"), "loss_name", "loss_name=hinge"),
        (lambda: EvaluationConfig(bn="train"), "bn", "bn=train: expected one of eval, states, recalibrate"),
        (lambda: RunConfig(round_seconds=math.nan), "round_seconds", "round_seconds=nan"),
        (lambda: RunConfig(threads=0), "threads", "threads=0"),
        (lambda: RunConfig(io="posix"), "io", "io=posix"),
        (lambda: ModelConfig("digits_cnn", num_classes=0), "num_classes", "num_classes=0"),
        (lambda: ModelConfig("resnet9000"), "model", "model=resnet9000: expected a registry name"),
        (lambda: DirectionConfig(xnorm="sideways"), "xnorm", "xnorm=sideways"),
        (lambda: DirectionConfig(seed=-1), "seed", "seed=-1"),
        (lambda: DataConfig(split_idx=1), "split_idx", "split_idx=1: expected a whole number in 0..0"),
        (lambda: Grid.parse("1:-1:5"), "x", "x=1:-1:5"),
    ],
)
def test_each_bad_value_is_refused_by_its_own_configuration(build, field, words):
    with pytest.raises(ConfigError) as caught:
        build()
    assert caught.value.field == field and str(caught.value).startswith(words)


@pytest.mark.parametrize(
    "build, words",
    [
        (
            lambda: job(directions=DirectionConfig(model_file3="m.pt")),
            "model_file3 needs a 2-D grid, as it defines the y direction",
        ),
        (
            lambda: job(directions=DirectionConfig(dir_type="states"), evaluation=EvaluationConfig(bn="eval")),
            "bn=eval keeps or re-estimates the running statistics, but dir_type=states moves them",
        ),
        (lambda: DirectionConfig(model_file2="b.pt", xnorm="filter"), "xnorm does not apply with model_file2"),
        (lambda: DirectionConfig(same_dir=True, model_file3="c.pt"), "model_file3 and same_dir both define"),
    ],
)
def test_settings_that_contradict_each_other_are_refused(build, words):
    with pytest.raises(UsageError, match=words):
        build()


def test_a_message_is_spelled_as_flags_on_the_command_line_and_as_keywords_in_the_api():
    from landscape.cli.params import flags_of
    from landscape.workflows.surface import SurfaceParams

    try:
        DirectionConfig(model_file2="b.pt", xnorm="filter")
    except UsageError as exc:
        error = exc
    assert error.spelled(flags_of(SurfaceParams)) == (
        "--xnorm does not apply with --model_file2: that direction is a difference of models"
    )
    assert str(error) == "xnorm does not apply with model_file2: that direction is a difference of models"
    assert error.fields == ("xnorm", "model_file2")


def test_the_bn_policy_implies_the_direction_type():
    assert job(evaluation=EvaluationConfig(bn="states")).wanted_dir_type() == "states"
    assert job(evaluation=EvaluationConfig(bn="recalibrate")).wanted_dir_type() == "weights"
    assert job().wanted_dir_type() is None  # the default, or a reused file's
