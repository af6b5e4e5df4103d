"""``landscape surface`` as a function: a 1-D or 2-D loss surface into one HDF5 file, on one process or
many MPI ranks, and optionally its figures.

The parameters are the flags of ``landscape surface`` (``cli.surface``), with the defaults of the
configurations they fill.  From Python, ``model`` may also be an ``nn.Module``, ``dataset`` a pair
``(train, test)`` of data (tensors, a ``Dataset`` or batches; ``test`` may be None) and ``loss_name`` a
callable ``loss(output, targets)`` returning the batch mean.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..data import GIVEN, Data, DataConfig
from ..data.samples import as_samples
from ..errors import UsageError
from ..grid import DEFAULT_X, Grid
from ..io.checkpoint import with_recorded
from ..io.surface_file import Surface, read
from ..models import ModelConfig
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..plotting.figures import draw_surface_figures
from ..plotting.levels import Style2D
from ..surface.config import RunConfig, SurfaceJob
from ..surface.direction_set import DirectionConfig
from ..surface.evaluation import EvaluationConfig
from ..surface.job import run_surface
from .command import Result, check_known, config_defaults, fields_of

CONFIGS = (ModelConfig, DataConfig, DirectionConfig, EvaluationConfig, RunConfig)
# parameters that fill no configuration field of the same name, and their defaults
OWN = {
    "x": DEFAULT_X,
    "y": None,
    "force": False,
    "no_test": False,
    "mpi": False,
    "plot": False,
    "vmin": None,
    "vmax": None,
    "vlevel": None,
    "log": False,
    "allow_recorded_plugins": False,  # a plug-in the checkpoint names, imported without being named (io.checkpoint)
}
HIDDEN = ("test", "argv")  # configuration fields no flag sets directly (no_test sets test)
DEFAULTS = {**{k: v for k, v in config_defaults(*CONFIGS).items() if k not in HIDDEN}, **OWN}
REQUIRED = ("model",)


@dataclass(frozen=True)
class SurfaceResult(Result):
    """What ``landscape surface`` did: its files, the points computed now (0: everything was already in
    the file, which was read back), how fast, the settings it ran with, the figures drawn, and the
    surface as the file holds it (``surface``, not in ``record()``)."""

    surf_file: str
    dir_file: str
    quantities: list[str]
    points: int
    computed: int
    seconds: float
    points_per_second: float
    settings: dict
    figures: list[str] = field(default_factory=list)
    surface: Surface | None = field(default=None, repr=False, compare=False)

    @property
    def read_back(self) -> bool:
        """Whether nothing was computed: the values are those an earlier run left in the file."""
        return self.computed == 0


def job_of(params: dict, argv: tuple[str, ...] = ()) -> tuple[SurfaceJob, dict]:
    """The job the parameters describe (``argv``: the command line, for the run record), and the objects
    given in place of names (the Python API)."""
    check_known(params, (*REQUIRED, *DEFAULTS), "surface")
    given = dict(params)
    objects = {}
    if isinstance(given.get("model"), torch.nn.Module):
        objects["model"] = given["model"]
        given["model"] = f"api:{type(objects['model']).__module__}.{type(objects['model']).__qualname__}"
    if "dataset" in given and not isinstance(given["dataset"], str):
        pair = given.pop("dataset")
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise UsageError(
                f"dataset: expected a name, package.module:factory or (train, test) data, got {type(pair).__name__}"
            )
        train, test = pair
        objects["data"] = Data(
            GIVEN, as_samples(train, "train data"), None if test is None else as_samples(test, "test data")
        )
        given["dataset"] = GIVEN
    given = with_recorded(given)  # model and data set from a landscape train checkpoint, where not given
    if callable(given.get("loss_name")) and not isinstance(given["loss_name"], str):
        objects["loss"] = given.pop("loss_name")
    if given.get("no_test"):
        given["test"] = False
    if given.get("model") is None:
        raise UsageError(
            "model: a model is needed (a registry name, package.module:factory or an nn.Module; "
            "a checkpoint written by landscape train records its own)"
        )
    job = SurfaceJob(
        model=ModelConfig(**fields_of(given, ModelConfig)),
        grid=Grid.parse(given.get("x", DEFAULT_X), given.get("y"), given.get("force", False)),
        data=DataConfig(**fields_of(given, DataConfig)),
        directions=DirectionConfig(**fields_of(given, DirectionConfig)),
        evaluation=EvaluationConfig(**fields_of(given, EvaluationConfig)),
        run=RunConfig(**fields_of(given, RunConfig), argv=tuple(argv)),
    )
    if given.get("plot"):  # figure settings are checked now, not after the surface is computed
        Style2D(given.get("vmin"), given.get("vmax"), given.get("vlevel"), given.get("log", False))
    return job, objects


def run(params: dict, argv: tuple[str, ...] = ()) -> SurfaceResult:
    """Compute (or finish) the surface ``params`` describe; every rank returns the result."""
    world = comm_module.world()
    job, objects = agree(world, job_of, params, argv)
    summary = run_surface(job, world, model=objects.get("model"), data=objects.get("data"), loss=objects.get("loss"))
    world.barrier()  # rank 0 finishes the file's run record before anyone reads it
    surface = read(summary.surf_file)
    figures = []
    if params.get("plot") and world.rank == 0:
        figures = draw_surface_figures(
            summary.surf_file,
            vmin=params.get("vmin"),
            vmax=params.get("vmax"),
            vlevel=params.get("vlevel"),
            log=params.get("log", False),
        )
    run_record = surface.run
    settings = {
        k: run_record.get(k)
        for k in ("kernel", "batch_size", "points_per_pass", "device", "ranks", "threads_per_rank")
        if k in run_record
    }
    return SurfaceResult(
        summary.surf_file,
        summary.dir_file,
        summary.quantities,
        job.grid.size,
        summary.points_computed,
        summary.seconds,
        summary.points_per_second,
        settings,
        [str(p) for p in figures],
        surface,
    )
