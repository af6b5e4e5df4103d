#!/usr/bin/env python
"""Would torch.compile or channels-last make the kernel faster?  Eager against each, same run.

    python scripts/bench_compile.py --models digits_cnn resnet20 --batch 128

For each model: images per second of the forward pass (inference mode, float32, the threads
given), eager; with ``torch.compile`` (after its warm-up, which is reported separately); with
the model and the inputs in ``channels_last`` memory format; and with both.  landscape keeps an option only where
this shows a gain (see BENCHMARKS.md).
"""

import argparse
import sys
import time

import torch

from landscape.models import build_model
from landscape.provenance import machine

SHAPES = {"digits_cnn": (1, 8, 8), "digits_mlp": (1, 8, 8)}


def rate(forward, x, seconds: float = 2.0) -> float:
    with torch.inference_mode():
        forward(x)
        best = 0.0
        for _ in range(3):
            done, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds / 3:
                forward(x)
                done += len(x)
            best = max(best, done / (time.perf_counter() - started))
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["digits_cnn", "resnet20"])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    m = machine()
    print(
        f"# {m['cpu']}, {m['cores']} cores, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, "
        f"batch {args.batch}, {args.threads} thread(s); images/s of the forward pass"
    )
    print(f"{'model':<12}{'eager':>10}{'compile':>10}{'(warm-up s)':>13}{'channels_last':>15}{'both':>17}")
    for name in args.models:
        torch.manual_seed(0)
        model = build_model(name).eval()
        x = torch.randn(args.batch, *SHAPES.get(name, (3, 32, 32)))
        eager = rate(model, x)
        started = time.perf_counter()
        try:
            compiled = torch.compile(model)
            with torch.inference_mode():
                compiled(x)
            warm = time.perf_counter() - started
            fast = rate(compiled, x)
        except Exception as exc:  # noqa: BLE001 - a compiler missing, a model it rejects
            warm, fast = float("nan"), float("nan")
            print(f"  torch.compile failed for {name}: {type(exc).__name__}: {str(exc)[:100]}")
        last = both = float("nan")
        if x.dim() == 4:
            model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
            last = rate(model, x)
            torch._dynamo.reset()
            compiled = torch.compile(model)
            both = rate(compiled, x)
        print(f"{name:<12}{eager:>10.0f}{fast:>10.0f}{warm:>13.1f}{last:>15.0f}{both:>17.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
