"""Sharpness along training: the top Hessian eigenvalue of the full training loss at a step.

The mechanism behind "large batches find sharper minima" is dynamical (Cohen et al. 2021, "edge of
stability"; Jastrzębski et al. 2020): under gradient descent with rate η the top eigenvalue λmax of the
training loss's Hessian rises until it meets the stability limit 2/η (2(1 + β)/η with heavy-ball
momentum β) and hovers there; SGD with small batches equilibrates below it.  ``--curvature_every K``
records λmax every K steps (and at step 0) in the run's ``log.csv``, beside the rate in force, so that
``plot-training`` can draw λmax against the limit.

λmax is that of the mean loss over the whole training set, BatchNorm in eval mode (the function a
surface plots), by the Lanczos of ``landscape curvature`` to a relative tolerance of 1e-3 in float32;
each rank holds a contiguous shard of the samples and the products are summed over the ranks.
"""

from __future__ import annotations

from ..curvature import Hessian
from ..curvature.suite import SuiteConfig, measure
from ..data import Samples
from ..losses import Loss
from ..parallel.partition import shard

TOL = 1e-3
BATCH = 1024
SUITE = SuiteConfig(k=1, which="top", tol=TOL)  # along training: the top eigenvalue to TOL, seed 0


def top_eigenvalue(model, train: Samples, loss: Loss, comm, device: str) -> tuple[float, float]:
    """(λmax, its relative residual) of ``model``'s mean ``loss`` over ``train`` (every rank's copy)."""
    mine = shard(len(train), comm.rank, comm.size)
    hessian = Hessian(
        model,
        Samples(train.inputs[mine], train.targets[mine]),
        loss,
        batch_size=BATCH,
        dtype="float32",
        device=device,
        count=len(train),
        reduce=comm.sum_ if comm.size > 1 else None,
    )
    found = measure(hessian, ["eigenvalues"], SUITE)["eigenvalues"]["top"]
    return found.values[0], found.residuals[0]


__all__ = ["top_eigenvalue", "TOL"]
