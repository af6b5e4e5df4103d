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
    refused = cli("surface", surface, cwd=elsewhere)  # the checkpoint names the factories: not run unasked
    assert refused.returncode == 3 and "--allow_recorded_plugins" in refused.stderr, refused.stderr
    named = ["--model", "../work/examples/spirals.py:mlp", "--dataset", "../work/examples/spirals.py:spirals"]
    done = cli("surface", [*surface, *named], cwd=elsewhere)  # the same files, named from here: the record's own
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
    named = ["--model", "../work/examples/spirals.py:mlp", "--dataset", "../work/examples/spirals.py:spirals"]
    done = run("report", ["../work/sweep", "--out", "rep", *named, *REPORT_FLAGS], cwd=elsewhere, timeout=300)
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

    surface = ["--model", MODEL, "--dataset", DATA, "--model_file", "run/final.pt", "--x=-1:1:3", "--surf_file", "s.h5"]
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
    done = run("surface", ["--model_file", str(work / "run" / "final.pt"), "--x=-1:1:3", "--surf_file", "s.h5",
                           "--allow_recorded_plugins"], cwd=tmp_path)  # fmt: skip
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
    measured = run("curvature", [*flags, "--model_file", "run/final.pt", "--k", "1", "--out", "c.json"], ranks=2,
                   cwd=tmp_path)  # fmt: skip
    assert measured.returncode == 0, measured.stderr
    assert (tmp_path / "made.txt").read_text() == "made\n" * 3  # once for each job, not for each rank


# --------------------------------------------------------------------------- factories named by files


def hostile_checkpoint(folder, identity: dict) -> str:
    """A checkpoint of the digits MLP's weights whose record names ``identity`` (as anyone can write)."""
    from landscape.models import build_model

    path = folder / "evil.pt"
    torch.save({"state_dict": build_model("digits_mlp").state_dict(), "meta": {"identity": identity}}, path)
    return str(path)


def booby_trap(folder):
    """A plug-in file that leaves ``imported.txt`` when it is imported: its name in a record is the attack."""
    (folder / "trap.py").write_text(
        "open(__file__[:-7] + 'imported.txt', 'w').write('imported')\n"
        "from landscape.models import build_model\n"
        "def net():\n    return build_model('digits_mlp')\n"
    )
    return f"{folder / 'trap.py'}:net"


@pytest.mark.parametrize("field", ["model", "dataset"])
def test_a_factory_a_checkpoint_names_is_never_imported_unasked(tmp_path, cli, field):
    """A checkpoint's record naming ``os:system`` (or any file's factory) does not run it: curvature,
    surface and rescale end with one line naming the factory and the opt-in, exit 3, nothing imported."""
    marker = tmp_path / "pwned"
    spec = {"model": "os:system", "model_args": json.dumps({"command": f"touch {marker}"})}
    if field == "dataset":
        spec = {"model": "digits_mlp", "dataset": "os:system", "data_args": json.dumps({"command": f"touch {marker}"})}
    evil = hostile_checkpoint(tmp_path, {"dataset": "digits", **spec})
    for program, flags in (
        ("curvature", ["--model_file", evil, "--out", str(tmp_path / "c.json")]),
        ("surface", ["--model_file", evil, "--x=-1:1:3", "--surf_file", str(tmp_path / "s.h5")]),
        ("rescale", ["--model_file", evil, "--alpha", "2", "--out", str(tmp_path / "r.pt")]),
    ):
        done = cli(program, flags, cwd=tmp_path)
        assert done.returncode == 3, (program, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and f"{field} 'os:system' is named by checkpoint {evil}" in lines[0], lines
        assert f"--{field} os:system" in lines[0] and "--allow_recorded_plugins" in lines[0]
        assert not marker.exists(), program
        assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.pt"], program  # nothing written


def test_a_recorded_factory_runs_when_the_user_names_it_or_allows_it(tmp_path, cli):
    """The same factory named on the command line (in another spelling: relative) or the opt-in: imported."""
    spec = booby_trap(tmp_path)
    evil = hostile_checkpoint(tmp_path, {"dataset": "digits", "model": spec})
    flags = ["--model_file", evil, "--k", "1", "--tol", "1e-2"]
    refused = cli("curvature", [*flags, "--out", "a.json"], cwd=tmp_path)
    assert refused.returncode == 3 and not (tmp_path / "imported.txt").exists()
    named = cli("curvature", [*flags, "--model", "trap.py:net", "--out", "b.json"], cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    assert (tmp_path / "imported.txt").exists()
    (tmp_path / "imported.txt").unlink()
    allowed = cli("curvature", [*flags, "--allow_recorded_plugins", "--out", "c.json"], cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr


def test_a_factory_a_manifest_or_run_record_names_is_never_imported_unasked(tmp_path, cli):
    """A report's CSV listing a checkpoint whose record names a factory, a CSV's own model column and a
    sweep's run.json: the report refuses before anything is built, exit 3; named with --model it runs."""
    from landscape.io import run_files

    spec = booby_trap(tmp_path)
    evil = hostile_checkpoint(tmp_path, {"dataset": "digits", "model": spec})
    (tmp_path / "runs.csv").write_text(f"checkpoint,batch_size,seed\n{evil},16,0\n")
    (tmp_path / "columns.csv").write_text(f"checkpoint,batch_size,seed,model\n{evil},16,0,{spec}\n")
    for manifest in ("runs.csv", "columns.csv"):
        done = cli("report", [manifest, "--out", "rep"], cwd=tmp_path)
        assert done.returncode == 3, done.stderr
        assert f"is named by manifest {manifest} (run sgd_b16_s0), not by you" in done.stderr
        assert not (tmp_path / "imported.txt").exists() and not (tmp_path / "rep").exists()
    # a sweep's manifest and run.json, edited
    sweep = tmp_path / "sweep"
    done = cli("sweep", ["--model", "digits_mlp", "--out", str(sweep), "--batch_sizes", "16", "--seeds", "0",
                         "--steps", "5"], cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_folder = next(p for p in sweep.iterdir() if p.is_dir() and (p / "run.json").exists())
    record = run_files.read_run(str(run_folder))
    record["identity"]["model"] = spec
    (run_folder / "run.json").write_text(json.dumps(record))
    done = cli("report", [str(sweep), "--out", "rep"], cwd=tmp_path)
    assert done.returncode == 3 and "(run sgd_b16_s0), not by you" in done.stderr, done.stderr
    assert not (tmp_path / "imported.txt").exists()
