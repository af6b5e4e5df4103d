"""Sharpness in a neighbourhood of the weights, each measure named by its definition.

f is the mean loss over the data (``hessian.Hessian``, BatchNorm in eval mode), w the weights, and every
rise is measured from f(w).  The worst-case measures search in coordinates scaled to their set
(``search``: u = δ / s), from u = 0 and from seeded random starts, and record how the search went.

- ``adaptive``: max f(w + δ) − f(w) over the box |δᵢ| ≤ ρ |wᵢ| (worst-case adaptive sharpness, ℓ∞;
  Kwon et al. 2021, Andriushchenko et al. 2023).
- ``adaptive_l2``: max f(w + δ) − f(w) over the ball ‖δ / (|w| + η)‖₂ ≤ ρ (ASAM's neighbourhood, Kwon et
  al. 2021; ℓ2 worst case as in Andriushchenko et al. 2023).  η = 0 by default: only then is the measure
  unchanged when a ReLU network's neurons are rescaled (ASAM's 0.01 is for training, where a weight at 0
  must still move); weights at 0 then stay fixed, as in the box.
- ``adaptive_average``: E f(w + δ) − f(w) with δ = ρ |w| ⊙ z, z ~ N(0, I), over ``samples`` draws
  (average-case adaptive sharpness, Andriushchenko et al. 2023), with its standard error.
- ``m_sharpness``: the ``adaptive`` worst case taken on each batch of m training samples (their own mean
  loss), then averaged over the batches (m-sharpness: Foret et al. 2021; Andriushchenko et al. 2023).
- ``epsilon``: Keskar et al. (2017), Sec. 2.2: 100 · (max f(w + δ) − f(w)) / (1 + f(w)) over the box
  |δᵢ| ≤ ε (|wᵢ| + 1); or in a random subspace of dimension p (δ = A y, A an n×p Gaussian matrix, the
  box on y being ε (|A⁺w| + 1), their "A" variant).
- ``average``: the loss (and 0-1 error) rise at radius r along random filter-normalized directions (Li
  et al. 2018): the mean and standard error over the directions.

The scaled coordinates make ``adaptive``, ``adaptive_l2`` (η = 0), ``adaptive_average`` and
``m_sharpness`` invariant to a function-preserving rescaling of a ReLU network's layers (Dinh et al.
2017), in fact and not only in definition: the search is the same step by step.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from .. import checks
from .. import directions as dirs
from ..errors import ConfigError
from . import estimate
from .search import Outcome, SearchConfig, search

MEASURES = ("adaptive", "adaptive_l2", "adaptive_average", "m_sharpness", "epsilon", "average")
WORST_CASE = ("adaptive", "adaptive_l2", "m_sharpness", "epsilon")
# The measures each setting of ``SharpnessConfig`` applies to (a setting given without one of them is a
# mistake, refused where the measures are chosen; ``seed`` applies to all of them).
USED_BY = {
    "rho": ("adaptive", "adaptive_average", "m_sharpness"),
    "rho_l2": ("adaptive_l2",),
    "eta": ("adaptive_l2",),
    "epsilon": ("epsilon",),
    "subspace": ("epsilon",),
    "radius": ("average",),
    "directions": ("average",),
    "draws": ("adaptive_average",),
    "m": ("m_sharpness",),
    **{name: WORST_CASE for name in ("method", "iterations", "restarts", "search_tol", "extensions")},
}
DEFINITIONS = {
    "adaptive": (
        "max f(w + δ) − f(w) over |δᵢ| ≤ ρ |wᵢ| (worst case, ℓ∞)",
        "Kwon et al. 2021 (ASAM); Andriushchenko et al. 2023",
    ),
    "adaptive_l2": (
        "max f(w + δ) − f(w) over ‖δ / (|w| + η)‖₂ ≤ ρ (worst case, ℓ2)",
        "Kwon et al. 2021 (ASAM); Andriushchenko et al. 2023",
    ),
    "adaptive_average": (
        "E f(w + ρ |w| ⊙ z) − f(w), z ~ N(0, I) (average case)",
        "Andriushchenko et al. 2023",
    ),
    "m_sharpness": (
        "mean over batches B of m samples of max f_B(w + δ) − f_B(w) over |δᵢ| ≤ ρ |wᵢ|",
        "Foret et al. 2021 (SAM); Andriushchenko et al. 2023",
    ),
    "epsilon": (
        "100 · (max f(w + δ) − f(w)) / (1 + f(w)) over |δᵢ| ≤ ε (|wᵢ| + 1)",
        "Keskar et al. 2017, Sec. 2.2",
    ),
    "average": (
        "mean over random filter-normalized directions d of f(w + r d) − f(w)",
        "Li et al. 2018 (directions); Keskar et al. 2017",
    ),
}
ROUNDING = 64  # a rise within this many units of the loss's last place is rounding, not a rise


@dataclass(frozen=True)
class SharpnessConfig:
    """Every measure's settings, with their defaults: one place for the API, ``curvature`` and ``report``."""

    rho: float = 0.01  # adaptive, adaptive_average, m_sharpness: |δᵢ| <= ρ |wᵢ| (the box), ρ |w| ⊙ z
    rho_l2: float = 0.1  # adaptive_l2: the ball ‖δ / (|w| + η)‖₂ <= ρ (an ℓ2 ball needs a larger radius)
    eta: float = 0.0  # adaptive_l2: ASAM's η (0: invariant to rescaling; ASAM trains with 0.01)
    epsilon: float = 1e-3  # epsilon: Keskar's |δᵢ| <= ε (|wᵢ| + 1)
    subspace: int = 0  # epsilon: a random subspace of this dimension (0: the full space)
    radius: float = 0.5  # average: the distance along each direction
    directions: int = 20  # average: random filter-normalized directions
    draws: int = 20  # adaptive_average: Gaussian draws
    m: int = 128  # m_sharpness: samples per batch
    method: str = "apgd"  # the worst-case searches: apgd or lbfgsb
    iterations: int = 30  # ... per start
    restarts: int = 9  # ... seeded random starts besides δ = 0
    search_tol: float = 0.01  # ... converged: the best rise grew by at most this share over the last fifth
    extensions: int = 3  # ... a winning start still rising goes on for up to this many more rounds
    seed: int = 0  # random starts, draws, directions, subspace

    def __post_init__(self):
        for name in ("rho", "rho_l2", "epsilon", "radius", "search_tol"):
            checks.number(name, getattr(self, name), above=0)
        checks.number("eta", self.eta, least=0)
        checks.whole("subspace", self.subspace, least=0, expected="0 (the full space) or a positive dimension")
        for name in ("directions", "m"):
            checks.whole(name, getattr(self, name))
        checks.whole("draws", self.draws, least=2, expected="at least 2 draws (a standard error needs two)")
        self.search()  # the search's own checks

    def search(self) -> SearchConfig:
        return SearchConfig(self.method, self.iterations, self.restarts, self.search_tol, self.seed, self.extensions)

    def record(self) -> dict:
        return asdict(self)


def compute(hessian, measure: str, config: SharpnessConfig = SharpnessConfig()) -> Sharpness:
    """The sharpness ``measure`` (one of ``MEASURES``) of ``hessian``'s loss at its weights."""
    c, search_config = config, config.search()
    if measure == "adaptive":
        return adaptive_sharpness(hessian, c.rho, search_config)
    if measure == "adaptive_l2":
        return adaptive_l2_sharpness(hessian, c.rho_l2, c.eta, search_config)
    if measure == "adaptive_average":
        return adaptive_average(hessian, c.rho, c.draws, c.seed)
    if measure == "m_sharpness":
        return m_sharpness(hessian, c.rho, c.m, search_config)
    if measure == "epsilon":
        return epsilon_sharpness(hessian, c.epsilon, c.subspace or None, search_config)
    if measure == "average":
        return average_rise(hessian, c.radius, c.directions, seed=c.seed)
    raise ConfigError("measure", measure, f"one of {', '.join(MEASURES)}")


@dataclass(frozen=True)
class Sharpness:
    measure: str
    value: float  # epsilon: Keskar's percentage; the others: the loss rise
    stderr: float  # the average-case measures: over their draws; NaN for the worst-case searches
    loss: float  # f(w)
    settings: dict  # every hyper-parameter used
    evaluations: int  # loss (and gradient) evaluations spent
    error_rise: float = math.nan  # average: mean 0-1 error rise (points of %), where the data has classes
    definition: str = ""
    citation: str = ""
    search: dict | None = None  # the worst-case search: status, iterations, start, boundary, convergence
    above_rounding: bool = True  # whether the rise is larger than the loss's rounding
    converged: bool = True  # the worst-case search's convergence check (always True for the others)
    notes: list = field(default_factory=list)

    def record(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        """One line: the value, the definition and citation, how the search went, and any warning."""
        spread = f" ± {self.stderr:.2g}" if not math.isnan(self.stderr) else ""
        how = ""
        if self.search is not None and "start" in self.search:
            state = "converged" if self.converged else "NOT converged"
            how = (
                f"; {self.settings['method']}, {self.search['evaluations']} evaluations from "
                f"{len(self.search['starts'])} starts, won by start {self.search['start']}, {state} (last fifth "
                f"{self.search['last_gain']:+.2%}), runner-up {self.search['runner_up']:.1%} of it, "
                f"{self.search['boundary']:.0%} on the boundary"
            )
        elif self.search is not None:  # m-sharpness: one search per batch
            how = f"; {self.search['batches']} batches, {self.search['unconverged_batches']} not converged"
        notes = "".join(f"  [{note}]" for note in self.notes)
        return f"{self.measure} = {self.value:.6g}{spread}  ({self.definition}; {self.citation}{how}){notes}"


def rounding(hessian, loss: float) -> float:
    """The size of a loss's rounding in the dtype the products run in: ``ROUNDING`` units in its last
    place (a mean over many samples loses a few)."""
    return ROUNDING * float(torch.finfo(hessian.dtype).eps) * max(abs(loss), 1e-30)


def _named(measure: str, value: float, stderr: float, base: float, settings: dict, evaluations: int, **more):
    formula, citation = DEFINITIONS[measure]
    return Sharpness(measure, value, stderr, base, settings, evaluations, definition=formula, citation=citation, **more)


def _worst(hessian, scale: np.ndarray, radius: float, kind: str, config: SearchConfig, basis=None):
    """The worst-case search of f(w + scale ⊙ (basis @ u or u)) over the ``kind`` set of ``radius``;
    returns (f(w), the search's Outcome)."""
    w0 = hessian.flat_params()
    base, _ = hessian.loss_and_gradient(w0)

    def f(u: np.ndarray):
        step = basis @ u if basis is not None else u
        value, gradient = hessian.loss_and_gradient(w0 + scale * step)
        g = scale * gradient
        return value, (basis.T @ g if basis is not None else g)

    size = basis.shape[1] if basis is not None else len(w0)
    return base, search(f, size, radius, kind, config, base)


def _from_search(measure: str, base: float, outcome: Outcome, value: float, settings: dict, noise: float):
    rise = outcome.best - base
    notes = []
    above = rise > noise
    if not above:
        notes.append(f"no rise above the loss's rounding ({noise:.2g}) was found")
    if not outcome.converged:
        notes.append(f"not converged: the rise grew {outcome.last_gain:.1%} over the last fifth of the search")
    return _named(
        measure,
        value,
        math.nan,
        base,
        settings,
        outcome.evaluations + 1,
        search=outcome.record(),
        above_rounding=above,
        converged=outcome.converged,
        notes=notes,
    )


def adaptive_sharpness(hessian, rho: float = 0.01, search_config: SearchConfig = SearchConfig()) -> Sharpness:
    """Worst-case adaptive sharpness (ℓ∞): max f(w + δ) − f(w) over |δᵢ| ≤ ρ |wᵢ|."""
    w = hessian.flat_params()
    base, outcome = _worst(hessian, np.abs(w), rho, "box", search_config)
    settings = {"rho": rho, **search_config.record()}
    return _from_search("adaptive", base, outcome, outcome.best - base, settings, rounding(hessian, base))


def adaptive_l2_sharpness(
    hessian, rho: float = 0.1, eta: float = 0.0, search_config: SearchConfig = SearchConfig()
) -> Sharpness:
    """Worst-case adaptive sharpness (ℓ2, ASAM's ball): max f(w + δ) − f(w) over ‖δ / (|w| + η)‖₂ ≤ ρ."""
    w = hessian.flat_params()
    base, outcome = _worst(hessian, np.abs(w) + eta, rho, "ball", search_config)
    settings = {"rho": rho, "eta": eta, **search_config.record()}
    return _from_search("adaptive_l2", base, outcome, outcome.best - base, settings, rounding(hessian, base))


def epsilon_sharpness(
    hessian, epsilon: float = 1e-3, subspace: int | None = None, search_config: SearchConfig = SearchConfig()
) -> Sharpness:
    """Keskar et al.'s ε-sharpness in the full space, or in a random ``subspace`` of that dimension."""
    w = hessian.flat_params()
    if subspace:
        A = np.random.default_rng(search_config.seed).standard_normal((len(w), subspace))
        pinv_w = np.linalg.pinv(A) @ w
        basis = A * (np.abs(pinv_w) + 1.0)[None, :]  # y = (|A⁺w| + 1) u, |u| <= ε
        base, outcome = _worst(hessian, np.ones_like(w), epsilon, "box", search_config, basis)
    else:
        base, outcome = _worst(hessian, np.abs(w) + 1.0, epsilon, "box", search_config)
    value = 100.0 * (outcome.best - base) / (1.0 + base)
    settings = {"epsilon": epsilon, "subspace": subspace or 0, **search_config.record()}
    return _from_search("epsilon", base, outcome, value, settings, rounding(hessian, base))


def m_sharpness(hessian, rho: float = 0.01, m: int = 128, search_config: SearchConfig = SearchConfig()) -> Sharpness:
    """m-sharpness: the adaptive (ℓ∞) worst case on each batch of ``m`` samples (this rank's, in order;
    a last batch of fewer is left out), averaged over the batches of every rank."""
    parts = hessian.subsets(m)
    w = hessian.flat_params()
    rises, outcomes, evaluations = [], [], 0
    for k, part in enumerate(parts):
        base, outcome = _worst(part, np.abs(w), rho, "box", replace(search_config, seed=search_config.seed + k))
        rises.append(outcome.best - base)
        outcomes.append(outcome)
        evaluations += outcome.evaluations + 1
    totals = np.array([float(np.sum(rises)), len(rises), float(sum(not o.converged for o in outcomes))])
    hessian.reduce(totals)
    if totals[1] == 0:
        raise ConfigError("m", m, "at most the number of training samples on each rank", literal=True)
    base, _ = hessian.loss_and_gradient(w)
    value = float(totals[0] / totals[1])
    unconverged = int(totals[2])
    worst = max(outcomes, key=lambda o: o.last_gain, default=None)
    record = {
        "batches": int(totals[1]),
        "unconverged_batches": unconverged,
        "last_gain": worst.last_gain if worst else math.nan,
        "boundary": float(np.mean([o.boundary for o in outcomes])) if outcomes else math.nan,
        "status": worst.status if worst else "",
        "converged": unconverged == 0,
    }
    noise = rounding(hessian, base)
    notes = [f"not converged on {unconverged} of {int(totals[1])} batches"] if unconverged else []
    if not value > noise:
        notes.append(f"no rise above the loss's rounding ({noise:.2g}) was found")
    return _named(
        "m_sharpness",
        value,
        math.nan,
        base,
        {"rho": rho, "m": m, **search_config.record()},
        evaluations + 1,
        search=record,
        above_rounding=value > noise,
        converged=unconverged == 0,
        notes=notes,
    )


def adaptive_average(hessian, rho: float = 0.01, samples: int = 20, seed: int = 0) -> Sharpness:
    """Average-case adaptive sharpness: the mean of f(w + ρ |w| ⊙ z) − f(w) over ``samples`` Gaussian z."""
    w = hessian.flat_params()
    base = hessian.mean_loss(w)
    rng = np.random.default_rng(seed)
    rises = np.array(
        [hessian.mean_loss(w + rho * np.abs(w) * rng.standard_normal(len(w))) - base for _ in range(samples)]
    )
    spread = estimate.stderr(rises)
    noise = rounding(hessian, base)
    return _named(
        "adaptive_average",
        float(rises.mean()),
        spread,
        base,
        {"rho": rho, "samples": samples, "seed": seed},
        samples + 1,
        above_rounding=float(rises.mean()) > noise,
    )


def average_rise(
    hessian, radius: float = 0.5, directions: int = 20, norm: str = "filter", ignore: str = "biasbn", seed: int = 0
) -> Sharpness:
    """The loss (and 0-1 error) rise at ``radius`` along random ``norm``-normalized directions, averaged."""
    w = hessian.flat_params()
    origin = {n: p.detach().to("cpu", torch.float64) for n, p in hessian.params.items()}
    base = hessian.mean_loss(w)
    base_error = hessian.error(w)
    generator = torch.Generator().manual_seed(seed)
    rises, error_rises = [], []
    for _ in range(directions):
        d = dirs.random_direction(origin, norm, ignore, generator)
        flat = torch.cat([d[n].reshape(-1) for n in hessian.names]).numpy()
        value = hessian.mean_loss(w + radius * flat)
        rises.append(value - base)
        error_rises.append(hessian.error(w + radius * flat) - base_error)
    rises, error_rises = np.asarray(rises), np.asarray(error_rises)
    spread = estimate.stderr(rises)
    return _named(
        "average",
        float(rises.mean()),
        spread,
        base,
        {"radius": radius, "directions": directions, "norm": norm, "ignore": ignore, "seed": seed},
        2 * directions + 2,
        error_rise=float(error_rises.mean()),
    )


__all__ = [
    "Sharpness",
    "SharpnessConfig",
    "compute",
    "MEASURES",
    "WORST_CASE",
    "DEFINITIONS",
    "SearchConfig",
    "adaptive_sharpness",
    "adaptive_l2_sharpness",
    "adaptive_average",
    "m_sharpness",
    "epsilon_sharpness",
    "average_rise",
]
