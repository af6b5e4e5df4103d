"""``landscape.hessian_eigs`` and ``landscape.hessian_trace``: any model and data, the model untouched, and
under ``mpiexec -n 2`` (each rank half of the data, one all-reduce per product) the serial values."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import landscape
from landscape.errors import ConfigError
from landscape.parallel.launch import mpiexec_command

from conftest import ROOT, require_mpi

SCRIPT = """
import json, sys, torch
from torch import nn
import landscape
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
g = torch.Generator().manual_seed(1)
x, y = torch.randn(51, 4, generator=g), torch.randint(0, 3, (51,), generator=g)
eigs = landscape.hessian_eigs(model, (x, y), k=2, which="both", tol=1e-12)
trace = landscape.hessian_trace(model, (x, y), samples=20, seed=5)
from landscape.parallel.comm import launcher_rank
rank = launcher_rank()
with open(f"{sys.argv[1]}/rank{rank}.json", "w") as f:
    json.dump({"top": eigs["top"].values, "bottom": eigs["bottom"].values, "trace": trace.value}, f)
"""


def test_the_api_returns_both_ends_and_leaves_the_model_alone():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = torch.randn(30, 4), torch.randint(0, 3, (30,))
    eigs = landscape.hessian_eigs(model, (x, y), k=2, which="both")
    assert eigs["top"].values[0] >= eigs["top"].values[1] > eigs["bottom"].values[1] >= eigs["bottom"].values[0]
    assert eigs["top"].converged and eigs["top"].products > 0
    assert all(torch.equal(before[k], v) and v.dtype == torch.float32 for k, v in model.state_dict().items())
    only_top = landscape.hessian_eigs(model, (x, y), k=1, which="top")
    assert list(only_top) == ["top"] and only_top["top"].values[0] == pytest.approx(eigs["top"].values[0], rel=1e-6)
    trace = landscape.hessian_trace(model, (x, y), samples=10)
    assert trace.samples == 10 and np.isfinite(trace.value)
    with pytest.raises(ConfigError, match="which=middle: expected one of top, bottom, both"):
        landscape.hessian_eigs(model, (x, y), which="middle")


def test_one_default_per_curvature_setting_whichever_door():
    """The API's functions, ``landscape curvature`` and the suite share each default (the Lanczos tolerance
    was 1e-6, 1e-4 or 1e-3 depending on the door, ``which`` both or top)."""
    import inspect

    from landscape.curvature.suite import SuiteConfig
    from landscape.workflows import curvature

    defaults = SuiteConfig()
    eigs = inspect.signature(landscape.hessian_eigs).parameters
    for name in ("k", "which", "tol", "seed", "method", "maxiter"):
        assert eigs[name].default == getattr(defaults, name), name
    for name in ("k", "which", "tol", "density_steps", "density_runs", "layer_samples"):
        assert curvature.CurvatureParams.__dataclass_fields__[name].default == getattr(defaults, name), name
    assert inspect.signature(landscape.hessian_trace).parameters["samples"].default == defaults.trace_samples
    assert inspect.signature(landscape.hessian_layers).parameters["tol"].default == defaults.tol


@pytest.mark.mpi
def test_two_ranks_sharing_the_data_give_the_serial_eigenvalues(tmp_path):
    require_mpi()
    script = tmp_path / "eigs.py"
    script.write_text(SCRIPT)
    (tmp_path / "serial").mkdir()
    (tmp_path / "mpi").mkdir()
    serial = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "serial")], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert serial.returncode == 0, serial.stderr
    parallel = subprocess.run(
        [*mpiexec_command(), "-n", "2", sys.executable, str(script), str(tmp_path / "mpi")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert parallel.returncode == 0, parallel.stderr
    one = json.loads((tmp_path / "serial" / "rank0.json").read_text())
    lines = [json.loads((tmp_path / "mpi" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert lines[0] == lines[1]  # every rank returns the same
    for key in ("top", "bottom"):
        assert np.allclose(lines[0][key], one[key], rtol=1e-10, atol=1e-14)
    assert lines[0]["trace"] == pytest.approx(one["trace"], rel=1e-10)


def test_sharpness_through_the_api_reports_its_settings():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    x, y = torch.randn(30, 4), torch.randint(0, 3, (30,))
    adaptive = landscape.sharpness(model, (x, y), measure="adaptive", rho=0.05)
    assert adaptive.value >= 0 and adaptive.settings["rho"] == 0.05
    average = landscape.sharpness(model, (x, y), measure="average", radius=0.2, directions=4)
    assert average.settings["directions"] == 4 and np.isfinite(average.stderr) and np.isfinite(average.error_rise)
    eps = landscape.sharpness(model, (x, y), measure="epsilon", epsilon=1e-3, subspace=5)
    assert eps.settings["subspace"] == 5 and eps.value >= 0
    from landscape.errors import UsageError

    with pytest.raises(UsageError, match="measure='flat'"):
        landscape.sharpness(model, (x, y), measure="flat")
