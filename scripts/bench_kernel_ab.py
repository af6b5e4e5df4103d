#!/usr/bin/env python
"""The evaluation kernel of this checkout against another landscape's, or against the bare forward
passes, in one process, taking turns.

    git worktree add /tmp/old <commit>
    python scripts/bench_kernel_ab.py --old /tmp/old --batch 128 --points_per_pass 1
    python scripts/bench_kernel_ab.py --old /tmp/old --batch 1797 --points_per_pass 1 --compile
    python scripts/bench_kernel_ab.py --old /tmp/old --batch 1797 --points_per_pass 8 --train_steps 300
    python scripts/bench_kernel_ab.py --old bare --model digits_cnn --batch 1797 --points_per_pass 8 --compile

``--old bare`` times, in place of another checkout's kernel, the bare forwards of the same number of
points over the same samples at the same batch, as ``bench_roofline.py`` measures its roofline (eager:
one point per call; compiled: in calls of up to 8 points, as ``--compile`` runs them; each point the
model's own weights; no loss, no weights to make, no values).

On a shared machine two processes run minutes apart can differ by tens of percent; here both
kernels evaluate the same points of the same model and data in one process, alternating in trials
of 0.1 s, so a slow spell hits both.  Prints the largest relative difference of their values, the
fastest trial of each (ms per point) and the median ratio new / old over the paired trials.
"""
import argparse
import importlib
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

from landscape import heap


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="root of another landscape checkout (holding landscape/), or "
                                                 "'bare': the bare forward passes")
    p.add_argument("--model", default="digits_mlp")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--points_per_pass", type=int, default=1)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--trials", type=int, default=15)
    p.add_argument("--train_steps", type=int, default=0,
                   help="train the model this many full-batch Adam steps first: a trained model's confident "
                        "scores cost the loss more than an untrained one's (default 0: as initialized)")
    args = p.parse_args()
    torch.set_num_threads(1)
    heap.keep_freed_memory()  # as landscape's computing commands do
    bare = args.old == "bare"
    if not bare:  # the other checkout as the package landscape_old (its modules import each other relatively)
        root = tempfile.mkdtemp(prefix="landscape_old_")
        shutil.copytree(os.path.join(args.old, "landscape"), os.path.join(root, "landscape_old"))
        sys.path.insert(0, root)
    from landscape.data import load_named
    from landscape.models import build_model
    from landscape.surface import directions as dirs
    torch.manual_seed(0)
    model = build_model(args.model)
    data = load_named("digits")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(args.train_steps):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(data.train.inputs), data.train.targets).backward()
        optimizer.step()
    model.eval()
    origin = dirs.origin_tensors(model, "weights")
    g = torch.Generator().manual_seed(0)
    dx, dy = (dirs.random_direction(origin, "filter", "biasbn", g) for _ in range(2))
    kernels = {}
    for tag, module in (("old", "landscape_old.surface.evaluation"), ("new", "landscape.surface.evaluation")):
        if tag == "old" and bare:
            kernels[tag] = _bare(model, data, args)
            continue
        ev = importlib.import_module(module)
        cfg = ev.EvaluationConfig(batch_size=args.batch, points_per_pass=args.points_per_pass, compile=args.compile)
        kernels[tag] = ev.Evaluator(model, origin, dx, dy, {"train": data.train, "test": data.test},
                                    "crossentropy", cfg)
    points = np.random.default_rng(0).uniform(-1, 1, (args.points_per_pass, 2))
    old, new = (kernels[t].evaluate(points) for t in ("old", "new"))
    if not bare:
        print(f"largest relative difference of the values: {float(np.nanmax(np.abs(new - old) / np.abs(old))):.1e}")
    import time
    times = {tag: [] for tag in kernels}
    for _ in range(args.trials):
        for tag, kernel in kernels.items():
            done, started = 0, time.perf_counter()
            while time.perf_counter() - started < 0.1:
                kernel.evaluate(points)
                done += len(points)
            times[tag].append((time.perf_counter() - started) / done)
    o, n = np.array(times["old"]), np.array(times["new"])
    trained = f" trained {args.train_steps} steps" if args.train_steps else ""
    print(f"{args.model}{trained} batch {args.batch}, {args.points_per_pass} per pass{', compiled' if args.compile else ''}: "
          f"{'bare forward' if bare else 'old'} {o.min() * 1e3:.3f} ms per point, new {n.min() * 1e3:.3f}; "
          f"median new / {'bare' if bare else 'old'} {np.median(n / o):.3f}")
    return 0


def _bare(model, data, args):
    """The bare forwards of ``bench_roofline.py`` (its ``bare_pass``), as an object with ``evaluate(points)``:
    eagerly K passes of one point, compiled one pass of K points (in calls of up to 8)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_roofline

    inputs = torch.cat([data.train.inputs, data.test.inputs])
    k = args.points_per_pass if args.compile else 1
    one_pass = bench_roofline.bare_pass(model, inputs, args.batch, k, args.compile, "unrolled" if k > 1 else "vmap")

    class Bare:
        @staticmethod
        def evaluate(points):
            for _ in range(len(points) // k):
                one_pass()
            return np.zeros((len(points), 1))

    return Bare()


if __name__ == "__main__":
    sys.exit(main())
