"""The worst-case search inside the sharpness measures: the largest loss in a neighbourhood of the weights.

Every worst-case measure asks for max f(w + s ⊙ u) over u in a set of radius r — the box |uᵢ| ≤ r (ℓ∞)
or the ball ‖u‖₂ ≤ r (ℓ2) — with s the measure's per-weight scale (|w| for adaptive sharpness,
|w| + 1 for Keskar's).  Searching in u, the coordinates scaled to the set, makes a function-preserving
rescaling of the network give the same search step by step.

At a minimum the gradient vanishes at u = 0, so a search started there alone never leaves it; each
search therefore starts at u = 0 and at ``restarts`` seeded random points of the set, and keeps the
best.  Two methods:

- ``apgd``: Auto-PGD (Croce & Hein 2020, Algorithm 1), as Andriushchenko et al. (2023) use it for
  sharpness: projected steps along the sign of the gradient (box) or its direction (ball), heavy-ball
  momentum 0.75, the step halved at checkpoints where the ascent stalled and resumed from the best point;
  one loss-and-gradient evaluation per iteration.
- ``lbfgsb``: L-BFGS-B (``scipy.optimize``) within the box, with explicit tolerances (box only).

Each search says what it did (``Outcome``): the optimizer's status, its iterations and evaluations, the
start that won, the share of coordinates on the set's boundary, and a convergence check — the relative
gain of the best rise over the last fifth of the winning start's iterations; it is ``converged`` when
that gain is at most ``tol``, or when a second start reached the same maximum to within ``tol`` (for
L-BFGS-B, also when scipy reports convergence away from the start) — the second-best start's rise as a
share of the best's being the other check: each start climbs to a local maximum of its
own (on a trained MLP the starts' maxima spread over 0.10–0.17), so the defaults spend the evaluations
on many short starts (30 iterations from 10 starts found the maximum of a 7,000-evaluation search;
100 from 3 fell 17 % short), and a runner-up near 1 says the maximum was reached from two starts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import checks
from ..errors import ConfigError

METHODS = ("apgd", "lbfgsb")
SETS = ("box", "ball")
MOMENTUM = 0.75  # Auto-PGD's α
PROGRESS = 0.75  # Auto-PGD's ρ: the share of steps that must raise the loss between checkpoints
TAIL = 0.2  # the convergence check looks at the last fifth of the iterations


@dataclass(frozen=True)
class SearchConfig:
    """How a worst-case search runs; the defaults find the worst case of trained networks to within a few
    per cent of a ten times longer search (``tests/curvature/test_search.py``)."""

    method: str = "apgd"
    iterations: int = 30  # per start: Auto-PGD's ascent settles within it on trained networks ...
    restarts: int = 9  # seeded random starts besides u = 0: ... but each start ends at its own local maximum
    tol: float = 0.01  # converged: the best rise grew by at most this share over the last fifth
    seed: int = 0
    extensions: int = 3  # a winning start still rising goes on for up to this many more rounds of iterations

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError("method", self.method, f"one of {', '.join(METHODS)}")
        checks.whole("iterations", self.iterations, least=5, expected="at least 5 iterations")
        checks.whole("restarts", self.restarts, least=0, expected="0 or more random starts")
        checks.number("tol", self.tol, above=0)
        checks.whole("seed", self.seed, least=0)
        checks.whole("extensions", self.extensions, least=0, expected="0 or more rounds")

    def record(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Outcome:
    """What a search found and how."""

    best: float  # the largest loss found
    start: int  # the start that found it: 0 is u = 0, 1… the random ones
    status: str  # the optimizer's own words
    converged: bool
    iterations: int  # of the winning start
    evaluations: int  # loss-and-gradient evaluations, every start
    boundary: float  # share of the coordinates on the box's faces (ball: 1 on its sphere, else 0)
    last_gain: float  # relative gain of the best rise over the winning start's last fifth of iterations
    runner_up: float  # the second-best start's rise as a share of the best's (near 1: the maximum found twice)
    starts: list = field(default_factory=list)  # the best loss of each start
    u: np.ndarray | None = field(default=None, repr=False)  # the maximizer, in scaled coordinates

    def record(self) -> dict:
        out = asdict(self)
        del out["u"]
        return out


@dataclass(frozen=True)
class _Climb:
    """One start's ascent."""

    best: float
    u: np.ndarray  # where it was found
    history: list  # the running maximum after each evaluation
    evaluations: int
    status: str
    iterations: int
    success: bool = True  # the optimizer's own verdict (L-BFGS-B); Auto-PGD always runs its iterations


def _project(u: np.ndarray, radius: float, kind: str) -> np.ndarray:
    if kind == "box":
        return np.clip(u, -radius, radius)
    norm = float(np.linalg.norm(u))
    return u if norm <= radius else u * (radius / norm)


def _direction(g: np.ndarray, kind: str) -> np.ndarray:
    """The ascent step's direction: the gradient's sign (box) or the gradient normalized (ball)."""
    if kind == "box":
        return np.sign(g)
    norm = float(np.linalg.norm(g))
    return g / norm if norm > 0 else np.zeros_like(g)


def _random_start(rng: np.random.Generator, size: int, radius: float, kind: str) -> np.ndarray:
    if kind == "box":
        return rng.uniform(-radius, radius, size)
    g = rng.standard_normal(size)
    return g / np.linalg.norm(g) * radius * rng.uniform() ** (1.0 / size)


def _boundary(u: np.ndarray, radius: float, kind: str) -> float:
    if kind == "box":
        return float(np.mean(np.abs(u) >= radius * (1 - 1e-6))) if len(u) else 0.0
    return float(np.linalg.norm(u) >= radius * (1 - 1e-6))


def checkpoints(iterations: int) -> list[int]:
    """Auto-PGD's checkpoints: p₀ = 0, p₁ = 0.22, pⱼ₊₁ = pⱼ + max(pⱼ − pⱼ₋₁ − 0.03, 0.06), times N."""
    p = [0.0, 0.22]
    while p[-1] < 1:
        p.append(p[-1] + max(p[-1] - p[-2] - 0.03, 0.06))
    return sorted({math.ceil(q * iterations - 1e-9) for q in p if 0 < q < 1})  # 0.57 · 100 is 57, not 58


def _gain(history: list[float], base: float) -> float:
    """The best value's relative gain over the last ``TAIL`` of ``history`` (running maxima), as a share
    of the total rise above ``base``."""
    if len(history) < 2:
        return math.nan
    end = history[-1]
    before = history[max(0, math.floor(len(history) * (1 - TAIL)) - 1)]
    rise = end - base
    return (end - before) / rise if rise > 0 else 0.0


def _apgd(f, u0: np.ndarray, radius: float, kind: str, iterations: int):
    """Auto-PGD from ``u0``, ``iterations`` steps."""
    eta = 2.0 * radius
    marks = set(checkpoints(iterations))
    value, g = f(u0)
    best, best_u, best_g, history = value, u0, g, [value]
    previous_u, u = u0, _project(u0 + eta * _direction(g, kind), radius, kind)
    previous_value = value
    ups, last_mark, eta_at_mark, best_at_mark, halvings = 0, 0, eta, best, 0
    for k in range(1, iterations + 1):
        value, g = f(u)
        ups += value > previous_value
        if value > best:
            best, best_u, best_g = value, u, g
        history.append(best)
        if k == iterations:
            break
        if k in marks:
            stalled = ups < PROGRESS * (k - last_mark) or (eta == eta_at_mark and best == best_at_mark)
            eta_at_mark, best_at_mark, last_mark, ups = eta, best, k, 0
            if stalled:  # halve the step and go on from the best point, without momentum
                eta, halvings = eta / 2, halvings + 1
                u, value, g, previous_u = best_u, best, best_g, best_u
        z = _project(u + eta * _direction(g, kind), radius, kind)
        step = _project(u + MOMENTUM * (z - u) + (1 - MOMENTUM) * (u - previous_u), radius, kind)
        previous_u, previous_value, u = u, value, step
    status = f"{iterations} iterations, the step halved {halvings} times"
    return _Climb(best, best_u, history, iterations + 1, status, iterations)


def _lbfgsb(f, u0: np.ndarray, radius: float, iterations: int):
    from scipy.optimize import minimize  # scipy is imported where a search needs it: most runs never do

    history = []

    def negative(u: np.ndarray):
        value, g = f(u)
        history.append(max(value, history[-1]) if history else value)
        return -value, -g

    result = minimize(
        negative,
        u0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(-radius, radius)] * len(u0),
        options={"maxiter": iterations, "ftol": 1e-12, "gtol": 1e-10},
    )
    message = result.message if isinstance(result.message, str) else result.message.decode()
    return _Climb(
        -float(result.fun),
        np.asarray(result.x),
        history,
        int(result.nfev),
        message,
        int(result.nit),
        bool(result.success),
    )


def search(f, size: int, radius: float, kind: str, config: SearchConfig, base: float) -> Outcome:
    """max f(u) over the box (``kind`` "box") or ball ("ball") of ``radius`` in ``size`` coordinates;
    ``f(u)`` returns (value, gradient); ``base``: f at u = 0, the loss the rise is measured from."""
    if kind not in SETS:
        raise ValueError(f"kind={kind!r}: expected one of {', '.join(SETS)}")
    if config.method == "lbfgsb" and kind != "box":
        raise ConfigError("method", config.method, "apgd for a ball (L-BFGS-B takes box bounds only)")
    rng = np.random.default_rng(config.seed)
    starts = [np.zeros(size)] + [_random_start(rng, size, radius, kind) for _ in range(config.restarts)]

    def climb_from(u0: np.ndarray) -> _Climb:
        if config.method == "apgd":
            return _apgd(f, u0, radius, kind, config.iterations)
        return _lbfgsb(f, u0, radius, config.iterations)

    runs = [climb_from(u0) for u0 in starts]
    won = int(np.argmax([r.best for r in runs]))
    climb = runs[won]
    ranked = sorted((r.best for r in runs), reverse=True)
    runner_up = (ranked[1] - base) / (ranked[0] - base) if len(ranked) > 1 and ranked[0] > base else float("nan")
    # converged: the winning start had stopped rising, or another start reached the same maximum; for
    # L-BFGS-B also scipy's own convergence away from the start
    again = not math.isnan(runner_up) and runner_up >= 1 - config.tol

    def settled(c: _Climb) -> bool:
        gain = _gain(c.history, base)
        return gain <= config.tol or again or (config.method == "lbfgsb" and c.success and c.best > base)

    extended, evaluations = 0, sum(r.evaluations for r in runs)
    while not settled(climb) and extended < config.extensions:  # still rising: on from its best point
        more = climb_from(climb.u)
        extended, evaluations = extended + 1, evaluations + more.evaluations
        better = more.best > climb.best
        climb = _Climb(
            more.best if better else climb.best,
            more.u if better else climb.u,
            climb.history + [max(climb.best, v) for v in more.history[1:]],
            climb.evaluations + more.evaluations,
            f"{climb.status}; continued {extended} time(s) from its best point",
            climb.iterations + more.iterations,
            more.success,
        )
    gain = _gain(climb.history, base)
    return Outcome(
        best=float(climb.best),
        start=won,
        status=climb.status,
        converged=bool(settled(climb)),
        iterations=climb.iterations,
        evaluations=evaluations,
        boundary=_boundary(climb.u, radius, kind),
        last_gain=float(gain),
        runner_up=float(runner_up),
        starts=[float(r.best) for r in runs],
        u=climb.u,
    )


__all__ = ["METHODS", "SETS", "SearchConfig", "Outcome", "checkpoints", "search"]
