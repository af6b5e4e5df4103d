"""``landscape curvature``: the Hessian's extreme eigenvalues, trace, spectral density and sharpness of one
trained network, on one process or with the ranks sharing the data.

Writes one JSON file with every number and the settings that produced it, prints a summary, and
draws the spectral density (``--density``).  The measures are those of ``landscape.curvature``.
"""

from __future__ import annotations

import argparse
import json
import os

from ..data import DataConfig, load_data
from ..errors import UsageError
from ..io.atomic import write_file
from ..io.paths import output_path
from ..models import ModelConfig, load_model
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from . import boundary

EXAMPLES = """\
examples:
  landscape curvature --model digits_cnn --model_file demo_out/cnn_bs16/final.pt --k 3 --trace 100 \\
      --density --sharpness adaptive average --out demo_out/cnn_bs16_curvature.json
  mpiexec -n 4 landscape curvature --model resnet56 --model_file r56.t7 --dataset cifar10 \\
      --datapath data --train_subset 10000 --k 1 --out r56_curvature.json
"""


def build_parser(prog: str = "landscape curvature") -> argparse.ArgumentParser:
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EXAMPLES,
        description="Curvature of a trained network's mean "
        "training loss: top and bottom Hessian eigenvalues (Lanczos), trace "
        "(Hutchinson), spectral density (stochastic Lanczos quadrature), sharpness.",
    )
    p.add_argument("--model", required=True, help="registry name or package.module:factory")
    p.add_argument("--model_file", required=True, help="checkpoint of the trained model")
    p.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    p.add_argument("--dataset", default="digits", help="digits, cifar10, cifar100 or package.module:factory")
    p.add_argument("--datapath", help="folder of the CIFAR files")
    p.add_argument("--train_subset", type=int, metavar="N", help="a fixed seeded subset of N training samples")
    p.add_argument("--loss_name", default="crossentropy", help="crossentropy, mse or package.module:callable")
    p.add_argument("--k", type=int, default=1, help="eigenvalues at each end (default: 1)")
    p.add_argument("--which", choices=("top", "bottom", "both"), default="both", help="(default: both)")
    p.add_argument("--tol", type=float, default=1e-4, help="Lanczos relative tolerance (default: 1e-4)")
    p.add_argument(
        "--trace",
        type=int,
        metavar="SAMPLES",
        default=0,
        help="Hutchinson's trace with this many Rademacher vectors (default: none)",
    )
    p.add_argument("--density", action="store_true", help="the spectral density by SLQ, and its figure")
    p.add_argument("--density_steps", type=int, default=80, help="Lanczos steps per SLQ run (default: 80)")
    p.add_argument("--density_runs", type=int, default=4, help="SLQ runs (default: 4)")
    p.add_argument(
        "--sharpness",
        nargs="*",
        choices=("adaptive", "epsilon", "average"),
        default=[],
        help="sharpness measures to compute",
    )
    p.add_argument("--rho", type=float, default=0.01, help="adaptive: the box |d| <= rho |w| (default: 0.01)")
    p.add_argument("--epsilon", type=float, default=1e-3, help="epsilon: Keskar's box (default: 1e-3)")
    p.add_argument("--radius", type=float, default=0.5, help="average: the radius (default: 0.5)")
    p.add_argument("--directions", type=int, default=20, help="average: random directions (default: 20)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64", help="(default: float64)")
    p.add_argument("--batch_size", type=int, default=1024, help="samples per batch of a product (default: 1024)")
    p.add_argument("--seed", type=int, default=0, help="start vectors, trace vectors, directions (default: 0)")
    p.add_argument("--threads", type=int, help="torch threads per rank")
    p.add_argument("--out", required=True, help="the JSON file to write (the density figure beside it)")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def _checked(args) -> None:
    for name in ("k", "density_steps", "density_runs", "directions", "batch_size"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name}={getattr(args, name)}: expected a positive whole number")
    if args.trace == 1 or args.trace < 0:
        raise UsageError(f"--trace={args.trace}: expected 0 (none) or at least 2 vectors")
    for name in ("tol", "rho", "epsilon", "radius"):
        if not getattr(args, name) > 0:
            raise UsageError(f"--{name}={getattr(args, name)}: expected a positive number")
    output_path(args.out, "JSON file", "out")  # checked before hours of products, not after


def main(argv: list[str], prog: str = "landscape curvature") -> int:
    import torch

    from ..api import _curvature_setup
    from ..curvature import extremes, hutchinson, slq
    from ..curvature import sharpness as measures
    from ..parallel.comm import threads_per_rank

    world = comm_module.world()

    def setup():
        args = build_parser(prog).parse_args(argv)
        _checked(args)
        torch.set_num_threads(threads_per_rank(world, args.threads).count)
        data_cfg = DataConfig(dataset=args.dataset, datapath=args.datapath, train_subset=args.train_subset, test=False)
        model_cfg = ModelConfig(args.model, num_classes=args.num_classes, model_file=args.model_file)
        data = load_data(data_cfg)
        model = load_model(model_cfg, model_cfg.classes(args.dataset), args.model_file, seed=0)
        return args, model, data

    args, model, data = agree(world, setup)
    say = print if world.rank == 0 else (lambda *_: None)
    hessian = _curvature_setup(
        model, (data.train.inputs, data.train.targets), args.loss_name, args.batch_size, args.dtype, "cpu"
    )  # every measure below uses it; each counts its own products
    loss, gradient = hessian.loss_and_gradient()
    report = {
        "model": args.model,
        "model_file": args.model_file,
        "dataset": args.dataset,
        "samples": len(data.train),
        "parameters": hessian.dim,
        "dtype": args.dtype,
        "ranks": world.size,
        "loss": loss,
        "gradient_norm": float((gradient**2).sum() ** 0.5),
    }
    say(
        f"{args.model} on {len(data.train)} {args.dataset} samples, {hessian.dim:,} parameters: mean loss "
        f"{loss:.6g}, gradient norm {report['gradient_norm']:.3g}"
    )
    ends = extremes(hessian, k=args.k, which=args.which, tol=args.tol, seed=args.seed)
    report["eigenvalues"] = {end: e.record() for end, e in ends.items()}
    for end, e in ends.items():
        state = "converged" if e.converged else f"NOT converged ({e.note})"
        say(
            f"{end} {args.k} eigenvalue(s): {', '.join(f'{v:.6g}' for v in e.values)}  [{state}; max residual "
            f"{max(e.residuals):.1e}; {e.products} products]"
        )
    if args.trace:
        t = hutchinson(hessian, samples=args.trace, seed=args.seed)
        report["trace"] = t.record()
        say(f"trace {t.value:.6g} ± {t.stderr:.2g} ({t.samples} Rademacher vectors)")
    if args.density:
        d = slq(hessian, steps=args.density_steps, runs=args.density_runs, seed=args.seed)
        report["density"] = d.record()
        if world.rank == 0:
            from ..plotting.spectrum import write_density

            name = os.path.basename(args.model_file)
            if name == "final.pt":  # a training run's checkpoint: its folder names it
                name = os.path.basename(os.path.dirname(os.path.abspath(args.model_file)))
            for path in write_density({name: d}, os.path.splitext(args.out)[0] + "_density"):
                say(f"wrote {path}")
    for measure in args.sharpness:
        h = hessian
        if measure == "adaptive":
            s = measures.adaptive_sharpness(h, rho=args.rho)
        elif measure == "epsilon":
            s = measures.epsilon_sharpness(h, epsilon=args.epsilon, seed=args.seed)
        else:
            s = measures.average_rise(h, radius=args.radius, directions=args.directions, seed=args.seed)
        report.setdefault("sharpness", {})[measure] = s.record()
        extra = f" ± {s.stderr:.2g}" if measure == "average" else ""
        say(f"sharpness {measure}: {s.value:.6g}{extra}  {s.settings}")
    if world.rank == 0:
        write_file(args.out, json.dumps(report, indent=2, default=float).encode())
        say(f"wrote {args.out}")
    return 0
