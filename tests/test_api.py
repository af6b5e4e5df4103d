"""The README's two Python API examples run as tests, serially and under mpiexec -n 2 (bit for bit)."""
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import ROOT, require_mpi
from landscape.launch import mpiexec_command
from landscape.schema import read_surface

EXAMPLES = ROOT / "examples"


def run_example(name: str, out, grid: str, ranks: int | None = None):
    cmd = [sys.executable, str(EXAMPLES / name), "--out", str(out), f"--grid={grid}"]
    if ranks:
        require_mpi()
        cmd = [*mpiexec_command(), "-n", str(ranks), *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("name, surf, grid", [("regression_mlp.py", "mlp.h5", "-1:1:5"),
                                              ("tiny_transformer.py", "lm.h5", "-1:1:3")])
def test_example_serial_and_under_mpi_give_the_same_surface(tmp_path, name, surf, grid):
    out = run_example(name, tmp_path / "serial", grid)
    assert out.strip()
    run_example(name, tmp_path / "mpi", grid, ranks=2)
    a, b = read_surface(str(tmp_path / "serial" / surf)), read_surface(str(tmp_path / "mpi" / surf))
    assert a.done.all() and b.attrs["ranks"] == 2
    assert set(a.values) == set(b.values)
    assert all(np.array_equal(a.values[q], b.values[q]) for q in a.values)
    if name == "tiny_transformer.py":
        assert set(a.values) == {"train_loss", "train_acc", "test_loss", "test_acc"}
        assert a.attrs["loss_name"].endswith("next_token_loss")


def test_api_in_process_with_batches_and_resume(tmp_path):
    from landscape.api import loss_surface
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    x = torch.randn(40, 3)
    y = x.sum(dim=1, keepdim=True)
    batches = [(x[i:i + 10], y[i:i + 10]) for i in range(0, 40, 10)]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    first = loss_surface(model, batches, "mse", x="-1:1:5", surf_file=str(tmp_path / "s.h5"))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # the model is not modified
    again = loss_surface(model, (x, y), "mse", x="-1:1:5", surf_file=str(tmp_path / "s.h5"))
    assert again.attrs["points_computed"] == 0 and np.array_equal(first.values["train_loss"], again.values["train_loss"])
    from landscape.errors import UsageError
    with pytest.raises(UsageError):
        loss_surface("not a model", (x, y))
