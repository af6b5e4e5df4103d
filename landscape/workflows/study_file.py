"""What a batch-size study is: its settings (defaults, a TOML study file, the parameters given) and the
report's parameters it implies.  A study file is also a ``landscape sweep`` file."""

from __future__ import annotations

import copy
import os

from .. import checks
from ..errors import UsageError, shown
from ..io.toml_file import read_toml, table_flags
from ..plugins import is_plugin

# The MNIST-1D study (Greydanus 2020): a 40-100-100-10 ReLU MLP without BatchNorm or weight decay, so
# curvature is not a function of a weight norm; heavy-ball SGD (momentum 0.9: stability limit 2(1 + β)/η),
# one rate after the warm-up (no decay: every matched network is in one phase, each run has one limit),
# cross-entropy, the weights kept where the training loss first falls to 0.3, 0.1, 0.03 and 0.01.  Two arms:
# naive (lr 0.01 at every batch, 12,000 steps: equal optimizer steps; the small batch's largest rate that
# reaches a minimum) and linear (lr 0.01 x batch/16 after 5 epochs of warm-up, trained until the training
# loss is 0.01: equal loss at the end).  The mechanism: full-batch gradient descent and SGD at batch 256
# at three rates spanning 4x, MSE on one-hot targets (the loss whose curvature does not vanish as it
# falls: Cohen et al.'s), λmax against 2(1 + β)/η.  The rescaling control: batch 16 and 1024 of the naive
# arm, seeds 0-1, a layer's units x0.25 and x4 (the next layer's weights divided), at the final and the
# matched weights.
LEVELS = [0.3, 0.1, 0.03, 0.01]
DEFAULT_STUDY = {  # the study `make study` runs
    "out": "study_out",
    "figures": "study_out/figures",
    "name": "study",
    "jobs": 2,
    "recipes": ["naive", "linear"],
    "batch_sizes": [16, 64, 256, 1024],
    "seeds": [0, 1, 2, 3, 4, 5, 6, 7],
    "train": {
        "model": "mnist1d_mlp",
        "dataset": "mnist1d",
        "momentum": 0.9,
        "nesterov": False,
        "weight_decay": 0.0,
        "milestones": [],
        "save_at_loss": LEVELS,
        "target_every": 25,
        "naive": {"lr": 0.01, "steps": 12000, "curvature_points": 24, "eval_every": 400, "save_every": 12000},
        "linear": {
            "lr": 0.01,
            "base_batch": 16,
            "warmup_epochs": 5,
            "epochs": 120,
            "stop_loss": 0.01,
            "curvature_points": 60,
            "save_every": 120,
        },
    },
    # the report: every search at its default restarts; surfaces on 21 points (21 x 21) at auto's
    # kernel and points per pass; λmax and adaptive sharpness at every kept level (sharpness against the training loss);
    # m-sharpness, the ℓ2 ball, the per-layer blocks and the noise scale skipped (the ℓ∞ box is the
    # endpoint, the noise scale no sharpness: the study's budget); no spectral density (32 networks'
    # curves overlap into a figure nobody can read)
    "report": {
        "batch_size": 1024,
        "grid_1d": "-1:1:21",
        "grid_2d": "-1:1:21",
        "skip": ["m_sharpness", "adaptive_l2_sharpness", "layers", "noise_scale"],
        "density_runs": 0,
        "sharpness_path": True,
    },
    "rescale": {"recipe": "naive", "batch_sizes": [16, 1024], "seeds": [0, 1], "alphas": [0.25, 4.0]},
    "mechanism": {
        "rates": [0.4, 0.8, 1.6],
        "batch_sizes": [256, "full"],
        "seeds": [0, 1],
        "steps": 2500,
        "curvature_every": 50,
        "loss_name": "mse",
    },
}
QUICK = {  # the same study in miniature: every step of it in a minute or two (the tests' end-to-end run)
    "recipes": ["naive"],
    "batch_sizes": [16, 256],
    "seeds": [0, 1],
    "train": {
        **DEFAULT_STUDY["train"],
        "save_at_loss": [2.0, 1.8],
        "naive": {"lr": 0.05, "steps": 200, "curvature_every": 50, "eval_every": 50, "save_every": 200},
    },
    "report": {
        "grid_1d": "-1:1:5",
        "grid_2d": "-1:1:5",
        "directions": 3,
        "trace_samples": 3,
        "iterations": 5,
        "restarts": 1,
        "skip": ["m_sharpness", "adaptive_l2_sharpness"],
        "sharpness_path": True,
    },
    "rescale": {"batch_sizes": [16], "seeds": [0], "alphas": [4.0]},
    "mechanism": {
        "rates": [0.5],
        "batch_sizes": ["full"],
        "seeds": [0],
        "steps": 60,
        "curvature_every": 20,
        "loss_name": "mse",
    },  # fmt: skip
}
LISTS = ("recipes", "batch_sizes", "seeds")
MAX_NETWORKS = 10_000  # a study of more networks is a typo (10**6 seeds), or several studies
TABLES = ("train", "report", "rescale", "mechanism")
TOP_KEYS = ("out", "figures", "name", "jobs", *LISTS, *TABLES)
RESCALE_KEYS = ("recipe", "batch_sizes", "seeds", "alphas", "layer")
MECHANISM_KEYS = ("rates", "batch_sizes", "seeds", "steps", "curvature_every", "loss_name", "momentum")

# what the study itself passes to its sweeps and its report: a table may not set them
STUDY_SETS_TRAIN = ("out", "recipes", "recipe", "batch_sizes", "batch_size", "seeds", "seed", "list", "task", "config")
STUDY_SETS_REPORT = ("manifest", "out", "figures", "name", "config")

EXAMPLE = """\
example:
  make study                                   (= landscape study: the MNIST-1D study, into study_out/)
  landscape study --config study.toml --jobs 8

study.toml (at least one key, each optional; the defaults are the MNIST-1D study).  It is also a landscape sweep
file: scripts/slurm/submit_study.sh runs the same study as a job array and a report job.  A study file is code
you run, like a script: the factories its [train] table names are imported (see "Files from others").
  out = "study_out"
  figures = "study_out/figures"
  name = "study"
  jobs = 2
  recipes = ["naive", "linear"]            # the arms
  batch_sizes = [16, 64, 256, 1024]
  seeds = [0, 1, 2, 3, 4, 5, 6, 7]
  [train]                                  # landscape train flags, without the dashes: every arm
  model = "mnist1d_mlp"
  dataset = "mnist1d"
  momentum = 0.9
  nesterov = false
  weight_decay = 0.0
  milestones = []                          # one rate after the warm-up
  save_at_loss = [0.3, 0.1, 0.03, 0.01]    # the weights kept where the training loss first falls there
  target_every = 25
  [train.naive]                            # arm A: one rate, equal optimizer steps
  lr = 0.01
  steps = 12000
  curvature_points = 24
  eval_every = 400
  save_every = 12000
  [train.linear]                           # arm B: rate x batch / base_batch, trained to train loss 0.01
  lr = 0.01
  base_batch = 16
  warmup_epochs = 5
  epochs = 120                             # the cap
  stop_loss = 0.01
  curvature_points = 60
  save_every = 120
  [report]                                 # landscape report flags, without the dashes
  batch_size = 1024
  grid_1d = "-1:1:21"
  grid_2d = "-1:1:21"
  skip = ["m_sharpness", "adaptive_l2_sharpness", "layers", "noise_scale"]
  density_runs = 0
  sharpness_path = true
  endpoints = ["test_error", "lambda_max", "adaptive_sharpness"]   # declared before the study: Holm-adjusted
  [rescale]                                # the rescaling control: these networks rescaled (Dinh et al.)
  recipe = "naive"
  batch_sizes = [16, 1024]
  seeds = [0, 1]
  alphas = [0.25, 4.0]                     # at the final and at the matched weights
  [mechanism]                              # λmax against 2(1 + β)/η at several rates
  rates = [0.4, 0.8, 1.6]
  batch_sizes = [256, "full"]              # "full": the whole training set, gradient descent
  seeds = [0, 1]
  steps = 2500
  curvature_every = 50
  loss_name = "mse"
"""


def read_config(path: str) -> dict:
    """A study file's settings, checked: the keys of ``TOP_KEYS``, tables where tables belong."""
    given = read_toml(path)
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
    for table, keys in (("train", STUDY_SETS_TRAIN), ("report", STUDY_SETS_REPORT)):
        for key in given.get(table, {}):
            if key in keys:  # the study sets it: a table's value would silently win over the command line
                raise UsageError(
                    f"--config {path}: [{table}] {key}: the study sets it (give the study's top-level out, "
                    f"figures, name, recipes, batch_sizes or seeds, or the command line's flags)"
                )
    return given


def settings(config: str | None = None, quick: bool = False, force: bool = False, **given) -> dict:
    """The study: the defaults (or quick's), then the study file ``config``, then the values ``given``
    (``out``, ``figures``, ``name``, ``jobs``: None leaves them to the file or the defaults)."""
    chosen = copy.deepcopy(DEFAULT_STUDY)
    if quick:
        chosen.update(copy.deepcopy(QUICK))
    if config:
        read = read_config(config)
        if "model" in read.get("train", {}):  # another network: none of the MNIST-1D study's settings
            chosen.update(train={}, report={}, rescale={}, mechanism={})
        for key, value in read.items():
            chosen[key] = _merged(chosen[key], value) if key in TABLES else value
        r = chosen["rescale"]
        if "rescale" not in read and r and r.get("recipe", chosen["recipes"][0]) not in chosen["recipes"]:
            chosen["rescale"] = {}  # the default control rescales a default arm, which this study lacks
    for key in ("out", "figures", "name", "jobs"):
        if given.get(key) is not None:
            chosen[key] = given[key]
    chosen["force"] = bool(force)  # the command line's alone: never a study file's
    jobs = chosen["jobs"]
    checks.whole("jobs", jobs)
    for key in LISTS:
        if not isinstance(chosen[key], list) or not chosen[key]:
            raise UsageError(f"{key}={shown(chosen[key])}: expected a non-empty list")
    _check_rescale(chosen)
    _check_mechanism(chosen)
    m = chosen.get("mechanism") or {}
    networks = len(chosen["recipes"]) * len(chosen["batch_sizes"]) * len(chosen["seeds"]) + (
        len(m["rates"]) * len(m["batch_sizes"]) * len(m["seeds"]) if m else 0
    )
    if networks > MAX_NETWORKS:
        raise UsageError(
            f"the study would train {networks:,} networks (recipes x batch_sizes x seeds, and the mechanism's "
            f"runs): expected at most {MAX_NETWORKS:,}; split it into several studies"
        )
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
    unknown = sorted(set(r) - set(RESCALE_KEYS))
    if unknown:
        raise UsageError(f"[rescale] {unknown[0]}: unknown key; expected {', '.join(RESCALE_KEYS)}")
    for alpha in r.get("alphas", [4.0]):
        checks.number("alphas", alpha, above=0, expected="positive factors ([rescale] alphas)")
    if r.get("recipe", study["recipes"][0]) not in study["recipes"]:
        raise UsageError(
            f"[rescale] recipe={r['recipe']!r}: expected one of the study's recipes {shown(study['recipes'])}"
        )
    for b in r.get("batch_sizes", [min(study["batch_sizes"])]):
        if b not in study["batch_sizes"]:
            raise UsageError(
                f"[rescale] batch_sizes: {b!r}: expected the study's batch sizes {shown(study['batch_sizes'])}"
            )
    for seed in r.get("seeds", study["seeds"]):
        if seed not in study["seeds"]:
            raise UsageError(f"[rescale] seeds: {seed!r}: expected the study's seeds {shown(study['seeds'])}")


def _check_mechanism(study: dict) -> None:
    """[mechanism]: the rates, batch sizes ("full": gradient descent) and seeds of λmax against its limit."""
    m = study.get("mechanism") or {}
    if not m:
        return
    unknown = sorted(set(m) - set(MECHANISM_KEYS))
    if unknown:
        raise UsageError(f"[mechanism] {unknown[0]}: unknown key; expected {', '.join(MECHANISM_KEYS)}")
    for key in ("rates", "batch_sizes", "seeds"):
        if not isinstance(m.get(key), list) or not m[key]:
            raise UsageError(f"[mechanism] {key}={shown(m.get(key))}: expected a non-empty list")
    for rate in m["rates"]:
        checks.number("rates", rate, above=0, expected="positive learning rates ([mechanism] rates)")
    for b in m["batch_sizes"]:
        if b != "full":
            checks.whole("batch_sizes", b, expected='whole batch sizes or "full" ([mechanism] batch_sizes)')
    for seed in m["seeds"]:
        checks.whole("seeds", seed, least=0, expected="whole seeds >= 0 ([mechanism] seeds)")
    checks.whole("steps", m.get("steps", 1), expected="a whole number of steps ([mechanism] steps)")
    checks.whole("curvature_every", m.get("curvature_every", 1), expected="steps between λmax values")


def study_file(path: str) -> dict:
    """The study a file describes (the defaults, then the file)."""
    return settings(config=path)


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
        *(["--force"] if study.get("force") else []),
    ]


def _named_plugins(study: dict) -> dict:
    """The study file's model and data set, named to the report when they are plug-ins: the report imports
    a factory its runs' records name only when the user names it too, and the study file is the user's."""
    train = study["train"]
    return {key: train[key] for key in ("model", "dataset") if is_plugin(str(train.get(key, "")))}


def report_threads(study: dict) -> list[str]:
    return [] if "threads" in study["report"] else ["--threads", "1"]
