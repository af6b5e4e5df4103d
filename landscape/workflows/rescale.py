"""``landscape rescale`` as a function: a checkpoint's network with one layer's units rescaled (Dinh et
al. 2017), checked to compute the same function on the data, written as a new checkpoint that records
where it came from.  The study's rescaling control measures such networks beside the originals."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from .. import checks
from ..data import DataConfig, check_fits, load_data
from ..errors import ConfigError, InputError, param
from ..io.checkpoint import read_state_dict, save, with_recorded
from ..io.paths import output_path
from ..models import ModelConfig, load_model
from ..models.rescale import pair, rescale, same_function
from ..provenance import sha256_file, versions
from .command import Result, check_known

DEFAULTS = {
    "model": None,  # the one a landscape train checkpoint records
    "num_classes": None,
    "dataset": None,  # the one a landscape train checkpoint records, else digits
    "datapath": None,
    "model_args": None,  # a plug-in factory's keyword arguments: the checkpoint's own, else none
    "data_args": None,
    "allow_recorded_plugins": False,  # a plug-in the checkpoint names, imported without being named
    "layer": None,
    "allow_pickle": False,
    "threads": None,
}
REQUIRED = ("model_file", "alpha", "out")  # model: the checkpoint's own where it records one
CHECKED = 1024  # training samples on which the two networks' outputs are compared


@dataclass(frozen=True)
class RescaleResult(Result):
    out: str
    layer: str  # the layer whose units were multiplied by alpha
    following: str  # the layer whose input weights were divided by alpha
    alpha: float
    difference: float  # the largest output difference on the checked samples, relative to the outputs' scale


def run(params: dict, argv: tuple[str, ...] = ()) -> RescaleResult:
    check_known(params, (*REQUIRED, *DEFAULTS), "rescale")
    s = {**DEFAULTS, **params}
    for name in REQUIRED:
        if s.get(name) is None:
            raise ConfigError(name, None, "a value (it is required)")
    s = with_recorded(s)  # model and data set from a landscape train checkpoint, where not given
    if s.get("model") is None:
        raise ConfigError("model", None, "a value (required: the checkpoint records no model)")
    if s["dataset"] is None:
        s["dataset"] = "digits"
    if s["threads"] is not None:
        checks.whole("threads", s["threads"], expected="a positive number of threads")
        torch.set_num_threads(s["threads"])
    out = str(s["out"])
    if os.path.lexists(out):
        raise InputError(f"{param('out')}={out} exists: expected a new file (nothing is overwritten)")
    output_path(out, "checkpoint", "out")
    cfg = ModelConfig(
        s["model"],
        num_classes=s["num_classes"],
        model_file=s["model_file"],
        allow_pickle=s["allow_pickle"],
        model_args=s["model_args"],
    )
    data = load_data(DataConfig(s["dataset"], datapath=s["datapath"], test=False, data_args=s["data_args"]))
    classes = cfg.classes(s["dataset"])
    original = load_model(cfg, classes, cfg.model_file, seed=0)
    check_fits(original, data.train, s["model"], s["dataset"])
    state = read_state_dict(cfg.model_file, cfg.allow_pickle)
    layer, following = pair(state, s["layer"])
    scaled_state = rescale(state, s["alpha"], layer)
    scaled = load_model(ModelConfig(s["model"], s["num_classes"], model_args=cfg.model_args), classes, None, seed=0)
    scaled.load_state_dict(scaled_state)
    difference = same_function(original, scaled, data.train.inputs[:CHECKED])
    record = {
        "kind": "landscape rescaled checkpoint",
        "rescaled": {
            "from": os.path.abspath(cfg.model_file),
            "from_sha256": sha256_file(cfg.model_file),
            "layer": layer,
            "following": following,
            "alpha": float(s["alpha"]),
            "difference": difference,
        },
        "command": " ".join(argv),
        "versions": versions(),
    }
    source = torch.load(cfg.model_file, map_location="cpu", weights_only=True)
    if isinstance(source, dict) and isinstance(source.get("meta"), dict):  # a landscape run: its record carries over
        record["meta"] = source["meta"]
    save(scaled, out, record, replace=False)  # whole or not at all; never over a file that appeared meanwhile
    print(
        f"wrote {out}: {layer}'s units times {s['alpha']:g}, {following}'s inputs divided "
        f"(outputs agree to {difference:.1g} of their scale)"
    )
    return RescaleResult(out, layer, following, float(s["alpha"]), difference)
