#!/usr/bin/env python
"""The framework's cost per point, with a model that costs nothing: scheduling, writing, bookkeeping.

    python scripts/bench_overhead.py --points 10000 100000 1000000 --ranks 2 4 8 16

The model is one 1x1 linear layer and the data one sample, so a point's evaluation is a few
microseconds and everything else is landscape: building the point's weights, the kernel call,
claiming chunks, the round's agreed status and collective write, the done marks.  For each grid
size and number of ranks (more ranks than cores is fine: the work is oversubscribed) it prints the
wall time, the wall time per point, and the core-seconds per point (wall x min(ranks, cores) /
points), which is what a point costs the machine whatever the oversubscription.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.abspath(__file__)


def tiny_model():
    """--model scripts/bench_overhead.py:tiny_model"""
    torch.manual_seed(0)
    return torch.nn.Linear(1, 1)


def one_sample():
    """--dataset scripts/bench_overhead.py:one_sample"""
    return (torch.ones(1, 1), torch.zeros(1, 1)), None


def main() -> int:
    from landscape.io.surface_file import read as read_surface
    from landscape.parallel.launch import cli_command
    from landscape.provenance import machine

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--points", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8, 16])
    args = p.parse_args()
    out = tempfile.mkdtemp(prefix="bench_overhead_")
    cores = os.cpu_count() or 1
    m = machine()
    print(f"# {m['cpu']}, {cores} cores, {time.strftime('%Y-%m-%d')}; a 1x1 linear layer on one sample (MSE)")
    print(f"{'points':>9} {'ranks':>5} {'seconds':>8} {'ms/point':>9} {'core-ms/point':>14}")
    for points in args.points:
        side = math.isqrt(points)
        grid = [f"--x=-1:1:{side}", f"--y=-1:1:{points // side}"]
        for ranks in args.ranks:
            surf = os.path.join(out, f"s_{points}_{ranks}.h5")
            cmd = cli_command(
                "surface",
                [
                    "--model",
                    f"{HERE}:tiny_model",
                    "--dataset",
                    f"{HERE}:one_sample",
                    "--loss_name",
                    "mse",
                    *grid,
                    "--xignore",
                    "none",
                    "--threads",
                    "1",
                    "--surf_file",
                    surf,
                    "--quiet",
                ],
                ranks,
            )
            subprocess.run(cmd, check=True)
            run = read_surface(surf).run
            n, seconds = run["points_computed"], run["seconds"]
            print(
                f"{n:>9} {ranks:>5} {seconds:>8.2f} {1e3 * seconds / n:>9.4f} "
                f"{1e3 * seconds * min(ranks, cores) / n:>14.4f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
