"""Networks compared at one training loss: per arm, the level every run crossed in its last learning-rate
phase, and each run's weights kept there.

Cross-entropy curvature shrinks as the loss falls, and the rate in force sets how sharp a network gets:
two networks compared at different training losses, or one at full rate on its way down and one after
the rate decayed, compare losses and phases as much as batch sizes.  So a run trained with
``--save_at_loss`` (``train.targets``) keeps its weights where its training loss first reached each level
(to within 5 % below it), recording the step and the phase; per arm the report compares the runs at the
lowest level that every one of them crossed in the phase it ended in (``choose``), or at a level given
by hand.  A run that crossed it in another phase, or never, has no value there and is named.  A run's
values at the level are kept beside its final ones as ``<key>_matched``; the measured loss is checked
against the level (``WITHIN``).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass

MATCHED = "_matched"  # suffix of a measure's key at the matched training loss, in a run's values
WITHIN = 0.05  # a matched network's measured training loss lies within this share below the level
ROUNDING = 1e-4  # ... and at most this share above it (the same weights evaluated again)


@dataclass(frozen=True)
class Level:
    """An arm's matched training loss: the level, and why (or why there is none)."""

    level: float | None
    note: str

    def record(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Matched:
    """Where a run crossed its arm's level: the checkpoint kept there (None: not in its last phase, or
    never), with the step, the share of its update, the phase and the training loss recorded then."""

    level: float
    checkpoint: str | None
    step: int | None = None
    fraction: float = 1.0
    phase: str = ""
    train_loss: float = math.nan
    note: str = ""

    def record(self) -> dict:
        return asdict(self)


def _crossing(run, level: float) -> dict | None:
    return next((c for c in run.crossings if math.isclose(c["level"], level, rel_tol=1e-9)), None)


def choose(runs, given: float | None = None) -> Level:
    """An arm's level: ``given``, or the lowest level at which every run of ``runs`` (``report.runs.Run``)
    kept its weights in the phase it ended in; none when the runs kept none in common."""
    if given is not None:
        return Level(given, "given")
    if not runs or any(not r.crossings for r in runs):
        missing = [r.name for r in runs if not r.crossings]
        return Level(
            None, f"no weights kept at a training loss ({', '.join(missing[:3])}...: train with --save_at_loss)"
        )
    common = None
    for run in runs:
        levels = {c["level"] for c in run.crossings if c.get("phase") == run.phase}
        common = levels if common is None else common & levels
    if not common:
        return Level(None, "no level that every run crossed in the learning-rate phase it ended in")
    return Level(min(common), "the lowest level every run crossed in its last learning-rate phase")


def matched(run, level: float) -> Matched:
    """``run``'s weights kept at ``level`` (their checkpoint beside the run's final one), or why none."""
    c = _crossing(run, level)
    if c is None:
        best = min((x["train_loss"] for x in run.crossings), default=math.nan)
        why = f"it kept no weights at train loss {level:.4g}" + (
            f" (its lowest kept: {best:.4g})" if best == best else ""
        )
        return Matched(level, None, note=why)
    if run.phase and c.get("phase") != run.phase:
        why = f"it crossed {level:.4g} in phase {c.get('phase')}, not in {run.phase}, its last"
        return Matched(level, None, c["step"], phase=c.get("phase", ""), note=why)
    checkpoint = os.path.join(os.path.dirname(run.checkpoint), c["file"])
    if not os.path.isfile(checkpoint):
        return Matched(level, None, c["step"], note=f"its kept weights {checkpoint} are missing")
    return Matched(level, checkpoint, c["step"], float(c.get("fraction", 1.0)), c.get("phase", ""), c["train_loss"])


def off_level(measured: float, level: float) -> str | None:
    """Why a matched network's measured training loss is not the level to within ``WITHIN``, or None."""
    if math.isfinite(measured) and (1 - WITHIN) * level <= measured <= (1 + ROUNDING) * level:
        return None
    return f"its training loss {measured:.4g} is not within {100 * WITHIN:g} % below the matched level {level:.4g}"


def values_of(runs: list[dict], key: str, matched: bool) -> tuple[list[float], str]:
    """The runs' values of ``key`` and their basis: the ``_matched`` ones (NaN where a run has none) when
    ``matched`` and any run has one, "matched_loss"; else at the final weights, "final"."""
    if matched and any(f"{key}{MATCHED}" in r["values"] for r in runs):
        values, basis = [r["values"].get(f"{key}{MATCHED}") for r in runs], "matched_loss"
    else:
        values, basis = [r["values"].get(key) for r in runs], "final"
    return [math.nan if v is None else float(v) for v in values], basis


def has_matched(runs: list[dict]) -> bool:
    """Whether an arm's runs were measured at a matched training loss (any of them)."""
    return any(any(k.endswith(MATCHED) for k in r["values"]) for r in runs)


__all__ = ["MATCHED", "WITHIN", "Level", "Matched", "choose", "matched", "off_level", "values_of", "has_matched"]
