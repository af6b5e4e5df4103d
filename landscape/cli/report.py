"""``landscape report``: the scorecard of a batch-size study, from a manifest of trained networks.

For every finished run of the manifest it computes (or reads back) a 1-D and a 2-D surface and the
curvature measures (``report.measures``), then writes the tables (CSV, Markdown, LaTeX), the
figures, and the verdict.  Under ``mpiexec`` the ranks share the runs, each network on one rank
(rank r takes runs r, r + size, ...): the right split for a study of many networks.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace

from ..errors import InputError, UsageError
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from . import boundary

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

OUTPUT_FILES = ("{name}.csv", "{name}_runs.csv", "{name}_correlations.csv", "{name}.md", "{name}.tex", "{name}.json")


def build_parser(prog: str = "landscape report") -> argparse.ArgumentParser:
    from ..report.measures import MeasureConfig

    d = MeasureConfig()
    p = boundary.ArgumentParser(
        prog=prog,
        epilog=EXAMPLES,
        description="Scorecard of trained networks by batch "
        "size and recipe: losses, errors, gap, Hessian λmax and trace, ε- and adaptive "
        "sharpness, average rise; tables, figures and a verdict.",
    )
    p.add_argument("manifest", help="a landscape sweep's manifest (or its folder), or a CSV of checkpoints")
    p.add_argument(
        "--config",
        help="a landscape study file instead: its sweep's manifest, out/report, figures, "
        "name and [report] table (flags given here win)",
    )
    p.add_argument("--out", required=True, help="folder of the measurements: one runs/<run>/ per network")
    p.add_argument("--figures", help="folder of the scorecard: its tables and figures (default: --out)")
    p.add_argument("--name", default="scorecard", help="stem of the tables' and figures' names (default: scorecard)")
    p.add_argument("--model", help="the runs' model where the manifest does not say")
    p.add_argument("--dataset", help="the runs' data set where the manifest does not say")
    p.add_argument("--datapath", help="folder of the CIFAR files")
    p.add_argument("--num_classes", type=int, help="outputs of a registry model (default: 100 for cifar100, else 10)")
    p.add_argument("--grid_1d", default=d.grid_1d, help=f"the 1-D surface, MIN:MAX:NUM (default: {d.grid_1d})")
    p.add_argument("--grid_2d", default=d.grid_2d, help=f"the 2-D surface along x and y (default: {d.grid_2d})")
    p.add_argument("--radius", type=float, default=d.radius, help=f"average and 2-D rise: radius (default: {d.radius})")
    p.add_argument(
        "--directions",
        type=int,
        default=d.directions,
        help=f"average rise: random filter-normalized directions (default: {d.directions})",
    )
    p.add_argument(
        "--trace_samples",
        type=int,
        default=d.trace_samples,
        help=f"Hutchinson: Rademacher vectors (default: {d.trace_samples})",
    )
    p.add_argument("--tol", type=float, default=d.tol, help=f"Lanczos tolerance of λmax (default: {d.tol})")
    p.add_argument("--rho", type=float, default=d.rho, help=f"adaptive sharpness: |d| <= rho |w| (default: {d.rho})")
    p.add_argument(
        "--epsilon", type=float, default=d.epsilon, help=f"ε-sharpness: |d| <= epsilon (|w| + 1) (default: {d.epsilon})"
    )
    p.add_argument(
        "--subspace",
        type=int,
        default=d.subspace,
        help="ε-sharpness in a random subspace of this dimension (default: 0, the full space)",
    )
    p.add_argument(
        "--maxiter",
        type=int,
        default=d.maxiter,
        help=f"L-BFGS-B iterations of the worst-case searches (default: {d.maxiter})",
    )
    p.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default=d.dtype,
        help=f"Hessian products and searches (default: {d.dtype})",
    )
    p.add_argument(
        "--batch_size", type=int, default=d.batch_size, help=f"samples per forward pass (default: {d.batch_size})"
    )
    p.add_argument("--train_subset", type=int, metavar="N", help="a seeded subset of N training samples")
    p.add_argument(
        "--loss_name",
        default=d.loss_name,
        help=f"crossentropy, mse or package.module:callable (default: {d.loss_name})",
    )
    p.add_argument("--seed", type=int, default=d.seed, help="directions and random vectors (default: 0)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the verdict (default: 0.05)")
    p.add_argument(
        "--permutations",
        type=int,
        default=10000,
        help="random permutations of a p-value when there are too many to enumerate (default: 10000)",
    )
    p.add_argument(
        "--formats", nargs="+", default=["png", "pdf"], help="figure formats: png, pdf, svg (default: png pdf)"
    )
    p.add_argument(
        "--style",
        choices=("default", "paper", "talk"),
        default="default",
        help="the figures' look: paper (column widths, 8 pt fonts), talk (large) (default: default)",
    )
    p.add_argument("--device", default="auto", help="auto (CUDA when there is one), cpu, cuda, cuda:N (default: auto)")
    p.add_argument("--allow_shared_gpus", action="store_true", help="let several ranks of a node share a GPU")
    p.add_argument("--threads", type=int, help="torch threads per rank")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def spelling() -> dict[str, str]:
    return boundary.flags(build_parser())


def _targets(args, runs):
    from ..data import DataConfig
    from ..errors import ConfigError
    from ..models import ModelConfig
    from ..report.measures import Target

    targets = {}
    for run in runs:
        model, dataset = run.model or args.model, run.dataset or args.dataset
        if not model:
            raise UsageError(
                f"the manifest does not say which model {run.name} is (no model column, and its "
                "checkpoint records none): give --model"
            )
        target = Target(model=model, dataset=dataset or "digits", datapath=args.datapath, num_classes=args.num_classes)
        try:  # a bad model name or data set now, not after the first network's surfaces
            ModelConfig(target.model, num_classes=target.num_classes)
            DataConfig(target.dataset, datapath=target.datapath)
        except ConfigError as exc:
            if (run.model and exc.fields == ("model",)) or (run.dataset and exc.fields == ("dataset",)):
                raise InputError(f"manifest {args.manifest}, run {run.name}: {exc}") from None
            raise
        targets[run.name] = target
    kinds = sorted({(t.model, t.dataset) for t in targets.values()})
    if len(kinds) > 1:
        raise InputError(
            f"manifest {args.manifest} mixes networks or data sets ({'; '.join(f'{m} on {d}' for m, d in kinds)}): "
            "a scorecard compares batch sizes of one network on one data set; give one per report"
        )
    return targets


def expand(argv: list[str], prog: str) -> list[str]:
    """``--config study.toml`` replaced by the study's report arguments (the flags given after them win)."""
    pre = boundary.ArgumentParser(prog=prog, add_help=False)
    pre.add_argument("--config")
    known, rest = pre.parse_known_args(argv)
    if known.config is None:
        return argv
    from ..workflows.study import report_flags, study_file

    return [*report_flags(study_file(known.config)), *rest]


def checked(argv: list[str], prog: str = "landscape report"):
    """The parsed flags and the measure settings, every value checked; no file is read."""
    from ..report.measures import MeasureConfig

    args = build_parser(prog).parse_args(expand(argv, prog))
    config = MeasureConfig(**boundary.fields_of(vars(args), MeasureConfig))
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha={args.alpha:g}: expected a number strictly between 0 and 1")
    if args.permutations < 100:
        raise UsageError(f"--permutations={args.permutations}: expected at least 100")
    if any(f not in ("png", "pdf", "svg") for f in args.formats):
        raise UsageError(f"--formats {' '.join(args.formats)}: expected png, pdf or svg")
    if not args.name or os.sep in args.name:
        raise UsageError(f"--name={args.name!r}: expected a file name stem without a folder")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads={args.threads}: expected a positive number of threads")
    return args, config


def plan(argv: list[str], prog: str):
    from ..io.paths import output_path
    from ..report.runs import read_runs

    args, config = checked(argv, prog)
    runs, skipped = read_runs(args.manifest)
    targets = _targets(args, runs)
    figures = args.figures or args.out
    for folder, flag in ((args.out, "out"), (figures, "figures")):
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise InputError(f"--{flag}={folder} is a file; expected a folder (it is created if missing)")
    if os.path.isdir(figures):
        for pattern in OUTPUT_FILES:
            output_path(os.path.join(figures, pattern.format(name=args.name)), "file", "figures")
    return args, config, runs, skipped, targets, figures


def main(argv: list[str], prog: str = "landscape report") -> int:
    import torch

    from ..parallel import devices
    from ..parallel.comm import threads_per_rank
    from ..report.measures import measure_run
    from ..report.runs import describe

    world = comm_module.world()
    args, config, runs, skipped, targets, figures = agree(world, plan, argv, prog)
    say = print if world.rank == 0 else (lambda *_, **__: None)
    threads = threads_per_rank(world, args.threads)
    torch.set_num_threads(threads.count)
    device = agree(world, devices.for_rank, args.device, world, args.allow_shared_gpus)
    say(
        f"{describe(runs)}; {world.size} rank{'s' * (world.size > 1)}, {threads.count} thread"
        f"{'s' * (threads.count > 1)} each" + (f"; left out, unfinished: {', '.join(skipped)}" if skipped else ""),
        flush=True,
    )
    agree(world, lambda: [os.makedirs(f, exist_ok=True) for f in (args.out, figures)] if world.rank == 0 else None)

    def mine() -> list[dict]:
        done = []
        for i in range(world.rank, len(runs), world.size):
            run, started = runs[i], time.perf_counter()
            target = replace(targets[run.name], device=device, threads=threads.count)
            result = measure_run(run, target, config, os.path.join(args.out, "runs", run.name))
            v = result["values"]
            print(
                f"[{i + 1}/{len(runs)}] {run.name}: test error {v['test_error']:.2f} %, λmax {v['lambda_max']:.4g}, "
                f"trace {v['trace']:.4g}, average rise {v['average_rise']:.3g} "
                f"({time.perf_counter() - started:.0f} s, rank {world.rank})",
                flush=True,
            )
            done.append(result)
        return done

    shares = world.gather(agree(world, mine))

    def written() -> None:  # under agree: a failure on rank 0 ends every rank, none waits
        if world.rank == 0:
            write_report(
                [shares[i % world.size][i // world.size] for i in range(len(runs))], args, config, figures, skipped
            )

    agree(world, written)
    return 0


def write_report(results: list[dict], args, config, figures: str, skipped: list[str] = ()) -> None:
    from ..io.atomic import write_file
    from ..report import tables
    from ..report.runs import Run, describe
    from ..report.scorecard import build

    settings = {k: v for k, v in config.record().items() if v is not None}
    card = build(
        results,
        alpha=args.alpha,
        permutations=args.permutations,
        seed=args.seed,
        settings=settings,
        left_out=list(skipped),
    )
    runs = [r["run"] for r in results]
    target = results[0]["target"]
    description = (
        f"{target['model']} on {target['dataset']}; "
        + describe([Run(**r) for r in runs])
        + "."
        + (f" Left out, unfinished: {', '.join(skipped)}." if skipped else "")
    )
    stem = os.path.join(figures, args.name)
    for suffix, text in (
        ("", tables.groups_csv(card)),
        ("_runs", tables.runs_csv(card)),
        ("_correlations", tables.correlations_csv(card)),
    ):
        write_file(f"{stem}{suffix}.csv", text.encode())
    write_file(f"{stem}.md", tables.markdown(card, description=description).encode())
    write_file(f"{stem}.tex", tables.latex(card).encode())
    write_file(f"{stem}.json", (json.dumps(card.record(), indent=2, default=float) + "\n").encode())
    paths = [os.path.join(figures, pattern.format(name=args.name)) for pattern in OUTPUT_FILES]

    from ..plotting.look import use

    with use(args.style) as look:
        paths += _figures(results, args, config, card, stem, look)
    print("\n" + tables.markdown(card, description=description))
    for path in paths:
        print(f"wrote {path}")


def _figures(results, args, config, card, stem, look) -> list[str]:
    import numpy as np

    from ..io.surface_file import read
    from ..plotting.oned import Style1D, write_1d
    from ..plotting.twod import Style2D, write_2d
    from ..report.figures import write_measures

    dpi = look.dpi or 150
    runs = [r["run"] for r in results]
    paths = write_measures(card, f"{stem}_measures", formats=tuple(args.formats), dpi=dpi, look=look)
    # One network per batch size for the surface figures: the first recipe's lowest seed.
    first = runs[0]["recipe"]
    shown = {}
    for result in results:
        run = result["run"]
        if run["recipe"] == first and run["batch_size"] not in shown:
            shown[run["batch_size"]] = run
    recipes = len({r["recipe"] for r in runs}) > 1
    labels = [f"batch {b}, seed {r['seed']}" + (f" ({first})" if recipes else "") for b, r in shown.items()]
    one = [read(os.path.join(args.out, "runs", r["name"], "surface_1d.h5")) for r in shown.values()]
    two = [read(os.path.join(args.out, "runs", r["name"], "surface_2d.h5")) for r in shown.values()]
    # One set of levels for every panel, spaced by factors (log) where the values are positive: basins of
    # 0.001 and of 1 both show, whatever the loss and the network.
    positive = all(np.nanmin(s.values["train_loss"]) > 0 for s in two)
    levels = Style2D(log=True) if positive else Style2D()
    paths += write_1d(
        one, stem, labels=labels, formats=tuple(args.formats), dpi=dpi, style=Style1D(error=True), look=look
    )[0]
    paths += write_2d(
        two,
        stem,
        kinds=("contour", "contourf"),
        labels=labels,
        formats=tuple(args.formats),
        dpi=dpi,
        style=levels,
        look=look,
    )[0]
    return paths
