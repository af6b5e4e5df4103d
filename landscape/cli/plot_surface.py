"""``plot_surface``: compute a 1-D or 2-D loss surface along (filter-normalized) directions.

Flags follow the reference implementation of Li et al. (2018) so its users feel
at home.  Under ``mpiexec``/``srun`` the ranks share the points; without a
launcher the same code runs on one process.
"""
from __future__ import annotations

import argparse
import sys

from .. import comm as comm_module
from ..comm import agree
from ..batchnorm import POLICIES as BN_POLICIES
from ..evaluation import DTYPES
from ..directions import DIR_TYPES, IGNORES, NORMS
from ..surface import SurfaceConfig, run_surface
from ..writer import IO_MODES
from . import boundary

EXAMPLES = """\
examples:
  # 2-D filter-normalized surface of the demo CNN, 2 ranks, figures at the end
  mpiexec -n 2 plot_surface --model digits_cnn --model_file demo_out/cnn_bs16.pt \\
      --x=-1:1:51 --y=-1:1:51 --xnorm filter --xignore biasbn --plot

  # 1-D linear interpolation between two checkpoints, BatchNorm statistics too
  plot_surface --model digits_cnn --model_file a.pt --model_file2 b.pt \\
      --x=-0.5:1.5:41 --dir_type states

  # your own model and data: factory() returns an nn.Module / (train, test)
  srun --mpi=pmi2 plot_surface --model mypkg.nets:make_net --model_file net.pt \\
      --dataset mypkg.data:load --x=-1:1:21 --y=-1:1:21 --surf_file net.h5

Rerunning the same command after an interruption computes only the missing
points. Exit codes: 0 ok, 1 internal error, 2 usage, 3 input, 4 mismatch, 5 evaluation.
"""


def parser() -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(prog="plot_surface", description="Compute a 1-D or 2-D loss surface of a trained network along (filter-normalized) "
                                "directions, on one process or many MPI ranks, into one HDF5 file.",
                                epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("model and data")
    g.add_argument("--model", required=True, help="registry name (digits_mlp, digits_cnn, the paper's CIFAR zoo: "
                   "vgg9, resnet20/56/110[_noshort], wrn56_2, densenet121, ...) or package.module:factory")
    g.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    g.add_argument("--model_file", help="checkpoint of the trained model: the centre of the surface")
    g.add_argument("--model_file2", help="second model: x direction = model2 - model (1-D interpolation)")
    g.add_argument("--model_file3", help="third model: y direction = model3 - model (plane through three models)")
    g.add_argument("--allow_pickle", action="store_true", help="unpickle checkpoints fully (they can run code: "
                   "trusted files only); by default only tensors are read")
    g.add_argument("--dataset", default="digits", help="digits (built in) or package.module:factory (default: digits)")
    g.add_argument("--datapath", help="folder of a built-in data set's files (cifar10, cifar100); nothing is "
                   "downloaded")
    g.add_argument("--raw_data", action="store_true", help="scale images to [0, 1] without the per-channel "
                   "normalization (as the reference's --raw_data)")
    g.add_argument("--no_test", dest="test", action="store_false", help="evaluate the training data only")
    g.add_argument("--train_subset", type=int, metavar="N", help="evaluate a fixed seeded subset of N training "
                   "samples; also stores the standard error of the loss (train_loss_se)")
    g.add_argument("--data_split", type=int, default=1, help="evaluate one of this many equal chunks of the "
                   "training data (reference code) (default: 1)")
    g.add_argument("--split_idx", type=int, default=0, help="which chunk, 0..data_split-1 (default: 0)")
    g.add_argument("--batch_size", type=int, default=128, help="evaluation batch size (default: 128)")
    g.add_argument("--loss_name", default="crossentropy", help="crossentropy, mse, or package.module:callable "
                   "returning the batch mean (default: crossentropy)")
    g.add_argument("--bn", choices=BN_POLICIES, help="BatchNorm statistics at each point: eval (as trained), "
                   "states (moved by states directions), recalibrate (re-estimated from training batches) "
                   "(default: states with --dir_type states, else eval)")
    g.add_argument("--bn_batches", type=int, default=10, help="training batches for --bn recalibrate (default: 10)")
    g.add_argument("--dtype", default="float32", choices=list(DTYPES), help="evaluation precision (default: float32)")
    g = p.add_argument_group("grid")
    g.add_argument("--x", default="-1:1:51", help="MIN:MAX:NUM of the x coefficients (default: -1:1:51)")
    g.add_argument("--y", help="MIN:MAX:NUM of the y coefficients; omit for a 1-D surface")
    g = p.add_argument_group("directions")
    g.add_argument("--dir_type", choices=DIR_TYPES, help="weights (parameters) or states (state_dict, with "
                   "BatchNorm running statistics) (default: weights)")
    g.add_argument("--xnorm", choices=NORMS, help="normalization of the x direction (default: filter)")
    g.add_argument("--xignore", choices=IGNORES, help="biasbn: zero direction for 1-D tensors (default: biasbn)")
    g.add_argument("--ynorm", choices=NORMS, help="normalization of the y direction (default: as --xnorm)")
    g.add_argument("--yignore", choices=IGNORES, help="(default: as --xignore)")
    g.add_argument("--same_dir", action="store_true", help="use the x direction as the y direction too")
    g.add_argument("--seed", type=int, help="seed of the random directions (default: 0)")
    g.add_argument("--dir_file", help="direction file to reuse, or to create (default: <surf_file>.directions.h5)")
    g = p.add_argument_group("output and execution")
    g.add_argument("--surf_file", help="surface file (default: <model_file>.surface.h5)")
    g.add_argument("--threads", type=int, help="torch threads per rank (default: the node's cores / its ranks)")
    g.add_argument("--io", default="auto", choices=IO_MODES, help="how ranks write: mpio (parallel HDF5), gather "
                   "(rank 0 writes), auto (default)")
    g.add_argument("--round_seconds", type=float, default=5.0, help="target seconds between writes (default: 5)")
    g.add_argument("--mpi", action="store_true", help="accepted for compatibility; the MPI launcher is detected")
    g.add_argument("--quiet", action="store_true", help="no progress lines")
    g.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    g = p.add_argument_group("figures (--plot)")
    g.add_argument("--plot", action="store_true", help="draw the figures when the job ends")
    g.add_argument("--vmin", type=float, help="lowest contour level")
    g.add_argument("--vmax", type=float, help="highest contour level")
    g.add_argument("--vlevel", type=float, help="spacing of contour levels")
    g.add_argument("--log", action="store_true", help="log scale for the loss")
    return p


def config(argv: list[str]) -> tuple[SurfaceConfig, argparse.Namespace]:
    args = parser().parse_args(argv)
    fields = SurfaceConfig.__dataclass_fields__
    cfg = SurfaceConfig(**{k: v for k, v in vars(args).items() if k in fields},
                        argv=["plot_surface", *argv])
    return cfg, args


def main(argv: list[str]) -> int:
    world = comm_module.world()
    cfg, args = agree(world, config, argv)
    result = run_surface(cfg, world)
    if args.plot and world.rank == 0:
        from ..plotting.figures import draw_surface_figures

        for path in draw_surface_figures(result["surf_file"], vmin=args.vmin, vmax=args.vmax,
                                         vlevel=args.vlevel, log=args.log):
            print(f"wrote {path}")
    return 0


entry = boundary.entry(main, "plot_surface")

if __name__ == "__main__":
    sys.exit(boundary.run(main, prog="plot_surface"))
