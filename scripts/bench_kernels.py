#!/usr/bin/env python
"""Each evaluation kernel against the reference kernel and the bare forward passes, in one process, taking turns.

    python scripts/bench_kernels.py --models digits_mlp digits_cnn resnet20 mnist1d_mlp

For each model, on its data (the digits' 1,797 samples; ResNet-20: 1,100 random CIFAR-shaped images;
MNIST-1D: its 5,000 sequences), along two random filter-normalized directions, one thread:

* ``bare``: the model's own forward over the samples at the best batch, no loss, no weights to make
  (the roofline: what no kernel can beat by more than fusing the loss into the forward);
* ``reference settings``: the reference kernel at the reference code's batch 128, one point per pass;
* every kernel at each of a few batch sizes and points per pass, its fastest shown; ``compiled_plain``
  is the compiled kernel without its first layer by linearity (the A/B of that path).

``--heap off`` runs with glibc's malloc defaults instead of the computing commands' heap setting
(``landscape/heap.py``): run the script once with each for the A/B of that setting.

The variants take turns, ``--trials`` rounds of ``--seconds`` each, so that a slow spell of a shared
machine hits all of them; each keeps its fastest trial.  Prints ms per point, the ratio of the
reference kernel's best to each kernel's best (a kernel stays in landscape only where this is >= 1.2
on some model), and each against the bare forward.  Compilation is done before timing.
"""

import argparse
import contextlib
import copy
import sys
import time

import numpy as np
import torch

from landscape import directions as dirs
from landscape import heap
from landscape.data import load_named
from landscape.data.samples import Samples
from landscape.models import build_model
from landscape.provenance import machine
from landscape.surface.evaluation import EvaluationConfig, Evaluator
from landscape.surface.kernels import compiled

SETTINGS = {  # (batch sizes, points per pass) tried per kernel; "all": every sample in one batch
    "reference": (("128", "512", "all"), (1, 8)),
    "compiled": (("512", "all"), (1, 8)),
    "compiled_plain": (("512", "all"), (1, 8)),  # the compiled kernel without its first layer by linearity
}


def data_of(model: str) -> dict[str, Samples]:
    if model == "resnet20":
        g = torch.Generator().manual_seed(0)
        return {
            "train": Samples(torch.randn(1000, 3, 32, 32, generator=g), torch.randint(0, 10, (1000,), generator=g)),
            "test": Samples(torch.randn(100, 3, 32, 32, generator=g), torch.randint(0, 10, (100,), generator=g)),
        }
    data = load_named("mnist1d" if model.startswith("mnist1d") else "digits")
    return {"train": data.train, "test": data.test}


@contextlib.contextmanager
def without_first_layer(plain: bool):
    """With ``plain``, compiled kernels made inside take no first layer by linearity (the A/B of that path)."""
    found = compiled._first_layer
    if plain:
        compiled._first_layer = lambda problem: None
    try:
        yield
    finally:
        compiled._first_layer = found


def variants(model_name: str, kernels: list[str], max_pass: int):
    torch.manual_seed(0)
    model = build_model(model_name).eval()
    data = data_of(model_name)
    samples = sum(len(s) for s in data.values())
    origin = dirs.origin_tensors(model, "weights")
    g = torch.Generator().manual_seed(1)
    dx, dy = (dirs.random_direction(origin, "filter", "biasbn", g) for _ in range(2))
    inputs = torch.cat([s.inputs for s in data.values()]).float()
    bare_model = copy.deepcopy(model)
    out = {}
    for batch in (128, 512, samples):

        def bare(k, batch=batch):
            with torch.inference_mode():
                for _ in range(k):
                    for start in range(0, samples, batch):
                        bare_model(inputs[start : start + batch])

        out[("bare", batch, 1)] = bare
    for kernel in kernels:
        batches, passes = SETTINGS[kernel]
        settings = {(int(b) if b != "all" else samples, min(k, max_pass)) for b in batches for k in passes}
        if kernel == "reference":
            settings.add((128, 1))
        for batch, k in sorted(settings):
            with without_first_layer(kernel == "compiled_plain"):
                ev = Evaluator(
                    model,
                    origin,
                    dx,
                    dy,
                    data,
                    "crossentropy",
                    EvaluationConfig(kernel=kernel.removesuffix("_plain"), batch_size=batch, points_per_pass=k),
                )
            rng = np.random.default_rng(0)
            points = rng.uniform(-0.5, 0.5, (k, 2))
            ev.evaluate(points)  # warm up, compile
            out[(kernel, batch, k)] = lambda k, ev=ev, points=points: ev.evaluate(points)
    return out, samples


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["digits_mlp", "digits_cnn", "resnet20"])
    p.add_argument("--kernels", nargs="+", default=list(SETTINGS))
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--seconds", type=float, default=0.3)
    p.add_argument(
        "--max_pass",
        type=int,
        default=32,
        help="most points per pass tried (a trial is at least one pass: 2 for ResNet-20, whose point takes a second)",
    )
    p.add_argument(
        "--heap",
        choices=("on", "off"),
        default="on",
        help="on: keep the memory a batch frees, as the computing commands do (landscape/heap.py); off: glibc's "
        "defaults (the A/B of that setting: run the script once with each, each a fresh process)",
    )
    args = p.parse_args()
    kept = heap.keep_freed_memory() if args.heap == "on" else False
    torch.set_num_threads(1)
    m = machine()
    print(
        f"# {m['cpu']}, {m['cores']} cores, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, 1 thread; "
        f"{args.trials} trials of {args.seconds} s per variant, taking turns; heap setting {'on' if kept else 'off'}",
        flush=True,
    )
    for model in args.models:
        table, samples = variants(model, args.kernels, args.max_pass)
        best = dict.fromkeys(table, float("inf"))
        for _ in range(args.trials):
            for key, run in table.items():
                k = key[2]
                done, started = 0, time.perf_counter()
                while True:
                    run(k)
                    done += k
                    spent = time.perf_counter() - started
                    if spent >= args.seconds:
                        break
                best[key] = min(best[key], spent / done)
        fastest = {}
        for (kernel, batch, k), t in best.items():
            if kernel not in fastest or t < fastest[kernel][0]:
                fastest[kernel] = (t, batch, k)
        bare, reference = fastest["bare"][0], fastest["reference"][0]
        print(f"\n{model}, {samples} samples per point")
        print(f"{'variant':<34}{'ms/point':>10}{'reference best / this':>24}{'this / bare':>14}")
        rows = [
            ("bare forward", fastest["bare"]),
            ("reference settings (128, 1)", (best[("reference", 128, 1)], 128, 1)),
        ]
        rows += [(f"{kernel}", fastest[kernel]) for kernel in args.kernels]
        for label, (t, batch, k) in rows:
            name = label if label.startswith(("bare", "reference settings")) else f"{label} (batch {batch}, K {k})"
            if label == "bare forward":
                name = f"bare forward (batch {batch})"
            print(f"{name:<34}{t * 1e3:>10.3f}{reference / t:>24.2f}{t / bare:>14.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
