"""``landscape info`` as a function: what surface and direction files hold (grid, quantities, progress,
value ranges, identity, run records) and who wrote them, landscape or the reference code."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from datetime import datetime

from .. import checks
from ..errors import ConfigError
from ..io.atomic import HOST, pid_alive
from ..io.inspect import describe
from ..io.lock import SUFFIX
from ..terminal import printable
from .command import Result
from .params import REQUIRED, Params, option


@dataclass(frozen=True)
class InfoParams(Params):
    """``landscape info``'s parameters."""

    COMMAND = "info"
    DESCRIPTION = "What a surface or direction file holds."
    files: tuple[str, ...] = option(
        REQUIRED, "surface or direction files (HDF5), of landscape or the reference code", positional=True
    )
    json: bool = option(False, "one JSON object per file instead of text")
    runs: int = option(5, "run records to show, the latest last")

    def __post_init__(self):
        files = (self.files,) if isinstance(self.files, (str, os.PathLike)) else tuple(self.files or ())
        if not files:
            raise ConfigError("files", self.files, "one file or more")
        object.__setattr__(self, "files", tuple(os.fspath(f) for f in files))
        checks.whole("runs", self.runs, least=0)


IDENTITY_SHOWN = (
    "model",
    "model_args",
    "model_file_sha256",
    "dataset",
    "data_args",
    "train_size",
    "test_size",
    "train_subset",
    "loss_name",
    "dtype",
    "bn",
    "dir_type",
    "dir_seed",
    "xnorm",
    "xignore",
    "ynorm",
    "yignore",
    "curvature",
)


@dataclass(frozen=True)
class InfoResult(Result):
    """Each file's description, as ``landscape info --json`` prints it."""

    files: list[dict]


def _g(v) -> str:
    return (
        "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.6g}" if isinstance(v, float) else str(v)
    )


def _axis(name: str, a: dict) -> str:
    return f"{name} {a['min']:g}:{a['max']:g}:{a['points']}" + ("" if a["holds_zero"] else " (no 0: no trained model)")


def _seconds_since_epoch(stamp) -> float | None:
    try:
        return datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


def _job_alive(path: str) -> bool:
    """Whether a job holds ``path``: its lock sidecar (``io.lock``) names a live process (or one on
    another host, which cannot be checked from here)."""
    try:
        with open(path + SUFFIX) as handle:
            owner = checks.json_loads(handle.read())
    except (OSError, ValueError):
        return False
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return False
    return owner.get("host") != HOST or pid_alive(owner["pid"])


def progress(d: dict, now: float | None = None) -> dict | None:
    """Where the job that is writing surface ``d`` stands; None when its latest run has ended.

    The file records when the run started (its start record) and, in its modification time, when the
    job last marked points done; the points that run computed are those done minus the ones earlier runs
    recorded.  The rate over that span gives the estimate of the time left."""
    latest = d["runs"][-1] if d["runs"] else {}
    if not latest or "ended" in latest or d["done"] == d["points"]:
        return None
    out = {"running": _job_alive(d["path"]), "started": latest.get("started"), "to_do": d["points"] - d["done"]}
    earlier = d["runs"][:-1]
    started = _seconds_since_epoch(latest.get("started"))
    if started is None or any("points_computed" not in r for r in earlier):
        return {**out, "rate": None, "why": "an earlier run left no count of its points"}
    computed = d["done"] - sum(int(r["points_computed"]) for r in earlier)
    last_write = os.stat(d["path"]).st_mtime
    span = last_write - started
    if computed <= 0 or span <= 0:
        return {**out, "rate": None, "why": "no point of this run is done yet"}
    rate = computed / span
    now = time.time() if now is None else now
    return {
        **out,
        "computed": computed,
        "seconds": round(span, 3),
        "rate": round(rate, 3),
        "seconds_left": round(max(0.0, out["to_do"] / rate - (now - last_write)), 1),
    }


def progress_text(p: dict) -> str:
    state = "running" if p["running"] else "no job holds the file and its latest run has no end record (killed?)"
    if p["rate"] is None:
        return f"  progress  {state}, since {p['started']}; {p['to_do']:,} to do, no estimate: {p['why']}"
    left = f"about {p['seconds_left']:.0f} s left" if p["running"] else "rerun its command to finish"
    return (
        f"  progress  {state}, since {p['started']}: {p['computed']:,} points in {p['seconds']:.0f} s, "
        f"{p['rate']:.3g} points/s; {p['to_do']:,} to do, {left}"
    )


def surface_text(d: dict, runs: int) -> list[str]:
    grid = _axis("x", d["x"]) + ("" if d["y"] is None else ", " + _axis("y", d["y"]))
    share = 100.0 * d["done"] / d["points"] if d["points"] else 0.0
    lines = [
        f"{d['path']}: {d['ndim']}-D loss surface, written by {d['written_by']}"
        + (f" (schema {d['schema_version']})" if d["schema_version"] else ""),
        f"  grid      {grid}",
        f"  points    {d['done']:,} of {d['points']:,} done ({share:.1f} %), {d['points'] - d['done']:,} to do",
    ]
    if d.get("progress"):
        lines.append(progress_text(d["progress"]))
    lines.append(f"  {'quantity':<16}{'units':<10}{'min':>12}{'max':>12}{'at centre':>12}  not finite")
    for name, q in d["quantities"].items():
        lines.append(
            f"  {name:<16}{q['units']:<10}{_g(q['min']):>12}{_g(q['max']):>12}{_g(q.get('at_centre')):>12}"
            f"  {q['not_finite']}"
        )
    shown = {k: d["identity"][k] for k in IDENTITY_SHOWN if d["identity"].get(k) not in (None, "", -1)}
    if shown:
        lines.append(
            "  identity  " + ", ".join(f"{k}={str(v)[:16] if k.endswith('sha256') else v}" for k, v in shown.items())
        )
    records = d["runs"][-runs:] if runs else []
    if d["runs"]:
        lines.append(f"  runs      {len(d['runs'])} recorded" + (f", the latest {len(records)}:" if records else ""))
    for r in records:
        what = (
            f"{r.get('points_computed', '?')} points in {_g(r.get('seconds'))} s, "
            f"{r.get('ended', 'no end record: killed?')}"
            if "ended" in r or "points_computed" in r
            else "running"
            if r is d["runs"][-1] and (d.get("progress") or {}).get("running")
            else "no end record (killed, or still running)"
        )
        how = (
            f", kernel {r['kernel']}, batch {r.get('batch_size', '?')}, {r.get('points_per_pass', '?')} per pass"
            if "kernel" in r
            else ""
        )
        lines.append(
            f"    {r.get('started', '?')}  {r.get('ranks', '?')} rank(s) on {r.get('device', '?')}{how} "
            f"({r.get('host', '?')}, landscape {r.get('landscape_version', '?')}): {what}"
        )
        if r.get("command_line"):
            lines.append(f"      $ {r['command_line']}")
    return lines


def directions_text(d: dict) -> list[str]:
    lines = [f"{d['path']}: {len(d['axes'])} direction(s), written by {d['written_by']}"]
    if d["written_by"] == "landscape":
        seed = d.get("seed")
        lines.append(
            f"  model {d.get('model') or '?'}, dir_type {d.get('dir_type') or '?'}, "
            + (f"seed {seed}, " if seed is not None and seed >= 0 else "")
            + f"same_dir {d.get('same_dir')}, origin {str(d.get('origin_sha256'))[:16]}"
        )
    for a in d["axes"]:
        extra = ", ".join(f"{k} {a[k]}" for k in ("kind", "norm", "ignore", "seed", "target_file") if k in a)
        lines.append(
            f"  {a['name']}: {a['tensors']} tensors, {a['elements']:,} numbers, length {a['length']:.6g}"
            + (f"; {extra}" if extra else "")
        )
    if "cosine_xy" in d:
        lines.append(f"  cosine between x and y: {_g(d['cosine_xy'])}")
    t = d.get("trajectory")
    if t:
        lines.append(
            f"  trajectory: {t['checkpoints']} checkpoints, epochs {t['epochs'][0]} to {t['epochs'][1]} "
            f"({t['first']} … {t['last']})"
        )
        lines.append(
            f"    PC1 {100 * t['explained'][0]:.1f} %, PC2 {100 * t['explained'][1]:.1f} % of its variance "
            f"(a random walk of as many steps: {100 * t['random_walk'][0]:.0f} %, "
            f"{100 * t['random_walk'][1]:.0f} %); it spans x {t['x_span'][0]:.3g}..{t['x_span'][1]:.3g}, "
            f"y {t['y_span'][0]:.3g}..{t['y_span'][1]:.3g}"
        )
    return lines


def run(params: InfoParams | dict, argv: tuple[str, ...] = ()) -> InfoResult:
    params = InfoParams.given(params)
    described = []
    for k, path in enumerate(params.files):
        d = describe(str(path))
        if d["kind"] == "surface":
            d["progress"] = progress(d)
        described.append(json.loads(json.dumps(d, default=str)))
        if params.json:
            print(json.dumps(d, default=str))
            continue
        if k:
            print()
        lines = surface_text(d, params.runs) if d["kind"] == "surface" else directions_text(d)
        print("\n".join(printable(line) for line in lines))  # a CR or LF from the file stays inside its line
    return InfoResult(described)
