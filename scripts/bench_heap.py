#!/usr/bin/env python
"""The heap setting (``landscape/heap.py``) against glibc's defaults, end to end: the same surface, each
run a fresh process, the two taking turns.

    python scripts/bench_heap.py --model digits_cnn --grid=-1:1:11 --batch_size 128 --repeats 3

Each run computes one surface through ``landscape.api.surface`` at fixed settings (the reference kernel,
``--batch_size``, one point per pass: no measuring), on one thread, into a new file; ``on`` first calls
``heap.keep_freed_memory()`` as the computing commands do, ``off`` leaves glibc's malloc as it is.  Prints
each run's computing seconds (from the run record) and the fastest of each, and checks that the two
surfaces are identical bit for bit.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from landscape.io.surface_file import read
from landscape.provenance import machine

RUN = """
import json, sys, torch
from landscape import api, heap
kept = heap.keep_freed_memory() if sys.argv[1] == "on" else False
torch.set_num_threads(1)
r = api.surface(model=sys.argv[2], x=sys.argv[3], y=sys.argv[3], surf_file=sys.argv[4], kernel="reference",
                batch_size=int(sys.argv[5]), points_per_pass=1, threads=1, quiet=True)
print(json.dumps({"seconds": r.seconds, "kept": kept}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="digits_cnn")
    p.add_argument("--grid", default="-1:1:11")
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    m = machine()
    print(
        f"# {m['cpu']}, {m['cores']} cores, {time.strftime('%Y-%m-%d %H:%M')}; {args.model}, grid {args.grid} "
        f"squared, reference kernel, batch {args.batch_size}, 1 point per pass, 1 thread, fresh process each"
    )
    seconds: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for i in range(args.repeats):
            for mode in ("on", "off"):
                path = os.path.join(folder, f"{mode}{i}.h5")
                out = subprocess.run(
                    [sys.executable, "-c", RUN, mode, args.model, args.grid, path, str(args.batch_size)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                done = json.loads(out.stdout.strip().splitlines()[-1])
                if mode == "on" and not done["kept"]:
                    print("the heap setting could not be made here (not glibc?)")
                    return 1
                seconds[mode].append(done["seconds"])
                files[mode] = path
                print(f"run {i + 1} {mode:>3}: {done['seconds']:.2f} s", flush=True)
        same = all(
            np.array_equal(read(files["on"]).values[q], read(files["off"]).values[q], equal_nan=True)
            for q in read(files["on"]).values
        )
    on, off = min(seconds["on"]), min(seconds["off"])
    print(f"fastest: heap setting {on:.2f} s, glibc's defaults {off:.2f} s: {off / on:.2f}x; values identical: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
