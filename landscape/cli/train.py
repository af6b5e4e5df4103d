"""``landscape train``: train a network on one process or data-parallel over MPI ranks.

Each flag is one field of ``train.config.TrainJob``'s parts (``Recipe`` for the hyper-parameters, whose
defaults depend on ``--recipe``); this module only maps spellings.
"""

from __future__ import annotations

import argparse

from ..data import BUILTIN as BUILTIN_DATA
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..parallel.devices import DEVICE_HELP, SHARED_GPUS_HELP
from ..plugins import DATA_ARGS_HELP, MODEL_ARGS_HELP
from ..train.config import AUGMENTS
from ..train.recipes import NAMES, Recipe
from ..workflows import train as workflow
from . import boundary

EXAMPLES = """\
examples:
  # the demo CNN on 2 ranks, the learning rate scaled to the batch with a warm-up
  mpiexec -n 2 landscape train --model digits_cnn --dataset digits --batch_size 256 \\
      --recipe linear --epochs 5 --out runs/cnn_b256

  # the paper's CIFAR-10 recipe (300 epochs), one rank per GPU under Slurm
  srun landscape train --model resnet56 --dataset cifar10 --datapath data \\
      --recipe sgd --batch_size 128 --out runs/resnet56_b128

  # a surface of the result
  landscape surface --model digits_cnn --model_file runs/cnn_b256/final.pt --x=-1:1:51

Rerunning the same command after an interruption (kill -9, a time limit) continues from the last
checkpoint; a finished run is left as it is.  Exit codes as for landscape surface (143: stopped by
SIGTERM/SIGUSR1 after saving; rerun to resume), and 6: the training loss became NaN or infinite (the
line names the epoch, step and learning rate; the last finite checkpoint is kept, run.json records it).
"""


def _default(name: str):
    return Recipe.__dataclass_fields__[name].default


def build_parser(prog: str = "landscape train") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        argument_default=argparse.SUPPRESS,
        epilog=EXAMPLES,
        description="Train a registry or plug-in model on one process or data-parallel "
        "over MPI ranks, with the recipes of the large-batch literature; "
        "checkpoints every epoch, resumable.",
    )
    g = p.add_argument_group("model and data")
    g.add_argument(
        "--model",
        required=True,
        help="registry name (digits_mlp, digits_cnn, resnet20, resnet56, vgg9, ...) or package.module:factory",
    )
    g.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    g.add_argument("--model_args", metavar="JSON", help=MODEL_ARGS_HELP)
    g.add_argument("--dataset", help=f"{', '.join(BUILTIN_DATA)} or package.module:factory (default: digits)")
    g.add_argument("--data_args", metavar="JSON", help=DATA_ARGS_HELP)
    g.add_argument("--datapath", help="folder of the CIFAR files (nothing is downloaded)")
    g.add_argument("--raw_data", action="store_true", help="images scaled to [0, 1] without normalization")
    g.add_argument("--no_test", action="store_true", help="do not evaluate the test set each epoch")
    g = p.add_argument_group("recipe (defaults depend on --recipe; every value is recorded)")
    g.add_argument(
        "--recipe",
        choices=NAMES,
        help="sgd (the paper's), naive (same lr at any batch), linear "
        "(lr x batch/256, warm-up), lars, adaptive (growing batch), local (periodic averaging) "
        "(default: sgd)",
    )
    g.add_argument("--epochs", type=int, help=f"the budget in epochs (default: {_default('epochs')})")
    g.add_argument(
        "--steps",
        type=int,
        help="the budget in optimizer steps instead (equal steps at every batch size: the comparison "
        "of equal training); milestones, --eval_every and --save_every then count steps",
    )
    g.add_argument(
        "--batch_size",
        type=int,
        help="global batch: samples per optimizer step over all ranks "
        f"(default: {_default('batch_size')}; adaptive: the first batch)",
    )
    g.add_argument(
        "--lr", type=float, help=f"learning rate; linear, lars, local: at base_batch (default: {_default('lr')})"
    )
    g.add_argument("--momentum", type=float, help=f"(default: {_default('momentum')})")
    g.add_argument(
        "--nesterov", action=argparse.BooleanOptionalAction, help="Nesterov momentum (default: on, off for lars)"
    )
    g.add_argument("--weight_decay", type=float, help=f"(default: {_default('weight_decay')})")
    g.add_argument(
        "--milestones",
        type=float,
        nargs="*",
        help="fractions of the budget (epochs or steps) where the rate drops (default: 0.5 0.75)",
    )
    g.add_argument("--gamma", type=float, help=f"factor of each drop (default: {_default('gamma')})")
    g.add_argument(
        "--base_batch", type=int, help=f"linear, lars, local: the batch of lr (default: {_default('base_batch')})"
    )
    g.add_argument(
        "--warmup_epochs", type=float, help=f"linear, lars: warm-up epochs (default: {_default('warmup_epochs'):g})"
    )
    g.add_argument("--trust", type=float, help=f"lars: trust coefficient (default: {_default('trust')})")
    g.add_argument("--theta", type=float, help=f"adaptive: the norm test's theta (default: {_default('theta')})")
    g.add_argument("--max_batch", type=int, help="adaptive: largest batch (default: the training set)")
    g.add_argument(
        "--sync_every", type=int, help=f"local: steps between model averages (default: {_default('sync_every')})"
    )
    g.add_argument("--control_variates", action="store_true", help="local: SCAFFOLD's correction of local steps")
    g = p.add_argument_group("output and execution")
    g.add_argument(
        "--out",
        required=True,
        help="folder of the checkpoints (epoch_NNNN.pt, final.pt, latest.pt), log.csv and run.json",
    )
    g.add_argument(
        "--micro_batch",
        type=int,
        help="samples per forward pass, and BatchNorm's batch: give it to "
        "get the same run on any number of ranks (default: batch_size / ranks)",
    )
    g.add_argument("--seed", type=int, help="initial weights, data order and augmentation (default: 0)")
    g.add_argument(
        "--augment", choices=AUGMENTS, help="auto: random crop and flip for CIFAR, none otherwise (default: auto)"
    )
    g.add_argument(
        "--loss_name",
        help="crossentropy, mse (one-hot targets for classes) or package.module:callable "
        "(default: crossentropy for class labels, mse for float targets)",
    )
    g.add_argument(
        "--save_every", type=int, help="epochs (or steps) between weight files (default: at each evaluation)"
    )
    g.add_argument(
        "--eval_every",
        type=int,
        help="epochs (or steps) between evaluations of the train and test sets, a log row each "
        "(default: every epoch, or every hundredth of --steps)",
    )
    g.add_argument(
        "--curvature_every",
        type=int,
        metavar="K",
        help="every K steps (and at step 0) the top Hessian eigenvalue of the training loss, "
        "column lambda_max of log.csv (Lanczos, tol 1e-3, float32)",
    )
    g.add_argument(
        "--curvature_points",
        type=int,
        metavar="N",
        help="instead of --curvature_every: about N values of λmax evenly spaced over the budget, every "
        "max(1, floor(steps / N)) steps (an epoch is ceil(samples / batch_size) steps): the same "
        "resolution along training at every batch size",
    )
    g.add_argument(
        "--stop_loss",
        type=float,
        metavar="LOSS",
        help="stop at the first evaluation whose training loss is at most LOSS: training to a minimum, the "
        "budget (--epochs or --steps) its cap; a run that spends its budget first is recorded as not at a "
        "minimum (run.json's minimum)",
    )
    g.add_argument(
        "--stop_error",
        type=float,
        metavar="PERCENT",
        help="stop at the first evaluation whose training error is at most PERCENT %% (with --stop_loss: "
        "whichever comes first)",
    )
    g.add_argument(
        "--save_at_loss",
        type=float,
        nargs="+",
        metavar="LOSS",
        help="keep the weights where the training loss first falls to each LOSS, checked at every "
        "evaluation (loss_<LOSS>.pt, with the step, rate and its phase, in run.json's crossings): the "
        "networks a report compares at matched training loss",
    )
    g.add_argument(
        "--target_every",
        type=int,
        metavar="K",
        help="steps between checks of --stop_loss, --stop_error and --save_at_loss (the training loss alone, "
        "no row), and after every step once the loss is within 20 %% of a pending target (default: 10)",
    )
    g.add_argument("--threads", type=int, help="torch threads per rank (default: the node's cores / its ranks)")
    g.add_argument("--device", help=DEVICE_HELP)
    g.add_argument("--allow_shared_gpus", action="store_true", help=SHARED_GPUS_HELP)
    g.add_argument(
        "--progress_seconds",
        type=float,
        metavar="S",
        help="seconds between epoch lines (the first "
        "and last always; log.csv has every epoch) (default: every epoch in a terminal, 60 in a file)",
    )
    g.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    g.add_argument(
        "--allow_nonfinite",
        action="store_true",
        help="go on when the training loss becomes NaN or infinite (default: stop with exit code 6, the last "
        "finite checkpoint kept)",
    )
    g.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def main(argv: list[str], prog: str = "landscape train") -> int:
    world = comm_module.world()
    given = agree(world, lambda: vars(build_parser(prog).parse_args(argv)))
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
