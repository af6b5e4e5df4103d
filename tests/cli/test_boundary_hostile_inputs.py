"""Inputs an adversarial tester tried: each gets one line, its documented exit code, no hang, nothing damaged."""

import hashlib
import os

import h5py
import numpy as np
import pytest
import torch

from landscape.io.checkpoint import save
from landscape.models import DigitsCNN

from conftest import landscape, run

MLP = ["surface", "--model", "digits_mlp", "--x=-1:1:3", "--no_test", "--quiet", "--threads", "1"]


def one_line(capsys, code, got, *words):
    err = capsys.readouterr().err.strip().splitlines()
    assert got == code and len(err) == 1, (got, err)
    for word in words:
        assert word in err[0], err[0]
    return err[0]


@pytest.fixture
def files(tmp_path):
    torch.manual_seed(0)
    save(DigitsCNN(), str(tmp_path / "cnn.pt"))
    os.mkfifo(tmp_path / "fifo.h5")
    (tmp_path / "adir.pt").mkdir()
    os.symlink(tmp_path / "nothing.h5", tmp_path / "dangling.h5")
    return tmp_path


@pytest.mark.parametrize(
    "argv, code, words",
    [
        (["--surf_file", "{t}/fifo.h5"], 3, ["--surf_file={t}/fifo.h5 is a FIFO; expected a surface file or no file"]),
        (["--surf_file", "{t}/dangling.h5"], 3, ["is a symbolic link to", "which does not exist"]),
        (["--surf_file", "{t}/" + "a" * 230 + ".h5"], 3, ["the file name is 233 characters long"]),
        (["--surf_file", "{t}/s.h5", "--dir_file", "{t}/s.h5"], 2, ["--surf_file and --dir_file are both"]),
        (["--surf_file", "{t}/s.h5", "--dir_file", "{t}/fifo.h5"], 3, ["direction file {t}/fifo.h5 is a FIFO"]),
        (["--surf_file", "{t}/s.h5", "--model_file", "{t}/adir.pt"], 3, ["checkpoint {t}/adir.pt is a directory"]),
        (["--surf_file", "{t}/s.h5", "--model_file="], 2, ["--model_file='': expected a path"]),
        (["--surf_file="], 2, ["--surf_file='': expected a path"]),
        (
            ["--surf_file", "{t}/s.h5", "--x=-1e308:1e308:3"],
            2,
            ["--x=-1e308:1e308:3: expected MIN and MAX small enough"],
        ),
        (["--surf_file", "{t}/s.h5", "--num_classes", "3"], 3, ["the model gives 3 class scores", "--num_classes"]),
        (["--surf_file", "{t}/s.h5", "--loss_name", "torch.nn:Linear"], 3, ["cannot be made without arguments"]),
        (
            ["--surf_file", "{t}/s.h5", "--y=-1:1:3", "--plot", "--vmin", "nan"],
            2,
            ["--vmin nan: expected a finite number"],
        ),
    ],
)
def test_hostile_surface_arguments(files, capsys, argv, code, words):
    t = str(files)
    got = landscape(*MLP, *[a.format(t=t) for a in argv])
    one_line(capsys, code, got, *[w.format(t=t) for w in words])
    assert not (files / "s.h5").exists()  # refused before anything was computed


def test_a_lock_path_that_is_not_a_file_is_an_input_error(tmp_path, capsys):
    (tmp_path / "s.h5.lock").mkdir()
    one_line(capsys, 3, landscape(*MLP, "--surf_file", tmp_path / "s.h5"), "lock file", "is a directory")


def test_non_finite_directions_and_targets_are_refused(tmp_path, capsys):
    model = DigitsCNN()
    with h5py.File(tmp_path / "inf.h5", "w") as f:  # the reference code's layout, every value inf
        for group in ("xdirection", "ydirection"):
            for i, p in enumerate(model.parameters()):
                f.create_dataset(f"{group}/{i}", data=np.full(tuple(p.shape), np.inf))
    args = ["surface", "--model", "digits_cnn", "--x=-1:1:3", "--no_test", "--quiet", "--surf_file", tmp_path / "s.h5"]
    one_line(capsys, 3, landscape(*args, "--dir_file", tmp_path / "inf.h5"), "holds NaN or inf in 8 tensors")
    nan = {k: torch.full_like(v, float("nan")) if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save(nan, tmp_path / "nan.pt")
    save(model, str(tmp_path / "m.pt"))
    one_line(
        capsys,
        3,
        landscape(*args, "--model_file", tmp_path / "m.pt", "--model_file2", tmp_path / "nan.pt"),
        "--model_file2",
        "holds NaN or inf",
    )
    one_line(capsys, 3, landscape(*args, "--model_file", tmp_path / "nan.pt"), "checkpoint", "holds NaN or inf")
    assert not (tmp_path / "s.h5").exists()


def test_a_model_without_parameters_is_refused(tmp_path, capsys):
    (tmp_path / "p.py").write_text("import torch\ndef make():\n    return torch.nn.Flatten()\n")
    got = landscape("surface", "--model", f"{tmp_path}/p.py:make", "--x=-1:1:3", "--surf_file", tmp_path / "s.h5")
    one_line(capsys, 3, got, "has no floating-point parameters")


@pytest.mark.parametrize(
    "argv, code, words",
    [
        (["--dpi", "1000000"], 2, "--dpi=1000000: expected a number of dots per inch from 1 to 2400"),
        (["--xmin", "nan"], 2, "--xmin nan: expected a finite number"),
        (["--acc_max", "inf"], 2, "--acc_max inf: expected a finite number"),
    ],
)
def test_hostile_plot_arguments(tmp_path, capsys, argv, code, words):
    assert landscape(*MLP, "--surf_file", tmp_path / "s.h5") == 0
    capsys.readouterr()
    one_line(capsys, code, landscape("plot1d", tmp_path / "s.h5", "--out", tmp_path / "f", *argv), words)


def test_files_that_cannot_be_plotted_say_why(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo.h5")
    one_line(capsys, 3, landscape("plot1d", tmp_path / "fifo.h5"), "is a FIFO, not a regular file")
    with h5py.File(tmp_path / "words.h5", "w") as f:  # reference-style names, unusable contents
        f["xcoordinates"] = np.array([b"a", b"b"])
        f["train_loss"] = np.array([1.0, 2.0])
    one_line(capsys, 3, landscape("plot1d", tmp_path / "words.h5"), "xcoordinates must be a 1-D array of finite")
    with h5py.File(tmp_path / "shape.h5", "w") as f:
        f["xcoordinates"] = np.linspace(-1, 1, 5)
        f["train_loss"] = np.ones(7)
    one_line(capsys, 3, landscape("plot1d", tmp_path / "shape.h5"), "dataset train_loss holds 7 values", "grid of 5")


def test_coordinates_changed_in_a_finished_surface_are_refused_by_the_plots(tmp_path, capsys):
    assert landscape(*MLP, "--surf_file", tmp_path / "s.h5") == 0
    with h5py.File(tmp_path / "s.h5", "r+") as f:
        f["xcoordinates"][2] = 100.0
    before = hashlib.sha256((tmp_path / "s.h5").read_bytes()).hexdigest()
    capsys.readouterr()
    one_line(capsys, 3, landscape("plot1d", tmp_path / "s.h5"), "is damaged: its xcoordinates differ")
    assert hashlib.sha256((tmp_path / "s.h5").read_bytes()).hexdigest() == before


def test_a_surface_without_its_done_marks_is_damaged(tmp_path, capsys):
    assert landscape(*MLP, "--surf_file", tmp_path / "s.h5") == 0
    with h5py.File(tmp_path / "s.h5", "r+") as f:
        del f["done"]
    capsys.readouterr()
    one_line(capsys, 3, landscape(*MLP, "--surf_file", tmp_path / "s.h5"), "is damaged: it lacks done")
    one_line(capsys, 3, landscape("plot1d", tmp_path / "s.h5"), "is damaged: it lacks done")


def test_api_arguments_of_the_wrong_type_name_the_keyword(tmp_path):
    from landscape.api import loss_surface
    from landscape.errors import UsageError

    data = (torch.randn(10, 3), torch.randn(10, 1))
    model = torch.nn.Linear(3, 1)
    with pytest.raises(UsageError, match="loss: expected crossentropy, mse or a callable, got int"):
        loss_surface(model, data, 42)
    with pytest.raises(UsageError, match="surf_file=5: expected a path"):
        loss_surface(model, data, "mse", surf_file=5)
    with pytest.raises(UsageError, match="seed='0': expected a whole number"):
        loss_surface(model, data, "mse", seed="0", surf_file=str(tmp_path / "s.h5"))
    with pytest.raises(UsageError, match="^xnorm=sideways: expected one of filter"):
        loss_surface(model, data, "mse", xnorm="sideways", surf_file=str(tmp_path / "s.h5"))
    with pytest.raises(UsageError, match="^landscape surface: got an unexpected keyword argument 'norm'"):
        loss_surface(model, data, "mse", norm="filter")


@pytest.mark.mpi
def test_api_errors_met_by_every_rank_are_raised_on_every_rank_without_an_abort(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(
        "import torch\nfrom landscape.api import loss_surface\nfrom landscape.errors import LandscapeError\n"
        "try:\n    loss_surface(torch.nn.Linear(3, 1), (torch.randn(8, 3), torch.randn(8, 1)), 'mse', x='1:-1:3')\n"
        "except LandscapeError as e:\n    import sys; sys.stdout.write(f'caught {int(e.exit_status)} {e}\\n')\n"
    )
    import sys

    from landscape.parallel.launch import mpiexec_command

    from conftest import ROOT, require_mpi

    require_mpi()
    import subprocess

    done = subprocess.run(
        [*mpiexec_command(), "-n", "2", sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("caught 2 x=1:-1:3: expected MIN 1 below MAX -1") == 2, done.stdout


@pytest.mark.mpi
def test_the_plots_under_mpiexec_draw_and_complain_once(tmp_path):
    proc = run("plot1d", [str(tmp_path / "nosuch.h5")], ranks=2, timeout=60)
    assert proc.returncode == 3 and proc.stderr.count("does not exist") == 1, proc.stderr


# Files from others are untrusted (issue 29): a surface's attributes, a sweep's manifest, a planted link.

EVIL = "</script><script>alert(document.domain)</script>"


def surface_2d(tmp_path, name="s.h5"):
    assert landscape(*MLP, "--y=-1:1:3", "--surf_file", tmp_path / name) == 0
    return tmp_path / name


def test_a_loss_name_that_closes_the_script_block_stays_text_in_the_html_page(tmp_path, capsys, one_thread):
    import html
    import json

    path = surface_2d(tmp_path)
    with h5py.File(path, "r+") as f:
        f.attrs["loss_name"] = EVIL
    capsys.readouterr()
    assert landscape("export", path, "--html", "--out", tmp_path / "page") == 0
    page = (tmp_path / "page.html").read_text()
    assert "</script><script>" not in page and "<script>alert" not in page
    start = page.index("var labels = ") + len("var labels = ")
    labels, _ = json.JSONDecoder().raw_decode(page, start)  # the page's own JSON parses, the string intact
    assert f"training loss ({EVIL})" in {html.unescape(label) for label in labels}


def test_a_run_name_leading_out_of_the_report_folder_is_refused_from_a_sweep_manifest(tmp_path, capsys):
    import json

    sweep, out = tmp_path / "a" / "b" / "sweep", tmp_path / "a" / "b" / "out"
    sweep.mkdir(parents=True)
    (tmp_path / "a" / "elsewhere").mkdir()
    (tmp_path / "a" / "elsewhere" / "final.pt").write_bytes(b"")  # a checkpoint where the name leads
    row = {"run": "../../elsewhere", "recipe": "sgd", "batch_size": 16, "seed": 0, "done": True, "test_error": 1.0}
    (sweep / "manifest.json").write_text(json.dumps({"runs": [row]}))  # hand-edited
    got = landscape("report", sweep / "manifest.json", "--out", out, "--model", "digits_cnn", "--threads", "1")
    one_line(capsys, 3, got, "run='../../elsewhere': expected a name of letters")
    assert not (tmp_path / "a" / "b" / "elsewhere").exists() and not (out / "runs").exists()


def _train_args(tmp_path, out):
    return ["train", "--model", "digits_mlp", "--epochs", "1", "--threads", "1", "--quiet", "--out", out]


def _curvature_args(tmp_path, out):
    torch.manual_seed(0)
    save(DigitsCNN(), str(tmp_path / "cnn.pt"))
    return ["curvature", "--model", "digits_cnn", "--model_file", tmp_path / "cnn.pt", "--threads", "1", "--out", out]


@pytest.mark.parametrize(
    "command, output",
    [
        (lambda t, out: [*MLP, "--surf_file", out], "s.h5"),
        (_train_args, "run"),
        (_curvature_args, "c.json"),
    ],
    ids=["surface", "train", "curvature"],
)
def test_a_symbolic_link_planted_at_the_lock_path_is_refused_and_its_target_kept(tmp_path, capsys, command, output):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, tmp_path / f"{output}.lock")
    got = landscape(*command(tmp_path, tmp_path / output))
    one_line(capsys, 3, got, f"lock file {tmp_path / output}.lock is a symbolic link to {victim}")
    assert victim.read_text() == "precious\n" and os.path.islink(tmp_path / f"{output}.lock")


def test_a_surface_file_that_is_a_symbolic_link_is_refused_and_the_file_it_names_kept(tmp_path, capsys):
    """A surface is resumed in place: through a link its writes would land in the file the link names."""
    assert landscape(*MLP, "--surf_file", tmp_path / "real.h5") == 0
    before = (tmp_path / "real.h5").read_bytes()
    os.symlink(tmp_path / "real.h5", tmp_path / "link.h5")
    got = landscape(*MLP, "--surf_file", tmp_path / "link.h5", "--dir_file", tmp_path / "real.h5.directions.h5")
    one_line(capsys, 3, got, f"surf_file={tmp_path / 'link.h5'} is a symbolic link to {tmp_path / 'real.h5'}")
    assert (tmp_path / "real.h5").read_bytes() == before and os.path.islink(tmp_path / "link.h5")


def test_an_empty_study_file_is_refused_and_names_the_keys_it_may_hold(tmp_path, capsys):
    from landscape.errors import UsageError
    from landscape.workflows.study_file import settings

    (tmp_path / "empty.toml").write_text("# nothing yet\n")
    with pytest.raises(UsageError):  # checked first: before the fix, the command below ran the whole default study
        settings(config=str(tmp_path / "empty.toml"))
    got = landscape("study", "--config", tmp_path / "empty.toml", "--out", tmp_path / "o", "--figures", tmp_path / "f")
    one_line(capsys, 2, got, "holds no setting; expected one or more of the keys out, figures, name, jobs, recipes")
    assert not (tmp_path / "o").exists() and not (tmp_path / "f").exists()


def test_export_into_a_folder_writes_named_files_and_replaces_a_planted_link(tmp_path, capsys, one_thread):
    path = surface_2d(tmp_path)
    (tmp_path / "out").mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, tmp_path / "out" / "s.html")
    capsys.readouterr()
    for out in (f"{tmp_path}/out/", tmp_path / "out"):  # a path ending in /, and a folder that exists
        assert landscape("export", path, "--vtk", "--html", "--out", out) == 0
        assert capsys.readouterr().out.split() == [str(tmp_path / "out" / "s.vts"), str(tmp_path / "out" / "s.html")]
    assert sorted(os.listdir(tmp_path / "out")) == ["s.html", "s.vts"]  # no hidden .vts, no scratch left
    assert victim.read_text() == "precious\n" and not os.path.islink(tmp_path / "out" / "s.html")
    one_line(capsys, 3, landscape("export", path, "--vtk", "--out", f"{tmp_path}/none/"), "does not exist")
