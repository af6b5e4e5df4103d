#!/usr/bin/env python
"""Points/s of one surface on 1 and on N ranks, and whether the results are identical bit for bit.

    python scripts/bench_ranks.py --model_file demo_out/cnn_bs16/final.pt --grid=-1:1:31 --ranks 1 2

Every run uses the same direction file; each writes its own surface file under
--out.  Prints one line per run (ranks, threads per rank, points, seconds,
points/s, points/s per rank, parallel efficiency against the first run) and the bit-for-bit
comparison with the first run.  Other flags go to ``landscape surface`` (``--kernel compiled``, ...).
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from landscape.io.surface_file import read as read_surface
from landscape.parallel.launch import cli_command


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="digits_cnn")
    p.add_argument("--model_file", required=True)
    p.add_argument("--grid", default="-1:1:31", help="MIN:MAX:NUM for both x and y")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--threads", type=int, default=1, help="threads per rank")
    p.add_argument("--out", default=None, help="folder for the surface files (default: a temporary one)")
    args, extra = p.parse_known_args()  # anything else goes to landscape surface (--kernel, --batch_size ...)
    out = args.out or tempfile.mkdtemp(prefix="bench_ranks_")
    os.makedirs(out, exist_ok=True)
    dir_file = os.path.join(out, "directions.h5")
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d')}; model {args.model}, grid {args.grid} x {args.grid} {' '.join(extra)}"
    )
    print(
        f"{'ranks':>5} {'threads':>7} {'points':>7} {'seconds':>8} {'points/s':>9} {'per rank':>9} "
        f"{'efficiency':>10}  identical"
    )
    first = None
    for ranks in args.ranks:
        surf = os.path.join(out, f"surface_{ranks}ranks_{args.threads}threads.h5")
        cmd = cli_command(
            "surface",
            [
                "--model",
                args.model,
                "--model_file",
                args.model_file,
                f"--x={args.grid}",
                f"--y={args.grid}",
                "--dir_file",
                dir_file,
                "--surf_file",
                surf,
                "--threads",
                str(args.threads),
                "--quiet",
                *extra,
            ],
            ranks if ranks > 1 else None,
        )
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        s = read_surface(surf)
        first = first or s
        same = all(np.array_equal(s.values[q], first.values[q]) for q in first.values)
        a = s.run
        efficiency = a["points_per_second_per_rank"] / first.run["points_per_second_per_rank"]
        print(
            f"{ranks:>5} {args.threads:>7} {a['points_computed']:>7} {a['seconds']:>8.2f} "
            f"{a['points_per_second']:>9.1f} {a['points_per_second_per_rank']:>9.1f} {efficiency:>10.2f}  {same}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
