"""Every scorecard measure against its flag ``invariant``: a ReLU network rescaled without changing its
function (Dinh et al. 2017) — layer by layer (layer k times α, layer k + 1 divided by α) and unit by unit
(each unit of layer k by its own α) — measured by the report's own code.  Powers of two keep the
rescaled network's arithmetic exact, so an invariant measure agrees to rounding and a changed one moves
by far more."""

import copy
import math

import torch

from landscape.io.checkpoint import save
from landscape.models import build_model
from landscape.report.catalogue import MEASURES
from landscape.report.measure_config import MeasureConfig, Target
from landscape.report.measures import measure_run
from landscape.report.runs import Run

CONFIG = MeasureConfig(
    grid_1d="-1:1:5",
    grid_2d="-1:1:5",
    radius=1.0,
    directions=3,
    trace_samples=4,
    iterations=5,
    restarts=1,
    draws=4,
    m=40,
    train_subset=120,
    tol=1e-4,
)
UNITS = torch.tensor([0.5, 2.0, 4.0, 1.0, 0.25, 2.0, 0.5, 8.0] * 16)  # one per unit of the first hidden layer


def rescaled(model: torch.nn.Module, factors: torch.Tensor) -> torch.nn.Module:
    """The same function: the first hidden layer's units times ``factors``, the weights reading them divided."""
    out = copy.deepcopy(model)
    with torch.no_grad():
        out.net[1].weight.mul_(factors[:, None])
        out.net[1].bias.mul_(factors)
        out.net[3].weight.div_(factors[None, :])
    return out


def measured(tmp_path, model, name: str) -> dict:
    path = tmp_path / f"{name}.pt"
    save(model, str(path))
    run = Run(name, "sgd", 16, 0, str(path), "digits_mlp", "digits")
    return measure_run(run, Target("digits_mlp", "digits", threads=1), CONFIG, str(tmp_path / name))["values"]


def moved(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def test_every_measure_keeps_or_loses_its_value_under_rescaling_as_its_flag_says(tmp_path, one_thread):
    torch.manual_seed(3)
    model = build_model("digits_mlp").eval()
    base = measured(tmp_path, model, "base")
    layerwise = measured(tmp_path, rescaled(model, torch.full((128,), 2.0)), "layerwise")
    unitwise = measured(tmp_path, rescaled(model, UNITS), "unitwise")
    assert {m.invariant for m in MEASURES} == {"yes", "layer-wise", "no"}
    for m in MEASURES:
        a, b, c = base[m.key], layerwise[m.key], unitwise[m.key]
        assert all(math.isfinite(v) for v in (a, b, c)), m.key
        if m.invariant == "no":
            assert moved(a, b) > 1e-3, f"{m.key} is flagged not invariant, yet a layer-wise rescaling kept it"
            continue
        assert moved(a, b) < 1e-5, f"{m.key} is flagged invariant, yet a layer-wise rescaling moved it"
        if m.invariant == "yes":
            assert moved(a, c) < 1e-5, f"{m.key} is flagged invariant unit by unit, yet a unit-wise rescaling moved it"
        else:
            assert moved(a, c) > 1e-3, f"{m.key} is flagged layer-wise only, yet a unit-wise rescaling kept it"
