"""One network's measures, checked against independent computations of the same numbers (and, on a
linear least-squares model whose Hessian is known, against the closed form), read back from its folder
on a rerun, and refused when the settings or the checkpoint changed."""

import json

import numpy as np
import pytest
import torch

from landscape.data import DataConfig, load_data
from landscape.errors import ConfigError, MismatchError
from landscape.io import direction_file
from landscape.io.checkpoint import save
from landscape.io.surface_file import read
from landscape.models import build_model
from landscape.report import measures
from landscape.report.catalogue import MEASURES
from landscape.report.measure_config import MeasureConfig, Target
from landscape.report.measures import HESSIAN_1D, flagged, measure_run
from landscape.report.runs import Run

from plugins import linear_model, regression_data

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
    along = result["details"]["hessian_1d"]
    assert along == {"file": HESSIAN_1D, "eigenvalue": pytest.approx(exact["top"].values[0], rel=1e-8), "scale": "unit"}
    random, steepest = read(str(tmp_path / "m" / "surface_1d.h5")), read(str(tmp_path / "m" / HESSIAN_1D))
    assert np.array_equal(steepest.x, random.x) and steepest.done.all()
    assert steepest.attrs["xdirection"].startswith("Hessian eigenvector 1 (λ = ") and steepest.attrs["xnorm"] == "none"
    assert steepest.values["train_loss"][steepest.x == 0] == pytest.approx(train_loss, rel=1e-5)
    density = result["details"]["density"]
    assert (density["steps"], density["runs"], density["products"], density["dtype"]) == (40, 2, 80, "float32")
    assert np.allclose(np.sum(density["weights"], axis=1), 1.0)
    assert np.max(density["nodes"], axis=1) == pytest.approx([exact["top"].values[0]] * 2, rel=1e-3)


def test_a_rerun_reads_back_and_other_settings_or_weights_are_refused(tmp_path, one_thread, monkeypatch):
    _, run = network(tmp_path)
    target, folder = Target("digits_mlp", "digits", threads=1), str(tmp_path / "m")
    first = measure_run(run, target, CONFIG, folder)
    monkeypatch.setattr(measures, "_curvature", lambda *a: pytest.fail("measured again"))
    assert measure_run(run, target, CONFIG, folder) == json.loads(json.dumps(first))
    with pytest.raises(MismatchError, match=r"other settings \(rho 0.01 there, 0.05 now\)"):
        measure_run(run, target, MeasureConfig(**{**CONFIG.record(), "rho": 0.05}), folder)
    with pytest.raises(MismatchError, match="another network or data set \\(num_classes None there, 12 now\\)"):
        measure_run(run, Target("digits_mlp", "digits", num_classes=12, threads=1), CONFIG, folder)
    network(tmp_path, seed=4)  # retrained: new weights under the same path
    with pytest.raises(MismatchError, match="another checkpoint"):
        measure_run(run, target, CONFIG, folder)


def test_on_a_linear_model_the_density_and_the_hessian_surface_take_their_closed_form(tmp_path, one_thread, plugins):
    """MSE of y = W x + b is an exact quadratic with a constant Hessian H = 2 AᵀA / (n k) ⊗ I_k, A = [x 1]:
    stochastic Lanczos quadrature finds its distinct eigenvalues as nodes (the Krylov space holds no more),
    and along the unit top eigenvector the loss rises by λ t² / 2 beside its linear part."""
    model = linear_model()
    save(model, str(tmp_path / "linear.pt"))
    spec = (f"{plugins}:linear_model", f"{plugins}:regression_data")
    run = Run("linear", "sgd", 16, 0, str(tmp_path / "linear.pt"), *spec)
    config = MeasureConfig(**{**CONFIG.record(), "train_subset": None, "m": 10, "dtype": "float64", "loss_name": "mse"})
    result = measure_run(run, Target(*spec, threads=1), config, str(tmp_path / "m"))
    (x, _), _ = regression_data()
    a = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
    known = np.linalg.eigvalsh((2 * a.T @ a / (len(x) * model.out_features)).numpy())  # each k times

    density = result["details"]["density"]
    for nodes, weights in zip(np.array(density["nodes"]), np.array(density["weights"])):
        assert weights.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.allclose(np.sort(nodes[weights > 1e-12]), known, rtol=1e-9)

    along = result["details"]["hessian_1d"]
    assert along["eigenvalue"] == pytest.approx(known[-1], rel=1e-9) and along["scale"] == "unit"
    unit = direction_file.read(str(tmp_path / "m" / "surface_1d_hessian.directions.h5")).x
    assert sum(float((t**2).sum()) for t in unit.values()) == pytest.approx(1.0, abs=1e-12)
    surface = read(str(tmp_path / "m" / along["file"]))
    t, f = surface.x, surface.values["train_loss"]
    even = (f + f[::-1]) / 2 - f[t == 0]  # the grid is symmetric: the linear part cancels
    assert np.allclose(even, known[-1] * t**2 / 2, rtol=0, atol=1e-6 * f[t == 0])  # surfaces: in float32


def test_no_density_runs_no_density_and_a_folder_measured_before_a_setting_existed_is_refused(
    tmp_path, one_thread, plugins
):
    save(linear_model(), str(tmp_path / "linear.pt"))
    spec = (f"{plugins}:linear_model", f"{plugins}:regression_data")
    run, target, folder = (
        Run("linear", "sgd", 16, 0, str(tmp_path / "linear.pt"), *spec),
        Target(*spec, threads=1),
        str(tmp_path / "m"),
    )
    config = MeasureConfig(**{**CONFIG.record(), "train_subset": None, "m": 10, "loss_name": "mse", "density_runs": 0})
    result = measure_run(run, target, config, folder)
    assert "density" not in result["details"] and result["details"]["hessian_1d"]["eigenvalue"] > 0
    stored = json.loads((tmp_path / "m" / "measures.json").read_text())
    del stored["settings"]["density_steps"]  # as written before the density was measured
    (tmp_path / "m" / "measures.json").write_text(json.dumps(stored))
    with pytest.raises(MismatchError, match=r"other settings \(density_steps not there, 40 now\)"):
        measure_run(run, target, config, folder)


def test_one_grid_one_spelling():
    assert MeasureConfig(grid_1d="-1.0:1.0:41") == MeasureConfig(grid_1d="-1:1:41")
    assert MeasureConfig(grid_1d="-0.123456789:0.123456789:3").grid_1d == "-0.123456789:0.123456789:3"


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("grid_1d", "-1:1:20", "a grid holding 0"),
        ("grid_2d", "0:1:x", "whole number"),
        ("trace_samples", 1, "a whole number >= 2"),
        ("density_steps", 0, "a positive whole number"),
        ("density_runs", -1, "0 (no density) or a positive number of runs"),
        ("density_runs", 1.5, "0 (no density)"),
        ("rho", 0, "a positive number"),
        ("dtype", "half", "float32 or"),
        ("subspace", -1, "0 (the full space)"),
        ("train_subset", 0, "a positive whole number"),
        ("radius", 0.01, "from the 2-D grid's spacing"),
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


def test_an_edited_value_in_measures_json_is_refused_and_an_untouched_file_is_reused(
    tmp_path, one_thread, plugins, monkeypatch
):
    save(linear_model(), str(tmp_path / "linear.pt"))
    spec = (f"{plugins}:linear_model", f"{plugins}:regression_data")
    run, target, folder = (
        Run("linear", "sgd", 16, 0, str(tmp_path / "linear.pt"), *spec),
        Target(*spec, threads=1),
        str(tmp_path / "m"),
    )
    config = MeasureConfig(**{**CONFIG.record(), "train_subset": None, "m": 10, "loss_name": "mse", "density_runs": 0})
    first = measure_run(run, target, config, folder)
    path = tmp_path / "m" / "measures.json"
    kept = path.read_text()
    assert json.loads(kept)["record_sha256"] == first["record_sha256"]
    stored = json.loads(kept)
    stored["values"]["lambda_max"] = 999.0  # an edit of the cache: the scorecard would show it
    path.write_text(json.dumps(stored, indent=2))
    with pytest.raises(MismatchError, match=f"{path} does not match its digest .*remove the folder {folder} to"):
        measure_run(run, target, config, folder)
    del stored["record_sha256"]
    path.write_text(json.dumps(stored, indent=2))
    with pytest.raises(MismatchError, match="carries no digest"):
        measure_run(run, target, config, folder)
    path.write_text(kept)  # untouched: read back, not measured again
    monkeypatch.setattr(measures, "_curvature", lambda *a: pytest.fail("measured again"))
    again = measure_run(run, target, config, folder)
    assert json.dumps(again["values"]) == json.dumps(first["values"])  # NaN errors of a regression: as stored
