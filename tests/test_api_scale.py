"""The scale-aware curvature through the API (``hessian_layers``, ``relative_flatness``,
``fisher_rao_norm``, ``noise_scale``): any model and data, the model untouched, and under ``mpiexec -n 2``
(each rank half of the data) the serial values."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import landscape
from landscape.parallel.launch import mpiexec_command

from conftest import ROOT, require_mpi

SCRIPT = """
import json, sys, torch
from torch import nn
import landscape
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
g = torch.Generator().manual_seed(1)
x, y = torch.randn(51, 4, generator=g), torch.randint(0, 3, (51,), generator=g)
layers = landscape.hessian_layers(model, (x, y), samples=4, tol=1e-10)
from landscape.parallel.comm import launcher_rank
with open(f"{sys.argv[1]}/rank{launcher_rank()}.json", "w") as f:
    json.dump({
        "layers": [[c.lambda_max, c.trace] for c in layers],
        "flatness": landscape.relative_flatness(model, (x, y), samples=4).value,
        "fisher_rao": landscape.fisher_rao_norm(model, (x, y)).value,
        "noise": landscape.noise_scale(model, (x, y)).value,
    }, f)
"""


def test_each_measure_comes_back_with_its_definition_and_leaves_the_model_alone():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = torch.randn(30, 4), torch.randint(0, 3, (30,))
    layers = landscape.hessian_layers(model, (x, y), samples=4)
    assert [c.layer for c in layers] == ["0", "2"] and all(c.converged and c.lambda_max > 0 for c in layers)
    flatness = landscape.relative_flatness(model, (x, y), samples=4)
    assert set(flatness.by_layer) == {"0", "2"} and "Petzka" in flatness.citation
    norm = landscape.fisher_rao_norm(model, (x, y))
    assert norm.value > 0 and norm.empirical > 0
    noise = landscape.noise_scale(model, (x, y))
    assert noise.value > 0 and noise.samples == 30
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.mpi
def test_two_ranks_sharing_the_data_give_the_serial_values(tmp_path):
    require_mpi()
    script = tmp_path / "scale.py"
    script.write_text(SCRIPT)
    results = {}
    for name, launch in (("serial", []), ("mpi", [*(mpiexec_command() or []), "-n", "2"])):
        (tmp_path / name).mkdir()
        done = subprocess.run(
            [*launch, sys.executable, str(script), str(tmp_path / name)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        results[name] = json.loads((tmp_path / name / "rank0.json").read_text())
    assert json.loads((tmp_path / "mpi" / "rank1.json").read_text()) == results["mpi"]
    one, two = results["serial"], results["mpi"]
    assert np.allclose(two["layers"], one["layers"], rtol=1e-9)
    for key in ("flatness", "fisher_rao", "noise"):
        assert two[key] == pytest.approx(one[key], rel=1e-9)
