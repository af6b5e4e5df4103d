"""Bad input: one clear line naming the value, a non-zero exit, and no result file damaged."""

import hashlib

import pytest
import torch

from landscape.cli.surface import main

from conftest import landscape

CNN = ["--model", "digits_cnn"]


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fails(capsys, argv, code, *words):
    assert landscape("surface", *argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    for word in words:
        assert word in err[0], err[0]
    return err[0]


@pytest.fixture
def ckpt(tmp_path):
    torch.manual_seed(0)
    from landscape.io.checkpoint import save
    from landscape.models import DigitsCNN

    path = tmp_path / "cnn.pt"
    save(DigitsCNN(), str(path))
    return path


@pytest.mark.parametrize(
    "grid, words",
    [
        (["--x=1:-1:5"], ["--x=1:-1:5", "MIN 1 below MAX -1"]),
        (["--x=a:b:c"], ["--x=a:b:c", "numbers"]),
        (["--x=-1:1:0"], ["--x=-1:1:0", "NUM at least 2"]),
        (["--x=-1:1:5", "--y=-1:1:-4"], ["--y=-1:1:-4", "at least 2"]),
    ],
)
def test_bad_grids(tmp_path, capsys, grid, words):
    fails(capsys, [*CNN, *grid, "--surf_file", str(tmp_path / "s.h5")], 2, *words)
    assert not list(tmp_path.iterdir())


def test_unknown_model_lists_the_known_ones(tmp_path, capsys):
    fails(capsys, ["--model", "resnet9000", "--surf_file", str(tmp_path / "s.h5")], 2, "resnet9000", "digits_cnn")


def test_plugin_that_does_not_import(tmp_path, capsys):
    fails(
        capsys,
        ["--model", "no_such_pkg.nets:make", "--surf_file", str(tmp_path / "s.h5")],
        3,
        "no_such_pkg.nets",
        "cannot import",
    )


def test_factories_returning_the_wrong_type(tmp_path, capsys, plugins):
    fails(
        capsys,
        ["--model", f"{plugins}:not_a_model", "--surf_file", str(tmp_path / "s.h5")],
        3,
        "returned str",
        "nn.Module",
    )
    fails(
        capsys,
        [*CNN, "--dataset", f"{plugins}:wrong_data", "--surf_file", str(tmp_path / "s.h5")],
        3,
        "returned int",
        "(train, test)",
    )


def test_unknown_dataset(tmp_path, capsys):
    fails(capsys, [*CNN, "--dataset", "imagenet", "--surf_file", str(tmp_path / "s.h5")], 2, "imagenet", "digits")


def test_checkpoint_missing_not_torch_or_not_matching(tmp_path, capsys):
    fails(capsys, [*CNN, "--model_file", str(tmp_path / "nope.pt")], 3, "nope.pt", "does not exist")
    junk = tmp_path / "junk.pt"
    junk.write_text("not a checkpoint")
    fails(capsys, [*CNN, "--model_file", str(junk)], 3, "junk.pt", "is not a torch file")
    from landscape.io.checkpoint import save
    from landscape.models import DigitsMLP

    save(DigitsMLP(), str(tmp_path / "mlp.pt"))
    fails(capsys, [*CNN, "--model_file", str(tmp_path / "mlp.pt")], 3, "does not match", "missing", "unexpected")


@pytest.mark.parametrize(
    "flag, words",
    [
        (["--batch_size", "0"], ["--batch_size=0"]),
        (["--threads", "0"], ["--threads=0"]),
        (["--dtype", "int8"], ["--dtype: invalid choice: 'int8'"]),
        (["--xnorm", "sideways"], ["--xnorm: invalid choice: 'sideways'"]),
        (["--loss_name", "hinge"], ["--loss_name=hinge: expected one of crossentropy, mse"]),
        (["--same_dir"], ["--same_dir needs a 2-D grid", "--y=MIN:MAX:NUM"]),
    ],
)
def test_bad_flags(tmp_path, capsys, flag, words):
    fails(capsys, [*CNN, *flag, "--surf_file", str(tmp_path / "s.h5")], 2, *words)


def test_existing_surface_with_other_settings_is_refused_and_untouched(tmp_path, capsys, ckpt):
    surf = tmp_path / "s.h5"
    base = [*CNN, "--model_file", str(ckpt), "--x=-1:1:3", "--surf_file", str(surf), "--quiet"]
    assert main(base) == 0
    capsys.readouterr()
    before = sha(surf)
    line = fails(
        capsys,
        [
            *CNN,
            "--model_file",
            str(ckpt),
            "--x=-1:1:5",
            "--surf_file",
            str(surf),
            "--dir_file",
            str(tmp_path / "s.directions.h5"),
        ],
        4,
        "grid_x",
        "'-1.0:1.0:3'",
        "'-1.0:1.0:5'",
    )
    assert "left untouched" in line
    fails(capsys, [*base, "--loss_name", "mse"], 4, "loss_name")
    fails(capsys, [*base, "--no_test"], 4, "test_size")
    fails(capsys, [*base, "--dtype", "float64"], 4, "dtype")
    assert sha(surf) == before


def test_existing_file_that_is_not_a_surface_is_never_overwritten(tmp_path, capsys):
    surf = tmp_path / "precious.h5"
    surf.write_bytes(b"precious data")
    fails(capsys, [*CNN, "--x=-1:1:3", "--surf_file", str(surf)], 3, "precious.h5", "exists and is not an HDF5 file")
    assert surf.read_bytes() == b"precious data"


def test_direction_file_for_another_model(tmp_path, capsys):
    assert main(["--model", "digits_mlp", "--x=-1:1:3", "--surf_file", str(tmp_path / "m.h5"), "--quiet"]) == 0
    capsys.readouterr()
    fails(
        capsys,
        [*CNN, "--x=-1:1:3", "--dir_file", str(tmp_path / "m.directions.h5"), "--surf_file", str(tmp_path / "c.h5")],
        4,
        "made for another model",
        "missing",
    )


def test_direction_file_with_conflicting_flags(tmp_path, capsys):
    assert main([*CNN, "--x=-1:1:3", "--surf_file", str(tmp_path / "a.h5"), "--quiet"]) == 0
    capsys.readouterr()
    fails(
        capsys,
        [
            *CNN,
            "--x=-1:1:3",
            "--dir_file",
            str(tmp_path / "a.directions.h5"),
            "--xnorm",
            "layer",
            "--surf_file",
            str(tmp_path / "b.h5"),
        ],
        4,
        "--xnorm=layer",
        "'filter'",
    )


def test_a_2d_grid_needs_two_directions(tmp_path, capsys):
    assert main([*CNN, "--x=-1:1:3", "--surf_file", str(tmp_path / "a.h5"), "--quiet"]) == 0
    capsys.readouterr()
    fails(
        capsys,
        [
            *CNN,
            "--x=-1:1:3",
            "--y=-1:1:3",
            "--dir_file",
            str(tmp_path / "a.directions.h5"),
            "--surf_file",
            str(tmp_path / "b.h5"),
        ],
        4,
        "only an x direction",
    )


def test_unknown_flag_is_one_line(tmp_path, capsys):
    fails(capsys, [*CNN, "--frobnicate"], 2, "--frobnicate", "--help")


def test_reused_direction_file_must_match_the_target_models(tmp_path, capsys):
    from landscape.io.checkpoint import save
    from landscape.models import DigitsCNN

    for i in range(3):
        torch.manual_seed(i)
        save(DigitsCNN(), str(tmp_path / f"m{i}.pt"))
    base = [
        *CNN,
        "--model_file",
        str(tmp_path / "m0.pt"),
        "--x=0:1:3",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--no_test",
        "--quiet",
    ]
    assert main([*base, "--model_file2", str(tmp_path / "m1.pt"), "--surf_file", str(tmp_path / "a.h5")]) == 0
    capsys.readouterr()
    fails(
        capsys,
        [*base, "--model_file2", str(tmp_path / "m2.pt"), "--surf_file", str(tmp_path / "b.h5")],
        4,
        "--model_file2",
        "m2.pt",
        "m1.pt",
    )
    fails(capsys, [*base, "--surf_file", str(tmp_path / "c.h5")], 4, "no --model_file2")
    assert not (tmp_path / "b.h5").exists() and not (tmp_path / "c.h5").exists()


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--model_file2", "x.pt", "--xnorm", "filter"], ["--xnorm", "--model_file2"]),
        (["--y=-1:1:3", "--same_dir", "--yignore", "none"], ["--yignore", "--same_dir"]),
    ],
)
def test_flags_that_cannot_apply(tmp_path, capsys, flags, words):
    fails(capsys, [*CNN, "--x=-1:1:3", *flags, "--surf_file", str(tmp_path / "s.h5")], 2, *words)
    assert not list(tmp_path.iterdir())


def test_a_plugin_that_exits_is_an_input_error(tmp_path, capsys, plugins):
    fails(
        capsys,
        ["--model", f"{plugins}:exits_at_call", "--surf_file", str(tmp_path / "s.h5")],
        3,
        "exits_at_call",
        "SystemExit",
    )


# --------------------------------------------------------------------------- exit codes that must not lie


def test_sys_exit_in_a_models_forward_is_an_evaluation_error(tmp_path, capsys, plugins):
    line = fails(
        capsys,
        [
            "--model",
            f"{plugins}:exiting_model",
            "--x=0:1:5",
            "--xignore",
            "none",
            "--no_test",
            "--surf_file",
            str(tmp_path / "s.h5"),
        ],
        5,
        "sys.exit(0)",
        "x=1",
    )
    assert "evaluating the model at" in line


@pytest.mark.mpi
def test_sys_exit_on_one_rank_ends_the_job_with_exit_5_printed_once(tmp_path, plugins):
    from conftest import run

    proc = run(
        "surface",
        [
            "--model",
            f"{plugins}:exiting_model",
            "--x=0:1:12",
            "--xignore",
            "none",
            "--no_test",
            "--surf_file",
            str(tmp_path / "s.h5"),
            "--round_seconds",
            "0.01",
        ],
        ranks=2,
        timeout=60,
    )
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.count("sys.exit(0)") == 1, proc.stderr


def test_missing_output_folder_is_an_input_error(tmp_path, capsys):
    fails(
        capsys,
        [*CNN, "--x=-1:1:3", "--surf_file", str(tmp_path / "nowhere" / "s.h5")],
        3,
        "--surf_file=",
        "nowhere",
        "does not exist",
    )
    fails(
        capsys,
        [*CNN, "--x=-1:1:3", "--surf_file", str(tmp_path / "s.h5"), "--dir_file", str(tmp_path / "gone" / "d.h5")],
        3,
        "--dir_file=",
        "gone",
    )
    assert not list(tmp_path.iterdir())


def as_another_user(argv: list[str], folder):
    """Run ``landscape`` as a user without write permission (root ignores file modes)."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import ROOT

    cmd = [sys.executable, "-m", "landscape", *map(str, argv)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to drop root")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    return subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, timeout=120, env=dict(os.environ, HOME=str(folder))
    )


@pytest.fixture
def shared(tmp_path_factory):
    """A folder any user can enter (pytest's own are private to root)."""
    import os
    import tempfile

    folder = tempfile.mkdtemp(prefix="landscape-perm-")
    os.chmod(folder, 0o777)
    from pathlib import Path

    yield Path(folder)
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def test_unwritable_folder_and_read_only_surface_are_input_errors(shared):
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user (setpriv)")
    import shutil

    from conftest import landscape

    base = ["surface", *CNN, "--x=-1:1:3", "--no_test", "--threads", "1"]
    locked = shared / "locked"
    locked.mkdir()
    os.chmod(locked, 0o755)  # not writable by the other user
    proc = as_another_user([*base, "--surf_file", locked / "s.h5"], shared)
    assert proc.returncode == 3 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "is not writable" in proc.stderr and "--surf_file=" in proc.stderr
    assert landscape(*base, "--surf_file", shared / "done.h5", "--quiet") == 0
    os.chmod(shared / "done.h5", 0o444)
    before = sha(shared / "done.h5")
    proc = as_another_user([*base, "--surf_file", shared / "done.h5"], shared)
    assert proc.returncode == 3 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "cannot be read and written" in proc.stderr
    assert sha(shared / "done.h5") == before
    shutil.rmtree(locked)


# --------------------------------------------------------------------------- bounds


def test_threads_beyond_the_cores_are_capped_and_said(tmp_path, capsys):
    import os

    from landscape.io.surface_file import read

    from conftest import landscape

    assert (
        landscape("surface", *CNN, "--x=-1:1:3", "--no_test", "--threads", "100000", "--surf_file", tmp_path / "s.h5")
        == 0
    )
    cores = len(os.sched_getaffinity(0))
    assert (
        f"note: threads=100000 is more than the {cores} cores this rank may run on; using {cores}"
        in capsys.readouterr().out
    )
    assert read(str(tmp_path / "s.h5")).run["threads_per_rank"] == cores


@pytest.mark.parametrize(
    "grid, size",
    [(["--x=-1:1:100000000"], "100,000,000 points"), (["--x=-1:1:100000", "--y=-1:1:100000"], "10,000,000,000 points")],
)
def test_huge_grids_are_refused_with_the_file_size_unless_forced(tmp_path, capsys, grid, size):
    line = fails(
        capsys,
        [*CNN, *grid, "--surf_file", str(tmp_path / "s.h5")],
        2,
        size,
        "--force",
        "the surface file would take about",
    )
    assert "GB" in line or "TB" in line
    assert not list(tmp_path.iterdir())
    from landscape.grid import Grid

    assert Grid.parse("-1:1:1025", "-1:1:1024", force=True).size == 1025 * 1024


@pytest.mark.parametrize(
    "flag, words",
    [
        (["--num_classes", "0"], "--num_classes=0: expected a whole number of classes, at least 2"),
        (["--num_classes", "1"], "--num_classes=1"),
        (["--round_seconds", "nan"], "--round_seconds=nan: expected a positive, finite number of seconds"),
        (["--round_seconds", "inf"], "--round_seconds=inf"),
        (["--round_seconds", "0"], "--round_seconds=0"),
        (["--bn_batches", "0"], "--bn_batches=0"),
        (["--seed", "-1"], "--seed=-1"),
    ],
)
def test_values_out_of_range_are_refused_before_any_file_is_touched(tmp_path, capsys, flag, words):
    fails(capsys, [*CNN, "--x=-1:1:3", *flag, "--surf_file", str(tmp_path / "s.h5")], 2, words)
    assert not list(tmp_path.iterdir())


def test_io_mpio_on_serial_h5py_is_refused_before_the_file_is_touched(tmp_path, capsys):
    import h5py

    if h5py.get_config().mpi:
        pytest.skip("this h5py has parallel HDF5")
    surf = tmp_path / "s.h5"
    assert main([*CNN, "--x=-1:1:3", "--surf_file", str(surf), "--quiet"]) == 0
    before = sha(surf)
    fails(
        capsys, [*CNN, "--io", "mpio", "--x=-1:1:3", "--surf_file", str(surf)], 2, "--io=mpio", "without parallel HDF5"
    )
    assert sha(surf) == before


def test_the_reference_code_s_gpu_flags_are_refused_with_what_to_give_instead(capsys):
    """``--cuda`` and ``--ngpu`` of Li et al.'s code have no twin here: the one line says what does it."""
    assert landscape("surface", "--model", "digits_mlp", "--cuda") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unrecognized arguments: --cuda: the reference code's --cuda is --device cuda" in err[0]
    assert landscape("surface", "--model", "digits_mlp", "--ngpu", "4") == 2
    assert "--ngpu is one MPI rank per GPU here" in capsys.readouterr().err
    assert landscape("surface", "--model", "digits_mlp", "--colour") == 2
    assert capsys.readouterr().err.strip().endswith("unrecognized arguments: --colour (see landscape surface --help)")
