"""A made-up batch-size study for the report's figure tests: results as ``measure_run`` returns them, whose
values follow the batch size where asked, and optionally run folders holding what a report writes."""

from __future__ import annotations

import math
import os

import h5py
import numpy as np

from landscape.io import surface_file
from landscape.report.catalogue import MEASURES
from landscape.report.scorecard import build

BATCHES, SEEDS = (16, 128, 1024), (0, 1, 2)
X = np.linspace(-1.0, 1.0, 11)


def results(
    recipes=("naive",), batches=BATCHES, seeds=SEEDS, mismatch: bool = False, control: bool = False, seed: int = 0
) -> list[dict]:
    """One run per recipe, batch size and seed; every measure positive, λmax and the trace rising with the
    batch.  ``mismatch``: training losses a factor of 30 apart across batch sizes, each run carrying
    ``<key>_matched`` values (λmax halved there); ``control``: a rescaled copy of the first run."""
    rng = np.random.default_rng(seed)
    out = []
    for recipe in recipes:
        for b in batches:
            for s in seeds:
                level = math.log2(b)
                values = {m.key: float(np.exp(rng.normal())) for m in MEASURES}
                values.update(
                    train_loss=0.01 * (1 + 0.05 * s) * (30 ** (batches.index(b) / 2) if mismatch else 1.0),
                    train_error=0.5,
                    test_error=20.0 + level + 0.3 * s + rng.normal(),
                    lambda_max=level + 0.1 * rng.normal(),
                    trace=10 * level + rng.normal(),
                )
                values["gap"] = values["test_error"] - values["train_error"]
                if mismatch:
                    values.update({f"{k}_matched": v for k, v in values.items()})
                    values["lambda_max_matched"] = values["lambda_max"] / 2
                out.append(
                    {
                        "run": {
                            "name": f"{recipe}_b{b}_s{s}",
                            "recipe": recipe,
                            "batch_size": b,
                            "seed": s,
                            "checkpoint": f"/nowhere/{recipe}_b{b}_s{s}/final.pt",
                            "model": "toy",
                            "dataset": "toy",
                        },
                        "target": {"model": "toy", "dataset": "toy"},
                        "checkpoint_sha256": f"{recipe}{b}{s}",
                        "values": values,
                        "errors": {},
                        "details": {"lambda_max": {"residuals": [1e-4], "converged": True}},
                    }
                )
    if control:
        first = out[0]
        out.append(
            {
                **first,
                "run": {**first["run"], "name": "rescaled_copy", "recipe": "rescaled"},
                "checkpoint_sha256": "copy",
                "values": {k: 50.0 * v for k, v in first["values"].items()},
                "rescaled": {"from_sha256": first["checkpoint_sha256"], "alpha": 10.0},
            }
        )
    return out


def card(found: list[dict]):
    """The scorecard of ``found``; an arm measured at matched loss is said to be matched at 0.01."""
    arms = {r["run"]["recipe"] for r in found if any(k.endswith("_matched") for k in r["values"])}
    matched = {arm: {"level": 0.01, "note": "the lowest level every run crossed in its last phase"} for arm in arms}
    return build(found, permutations=200, settings={"matched": matched} if matched else None)


def surface(path: str, loss, y=None) -> str:
    """A surface file of ``train_loss`` (a function of the point) on X (and ``y``), every point computed."""
    names = ["train_loss", "train_acc"]
    surface_file.create(path, X, y, {n: {"long_name": n, "units": ""} for n in names}, {"loss_name": "crossentropy"})
    points = [(a,) for a in X] if y is None else [(a, b) for a in X for b in y]
    values = np.array([[loss(*p), 90.0] for p in points])
    with h5py.File(path, "r+") as h:
        surface_file.write_values(h, np.arange(len(points)), values, names)
        surface_file.mark_done(h, np.arange(len(points)))
    return path


def run_folders(out: str, found: list[dict], hessian: bool = True) -> None:
    """What a report writes in ``<out>/runs/<run>/``: random 1-D and 2-D surfaces (a basin deepening with
    the batch size) and, with ``hessian``, the 1-D surface along the top eigenvector."""
    for result in found:
        run = result["run"]
        folder = os.path.join(out, "runs", run["name"])
        os.makedirs(folder, exist_ok=True)
        depth = 1.0 / run["batch_size"]
        surface(os.path.join(folder, "surface_1d.h5"), lambda a, depth=depth: depth + 5 * a**2)
        surface(os.path.join(folder, "surface_2d.h5"), lambda a, b, depth=depth: depth + 5 * (a**2 + b**2), y=X)
        if hessian:
            lam = 2 * math.log2(run["batch_size"])
            surface(
                os.path.join(folder, "surface_1d_hessian.h5"), lambda a, lam=lam, depth=depth: depth + 0.5 * lam * a**2
            )
            result["details"]["hessian_1d"] = {"file": "surface_1d_hessian.h5", "eigenvalue": lam, "scale": "unit"}
