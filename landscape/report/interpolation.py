"""Keskar et al. (2017, Fig. 3): the loss along the straight line from a small-batch to a large-batch network.

``w(α) = (1 − α) w_small + α w_large`` is the surfaces' own line ``origin + α·d`` with the origin
``w_small`` and ``d = w_large − w_small`` (``directions.target_direction``), evaluated by the surfaces'
evaluator (``surface.evaluation``) with the report's loss and batch size, on the report's training
samples (its ``train_subset``) and on the test set.  Each point is made fresh from ``w_small`` in
float64 and rounded once (``surface.kernels.problem``), so α = 0 is the small-batch network and α = 1
the large-batch one, bit for bit: the curve passes through each network's own loss.

BatchNorm: the running statistics are interpolated with the weights (``states`` directions) and the
networks are evaluated in eval mode, as Keskar-style plots of BatchNorm networks are made.  A
limitation: between and beyond the ends, the interpolated statistics are not those of the
interpolated weights, so part of a barrier may be mismatched statistics; re-estimating them at every
α (``landscape surface --bn recalibrate``) would remove that, at the cost of passes over the data.

Pairs (``choose_pairs``): per recipe and seed, the run at the recipe's smallest batch size and the one
at its largest; a seed missing either end is left out, and so are the rescaling control's runs
(recipe ``rescaled``: copies of other runs, not minima of their own batch size).

The record (``interpolate``) is what ``<name>_interpolation.json`` holds; ``plotting.interpolation``
draws the figure from it alone.  Nothing here knows about ranks.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
from torch import nn

from .. import directions as dirs
from ..data import Data, DataConfig, load_data
from ..errors import ConfigError
from ..grid import Axis
from ..io.atomic import write_file
from ..losses import LOSS_WORDS, Loss
from ..models import ModelConfig, load_model
from ..surface.evaluation import EvaluationConfig, Evaluator
from .measure_config import TARGET_IDENTITY, MeasureConfig, Target

ALPHAS = "-0.5:1.5:41"  # α from −0.5 to 1.5 in steps of 0.05: 0 and 1, the two networks, exactly on it
RESCALED = "rescaled"  # the recipe of the rescaling control's runs (``landscape study``)
# The precision of the report's surfaces, whose centres give the scorecard's train and test loss.
DTYPE = "float32"
CITATION = "Keskar et al. 2017, Fig. 3"
SUFFIX = "_interpolation"  # <figures>/<name>_interpolation.json, .png, .pdf


def alphas_of(spec: str = ALPHAS) -> np.ndarray:
    """The coefficients ``MIN:MAX:NUM`` (``grid.Axis``: endpoints exact); they must hold 0 and 1 exactly."""
    alphas = Axis.parse(spec, "alphas").coordinates()
    if not (np.any(alphas == 0.0) and np.any(alphas == 1.0)):
        raise ConfigError("alphas", spec, f"a grid MIN:MAX:NUM holding 0 and 1 exactly, the two networks ({ALPHAS})")
    return alphas


@dataclass(frozen=True)
class Line:
    """The values at each α: the mean loss and the error (%) of each set; NaN where not computed (no test
    set; no error for a regression's float targets)."""

    train_loss: np.ndarray
    test_loss: np.ndarray
    train_error: np.ndarray
    test_error: np.ndarray

    def record(self) -> dict:
        """Lists of floats, null for NaN (JSON has no NaN) and for a diverged point's inf."""
        return {
            key: [float(v) if math.isfinite(v) else None for v in getattr(self, key)]
            for key in ("train_loss", "test_loss", "train_error", "test_error")
        }


def along_line(
    small: nn.Module,
    large: nn.Module,
    data: Data,
    alphas: np.ndarray,
    loss_name: str = "crossentropy",
    batch_size: int = 512,
    dtype: str = DTYPE,
    device: str = "cpu",
) -> Line:
    """The loss and error of ``w(α) = (1 − α) w_small + α w_large`` at each of ``alphas``, on
    ``data.train`` and (when there is one) ``data.test``; parameters and BatchNorm statistics move
    together, BatchNorm in eval mode.  Neither model is changed."""
    origin = dirs.origin_tensors(small, "states")
    towards = dirs.target_direction(origin, dirs.origin_tensors(large, "states"), "the large-batch network")
    sets = {"train": data.train, **({"test": data.test} if data.test is not None else {})}
    evaluator = Evaluator(
        small,
        origin,
        dx=towards,  # a line: one direction, no second
        dy=None,
        data=sets,
        loss=Loss(loss_name),
        cfg=EvaluationConfig(
            loss_name=loss_name, kernel="reference", batch_size=batch_size, points_per_pass=1, dtype=dtype
        ),
        bn="states",
        device=device,
    )
    evaluator.probe()
    alphas = np.asarray(alphas, dtype=np.float64)
    values = evaluator.evaluate(np.column_stack([alphas, np.zeros_like(alphas)]))
    column = {name: values[:, k] for k, name in enumerate(evaluator.names)}
    missing = np.full(len(alphas), np.nan)
    return Line(
        train_loss=column.get("train_loss", missing),
        test_loss=column.get("test_loss", missing),
        train_error=100.0 - column.get("train_acc", missing),
        test_error=100.0 - column.get("test_acc", missing),
    )


@dataclass(frozen=True)
class Pair:
    """Two runs of one recipe and seed: ``small`` at the recipe's smallest batch size, ``large`` at its
    largest (run records as the report holds them: ``report.runs.Run`` as a dict)."""

    recipe: str
    seed: int
    small: dict
    large: dict

    def record(self) -> dict:
        return {
            "recipe": self.recipe,
            "seed": self.seed,
            "from": self.small["name"],
            "to": self.large["name"],
            "batch_from": self.small["batch_size"],
            "batch_to": self.large["batch_size"],
        }


def choose_pairs(runs: list[dict]) -> list[Pair]:
    """Per recipe (in the order first seen) and seed (ascending): its smallest-batch run against its
    largest-batch run.  A recipe of one batch size has no pair; a seed without a run at both ends is
    left out; runs of the recipe ``rescaled`` are never paired.  Of two runs at one end, the first listed."""
    pairs = []
    for recipe in dict.fromkeys(r["recipe"] for r in runs if r["recipe"] != RESCALED):
        mine = [r for r in runs if r["recipe"] == recipe]
        smallest, largest = min(r["batch_size"] for r in mine), max(r["batch_size"] for r in mine)
        if smallest == largest:
            continue
        for seed in sorted({r["seed"] for r in mine}):
            ends = {}
            for r in mine:
                if r["seed"] == seed and r["batch_size"] in (smallest, largest):
                    ends.setdefault(r["batch_size"], r)
            if len(ends) == 2:
                pairs.append(Pair(recipe, seed, ends[smallest], ends[largest]))
    return pairs


def definition(loss_name: str, train_subset: int | None) -> str:
    """What the record's values are, in words."""
    samples = f"a seeded subset of {train_subset} training samples" if train_subset else "the training set"
    return (
        "w(α) = (1 − α) w_from + α w_to, w_from the network of a recipe's smallest batch size and w_to that "
        "of its largest, one seed; every parameter and BatchNorm running statistic interpolated, BatchNorm "
        "in eval mode (the statistics are not re-estimated at α). train_loss, test_loss: the mean "
        f"{LOSS_WORDS.get(loss_name, loss_name)} over {samples} and over the test set; train_error, "
        "test_error: the share misclassified, in %; null: not computed (no test set, no classes) or not finite."
    )


def interpolate(pairs: list[Pair], target: Target, config: MeasureConfig, alphas: np.ndarray | None = None) -> dict:
    """The record of ``<name>_interpolation.json`` for ``pairs``: each network loaded as the report's
    measures load it, on the report's data, loss and batch size."""
    alphas = alphas_of() if alphas is None else np.asarray(alphas, dtype=np.float64)
    data = load_data(
        DataConfig(
            target.dataset, datapath=target.datapath, train_subset=config.train_subset, data_args=target.data_args
        )
    )
    model = ModelConfig(target.model, num_classes=target.num_classes, model_args=target.model_args)
    classes = model.classes(target.dataset)
    records = []
    for pair in pairs:
        small, large = (load_model(model, classes, run["checkpoint"], seed=0) for run in (pair.small, pair.large))
        line = along_line(small, large, data, alphas, config.loss_name, config.batch_size, DTYPE, target.device)
        records.append({**pair.record(), **line.record()})
    return {
        "alphas": [float(a) for a in alphas],
        "pairs": records,
        "definition": definition(config.loss_name, config.train_subset),
        "citation": CITATION,
    }


def write_interpolation_json(
    results: list[dict], config: MeasureConfig, stem: str, device: str = "cpu"
) -> tuple[str, dict]:
    """``<stem>_interpolation.json`` for the report's ``results`` (their runs and target): its path and
    record (``plotting.interpolation`` draws it where a recipe has a pair).  The rescaling control's copies
    (a result with a ``rescaled`` record) are not paired, whatever their recipe."""
    pairs = choose_pairs([r["run"] for r in results if not r.get("rescaled")])
    recorded = results[0]["target"]  # a record older than the factories' arguments has none
    target = Target(**{key: recorded.get(key, getattr(Target, key, None)) for key in TARGET_IDENTITY}, device=device)
    record = interpolate(pairs, target, config)
    path = f"{stem}{SUFFIX}.json"
    write_file(path, (json.dumps(record, indent=2) + "\n").encode())
    return path, record


__all__ = [
    "ALPHAS",
    "CITATION",
    "Line",
    "Pair",
    "alphas_of",
    "along_line",
    "choose_pairs",
    "interpolate",
    "write_interpolation_json",
]
