"""The README's two Python API examples run as tests, serially and under mpiexec -n 2 (bit for bit)."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from landscape.io.surface_file import read as read_surface
from landscape.parallel.launch import mpiexec_command

from conftest import ROOT, require_mpi

EXAMPLES = ROOT / "examples"


def run_example(name: str, out, grid: str, ranks: int | None = None):
    cmd = [sys.executable, str(EXAMPLES / name), "--out", str(out), f"--grid={grid}"]
    if ranks:
        require_mpi()
        cmd = [*mpiexec_command(), "-n", str(ranks), *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize(
    "name, surf, grid", [("regression_mlp.py", "mlp.h5", "-1:1:5"), ("tiny_transformer.py", "lm.h5", "-1:1:3")]
)
@pytest.mark.mpi
def test_example_serial_and_under_mpi_give_the_same_surface(tmp_path, name, surf, grid):
    out = run_example(name, tmp_path / "serial", grid)
    assert out.startswith(
        {"regression_mlp.py": "train MSE at the fit", "tiny_transformer.py": "next-token loss"}[name]
    ), out
    parallel = run_example(name, tmp_path / "mpi", grid, ranks=2)
    if name == "tiny_transformer.py":  # its top Hessian eigenvalues, through fused attention, on 1 and 2 ranks
        line = next(row for row in out.splitlines() if row.startswith("top Hessian eigenvalues"))
        assert "(converged" in line
        values = [float(v) for v in line.split("eigenvalues ")[1].split(" (")[0].split(", ")]
        mpi_line = next(row for row in parallel.splitlines() if row.startswith("top Hessian eigenvalues"))
        mpi_values = [float(v) for v in mpi_line.split("eigenvalues ")[1].split(" (")[0].split(", ")]
        assert values[0] >= values[1] >= values[2] > 0
        assert np.allclose(values, mpi_values, rtol=1e-3)  # printed to 4 digits
    a, b = read_surface(str(tmp_path / "serial" / surf)), read_surface(str(tmp_path / "mpi" / surf))
    assert a.done.all() and b.run["ranks"] == 2
    assert set(a.values) == set(b.values)
    assert all(np.array_equal(a.values[q], b.values[q]) for q in a.values)
    if name == "tiny_transformer.py":
        assert set(a.values) == {"train_loss", "train_acc", "test_loss", "test_acc"}
        assert "next_token_loss#" in a.attrs["loss_name"]


def test_api_in_process_with_batches_and_resume(tmp_path):
    from landscape.api import loss_surface

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    x = torch.randn(40, 3)
    y = x.sum(dim=1, keepdim=True)
    batches = [(x[i : i + 10], y[i : i + 10]) for i in range(0, 40, 10)]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    first = loss_surface(model, batches, "mse", x="-1:1:5", surf_file=str(tmp_path / "s.h5"))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # the model is not modified
    with torch.no_grad():
        assert first.surface.values["train_loss"][2] == pytest.approx(
            torch.nn.functional.mse_loss(model(x), y).item(), rel=1e-6
        )
    again = loss_surface(model, (x, y), "mse", x="-1:1:5", surf_file=str(tmp_path / "s.h5"))
    assert again.read_back and again.computed == 0
    assert np.array_equal(first.surface.values["train_loss"], again.surface.values["train_loss"])
    from landscape.errors import UsageError

    with pytest.raises(UsageError, match="model: expected a torch.nn.Module, got str"):
        loss_surface("not a model", (x, y))


def test_two_different_loss_callables_never_share_a_file(tmp_path):
    from landscape.api import loss_surface
    from landscape.errors import LandscapeError

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    data = (torch.randn(20, 3), torch.randn(20, 1))
    loss_surface(
        model, data, lambda o, t: torch.nn.functional.mse_loss(o, t), x="-1:1:3", surf_file=str(tmp_path / "s.h5")
    )
    with pytest.raises(LandscapeError, match="loss_name") as info:
        loss_surface(
            model,
            data,
            lambda o, t: 100 * torch.nn.functional.mse_loss(o, t),
            x="-1:1:3",
            surf_file=str(tmp_path / "s.h5"),
        )
    assert info.value.exit_status == 4  # a mismatch, agreed by every rank


def test_dense_cross_entropy_and_accuracy_along_the_class_dimension(tmp_path):
    from landscape.api import loss_surface

    torch.manual_seed(0)
    model = torch.nn.Conv2d(2, 3, 1)  # (B, 2, 5, 5) -> per-pixel logits (B, 3, 5, 5)
    x, y = torch.randn(4, 2, 5, 5), torch.randint(0, 3, (4, 5, 5))
    s = loss_surface(model, (x, y), x="-1:1:3", xnorm="none", surf_file=str(tmp_path / "d.h5")).surface
    with torch.no_grad():
        out = model(x)
    assert abs(s.values["train_loss"][1] - float(torch.nn.functional.cross_entropy(out, y))) < 1e-6
    assert abs(s.values["train_acc"][1] - 100 * float((out.argmax(1) == y).double().mean())) < 1e-9


def test_train_subset_with_a_callable_loss_has_no_standard_error(tmp_path):
    from landscape.api import loss_surface

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    data = (torch.randn(50, 3), torch.randn(50, 1))
    s = loss_surface(
        model, data, torch.nn.functional.mse_loss, x="-1:1:3", train_subset=20, surf_file=str(tmp_path / "t.h5")
    ).surface
    assert s.attrs["train_size"] == 20 and "train_loss_se" not in s.values


def test_every_command_has_a_function_with_the_flags_names_and_the_configurations_defaults():
    import argparse
    import dataclasses
    import inspect

    from landscape import api
    from landscape.cli.main import COMMANDS
    from landscape.workflows import surface, train

    assert set(api.COMMANDS) == set(COMMANDS)
    for name, function in api.COMMANDS.items():
        params = COMMANDS[name].load().PARAMS[0]  # the command's parameters: its flags and its keywords
        assert params.COMMAND == name
        flags = {f.name for f in dataclasses.fields(params) if f.metadata["api"]}  # mpi: the command line's alone
        assert set(inspect.signature(function).parameters) == flags, name
        assert f"landscape {name}" in function.__doc__ and function.__doc__.count("``") > 2 * len(flags), name
        parser = COMMANDS[name].load().build_parser()
        for f in flags:  # the parser leaves every default to the parameters
            assert parser.get_default(f) in (argparse.SUPPRESS, None), (name, f)
    for module, required in ((surface, {"model": "digits_mlp"}), (train, {"model": "digits_mlp", "out": "r"})):
        defaults = {
            k: v.default
            for k, v in inspect.signature(api.COMMANDS[module.__name__.rsplit(".", 1)[1]]).parameters.items()
            if v.default is not inspect.Parameter.empty and k != "mpi"
        }
        assert module.job_of({**defaults, **required}) == module.job_of(required)  # the same job either way


def test_loss_surface_writes_a_temporary_file_unless_given_one_and_says_when_it_read_one_back(tmp_path):
    from landscape.api import loss_surface

    model = torch.nn.Linear(3, 1)
    data = (torch.randn(20, 3), torch.randn(20, 1))
    first = loss_surface(model, data, "mse", x="-1:1:3", quiet=True)
    second = loss_surface(model, data, "mse", x="-1:1:3", quiet=True)
    assert first.surf_file != second.surf_file and not first.read_back and not second.read_back
    assert not (tmp_path / "surface.h5").exists() and first.computed == 3
    given = loss_surface(model, data, "mse", x="-1:1:3", quiet=True, surf_file=str(tmp_path / "s.h5"))
    again = loss_surface(model, data, "mse", x="-1:1:3", quiet=True, surf_file=str(tmp_path / "s.h5"))
    assert not given.read_back and again.read_back and again.computed == 0
    assert np.array_equal(given.surface.values["train_loss"], again.surface.values["train_loss"])
    assert set(again.record()) >= {"surf_file", "computed", "settings"} and "surface" not in again.record()
