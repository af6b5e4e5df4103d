"""``landscape report``: the scorecard of a batch-size study, from a manifest of trained networks.

The flags are the parameters of ``workflows.report``, which does the work.
"""

from __future__ import annotations

import argparse

from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..plugins import ALLOW_RECORDED_HELP
from ..surface.kernels import CHOICES as KERNEL_CHOICES
from ..workflows import report as workflow
from . import boundary
from .search_args import add_search_arguments
from .surface import int_or_auto

EXAMPLES = """\
examples:
  landscape report study_out/manifest.json --out study_out/report --figures figures --name study
  mpiexec -n 4 landscape report sweeps/r56/manifest.json --datapath data --train_subset 10000 --out r56_report
  landscape report checkpoints.csv --model resnet56 --dataset cifar10 --datapath data --out report
  srun landscape report --config scripts/slurm/study_resnet56.toml     (a study's report step)

checkpoints.csv (a hand-written list; paths relative to the file):
  checkpoint,batch_size,seed,recipe
  runs/b128_s0/model_300.t7,128,0,sgd
  runs/b8192_s0/model_300.t7,8192,0,sgd

Rerunning reads back what each run's folder already holds (out/runs/<run>/measures.json) and
finishes what is missing; other measure settings than the folder's are refused.
"""


def _d(name: str) -> str:
    value = workflow.DEFAULTS[name]
    shown = " ".join(value) if isinstance(value, tuple) else ("none" if value is None else value)
    return f"(default: {shown})"


def build_parser(prog: str = "landscape report") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EXAMPLES,
        argument_default=argparse.SUPPRESS,
        description="Scorecard of trained networks by batch "
        "size and recipe: losses, errors, gap, Hessian λmax and trace (also per layer), relative flatness, "
        "Fisher–Rao norm, gradient noise scale, six sharpness measures by name, the Hessian's spectral density, "
        "1-D surfaces along a random and the top Hessian direction; tables, figures and a verdict.",
    )
    p.add_argument(
        "manifest",
        nargs="?",
        help="a landscape sweep's manifest (or its folder), or a CSV of checkpoints (given by --config otherwise)",
    )
    p.add_argument(
        "--config",
        help="a landscape study file: its sweep's manifest, out/report, figures, name and "
        "[report] table, under the flags given here",
    )
    p.add_argument("--out", help="folder of the measurements: one runs/<run>/ per network (required, or from --config)")
    p.add_argument("--figures", help="folder of the scorecard: its tables and figures (default: --out)")
    p.add_argument("--name", help="stem of the tables' and figures' names " + _d("name"))
    p.add_argument("--model", help="the runs' model where the manifest does not say")
    p.add_argument("--dataset", help="the runs' data set where the manifest does not say (default: digits)")
    p.add_argument("--datapath", help="folder of the CIFAR files")
    p.add_argument(
        "--model_args", metavar="JSON", help="the runs' model factory's arguments where their records say none"
    )
    p.add_argument(
        "--data_args", metavar="JSON", help="the runs' data set factory's arguments where their records say none"
    )
    p.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    p.add_argument("--allow_recorded_plugins", action="store_true", help=ALLOW_RECORDED_HELP)
    p.add_argument(
        "--skip",
        nargs="+",
        metavar="MEASURE",
        help="measures of the curvature suite not computed (their columns empty): lambda_max, trace, "
        "relative_flatness, fisher_rao, noise_scale, layers and the sharpness searches' keys",
    )
    p.add_argument("--grid_1d", help="the 1-D surface, MIN:MAX:NUM " + _d("grid_1d"))
    p.add_argument("--grid_2d", help="the 2-D surface along x and y " + _d("grid_2d"))
    p.add_argument("--radius", type=float, help="average and 2-D rise: radius " + _d("radius"))
    p.add_argument(
        "--directions", type=int, help="average rise: random filter-normalized directions " + _d("directions")
    )
    p.add_argument("--trace_samples", type=int, help="Hutchinson: Rademacher vectors " + _d("trace_samples"))
    p.add_argument("--tol", type=float, help="Lanczos tolerance of λmax " + _d("tol"))
    p.add_argument(
        "--density_steps",
        type=int,
        help="the Hessian's spectral density (stochastic Lanczos quadrature): Lanczos steps per run "
        + _d("density_steps"),
    )
    p.add_argument(
        "--density_runs",
        type=int,
        help="the spectral density: runs from random vectors, averaged; 0: no density " + _d("density_runs"),
    )
    p.add_argument("--rho", type=float, help="adaptive, its average and m-sharpness: |d| <= rho |w| " + _d("rho"))
    p.add_argument("--rho_l2", type=float, help="adaptive ℓ2: the ball ||d / (|w| + eta)|| <= rho_l2 " + _d("rho_l2"))
    p.add_argument("--eta", type=float, help="adaptive ℓ2: ASAM's eta (0 keeps it invariant) " + _d("eta"))
    p.add_argument("--draws", type=int, help="average adaptive: Gaussian draws " + _d("draws"))
    p.add_argument("--m", type=int, help="m-sharpness: training samples per batch " + _d("m"))
    p.add_argument("--epsilon", type=float, help="ε-sharpness: |d| <= epsilon (|w| + 1) " + _d("epsilon"))
    p.add_argument(
        "--subspace",
        type=int,
        help="ε-sharpness in a random subspace of this dimension; 0: the full space " + _d("subspace"),
    )
    add_search_arguments(p)
    p.add_argument("--dtype", choices=("float32", "float64"), help="Hessian products and searches " + _d("dtype"))
    p.add_argument("--batch_size", type=int, help="samples per forward pass " + _d("batch_size"))
    p.add_argument(
        "--kernel",
        choices=KERNEL_CHOICES,
        help="the surfaces' kernel, as landscape surface --kernel (auto measures, within a tenth of a "
        "surface's time: a small surface keeps the reference's settings) " + _d("kernel"),
    )
    p.add_argument(
        "--points_per_pass",
        type=int_or_auto,
        metavar="K",
        help="the surfaces' grid points per call of the kernel, or auto " + _d("points_per_pass"),
    )
    p.add_argument("--train_subset", type=int, metavar="N", help="a seeded subset of N training samples")
    p.add_argument("--loss_name", help="crossentropy, mse or package.module:callable " + _d("loss_name"))
    p.add_argument("--seed", type=int, help="directions and random vectors " + _d("seed"))
    p.add_argument(
        "--endpoints",
        nargs="+",
        metavar="KEY",
        help="the declared endpoints, Holm-adjusted; every other measure is exploratory: measure keys, "
        "comma- or space-separated (default: " + ",".join(workflow.DEFAULTS["endpoints"]) + ")",
    )
    p.add_argument(
        "--match_loss",
        help="also measure each run at the weights it kept where its training loss first fell to a level "
        "(landscape train --save_at_loss): auto (per arm, the lowest level every run crossed in the learning-rate "
        "phase it ended in), a level, or off " + _d("match_loss"),
    )
    p.add_argument(
        "--sharpness_path",
        action="store_true",
        help="also λmax and adaptive sharpness at every level a run kept weights at: sharpness against the "
        "training loss along training",
    )
    p.add_argument("--alpha", type=float, help="significance level of the verdict " + _d("alpha"))
    p.add_argument(
        "--permutations",
        type=int,
        help="random permutations of a p-value when there are too many to enumerate " + _d("permutations"),
    )
    p.add_argument("--formats", nargs="+", help="figure formats: png, pdf, svg " + _d("formats"))
    p.add_argument(
        "--style",
        choices=workflow.STYLES,
        help="the figures' look: paper (column widths, 8 pt fonts), talk (large) " + _d("style"),
    )
    p.add_argument("--device", help=DEVICE_HELP)
    p.add_argument("--allow_shared_gpus", action="store_true", help=SHARED_GPUS_HELP)
    p.add_argument("--threads", type=int, help="torch threads per rank (default: the node's cores / its ranks)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write the tables over an existing checkpoint, HDF5 file, training log, manifest or run record "
        "(refused otherwise; never over the manifest read)",
    )
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def main(argv: list[str], prog: str = "landscape report") -> int:
    world = comm_module.world()
    given = agree(world, lambda: vars(build_parser(prog).parse_args(argv)))
    given.pop("traceback", None)
    if given.get("manifest") is None:
        given.pop("manifest", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
