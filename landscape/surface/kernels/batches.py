"""The evaluation data as the kernels go through it: the data sets joined into one run where they can be,
cut into batches whose sets are known by slice.

A small model evaluates fastest with few, large batches.  The training and the test set go through the
model as one concatenation when they can (same input and target shapes and types, and a loss that has a
value per sample, so that a batch's sums can be split between the sets), the batches running on from the
training set into the test set; a batch that straddles the two holds a run of each.  A batch says which
sets it holds as ``(set index, start, end)`` runs of its rows, so a kernel sums each set's slice: no masks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Batch:
    """``inputs[i]``, ``targets[i]`` for the rows of one batch, and the sets they belong to: ``runs`` of
    ``(set, start, end)``, in order, covering the batch."""

    inputs: torch.Tensor
    targets: torch.Tensor
    runs: tuple[tuple[int, int, int], ...]


def joinable(data: dict[str, tuple[torch.Tensor, torch.Tensor]], per_sample: bool) -> bool:
    """Whether the data sets can go through the model as one: a loss with a value per sample, and inputs
    and targets of one shape, type and device in every set."""
    pairs = list(data.values())
    x0, y0 = pairs[0]
    return per_sample and all(
        x.shape[1:] == x0.shape[1:]
        and x.dtype == x0.dtype
        and x.device == x0.device
        and y.shape[1:] == y0.shape[1:]
        and y.dtype == y0.dtype
        for x, y in pairs
    )


@dataclass(frozen=True)
class SetData:
    """The data sets by name (``data``: views into one concatenation where they were joined) and the runs
    of samples that go through the model (``passes``: one for joined sets, else one per set, each with the
    index of its first set and where its sets end)."""

    data: dict[str, tuple[torch.Tensor, torch.Tensor]]
    passes: tuple[tuple[torch.Tensor, torch.Tensor, int, tuple[int, ...]], ...]
    joined: bool
    _plans: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, data: dict[str, tuple[torch.Tensor, torch.Tensor]], per_sample: bool) -> SetData:
        if len(data) > 1 and joinable(data, per_sample):
            inputs, targets = (torch.cat([pair[i] for pair in data.values()]) for i in (0, 1))
            ends = (0, *itertools.accumulate(len(y) for _, y in data.values()))
            views = {name: (inputs[a:b], targets[a:b]) for name, a, b in zip(data, ends, ends[1:])}
            return cls(views, ((inputs, targets, 0, ends),), True)
        return cls(dict(data), tuple((x, y, i, (0, len(y))) for i, (x, y) in enumerate(data.values())), False)

    @property
    def names(self) -> list[str]:
        return list(self.data)

    @property
    def largest_pass(self) -> int:
        """Samples in the longest pass: the largest batch worth having."""
        return max(len(targets) for _, targets, _, _ in self.passes)

    def batches(self, batch_size: int) -> list[Batch]:
        """The batches at ``batch_size``, planned once per batch size."""
        if batch_size not in self._plans:
            self._plans[batch_size] = [
                batch
                for inputs, targets, first, ends in self.passes
                for batch in _plan(inputs, targets, first, ends, batch_size)
            ]
        return self._plans[batch_size]


def _plan(inputs: torch.Tensor, targets: torch.Tensor, first: int, ends: tuple[int, ...], batch_size: int):
    for start in range(0, len(targets), batch_size):
        end = min(start + batch_size, len(targets))
        runs = tuple(
            (first + s, max(start, a) - start, min(end, b) - start)
            for s, (a, b) in enumerate(zip(ends, ends[1:]))
            if a < b and a < end and b > start
        )
        yield Batch(inputs[start:end], targets[start:end], runs)
