"""What ``landscape curvature`` prints and writes: its plan (the Hessian-vector products each measure will
make, and the time once the first is timed), a progress line every ``PROGRESS_SECONDS`` inside a
measure, each measure's lines as it ends, the stop check between measures, and the JSON file (every
measure's record, ``complete`` and ``not_made`` when a stop signal cut it short) with the density's figure."""

from __future__ import annotations

import json
import os
import time

from ..curvature.eigen import LANCZOS_STEPS
from ..curvature.layers import split
from ..curvature.sharpness import MEASURES as SHARPNESS
from ..errors import Stopped
from ..io.atomic import write_file
from ..parallel import stop
from ..plotting.spectrum import write_density
from .command import plain

CITATIONS = {  # the measures whose records do not carry their own
    "eigenvalues": "Lanczos (1950) with the Ritz residual as stopping rule; for networks Ghorbani et al. 2019, "
    "Yao et al. 2020 (PyHessian)",
    "trace": "Hutchinson 1990 (Rademacher vectors); Avron & Toledo 2011",
    "density": "stochastic Lanczos quadrature: Lin, Saad & Yang 2016; Ghorbani et al. 2019",
}


def lines(name: str, result, s) -> list[str]:
    """What is printed of a measure when it ends."""
    if name == "eigenvalues":
        return [
            f"{end} {s.k} eigenvalue(s): {', '.join(f'{v:.6g}' for v in e.values)}  "
            f"[{'converged' if e.converged else f'NOT converged ({e.note})'}; max residual "
            f"{max(e.residuals):.1e}; {e.products} products; Lanczos, Ghorbani et al. 2019]"
            for end, e in result.items()
        ]
    if name == "trace":
        stop = f", stopped at a relative standard error of {s.trace_se:g}" if result.samples < s.trace else ""
        if s.trace_se is not None:
            relative = abs(result.stderr / result.value) if result.value else float("inf")
            if relative > s.trace_se:
                stop = f"; --trace_se {s.trace_se:g} NOT met: relative standard error {relative:.2g} at the last"
        vectors = f"{result.samples} Rademacher vectors{stop}"
        return [f"trace {result.value:.6g} ± {result.stderr:.2g} ({vectors}; Hutchinson 1990)"]
    if name == "layers":
        return [
            f"layer {layer.layer or '(model)'}: {layer.parameters:,} parameters, ‖w‖ {layer.weight_norm:.4g}, "
            f"λmax {layer.lambda_max:.6g}{'' if layer.converged else ' (NOT converged)'}, "
            f"trace {layer.trace:.6g} ± {layer.trace_stderr:.2g}"
            for layer in result
        ]
    if name == "relative_flatness":
        return [f"relative flatness {result.value:.6g} ± {result.stderr:.2g}: {result.definition} ({result.citation})"]
    if name == "fisher_rao":
        note = f" ({result.note})" if result.note else ""
        return [
            f"Fisher–Rao norm {result.value:.6g} (empirical {result.empirical:.6g}): {result.definition} "
            f"({result.citation}){note}"
        ]
    if name == "noise_scale":
        return [
            f"gradient noise scale B_simple {result.value:.6g} (tr Σ {result.trace_sigma:.4g}, "
            f"‖G‖² {result.gradient_norm2:.4g})"
        ]
    if name == "density":
        return []
    return [f"sharpness {result.describe()}"]


def between(world, planned: list[str], out: str):
    """What is called before each measure: a stop signal on any rank (a collective: every rank makes the
    same measures) ends the command there with ``errors.Stopped``, the lock released; the measures made
    are written (``run``), marked incomplete."""
    begun = 0

    def next_measure() -> None:
        nonlocal begun
        signal_name = stop.requested(world)
        if signal_name:
            made = ", ".join(planned[:begun])
            what = f"measures ({made} written to {out}, marked incomplete)" if begun else "measures (none made)"
            raise Stopped(stop.stopped_line(signal_name, begun, len(planned), what, "measure again"))
        begun += 1

    return next_measure


def products_planned(s, planned: list[str], hessian) -> dict[str, tuple[int, bool]]:
    """Each measure's Hessian-vector products: (how many, whether that is only a bound).  Lanczos stops
    once converged (ARPACK takes over, past the bound, only where it does not converge within its steps);
    a trace with ``trace_se`` and a density whose Krylov space closes early stop sooner; the others make
    gradients and losses only."""

    def lanczos(dim: int) -> int:  # its steps, and the true residuals of the k values found
        return min(dim, LANCZOS_STEPS) + s.k

    ends = 2 if s.which == "both" else 1
    blocks = [layer.size for layer in split(hessian)] if s.layers else []
    counts = {
        "eigenvalues": (ends * lanczos(hessian.dim), True),
        "trace": (s.trace, s.trace_se is not None),
        "density": (min(s.density_steps, hessian.dim) * s.density_runs, True),
        "layers": (s.layer_samples + sum(1 if n == 1 else min(n, LANCZOS_STEPS) + 1 for n in blocks), True),
        "relative_flatness": (s.relative_flatness, False),
    }
    return {name: counts.get(name, (0, False)) for name in planned}


PROGRESS_SECONDS = 30.0  # a line this often while a measure runs (a Lanczos of hundreds of products is long)


class Ledger:
    """What ``curvature`` prints of its plan and progress: the products each measure will make, the time
    that will take once the first product is timed, a line every ``PROGRESS_SECONDS`` while a measure
    runs, and each measure's products and seconds as it ends."""

    def __init__(self, hessian, planned: dict[str, tuple[int, bool]], say):
        self.hessian, self.planned, self.say = hessian, planned, say
        self.names, self.current, self.began, self.products = list(planned), -1, None, 0
        total = sum(n for n, _ in planned.values())
        bound = "at most " if any(upper for n, upper in planned.values() if n) else ""
        self.total = f"{bound}{total:,}"
        say(f"plan: {len(planned)} measure(s), {self.total} Hessian-vector products in all")
        for name, (n, upper) in planned.items():
            say(f"  {name:<20}{'at most ' if upper else ''}{n:,} products" if n else f"  {name:<20}no products")
        matvec, self.shown = hessian.matvec, None

        def counted(v):  # every product passes here: the first is timed, then progress now and then
            began = time.perf_counter()
            out = matvec(v)
            now = time.perf_counter()
            if self.shown is None:
                each = now - began
                say(f"time: {bound}about {each * total:.0f} s at {each:.3g} s per product ({self.total} products)")
                self.shown = now
            elif now - self.shown >= PROGRESS_SECONDS:
                self.shown = now
                self.progress(now)
            return out

        if total:
            hessian.matvec = counted

    def progress(self, now: float) -> None:
        """The line of the measure in progress: its products so far, of how many, and its seconds."""
        if 0 <= self.current < len(self.names) and self.began is not None:
            name = self.names[self.current]
            n, upper = self.planned[name]
            done = self.hessian.products - self.products
            self.say(f"  {name}: {done:,} of {'at most ' if upper else ''}{n:,} products, {now - self.began:.0f} s")

    def wrap(self, next_measure):
        """``next_measure`` (called before each measure), preceded by the line of the one that ended."""

        def wrapped() -> None:
            self.close()
            next_measure()
            self.current += 1
            self.began, self.products = time.perf_counter(), self.hessian.products

        return wrapped

    def close(self) -> None:
        """The line of the measure that just ended (none before the first, nor twice)."""
        if 0 <= self.current < len(self.names) and self.began is not None:
            done = self.hessian.products - self.products
            self.say(f"{self.names[self.current]}: {done:,} products in {time.perf_counter() - self.began:.2f} s")
            self.began = None


def _record(name: str, result, s):
    """A measure's record in the JSON file: the eigenvalues by end, the layers as a list, the others their
    own (the trace with whether it met ``trace_se``)."""
    if name == "eigenvalues":
        return {end: e.record() for end, e in result.items()}
    if name == "layers":
        return [layer.record() for layer in result]
    if name == "trace" and s.trace_se is not None:
        relative = abs(result.stderr / result.value) if result.value else float("inf")
        return {**result.record(), "se_met": bool(relative <= s.trace_se)}
    return result.record()


def recorded(report: dict, results: dict, s) -> dict:
    """``report`` with each measure's record (the sharpness measures under ``sharpness``)."""
    for name, result in results.items():
        record = _record(name, result, s)
        if name in SHARPNESS:
            report.setdefault("sharpness", {})[name] = record
        else:
            report[name] = record
    return report


def write(s, world, say, report: dict, results: dict, planned: list[str]) -> list[str]:
    """The JSON file (rank 0) and the density figure; ``complete`` false and ``not_made`` listing the
    measures a stop signal left out."""
    report["complete"] = len(results) == len(planned)
    if not report["complete"]:
        report["not_made"] = [name for name in planned if name not in results]
    density = results.get("density")
    figures = []
    if density is not None and world.rank == 0:
        name = os.path.basename(s.model_file)
        if name == "final.pt":  # a training run's checkpoint: its folder names it
            name = os.path.basename(os.path.dirname(os.path.abspath(s.model_file)))
        figures = [str(p) for p in write_density({name: density}, os.path.splitext(s.out)[0] + "_density")]
        for path in figures:
            say(f"wrote {path}")
    if world.rank == 0:
        write_file(s.out, json.dumps(plain(report), indent=2).encode())  # NaN: null
        say(
            f"wrote {s.out}"
            + ("" if report["complete"] else f" (incomplete: {', '.join(report['not_made'])} not made)")
        )
    return figures
