"""One network's measures, checked against independent computations of the same numbers, read back
from its folder on a rerun, and refused when the settings or the checkpoint changed."""

import json

import pytest
import torch

from landscape.data import DataConfig, load_data
from landscape.errors import ConfigError, MismatchError
from landscape.io.checkpoint import save
from landscape.models import build_model
from landscape.report import measures
from landscape.report.measures import MEASURES, MeasureConfig, Target, flagged, measure_run
from landscape.report.runs import Run

CONFIG = MeasureConfig(
    grid_1d="-1:1:5",
    grid_2d="-1:1:3",
    radius=1.0,
    directions=3,
    trace_samples=4,
    iterations=5,
    restarts=1,
    train_subset=120,
    m=40,
    draws=4,
    tol=1e-4,
)


def network(tmp_path, seed=3, name="mlp.pt"):
    torch.manual_seed(seed)
    model = build_model("digits_mlp")
    path = tmp_path / name
    save(model, str(path))
    return model.eval(), Run("sgd_b16_s0", "sgd", 16, 0, str(path), "digits_mlp", "digits")


def test_measures_agree_with_independent_computations(tmp_path, one_thread):
    import landscape

    model, run = network(tmp_path)
    result = measure_run(run, Target("digits_mlp", "digits", threads=1), CONFIG, str(tmp_path / "m"))
    v = result["values"]
    assert set(v) == {m.key for m in MEASURES}
    data = load_data(DataConfig("digits", train_subset=120))
    with torch.no_grad():
        test_wrong = int((model(data.test.inputs).argmax(1) != data.test.targets).sum()) / len(data.test.targets)
        train_loss = torch.nn.functional.cross_entropy(model(data.train.inputs), data.train.targets).item()
    assert v["test_error"] == pytest.approx(100 * test_wrong, abs=1e-9)
    assert v["train_loss"] == pytest.approx(train_loss, rel=1e-5)
    assert v["gap"] == pytest.approx(v["test_error"] - v["train_error"])
    exact = landscape.hessian_eigs(model, (data.train.inputs, data.train.targets), k=1, which="top", tol=1e-8)
    assert v["lambda_max"] == pytest.approx(exact["top"].values[0], rel=1e-3)
    assert result["details"]["samples"] == 120 and result["details"]["lambda_max"]["converged"]
    assert result["errors"]["trace"] > 0 and result["settings"] == CONFIG.record()
    assert (tmp_path / "m" / "surface_1d.h5").exists() and (tmp_path / "m" / "surface_2d.h5").exists()


def test_a_rerun_reads_back_and_other_settings_or_weights_are_refused(tmp_path, one_thread, monkeypatch):
    _, run = network(tmp_path)
    target, folder = Target("digits_mlp", "digits", threads=1), str(tmp_path / "m")
    first = measure_run(run, target, CONFIG, folder)
    monkeypatch.setattr(measures, "_curvature", lambda *a: pytest.fail("measured again"))
    assert measure_run(run, target, CONFIG, folder) == json.loads(json.dumps(first))
    with pytest.raises(MismatchError, match=r"other settings \(rho 0.01 there, 0.05 now\)"):
        measure_run(run, target, MeasureConfig(**{**CONFIG.record(), "rho": 0.05}), folder)
    with pytest.raises(MismatchError, match="was measured as digits_mlp on digits"):
        measure_run(run, Target("digits_mlp", "digits", num_classes=12, threads=1), CONFIG, folder)
    network(tmp_path, seed=4)  # retrained: new weights under the same path
    with pytest.raises(MismatchError, match="another checkpoint"):
        measure_run(run, target, CONFIG, folder)


def test_one_grid_one_spelling():
    assert MeasureConfig(grid_1d="-1.0:1.0:41") == MeasureConfig(grid_1d="-1:1:41")
    assert MeasureConfig(grid_1d="-0.123456789:0.123456789:3").grid_1d == "-0.123456789:0.123456789:3"


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("grid_1d", "-1:1:20", "a grid holding 0"),
        ("grid_2d", "0:1:x", "whole number"),
        ("trace_samples", 1, "a whole number >= 2"),
        ("rho", 0, "a positive number"),
        ("dtype", "half", "float32 or"),
        ("subspace", -1, "0 (the full space)"),
        ("train_subset", 0, "a positive whole number"),
        ("radius", 0.05, "from the 2-D grid's spacing"),
        ("radius", 3.0, "to its half width"),
    ],
)
def test_bad_settings_name_the_value(field, value, expected):
    with pytest.raises(ConfigError, match=f"{field}=.*{expected.replace('(', '.').replace(')', '.')}"):
        MeasureConfig(**{field: value})


def test_a_search_that_did_not_converge_or_found_no_rise_is_flagged_by_run_and_measure():
    result = {
        "run": {"name": "sgd_b16_s0"},
        "details": {
            "adaptive_sharpness": {"notes": ["not converged: the rise grew 4.0% over the last fifth of the search"]},
            "epsilon_sharpness": {"notes": []},
        },
    }
    assert flagged(result) == [
        "sgd_b16_s0: adaptive sharpness: not converged: the rise grew 4.0% over the last fifth of the search"
    ]
    assert flagged({"run": {"name": "x"}, "details": {}}) == []
