"""The sharpness measures' settings as parameters of the commands that make them (``curvature``,
``report``): one field each, its default ``curvature.sharpness.SharpnessConfig``'s, its help text here."""

from __future__ import annotations

from dataclasses import dataclass

from ..curvature.search import METHODS
from ..curvature.sharpness import SharpnessConfig
from .params import Params, option

_D = SharpnessConfig  # one default per setting: the measures' own
GROUP = "sharpness measures"


@dataclass(frozen=True, kw_only=True)
class SharpnessParams(Params):
    """The measures' settings (each used only by the measures ``curvature.sharpness.USED_BY`` names)."""

    rho: float = option(_D.rho, "adaptive, adaptive_average, m_sharpness: the box |d| <= rho |w|", group=GROUP)
    rho_l2: float = option(_D.rho_l2, "adaptive_l2: the ball ||d / (|w| + eta)|| <= rho_l2", group=GROUP)
    eta: float = option(_D.eta, "adaptive_l2: ASAM's eta (0: invariant to rescaling)", group=GROUP)
    epsilon: float = option(_D.epsilon, "epsilon: Keskar's box |d| <= epsilon (|w| + 1)", group=GROUP)
    subspace: int = option(_D.subspace, "epsilon: a random subspace of this dimension (0: the full space)", group=GROUP)
    radius: float = option(_D.radius, "average: the distance from the minimum", group=GROUP)
    directions: int = option(_D.directions, "average: random filter-normalized directions", group=GROUP)
    draws: int = option(_D.draws, "adaptive_average: Gaussian draws", group=GROUP)
    m: int = option(_D.m, "m_sharpness: training samples per batch", group=GROUP)
    method: str = option(_D.method, "the worst-case searches: Auto-PGD or L-BFGS-B", choices=METHODS, group=GROUP)
    iterations: int = option(_D.iterations, "iterations of each worst-case search per start", group=GROUP)
    restarts: int = option(_D.restarts, "seeded random starts besides the minimum", group=GROUP)
    extensions: int = option(
        _D.extensions,
        "a search whose winning start is still rising at its end goes on from its best point for up to this many "
        "more rounds of --iterations",
        group=GROUP,
    )
    search_tol: float = option(
        _D.search_tol,
        "a search is converged when its best rise grew by at most this share over its last fifth, or a second "
        "start reached the same maximum within it",
        group=GROUP,
    )

    def sharpness_config(self, seed: int) -> SharpnessConfig:
        """The measures' settings (checked there), every random draw from ``seed``."""
        names = [n for n in SharpnessConfig.__dataclass_fields__ if n != "seed"]
        return SharpnessConfig(**{n: getattr(self, n) for n in names}, seed=seed)


__all__ = ["SharpnessParams", "GROUP"]
