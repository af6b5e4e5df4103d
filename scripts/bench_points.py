#!/usr/bin/env python
"""Points per pass of the reference kernel, with the whole data set in one batch: what ``auto``'s start
(``landscape/surface/cost.py``, ``start_points``) rests on.

    python scripts/bench_points.py --threads 1 2

For each model on its data (the digits MLP and CNN: the 1,797 digits; the MNIST-1D MLP: its 5,000
sequences), training and test sets in one batch, along two random directions, heap setting on (as the
computing commands run): ms per point of the reference kernel at K = 1, 2, 4, 8, 16 points per pass,
taking turns, fastest of ``--trials``, and each K's speed-up over one point per pass.
"""

import argparse
import sys
import time

import torch

from landscape import heap
from landscape.data import load_named
from landscape.losses import Loss
from landscape.models import build_model
from landscape.provenance import machine
from landscape.surface.kernels import Problem, make

MODELS = {"mnist1d_mlp": "mnist1d", "digits_mlp": "digits", "digits_cnn": "digits"}
PASSES = (1, 2, 4, 8, 16)


def problem(name: str) -> Problem:
    torch.manual_seed(0)
    model = build_model(name).eval()
    data = load_named(MODELS[name])
    sets = {
        "train": (data.train.inputs.float(), data.train.targets),
        "test": (data.test.inputs.float(), data.test.targets),
    }
    origin = {k: p.detach().double() for k, p in model.named_parameters()}
    directions = [{k: torch.randn_like(v) * 0.01 for k, v in origin.items()} for _ in range(2)]
    loss = Loss("crossentropy")
    return Problem.of(model, origin, directions, sets, loss, torch.float32, torch.device("cpu"), True)


def timed(name: str, trials: int, seconds: float) -> dict[int, float]:
    p = problem(name)
    samples = sum(len(inputs) for inputs, _ in p.sets.data.values())
    kernels = {k: (make("reference", p, samples, k), torch.rand((k, 2), dtype=torch.float64)) for k in PASSES}
    best = dict.fromkeys(PASSES, float("inf"))
    with torch.inference_mode():
        for kernel, points in kernels.values():
            kernel(points)  # warm up
        for _ in range(trials):
            for k, (kernel, points) in kernels.items():
                calls, started = 0, time.perf_counter()
                while time.perf_counter() - started < seconds:
                    kernel(points)
                    calls += 1
                best[k] = min(best[k], (time.perf_counter() - started) / (calls * k) * 1e3)
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--seconds", type=float, default=0.3)
    args = p.parse_args()
    heap.keep_freed_memory()
    m = machine()
    print(
        f"# {m['cpu']}, {m['cores']} cores, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}; reference "
        f"kernel, whole data set in one batch, {args.trials} trials of {args.seconds} s, taking turns; ms per point"
    )
    print(f"{'model':<13}{'threads':>8}" + "".join(f"{'K ' + str(k):>16}" for k in PASSES))
    for threads in args.threads:
        torch.set_num_threads(threads)
        for name in args.models:
            best = timed(name, args.trials, args.seconds)
            cells = "".join(f"{best[k]:>8.3f} ({best[1] / best[k]:.2f}x)" for k in PASSES)
            print(f"{name:<13}{threads:>8}{cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
