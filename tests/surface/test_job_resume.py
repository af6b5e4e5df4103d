"""Kill -9 of a whole running MPI job, then the same command again: only missing points are computed
and the result is identical to an uninterrupted run."""

import os
import signal
import subprocess
import time

import numpy as np
import pytest

from landscape.io.surface_file import read as read_surface

from conftest import ROOT, alive, command, done_count, landscape, process_tree, run, unlocked


@pytest.mark.faults
def test_kill_minus_nine_then_resume_gives_the_uninterrupted_result(tmp_path, plugins, monkeypatch):
    env = dict(os.environ, LANDSCAPE_TEST_SLEEP="0.05")
    args = [
        "--model",
        f"{plugins}:slow_model",
        "--x=-1:1:61",
        "--no_test",
        "--batch_size",
        "5000",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "0.1",
        "--threads",
        "1",
    ]
    surf = tmp_path / "s.h5"
    job = subprocess.Popen(
        command("plot_surface", [*args, "--surf_file", str(surf)], ranks=2),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while done_count(surf) < 12 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.05)
    tree = process_tree(job.pid)
    assert len(tree) >= 3, tree  # launcher and two ranks at least
    for pid in tree:  # the launcher and every rank at once, no clean-up
        os.kill(pid, signal.SIGKILL)
    job.wait()
    while (any(alive(pid) for pid in tree) or not unlocked(surf)) and time.monotonic() < deadline:
        time.sleep(0.05)  # the kernel drops a dead process's file lock a moment later
    killed_at = done_count(surf)
    assert 12 <= killed_at < 61, f"the job was not caught mid-run ({killed_at} of 61 done)"
    partial = read_surface(str(surf))
    assert np.isfinite(partial.values["train_loss"][partial.done]).all()
    assert np.isnan(partial.values["train_loss"][~partial.done]).all()

    resumed = run("plot_surface", [*args, "--surf_file", str(surf)], ranks=2, env={"LANDSCAPE_TEST_SLEEP": "0"})
    assert resumed.returncode == 0, resumed.stderr
    assert f"{killed_at} already done, {61 - killed_at} to compute" in resumed.stdout, resumed.stdout

    monkeypatch.setenv("LANDSCAPE_TEST_SLEEP", "0")
    assert landscape("surface", *args, "--surf_file", tmp_path / "fresh.h5", "--quiet") == 0
    a, b = read_surface(str(surf)), read_surface(str(tmp_path / "fresh.h5"))
    assert a.done.all()
    assert np.array_equal(a.values["train_loss"], b.values["train_loss"])
    assert np.array_equal(a.values["train_acc"], b.values["train_acc"])
    assert a.run["points_computed"] == 61 - killed_at


def test_nan_results_are_results_not_work_left(tmp_path, plugins, capsys):
    """A diverged point (loss NaN) is stored and marked done; rerunning computes nothing."""
    args = [
        "--model",
        f"{plugins}:diverging_model",
        "--x=-1:1:9",
        "--y=-1:1:5",
        "--xignore",
        "none",
        "--yignore",
        "none",
        "--surf_file",
        str(tmp_path / "n.h5"),
        "--no_test",
    ]
    assert landscape("surface", *args) == 0
    s = read_surface(str(tmp_path / "n.h5"))
    assert s.done.all()
    loss, acc = s.values["train_loss"], s.values["train_acc"]
    assert np.isnan(loss).any() and np.isfinite(loss).any()
    assert np.array_equal(np.isnan(acc), np.isnan(loss))  # a NaN output has no accuracy (not 10 %)
    assert (acc[np.isfinite(acc)] > 0).all()
    capsys.readouterr()
    assert landscape("surface", *args) == 0
    assert "45 already done, 0 to compute" in capsys.readouterr().out
