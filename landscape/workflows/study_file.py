"""What a batch-size study is: its settings (defaults, a TOML study file, the parameters given) and the
report's parameters it implies.  A study file is also a ``landscape sweep`` file."""

from __future__ import annotations

import os
from types import SimpleNamespace

from .. import checks
from ..errors import InputError, UsageError
from ..io.toml_file import table_flags, toml
from .command import check_known

DEFAULTS = {
    "out": "study_out",
    "figures": "study_out/figures",
    "name": "study",
    "jobs": 2,
    "recipes": ["sgd"],
    "batch_sizes": [16, 64, 256, 1024],
    "seeds": [0, 1, 2],
    # The demo's network and data; the recipe's lr 0.1 and step decay at every batch size, 300 epochs
    # (both ends of the batch range reach 100 % training accuracy, measured in the demo).
    "train": {"model": "digits_cnn", "dataset": "digits", "epochs": 300, "weight_decay": 5e-4},
    "report": {},
    "rescale": {},
}
QUICK = {
    "batch_sizes": [16, 256],
    "seeds": [0, 1],
    "train": {"model": "digits_cnn", "dataset": "digits", "epochs": 4, "weight_decay": 5e-4},
    "report": {
        "grid_1d": "-1:1:5",
        "grid_2d": "-1:1:5",
        "directions": 3,
        "trace_samples": 3,
        "iterations": 5,
        "restarts": 1,
    },
}
LISTS = ("recipes", "batch_sizes", "seeds")
TABLES = ("train", "report", "rescale")
TOP_KEYS = ("out", "figures", "name", "jobs", *LISTS, *TABLES)
# the parameters of the command (None: the defaults', or the config file's)
PARAMETERS = {"config": None, "out": None, "figures": None, "name": None, "jobs": None, "quick": False}

REQUIRED = ()

EXAMPLE = """\
example:
  make study                                   (= landscape study: the digits study, into study_out/)
  landscape study --config study.toml --jobs 8

study.toml (every key optional; the defaults are the digits study).  It is also a landscape sweep
file: scripts/slurm/submit_study.sh runs the same study as a job array and a report job.
  out = "study_out"
  figures = "study_out/figures"
  name = "study"
  jobs = 2
  recipes = ["sgd"]
  batch_sizes = [16, 64, 256, 1024]
  seeds = [0, 1, 2]
  [train]                      # landscape train flags, without the dashes
  model = "digits_cnn"
  dataset = "digits"
  epochs = 300
  weight_decay = 5e-4
  [report]                     # landscape report flags, without the dashes
  grid_2d = "-1:1:21"
  endpoints = ["test_error", "lambda_max", "adaptive_sharpness"]   # declared before the study: Holm-adjusted
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
    chosen = {k: (dict(v) if isinstance(v, dict) else v) for k, v in DEFAULTS.items()}
    if args.quick:
        chosen.update({k: (dict(v) if isinstance(v, dict) else v) for k, v in QUICK.items()})
    if args.config:
        for key, value in read_config(args.config).items():
            if key == "train" and "model" in value:  # another network: none of the digits settings
                chosen[key] = dict(value)
            elif key in TABLES:
                chosen[key] = {**chosen[key], **value}
            else:
                chosen[key] = value
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
        *table_flags(study["report"]),
    ]


def report_threads(study: dict) -> list[str]:
    return [] if "threads" in study["report"] else ["--threads", "1"]
