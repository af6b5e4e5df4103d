"""``landscape surface`` (alias ``plot_surface``): compute a 1-D or 2-D loss surface.

Flags follow the reference implementation of Li et al. (2018) so its users feel at home.  Each flag
is a parameter of ``workflows.surface`` (one field of one configuration, whose default lives there);
this module only parses them.  Under ``mpiexec``/``srun`` the ranks share the points; without a
launcher the same code runs on one process.
"""

from __future__ import annotations

import argparse
import textwrap

from ..data import BUILTIN as BUILTIN_DATA
from ..data import DataConfig
from ..directions import DIR_TYPES, IGNORES, NORMS
from ..errors import exit_codes
from ..grid import DEFAULT_X, MAX_POINTS
from ..io.writer import IO_MODES
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..plugins import ALLOW_RECORDED_HELP, DATA_ARGS_HELP, MODEL_ARGS_HELP
from ..surface.batchnorm import POLICIES as BN_POLICIES
from ..surface.config import RunConfig
from ..surface.direction_set import DEFAULT_DIR_TYPE, DEFAULT_IGNORE, DEFAULT_NORM, DEFAULT_SEED
from ..surface.evaluation import DTYPES, EvaluationConfig
from ..surface.kernels import CHOICES as KERNEL_CHOICES
from ..workflows import surface as workflow
from . import boundary

EXAMPLES = """\
examples:
  # 2-D filter-normalized surface of the demo CNN, 2 ranks, figures at the end
  mpiexec -n 2 landscape surface --model digits_cnn --model_file demo_out/cnn_bs16/final.pt \\
      --x=-1:1:51 --y=-1:1:51 --xnorm filter --xignore biasbn --plot

  # 1-D linear interpolation between two checkpoints, BatchNorm statistics too
  landscape surface --model digits_cnn --model_file a.pt --model_file2 b.pt \\
      --x=-0.5:1.5:41 --dir_type states

  # your own model and data: factory() returns an nn.Module / (train, test)
  srun landscape surface --model mypkg.nets:make_net --model_file net.pt \\
      --dataset mypkg.data:load --x=-1:1:21 --y=-1:1:21 --surf_file net.h5

plot_surface is the same program under the reference code's name.  Rerunning the
same command after an interruption computes only the missing points.  Under srun,
add --mpi=pmi2 (or pmix) where the site's default plugin is not the one mpi4py's MPI
speaks.
""" + "\n".join(textwrap.wrap(exit_codes(), 88))


def int_or_auto(text: str):
    """A flag that takes a whole number or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid value: {text!r} (expected a positive whole number or auto)"
        ) from None


def _default(cls, name: str):
    return cls.__dataclass_fields__[name].default


def build_parser(prog: str = "landscape surface") -> argparse.ArgumentParser:
    """Every flag defaults to "not given" (SUPPRESS): the configurations hold the defaults."""
    p = boundary.ArgumentParser(
        prog=prog,
        argument_default=argparse.SUPPRESS,
        epilog=EXAMPLES,
        description="Compute a 1-D or 2-D loss surface of a trained network along "
        "(filter-normalized) directions, on one process or many MPI ranks, "
        "into one HDF5 file.",
    )
    g = p.add_argument_group("model and data")
    g.add_argument(
        "--model",
        help="registry name (digits_mlp, digits_cnn, the paper's CIFAR zoo: "
        "vgg9, resnet20/56/110[_noshort], wrn56_2, densenet121, ...) or package.module:factory "
        "(default: the model a landscape train checkpoint records)",
    )
    g.add_argument("--model_args", metavar="JSON", help=MODEL_ARGS_HELP)
    g.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    g.add_argument("--model_file", help="checkpoint of the trained model: the centre of the surface")
    g.add_argument("--model_file2", help="second model: x direction = model2 - model (1-D interpolation)")
    g.add_argument("--model_file3", help="third model: y direction = model3 - model (plane through three models)")
    g.add_argument(
        "--pca_from",
        metavar="CHECKPOINTS",
        help="x and y = the top two principal components of a "
        "trajectory: a training run's folder (its epoch_*.pt), a quoted glob pattern or a list file; "
        "the checkpoints' path is stored in the direction file (plot2d --trajectory draws it)",
    )
    g.add_argument(
        "--hessian",
        action="store_true",
        help="x (and y) = the top (two) eigenvectors of the Hessian of the training loss at the model, unit "
        "norm (Lanczos in float64, on rank 0), as PyHessian and Landscaper draw them; the eigenvalues are "
        "recorded with the directions",
    )
    g.add_argument(
        "--allow_pickle",
        action="store_true",
        help="unpickle checkpoints fully (they can run code: trusted files only); by default only tensors are read",
    )
    g.add_argument("--allow_recorded_plugins", action="store_true", help=ALLOW_RECORDED_HELP)
    g.add_argument(
        "--dataset",
        help=f"{', '.join(BUILTIN_DATA)} or package.module:factory (default: {_default(DataConfig, 'dataset')})",
    )
    g.add_argument("--data_args", metavar="JSON", help=DATA_ARGS_HELP)
    g.add_argument(
        "--datapath", help="folder of a built-in data set's files (cifar10, cifar100); nothing is downloaded"
    )
    g.add_argument(
        "--raw_data",
        action="store_true",
        help="scale images to [0, 1] without the per-channel normalization (as the reference's --raw_data)",
    )
    g.add_argument("--no_test", action="store_true", help="evaluate the training data only")
    g.add_argument(
        "--train_subset",
        type=int,
        metavar="N",
        help="evaluate a fixed seeded subset of N training "
        "samples; also stores the standard error of the loss (train_loss_se)",
    )
    g.add_argument(
        "--data_split",
        type=int,
        help="evaluate one of this many equal chunks of the training data "
        f"(reference code) (default: {_default(DataConfig, 'data_split')})",
    )
    g.add_argument(
        "--split_idx", type=int, help=f"which chunk, 0..data_split-1 (default: {_default(DataConfig, 'split_idx')})"
    )
    g.add_argument(
        "--batch_size",
        type=int_or_auto,
        help="evaluation batch size, or auto: the fastest on this "
        "hardware, measured at the start in time proportional to the surface's "
        f"(default: {_default(EvaluationConfig, 'batch_size')})",
    )
    g.add_argument(
        "--loss_name",
        help="crossentropy, mse, or package.module:callable returning the batch mean "
        f"(default: {_default(EvaluationConfig, 'loss_name')})",
    )
    g.add_argument(
        "--bn",
        choices=BN_POLICIES,
        help="BatchNorm statistics at each point: eval (as trained), "
        "states (moved by states directions), recalibrate (re-estimated from training batches) "
        "(default: states with --dir_type states, else eval)",
    )
    g.add_argument(
        "--bn_batches",
        type=int,
        help=f"training batches for --bn recalibrate (default: {_default(EvaluationConfig, 'bn_batches')})",
    )
    g.add_argument(
        "--points_per_pass",
        type=int_or_auto,
        metavar="K",
        help="grid points evaluated together in "
        "one call of the kernel, or auto (measured with --batch_size); values agree with K=1 to ~1e-7 "
        f"relative (default: {_default(EvaluationConfig, 'points_per_pass')})",
    )
    g.add_argument(
        "--kernel",
        choices=KERNEL_CHOICES,
        help="how points are evaluated: reference (each point's "
        "forward through functional_call), unrolled (CPUs: a "
        "classifier's loss class by class), compiled (torch.compile, after seconds of compiling per "
        "rank), or auto: the fastest measured, the reference unless another is 10 %% faster; values "
        f"differ between kernels in the last bits (default: {_default(EvaluationConfig, 'kernel')})",
    )
    g.add_argument(
        "--curvature",
        action="store_true",
        help="also the Hessian's extreme eigenvalues of the "
        "mean training loss at every point (train_eig_max, train_eig_min, train_eig_ratio = "
        "|min/max|), by Lanczos: a curvature map (one point per pass; slow: tens of Hessian-vector "
        "products per point)",
    )
    g.add_argument(
        "--curvature_tol",
        type=float,
        help=f"relative tolerance of those eigenvalues (default: {_default(EvaluationConfig, 'curvature_tol'):g})",
    )
    g.add_argument(
        "--dtype", choices=list(DTYPES), help=f"evaluation precision (default: {_default(EvaluationConfig, 'dtype')})"
    )
    g = p.add_argument_group("grid")
    g.add_argument("--x", help=f"MIN:MAX:NUM of the x coefficients (default: {DEFAULT_X})")
    g.add_argument("--y", help="MIN:MAX:NUM of the y coefficients; omit for a 1-D surface")
    g.add_argument("--force", action="store_true", help=f"allow a grid of more than {MAX_POINTS:,} points")
    g = p.add_argument_group("directions")
    g.add_argument(
        "--dir_type",
        choices=DIR_TYPES,
        help="weights (parameters) or states (state_dict, with "
        f"BatchNorm running statistics) (default: {DEFAULT_DIR_TYPE})",
    )
    g.add_argument("--xnorm", choices=NORMS, help=f"normalization of the x direction (default: {DEFAULT_NORM})")
    g.add_argument(
        "--xignore", choices=IGNORES, help=f"biasbn: zero direction for 1-D tensors (default: {DEFAULT_IGNORE})"
    )
    g.add_argument("--ynorm", choices=NORMS, help="normalization of the y direction (default: as --xnorm)")
    g.add_argument("--yignore", choices=IGNORES, help="(default: as --xignore)")
    g.add_argument("--same_dir", action="store_true", help="use the x direction as the y direction too")
    g.add_argument("--seed", type=int, help=f"seed of the random directions (default: {DEFAULT_SEED})")
    g.add_argument(
        "--dir_file",
        help="direction file to reuse, or to create (default: the surface file's name with .directions.h5 "
        "in place of .h5)",
    )
    g = p.add_argument_group("output and execution")
    g.add_argument("--surf_file", help="surface file (default: <model_file>.surface.h5)")
    g.add_argument(
        "--threads",
        type=int,
        help="torch threads per rank, at most the cores it may use "
        "(default: $SLURM_CPUS_PER_TASK, else the node's cores / its ranks)",
    )
    g.add_argument("--device", help=DEVICE_HELP)
    g.add_argument("--allow_shared_gpus", action="store_true", help=SHARED_GPUS_HELP)
    g.add_argument(
        "--io",
        choices=IO_MODES,
        help="how ranks write: mpio (parallel HDF5), gather (rank 0 writes) "
        f"(default: {_default(RunConfig, 'io')}: mpio when h5py has MPI)",
    )
    g.add_argument(
        "--round_seconds",
        type=float,
        help=f"target seconds between writes (default: {_default(RunConfig, 'round_seconds'):g})",
    )
    g.add_argument("--mpi", action="store_true", help="accepted for compatibility; the MPI launcher is detected")
    g.add_argument(
        "--progress_seconds",
        type=float,
        metavar="S",
        help="seconds between progress lines "
        "(default: one line updated every second in a terminal; a line every 60 s in a file)",
    )
    g.add_argument("--quiet", action="store_true", help="no progress or summary lines (errors are still printed)")
    g.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    g = p.add_argument_group("figures (--plot)")
    g.add_argument("--plot", action="store_true", help="draw the figures when the job ends")
    g.add_argument("--vmin", type=float, help="lowest contour level")
    g.add_argument("--vmax", type=float, help="highest contour level")
    g.add_argument("--vlevel", type=float, help="spacing of contour levels")
    g.add_argument("--log", action="store_true", help="log scale for the loss")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def main(argv: list[str], prog: str = "landscape surface") -> int:
    world = comm_module.world()
    given = agree(world, lambda: vars(build_parser(prog).parse_args(argv)))
    given.pop("traceback", None)
    result = workflow.run(given, argv=(*prog.split(), *argv))
    if world.rank == 0:
        for path in result.figures:
            print(f"wrote {path}")
    return 0
