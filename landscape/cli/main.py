"""``landscape``: one command, with the toolkit's programs as subcommands.

    landscape surface ...   (alias plot_surface)   compute a loss surface
    landscape plot1d ...    (alias plot_1d)        draw 1-D surface files
    landscape plot2d ...    (alias plot_2d)        draw 2-D surface files
    landscape train ...                            train a network (data-parallel over MPI ranks)
    landscape sweep ...                            train recipes x batch sizes x seeds, with a manifest
    landscape plot-training ...                    test error against batch size, from manifests
    landscape curvature ...                        Hessian eigenvalues, trace, density, sharpness
    landscape report ...                           the scorecard of a batch-size study, from a manifest
    landscape study ...                            train, measure and compare a batch-size study
    landscape rescale ...                          the same network, one layer's units rescaled
    landscape export FILE... --vtk|--html          surfaces for ParaView, or a 3-D web page
    landscape info FILE...                         what a surface or direction file holds
    landscape demo ...                             the small- vs large-batch demo

Every subcommand runs inside the one error boundary (``cli.boundary``), with
its own ``--help``.  The reference code's names are console scripts of their own
and also accepted as subcommands.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from dataclasses import dataclass

from .. import heap
from ..errors import UsageError, exit_codes
from ..parallel import comm as comm_module
from ..parallel import stop
from ..version import __version__
from . import boundary
from .params import flags_of


@dataclass(frozen=True)
class Command:
    module: str  # has main(argv, prog), build_parser() and PARAMS (whose flags spell the messages)
    summary: str
    alias: str = ""  # the reference code's name

    def load(self):
        return importlib.import_module(self.module)


COMMANDS = {
    "surface": Command(
        "landscape.cli.surface",
        "compute a 1-D or 2-D loss surface of a trained network on one process or many MPI ranks, into one HDF5 file",
        alias="plot_surface",
    ),
    "plot1d": Command(
        "landscape.cli.plot_1d", "draw 1-D surface files: loss and accuracy (or error) curves", alias="plot_1d"
    ),
    "plot2d": Command(
        "landscape.cli.plot_2d", "draw 2-D surface files: contours, filled contours, 3-D surfaces", alias="plot_2d"
    ),
    "train": Command(
        "landscape.cli.train",
        "train a network on one process or data-parallel over MPI ranks "
        "(recipes sgd, naive, linear, lars, adaptive, local), resumable checkpoints per epoch",
    ),
    "sweep": Command(
        "landscape.cli.sweep",
        "train every recipe x batch size x seed of a study, resumable, with "
        "a manifest (CSV, JSON); one configuration per job-array task",
    ),
    "plot-training": Command(
        "landscape.cli.plot_training",
        "draw test error against batch size per recipe and the training curves, from sweep manifests",
    ),
    "curvature": Command(
        "landscape.cli.curvature",
        "Hessian eigenvalues (Lanczos), trace, spectral density and "
        "sharpness of one trained network, the ranks sharing the data",
    ),
    "report": Command(
        "landscape.cli.report",
        "scorecard of trained networks by batch size: losses, errors, gap, "
        "Hessian λmax and trace, sharpness, average rise; tables, figures and a verdict",
    ),
    "study": Command(
        "landscape.cli.study",
        "the batch-size study from one command: train (sweep), measure and compare (report) into study_out/",
    ),
    "rescale": Command(
        "landscape.cli.rescale",
        "a checkpoint with one layer's units rescaled (the same function, other weights: Dinh et al. 2017)",
    ),
    "export": Command(
        "landscape.cli.export",
        "surface files for other tools: VTK XML for ParaView (--vtk), a self-contained 3-D web page (--html)",
    ),
    "info": Command(
        "landscape.cli.info",
        "what a surface or direction file holds: grid, progress, value ranges, "
        "identity, runs; landscape's or the reference code's",
    ),
    "demo": Command("landscape.cli.demo", "train a small CNN at batch 16 and 1024, compute and compare their surfaces"),
}
ALIASES = {c.alias: name for name, c in COMMANDS.items() if c.alias}


def overview() -> str:
    width = max(map(len, COMMANDS))
    lines = [
        "usage: landscape <command> [flags]      (landscape <command> --help: its flags)",
        "",
        "Loss landscapes of trained neural networks: surfaces along filter-normalized directions,",
        "computed by MPI ranks into one HDF5 file, and the figures that compare them.",
        "",
        "commands:",
    ]
    for name, c in COMMANDS.items():
        lines.append(f"  {name:<{width}}  {c.summary}" + (f" (alias: {c.alias})" if c.alias else ""))
    lines += [
        "",
        "examples:",
        "  landscape demo",
        "  mpiexec -n 4 landscape surface --model digits_cnn --model_file demo_out/cnn_bs16/final.pt "
        "--x=-1:1:51 --y=-1:1:51",
        "  landscape plot2d demo_out/cnn_bs16_2d.h5 demo_out/cnn_bs1024_2d.h5 --labels 'batch 16' 'batch 1024'",
        "",
        *textwrap.wrap(exit_codes(), 100),
    ]
    return "\n".join(lines)


def _top(argv: list[str]) -> int:
    """``landscape`` without a command: help, version, or a one-line usage error."""

    if not argv:
        raise UsageError(f"a command is needed: one of {', '.join(COMMANDS)} (see landscape --help)")
    if argv[0] in ("-h", "--help"):
        if comm_module.current().rank == 0:
            print(overview())
        return 0
    if argv[0] == "--version":
        if comm_module.current().rank == 0:
            print(f"landscape {__version__}")
        return 0
    raise UsageError(f"unknown command {argv[0]!r}: expected one of {', '.join(COMMANDS)} (see landscape --help)")


def run_command(name: str, argv: list[str], prog: str) -> int:
    """Run subcommand ``name`` with ``argv`` inside the error boundary (the import of its module too:
    a Ctrl-C while torch loads is one line), its messages in its flags' spelling."""

    def spell() -> dict:
        module = COMMANDS[name].load()
        return flags_of(*module.PARAMS)

    if name in (
        "surface",
        "train",
        "sweep",
        "report",
        "curvature",
        "study",
    ):  # before torch loads: a stop signal must find the job ready to stop cleanly
        stop.install()
    if name in heap.COMPUTING:
        heap.keep_freed_memory()

    return boundary.run(lambda args: COMMANDS[name].load().main(args, prog), argv, prog=prog, spell=spell)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = ALIASES.get(argv[0], argv[0]) if argv else ""
    if name in COMMANDS:
        return run_command(name, argv[1:], f"landscape {name}")
    return boundary.run(_top, argv, prog="landscape")


def entry() -> None:
    sys.exit(main())


def alias(name: str):
    """A console script under the reference code's name: ``plot_surface`` is ``landscape surface``."""

    def _entry() -> None:
        sys.exit(run_command(ALIASES[name], sys.argv[1:], name))

    return _entry


plot_surface = alias("plot_surface")
plot_1d = alias("plot_1d")
plot_2d = alias("plot_2d")
