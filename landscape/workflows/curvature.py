"""``landscape curvature`` as a function: the Hessian's extreme eigenvalues, trace, spectral density and
sharpness of one trained network, the ranks sharing its data; one JSON file with every number and the
settings that produced it, and the density's figure.  One job per output: rank 0 holds ``<out>.lock``
(``io.lock``, as ``surface`` and ``train`` do), so a second job on the same file is refused, its holder named.

``sharded_hessian`` is how the ranks share one network's data: each holds a contiguous shard and a
product sums over them (one all-reduce); the math in ``curvature`` knows nothing of ranks.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, replace

import torch

from .. import checks
from ..curvature import Hessian
from ..curvature import sharpness as measures
from ..curvature.hessian import free_memory
from ..curvature.suite import SuiteConfig, measure
from ..data import BUILTIN as BUILTIN_DATA
from ..data import DataConfig, check_fits, load_data, made_once
from ..data.samples import Samples, as_samples
from ..errors import ConfigError, Stopped, param
from ..io.checkpoint import with_recorded
from ..io.lock import SurfaceLock
from ..io.outputs import replaceable
from ..io.paths import output_path
from ..losses import Loss, check_labels
from ..models import NUM_CLASSES_HELP, ModelConfig, load_model
from ..parallel import comm as comm_module
from ..parallel import devices
from ..parallel.comm import agree, same_everywhere, threads_per_rank
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..parallel.partition import shard, shard_size
from ..plugins import ALLOW_RECORDED_HELP, DATA_ARGS_HELP, MODEL_ARGS_HELP
from ..provenance import command_line, sha256_file, versions
from .command import Result
from .curvature_output import CITATIONS, Ledger, between, products_planned, recorded, write
from .curvature_output import lines as ledger_lines
from .params import REQUIRED, option
from .sharpness_params import GROUP, SharpnessParams

WHICH = ("top", "bottom", "both")
SHARPNESS = measures.MEASURES


RECORDED = ("model", "num_classes", "model_args", "dataset", "data_args")  # a train checkpoint's own
DATA = "model and data"
MEASURES = "measures"
RUN = "output and execution"
_S = SuiteConfig  # the suite's defaults (curvature.suite): the API's and the scorecard's too


@dataclass(frozen=True, kw_only=True)
class CurvatureParams(SharpnessParams):
    """``landscape curvature``'s parameters."""

    COMMAND = "curvature"
    GROUPS = (DATA, MEASURES, GROUP, RUN)
    DESCRIPTION = (
        "Curvature of a trained network's mean training loss: top and bottom Hessian eigenvalues (Lanczos), "
        "trace (Hutchinson), spectral density (stochastic Lanczos quadrature), sharpness."
    )
    model: str | None = option(
        None, "registry name or package.module:factory", shown="the model a landscape train checkpoint records",
        group=DATA,
    )  # fmt: skip
    model_file: str = option(REQUIRED, "checkpoint of the trained model", group=DATA)
    num_classes: int | None = option(None, NUM_CLASSES_HELP, group=DATA)
    dataset: str | None = option(
        None,
        f"{', '.join(BUILTIN_DATA)} or package.module:factory",
        shown="the one a landscape train checkpoint records, else digits",
        group=DATA,
    )
    datapath: str | None = option(None, "folder of the CIFAR files", group=DATA)
    model_args: str | None = option(None, MODEL_ARGS_HELP, metavar="JSON", group=DATA)
    data_args: str | None = option(None, DATA_ARGS_HELP, metavar="JSON", group=DATA)
    allow_recorded_plugins: bool = option(False, ALLOW_RECORDED_HELP, group=DATA)
    train_subset: int | None = option(None, "a fixed seeded subset of N training samples", metavar="N", group=DATA)
    loss_name: str = option("crossentropy", "crossentropy, mse or package.module:callable", group=DATA)
    k: int = option(_S.k, "eigenvalues at each end", group=MEASURES)
    which: str = option(
        _S.which,
        "which end of the spectrum: top (the largest), bottom (the most negative: its eigenvalues sit in the bulk "
        "near 0, so Lanczos often needs many times the products) or both",
        choices=WHICH,
        group=MEASURES,
    )
    tol: float = option(_S.tol, "Lanczos relative tolerance", group=MEASURES)
    trace: int = option(
        0,
        "Hutchinson's trace with this many Rademacher vectors (with --trace_se: at most)",
        metavar="SAMPLES",
        shown="none",
        group=MEASURES,
    )
    trace_se: float | None = option(
        None,
        "stop the trace once its standard error is at most REL x |trace| (after 10 vectors)",
        metavar="REL",
        group=MEASURES,
    )
    layers: bool = option(
        False,
        "each layer's block of the Hessian (a module's own parameters, the rest fixed): its λmax and trace, from "
        "--layer_samples shared Rademacher vectors",
        group=MEASURES,
    )
    layer_samples: int = option(_S.layer_samples, "Hutchinson vectors of the per-layer traces", group=MEASURES)
    relative_flatness: int = option(
        0,
        "relative flatness (Petzka et al. 2021): Σ over parameter tensors W of Σ ⟨W_s, W_s'⟩ Tr H_ss', unchanged by "
        "rescaling the layers, from this many samples",
        metavar="SAMPLES",
        shown="none",
        group=MEASURES,
    )
    fisher_rao: bool = option(
        False,
        "the Fisher–Rao norm (Liang et al. 2019), √E⟨θ, ∇ℓ⟩² over the model's own labels (and the data's)",
        group=MEASURES,
    )
    noise_scale: bool = option(
        False,
        "the gradient noise scale B_simple = tr Σ / ‖G‖² (McCandlish et al. 2018) from every sample's gradient",
        group=MEASURES,
    )
    density: bool = option(False, "the spectral density by SLQ, and its figure", group=MEASURES)
    density_steps: int = option(_S.density_steps, "Lanczos steps per SLQ run", group=MEASURES)
    density_runs: int = option(_S.density_runs, "SLQ runs", group=MEASURES)
    sharpness: tuple[str, ...] = option(
        (), "sharpness measures to compute, each defined in the manual", nargs="*", choices=SHARPNESS, shown="none",
        group=MEASURES,
    )  # fmt: skip
    dtype: str = option(
        "float64",
        "precision of the products, recorded in the output; float32 is faster and enough for the top eigenvalue and "
        "the trace, not for eigenvalues near zero or the sharpness measures",
        choices=("float32", "float64"),
        group=RUN,
    )
    batch_size: int = option(1024, "samples per batch of a product", group=RUN)
    seed: int = option(_S.seed, "start vectors, trace vectors, directions", group=RUN)
    threads: int | None = option(None, "torch threads per rank (default: the node's cores / its ranks)", group=RUN)
    device: str = option("auto", DEVICE_HELP, group=RUN)
    allow_shared_gpus: bool = option(False, SHARED_GPUS_HELP, group=RUN)
    out: str = option(REQUIRED, "the JSON file to write (the density figure beside it)", group=RUN)
    force: bool = option(
        False,
        "write --out over an existing checkpoint, HDF5 file, training log, manifest or run record (refused "
        "otherwise; never over the command's own input)",
        group=RUN,
    )

    def __post_init__(self):
        for name in ("k", "density_steps", "density_runs", "batch_size"):
            checks.whole(name, getattr(self, name))
        checks.whole("layer_samples", self.layer_samples, least=2, expected="at least 2 vectors")
        devices.check_spec(self.device)
        if self.relative_flatness != 0:
            checks.whole(
                "relative_flatness", self.relative_flatness, least=2, expected="0 (none) or at least 2 samples"
            )
        if self.trace != 0:
            checks.whole("trace", self.trace, least=2, expected="0 (none) or at least 2 vectors")
        checks.number("tol", self.tol, above=0)
        if self.trace_se is not None:
            checks.number("trace_se", self.trace_se, above=0)
        if self.threads is not None:
            checks.whole("threads", self.threads, expected="a positive number of threads")
        if self.which not in WHICH:
            raise ConfigError("which", self.which, f"one of {', '.join(WHICH)}")
        if isinstance(self.sharpness, str):
            object.__setattr__(self, "sharpness", (self.sharpness,))
        object.__setattr__(self, "sharpness", tuple(self.sharpness))
        unknown = [m for m in self.sharpness if m not in SHARPNESS]
        if unknown:
            raise ConfigError("sharpness", unknown[0], f"measures among {', '.join(SHARPNESS)}")
        self.sharpness_config(self.seed)  # the measures' own checks
        for name, users in measures.USED_BY.items():  # a setting of a measure not asked for is a mistake
            if self.explicit(name) and not set(users) & set(self.sharpness):
                raise ConfigError(
                    name, getattr(self, name), f"{param('sharpness')} with {' or '.join(users)} (it sets only those)"
                )
        for name, needs in (("trace_se", "trace"), ("layer_samples", "layers"), ("density_steps", "density"),
                            ("density_runs", "density")):  # fmt: skip
            if self.explicit(name) and getattr(self, name) is not None and not getattr(self, needs):
                raise ConfigError(name, getattr(self, name), f"{param(needs)} as well (it sets only that measure)")
        if self.dtype not in ("float32", "float64"):
            raise ConfigError("dtype", self.dtype, "float32 or float64")


@dataclass(frozen=True)
class CurvatureResult(Result):
    """What ``landscape curvature`` measured (``measures``: the JSON file's contents) and its files."""

    out: str
    measures: CurvatureParams
    figures: list[str]


def sharded_hessian(model, data, loss, batch_size: int, dtype: str, device: str) -> Hessian:
    """The Hessian of ``model``'s mean ``loss`` over all of ``data``, this rank holding a contiguous
    shard of it and the products summed over the ranks.  The ranks of one node share its memory: each
    keeps gradient graphs in its share of half the memory free."""
    world = comm_module.world()
    samples = as_samples(data, "data")
    mine = shard(len(samples), world.rank, world.size)
    return Hessian(
        model,
        Samples(samples.inputs[mine], samples.targets[mine]),
        Loss(loss),
        batch_size=batch_size,
        dtype=dtype,
        device=device,
        count=len(samples),
        reduce=world.sum_ if world.size > 1 else None,
        graph_budget=free_memory(device) // (2 * world.local_size),
    )


def settings_of(params) -> CurvatureParams:
    """The parameters (a ``CurvatureParams`` or a dict of those given) with the model and data set a
    ``landscape train`` checkpoint records where not given, and the output checked, before any product."""
    p = CurvatureParams.given(params)
    asked = {f: getattr(p, f) for f in (*RECORDED, "model_file", "allow_recorded_plugins")}
    recorded = with_recorded(asked)
    p = replace(p, **{f: recorded.get(f) for f in RECORDED})
    if p.model is None:
        raise ConfigError("model", None, "a value (required: the checkpoint records no model)")
    if p.dataset is None:
        p = replace(p, dataset="digits")
    output_path(p.out, "JSON file", "out")  # checked before hours of products, not after
    replaceable(p.out, "out", {"model_file": p.model_file, "datapath": p.datapath}, p.force)
    return p


def _planned(s: CurvatureParams) -> list[str]:
    """The measures asked for, in the order they are made (``curvature.suite``'s names)."""
    named = [
        ("eigenvalues", True),
        ("trace", s.trace),
        ("density", s.density),
        ("layers", s.layers),
        ("relative_flatness", s.relative_flatness),
        ("fisher_rao", s.fisher_rao),
        ("noise_scale", s.noise_scale),
    ]
    return [name for name, asked in named if asked] + list(s.sharpness)


def _suite(s: CurvatureParams) -> SuiteConfig:
    """The suite's settings from the command's: ``--trace N`` and ``--relative_flatness N`` count samples."""
    return SuiteConfig(
        k=s.k,
        which=s.which,
        tol=s.tol,
        trace_samples=s.trace or SuiteConfig.trace_samples,
        trace_se=s.trace_se,
        density_steps=s.density_steps,
        density_runs=s.density_runs,
        layer_samples=s.layer_samples,
        flatness_samples=s.relative_flatness or SuiteConfig.flatness_samples,
        sharpness=s.sharpness_config(s.seed),
        seed=s.seed,
    )


def run(params: CurvatureParams, argv: tuple[str, ...] = ()) -> CurvatureResult:
    with ExitStack() as held:  # rank 0 holds the output's lock (``<out>.lock``) until the file is written
        return _run(params, argv, held)


def _run(params: CurvatureParams, argv: tuple[str, ...], held: ExitStack) -> CurvatureResult:
    world = comm_module.world()
    say = print if world.rank == 0 else (lambda *_: None)

    def setup():
        s = settings_of(params)
        if world.rank == 0:  # one job per output, as for surface and train: a second one is refused
            command = command_line(list(argv)) if argv else ""
            held.enter_context(SurfaceLock(s.out, command, what="curvature file", field="out", doing="being measured"))
        torch.set_num_threads(threads_per_rank(world, s.threads).count)
        data_cfg = DataConfig(
            dataset=s.dataset,
            datapath=s.datapath,
            train_subset=s.train_subset,
            test=False,
            data_args=s.data_args,
        )
        return s, data_cfg

    def loaded(s, data_cfg, made):
        model_cfg = ModelConfig(s.model, num_classes=s.num_classes, model_file=s.model_file, model_args=s.model_args)
        data = load_data(data_cfg, made)
        largest_shard = shard_size(len(data.train), world.size)
        if "m_sharpness" in s.sharpness and s.m > largest_shard:  # before any product, not after
            raise ConfigError(
                "m",
                s.m,
                f"at most the {largest_shard} training samples on each of the {world.size} rank(s)",
                literal=True,
            )
        model = load_model(model_cfg, model_cfg.classes(s.dataset), s.model_file, seed=0)
        output = check_fits(model, data.train, s.model, s.dataset)
        if data.train.is_classification:  # labels the outputs have scores for (a built-in loss)
            check_labels(s.loss_name, output, int(data.train.targets.min()), int(data.train.targets.max()))
        return model, data

    s, data_cfg = agree(world, setup)
    agree(world, same_everywhere, world, "the measurement", s)  # an MPMD launch may give the ranks other flags
    made = made_once(world, data_cfg)  # a plug-in's generated data set: made once, sent to every rank
    model, data = agree(world, lambda: loaded(s, data_cfg, made))
    device = agree(world, devices.for_rank, s.device, world, s.allow_shared_gpus)
    hessian = sharded_hessian(
        model, (data.train.inputs, data.train.targets), s.loss_name, s.batch_size, s.dtype, device
    )  # every measure below uses it; each counts its own products
    if s.k >= hessian.dim:
        raise ConfigError("k", s.k, f"fewer eigenvalues than the model's {hessian.dim:,} trainable parameters")
    loss, gradient = hessian.loss_and_gradient()
    report = {
        "model": s.model,
        "model_file": s.model_file,
        "checkpoint_sha256": sha256_file(s.model_file),
        "dataset": s.dataset,
        "samples": len(data.train),
        "parameters": hessian.dim,
        "dtype": s.dtype,
        "ranks": world.size,
        **devices.record(device),
        "loss": loss,
        "gradient_norm": float((gradient**2).sum() ** 0.5),
        "settings": s.record(),
        "command": command_line(list(argv)) if argv else "",
        "versions": versions(),
        "citations": CITATIONS,
    }
    say(
        f"{s.model} on {len(data.train)} {s.dataset} samples, {hessian.dim:,} parameters: mean loss "
        f"{loss:.6g}, gradient norm {report['gradient_norm']:.3g}"
    )
    planned = _planned(s)
    ledger = Ledger(hessian, products_planned(s, planned, hessian), say)
    next_measure = ledger.wrap(between(world, planned, s.out))
    results: CurvatureParams = {}

    def said(name: str, result) -> None:  # each measure's lines as soon as it is made
        for line in ledger_lines(name, result, s):
            say(line)

    try:
        measure(hessian, planned, _suite(s), before=lambda name: next_measure(), after=said, into=results)
    except Stopped:  # a stop signal between measures: the ones made are kept, the file says which are missing
        if results:
            write(s, world, say, recorded(report, results, s), results, planned)
        raise
    ledger.close()
    figures = write(s, world, say, recorded(report, results, s), results, planned)
    return CurvatureResult(s.out, json.loads(json.dumps(report, default=float)), figures)
