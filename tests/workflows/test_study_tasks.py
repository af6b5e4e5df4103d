"""The study's trainings: the mechanism's runs, one per batch size, rate and seed, with their names and
``landscape train`` flags; and tasks run the longest first, each logged, a diverged run left out and a
failed one named with its log (stand-in tasks: a Python one-liner each, no training; the arms' sweep
flags and the quick study end to end: tests/workflows/test_study.py)."""

import re
import sys
from types import SimpleNamespace

import pytest

from landscape.errors import ExitStatus, InputError
from landscape.io.run_files import write_run
from landscape.parallel import stop
from landscape.workflows.study_tasks import Task, mechanism_tasks, train_all


def test_the_mechanism_trains_each_batch_size_rate_and_seed_at_one_rate_with_lambda_max_logged(tmp_path):
    study = {
        "out": str(tmp_path),
        "train": {"model": "digits_mlp", "dataset": "digits", "momentum": 0.5, "lr": 9.0},
        "mechanism": {
            "rates": [0.4, 1.6],
            "batch_sizes": [256, "full"],
            "seeds": [3],
            "steps": 100,
            "curvature_every": 10,
        },
    }
    tasks = mechanism_tasks(study)
    assert [t.name for t in tasks] == ["sgd_b256_lr0.4_s3", "sgd_b256_lr1.6_s3", "gd_lr0.4_s3", "gd_lr1.6_s3"]
    assert {t.kind for t in tasks} == {"mechanism"}
    assert tasks[2].folder == str(tmp_path / "mechanism" / "gd_lr0.4_s3")
    command = tasks[2].command
    assert command[:4] == (sys.executable, "-m", "landscape", "train")
    flags = set(command[4:])
    assert {
        "--batch_size=1437",
        "--lr=0.4",
        "--seed=3",
        "--steps=100",
        "--curvature_every=10",
        "--eval_every=10",
        "--save_every=100",
        "--momentum=0.5",
        "--no-nesterov",
        "--weight_decay=0.0",
        "--loss_name=mse",
        "--recipe=naive",
        f"--out={tmp_path}/mechanism/gd_lr0.4_s3",
    } <= flags  # full: all 1,437 digits
    assert "--lr=9.0" not in flags  # the study's rate is not the mechanism's
    assert (
        "--momentum=0.9" in mechanism_tasks({**study, "mechanism": {**study["mechanism"], "momentum": 0.9}})[0].command
    )
    assert mechanism_tasks({**study, "mechanism": {}}) == []


def stand_in(tmp_path, name: str, code: int = 0) -> Task:
    """A task that notes its name in ``started.txt`` and exits with ``code``."""
    script = f"open({str(tmp_path / 'started.txt')!r}, 'a').write({name!r} + '\\n'); print('log of {name}'); " \
             f"raise SystemExit({code})"  # fmt: skip
    return Task(name, (sys.executable, "-c", script), str(tmp_path / name))


def test_the_longest_tasks_run_first_and_a_diverged_run_is_left_out(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(stop, "_installed", None)
    tasks = [stand_in(tmp_path, "naive_b16_s0"), stand_in(tmp_path, "naive_b1024_s0", ExitStatus.DIVERGED),
             stand_in(tmp_path, "gd_lr0.4_s0")]  # fmt: skip
    (tmp_path / "naive_b16_s0").mkdir()
    write_run(str(tmp_path / "naive_b16_s0"), {"identity": {}, "done": True})  # trained before: only checked
    seconds, diverged = train_all({"out": str(tmp_path), "jobs": 1}, tasks)
    assert (tmp_path / "started.txt").read_text().split() == ["gd_lr0.4_s0", "naive_b1024_s0", "naive_b16_s0"]
    assert diverged == ["naive_b1024_s0"] and seconds > 0
    assert (tmp_path / "logs" / "gd_lr0.4_s0.log").read_text() == "log of gd_lr0.4_s0\n"
    lines = [re.sub(r"\d+ s", "T s", line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        f"training 3 networks, 1 at a time (logs: {tmp_path}/logs/)",
        "[1/3] gd_lr0.4_s0: done in T s; about 0 min left",  # the time left: from the tasks trained so far
        "[2/3] naive_b1024_s0: DIVERGED (its loss became non-finite; left out of the report) in T s; about 0 min left",
        "[3/3] naive_b16_s0: checked: already trained in T s",
        f"diverged, left out: naive_b1024_s0 (see {tmp_path}/logs/<run>.log and <run>/run.json)",
    ]


def test_a_failed_training_is_named_with_its_log_after_the_others_end(tmp_path, monkeypatch):
    monkeypatch.setattr(stop, "_installed", SimpleNamespace(received=None))
    tasks = [stand_in(tmp_path, "naive_b16_s0", 1), stand_in(tmp_path, "naive_b64_s0")]
    with pytest.raises(InputError, match=f"^training failed for naive_b16_s0: see {tmp_path}/logs/naive_b16_s0.log$"):
        train_all({"out": str(tmp_path), "jobs": 2}, tasks)
    assert sorted((tmp_path / "started.txt").read_text().split()) == ["naive_b16_s0", "naive_b64_s0"]
