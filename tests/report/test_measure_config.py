"""A scorecard's measure settings: the measures a study skips, checked by name; m-sharpness's batch within
the training subset; the record read back as the same settings; and the curvature suite and the searches
given this report's values (grid spelling and bad values: tests/report/test_measures.py)."""

import json

import pytest

from landscape.errors import ConfigError
from landscape.report.measure_config import TARGET_IDENTITY, MeasureConfig, Target


def test_skipped_measures_are_one_name_or_several_each_kept_once():
    assert MeasureConfig(skip="layers").skip == ("layers",)
    assert MeasureConfig(skip=["noise_scale", "m_sharpness", "noise_scale"]).skip == ("noise_scale", "m_sharpness")
    assert MeasureConfig(skip=None).skip == ()
    with pytest.raises(ConfigError, match="skip=test_error: expected measures of the curvature suite among lambda_max"):
        MeasureConfig(skip=["trace", "test_error"])  # an outcome of training is always measured


def test_m_sharpness_batches_must_fit_in_the_training_subset():
    assert MeasureConfig(train_subset=128, m=128).m == 128
    with pytest.raises(ConfigError, match=r"m=129: expected at most train_subset \(128\): m-sharpness takes batches"):
        MeasureConfig(train_subset=128, m=129)


def test_the_record_is_plain_json_and_reads_back_as_the_same_settings():
    config = MeasureConfig(grid_2d="-2:2:9", radius=1.0, skip=("layers", "trace"), train_subset=500, seed=3)
    record = config.record()
    assert record["skip"] == ["layers", "trace"] and record["grid_2d"] == "-2:2:9"  # as measures.json holds it
    assert json.loads(json.dumps(record)) == record
    assert MeasureConfig(**record) == config


def test_the_suite_and_the_searches_take_this_report_s_values():
    config = MeasureConfig(trace_samples=7, tol=0.01, density_steps=12, density_runs=0, radius=0.25, directions=3,
                           rho=0.1, seed=5, batch_size=64, kernel="compiled", loss_name="mse")  # fmt: skip
    suite = config.suite()
    assert (suite.k, suite.which, suite.tol, suite.seed) == (1, "top", 0.01, 5)  # λmax alone, to the report's tol
    assert suite.trace_samples == suite.layer_samples == suite.flatness_samples == 7
    assert (suite.density_steps, suite.density_runs) == (12, 1)  # no density (0): the suite still needs a run
    sharp = suite.sharpness
    assert sharp == config.sharpness()
    assert (sharp.radius, sharp.directions, sharp.rho, sharp.seed) == (0.25, 3, 0.1, 5)
    evaluation = config.evaluation()
    assert (evaluation.batch_size, evaluation.kernel, evaluation.loss_name) == (64, "compiled", "mse")


def test_a_target_is_identified_by_its_network_and_data_not_by_where_it_runs():
    assert TARGET_IDENTITY == ("model", "dataset", "datapath", "num_classes", "model_args", "data_args")
    assert "device" not in TARGET_IDENTITY and "threads" not in TARGET_IDENTITY  # a rerun on a GPU reads the cache
    assert Target("digits_mlp", "digits").model_args == ""
