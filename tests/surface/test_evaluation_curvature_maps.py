"""Curvature maps (``--curvature``): the Hessian's extreme eigenvalues at every grid point, through the
same scheduler, file and resume as the loss: a closed form, 1 and 2 ranks bit for bit, kill -9 resumed."""

import os
import signal
import subprocess
import time

import numpy as np
import pytest

from landscape.io.surface_file import read as read_surface

from conftest import ROOT, alive, command, done_count, landscape, process_tree, run, unlocked


def test_a_linear_model_with_mse_has_the_same_closed_form_eigenvalues_everywhere(tmp_path, plugins):
    """y = W x + b, loss = mean over samples and outputs of squared residuals: the Hessian is constant,
    block-diagonal over the outputs, each block 2/(n m) sum_i [x_i, 1][x_i, 1]^T."""
    surf = tmp_path / "c.h5"
    assert (
        landscape(
            "surface",
            "--model",
            f"{plugins}:linear_model",
            "--dataset",
            f"{plugins}:regression_data",
            "--loss_name",
            "mse",
            "--dtype",
            "float64",
            "--x=-1:1:3",
            "--y=-1:1:3",
            "--xignore",
            "none",
            "--yignore",
            "none",
            "--curvature",
            "--curvature_tol",
            "1e-10",
            "--surf_file",
            str(surf),
            "--quiet",
        )
        == 0
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("p", plugins)
    p = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(p)
    (x, _), _ = p.regression_data()
    design = np.hstack([x.numpy(), np.ones((len(x), 1))])
    exact = np.linalg.eigvalsh(2.0 / (len(x) * p.N_OUT) * design.T @ design)
    s = read_surface(str(surf))
    assert s.done.all()
    assert np.allclose(s.values["train_eig_max"], exact[-1], rtol=1e-8)
    assert np.allclose(s.values["train_eig_min"], exact[0], rtol=1e-8)
    assert np.allclose(s.values["train_eig_ratio"], exact[0] / exact[-1], rtol=1e-7)
    assert s.attrs["curvature"] and "train_eig_ratio" in s.values and "test_eig_max" not in s.values


ARGS = [
    "--model",
    "digits_mlp",
    "--x=-1:1:5",
    "--y=-1:1:3",
    "--train_subset",
    "300",
    "--no_test",
    "--curvature",
    "--threads",
    "1",
]


@pytest.mark.mpi
def test_one_and_two_ranks_give_the_same_map_bit_for_bit(tmp_path):
    serial = run("surface", [*ARGS, "--surf_file", str(tmp_path / "one.h5"), "--dir_file", str(tmp_path / "d.h5")])
    assert serial.returncode == 0, serial.stderr
    two = run(
        "surface", [*ARGS, "--surf_file", str(tmp_path / "two.h5"), "--dir_file", str(tmp_path / "d.h5")], ranks=2
    )
    assert two.returncode == 0, two.stderr
    a, b = read_surface(str(tmp_path / "one.h5")), read_surface(str(tmp_path / "two.h5"))
    for name in ("train_loss", "train_eig_max", "train_eig_min", "train_eig_ratio"):
        assert np.array_equal(a.values[name], b.values[name]), name
    centre = a.values["train_eig_max"][2, 1]
    assert centre > 0 and (a.values["train_eig_ratio"] >= 0).all()


@pytest.mark.mpi
def test_kill_9_then_the_same_command_resumes_the_map_identically(tmp_path):
    args = [*ARGS[:2], "--x=-1:1:11", *ARGS[3:], "--round_seconds", "0.1", "--dir_file", str(tmp_path / "d.h5")]
    surf = tmp_path / "k.h5"
    job = subprocess.Popen(
        command("surface", [*args, "--surf_file", str(surf)], ranks=2),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while done_count(surf) < 6 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.05)
    tree = process_tree(job.pid)
    for pid in tree:
        os.kill(pid, signal.SIGKILL)
    job.wait()
    while (any(alive(pid) for pid in tree) or not unlocked(surf)) and time.monotonic() < deadline:
        time.sleep(0.05)
    killed_at = done_count(surf)
    assert 6 <= killed_at < 33, f"the job was not caught mid-run ({killed_at} of 33 done)"
    resumed = run("surface", [*args, "--surf_file", str(surf)], ranks=2)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{killed_at} already done" in resumed.stdout
    fresh = run("surface", [*args, "--surf_file", str(tmp_path / "fresh.h5")])
    assert fresh.returncode == 0, fresh.stderr
    a, b = read_surface(str(surf)), read_surface(str(tmp_path / "fresh.h5"))
    for name in ("train_eig_max", "train_eig_min", "train_eig_ratio"):
        assert np.array_equal(a.values[name], b.values[name]), name


@pytest.mark.slow
def test_the_ratio_map_is_drawn_by_plot2d(tmp_path):
    surf = tmp_path / "m.h5"
    assert run("surface", [*ARGS, "--surf_file", str(surf)]).returncode == 0
    drawn = run(
        "plot2d",
        [
            str(surf),
            "--surf_name",
            "train_eig_ratio",
            "--kind",
            "contourf",
            "--format",
            "png",
            "--out",
            str(tmp_path / "ratio"),
        ],
    )
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "ratio_train_eig_ratio_2dcontourf.png").read_bytes()[:4] == b"\x89PNG"
