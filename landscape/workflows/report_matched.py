"""A run of ``landscape report`` measured beyond its final weights: again at the weights it kept where its
training loss first fell to its arm's matched level (``report.matching``), and along its training path
(λmax and adaptive sharpness at every level it kept weights at); and what a stop signal inside a surface
leaves of a measurement (``ABANDONED``)."""

from __future__ import annotations

import math
import os
from dataclasses import replace

import torch

from ..errors import Stopped
from ..io.checkpoint import read_state_dict
from ..parallel import stop
from ..report import matching
from ..report.matching import MATCHED
from ..report.measure_config import MeasureConfig, Target
from ..report.measures import flags, measure_light, measure_run
from ..report.rescaling import origin_of
from ..report.runs import Run

ABANDONED = object()  # a measurement a stop signal ended inside a surface


def unless_stopped(measure, *args):
    """``measure(*args)``, or ``ABANDONED`` when a stop signal ended a surface inside it: the surface saved
    its round and resumes, the run's ``measures.json`` is not written, and the ranks agree on the stop
    before the next measurement."""
    try:
        return measure(*args)
    except Stopped:
        if stop.installed() is None:  # the surface's own signal handler, not the command's: stop as it did
            raise
        return ABANDONED


def levels_of(args, runs: list[Run]) -> dict[str, matching.Level]:
    """Each arm's matched training loss (``report.matching``): as given, or the lowest level every run of
    the arm crossed in its last learning-rate phase; none when off."""
    if args.match_loss == "off":
        return {}
    given = None if args.match_loss == "auto" else float(args.match_loss)
    arms = dict.fromkeys(r.recipe for r in runs if origin_of(r.checkpoint) is None)
    return {arm: matching.choose([r for r in runs if r.recipe == arm], given) for arm in arms}


def same_weights(a: str, b: str) -> bool:
    """Whether two checkpoints hold the same weights (a run stopped at its level keeps them twice)."""
    first, second = (read_state_dict(path) for path in (a, b))
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


def add_matched(result: dict, run: Run, target: Target, config: MeasureConfig, args, level: float) -> None:
    """The run measured again at its weights kept at ``level``: ``<key>_matched`` values and ``matched``
    (where they were taken, and whether the measured loss is the level to within 5 %)."""
    found = matching.matched(run, level)
    result["matched"] = found.record()
    if found.checkpoint is None:
        print(f"  matched loss: {run.name}: {found.note}", flush=True)
        return
    if same_weights(found.checkpoint, run.checkpoint):  # stopped there: the values measured already
        at = result
    else:
        folder = os.path.join(args.out, "runs", run.name, f"matched_loss_{level:g}")
        at = measure_run(replace(run, checkpoint=found.checkpoint), target, config, folder, extras=False)
    measured = at["values"]["train_loss"]
    off = matching.off_level(measured, level)
    result["matched"].update(measured_loss=measured, off=off, checkpoint_sha256=at["checkpoint_sha256"])
    result["values"].update({f"{k}{MATCHED}": v for k, v in at["values"].items()})
    result["matched_flags"] = flags(at) if at is not result else {}  # the same weights: flagged once
    result["matched_values"] = {"checkpoint_sha256": at["checkpoint_sha256"], "values": dict(at["values"])}
    print(
        f"  matched loss {level:g}: {run.name} at step {found.step} (learning-rate phase {found.phase!r}; "
        f"train loss {measured:.4g}): "
        f"λmax {at['values']['lambda_max']:.4g}" + (f"; {off}" if off else ""),
        flush=True,
    )


PATH_RESTARTS = 1  # the path's searches: a seeded start besides δ = 0 (exploratory points of a curve)


def add_path(result: dict, run: Run, target: Target, config: MeasureConfig, args, level: float | None) -> None:
    """The run's sharpness along its training path: λmax and adaptive sharpness at every level it kept
    weights at but ``level`` (its matched one, measured in full), with ``PATH_RESTARTS`` (``measure_light``),
    for the figure of sharpness against the training loss."""
    path, light = [], replace(config, restarts=min(config.restarts, PATH_RESTARTS))
    for c in sorted(run.crossings, key=lambda c: -c["level"]):
        checkpoint = os.path.join(os.path.dirname(run.checkpoint), c["file"])
        if not os.path.isfile(checkpoint) or (level is not None and math.isclose(c["level"], level)):
            continue
        folder = os.path.join(args.out, "runs", run.name, "path", f"loss_{c['level']:g}")
        at = measure_light(replace(run, checkpoint=checkpoint), target, light, folder)
        path.append({**{k: c.get(k) for k in ("level", "step", "phase")}, **at["values"]})
    result["path"] = path
