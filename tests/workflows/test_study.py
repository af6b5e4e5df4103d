"""``landscape study``: its settings (defaults, config file, flags) and, marked slow, the quick study end to end."""

import json
from pathlib import Path

import pytest

from landscape.errors import ConfigError, InputError, UsageError
from landscape.io.run_files import write_run
from landscape.train import sweep as sweeps
from landscape.workflows.report import settings_of
from landscape.workflows.study import DEFAULT_STUDY, StudyParams, _in_study_order, settings
from landscape.workflows.study_file import report_flags, report_params
from landscape.workflows.study_tasks import _sweep_flags

from conftest import run


def args(**given):
    return given


def test_the_default_study_is_the_issue_s_mnist1d_study_with_two_arms_and_the_rescaling_control():
    s = settings(**args())
    assert (s["recipes"], s["batch_sizes"], s["seeds"]) == (["naive", "linear"], [16, 64, 256, 1024], list(range(8)))
    train = s["train"]
    assert (train["model"], train["dataset"], train["momentum"], train["nesterov"], train["weight_decay"]) == (
        "mnist1d_mlp",
        "mnist1d",
        0.9,
        False,
        0.0,
    )
    assert train["naive"]["steps"] == 12000 and "epochs" not in train["naive"]  # arm A: equal optimizer steps
    assert train["linear"]["stop_loss"] == 0.01 and train["linear"]["base_batch"] == 16  # arm B: lr ∝ batch, to a loss
    assert train["milestones"] == [] and train["save_at_loss"] == [0.3, 0.1, 0.03, 0.01]  # one phase, levels kept
    assert s["rescale"] == {"recipe": "naive", "batch_sizes": [16, 1024], "seeds": [0, 1], "alphas": [0.25, 4.0]}
    assert s["mechanism"]["rates"] == [0.4, 0.8, 1.6] and s["mechanism"]["batch_sizes"] == [256, "full"]
    assert (s["out"], s["figures"], s["name"], s["jobs"]) == ("study_out", "study_out/figures", "study", 2)
    s["train"]["naive"]["steps"] = 1
    assert DEFAULT_STUDY["train"]["naive"]["steps"] == 12000  # settings() copied, not changed, the defaults


def test_a_recipe_table_of_a_study_file_adds_to_the_default_arm(tmp_path):
    (tmp_path / "s.toml").write_text('recipes = ["naive"]\n[train.naive]\nlr = 0.1\n')
    s = settings(**args(config=str(tmp_path / "s.toml")))
    assert s["train"]["naive"] == {**DEFAULT_STUDY["train"]["naive"], "lr": 0.1}
    assert s["rescale"]["recipe"] == "naive"
    (tmp_path / "s.toml").write_text('recipes = ["linear"]\n')
    assert settings(**args(config=str(tmp_path / "s.toml")))["rescale"] == {}  # its arm is not in the study


def test_a_config_file_then_flags_override(tmp_path):
    (tmp_path / "s.toml").write_text(
        'name = "r56"\njobs = 4\nseeds = [0]\n[train]\nmodel = "resnet56"\n'
        'dataset = "cifar10"\n[report]\ntrain_subset = 10000\n'
    )
    s = settings(**args(config=str(tmp_path / "s.toml"), jobs=8))
    assert s["name"] == "r56" and s["jobs"] == 8 and s["seeds"] == [0]
    assert s["batch_sizes"] == [16, 64, 256, 1024]
    assert s["train"] == {"model": "resnet56", "dataset": "cifar10"}  # another model: none of the MNIST-1D settings
    assert s["report"] == {"train_subset": 10000} and s["rescale"] == {} and s["mechanism"] == {}


def test_the_declared_endpoints_of_a_study_file_reach_the_report_and_are_checked_before_training(tmp_path):
    (tmp_path / "s.toml").write_text('[report]\nendpoints = ["trace", "lambda_max"]\n')
    study = settings(**args(config=str(tmp_path / "s.toml")))
    assert report_flags(study)[-3:] == ["--endpoints", "trace", "lambda_max"]
    params, _ = settings_of(report_params(study))
    assert params.endpoints == ("trace", "lambda_max")
    (tmp_path / "s.toml").write_text('[report]\nendpoints = "trace,sharp"\n')
    with pytest.raises(ConfigError, match="endpoints=sharp: expected measure keys from train_loss, "):
        settings_of(report_params(settings(**args(config=str(tmp_path / "s.toml")))))


@pytest.mark.parametrize(
    "text, error, message",
    [
        ("colour = 1\n", UsageError, "unknown key 'colour'"),
        ("seeds = []\n", UsageError, "seeds=[]: expected a non-empty list"),
        ("lr = 1\n", UsageError, "unknown key 'lr'"),
        ("jobs = 0\n", UsageError, "jobs=0: expected a positive whole number"),
        ("train = 3\n", UsageError, "train must be a table"),
        ("[train\n", InputError, "cannot be read as TOML"),
        ('[train]\nout = "elsewhere"\n', UsageError, "[train] out: the study sets it"),
        ("[train]\nlist = true\n", UsageError, "[train] list: the study sets it"),
        ('[report]\nfigures = "x"\n', UsageError, "[report] figures: the study sets it"),
    ],
)
def test_bad_config_files_are_one_line(tmp_path, text, error, message):
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        settings(**args(config=str(tmp_path / "s.toml")))


@pytest.mark.slow
def test_bad_training_settings_are_refused_before_training(tmp_path):
    (tmp_path / "s.toml").write_text('[train]\nmodel = "digits_cnn"\nepochs = -1\n')
    bad = run(
        "study", ["--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--figures", str(tmp_path / "f")]
    )
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "landscape study: error: [train] (naive): --epochs=-1: expected a positive whole number"
    )
    assert not (tmp_path / "o").exists() and not (tmp_path / "f").exists()  # nothing made


@pytest.mark.slow
def test_the_quick_study_end_to_end(tmp_path):
    done = run("study", ["--quick", "--out", str(tmp_path / "o"), "--figures", str(tmp_path / "f")], timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in (
        "study.md",
        "study.csv",
        "study.tex",
        "study_measures.png",
        "study_1d.png",
        "study_train_loss_2dcontour.png",
    ):
        assert (tmp_path / "f" / name).stat().st_size > 0, name
    table = (tmp_path / "f" / "study.md").read_text()
    assert "| naive | 16 | 2 |" in table and "| naive | 256 | 2 |" in table and "**Verdict.**" in table
    assert "time: training" in done.stdout


def test_a_study_file_is_also_a_sweep_file(tmp_path, cli):
    """The sbatch path trains a study with landscape sweep --config and measures it with report --config."""
    (tmp_path / "s.toml").write_text(
        f'out = "{tmp_path / "o"}"\nname = "r"\njobs = 3\nbatch_sizes = [16, 256]\n'
        'seeds = [0, 1]\nrecipes = ["sgd"]\n[train]\nmodel = "digits_mlp"\n[report]\ngrid_2d = "-1:1:5"\n'
    )
    listed = cli("sweep", ["--config", str(tmp_path / "s.toml"), "--list"])
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["0", "sgd_b16_s0", "1", "sgd_b16_s1", "2", "sgd_b256_s0", "3", "sgd_b256_s1"]


ARMS = """
batch_sizes = [32, 128]
seeds = [0, 1]
recipes = ["naive", "linear"]
[train]
model = "digits_mlp"
dataset = "digits"
weight_decay = 0
lr = 0.05
milestones = []
[train.naive]            # arm A: the same rate and the same number of steps at every batch size
steps = 24
[train.linear]           # arm B: the rate follows the batch, the same epochs
epochs = 2
base_batch = 32
[rescale]                # arm C: arm A's batch-32 networks, the same functions rescaled
recipe = "naive"
alphas = [4.0]
[report]
grid_1d = "-1:1:5"
grid_2d = "-1:1:5"
directions = 2
trace_samples = 3
iterations = 5
restarts = 1
draws = 3
m = 64
"""


def test_arms_with_their_own_budgets_are_swept_and_a_sweep_reads_the_same_file(tmp_path, cli):
    (tmp_path / "s.toml").write_text(f'out = "{tmp_path / "o"}"\n' + ARMS)
    listed = cli("sweep", ["--config", str(tmp_path / "s.toml"), "--list"])
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[1::2] == [
        "naive_b32_s0", "naive_b32_s1", "naive_b128_s0", "naive_b128_s1",
        "linear_b32_s0", "linear_b32_s1", "linear_b128_s0", "linear_b128_s1",
    ]  # fmt: skip
    (tmp_path / "bad.toml").write_text(ARMS.replace("[train.linear]", "[train.lars]"))
    bad = cli("sweep", ["--config", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "x"), "--list"])
    assert bad.returncode == 3 and "[train.lars] is not a recipe of this sweep" in bad.stderr
    with pytest.raises(ConfigError, match="alphas"):
        (tmp_path / "r.toml").write_text(ARMS.replace("alphas = [4.0]", "alphas = [-1.0]"))
        settings(**args(config=str(tmp_path / "r.toml")))


@pytest.mark.slow
def test_a_study_with_arms_and_the_rescaling_control_end_to_end(tmp_path):
    (tmp_path / "s.toml").write_text(ARMS)
    done = run(
        "study",
        ["--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--figures", str(tmp_path / "f")],
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    card = json.loads((tmp_path / "f" / "study.json").read_text())
    given = {"config": str(tmp_path / "s.toml"), "out": str(tmp_path / "o"), "figures": str(tmp_path / "f")}
    assert card["study"]["settings"] == StudyParams.of(given).record()  # the study's parameters, as given
    assert card["settings"]["out"] == str(tmp_path / "o" / "report")  # the report's parameters, as run
    runs = {r["name"]: r for r in card["runs"]}
    assert {"naive_b32_s0", "linear_b128_s1", "rescaled_a4_b32_s0", "rescaled_a4_b32_s1"} <= set(runs), set(runs)
    assert card["runs"][0]["recipe"] == "naive"  # the study's first arm first, whichever sweep wrote last
    identity = json.loads((tmp_path / "o" / "naive_b128_s0" / "run.json").read_text())["identity"]
    assert identity["steps"] == 24
    assert json.loads((tmp_path / "o" / "linear_b128_s0" / "run.json").read_text())["identity"]["epochs"] == 2
    assert {t["arm"] for t in card["tests"]} == {"naive", "linear"}  # the control is not an arm
    control = {r["measure"]: r for r in card["rescaling_control"]}
    assert control["lambda_max"]["changed"] is True and control["train_loss"]["changed"] is False
    assert control["adaptive_sharpness"]["changed"] is False and control["fisher_rao"]["changed"] is False
    assert "Rescaling control" in card["verdict"]


def test_each_arm_is_trained_with_its_own_table_and_heavy_ball_momentum():
    s = settings(**args())
    naive, linear = _sweep_flags(s, "naive"), _sweep_flags(s, "linear")
    assert "--no-nesterov" in naive and "--no-nesterov" in linear  # 2(1 + β)/η is the limit drawn
    assert "--steps=12000" in naive and "--lr=0.01" in naive and not any(f.startswith("--epochs") for f in naive)
    assert "--stop_loss=0.01" in linear and "--base_batch=16" in linear and "--lr=0.01" in linear
    assert naive[naive.index("--save_at_loss") + 1 : naive.index("--save_at_loss") + 5] == [
        "0.3",
        "0.1",
        "0.03",
        "0.01",
    ]


def test_the_cifar_study_file_runs_the_same_arms():
    s = settings(**args(config=str(Path(__file__).parents[2] / "scripts" / "slurm" / "study_resnet56.toml")))
    assert s["recipes"] == ["naive", "linear"] and s["train"]["model"] == "resnet56"
    assert s["train"]["naive"] == {"steps": 5000} and s["train"]["linear"]["epochs"] == 200
    assert s["train"]["nesterov"] is False and s["rescale"] == {}  # BatchNorm: no rescaling control
    settings_of(report_params(s))  # the report's settings hold too


def test_after_training_the_manifest_lists_the_arms_in_the_study_s_order(tmp_path):
    s = settings(**args(out=str(tmp_path)))
    configs = sweeps.configurations(["linear"], [16], [0])  # the last arm's sweep wrote the manifest
    for c in sweeps.configurations(s["recipes"], [16], [0]):
        (tmp_path / c.name).mkdir()
        write_run(str(tmp_path / c.name), {"identity": {"recipe": c.recipe, "batch_size": 16, "seed": 0}})
    sweeps.write_manifest(str(tmp_path), configs, 1, {"from": "the linear sweep"})
    _in_study_order({**s, "batch_sizes": [16], "seeds": [0]})
    rows = sweeps.read_manifest(str(tmp_path / "manifest.json"))
    assert [r["recipe"] for r in rows] == ["naive", "linear"]
    assert json.loads((tmp_path / "manifest.json").read_text())["settings"] == {"from": "the linear sweep"}


TINY_REPORT = """[report]
grid_1d = "-1:1:5"
grid_2d = "-1:1:3"
radius = 1
directions = 2
trace_samples = 3
iterations = 5
restarts = 1
draws = 3
m = 40
match_loss = "off"
formats = ["png"]
"""  # a report table small enough for a test
TINY = (
    """
batch_sizes = [160, 320]
seeds = [0]
recipes = ["sgd"]
jobs = 1
[train]
model = "mnist1d_mlp"
dataset = "mnist1d_400"
epochs = 80
lr = 0.05
"""
    + TINY_REPORT
)


@pytest.mark.slow
def test_a_stop_signal_is_passed_to_the_training_in_progress_and_a_rerun_finishes_the_study(tmp_path):
    """SIGTERM to the study alone: the sweep it runs saves its run and exits 143, none is begun after it,
    the study waits for it and exits 143 with one line; the rerun trains what is left and reports."""
    import os
    import signal
    import time

    from conftest import alive, process_tree, start

    (tmp_path / "s.toml").write_text(TINY)
    flags = ["--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--figures", str(tmp_path / "f")]
    job = start("study", flags, env={"PYTHONUNBUFFERED": "1"})  # the sweeps' logs unbuffered too
    second = tmp_path / "o" / "logs" / "sgd_b320_s0.log"  # the larger batch trains second
    deadline = time.monotonic() + 120
    while not (second.exists() and "training mnist1d_mlp" in second.read_text()) and time.monotonic() < deadline:
        assert job.poll() is None, job.communicate()
        time.sleep(0.05)
    tree = process_tree(job.pid)
    os.kill(job.pid, signal.SIGTERM)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 143, stderr
    assert stderr.strip().splitlines() == [
        "landscape study: stopped by SIGTERM after 1 of 2 runs; rerun the same command to resume"
    ]
    assert not [pid for pid in tree if alive(pid)]  # the sweep it ran has ended, none is left behind
    stopped = tmp_path / "o" / "sgd_b320_s0"
    assert (stopped / "latest.pt").exists() and not (stopped / "final.pt").exists()
    assert not (tmp_path / "f").exists() or not list((tmp_path / "f").iterdir())  # no figure, no report
    assert not [name for _, _, names in os.walk(tmp_path) for name in names if ".partial-" in name]

    resumed = run("study", flags, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "resuming" in (tmp_path / "o" / "logs" / "sgd_b320_s0.log").read_text()
    rows = json.loads((tmp_path / "o" / "manifest.json").read_text())["runs"]
    assert [(r["run"], r["done"]) for r in rows] == [("sgd_b160_s0", True), ("sgd_b320_s0", True)]
    assert (tmp_path / "f" / "study.md").exists()


@pytest.mark.slow
def test_a_stop_signal_during_the_report_stops_it_after_its_measurement_and_a_rerun_reports(tmp_path):
    """SIGTERM once the report has measured a run: the study passes it on, the report keeps what it
    measured and writes no scorecard, both exit 143 with the report's one line; the rerun trains nothing
    and reports."""
    import os
    import signal
    import time

    from conftest import start

    (tmp_path / "s.toml").write_text(TINY)
    flags = ["--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--figures", str(tmp_path / "f")]
    job = start("study", flags, env={"PYTHONUNBUFFERED": "1"})
    runs = tmp_path / "o" / "report" / "runs"
    deadline = time.monotonic() + 240
    while not list(runs.glob("*/measures.json")) and time.monotonic() < deadline:
        assert job.poll() is None, job.communicate()
        time.sleep(0.05)
    os.kill(job.pid, signal.SIGTERM)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 143, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("landscape report: stopped by SIGTERM after "), lines
    assert not (tmp_path / "f" / "study.md").exists()
    assert not [name for _, _, names in os.walk(tmp_path) for name in names if ".partial-" in name]

    trained = {p: p.stat().st_mtime_ns for p in (tmp_path / "o").glob("*/final.pt")}
    assert len(trained) == 2
    resumed = run("study", flags, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert (tmp_path / "f" / "study.md").exists()
    assert {p: p.stat().st_mtime_ns for p in trained} == trained  # nothing trained again


def test_factory_arguments_as_a_toml_table_reach_the_sweep_as_json():
    """``model_args = {width = 16}`` and ``model_args = '{"width": 16}'`` give the sweep the same flag."""
    from landscape.io.toml_file import table_flags

    assert table_flags({"model_args": {"width": 16}}) == table_flags({"model_args": '{"width": 16}'})
    assert table_flags({"data_args": {"n": 300, "a": 1}}) == ['--data_args={"a": 1, "n": 300}']
