"""Evaluation kernels: the per-set sums of a pass of grid points, behind one interface (``base.Kernel``).

=============  ==============================================================================================
``reference``  each point through the model's own forward (``functional_call``); the loss once per pass
               over the points' stacked outputs.  Runs anything anywhere; the default.
``compiled``   the work of a batch as one ``torch.compile``d function; a first linear layer by linearity.
=============  ==============================================================================================

An optimization stays where a row of BENCHMARKS.md shows it at least 1.2x faster than the reference
(2026-12-07, ``scripts/bench_kernels.py``): ``compiled`` 1.90x on the digits MLP, its first layer by
linearity 1.60x of it.  An ``unrolled`` kernel (a classifier's loss and counts class by class) showed
1.30x on 2026-12-05 and 1.02-1.13x on the current code, below the bar on every model, and was removed;
so was a ``vmap`` kernel, the pass's points through one vmapped forward: its only row was a GPU one
from before the kernels' redesign, and a GPU row may bring it back.  Which kernel
computed a surface is provenance, not identity: their values differ in the last bits only, so a surface
begun with one may be finished with another (the run records say which).
``--kernel auto`` is the reference kernel: the compiled one is taken when named only (its compilation
takes seconds per shape); ``auto`` batch sizes and points per pass come from ``surface.cost`` and, for a
long surface, ``surface.tuning``.
"""

from __future__ import annotations

from .base import Kernel
from .compiled import Compiled
from .problem import Layout, Problem
from .reference import Reference

KERNELS: dict[str, type[Kernel]] = {k.name: k for k in (Reference, Compiled)}
AUTO = "auto"
CHOICES = (AUTO, *KERNELS)


def make(name: str, problem: Problem, batch_size: int, points_per_pass: int) -> Kernel:
    """Kernel ``name`` for ``problem``; a ``ValueError`` saying why if it cannot evaluate it."""
    cls = KERNELS[name]
    why = cls.refuses(problem)
    if why:
        raise ValueError(f"kernel {name}: {why}")
    return cls(problem, batch_size, points_per_pass)


def candidates(problem: Problem) -> list[str]:
    """The kernels ``auto`` measures for ``problem``: those that can evaluate it on its device, compiled
    excepted (its compilation takes seconds per shape: asked for by name only)."""
    return [name for name, cls in KERNELS.items() if name != Compiled.name and not cls.refuses(problem)]


__all__ = ["AUTO", "CHOICES", "KERNELS", "Kernel", "Layout", "Problem", "candidates", "make"]
