"""``landscape rescale`` as a function: a checkpoint's network with one layer's units rescaled (Dinh et
al. 2017), checked to compute the same function on the data, written as a new checkpoint that records
where it came from.  The study's rescaling control measures such networks beside the originals."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import torch

from .. import checks
from ..data import DataConfig, check_fits, load_data
from ..errors import ConfigError, InputError, param
from ..io.checkpoint import read_state_dict, save, with_recorded
from ..io.paths import output_path
from ..models import NUM_CLASSES_HELP, ModelConfig, load_model
from ..models.rescale import pair, rescale, same_function
from ..plugins import ALLOW_RECORDED_HELP, DATA_ARGS_HELP, MODEL_ARGS_HELP
from ..provenance import sha256_file, versions
from .command import Result
from .params import REQUIRED, Params, option


@dataclass(frozen=True)
class RescaleParams(Params):
    """``landscape rescale``'s parameters."""

    COMMAND = "rescale"
    DESCRIPTION = (
        "Multiply one layer's incoming weights and biases by alpha and the next layer's weights on those units by "
        "1/alpha: the same function (ReLU units), other weights. The outputs of both networks are compared on the "
        "data before the new checkpoint is written."
    )
    model_file: str = option(REQUIRED, "the checkpoint to rescale")
    alpha: float = option(REQUIRED, "the factor, a positive number")
    out: str = option(REQUIRED, "the new checkpoint (an existing file is not overwritten)")
    model: str | None = option(
        None, "registry name or package.module:factory (default: the model a landscape train checkpoint records)"
    )
    layer: str | None = option(
        None, "the layer whose units are scaled (default: the first linear or convolution layer)"
    )
    num_classes: int | None = option(None, NUM_CLASSES_HELP)
    dataset: str | None = option(
        None,
        "the data the outputs are compared on (default: the one a landscape train checkpoint records, else digits)",
    )
    datapath: str | None = option(None, "folder of the CIFAR files")
    model_args: str | None = option(None, MODEL_ARGS_HELP, metavar="JSON")  # the checkpoint's own, else none
    data_args: str | None = option(None, DATA_ARGS_HELP, metavar="JSON")
    allow_pickle: bool = option(False, "unpickle the checkpoint fully (trusted files only)")
    allow_recorded_plugins: bool = option(False, ALLOW_RECORDED_HELP)  # a plug-in the checkpoint names
    threads: int | None = option(None, "torch threads (default: torch's own choice)")

    def __post_init__(self):
        for name in ("model_file", "out"):
            object.__setattr__(self, name, os.fspath(getattr(self, name)))
        if self.threads is not None:
            checks.whole("threads", self.threads, expected="a positive number of threads")


CHECKED = 1024  # training samples on which the two networks' outputs are compared


@dataclass(frozen=True)
class RescaleResult(Result):
    out: str
    layer: str  # the layer whose units were multiplied by alpha
    following: str  # the layer whose input weights were divided by alpha
    alpha: float
    difference: float  # the largest output difference on the checked samples, relative to the outputs' scale


def run(params: RescaleParams | dict, argv: tuple[str, ...] = ()) -> RescaleResult:
    params = RescaleParams.given(params)
    recorded = with_recorded(dataclasses.asdict(params))  # model and data set from a landscape train checkpoint
    params = dataclasses.replace(params, **{k: v for k, v in recorded.items() if k in params.record()})
    if params.model is None:
        raise ConfigError("model", None, "a value (required: the checkpoint records no model)")
    if params.dataset is None:
        params = dataclasses.replace(params, dataset="digits")
    if params.threads is not None:
        torch.set_num_threads(params.threads)
    out = params.out
    if os.path.lexists(out):
        raise InputError(f"{param('out')}={out} exists: expected a new file (nothing is overwritten)")
    output_path(out, "checkpoint", "out")
    cfg = ModelConfig(
        params.model,
        num_classes=params.num_classes,
        model_file=params.model_file,
        allow_pickle=params.allow_pickle,
        model_args=params.model_args,
    )
    data = load_data(DataConfig(params.dataset, datapath=params.datapath, test=False, data_args=params.data_args))
    classes = cfg.classes(params.dataset)
    original = load_model(cfg, classes, cfg.model_file, seed=0)
    check_fits(original, data.train, params.model, params.dataset)
    state = read_state_dict(cfg.model_file, cfg.allow_pickle)
    layer, following = pair(state, params.layer)
    scaled_state = rescale(state, params.alpha, layer)
    scaled = load_model(ModelConfig(params.model, params.num_classes, model_args=cfg.model_args), classes, None, seed=0)
    scaled.load_state_dict(scaled_state)
    difference = same_function(original, scaled, data.train.inputs[:CHECKED])
    record = {
        "kind": "landscape rescaled checkpoint",
        "rescaled": {
            "from": os.path.abspath(cfg.model_file),
            "from_sha256": sha256_file(cfg.model_file),
            "layer": layer,
            "following": following,
            "alpha": float(params.alpha),
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
        f"wrote {out}: {layer}'s units times {params.alpha:g}, {following}'s inputs divided "
        f"(outputs agree to {difference:.1g} of their scale)"
    )
    return RescaleResult(out, layer, following, float(params.alpha), difference)
