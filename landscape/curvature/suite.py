"""One network's curvature, measure by measure: the only place that runs the measures of this package.

``measure(hessian, names, config)`` computes the named measures of one ``Hessian`` (the network's mean
loss over its data, at its weights) in the order given and returns each one's result (its own record:
value, standard error, settings, whether an iterative method converged).  ``landscape curvature``, the
scorecard's measurement of a network (``report.measures``), λmax along training (``train.curvature``) and
the Python API all call it, so one measure has one set of defaults (``SuiteConfig``) whoever asks.

The measures by name (``NAMES``):

- ``eigenvalues``: the ``k`` extreme eigenvalues at the ``which`` end(s), Lanczos to the relative
  tolerance ``tol`` (``eigen``; Ghorbani et al. 2019, Yao et al. 2020);
- ``trace``: Hutchinson's estimate from ``trace_samples`` Rademacher vectors, stopped early at the relative
  standard error ``trace_se`` when given (``trace``; Hutchinson 1990);
- ``density``: the spectral density by stochastic Lanczos quadrature, ``density_runs`` runs of
  ``density_steps`` steps (``density``; Lin, Saad & Yang 2016);
- ``layers``: λmax and trace of every layer's diagonal block (``layers``);
- ``relative_flatness``: Petzka et al.'s κ from ``flatness_samples`` products (``relative_flatness``);
- ``fisher_rao``: the Fisher–Rao norm (``fisher_rao``; Liang et al. 2019);
- ``noise_scale``: the gradient noise scale B_simple (``noise_scale``; McCandlish et al. 2018);
- the sharpness measures of ``sharpness.MEASURES`` (``adaptive``, ``epsilon``, ...) with ``sharpness``'s
  settings (``SharpnessConfig``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .. import checks
from ..errors import ConfigError
from . import sharpness as sharp
from .density import slq
from .eigen import METHODS, WHICH, extremes
from .fisher_rao import fisher_rao
from .layers import per_layer
from .noise_scale import noise_scale
from .relative_flatness import relative_flatness
from .trace import hutchinson

OWN = ("eigenvalues", "trace", "density", "layers", "relative_flatness", "fisher_rao", "noise_scale")
NAMES = (*OWN, *sharp.MEASURES)


@dataclass(frozen=True)
class SuiteConfig:
    """Every curvature measure's settings, with the one default each has: for the command line, the API,
    the scorecard and training alike (each may set its own values, and records what it used)."""

    k: int = 1  # eigenvalues at each end
    which: str = "top"  # top, bottom or both: the bottom end only when asked (near 0 it takes many products)
    tol: float = 1e-4  # Lanczos: relative tolerance of the eigenvalues (the Ritz residual)
    method: str = "lanczos"  # ours (ARPACK takes over past maxiter steps), or eigsh: ARPACK alone
    maxiter: int | None = None  # Lanczos steps before ARPACK takes over (default: eigen.LANCZOS_STEPS)
    trace_samples: int = 20  # Hutchinson: Rademacher vectors (the most, with trace_se)
    trace_se: float | None = None  # Hutchinson: stop at this relative standard error
    density_steps: int = 80  # stochastic Lanczos quadrature: steps per run
    density_runs: int = 4  # ... random start vectors
    layer_samples: int = 20  # per layer: Hutchinson vectors shared by the layers' traces
    flatness_samples: int = 20  # relative flatness: products
    sharpness: sharp.SharpnessConfig = field(default_factory=sharp.SharpnessConfig)
    seed: int = 0  # every random draw: start vectors, probes

    def __post_init__(self):
        checks.whole("k", self.k)
        if self.which not in WHICH:
            raise ConfigError("which", self.which, f"one of {', '.join(WHICH)}")
        checks.number("tol", self.tol, above=0)
        if self.method not in METHODS:
            raise ConfigError("method", self.method, f"one of {', '.join(METHODS)}")
        if self.maxiter is not None:
            checks.whole("maxiter", self.maxiter)
        checks.whole("trace_samples", self.trace_samples, least=2, expected="at least 2 vectors")
        if self.trace_se is not None:
            checks.number("trace_se", self.trace_se, above=0)
        checks.whole("density_steps", self.density_steps)
        checks.whole("density_runs", self.density_runs)
        checks.whole("layer_samples", self.layer_samples, least=2, expected="at least 2 vectors")
        checks.whole("flatness_samples", self.flatness_samples, least=2, expected="at least 2 samples")
        checks.whole("seed", self.seed, least=0)

    def record(self) -> dict:
        return {**asdict(self), "sharpness": self.sharpness.record()}


def one(hessian, name: str, config: SuiteConfig = SuiteConfig()):
    """The measure ``name`` (one of ``NAMES``) of ``hessian`` with ``config``'s settings."""
    c = config
    if name == "eigenvalues":
        return extremes(hessian, k=c.k, which=c.which, tol=c.tol, maxiter=c.maxiter, seed=c.seed, method=c.method)
    if name == "trace":
        return hutchinson(hessian, samples=c.trace_samples, seed=c.seed, se=c.trace_se)
    if name == "density":
        return slq(hessian, steps=c.density_steps, runs=c.density_runs, seed=c.seed)
    if name == "layers":
        return per_layer(hessian, samples=c.layer_samples, tol=c.tol, seed=c.seed)
    if name == "relative_flatness":
        return relative_flatness(hessian, samples=c.flatness_samples, seed=c.seed)
    if name == "fisher_rao":
        return fisher_rao(hessian)
    if name == "noise_scale":
        return noise_scale(hessian)
    if name in sharp.MEASURES:
        return sharp.compute(hessian, name, c.sharpness)
    raise ConfigError("measure", name, f"one of {', '.join(NAMES)}")


def measure(
    hessian, names, config: SuiteConfig = SuiteConfig(), before=None, after=None, into: dict | None = None
) -> dict:
    """Each measure of ``names`` in turn (``before(name)`` is called first: a stop signal, a progress
    line; ``after(name, result)`` once it is made), as ``{name: result}``; every measure shares the one
    ``hessian`` and its product count.  ``into``: the dict the results go into as each is made, so that
    a caller stopped by ``before`` keeps the measures already made."""
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise ConfigError("measure", unknown[0], f"one of {', '.join(NAMES)}")
    results = {} if into is None else into
    for name in names:
        if before is not None:
            before(name)
        results[name] = one(hessian, name, config)
        if after is not None:
            after(name, results[name])
    return results


__all__ = ["NAMES", "SuiteConfig", "measure", "one"]
