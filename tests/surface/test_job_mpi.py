"""Under mpiexec -n 2 and -n 3 the surface is bit for bit the serial brute-force loop.

The brute force evaluates every (x[i], y[j]) in a plain double loop on one
process, with no scheduler, no splitting and no writer.  With LANDSCAPE_TEST_MPIO=1
(the parallel-HDF5 stack in CI) the ranks must write through driver='mpio'.
"""

import os
import subprocess
import time

import h5py
import numpy as np
import pytest
import torch

from landscape import directions as dirs
from landscape.data import load_named
from landscape.io.checkpoint import load_into, read_state_dict, save
from landscape.io.direction_file import read as read_directions
from landscape.io.surface_file import read as read_surface
from landscape.models import build_model
from landscape.surface.evaluation import Evaluator

from conftest import landscape, run

WANT_IO = "mpio" if os.environ.get("LANDSCAPE_TEST_MPIO") == "1" else "gather"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A DigitsCNN with BatchNorm, perturbed so that its weights are not the default init."""
    path = tmp_path_factory.mktemp("ckpt") / "cnn.pt"
    torch.manual_seed(11)
    model = build_model("digits_cnn")
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.is_floating_point():
                t.add_(0.1 * torch.randn_like(t))
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_var.uniform_(0.5, 2.0)
    save(model, str(path))
    return str(path)


def brute_force(checkpoint, dir_file, x, y, dir_type):
    model = build_model("digits_cnn")
    load_into(model, read_state_dict(checkpoint), checkpoint)
    origin = dirs.origin_tensors(model, dir_type)
    d = read_directions(dir_file)
    data = load_named("digits")
    ev = Evaluator(model, origin, d.x, d.y, {"train": data.train, "test": data.test}, "crossentropy")
    torch.set_num_threads(1)
    out = np.empty((len(x), len(y), len(ev.names)))
    for i, a in enumerate(x):
        for j, b in enumerate(y):
            out[i, j] = ev(float(a), float(b))
    return {q: out[..., n] for n, q in enumerate(ev.names)}


@pytest.mark.parametrize(
    "dir_type, ranks",
    [
        ("weights", 2),  # the fast tier's one
        pytest.param("weights", 3, marks=pytest.mark.mpi),
        pytest.param("states", 2, marks=pytest.mark.mpi),
        pytest.param("states", 3, marks=pytest.mark.mpi),
    ],
)
def test_parallel_equals_serial_brute_force_bit_for_bit(tmp_path, checkpoint, dir_type, ranks):
    grid = ["--x=-1:1:5", "--y=-0.5:1:4"]  # non-square on purpose
    common = [
        "--model",
        "digits_cnn",
        "--model_file",
        checkpoint,
        *grid,
        "--dir_type",
        dir_type,
        "--dir_file",
        str(tmp_path / "dirs.h5"),
        "--threads",
        "1",
        "--round_seconds",
        "0.05",
    ]
    results = {}
    for n in (None, ranks):
        surf = tmp_path / f"surf_{n}.h5"
        if n is None:  # one process: this one
            assert landscape("surface", *common, "--surf_file", surf, "--quiet") == 0
        else:
            proc = run("plot_surface", [*common, "--surf_file", str(surf)], ranks=n)
            assert proc.returncode == 0, proc.stderr
            assert f"on {n} ranks" in proc.stdout and f"({WANT_IO} writes)" in proc.stdout, proc.stdout
        results[n] = read_surface(str(surf))
        assert results[n].done.all() and results[n].run["ranks"] == (n or 1)
    s = results[None]
    expected = brute_force(checkpoint, str(tmp_path / "dirs.h5"), s.x, s.y, dir_type)
    assert set(expected) == set(s.values) == {"train_loss", "train_acc", "test_loss", "test_acc"}
    for ranks, surface in results.items():
        for q, values in expected.items():
            assert np.array_equal(surface.values[q], values), (ranks, q)


@pytest.mark.mpi
def test_one_dimensional_surface_under_mpi(tmp_path, checkpoint):
    args = ["--model", "digits_cnn", "--model_file", checkpoint, "--x=-1:1:13", "--threads", "1"]
    assert (
        landscape("surface", *args, "--surf_file", tmp_path / "a.h5", "--dir_file", tmp_path / "d.h5", "--quiet") == 0
    )
    parallel = run(
        "plot_surface", [*args, "--surf_file", str(tmp_path / "b.h5"), "--dir_file", str(tmp_path / "d.h5")], ranks=2
    )
    assert parallel.returncode == 0, parallel.stderr
    a, b = read_surface(str(tmp_path / "a.h5")), read_surface(str(tmp_path / "b.h5"))
    assert a.values["train_loss"].shape == (13,)
    assert all(np.array_equal(a.values[q], b.values[q]) for q in a.values)


def test_a_failure_on_one_rank_ends_the_job_quickly_and_is_printed_once(tmp_path, plugins):
    """The failing points lie in the last block, owned by one rank; the other must not hang."""
    started = time.monotonic()
    proc = run(
        "plot_surface",
        [
            "--model",
            f"{plugins}:failing_model",
            "--x=0:1:30",
            "--xignore",
            "none",
            "--surf_file",
            str(tmp_path / "f.h5"),
            "--round_seconds",
            "0.01",
        ],
        ranks=2,
        timeout=60,
    )
    took = time.monotonic() - started
    assert proc.returncode == 5, proc.stderr  # an evaluation error, agreed by every rank
    assert proc.stderr.count("simulated failure far from the origin") == 1, proc.stderr
    assert "evaluating the model at (x=" in proc.stderr
    assert took < 40, took


def test_a_setup_error_is_printed_once_by_rank_zero(tmp_path):
    proc = run(
        "plot_surface",
        ["--model", "digits_cnn", "--x=1:-1:5", "--surf_file", str(tmp_path / "s.h5")],
        ranks=2,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("--x=1:-1:5") == 1, proc.stderr
    assert not (tmp_path / "s.h5").exists()


@pytest.mark.mpi
def test_help_under_mpi_is_printed_once_and_nothing_hangs(tmp_path):
    proc = run("surface", ["--help"], ranks=2, timeout=60)
    assert proc.returncode == 0 and proc.stdout.count("usage: landscape surface") == 1, proc.stdout
    proc = run("plot_surface", ["--model", "digits_cnn", "--he"], ranks=2, timeout=60)  # no abbreviations
    assert proc.returncode == 2 and proc.stderr.count("unrecognized arguments: --he") == 1, proc.stderr


@pytest.mark.mpi
def test_recalibrated_batchnorm_is_the_same_on_any_number_of_ranks(tmp_path, checkpoint):
    args = [
        "--model",
        "digits_cnn",
        "--model_file",
        checkpoint,
        "--x=-1:1:7",
        "--bn",
        "recalibrate",
        "--bn_batches",
        "2",
        "--no_test",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--threads",
        "1",
    ]
    assert landscape("surface", *args, "--surf_file", tmp_path / "a.h5", "--quiet") == 0
    parallel = run("plot_surface", [*args, "--surf_file", str(tmp_path / "b.h5")], ranks=2)
    assert parallel.returncode == 0, parallel.stderr
    a, b = read_surface(str(tmp_path / "a.h5")), read_surface(str(tmp_path / "b.h5"))
    assert a.attrs["bn"] == "recalibrate" and b.run["ranks"] == 2
    assert all(np.array_equal(a.values[q], b.values[q]) for q in a.values)


def mpmd(program: str, first: list[str], second: list[str], cwd):
    """``mpiexec -n 1 landscape PROGRAM FIRST : -n 1 landscape PROGRAM SECOND``: two ranks of one job that
    were given different command lines."""
    from landscape.parallel.launch import cli_command, mpiexec_command

    from conftest import require_mpi

    require_mpi()
    one, two = cli_command(program, first), cli_command(program, second)
    return subprocess.run(
        [*mpiexec_command(), "-n", "1", *one, ":", "-n", "1", *two],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip


@pytest.mark.mpi
@pytest.mark.parametrize(
    "other, named",
    [
        (["--x=-1:1:7"], "grid.x.num is 5 on rank 0 and 7 on rank 1"),
        (["--x=-1:1:5", "--loss_name", "mse"], "evaluation.loss_name is 'crossentropy' on rank 0 and 'mse' on rank 1"),
        (["--x=-1:1:5", "--train_subset", "32"], "data.train_subset is 64 on rank 0 and 32 on rank 1"),
        (["--x=-1:1:5", "--xnorm", "layer"], "directions.xnorm is None on rank 0 and 'layer' on rank 1"),
    ],
)
def test_ranks_given_different_jobs_refuse_before_any_point(tmp_path, other, named):
    """An MPMD launch whose ranks were given another grid, loss, data or normalization: exit 3 with the
    first differing field named, no surface or direction file made (the issue's wrong-values run)."""
    common = ["--model", "digits_mlp", "--train_subset", "64", "--surf_file", "f.h5", "--quiet"]
    done = mpmd("surface", [*common, "--x=-1:1:5"], [*common, *other], tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"the ranks disagree on the job: {named}; every rank must run the same command" in done.stderr
    assert done.stderr.count("the ranks disagree") == 1  # printed once, by rank 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.mpi
def test_ranks_given_different_trainings_or_measurements_refuse(tmp_path):
    """The same for training (another rate) and for curvature (another tolerance)."""
    common = ["--model", "digits_mlp", "--steps", "2", "--out", "run", "--batch_size", "64"]
    done = mpmd("train", [*common, "--lr", "0.1"], [*common, "--lr", "0.2"], tmp_path)
    assert done.returncode == 3 and "the ranks disagree on the training: recipe.lr is 0.1 on rank 0" in done.stderr
    assert list(tmp_path.iterdir()) == []
    assert run("train", common, cwd=tmp_path).returncode == 0
    common = ["--model_file", "run/final.pt", "--out", "c.json"]
    done = mpmd("curvature", [*common, "--tol", "1e-3"], [*common, "--tol", "1e-4"], tmp_path)
    assert done.returncode == 3 and "the ranks disagree on the measurement: tol is 0.001 on rank 0" in done.stderr
    assert not (tmp_path / "c.json").exists()


@pytest.mark.mpi
def test_at_the_defaults_one_and_two_ranks_choose_the_same_settings_and_write_the_same_bits(tmp_path):
    """No kernel, batch, points per pass or threads given: ``auto`` takes its start from the model's shape
    (``surface.cost``) on rank 0, so the settings and every bit of the file are the same on 1 and 2 ranks
    (they used to be measured on every rank at once, and differed)."""
    common = ["--model", "digits_mlp", "--x=-1:1:21", "--y=-1:1:21", "--dir_file", str(tmp_path / "d.h5")]
    files = {}
    for ranks in (1, 2):
        files[ranks] = tmp_path / f"s{ranks}.h5"
        done = run("surface", [*common, "--surf_file", str(files[ranks])], ranks=ranks)
        assert done.returncode == 0, done.stderr
    one, two = (read_surface(str(files[n])) for n in (1, 2))
    settings = ("kernel", "batch_size", "points_per_pass")
    assert (
        {k: one.run[k] for k in settings}
        == {k: two.run[k] for k in settings}
        == {
            "kernel": "reference",
            "batch_size": 1797,
            "points_per_pass": 16,  # the whole set in one batch: 16 points per pass (cost.start_points)
        }
    )
    assert all(np.array_equal(one.values[q], two.values[q]) for q in one.values)
    with h5py.File(files[1], "r") as a, h5py.File(files[2], "r") as b:
        assert np.array_equal(a["checksum"][()], b["checksum"][()]) and two.run["ranks"] == 2
