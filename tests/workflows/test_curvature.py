"""``landscape curvature`` on a trained checkpoint: every measure into one JSON file and a density figure,
the ranks sharing the data, bad values refused before any product."""

import json

import pytest
import torch

from landscape.errors import ConfigError
from landscape.io.checkpoint import save
from landscape.models import build_model
from landscape.provenance import sha256_file
from landscape.train.checkpoints import save_weights
from landscape.workflows import curvature, curvature_output

from conftest import run


def checkpoint(tmp_path):
    torch.manual_seed(3)
    path = tmp_path / "mlp.pt"
    save(build_model("digits_mlp"), str(path))
    return str(path)


ARGS = ["--model", "digits_mlp", "--train_subset", "120", "--k", "2", "--tol", "1e-6", "--threads", "1"]


@pytest.mark.mpi
def test_every_measure_into_one_file_and_the_same_on_two_ranks(tmp_path):
    model_file = checkpoint(tmp_path)
    one = run(
        "curvature",
        [
            *ARGS,
            "--model_file",
            model_file,
            "--which",
            "both",
            "--trace",
            "10",
            "--trace_se",
            "1e-9",
            "--density",
            "--density_steps",
            "10",
            "--density_runs",
            "2",
            "--sharpness",
            "adaptive",
            "epsilon",
            "average",
            "--directions",
            "3",
            "--out",
            str(tmp_path / "one.json"),
        ],
    )
    assert one.returncode == 0, one.stderr
    report = json.loads((tmp_path / "one.json").read_text())
    assert report["parameters"] == 64 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10 and report["samples"] == 120
    top, bottom = report["eigenvalues"]["top"], report["eigenvalues"]["bottom"]
    assert top["values"][0] >= top["values"][1] > bottom["values"][1] >= bottom["values"][0]
    assert report["trace"]["samples"] == 10 and report["density"]["runs"] == 2
    assert (
        report["trace"]["se"] == 1e-9 and report["trace"]["dtype"] == report["eigenvalues"]["top"]["dtype"] == "float64"
    )
    assert report["trace"]["se_met"] is False and "--trace_se 1e-09 NOT met" in one.stdout  # 10 vectors: far from it
    assert report["checkpoint_sha256"] == sha256_file(model_file) and report["command"].startswith(
        "landscape curvature"
    )
    assert report["settings"]["trace"] == 10 and report["versions"]["landscape_version"]
    assert set(report["sharpness"]) == {"adaptive", "epsilon", "average"}
    assert (tmp_path / "one_density.png").read_bytes()[:4] == b"\x89PNG"
    assert "top 2 eigenvalue(s)" in one.stdout and "converged" in one.stdout
    two = run(
        "curvature", [*ARGS, "--model_file", model_file, "--which", "top", "--out", str(tmp_path / "two.json")], ranks=2
    )
    assert two.returncode == 0, two.stderr
    parallel = json.loads((tmp_path / "two.json").read_text())
    assert parallel["ranks"] == 2
    assert all(abs(a - b) <= 1e-9 * abs(a) for a, b in zip(top["values"], parallel["eigenvalues"]["top"]["values"]))


@pytest.mark.slow
def test_bad_values_and_outputs_are_refused_before_any_product(tmp_path):
    model_file = checkpoint(tmp_path)
    bad = run("curvature", [*ARGS, "--model_file", model_file, "--trace", "1", "--out", str(tmp_path / "x.json")])
    assert bad.returncode == 2 and "--trace=1: expected 0 (none) or at least 2 vectors" in bad.stderr
    bad_se = run(
        "curvature",
        [*ARGS, "--model_file", model_file, "--trace", "20", "--trace_se", "0", "--out", str(tmp_path / "x.json")],
    )
    assert bad_se.returncode == 2 and "--trace_se=0" in bad_se.stderr
    missing = run("curvature", [*ARGS, "--model_file", model_file, "--out", str(tmp_path / "no" / "x.json")])
    assert missing.returncode == 3 and "does not exist" in missing.stderr


def test_a_setting_of_a_measure_not_asked_for_and_an_m_larger_than_the_data_are_refused_first(tmp_path, cli):
    model_file, out = checkpoint(tmp_path), str(tmp_path / "x.json")
    base = {"model": "digits_mlp", "model_file": model_file, "out": out}
    with pytest.raises(ConfigError, match=r"eta=0\.01: expected sharpness with adaptive_l2"):
        curvature.settings_of({**base, "eta": 0.01, "sharpness": ["adaptive"]})
    with pytest.raises(ConfigError, match="restarts=3: expected sharpness with adaptive or adaptive_l2"):
        curvature.settings_of({**base, "restarts": 3, "sharpness": ["average"]})
    with pytest.raises(ConfigError, match="trace_se=0.1: expected trace as well"):
        curvature.settings_of({**base, "trace_se": 0.1})
    assert curvature.settings_of({**base, "eta": 0.01, "restarts": 3, "sharpness": ["adaptive_l2"]}).eta == 0.01
    big = cli(
        "curvature", [*ARGS, "--model_file", model_file, "--sharpness", "m_sharpness", "--m", "500", "--out", out]
    )
    assert (
        big.returncode == 2 and "--m=500: expected at most the 120 training samples on each of the 1 rank" in big.stderr
    )
    assert "eigenvalue" not in big.stdout and not (tmp_path / "x.json").exists()


def test_the_scale_aware_measures_from_the_command_line(tmp_path, cli):
    model_file = checkpoint(tmp_path)
    out = tmp_path / "c.json"
    flags = ["--which", "top", "--layers", "--layer_samples", "4", "--relative_flatness", "4"]
    done = cli(
        "curvature", [*ARGS, "--model_file", model_file, *flags, "--fisher_rao", "--noise_scale", "--out", str(out)]
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())
    assert [layer["layer"] for layer in found["layers"]] == ["net.1", "net.3", "net.5"]
    assert found["relative_flatness"]["citation"].startswith("Petzka") and found["relative_flatness"]["samples"] == 4
    assert found["fisher_rao"]["value"] > 0 and found["noise_scale"]["samples"] == 120
    assert "Fisher–Rao norm" in done.stdout and "B_simple" in done.stdout
    bad = cli("curvature", [*ARGS, "--model_file", model_file, "--relative_flatness", "1", "--out", str(out)])
    assert bad.returncode == 2 and "relative_flatness" in bad.stderr


def test_the_data_set_is_the_one_the_checkpoint_was_trained_on(tmp_path):
    torch.manual_seed(0)
    identity = {"model": "mnist1d_mlp", "dataset": "mnist1d", "num_classes": 10}
    path = save_weights(str(tmp_path), "final.pt", build_model("mnist1d_mlp").state_dict(), {"identity": identity})
    params = {"model": "mnist1d_mlp", "model_file": path, "out": str(tmp_path / "c.json"), "which": "top"}
    done = curvature.run({**params, "train_subset": 64, "dtype": "float32", "tol": 1e-3, "threads": 1})
    assert done.measures["dataset"] == "mnist1d" and done.measures["samples"] == 64  # not digits' 64 pixels


def test_a_second_job_on_the_same_output_is_refused_with_the_holder_named(tmp_path, plugins, cli):
    import os
    import signal
    import time

    from conftest import start
    from plugins import slow_model

    model_file, out = str(tmp_path / "slow.pt"), tmp_path / "c.json"
    save(slow_model(), model_file)
    args = ["--model", f"{plugins}:slow_model", "--model_file", model_file, "--threads", "1", "--out", str(out)]
    first = start("curvature", args, env={"LANDSCAPE_TEST_SLEEP": "2"})  # every product sleeps: still running
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "c.json.lock").exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "c.json.lock").exists(), first.communicate()
        second = cli("curvature", args)
        assert second.returncode == 3 and len(second.stderr.strip().splitlines()) == 1, second.stderr
        assert f"curvature file {out} is being measured by process {first.pid} on " in second.stderr
        assert first.poll() is None and not out.exists()
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()


def _stopped_after(job, text: str, name: str = "SIGTERM") -> tuple[str, str]:
    """Read ``job``'s output until a line holds ``text``, then send it the signal ``name``; its output and
    errors."""
    import os
    import signal

    seen = []
    for line in job.stdout:
        seen.append(line)
        if text in line:
            break
    os.kill(job.pid, getattr(signal, name))
    out, err = job.communicate(timeout=120)
    return "".join(seen) + out, err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGUSR1"])  # Slurm's --signal sends either
def test_a_stop_signal_between_measures_keeps_those_made_and_a_rerun_measures_all(tmp_path, plugins, monkeypatch, name):
    """A stop signal after the trace: the measure in progress finishes, no other begins; the measures made
    are written, the file marked incomplete and naming those not made, the lock gone; they are the values
    an uninterrupted run makes, and the rerun measures all."""
    import re

    from conftest import landscape, start
    from plugins import slow_model

    model_file, out = str(tmp_path / "slow.pt"), tmp_path / "c.json"
    save(slow_model(), model_file)
    args = ["--model", f"{plugins}:slow_model", "--model_file", model_file, "--train_subset", "120", "--threads", "1",
            "--trace", "10", "--density", "--density_steps", "10", "--sharpness", "epsilon", "average"]  # fmt: skip
    slow = {"LANDSCAPE_TEST_SLEEP": "0.01", "PYTHONUNBUFFERED": "1"}  # each sharpness evaluation sleeps
    job = start("curvature", [*args, "--out", str(out)], env=slow)
    stdout, stderr = _stopped_after(job, "Rademacher vectors", name)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(rf"stopped by {name} after [23] of 5 measures \(eigenvalues, trace", lines[0])
    assert job.returncode == 143 and f"written to {out}, marked incomplete" in lines[0]
    assert "rerun the same command" in lines[0] and "sharpness average" not in stdout
    partial = json.loads(out.read_text())
    made = [m for m in ("eigenvalues", "trace", "density") if m in partial]
    assert partial["complete"] is False and made[:2] == ["eigenvalues", "trace"]
    assert partial["not_made"] == [
        m for m in ("eigenvalues", "trace", "density", "epsilon", "average") if m not in made
    ]
    assert "sharpness" not in partial and f"(incomplete: {', '.join(partial['not_made'])} not made)" in stdout
    figures = ["c_density.pdf", "c_density.png"] if "density" in made else []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["slow.pt", "c.json", *figures])  # no lock, no partial

    monkeypatch.setenv("LANDSCAPE_TEST_SLEEP", "0")  # the rerun and the uninterrupted run, at full speed
    again = run("curvature", [*args, "--out", str(out)])
    assert again.returncode == 0, again.stderr
    assert landscape("curvature", *args, "--out", tmp_path / "fresh.json") == 0
    stopped_then_rerun, fresh = json.loads(out.read_text()), json.loads((tmp_path / "fresh.json").read_text())
    assert fresh["complete"] is True and stopped_then_rerun["complete"] is True and "not_made" not in fresh
    for key in ("eigenvalues", "trace", "density", "sharpness"):
        assert stopped_then_rerun[key] == fresh[key], key
    for key in made:  # what the stopped run kept is what an uninterrupted run makes
        assert partial[key] == fresh[key], key


def test_by_default_only_the_top_of_the_spectrum_is_asked_for(tmp_path, cli):
    """The bottom end is as costly as the top and rarely wanted: it is measured on request (--which)."""
    out = tmp_path / "c.json"
    done = cli("curvature", [*ARGS, "--model_file", checkpoint(tmp_path), "--out", str(out)])
    assert done.returncode == 0, done.stderr
    assert list(json.loads(out.read_text())["eigenvalues"]) == ["top"]
    assert curvature.CurvatureParams.of({"model_file": "m.pt", "out": "c.json"}).which == "top"


def test_the_plan_bounds_the_products_each_measure_then_spends(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(curvature_output, "PROGRESS_SECONDS", 0.0)  # a progress line after every product
    model_file = checkpoint(tmp_path)
    flags = ["--which", "both", "--trace", "10", "--trace_se", "0.5", "--density", "--density_steps", "10"]
    flags += ["--density_runs", "2", "--relative_flatness", "3", "--fisher_rao", "--out", str(tmp_path / "c.json")]
    done = cli("curvature", [*ARGS, "--model_file", model_file, *flags])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    begin = lines.index(next(line for line in lines if line.startswith("plan: 5 measure(s), at most ")))
    plan, bounded = {}, {}
    for line in lines[begin + 1 : begin + 6]:
        name, *words = line.split()
        plan[name] = 0 if words == ["no", "products"] else int(words[-2].replace(",", ""))
        bounded[name] = words[:2] == ["at", "most"]
    assert list(plan) == ["eigenvalues", "trace", "density", "relative_flatness", "fisher_rao"]
    assert [name for name in plan if bounded[name]] == ["eigenvalues", "trace", "density"]  # they may stop early
    assert lines[begin + 6].startswith("time: at most about ") and " s per product" in lines[begin + 6]

    report = json.loads((tmp_path / "c.json").read_text())
    spent = {
        "eigenvalues": sum(end["products"] for end in report["eigenvalues"].values()),
        "trace": report["trace"]["products"],
        "density": report["density"]["products"],
        "relative_flatness": report["relative_flatness"]["products"],
        "fisher_rao": 0,
    }
    assert all(spent[name] <= plan[name] for name in plan), (spent, plan)
    assert plan["relative_flatness"] == 3 and plan["eigenvalues"] > spent["eigenvalues"] > 0  # Lanczos stopped early
    for name, products in spent.items():  # each measure's line, once it has ended
        assert sum(line.startswith(f"{name}: {products:,} products in ") for line in lines) == 1, done.stdout
    counts = [int(line.split()[1]) for line in lines if line.startswith("  eigenvalues: ")]
    assert counts and counts == list(range(counts[0], counts[0] + len(counts))), counts  # one a product, as it runs
    assert counts[-1] <= spent["eigenvalues"] and f"of at most {plan['eigenvalues']:,} products, " in done.stdout
