"""The flags of the worst-case sharpness searches, shared by ``curvature`` and ``report`` (their defaults:
``curvature.sharpness.SharpnessConfig``)."""

from __future__ import annotations

import argparse

from ..curvature.search import METHODS
from ..curvature.sharpness import SharpnessConfig


def add_search_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--method",
        choices=METHODS,
        help=f"the worst-case searches: Auto-PGD or L-BFGS-B (default: {SharpnessConfig.method})",
    )
    p.add_argument(
        "--iterations",
        type=int,
        help=f"iterations of each worst-case search per start (default: {SharpnessConfig.iterations})",
    )
    p.add_argument(
        "--restarts",
        type=int,
        help=f"seeded random starts besides the minimum (default: {SharpnessConfig.restarts})",
    )
    p.add_argument(
        "--extensions",
        type=int,
        help="a search whose winning start is still rising at its end goes on from its best point for up to "
        f"this many more rounds of --iterations (default: {SharpnessConfig.extensions})",
    )
    p.add_argument(
        "--search_tol",
        type=float,
        help="a search is converged when its best rise grew by at most this share over its last fifth, or a "
        f"second start reached the same maximum within it (default: {SharpnessConfig.search_tol})",
    )
