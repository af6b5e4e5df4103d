"""``landscape rescale``: a checkpoint's network with one layer's units rescaled without changing the
function it computes (Dinh et al. 2017), for the rescaling control of a sharpness study."""

from __future__ import annotations

import argparse

from ..plugins import ALLOW_RECORDED_HELP, DATA_ARGS_HELP, MODEL_ARGS_HELP
from ..workflows import rescale as workflow
from . import boundary

EXAMPLES = """\
examples:
  landscape rescale --model mnist1d_mlp --dataset mnist1d --model_file runs/b16/final.pt --alpha 4 \\
      --out runs/b16/rescaled.pt
  landscape report runs.csv --out report      (a CSV listing both checkpoints: which measures moved?)
"""


def build_parser(prog: str = "landscape rescale") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EXAMPLES,
        argument_default=argparse.SUPPRESS,
        description="Multiply one layer's incoming weights and biases by alpha and the next layer's "
        "weights on those units by 1/alpha: the same function (ReLU units), other weights. The outputs "
        "of both networks are compared on the data before the new checkpoint is written.",
    )
    p.add_argument(
        "--model",
        help="registry name or package.module:factory (default: the model a landscape train checkpoint records)",
    )
    p.add_argument("--model_file", required=True, help="the checkpoint to rescale")
    p.add_argument("--alpha", type=float, required=True, help="the factor, a positive number")
    p.add_argument("--out", required=True, help="the new checkpoint (an existing file is not overwritten)")
    p.add_argument("--layer", help="the layer whose units are scaled (default: the first linear or convolution layer)")
    p.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    p.add_argument(
        "--dataset",
        help="the data the outputs are compared on (default: the one a landscape train checkpoint records, "
        "else digits)",
    )
    p.add_argument("--datapath", help="folder of the CIFAR files")
    p.add_argument("--model_args", metavar="JSON", help=MODEL_ARGS_HELP)
    p.add_argument("--data_args", metavar="JSON", help=DATA_ARGS_HELP)
    p.add_argument("--allow_pickle", action="store_true", help="unpickle the checkpoint fully (trusted files only)")
    p.add_argument("--allow_recorded_plugins", action="store_true", help=ALLOW_RECORDED_HELP)
    p.add_argument("--threads", type=int, help="torch threads (default: torch's own choice)")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape rescale") -> int:
    given = vars(build_parser(prog).parse_args(argv))
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
