"""Does the learning rate cap the sharpness?  The plateau of λmax along training against its stability limit.

Gradient descent at rate η with heavy-ball momentum β is stable on curvature below 2(1 + β)/η
(``train.recipes.stability_limit``); full-batch gradient descent drives the top Hessian eigenvalue λmax up
until it meets that limit and then hovers there, the *edge of stability* (Cohen et al. 2021), while SGD at
small batches equilibrates below it (Jastrzębski et al. 2020).  For a run that logged λmax along training
(``landscape train --curvature_every``) at one rate (its last phase), ``plateau`` finds:

- the *peak*, the largest λmax logged in that phase, and the end of the rise, the first logged step at
  which λmax reaches ``RISE`` (90 %) of the peak;
- the *plateau*, the median of λmax from there to the end of the phase, and its *fraction* of the limit.

"The rate caps the sharpness" is said of a run only where the fraction is within ``AT_LIMIT`` (15 %) of 1;
"below the limit" where it is below 1 − ``AT_LIMIT``.  The figure draws every curve against its limit
(``plotting.study.mechanism``).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass

import numpy as np

from ..io.run_files import read_log, read_run
from ..train.recipes import stability_limit

RISE = 0.9  # the rise ends where λmax first reaches this share of its peak
AT_LIMIT = 0.15  # within this share of the limit: "at the limit"


@dataclass(frozen=True)
class Plateau:
    """One run's λmax plateau against its stability limit."""

    run: str
    batch_size: int
    lr: float
    momentum: float
    loss_name: str
    limit: float  # 2(1 + β)/η (or Nesterov's)
    peak: float
    plateau: float  # median λmax from the end of the rise to the end of the phase
    fraction: float  # plateau / limit
    rise_step: int  # where the rise ended
    last_step: int
    points: int  # λmax values in the plateau
    verdict: str  # "at the limit", "below the limit", "above the limit", or "no λmax logged"

    def record(self) -> dict:
        return asdict(self)


def judged(fraction: float) -> str:
    if not math.isfinite(fraction):
        return "no λmax logged"
    if abs(fraction - 1) <= AT_LIMIT:
        return "at the limit"
    return "below the limit" if fraction < 1 else "above the limit"


def plateau(folder: str) -> Plateau:
    """The plateau of the run in ``folder`` (its ``log.csv`` and ``run.json``)."""
    rows, record = read_log(folder), read_run(folder) or {}
    identity = record.get("identity", {})
    momentum, nesterov = float(identity.get("momentum", 0.0)), bool(identity.get("nesterov", False))
    phase = rows[-1].get("phase") if rows else None
    logged = [
        (int(r["step"]), float(r["lambda_max"]), float(r["lr"]))
        for r in rows
        if r.get("lambda_max") not in (None, "", "nan") and (phase is None or r.get("phase") == phase)
    ]
    logged = [x for x in logged if math.isfinite(x[1])]
    name = os.path.basename(os.path.normpath(folder))
    batch, loss = int(identity.get("batch_size", 0)), str(identity.get("loss_name", ""))
    if not logged:
        return Plateau(name, batch, math.nan, momentum, loss, math.nan, math.nan, math.nan, math.nan, 0, 0, 0,
                       judged(math.nan))  # fmt: skip
    lr = logged[-1][2]
    limit = stability_limit(lr, momentum, nesterov)
    values = np.array([v for _, v, _ in logged])
    peak = float(values.max())
    start = int(np.flatnonzero(values >= RISE * peak)[0])
    level = float(np.median(values[start:]))
    fraction = level / limit
    return Plateau(name, batch, lr, momentum, loss, limit, peak, level, fraction, logged[start][0], logged[-1][0],
                   len(values) - start, judged(fraction))  # fmt: skip


def sentence(table: list[Plateau]) -> str:
    """What the table supports, in words: the rate caps λmax where runs are at their limit, below it where
    they are below; each with the runs' batch size and fractions."""
    parts = []
    for verdict in ("at the limit", "below the limit", "above the limit"):
        runs = [p for p in table if p.verdict == verdict]
        if not runs:
            continue
        groups: dict[int, list[Plateau]] = {}
        for p in runs:
            groups.setdefault(p.batch_size, []).append(p)
        said = "; ".join(
            f"batch {b}: η = {', '.join(f'{x:g}' for x in sorted({p.lr for p in ps}))}, plateau "
            f"{min(p.fraction for p in ps):.0%}–{max(p.fraction for p in ps):.0%} of 2(1 + β)/η"
            for b, ps in sorted(groups.items())
        )
        parts.append(f"{verdict} ({said})")
    return "λmax plateaus " + "; ".join(parts) + "." if parts else ""


__all__ = ["Plateau", "plateau", "judged", "sentence", "RISE", "AT_LIMIT"]
