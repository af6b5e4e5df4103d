"""What a batch-size study is: its settings (defaults, a TOML study file, the parameters given) and the
report's parameters it implies.  A study file is also a ``landscape sweep`` file."""

from __future__ import annotations

import copy
import os
from types import SimpleNamespace

from .. import checks
from ..errors import InputError, UsageError
from ..io.toml_file import table_flags, toml
from ..plugins import is_plugin
from .command import check_known

# The MNIST-1D study (Greydanus 2020): a 40-100-100-10 ReLU MLP without BatchNorm or weight decay, so
# curvature is not a function of a weight norm; heavy-ball SGD (momentum 0.9, stability limit
# 2(1 + β)/η), the rate x0.1 at 50 % and 75 % of the budget, λmax logged along training.  Two arms:
# naive (lr 0.05 at every batch, 6,000 steps at every batch: equal optimizer steps) and linear (lr
# 0.01 x batch/16 after 5 epochs of warm-up, 60 epochs at every batch: Goyal et al. 2017; about 100
# λmax values along each run, whatever its steps), and the
# rescaling control (arm A's batch-16 networks with their first hidden layer x4, the next / 4).
DEFAULTS = {
    "out": "study_out",
    "figures": "study_out/figures",
    "name": "study",
    "jobs": 2,
    "recipes": ["naive", "linear"],
    "batch_sizes": [16, 64, 256, 1024],
    "seeds": [0, 1, 2, 3, 4],
    "train": {
        "model": "mnist1d_mlp",
        "dataset": "mnist1d",
        "momentum": 0.9,
        "nesterov": False,
        "weight_decay": 0.0,
        "naive": {"lr": 0.05, "steps": 6000, "curvature_every": 100},
        "linear": {"lr": 0.01, "base_batch": 16, "warmup_epochs": 5, "epochs": 60, "curvature_points": 100},
    },
    # the report's searches with 3 seeded starts besides δ = 0 (its default 9), its surfaces through the
    # unrolled kernel, 32 points a pass, batches of 1,024: the study within its 30 minutes on 2 cores
    "report": {"restarts": 3, "batch_size": 1024, "kernel": "unrolled", "points_per_pass": 32},
    "rescale": {"recipe": "naive", "batch_size": 16, "alpha": 4.0},
}
QUICK = {  # the same study in miniature: every step of it in a minute or two (the tests' end-to-end run)
    "recipes": ["naive"],
    "batch_sizes": [16, 256],
    "seeds": [0, 1],
    "train": {**DEFAULTS["train"], "naive": {"lr": 0.05, "steps": 200, "curvature_every": 50}},
    "report": {
        "grid_1d": "-1:1:5",
        "grid_2d": "-1:1:5",
        "directions": 3,
        "trace_samples": 3,
        "iterations": 5,
        "restarts": 1,
    },
    "rescale": {},
}
LISTS = ("recipes", "batch_sizes", "seeds")
TABLES = ("train", "report", "rescale")
TOP_KEYS = ("out", "figures", "name", "jobs", *LISTS, *TABLES)
# the parameters of the command (None: the defaults', or the config file's)
PARAMETERS = {"config": None, "out": None, "figures": None, "name": None, "jobs": None, "quick": False}

REQUIRED = ()

EXAMPLE = """\
example:
  make study                                   (= landscape study: the MNIST-1D study, into study_out/)
  landscape study --config study.toml --jobs 8

study.toml (at least one key, each optional; the defaults are the MNIST-1D study).  It is also a landscape sweep
file: scripts/slurm/submit_study.sh runs the same study as a job array and a report job.
  out = "study_out"
  figures = "study_out/figures"
  name = "study"
  jobs = 2
  recipes = ["naive", "linear"]            # the arms
  batch_sizes = [16, 64, 256, 1024]
  seeds = [0, 1, 2, 3, 4]
  [train]                                  # landscape train flags, without the dashes: every arm
  model = "mnist1d_mlp"
  dataset = "mnist1d"
  momentum = 0.9
  nesterov = false
  weight_decay = 0.0
  [train.naive]                            # arm A: one rate, equal optimizer steps
  lr = 0.05
  steps = 6000
  curvature_every = 100
  [train.linear]                           # arm B: rate x batch / base_batch, equal epochs
  lr = 0.01
  base_batch = 16
  warmup_epochs = 5
  epochs = 60
  curvature_points = 100                   # every 150 steps at batch 16, every 2 at batch 1024
  [report]                                 # landscape report flags, without the dashes
  restarts = 3
  batch_size = 1024
  kernel = "unrolled"
  points_per_pass = 32
  endpoints = ["test_error", "lambda_max", "adaptive_sharpness"]   # declared before the study: Holm-adjusted
  [rescale]                                # the rescaling control: these networks rescaled (Dinh et al.)
  recipe = "naive"
  batch_size = 16
  alpha = 4.0
"""


def read_config(path: str) -> dict:
    """A study file's settings, checked: the keys of ``TOP_KEYS``, tables where tables belong."""
    tomllib = toml()
    try:
        with open(path, "rb") as handle:
            given = tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(f"--config {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"--config {path} cannot be read as TOML ({exc})") from None
    if not given:  # most likely the wrong file, or one not yet written: never the whole default study unasked
        raise UsageError(
            f"--config {path} holds no setting; expected one or more of the keys {', '.join(TOP_KEYS)} "
            "(no --config runs the default study)"
        )
    unknown = sorted(set(given) - set(TOP_KEYS))
    if unknown:
        raise UsageError(f"--config {path}: unknown key {unknown[0]!r}; expected {', '.join(TOP_KEYS)}")
    for key in TABLES:
        if key in given and not isinstance(given[key], dict):
            raise UsageError(f"--config {path}: {key} must be a table ([{key}])")
    return given


def settings(params: dict) -> dict:
    """The study: the defaults (or quick's), then the config file, then the parameters given."""
    check_known(params, PARAMETERS, "study")
    args = SimpleNamespace(**{**PARAMETERS, **params})
    chosen = copy.deepcopy(DEFAULTS)
    if args.quick:
        chosen.update(copy.deepcopy(QUICK))
    if args.config:
        given = read_config(args.config)
        if "model" in given.get("train", {}):  # another network: none of the MNIST-1D study's settings
            chosen.update(train={}, report={}, rescale={})
        for key, value in given.items():
            chosen[key] = _merged(chosen[key], value) if key in TABLES else value
        r = chosen["rescale"]
        if "rescale" not in given and r and r["recipe"] not in chosen["recipes"]:
            chosen["rescale"] = {}  # the default control rescales a default arm, which this study lacks
    for key in ("out", "figures", "name", "jobs"):
        if getattr(args, key) is not None:
            chosen[key] = getattr(args, key)
    jobs = chosen["jobs"]
    checks.whole("jobs", jobs)
    _check_rescale(chosen)
    for key in LISTS:
        if not isinstance(chosen[key], list) or not chosen[key]:
            raise UsageError(f"{key}={chosen[key]!r}: expected a non-empty list")
    return chosen


def _merged(table: dict, given: dict) -> dict:
    """A study file's table over the default one; a sub-table ([train.naive]) over the default's own."""
    out = dict(table)
    for key, value in given.items():
        out[key] = {**out[key], **value} if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _check_rescale(study: dict) -> None:
    """[rescale]: which runs the rescaling control transforms, and by how much."""
    r = study.get("rescale") or {}
    if not r:
        return
    unknown = sorted(set(r) - {"recipe", "batch_size", "alpha", "layer"})
    if unknown:
        raise UsageError(f"[rescale] {unknown[0]}: unknown key; expected recipe, batch_size, alpha, layer")
    checks.number("alpha", r.get("alpha"), above=0, expected="a positive factor ([rescale] alpha)")
    if r.get("recipe", study["recipes"][0]) not in study["recipes"]:
        raise UsageError(f"[rescale] recipe={r['recipe']!r}: expected one of the study's recipes {study['recipes']}")
    if r.get("batch_size", min(study["batch_sizes"])) not in study["batch_sizes"]:
        raise UsageError(
            f"[rescale] batch_size={r['batch_size']!r}: expected one of the study's batch sizes {study['batch_sizes']}"
        )


def study_file(path: str) -> dict:
    """The study a file describes (the defaults, then the file)."""
    return settings({"config": path})


def report_params(study: dict) -> dict:
    """``landscape report``'s parameters for the study: its manifest, folders, name and [report] table."""
    return {
        "manifest": os.path.join(study["out"], "manifest.json"),
        "out": os.path.join(study["out"], "report"),
        "figures": study["figures"],
        "name": study["name"],
        **_named_plugins(study),
        **study["report"],
    }


def report_flags(study: dict) -> list[str]:
    """``landscape report``'s arguments for the study: its manifest, folders, name and [report] table."""
    return [
        os.path.join(study["out"], "manifest.json"),
        "--out",
        os.path.join(study["out"], "report"),
        "--figures",
        study["figures"],
        "--name",
        study["name"],
        *table_flags({**_named_plugins(study), **study["report"]}),
    ]


def _named_plugins(study: dict) -> dict:
    """The study file's model and data set, named to the report when they are plug-ins: the report imports
    a factory its runs' records name only when the user names it too, and the study file is the user's."""
    train = study["train"]
    return {key: train[key] for key in ("model", "dataset") if is_plugin(str(train.get(key, "")))}


def report_threads(study: dict) -> list[str]:
    return [] if "threads" in study["report"] else ["--threads", "1"]
