"""``landscape curvature``: the Hessian's extreme eigenvalues, trace, spectral density and sharpness of one
trained network, on one process or with the ranks sharing the data.

Writes one JSON file with every number and the settings that produced it, prints a summary, and
draws the spectral density (``--density``).  The measures are those of ``landscape.curvature``.
"""

from __future__ import annotations

import argparse

from ..data import BUILTIN as BUILTIN_DATA
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..plugins import ALLOW_RECORDED_HELP, DATA_ARGS_HELP, MODEL_ARGS_HELP
from ..workflows import curvature as workflow
from . import boundary
from .search_args import add_search_arguments

EXAMPLES = """\
examples:
  landscape curvature --model digits_cnn --model_file demo_out/cnn_bs16/final.pt --k 3 --trace 100 \\
      --density --sharpness adaptive average --out demo_out/cnn_bs16_curvature.json
  mpiexec -n 4 landscape curvature --model resnet56 --model_file r56.t7 --dataset cifar10 \\
      --datapath data --train_subset 10000 --k 1 --out r56_curvature.json
"""


def _d(name: str) -> str:
    value = workflow.DEFAULTS[name]
    unset = value in ((), None) or (value == 0 and isinstance(value, int) and name != "seed")  # 0 vectors: none
    return f"(default: {'none' if unset else value})"


def build_parser(prog: str = "landscape curvature") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EXAMPLES,
        argument_default=argparse.SUPPRESS,
        description="Curvature of a trained network's mean "
        "training loss: top and bottom Hessian eigenvalues (Lanczos), trace "
        "(Hutchinson), spectral density (stochastic Lanczos quadrature), sharpness.",
    )
    p.add_argument(
        "--model",
        help="registry name or package.module:factory (default: the model a landscape train checkpoint records)",
    )
    p.add_argument("--model_file", required=True, help="checkpoint of the trained model")
    p.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    p.add_argument(
        "--dataset",
        help=f"{', '.join(BUILTIN_DATA)} or package.module:factory (default: the one a landscape train "
        "checkpoint records, else digits)",
    )
    p.add_argument("--datapath", help="folder of the CIFAR files")
    p.add_argument("--model_args", metavar="JSON", help=MODEL_ARGS_HELP)
    p.add_argument("--data_args", metavar="JSON", help=DATA_ARGS_HELP)
    p.add_argument("--allow_recorded_plugins", action="store_true", help=ALLOW_RECORDED_HELP)
    p.add_argument("--train_subset", type=int, metavar="N", help="a fixed seeded subset of N training samples")
    p.add_argument("--loss_name", help="crossentropy, mse or package.module:callable " + _d("loss_name"))
    p.add_argument("--k", type=int, help="eigenvalues at each end " + _d("k"))
    p.add_argument(
        "--which",
        choices=workflow.WHICH,
        help="which end of the spectrum: top (the largest), bottom (the most negative: its eigenvalues sit in "
        "the bulk near 0, so Lanczos often needs many times the products) or both " + _d("which"),
    )
    p.add_argument("--tol", type=float, help="Lanczos relative tolerance " + _d("tol"))
    p.add_argument(
        "--trace",
        type=int,
        metavar="SAMPLES",
        help="Hutchinson's trace with this many Rademacher vectors (with --trace_se: at most) " + _d("trace"),
    )
    p.add_argument(
        "--trace_se",
        type=float,
        metavar="REL",
        help="stop the trace once its standard error is at most REL x |trace| (after 10 vectors) " + _d("trace_se"),
    )
    p.add_argument(
        "--layers",
        action="store_true",
        help="each layer's block of the Hessian (a module's own parameters, the rest fixed): its λmax and "
        "trace, from --layer_samples shared Rademacher vectors",
    )
    p.add_argument(
        "--layer_samples", type=int, help="Hutchinson vectors of the per-layer traces " + _d("layer_samples")
    )
    p.add_argument(
        "--relative_flatness",
        type=int,
        metavar="SAMPLES",
        help="relative flatness (Petzka et al. 2021): Σ over parameter tensors W of Σ ⟨W_s, W_s'⟩ Tr H_ss', "
        "unchanged by rescaling the layers, from this many samples",
    )
    p.add_argument(
        "--fisher_rao",
        action="store_true",
        help="the Fisher–Rao norm (Liang et al. 2019), √E⟨θ, ∇ℓ⟩² over the model's own labels (and the data's)",
    )
    p.add_argument(
        "--noise_scale",
        action="store_true",
        help="the gradient noise scale B_simple = tr Σ / ‖G‖² (McCandlish et al. 2018) from every sample's gradient",
    )
    p.add_argument("--density", action="store_true", help="the spectral density by SLQ, and its figure")
    p.add_argument("--density_steps", type=int, help="Lanczos steps per SLQ run " + _d("density_steps"))
    p.add_argument("--density_runs", type=int, help="SLQ runs " + _d("density_runs"))
    p.add_argument(
        "--sharpness",
        nargs="*",
        choices=workflow.SHARPNESS,
        help="sharpness measures to compute, each defined in the README " + _d("sharpness"),
    )
    p.add_argument("--rho", type=float, help="adaptive, adaptive_average, m_sharpness: |d| <= rho |w| " + _d("rho"))
    p.add_argument("--rho_l2", type=float, help="adaptive_l2: the ball ||d / (|w| + eta)|| <= rho_l2 " + _d("rho_l2"))
    p.add_argument("--eta", type=float, help="adaptive_l2: ASAM's eta (0: invariant to rescaling) " + _d("eta"))
    p.add_argument("--epsilon", type=float, help="epsilon: Keskar's box |d| <= epsilon (|w| + 1) " + _d("epsilon"))
    p.add_argument("--subspace", type=int, help="epsilon: a random subspace of this dimension " + _d("subspace"))
    p.add_argument("--radius", type=float, help="average: the radius " + _d("radius"))
    p.add_argument("--directions", type=int, help="average: random directions " + _d("directions"))
    p.add_argument("--draws", type=int, help="adaptive_average: Gaussian draws " + _d("draws"))
    p.add_argument("--m", type=int, help="m_sharpness: samples per batch " + _d("m"))
    add_search_arguments(p)
    p.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        help="precision of the products, recorded in the output; float32 is faster and enough for "
        "the top eigenvalue and the trace, not for eigenvalues near zero or the sharpness measures " + _d("dtype"),
    )
    p.add_argument("--batch_size", type=int, help="samples per batch of a product " + _d("batch_size"))
    p.add_argument("--seed", type=int, help="start vectors, trace vectors, directions " + _d("seed"))
    p.add_argument("--threads", type=int, help="torch threads per rank (default: the node's cores / its ranks)")
    p.add_argument("--device", help=DEVICE_HELP)
    p.add_argument("--allow_shared_gpus", action="store_true", help=SHARED_GPUS_HELP)
    p.add_argument("--out", required=True, help="the JSON file to write (the density figure beside it)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write --out over an existing checkpoint, HDF5 file, training log, manifest or run record "
        "(refused otherwise; never over the command's own input)",
    )
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def main(argv: list[str], prog: str = "landscape curvature") -> int:
    world = comm_module.world()
    given = agree(world, lambda: vars(build_parser(prog).parse_args(argv)))
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
