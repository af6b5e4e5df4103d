#!/usr/bin/env python
"""Curvature against PyHessian (Yao et al. 2020), in one process, one thread, taking turns.

    .venv/bin/pip install --no-deps pyhessian
    python scripts/bench_curvature.py --models mlp resnet20 --dtypes float32 float64

For each model and dtype, on random data (timing does not depend on the values):

* ``mlp``: a ReLU MLP 40-100-100-10 on 4,000 samples of 40 features;
* ``resnet20``: the toolkit's CIFAR ResNet-20 on 1,000 CIFAR-shaped images (3x32x32), 10 classes;

PyHessian given the whole data as one batch (``data=(x, y)``: it keeps the gradient's graph, its
fastest way; its ``dataloader`` way recomputes the gradient at every product), ours made as the API
makes it (``sharded_hessian``: batches of ``--batch_size``, 1,024 by default, each batch's graph kept,
in pieces on a CPU, within its memory budget), BatchNorm in eval mode on both sides (PyHessian sets
eval mode itself), and measures

* (a) one Hessian-vector product: ours (``Hessian.matvec``, numpy in and out) against PyHessian's
  (``hessian_vector_product`` through its kept graph); the set-up, printed apart, is the graph and the
  first product on both sides (ours builds its graph at its first product);
* (b) the top eigenvalue to a relative tolerance of 1e-3: ours (``extreme``: Lanczos stopped on the Ritz
  residual) against ``hessian.eigenvalues(top_n=1, tol=1e-3)`` (power iteration stopped on the change
  of the estimate): wall time, products, and the error against a float64 reference (our Lanczos to
  ``--reference_tol`` in float64);
* (c) Hutchinson's trace: wall time per sample over ``--trace_samples`` Rademacher vectors, ours
  (``hutchinson``) against ``hessian.trace(maxIter=..., tol=-inf)`` (its stop disabled).

Ours and PyHessian's alternate within each round, so that a slow spell of a shared machine hits both;
the tables show medians over the rounds and the ratio ours / PyHessian (below 1: ours is faster).
ResNet-20's rounds are few (``--resnet_rounds``): a product on 1,000 images takes seconds on one core.
"""

import argparse
import copy
import gc
import math
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn

from landscape.curvature import Hessian, extreme, hutchinson
from landscape.curvature.hessian import free_memory
from landscape.data import Samples
from landscape.models import build_model
from landscape.provenance import machine
from landscape.workflows.curvature import sharded_hessian

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def problem(name: str):
    """The model (seed 0) and its random data."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(40, 100), nn.ReLU(), nn.Linear(100, 100), nn.ReLU(), nn.Linear(100, 10))
        return model, torch.randn(4000, 40, generator=g), torch.randint(0, 10, (4000,), generator=g)
    if name == "resnet20":
        model = build_model("resnet20")
        return model, torch.randn(1000, 3, 32, 32, generator=g), torch.randint(0, 10, (1000,), generator=g)
    raise SystemExit(f"--models: {name!r} is not one of mlp, resnet20")


class Counted:
    """PyHessian's product, counted (the module-level function its methods call)."""

    def __init__(self, module):
        self.module, self.original, self.count = module, module.hessian_vector_product, 0
        module.hessian_vector_product = self

    def __call__(self, *args):
        self.count += 1
        return self.original(*args)


def clock(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run(name: str, dtype: str, args, say) -> list[dict]:
    from pyhessian import hessian as PyHessian

    ph_module = sys.modules["pyhessian.hessian"]  # the module (the package's name `hessian` is its class)

    counter = Counted(ph_module)
    model, x, y = problem(name)
    rounds = args.rounds if name == "mlp" else args.resnet_rounds
    trace_samples = args.trace_samples if name == "mlp" else args.resnet_trace_samples
    ours = sharded_hessian(model, (x, y), "crossentropy", args.batch_size, dtype, "cpu")  # as the API makes it
    rng = np.random.default_rng(0)
    v = rng.standard_normal(ours.dim)
    v_list = [t.view(s).to(DTYPES[dtype]) for t, s in zip(torch.split(torch.from_numpy(v), ours.sizes), ours.shapes)]
    setup_ours, _ = clock(lambda: ours.matvec(v))  # builds and keeps the graph, then one product
    theirs_model = copy.deepcopy(model).to(DTYPES[dtype])

    def set_up_theirs():  # the same: its graph (its constructor), then one product
        ph = PyHessian(theirs_model, nn.CrossEntropyLoss(), data=(x.to(DTYPES[dtype]), y), cuda=False)
        counter.original(ph.gradsH, ph.params, v_list)
        return ph

    setup_theirs, ph = clock(set_up_theirs)
    say(
        f"{name} {dtype}: {ours.dim:,} parameters; set-up (the gradient's graph and the first product) "
        f"{setup_ours:.3f} s ours, {setup_theirs:.3f} s PyHessian"
    )
    hvp = {"ours": [], "pyhessian": []}
    for _ in range(rounds):
        hvp["ours"].append(clock(lambda: ours.matvec(v))[0])
        hvp["pyhessian"].append(clock(lambda: counter.original(ph.gradsH, ph.params, v_list))[0])
    eig = {"ours": [], "pyhessian": [], "ours_products": [], "pyhessian_products": [], "ours_value": [], "ph_value": []}
    eig.update(residual=[], residual_products=[], residual_value=[])
    for r in range(max(1, rounds // 4) if name == "mlp" else 1):
        for stop, key in (("value", "ours"), ("residual", "residual")):
            if stop == "residual" and name != "mlp":
                continue  # ResNet-20: the value rule alone (each product takes seconds)
            start = ours.products
            seconds, found = clock(lambda r=r, stop=stop: extreme(ours, k=1, end="top", tol=1e-3, seed=r, stop=stop))
            eig[key].append(seconds)
            eig[f"{key}_products"].append(ours.products - start)
            eig[f"{key}_value"].append(found.values[0])
        torch.manual_seed(r)
        counter.count = 0
        default = torch.get_default_dtype()
        torch.set_default_dtype(DTYPES[dtype])  # its random start vector in the model's dtype
        try:
            seconds, (values, _) = clock(lambda: ph.eigenvalues(maxIter=100, tol=1e-3, top_n=1))
        finally:
            torch.set_default_dtype(default)
        eig["pyhessian"].append(seconds)
        eig["pyhessian_products"].append(counter.count)
        eig["ph_value"].append(values[0])
    trace = {"ours": [], "pyhessian": []}
    for r in range(max(1, rounds // 10) if name == "mlp" else 1):
        seconds, t = clock(lambda r=r: hutchinson(ours, samples=trace_samples, seed=r))
        trace["ours"].append(seconds / t.samples)
        torch.manual_seed(r)
        seconds, samples = clock(lambda: ph.trace(maxIter=trace_samples, tol=-math.inf))
        assert len(samples) == trace_samples
        trace["pyhessian"].append(seconds / len(samples))
    ph_module.hessian_vector_product = counter.original
    if name != "mlp":  # the float64 reference does not fit beside the kept graphs: ours in float32, tighter
        found = extreme(ours, k=1, end="top", tol=args.resnet_reference_tol, seed=1)
        eig["reference"] = found.values[0]
        say(
            f"  reference: lambda_max {found.values[0]:.10g} ({dtype} Lanczos, residual <= "
            f"{args.resnet_reference_tol:g}, {found.products} products, converged {found.converged})"
        )
    say(
        f"  one HVP {statistics.median(hvp['ours']):.4g} s ours, {statistics.median(hvp['pyhessian']):.4g} s "
        f"PyHessian; top eigenvalue {statistics.median(eig['ours']):.4g} s, {statistics.median(eig['pyhessian']):.4g}"
        f" s; trace per sample {statistics.median(trace['ours']):.4g} s, {statistics.median(trace['pyhessian']):.4g} s"
    )
    return hvp, eig, trace, rounds, trace_samples


def reference(name: str, tol: float, say) -> float:
    """The top eigenvalue by our Lanczos in float64 to ``tol``, the graph kept in most of the free memory."""
    model, x, y = problem(name)
    h = Hessian(model, Samples(x, y), dtype="float64", batch_size=len(y), graph_budget=int(0.8 * free_memory("cpu")))
    found = extreme(h, k=1, end="top", tol=tol, seed=1)
    say(
        f"{name} reference: lambda_max {found.values[0]:.10g} (float64 Lanczos, tol {tol:g}, {found.products} "
        f"products, converged {found.converged}, max residual {max(found.residuals):.1e})"
    )
    return found.values[0]


def rows_of(name, dtype, measured, lam) -> list[dict]:
    hvp, eig, trace, rounds, trace_samples = measured
    med = statistics.median
    err = lambda values: max(abs(v - lam) / abs(lam) for v in values)  # noqa: E731
    rows = [
        dict(
            model=name,
            dtype=dtype,
            what="one HVP (s)",
            ours=med(hvp["ours"]),
            theirs=med(hvp["pyhessian"]),
            detail=f"{rounds} rounds, median of the rounds' ratios "
            f"{med(a / b for a, b in zip(hvp['ours'], hvp['pyhessian'])):.2f}; "
            f"fastest {min(hvp['ours']):.4g} vs {min(hvp['pyhessian']):.4g}",
        ),
        dict(
            model=name,
            dtype=dtype,
            what="top eigenvalue to 1e-3, value rule (s)",
            ours=med(eig["ours"]),
            theirs=med(eig["pyhessian"]),
            detail=f"products {med(eig['ours_products']):g} vs {med(eig['pyhessian_products']):g}; relative error "
            f"{err(eig['ours_value']):.1e} vs {err(eig['ph_value']):.1e}; {len(eig['ours'])} start(s)",
        ),
        dict(
            model=name,
            dtype=dtype,
            what=f"Hutchinson, s per sample ({trace_samples})",
            ours=med(trace["ours"]),
            theirs=med(trace["pyhessian"]),
            detail=f"{len(trace['ours'])} round(s)",
        ),
    ]
    if eig["residual"]:
        rows.insert(
            2,
            dict(
                model=name,
                dtype=dtype,
                what="top eigenvalue, residual <= 1e-3 (s)",
                ours=med(eig["residual"]),
                theirs=med(eig["pyhessian"]),
                detail=f"products {med(eig['residual_products']):g} vs {med(eig['pyhessian_products']):g}; relative "
                f"error {err(eig['residual_value']):.1e} vs {err(eig['ph_value']):.1e}",
            ),
        )
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["mlp", "resnet20"])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=sorted(DTYPES))
    p.add_argument(
        "--rounds", type=int, default=20, help="HVP rounds on the MLP (eigenvalue: a quarter, trace: a tenth)"
    )
    p.add_argument("--resnet_rounds", type=int, default=3, help="HVP rounds on ResNet-20 (eigenvalue, trace: one)")
    p.add_argument("--batch_size", type=int, default=1024, help="ours: samples per batch (the API's default)")
    p.add_argument("--trace_samples", type=int, default=30)
    p.add_argument("--resnet_trace_samples", type=int, default=5)
    p.add_argument("--reference_tol", type=float, default=1e-10)
    p.add_argument("--resnet_reference_tol", type=float, default=1e-6)
    args = p.parse_args(argv)
    try:
        import pyhessian  # noqa: F401
    except ImportError:
        raise SystemExit("pyhessian is not installed: .venv/bin/pip install --no-deps pyhessian") from None
    torch.set_num_threads(1)
    info = machine()
    say = lambda text: print(text, flush=True)  # noqa: E731
    say(f"# {info.get('cpu', '?')}, torch {torch.__version__}, one thread; {' '.join(sys.argv)}")
    rows = []
    for name in args.models:
        measured = {}
        for dtype in args.dtypes:
            measured[dtype] = run(name, dtype, args, say)
            gc.collect()  # the kept graphs of both sides: the next Hessian needs the memory
        lam = reference(name, args.reference_tol, say) if name == "mlp" else None
        for dtype in args.dtypes:
            rows += rows_of(name, dtype, measured[dtype], lam if lam is not None else measured[dtype][1]["reference"])
    say("\n| model | dtype | measure | ours | PyHessian | ours / PyHessian | notes |")
    say("|---|---|---|---:|---:|---:|---|")
    for r in rows:
        say(
            f"| {r['model']} | {r['dtype']} | {r['what']} | {r['ours']:.4g} | {r['theirs']:.4g} | "
            f"{r['ours'] / r['theirs']:.2f} | {r['detail']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
