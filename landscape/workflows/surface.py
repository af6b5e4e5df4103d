"""``landscape surface`` as a function: a 1-D or 2-D loss surface into one HDF5 file, on one process or
many MPI ranks, and optionally its figures.

``SurfaceParams`` are the flags of ``landscape surface``, with the defaults of the configurations they
fill.  From Python, ``model`` may also be an ``nn.Module``, ``dataset`` a pair
``(train, test)`` of data (tensors, a ``Dataset`` or batches; ``test`` may be None) and ``loss_name`` a
callable ``loss(output, targets)`` returning the batch mean.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..data import BUILTIN as BUILTIN_DATA
from ..data import GIVEN, Data, DataConfig
from ..data.samples import as_samples
from ..directions import DIR_TYPES, IGNORES, NORMS
from ..errors import UsageError, param
from ..grid import DEFAULT_X, MAX_POINTS, Grid
from ..io.checkpoint import with_recorded
from ..io.surface_file import Surface, read
from ..io.writer import IO_MODES
from ..models import NUM_CLASSES_HELP, ModelConfig
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..plotting.figures import draw_surface_figures
from ..plotting.levels import Style2D
from ..plugins import ALLOW_RECORDED_HELP, DATA_ARGS_HELP, MODEL_ARGS_HELP
from ..surface.batchnorm import POLICIES as BN_POLICIES
from ..surface.config import RunConfig, SurfaceJob
from ..surface.direction_set import DEFAULT_DIR_TYPE, DEFAULT_IGNORE, DEFAULT_NORM, DEFAULT_SEED, DirectionConfig
from ..surface.evaluation import DTYPES, EvaluationConfig
from ..surface.job import run_surface
from ..surface.kernels import CHOICES as KERNEL_CHOICES
from .command import Result, fields_of
from .params import Params, default, int_or_auto, option
from .plots import LOG_SWITCHES

DATA = "model and data"
GRID = "grid"
DIRECTIONS = "directions"
RUN = "output and execution"
FIGURES = "figures (--plot)"
_E = EvaluationConfig


@dataclass(frozen=True, kw_only=True)
class SurfaceParams(Params):
    """``landscape surface``'s parameters.  Those a ``landscape train`` checkpoint records (model,
    num_classes, model_args, dataset, data_args) default to None: the checkpoint's own."""

    COMMAND = "surface"
    DESCRIPTION = (
        "Compute a 1-D or 2-D loss surface of a trained network along (filter-normalized) directions, on one "
        "process or many MPI ranks, into one HDF5 file."
    )
    GROUPS = (DATA, GRID, DIRECTIONS, RUN, FIGURES)
    model: str | None = option(
        None,
        "registry name (digits_mlp, digits_cnn, the paper's CIFAR zoo: vgg9, resnet20/56/110[_noshort], wrn56_2, "
        "densenet121, ...) or package.module:factory; from Python also an nn.Module",
        shown="the model a landscape train checkpoint records",
        group=DATA,
    )
    model_args: str | None = option(None, MODEL_ARGS_HELP, metavar="JSON", group=DATA)
    num_classes: int | None = option(None, NUM_CLASSES_HELP, group=DATA)
    model_file: str | None = option(None, "checkpoint of the trained model: the centre of the surface", group=DATA)
    model_file2: str | None = option(None, "second model: x direction = model2 - model (1-D interpolation)", group=DATA)
    model_file3: str | None = option(
        None, "third model: y direction = model3 - model (plane through three models)", group=DATA
    )
    pca_from: str | None = option(
        None,
        "x and y = the top two principal components of a trajectory: a training run's folder (its epoch_*.pt), a "
        "quoted glob pattern or a list file; the checkpoints' path is stored in the direction file (plot2d "
        "--trajectory draws it)",
        metavar="CHECKPOINTS",
        group=DATA,
    )
    hessian: bool = option(
        False,
        "x (and y) = the top (two) eigenvectors of the Hessian of the training loss at the model, unit norm "
        "(Lanczos in float64, on rank 0), as PyHessian and Landscaper draw them; the eigenvalues are recorded "
        "with the directions",
        group=DATA,
    )
    allow_pickle: bool = option(
        False,
        "unpickle checkpoints fully (they can run code: trusted files only); by default only tensors are read",
        group=DATA,
    )
    allow_recorded_plugins: bool = option(False, ALLOW_RECORDED_HELP, group=DATA)
    dataset: str | None = option(
        None,
        f"{', '.join(BUILTIN_DATA)} or package.module:factory; from Python also (train, test) data",
        shown=f"the one a landscape train checkpoint records, else {default(DataConfig, 'dataset')}",
        group=DATA,
    )
    data_args: str | None = option(None, DATA_ARGS_HELP, metavar="JSON", group=DATA)
    datapath: str | None = option(
        None, "folder of a built-in data set's files (cifar10, cifar100); nothing is downloaded", group=DATA
    )
    raw_data: bool = option(
        False,
        "scale images to [0, 1] without the per-channel normalization (as the reference's --raw_data)",
        group=DATA,
    )
    no_test: bool = option(False, "evaluate the training data only", group=DATA)
    train_subset: int | None = option(
        None,
        "evaluate a fixed seeded subset of N training samples; also stores the standard error of the loss "
        "(train_loss_se)",
        metavar="N",
        group=DATA,
    )
    data_split: int = option(
        default(DataConfig, "data_split"),
        "evaluate one of this many equal chunks of the training data (reference code)",
        group=DATA,
    )
    split_idx: int = option(default(DataConfig, "split_idx"), "which chunk, 0..data_split-1", group=DATA)
    batch_size: int | str = option(
        _E.batch_size,
        "evaluation batch size, or auto: from the model's shape (the whole data set where its activations fit "
        "256 MiB), measured further only for a surface of 30 s or more of forward work",
        parse=int_or_auto,
        group=DATA,
    )
    loss_name: str = option(
        _E.loss_name,
        "crossentropy, mse, or package.module:callable returning the batch mean; from Python also a callable",
        group=DATA,
    )
    bn: str | None = option(
        None,
        "BatchNorm statistics at each point: eval (as trained), states (moved by states directions), recalibrate "
        "(re-estimated from training batches)",
        choices=BN_POLICIES,
        shown="states with --dir_type states, else eval",
        group=DATA,
    )
    bn_batches: int = option(_E.bn_batches, "training batches for --bn recalibrate", group=DATA)
    points_per_pass: int | str = option(
        _E.points_per_pass,
        "grid points evaluated together in one call of the kernel, or auto (1, measured further with --batch_size "
        "for a long surface); values agree with K=1 to ~1e-7 relative",
        metavar="K",
        parse=int_or_auto,
        group=DATA,
    )
    kernel: str = option(
        _E.kernel,
        "how points are evaluated: reference (each point's forward through functional_call), compiled "
        "(torch.compile, after seconds of compiling per rank: taken when named only), or auto: the reference; "
        "values differ between kernels in the last bits",
        choices=KERNEL_CHOICES,
        group=DATA,
    )
    curvature: bool = option(
        False,
        "also the Hessian's extreme eigenvalues of the mean training loss at every point (train_eig_max, "
        "train_eig_min, train_eig_ratio = |min/max|), by Lanczos: a curvature map (one point per pass; slow: tens "
        "of Hessian-vector products per point)",
        group=DATA,
    )
    curvature_tol: float = option(
        _E.curvature_tol, "relative tolerance of those eigenvalues", shown=f"{_E.curvature_tol:g}", group=DATA
    )
    dtype: str = option(_E.dtype, "evaluation precision", choices=tuple(DTYPES), group=DATA)
    x: str = option(DEFAULT_X, "MIN:MAX:NUM of the x coefficients", group=GRID)
    y: str | None = option(None, "MIN:MAX:NUM of the y coefficients; omit for a 1-D surface", group=GRID)
    force: bool = option(False, f"allow a grid of more than {MAX_POINTS:,} points", group=GRID)
    dir_type: str | None = option(
        None,
        "weights (parameters) or states (state_dict, with BatchNorm running statistics)",
        choices=DIR_TYPES,
        shown=f"{DEFAULT_DIR_TYPE}, or the reused direction file's",
        group=DIRECTIONS,
    )
    xnorm: str | None = option(
        None, "normalization of the x direction", choices=NORMS, shown=DEFAULT_NORM, group=DIRECTIONS
    )
    xignore: str | None = option(
        None, "biasbn: zero direction for 1-D tensors", choices=IGNORES, shown=DEFAULT_IGNORE, group=DIRECTIONS
    )
    ynorm: str | None = option(
        None, "normalization of the y direction", choices=NORMS, shown="as --xnorm", group=DIRECTIONS
    )
    yignore: str | None = option(
        None, "biasbn for the y direction", choices=IGNORES, shown="as --xignore", group=DIRECTIONS
    )
    same_dir: bool = option(False, "use the x direction as the y direction too", group=DIRECTIONS)
    seed: int | None = option(None, "seed of the random directions", shown=DEFAULT_SEED, group=DIRECTIONS)
    dir_file: str | None = option(
        None,
        "direction file to reuse, or to create (default: the surface file's name with .directions.h5 in place of .h5)",
        group=DIRECTIONS,
    )
    surf_file: str | None = option(None, "surface file", shown="<model_file>.surface.h5", group=RUN)
    threads: int | None = option(
        None,
        "torch threads per rank, at most the cores it may use (default: $SLURM_CPUS_PER_TASK, else the node's "
        "cores / its ranks)",
        group=RUN,
    )
    device: str = option(default(RunConfig, "device"), DEVICE_HELP, group=RUN)
    allow_shared_gpus: bool = option(False, SHARED_GPUS_HELP, group=RUN)
    io: str = option(
        default(RunConfig, "io"),
        "how ranks write: mpio (parallel HDF5), gather (rank 0 writes), auto: mpio when h5py has MPI",
        choices=IO_MODES,
        group=RUN,
    )
    round_seconds: float = option(
        default(RunConfig, "round_seconds"),
        "target seconds between writes",
        shown=f"{default(RunConfig, 'round_seconds'):g}",
        group=RUN,
    )
    mpi: bool = option(False, "accepted for compatibility; the MPI launcher is detected", api=False, group=RUN)
    progress_seconds: float | None = option(
        None,
        "seconds between progress lines",
        metavar="S",
        shown="one line updated every second in a terminal; a line every 60 s in a file",
        group=RUN,
    )
    quiet: bool = option(False, "no progress or summary lines (errors are still printed)", group=RUN)
    plot: bool = option(False, "draw the figures when the job ends", group=FIGURES)
    vmin: float | None = option(None, "lowest contour level", group=FIGURES)
    vmax: float | None = option(None, "highest contour level", group=FIGURES)
    vlevel: float | None = option(None, "spacing of contour levels", group=FIGURES)
    log: bool | str = option(
        "auto",
        switches=(
            ("--log", True, LOG_SWITCHES.format(what="the loss, as landscape plot1d and plot2d draw it")),
            ("--linear", False, "linear scale for the loss"),
        ),
        group=FIGURES,
    )


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


def job_of(params, argv: tuple[str, ...] = ()) -> tuple[SurfaceJob, dict]:
    """The job the parameters (a ``SurfaceParams`` or a dict of those given) describe (``argv``: the
    command line, for the run record), and the objects given in place of names (the Python API)."""
    p = SurfaceParams.given(params)
    given = p.record()
    objects = {}
    if isinstance(p.model, torch.nn.Module):
        objects["model"] = p.model  # recorded as api:<module>.<type>
    if p.dataset is not None and not isinstance(p.dataset, str):
        pair = p.dataset
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
    if callable(p.loss_name) and not isinstance(p.loss_name, str):
        objects["loss"] = p.loss_name
        given.pop("loss_name")
    given["test"] = not p.no_test
    if given.get("model") is None:
        raise UsageError(
            f"{param('model')}: a model is needed (a registry name, package.module:factory or an nn.Module; "
            "a checkpoint written by landscape train records its own)"
        )
    given = {k: v for k, v in given.items() if v is not None}  # None: the configuration's default
    job = SurfaceJob(
        model=ModelConfig(**fields_of(given, ModelConfig)),
        grid=Grid.parse(p.x, p.y, p.force),
        data=DataConfig(**fields_of(given, DataConfig)),
        directions=DirectionConfig(**fields_of(given, DirectionConfig)),
        evaluation=EvaluationConfig(**fields_of(given, EvaluationConfig)),
        run=RunConfig(**fields_of(given, RunConfig), argv=tuple(argv), settings=p.record()),
    )
    if p.plot:  # figure settings are checked now, not after the surface is computed
        Style2D(p.vmin, p.vmax, p.vlevel, p.log)
    return job, objects


def run(params: SurfaceParams, argv: tuple[str, ...] = ()) -> SurfaceResult:
    """Compute (or finish) the surface ``params`` describe; every rank returns the result."""
    world = comm_module.world()
    p = SurfaceParams.given(params)
    job, objects = agree(world, job_of, p, argv)
    summary = run_surface(job, world, model=objects.get("model"), data=objects.get("data"), loss=objects.get("loss"))
    world.barrier()  # rank 0 finishes the file's run record before anyone reads it
    surface = read(summary.surf_file)
    figures = []
    if p.plot and world.rank == 0:
        figures = draw_surface_figures(summary.surf_file, vmin=p.vmin, vmax=p.vmax, vlevel=p.vlevel, log=p.log)
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
