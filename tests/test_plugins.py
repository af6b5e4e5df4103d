"""Plug-ins for real use: factories with keyword arguments (``--model_args``, ``--data_args``) recorded
as identity, a plug-in found by its file's absolute path from any folder, a generated data set made once
per job, and the worked example of examples/ end to end."""

import json
import shutil
import textwrap

import pytest
import torch

from landscape.io.surface_file import read as read_surface

from .workflows.test_study import TINY_REPORT
from conftest import ROOT, landscape, run

EXAMPLE = ROOT / "examples" / "spirals.py"
MODEL, DATA = "examples/spirals.py:mlp", "examples/spirals.py:spirals"
REPORT_FLAGS = ["--train_subset", "120", "--grid_1d=-1:1:5", "--grid_2d=-1:1:3", "--radius", "1", "--directions",
                "2", "--trace_samples", "3", "--iterations", "5", "--restarts", "1", "--m", "40", "--threads", "1",
                "--formats", "png"]  # fmt: skip


def example_in(folder):
    """A copy of examples/spirals.py in ``folder``, named relatively there (as a user's own file would be)."""
    (folder / "examples").mkdir(parents=True)
    shutil.copy(EXAMPLE, folder / "examples" / "spirals.py")
    return folder


def identity_of(checkpoint) -> dict:
    return torch.load(checkpoint, map_location="cpu", weights_only=True)["meta"]["identity"]


def test_the_spirals_example_trains_and_its_surface_is_computed_from_another_folder(tmp_path, cli):
    """examples/README.md's first commands: the arguments and the file's absolute path are recorded, so
    the surface, run from elsewhere, rebuilds the same network on the same data from the record."""
    work = example_in(tmp_path / "work")
    train = ["--model", MODEL, "--model_args", '{"width": 12}', "--dataset", DATA, "--data_args", '{"n": 300}']
    done = cli("train", [*train, "--epochs", "2", "--batch_size", "32", "--out", "run"], cwd=work)
    assert done.returncode == 0, done.stderr
    recorded = identity_of(work / "run" / "final.pt")
    assert recorded["model"] == f"{work / 'examples' / 'spirals.py'}:mlp"
    assert (recorded["model_args"], recorded["data_args"], recorded["train_samples"]) == (
        '{"width": 12}',
        '{"n": 300}',
        240,
    )

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    surface = ["--model_file", "../work/run/final.pt", "--x=-1:1:3", "--y=-1:1:3", "--surf_file", "s.h5"]
    done = cli("surface", surface, cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    surf = read_surface(str(elsewhere / "s.h5"))
    assert (surf.attrs["model_args"], surf.attrs["data_args"], surf.attrs["train_size"]) == (
        '{"width": 12}',
        '{"n": 300}',
        240,
    )
    trained = torch.load(work / "run" / "final.pt", map_location="cpu", weights_only=True)["meta"]["metrics"]
    assert float(surf.values["train_loss"][1, 1]) == pytest.approx(trained["train_loss"], rel=1e-4)  # the same net


@pytest.mark.slow
def test_the_spirals_example_sweeps_and_reports_from_another_folder(tmp_path):
    """examples/README.md's sweep and report: each run's record gives the report the factories, their
    arguments and where the file is."""
    work = example_in(tmp_path / "work")
    train = ["--model", MODEL, "--model_args", '{"width": 12}', "--dataset", DATA, "--data_args", '{"n": 300}']
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sweep = [*train, "--epochs", "1", "--batch_sizes", "16", "64", "--seeds", "0", "1", "--out", "sweep"]
    done = run("sweep", sweep, cwd=work, timeout=300)
    assert done.returncode == 0, done.stderr
    done = run("report", ["../work/sweep", "--out", "rep", *REPORT_FLAGS], cwd=elsewhere, timeout=300)
    assert done.returncode == 0, done.stderr
    target = json.loads((elsewhere / "rep" / "runs" / "sgd_b16_s0" / "measures.json").read_text())["target"]
    assert (target["model"], target["model_args"], target["data_args"]) == (
        f"{work / 'examples' / 'spirals.py'}:mlp",
        '{"width": 12}',
        '{"n": 300}',
    )


@pytest.mark.slow
def test_the_spirals_example_is_a_study_whose_report_rebuilds_its_networks_with_their_arguments(tmp_path):
    """A study file's [train] table names the plug-ins and their arguments: the sweep trains with them and
    the report, reading each run's record, rebuilds the same networks on the same data."""
    work = example_in(tmp_path / "work")
    (work / "s.toml").write_text(
        textwrap.dedent("""\
            batch_sizes = [16, 64]
            seeds = [0]
            recipes = ["sgd"]
            jobs = 1
            [train]
            model = "examples/spirals.py:mlp"
            model_args = '{"width": 12}'
            dataset = "examples/spirals.py:spirals"
            data_args = '{"n": 300}'
            epochs = 3
            lr = 0.05
        """)
        + TINY_REPORT
    )
    done = run("study", ["--config", "s.toml", "--out", "o", "--figures", "f"], cwd=work, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (work / "f" / "study.md").exists()
    for name in ("sgd_b16_s0", "sgd_b64_s0"):
        target = json.loads((work / "o" / "report" / "runs" / name / "measures.json").read_text())["target"]
        assert (target["model"], target["model_args"], target["data_args"]) == (
            f"{work / 'examples' / 'spirals.py'}:mlp",
            '{"width": 12}',
            '{"n": 300}',
        )


def test_factory_arguments_are_part_of_what_a_run_is(tmp_path, cli):
    """Other arguments are another computation: a resume with them is refused by name, a surface file is
    left untouched."""
    work = example_in(tmp_path)
    train = [
        "--model",
        MODEL,
        "--dataset",
        DATA,
        "--data_args",
        '{"n": 100}',
        "--epochs",
        "1",
        "--batch_size",
        "16",
        "--out",
        "run",
    ]
    assert cli("train", [*train, "--model_args", '{"width": 4}'], cwd=work).returncode == 0
    again = cli("train", [*train, "--model_args", '{"width": 5}'], cwd=work)
    assert again.returncode == 4 and "--model_args='{\"width\": 4}', not '{\"width\": 5}'" in again.stderr

    surface = ["--model_file", "run/final.pt", "--x=-1:1:3", "--surf_file", "s.h5"]
    assert cli("surface", surface, cwd=work).returncode == 0
    before = (work / "s.h5").read_bytes()
    other = cli("surface", [*surface, "--data_args", '{"n": 200}'], cwd=work)
    assert other.returncode == 4 and "data_args: file has '{\"n\": 100}'" in other.stderr
    assert (work / "s.h5").read_bytes() == before
    wrong = cli("surface", [*surface, "--model_args", '{"width": 5}'], cwd=work)
    assert wrong.returncode == 2 and '{"width": 4}, the arguments run/final.pt was built with' in wrong.stderr


def test_factory_arguments_that_cannot_be_used_are_one_line(tmp_path, monkeypatch, capsys):
    """Arguments to a registry model, text that is not a JSON object, or arguments the factory rejects:
    one line, no traceback, no file (in this process: the error boundary is the command's own)."""
    work = example_in(tmp_path)
    monkeypatch.chdir(work)
    for flags, expected in (
        (["--model", "digits_mlp", "--model_args", '{"width": 4}'], "no arguments for the registry model digits_mlp"),
        (["--model", MODEL, "--model_args", "width=4"], "expected a JSON object of the factory's keyword arguments"),
        (["--model", MODEL, "--model_args", '{"depth": "two"}'], 'the factory with {"depth": "two"} raised'),
    ):
        code = landscape("surface", *flags, "--dataset", DATA, "--x=-1:1:3", "--surf_file", "bad.h5")
        err = capsys.readouterr().err
        assert code in (2, 3) and expected in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1 and not (work / "bad.h5").exists()


def test_a_module_of_a_package_named_from_its_folder_is_recorded_by_its_file(tmp_path):
    """``--model nets.models:make`` imported from the current folder is recorded as the module's absolute
    path; a later command in another folder imports it under its package's name (its relative import works)."""
    work = example_in(tmp_path / "work")
    (work / "nets").mkdir()
    (work / "nets" / "__init__.py").write_text("")
    (work / "nets" / "layers.py").write_text("from torch import nn\n\nACTIVATION = nn.Tanh\n")
    (work / "nets" / "models.py").write_text(
        textwrap.dedent("""\
            from torch import nn

            from .layers import ACTIVATION


            def make(width=3):
                return nn.Sequential(nn.Linear(2, width), ACTIVATION(), nn.Linear(width, 2))
        """)
    )
    train = [
        "--model",
        "nets.models:make",
        "--model_args",
        '{"width": 5}',
        "--dataset",
        DATA,
        "--epochs",
        "1",
        "--batch_size",
        "64",
    ]
    done = run("train", [*train, "--out", "run"], cwd=work)
    assert done.returncode == 0, done.stderr
    assert identity_of(work / "run" / "final.pt")["model"] == f"{work / 'nets' / 'models.py'}:make"
    done = run("surface", ["--model_file", str(work / "run" / "final.pt"), "--x=-1:1:3", "--surf_file", "s.h5"],
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert read_surface(str(tmp_path / "s.h5")).attrs["model"] == f"{work / 'nets' / 'models.py'}:make"


@pytest.mark.mpi
def test_a_generated_data_set_is_made_once_and_shared_by_the_ranks(tmp_path):
    """A generator that draws unseeded samples gives each process other data; made on rank 0 and sent,
    the two ranks hold the same samples (their fingerprints agree) and the job runs."""
    (tmp_path / "unseeded.py").write_text(
        textwrap.dedent("""\
            import torch
            from torch import nn


            def noise(n=64):
                with open("made.txt", "a") as made:  # one line each time the set is made
                    made.write("made\\n")
                return (torch.randn(n, 2), torch.randint(0, 2, (n,))), None


            def linear():
                return nn.Linear(2, 2)
        """)
    )
    flags = ["--model", "unseeded.py:linear", "--dataset", "unseeded.py:noise", "--data_args", '{"n": 48}']
    done = run("surface", [*flags, "--x=-1:1:4", "--surf_file", "s.h5"], ranks=2, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_surface(str(tmp_path / "s.h5")).attrs["train_size"] == 48
    trained = run("train", [*flags, "--epochs", "1", "--batch_size", "8", "--out", "run"], ranks=2, cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    measured = run("curvature", ["--model_file", "run/final.pt", "--k", "1", "--out", "c.json"], ranks=2, cwd=tmp_path)
    assert measured.returncode == 0, measured.stderr
    assert (tmp_path / "made.txt").read_text() == "made\n" * 3  # once for each job, not for each rank
