"""``landscape report`` end to end on four small networks: the tables, figures and verdict; the same
numbers on one rank and on two; bad input refused with one line before anything is computed."""

import csv
import json
import math

import pytest
import torch

from landscape.cli.params import parsed
from landscape.cli.report import build_parser
from landscape.io.checkpoint import save
from landscape.models import build_model
from landscape.workflows.report import ReportParams

from conftest import run

FLAGS = [
    "--model",
    "digits_mlp",
    "--train_subset",
    "120",
    "--grid_1d=-1:1:5",
    "--grid_2d=-1:1:3",
    "--radius",
    "1",
    "--directions",
    "2",
    "--trace_samples",
    "3",
    "--iterations",
    "5",
    "--restarts",
    "1",
    "--m",
    "40",
    "--threads",
    "1",
    "--formats",
    "png",
]


def networks(tmp_path, seeds=(0, 1)) -> str:
    """Networks 'trained' at batch 16 and 256 with each seed (four by default): random weights, larger at 256."""
    lines = ["checkpoint,batch_size,seed"]
    for batch in (16, 256):
        for seed in seeds:
            torch.manual_seed(seed)
            model = build_model("digits_mlp")
            with torch.no_grad():
                for p in model.parameters():
                    p.mul_(1.0 if batch == 16 else 1.5)
            save(model, str(tmp_path / f"b{batch}_s{seed}.pt"))
            lines.append(f"b{batch}_s{seed}.pt,{batch},{seed}")
    (tmp_path / "nets.csv").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "nets.csv")


@pytest.mark.mpi
def test_scorecard_tables_figures_and_the_same_numbers_on_two_ranks(tmp_path):
    manifest = networks(tmp_path)
    one = run("report", [manifest, "--out", str(tmp_path / "one"), *FLAGS], timeout=300)
    assert one.returncode == 0, one.stderr
    for name in (
        "scorecard.csv",
        "scorecard_runs.csv",
        "scorecard_tests.csv",
        "scorecard.md",
        "scorecard.tex",
        "scorecard.json",
        "scorecard_measures.png",
        "scorecard_gap.png",
        "scorecard_seeds.png",
        "scorecard_1d.png",
        "scorecard_1d_hessian.png",
        "scorecard_density.png",
        "scorecard_train_loss_2dcontour.png",
        "scorecard_summary.png",
    ):
        assert (tmp_path / "one" / name).stat().st_size > 0, name
    rows = list(csv.DictReader(open(tmp_path / "one" / "scorecard.csv")))
    assert [(r["batch_size"], r["seeds"]) for r in rows] == [("16", "2"), ("256", "2")]
    card = json.loads((tmp_path / "one" / "scorecard.json").read_text())
    assert card["endpoints"] == ["test_error", "lambda_max", "adaptive_sharpness"]
    lam = next(t for t in card["tests"] if (t["measure"], t["method"]) == ("lambda_max", "kendall_within_seeds"))
    assert lam["exact"] and lam["permutations"] == 4 and lam["runs"] == 4  # 2 seeds x 2 batch sizes: 2! x 2!
    assert all(isinstance(r["lambda_max_converged"], bool) and r["lambda_max_residual"] >= 0 for r in card["runs"])
    assert "smallest p-value" in card["verdict"] and "does not change" not in card["verdict"]
    assert "scorecard.md has the scorecard, every measure and test): " in one.stdout
    assert "4 runs: recipe sgd, batch sizes 16, 256, seeds 0, 1" in one.stdout

    two = run("report", [manifest, "--out", str(tmp_path / "two"), *FLAGS], ranks=2, timeout=300)
    assert two.returncode == 0, two.stderr
    assert "rank 1)" in two.stdout
    for name in ("sgd_b16_s0", "sgd_b16_s1", "sgd_b256_s0", "sgd_b256_s1"):
        a = json.loads((tmp_path / "one" / "runs" / name / "measures.json").read_text())
        b = json.loads((tmp_path / "two" / "runs" / name / "measures.json").read_text())
        assert a["values"] == b["values"], name  # each network measured on one rank either way: same bits
    assert (tmp_path / "one" / "scorecard.csv").read_text() == (tmp_path / "two" / "scorecard.csv").read_text()

    # A job killed before one network's measures were written: the rerun measures that one again
    # (its surfaces are complete and read back) and reads the others; the numbers do not change.
    lost = tmp_path / "one" / "runs" / "sgd_b256_s1" / "measures.json"
    before = json.loads(lost.read_text())
    lost.unlink()
    again = run("report", [manifest, "--out", str(tmp_path / "one"), *FLAGS, "--alpha", "0.4", "--endpoints", "trace"])
    assert again.returncode == 0, again.stderr
    assert json.loads(lost.read_text())["values"] == before["values"]
    card = json.loads((tmp_path / "one" / "scorecard.json").read_text())
    assert card["alpha"] == 0.4 and card["endpoints"] == ["trace"]


@pytest.mark.parametrize(
    "extra, code, message",
    [
        (["--alpha", "2"], 2, "--alpha=2.0: expected a number strictly between 0 and 1"),
        (["--grid_1d=-1:1:4"], 2, "--grid_1d=-1:1:4: expected a grid holding 0"),
        (["--model", "nonsense"], 2, "model=nonsense"),
        (["--name", "a/b"], 2, "--name='a/b': expected a file name stem"),
        (["--endpoints", "test_error,sharp"], 2, "--endpoints=sharp: expected measure keys from train_loss, "),
    ],
)
@pytest.mark.slow
def test_bad_flags_are_one_line_before_any_work(tmp_path, extra, code, message):
    manifest = networks(tmp_path)
    bad = run("report", [manifest, "--out", str(tmp_path / "out"), *FLAGS, *extra])
    assert bad.returncode == code and message in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "out" / "runs").exists()


def test_missing_manifest_and_an_out_that_is_a_file(tmp_path, cli):
    missing = cli("report", [str(tmp_path / "none.json"), "--out", str(tmp_path / "o"), *FLAGS])
    assert missing.returncode == 3 and "does not exist" in missing.stderr
    (tmp_path / "file").write_text("keep")
    clash = cli("report", [networks(tmp_path), "--out", str(tmp_path / "file"), *FLAGS])
    assert clash.returncode == 3 and "is a file" in clash.stderr and (tmp_path / "file").read_text() == "keep"


@pytest.mark.slow
def test_an_edited_cached_measurement_stops_the_report_with_one_line_and_the_scorecard_kept(tmp_path, cli):
    """The value a scorecard would show, changed by hand in a run's measures.json: the rerun refuses it
    (exit 4, one line naming the file and how to measure again) and leaves the written report as it was."""
    manifest, out = networks(tmp_path, seeds=(0,)), tmp_path / "report"
    assert cli("report", [manifest, "--out", str(out), *FLAGS]).returncode == 0
    written = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cached = next(out.glob("runs/*/measures.json"))
    stored = json.loads(cached.read_text())
    stored["values"]["lambda_max"] = 999.0
    cached.write_text(json.dumps(stored, indent=2))
    edited = cached.read_bytes()
    again = cli("report", [manifest, "--out", str(out), *FLAGS])
    assert again.returncode == 4 and len(again.stderr.strip().splitlines()) == 1, again.stderr
    assert f"{cached} does not match its digest" in again.stderr and "remove the folder" in again.stderr
    written[cached] = edited
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == written


@pytest.mark.slow
def test_each_run_is_also_measured_at_the_weights_kept_at_the_arms_matched_loss(tmp_path):
    """Runs that keep their weights at training losses (--save_at_loss) are compared at the lowest level
    every run of the arm crossed in its last learning-rate phase, each at its own kept weights."""
    sweep = tmp_path / "sweep"
    levels = ["2.2", "2.0", "1.8", "1.6", "1.4", "1.2", "1.0", "0.8"]
    trained = run(
        "sweep",
        ["--out", str(sweep), "--recipes", "naive", "--batch_sizes", "16", "160", "--seeds", "0", "1"]
        + ["--model", "mnist1d_mlp", "--dataset", "mnist1d_200", "--steps", "60", "--eval_every", "10"]
        + ["--lr", "0.1", "--milestones", "--threads", "1", "--quiet", "--save_at_loss", *levels],  # one rate
        timeout=300,
    )
    assert trained.returncode == 0, trained.stderr
    flags = [f for f in FLAGS if f not in ("digits_mlp", "--model", "--train_subset", "120")]
    argv = [str(sweep), "--out", str(tmp_path / "report"), *flags]
    done = run("report", argv, timeout=600)
    assert done.returncode == 0, done.stderr
    card = json.loads((tmp_path / "report" / "scorecard.json").read_text())
    params = ReportParams.of(parsed(build_parser(), argv)).record()  # the scorecard records its parameters
    assert {k: card["settings"][k] for k in params} == params and card["settings"]["measures"]["radius"] == 1.0
    level = card["settings"]["matched"]["naive"]["level"]
    assert level is not None and f"{level:g}" in levels, card["settings"]["matched"]
    finals = [r["values"]["train_loss"] for r in card["runs"]]
    assert level >= max(finals) * 0.95  # every run crossed it
    for r in card["runs"]:
        assert abs(r["values"]["train_loss_matched"] / level - 1) <= 0.05  # kept within 5 % of the level
        assert math.isfinite(r["values"]["lambda_max_matched"])
    assert "matched loss " in done.stdout


@pytest.mark.slow
def test_a_stop_signal_between_runs_keeps_each_measured_run_and_a_rerun_ends_as_an_uninterrupted_one(tmp_path):
    """SIGTERM once the first run is measured (the second begun: a signal between a run's final and
    matched measurements would stop it after 0 runs): the run in progress is finished or abandoned (its
    surface saved), none begins after it, no scorecard is written; the rerun reads the measured runs back."""
    import os
    import re
    import signal

    from conftest import start

    manifest = networks(tmp_path, seeds=(0,))
    out = tmp_path / "stopped"
    job = start("report", [manifest, "--out", str(out), *FLAGS], env={"PYTHONUNBUFFERED": "1"})

    for line in job.stdout:
        if line.startswith("[2/2] "):
            break
    assert (out / "runs" / "sgd_b16_s0" / "measures.json").exists()
    os.kill(job.pid, signal.SIGTERM)
    stdout, stderr = job.communicate(timeout=120)
    assert job.returncode == 143, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        r"landscape report: stopped by SIGTERM after [12] of 2 runs; rerun the same command to resume", lines[0]
    ), stderr
    assert not list(out.glob("scorecard*")) and (out / "runs" / "sgd_b16_s0" / "measures.json").exists()
    assert not [name for _, _, names in os.walk(tmp_path) for name in names if ".partial-" in name]

    resumed = run("report", [manifest, "--out", str(out), *FLAGS], timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    whole = run("report", [manifest, "--out", str(tmp_path / "whole"), *FLAGS], timeout=300)
    assert whole.returncode == 0, whole.stderr
    a, b = (json.loads((tmp_path / name / "scorecard.json").read_text()) for name in ("stopped", "whole"))
    assert [r["values"] for r in a["runs"]] == [r["values"] for r in b["runs"]]


@pytest.mark.mpi
@pytest.mark.slow
def test_a_stop_signal_to_one_rank_stops_every_rank_after_the_same_round(tmp_path):
    """On two ranks, each measuring its own runs, a signal that reaches one rank stops both after the
    round in progress (no rank waits for one that left); the rerun on two ranks finishes."""
    import os
    import signal

    from conftest import process_tree, start

    manifest, out = networks(tmp_path), tmp_path / "stopped"
    job = start("report", [manifest, "--out", str(out), *FLAGS], 2, env={"PYTHONUNBUFFERED": "1"})
    for line in job.stdout:
        if line.startswith(("[1/4] ", "[2/4] ")):  # the first round is ending
            break
    os.kill(process_tree(job.pid)[-1], signal.SIGTERM)  # one process of the job: a rank, or the launcher
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 143, stderr
    ours = [line for line in stderr.splitlines() if line.startswith("landscape")]
    measured = len(list(out.glob("runs/*/measures.json")))  # 2: the first round (4: the signal came late)
    import re

    assert len(ours) == 1 and re.fullmatch(  # runs measured at every stage; a run's final weights come first
        r"landscape report: stopped by SIGTERM after [024] of 4 runs; rerun the same command to resume", ours[0]
    ), ours
    assert measured in (2, 4) and not list(out.glob("scorecard*"))
    resumed = run("report", [manifest, "--out", str(out), *FLAGS], 2, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "scorecard.json").exists()
