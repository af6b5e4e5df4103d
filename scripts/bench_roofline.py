#!/usr/bin/env python
"""A surface's wall time against the forward roofline, and auto settings against the reference's.

    python scripts/bench_roofline.py --model digits_mlp --grid=-1:1:51 --ranks 2 --compiled
    python scripts/bench_roofline.py --model resnet20 --cifar_images 1000 --grid=-1:1:5 --ranks 2

The roofline is the time of the bare forward passes of all points over tensors already in memory,
same model, data, dtype and threads, at the best batch size and points per pass found by a sweep
(no loss, no accuracy, no scheduling, no file): the sweep runs in one process, then its three
fastest settings run again in ``--ranks`` processes at once (as the ranks share the machine), each
process doing the bare forwards of its share of the points (points / ranks) start to end, three times,
and the roofline is the fastest of these trials among them, a trial lasting as long as its slowest
process: the time the forward passes alone take for the surface, measured as the surface's own time
is (a surface ends with its last rank).  Then ``landscape surface`` computes the same
surface on ``--ranks`` ranks through one direction file, with the reference code's settings
(reference kernel, batch 128, one point per pass) and with ``--kernel auto`` (kernel, batch and
points per pass chosen by measurement); with ``--compiled`` also the roofline of the compiled forward
and a ``--kernel compiled`` surface.  The
computing time of each surface comes from its run record (start-up, and so compilation, is excluded
from it; auto's measuring, ``tune_seconds`` in the record, and compilation are printed apart). The
roofline's processes keep the memory a batch frees, as ``landscape``'s computing commands do
(``landscape.heap``). Each surface is computed ``--repeats`` times, the settings taking turns, and its
fastest run counts, as the roofline's fastest trial does; and since this machine's speed drifts, each
turn also measures the roofline again just before its surfaces, and the median of those paired ratios
is printed.  On a CPU
landscape runs a pass's points one after another in one call; compiled, the roofline sweep tries
that form of K points per pass as well as vmap and keeps the faster (eagerly that form's bare
forwards are one point per pass, which the sweep measures).  Prints one table; every number is
from this run.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch.func import functional_call, vmap

from landscape import directions as dirs
from landscape import heap
from landscape.data import load_named
from landscape.grid import Grid
from landscape.io.direction_file import read as read_directions
from landscape.io.surface_file import read as read_surface
from landscape.models import build_model
from landscape.parallel import devices
from landscape.parallel.launch import cli_command
from landscape.provenance import machine
from landscape.surface.evaluation import EvaluationConfig, Evaluator
from landscape.surface.kernels import compiled as compiled_kernel

BATCHES = (64, 128, 256, 512, 1024, 2048, 4096)
PASSES = (1, 2, 4, 8, 16, 32)


def cifar_folder(folder: str, images: int) -> str:
    """A CIFAR-10 folder in the standard format holding ``images`` random training images (and 100 test)."""
    import pickle

    root = os.path.join(folder, "cifar-10-batches-py")
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    per = -(-images // 5)
    for i in range(1, 6):
        n = min(per, images - (i - 1) * per)
        with open(os.path.join(root, f"data_batch_{i}"), "wb") as f:
            pickle.dump(
                {
                    b"data": rng.integers(0, 256, (max(n, 0), 3072), dtype=np.uint8),
                    b"labels": rng.integers(0, 10, max(n, 0)).tolist(),
                },
                f,
            )
    with open(os.path.join(root, "test_batch"), "wb") as f:
        pickle.dump(
            {b"data": rng.integers(0, 256, (100, 3072), dtype=np.uint8), b"labels": rng.integers(0, 10, 100).tolist()},
            f,
        )
    with open(os.path.join(root, "batches.meta"), "wb") as f:
        pickle.dump({b"label_names": [f"c{i}".encode() for i in range(10)]}, f)
    return folder


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


_FORWARDS: dict = {}
FORMS = ("vmap", "unrolled")  # K points per pass: one vmapped forward, or (compiled) K forwards in one call


def forward_of(model, k: int, compiled: bool, form: str = "vmap"):
    """The bare forward of ``k`` points (a plain one for one point: vmap over one costs more), eager or
    compiled as landscape's compiled kernel compiles (static shapes: each batch shape compiled once).
    ``unrolled``: as the compiled kernel runs a pass, ``min(k, UNROLL)`` forwards one after another in
    one compiled call."""
    if (k, compiled, form) not in _FORWARDS:
        if k == 1:
            forward = lambda w, x: functional_call(model, w, (x,))
        elif form == "unrolled":
            group = min(k, compiled_kernel.UNROLL)
            forward = lambda w, x: [functional_call(model, {n: v[i] for n, v in w.items()}, (x,)) for i in range(group)]
        else:
            forward = vmap(lambda w, x: functional_call(model, w, (x,)), in_dims=(0, None))
        _FORWARDS[(k, compiled, form)] = compiled_kernel._compiled(forward) if compiled else forward
    return _FORWARDS[(k, compiled, form)]


def bare_pass(model, inputs, batch: int, k: int, compiled: bool = False, form: str = "vmap"):
    """A function that runs the bare forward passes of ``k`` points over all ``inputs`` once (warmed up,
    and compiled, here)."""
    device = str(inputs.device)
    params = {n: p.detach() for n, p in model.named_parameters()}
    calls = 1
    if form == "unrolled" and k > 1:
        calls, k_call = -(-k // compiled_kernel.UNROLL), min(k, compiled_kernel.UNROLL)
        stacked = {n: torch.stack([p] * k_call) for n, p in params.items()}
    else:
        stacked = params if k == 1 else {n: torch.stack([p] * k) for n, p in params.items()}
    forward = forward_of(model, k, compiled, form)

    @torch.inference_mode()
    def one_pass():
        for start in range(0, len(inputs), batch):
            for _ in range(calls):
                forward(stacked, inputs[start : start + batch])
        sync(device)

    one_pass()
    return one_pass


def per_point(
    model, inputs, batch: int, k: int, compiled: bool = False, seconds: float = 0.3, form: str = "vmap"
) -> float:
    """Seconds per point of bare forward passes of ``k`` points over all ``inputs``: the best of three
    trials ``seconds`` long (the sweep's measure, in one process)."""
    one_pass = bare_pass(model, inputs, batch, k, compiled, form)
    best = float("inf")
    for _ in range(3):
        done, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            one_pass()
            done += k
        best = min(best, (time.perf_counter() - started) / done)
    return best


def share_seconds(
    model, inputs, batch: int, k: int, compiled: bool, form: str, points: int, start_at: float, trials: int = 3
) -> list[float]:
    """Seconds for the bare forwards of ``points`` points in passes of ``k``, start to end, ``trials``
    times back to back, from the wall-clock time ``start_at`` on (so that processes started together
    measure together): one rank's share of the roofline, timed as its surface is."""
    one_pass = bare_pass(model, inputs, batch, k, compiled, form)
    if time.time() > start_at > 0:
        print("warning: the warm-up outlasted the common start; processes may not overlap", file=sys.stderr)
    time.sleep(max(0.0, start_at - time.time()))
    times = []
    for _ in range(trials):
        started = time.perf_counter()
        for _ in range(-(-points // k)):
            one_pass()
        times.append(time.perf_counter() - started)
    return times


def roofline(model, inputs, compiled: bool) -> list[tuple[float, int, int, str]]:
    """(seconds per point, batch, k, form), fastest first: every batch size at one point per pass, then
    more points per pass at the best two batches (compiled on a CPU, both vmapped and unrolled)."""
    results = {}
    for batch in [b for b in BATCHES if b < len(inputs)] + [len(inputs)]:
        results[(batch, 1, "vmap")] = per_point(model, inputs, batch, 1, compiled)
    forms = FORMS if compiled and inputs.device.type == "cpu" else FORMS[:1]
    for batch in sorted({b for b, _, _ in results}, key=lambda b: results[(b, 1, "vmap")])[:2]:
        for form in forms:
            # unrolled, a call of UNROLL points is what more points per pass repeat (and what auto tries)
            last = results[(batch, 1, "vmap")]
            for k in PASSES[1:] if form == "vmap" else (compiled_kernel.UNROLL,):
                if k * last > 2.0:  # a pass would take too long (and, unrolled, its compilation longer)
                    break
                try:
                    last = results[(batch, k, form)] = per_point(model, inputs, batch, k, compiled, form=form)
                except RuntimeError:
                    break
    return sorted((t, batch, k, form) for (batch, k, form), t in results.items())


def concurrent(args, batch: int, k: int, compiled: bool, form: str, points: int) -> float:
    """Seconds for the bare forwards of ``points`` points at (batch, k, form) shared by ``args.ranks``
    processes at once, each doing its share start to end as a rank does: the fastest of three trials,
    a trial lasting as long as its slowest process (as a surface ends with its last rank)."""
    start_at = time.time() + (25 if compiled else 8)  # after every process has loaded (and compiled)
    share = -(-points // args.ranks)
    cmd = [
        sys.executable,
        __file__,
        "--model",
        args.model,
        "--threads",
        str(args.threads),
        "--device",
        args.device,
        "--measure",
        f"{batch},{k},{int(compiled)},{start_at},{form},{share}",
        *(["--cifar_folder", args.folder] if args.folder else []),
    ]
    jobs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(args.ranks)]
    trials = np.array([[float(t) for t in job.communicate()[0].split("\n")[-2].split()] for job in jobs])
    return float(trials.max(axis=0).min())


def run_surface(args, extra: list[str], surf: str, dir_file: str) -> float:
    cmd = cli_command(
        "surface",
        [
            "--model",
            args.model,
            *args.data,
            f"--x={args.grid}",
            f"--y={args.grid}",
            "--dir_file",
            dir_file,
            "--surf_file",
            surf,
            "--threads",
            str(args.threads),
            "--device",
            args.device,
            "--quiet",
            *extra,
        ],
        args.ranks if args.ranks > 1 else None,
    )
    subprocess.run(cmd, check=True)
    return float(read_surface(surf).run["seconds"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="digits_mlp")
    p.add_argument("--grid", default="-1:1:21", help="MIN:MAX:NUM for both x and y")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per rank (and in the roofline)")
    p.add_argument("--cifar_images", type=int, default=0, help="a CIFAR-10 folder of this many random images")
    p.add_argument("--device", default="cpu", help="cpu or cuda: the roofline and both surfaces (default cpu)")
    p.add_argument(
        "--check_cpu",
        type=int,
        default=0,
        metavar="N",
        help="with --device cuda: also evaluate N points of the surface on the CPU and compare",
    )
    p.add_argument("--compiled", action="store_true", help="also the compiled roofline and a --kernel compiled surface")
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="surfaces computed this many times each, settings taking turns; the fastest counts (default 3)",
    )
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="KERNEL/BATCH/K",
        help="also a surface at these fixed settings, e.g. reference/1797/16 (repeatable)",
    )
    p.add_argument("--cifar_folder", help=argparse.SUPPRESS)
    p.add_argument("--measure", help=argparse.SUPPRESS)  # BATCH,K,COMPILED,START_AT: one concurrent process
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        devices.exact(args.device)  # as a surface's ranks compute: deterministic, float32 as float32
    heap.keep_freed_memory()  # as the surfaces' processes do (landscape.heap): no page faults in the roofline either
    out = tempfile.mkdtemp(prefix="bench_roofline_")
    if args.cifar_images and not args.cifar_folder:
        args.cifar_folder = cifar_folder(os.path.join(out, "cifar"), args.cifar_images)
    args.folder = args.cifar_folder
    data = load_named("cifar10", args.folder) if args.folder else load_named("digits")
    args.data = ["--dataset", "cifar10", "--datapath", args.folder] if args.folder else []
    inputs = torch.cat([data.train.inputs, data.test.inputs])
    torch.manual_seed(0)
    model = build_model(args.model).eval().to(args.device)
    inputs = inputs.to(args.device)
    if args.measure:
        batch, k, compiled, start_at, form, share = args.measure.split(",")
        print(*share_seconds(model, inputs, int(batch), int(k), compiled == "1", form, int(share), float(start_at)))
        return 0
    points = Grid.parse(args.grid, args.grid).size
    m = machine()
    print(
        f"# {m['cpu']}, {m['cores']} cores, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}; "
        f"{args.model}, {len(inputs)} samples per point, {points} points, {args.ranks} ranks x "
        f"{args.threads} thread(s)"
    )
    bounds, settings = {}, {}
    for compiled in (False, True) if args.compiled else (False,):
        # several processes share caches and memory: the best alone need not be the best together, so
        # the three fastest settings alone are measured together, and the best of them is the roofline
        ranked = roofline(model, inputs, compiled)[: 3 if args.ranks > 1 else 1]
        together = [concurrent(args, batch, k, compiled, form, points) for _, batch, k, form in ranked]
        best, (alone, batch, k, form) = min(zip(together, ranked))
        bounds[compiled] = best
        settings[compiled] = (batch, k, form)
        share = -(-points // args.ranks)
        print(
            f"{'compiled' if compiled else 'eager'} roofline: {best:.3f} s for the surface, {args.ranks} processes "
            f"each doing the bare forwards of its {share} points at once ({best / share * 1e3:.3f} ms per point; "
            f"{alone * 1e3:.3f} alone in the sweep; batch {batch}, {k} per pass{f', {form}' if k > 1 else ''})"
        )
    dir_file = os.path.join(out, "d.h5")
    runs = [
        (
            "reference settings (batch 128, 1 per pass)",
            ["--kernel", "reference", "--batch_size", "128", "--points_per_pass", "1"],
            "ref.h5",
        ),
        ("auto", ["--kernel", "auto", "--batch_size", "auto", "--points_per_pass", "auto"], "auto.h5"),
    ]
    if args.compiled:
        runs.append(
            (
                "compiled kernel, auto settings",
                ["--kernel", "compiled", "--batch_size", "auto", "--points_per_pass", "auto"],
                "comp.h5",
            )
        )
    for n, fixed in enumerate(args.also):
        kernel, batch, k = fixed.split("/")
        runs.append(
            (
                f"{kernel} kernel, batch {batch}, {k} per pass",
                ["--kernel", kernel, "--batch_size", batch, "--points_per_pass", k],
                f"also{n}.h5",
            )
        )
    print(
        f"{'settings':<44}{'seconds':>9}{'x eager roofline':>18}"
        + ("{:>21}".format("x compiled roofline") if args.compiled else "")
    )
    # each surface --repeats times, the settings taking turns (so a slow spell of a shared machine hits
    # all of them), and the fastest run of each kept, as the roofline keeps its fastest trial
    # and, on a machine whose speed drifts, each turn measures the roofline again (its best setting, in
    # --ranks processes at once) just before its surfaces: the median of these paired ratios
    timed = {label: [] for label, _, _ in runs}
    tuned = {label: [] for label, _, _ in runs}  # (seconds with the measuring, the measuring) of auto's runs
    paired = {label: {c: [] for c in bounds} for label, _, _ in runs}
    turns = {c: [] for c in bounds}
    for repeat in range(args.repeats):
        # (one turn: the roofline just measured is that turn's)
        now = (
            bounds
            if args.repeats == 1
            else {c: concurrent(args, *settings[c][:2], c, settings[c][2], points) for c in bounds}
        )
        for c in bounds:
            turns[c].append(now[c])
        for label, extra, name in runs:
            path = os.path.join(out, f"{repeat}_{name}")
            took = run_surface(args, extra, path, dir_file)
            record = read_surface(path).run
            timed[label].append((took, f"{record['kernel']}/{record['batch_size']}/{record['points_per_pass']}"))
            if "tune_seconds" in record:
                tuned[label].append((took + record["tune_seconds"], record["tune_seconds"]))
            for c in bounds:
                paired[label][c].append(took / now[c])
    seconds = {}
    for label, _, _ in runs:
        took, how = min(timed[label])
        seconds[label] = took
        shown = label if label == runs[0][0] else f"{label} ({how})"
        line = f"{shown:<44}{took:>9.2f}" + "".join(f"{took / bounds[c]:>{18 if not c else 21}.2f}" for c in bounds)
        print(line)
    if args.repeats > 1:
        print(
            f"(fastest of {args.repeats} runs each; all runs, seconds and the setting auto chose: "
            + "; ".join(
                f"{label}: "
                + ", ".join(f"{t:.2f}" + ("" if label == runs[0][0] else f" [{how}]") for t, how in timed[label])
                for label in timed
            )
            + ")"
        )
        print(
            "each turn's roofline, seconds for the surface: "
            + "; ".join(f"{'compiled' if c else 'eager'} " + ", ".join(f"{t:.2f}" for t in turns[c]) for c in bounds)
        )
        print(
            "median over the turns of seconds / that turn's roofline: "
            + "; ".join(
                f"{label}: "
                + ", ".join(
                    f"{float(np.median(r)):.2f} x {'compiled' if c else 'eager'}" for c, r in paired[label].items()
                )
                for label in paired
            )
        )
    for label, runs_tuned in tuned.items():
        if runs_tuned:
            total, measuring = min(runs_tuned)
            print(
                f"{label} with its measuring (tune_seconds: "
                + ", ".join(f"{m:.2f}" for _, m in runs_tuned)
                + f"): fastest {total:.2f} s, "
                + ", ".join(f"{total / b:.2f} x {'compiled' if c else 'eager'} roofline" for c, b in bounds.items())
            )
    reference = seconds[runs[0][0]]
    print(
        "speed-up over the reference settings: "
        + ", ".join(f"{label} {reference / t:.2f}x" for label, t in seconds.items() if t != reference)
    )
    print(
        "points per second: "
        + ", ".join(
            [f"{'compiled' if c else 'eager'} roofline {points / b:.1f}" for c, b in bounds.items()]
            + [f"{label} {points / t:.1f}" for label, t in seconds.items()]
        )
    )
    if args.check_cpu:
        agreement(args, dir_file, os.path.join(out, "0_auto.h5"))
    return 0


def agreement(args, dir_file: str, surf: str) -> None:
    """The first N points of the device's surface evaluated again on the CPU, in float32."""
    s = read_surface(surf)
    torch.set_num_threads(os.cpu_count() or 1)  # the CPU's side of the check, as fast as this machine allows
    data = load_named("cifar10", args.folder) if args.folder else load_named("digits")
    torch.manual_seed(0)
    cpu_model = build_model(args.model).eval()
    d = read_directions(dir_file)
    ev = Evaluator(
        cpu_model,
        dirs.origin_tensors(cpu_model, d.dir_type),
        d.x,
        d.y,
        {"train": data.train, "test": data.test},
        "crossentropy",
        EvaluationConfig(kernel="reference", batch_size=512, points_per_pass=1),
    )
    flat = np.arange(args.check_cpu)
    points = Grid.parse(args.grid, args.grid).points(flat)
    cpu = ev.evaluate(points)
    gpu = np.stack([s.values[q].reshape(-1)[flat] for q in ev.names], axis=1)
    losses = [i for i, q in enumerate(ev.names) if q.endswith("loss")]
    worst = np.max(np.abs(gpu[:, losses] - cpu[:, losses]) / np.abs(cpu[:, losses]))
    print(f"CPU against {args.device}: largest relative difference of the losses over {len(flat)} points: {worst:.2e}")


if __name__ == "__main__":
    sys.exit(main())
