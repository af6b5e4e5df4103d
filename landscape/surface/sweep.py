"""Passes of the model over the evaluation data: the sums a point's quantities are made of.

``Sweep`` runs one point, ``BatchedSweep`` K points at once with ``torch.func.vmap`` over stacked
weights, so a small model does K points' work per matrix product (on a GPU), and ``UnrolledSweep`` (on
a CPU) K points one after another in one call that also makes their weights.  All call the
model with the point's weights in place of its own (``torch.func.functional_call``, or eagerly
``slots.caller``, which finds where they go once), one batch of data at a time, and return float64
tensors on the device: per data set the loss sum, the sum of squared per-sample losses and the count
of correct predictions (NaN where accuracy has no meaning).  The data sets go through as
one where they can (``SetData``), so a small model takes one batch per point for all of them.  With
``compile`` the work of one batch (forward, loss, counts) is one ``torch.compile``d function, so the
loss and the counts fuse into the model's last kernels.  Nothing here knows about grids, files or ranks.
"""
from __future__ import annotations

import bisect
import copy
import itertools
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.func import functional_call, vmap

from .compilation import compiled, cpu_passes_available
from .first_layer import LinearStart
from .last_layer import LinearEnd
from .losses import (CLASSES_ONE_BY_ONE, Loss, at_least_float32, cross_entropy_terms, cross_entropy_terms_by_class,
                     cross_entropy_terms_eagerly)
from .slots import caller

# One batch's contribution per data set: loss sum, sum of squared losses, correct predictions (NaN when
# the output has no class dimension to compare), samples whose output holds NaN (their argmax means nothing).
SUM, SQUARES, CORRECT, NAN = range(4)


def correct_per_sample(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """Predictions equal to the label, per sample ``(B,)`` (per point ``(K, B)`` when ``output`` has a
    leading dimension of K points): classes along the last dim (``(B, C)``, ``(B, T, V)``: a sample
    counts its correct tokens) or, torch's convention for dense outputs, along dim 1 (``(B, C, H, W)``).
    None when the output has no class dimension to compare with (a single logit, say): accuracy is
    then NaN rather than wrong."""
    lead = output.dim() - targets.dim() - 1  # 0 for one point, 1 for K points
    if output.shape[lead:-1] == targets.shape and output.shape[-1] > 1:
        right = output.argmax(dim=-1) == targets
    elif (output.dim() >= 3 + lead and output.shape[lead:lead + 1] + output.shape[lead + 2:] == targets.shape
          and output.shape[lead + 1] > 1):
        right = output.argmax(dim=lead + 1) == targets
    else:
        return None
    return right.flatten(lead + 1).sum(dim=-1) if right.dim() > lead + 1 else right


def _per_set(values: torch.Tensor, sets: torch.Tensor | None) -> torch.Tensor:
    """Per-sample ``values`` (``(..., B)``) summed in float64 per data set: ``sets`` is the batch's
    ``(B, S)`` set membership, or None for a batch within one set; returns ``(..., S)`` (S = 1 for None)."""
    if sets is None:
        return values.sum(dim=-1, keepdim=True, dtype=torch.float64)
    return torch.where(sets, values.to(torch.float64).unsqueeze(-1), 0.0).sum(dim=-2)  # not a product: inf * 0 is NaN


def _sums_by_rows(losses: torch.Tensor, right: torch.Tensor, broken: torch.Tensor,
                  sets: torch.Tensor | None) -> torch.Tensor:
    """``_sums``' ``(..., S, 4)`` from per-sample terms ``(..., B)``, for eager passes: the four are rows of
    one float64 tensor and each set's samples, a run of the batch (``_plan``), are one slice of it,
    summed along rows (``_per_set``'s selection and sums across the sample dimension, four times over,
    took 3x as long for the digits MLP's 8 points of 1,797 samples)."""
    rows = torch.empty((*losses.shape[:-1], 4, losses.shape[-1]), dtype=torch.float64, device=losses.device)
    rows[..., SUM, :] = losses
    rows[..., SQUARES, :] = rows[..., SUM, :] * rows[..., SUM, :]
    rows[..., CORRECT, :] = right
    rows[..., NAN, :] = broken
    ends = [0, *sets.sum(dim=0).cumsum(dim=0).tolist()] if sets is not None else [0, losses.shape[-1]]
    return torch.stack([rows[..., start:end].sum(dim=-1) for start, end in zip(ends, ends[1:])], dim=-2)


class FlatLayout:
    """Named tensors laid end to end in one flat vector, in their order: where each starts and ends, and
    views of a flat vector as them (the directions' plane, a point's weights)."""

    def __init__(self, tensors: dict[str, torch.Tensor]):
        self.shapes = {name: tensor.shape for name, tensor in tensors.items()}
        ends = list(itertools.accumulate((tensor.numel() for tensor in tensors.values()), initial=0))
        self.spans = {name: (start, end) for name, start, end in zip(tensors, ends, ends[1:])}

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        return {name: flat[start:end].view(self.shapes[name]) for name, (start, end) in self.spans.items()}


def _finished(total: torch.Tensor) -> torch.Tensor:
    """Summed ``(..., S, 4)`` contributions as ``(..., S, 3)``: a set's count of correct predictions is NaN
    when any of its outputs held NaN."""
    correct = torch.where(total[..., NAN] > 0, torch.nan, total[..., CORRECT])
    return torch.stack([total[..., SUM], total[..., SQUARES], correct], dim=-1)


def joinable(data: dict[str, tuple[torch.Tensor, torch.Tensor]], loss: Loss) -> bool:
    """Whether the data sets can go through the model as one: per-sample losses (a callable's batch
    mean cannot be split between sets) and inputs and targets of one shape and type in every set."""
    tensors = list(data.values())
    return loss.per_sample and all(x.shape[1:] == tensors[0][0].shape[1:] and x.dtype == tensors[0][0].dtype
                                   and y.shape[1:] == tensors[0][1].shape[1:] and y.dtype == tensors[0][1].dtype
                                   and x.device == tensors[0][0].device for x, y in tensors)


@dataclass(frozen=True)
class SetData:
    """The evaluation data as the sweeps go through it.

    The data sets go through the model as one concatenation when they can (``joinable``), the
    batches running on from the training set into the test set, so a small model's evaluation is
    one batch per point rather than a batch per set (and a short last batch per set).  Each pass is
    (inputs, targets, its first set's index, where its sets end); ``data`` keeps each set by name, as
    views into the concatenation (the data are held once)."""

    data: dict[str, tuple[torch.Tensor, torch.Tensor]]
    passes: list[tuple[torch.Tensor, torch.Tensor, int, list[int]]]
    joined: bool
    plans: dict = field(default_factory=dict, compare=False, repr=False)  # batch size -> its batches

    @classmethod
    def of(cls, data: dict[str, tuple[torch.Tensor, torch.Tensor]], loss: Loss) -> "SetData":
        if len(data) > 1 and joinable(data, loss):
            inputs, targets = (torch.cat([pair[i] for pair in data.values()]) for i in (0, 1))
            ends = [0, *itertools.accumulate(len(y) for _, y in data.values())]
            views = {name: (inputs[a:b], targets[a:b]) for name, a, b in zip(data, ends, ends[1:])}
            return cls(views, [(inputs, targets, 0, ends)], True)
        return cls(dict(data), [(x, y, i, [0, len(y)]) for i, (x, y) in enumerate(data.values())], False)

    def batches(self, batch_size: int) -> list:
        """``(inputs, targets, membership, slot)`` per batch: ``membership`` is None for a batch within
        one set, else the ``(B, S)`` set membership of a batch that straddles S sets; ``slot`` is the
        slice of sets it adds to.  Planned once per batch size (a point's passes only look it up)."""
        if batch_size not in self.plans:
            self.plans[batch_size] = [batch for inputs, targets, offset, ends in self.passes
                                      for batch in _plan(inputs, targets, offset, ends, batch_size)]
        return self.plans[batch_size]


def _plan(inputs: torch.Tensor, targets: torch.Tensor, offset: int, ends: list[int], batch_size: int):
    """The batches of one pass; a batch's sets are consecutive runs of it, in order (``_sums_by_rows``
    relies on that)."""
    for start in range(0, len(targets), batch_size):
        end = min(start + batch_size, len(targets))
        first, last = bisect.bisect_right(ends, start) - 1, bisect.bisect_right(ends, end - 1) - 1
        membership = None
        if first != last:
            position = torch.arange(start, end, device=targets.device).unsqueeze(1)
            low, high = (torch.tensor(ends[first + i:last + 1 + i], device=targets.device) for i in (0, 1))
            membership = (position >= low) & (position < high)
        yield inputs[start:end], targets[start:end], membership, slice(offset + first, offset + last + 1)


class _Passes:
    """What the sweeps share: the data in batches (``SetData``) and the accumulation of the per-batch
    sums; ``data`` is a dict of named (inputs, targets) or, to share one concatenation, ``SetData``."""

    one_pass_eagerly = False  # class scores in one pass without compile too (see __init__)
    cpu_passes = False        # compiled with compilation's graph passes (which change last bits)

    def __init__(self, model: nn.Module, data: "dict | SetData", loss: Loss, batch_size: int, with_accuracy: bool,
                 compile: bool = False):
        self.model, self.loss = model, loss
        self.call = caller(model, compile)  # (weights, x) -> the model's output with those weights
        self.batch_size, self.with_accuracy = batch_size, with_accuracy
        self.sets = data if isinstance(data, SetData) else SetData.of(data, loss)
        self.data, self.joined = self.sets.data, self.sets.joined
        # class scores give the cross-entropy and the argmax in one pass: compiled (``cross_entropy_terms``),
        # and eagerly on a CPU (``UnrolledSweep``: ``cross_entropy_terms_eagerly``), where torch's log_softmax
        # and argmax over a few classes are slow (digits MLP, 8 points x 1,797 samples: 159 us per point
        # against 459 for log_softmax and argmax; class by class, with _sums_by_rows, 72 against 155)
        self.scores_in_one_pass = ((compile or self.one_pass_eagerly) and loss.name == "crossentropy"
                                   and with_accuracy)
        self.compile = compile
        # compiled, few classes' scores go class by class where classes_as_rows can lay them out (decided here,
        # not while torch.compile traces _sums)
        self.by_class_possible = compile and self.cpu_passes and cpu_passes_available()
        self.step = compiled(self._step, self.cpu_passes) if compile else self._step
        # a sweep of one batch holding every set (a small model's) is one call, sums finished and all
        self.whole = compiled(self._whole, self.cpu_passes) if compile else self._whole

    def _step(self, weights, x, y, sets) -> torch.Tensor:
        raise NotImplementedError

    def _points(self, weights) -> tuple[int, ...]:
        return ()

    @property
    def largest_pass(self) -> int:
        """Samples in the longest pass: the largest useful batch size."""
        return max(len(targets) for _, targets, _, _ in self.sets.passes)

    def with_batch_size(self, batch_size: int) -> "_Passes":
        """The same sweep in batches of ``batch_size``, sharing the (compiled) step: a step takes any batch."""
        other = copy.copy(self)
        other.batch_size = batch_size
        return other

    def __call__(self, weights: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per data set ``(..., sets, 3)``: loss sum, squared-loss sum, correct predictions."""
        batches = self.sets.batches(self.batch_size)
        if self._one_batch(batches):
            return self.whole(weights, *batches[0][:3])
        return self._accumulated(weights, batches)

    def _one_batch(self, batches: list) -> bool:
        return len(batches) == 1 and batches[0][3] == slice(0, len(self.data))

    def _accumulated(self, weights, batches: list) -> torch.Tensor:
        device = self.sets.passes[0][1].device
        total = torch.zeros(self._points(weights) + (len(self.data), 4), dtype=torch.float64, device=device)
        for inputs, targets, membership, slot in batches:
            total[..., slot, :] += self.step(weights, inputs, targets, membership)
        return _finished(total)

    def _whole(self, weights, x, y, sets) -> torch.Tensor:
        return _finished(self._step(weights, x, y, sets))

    def _sums(self, output: torch.Tensor, targets: torch.Tensor, sets: torch.Tensor | None,
              points: int) -> torch.Tensor:
        """A batch's ``(..., S, 4)`` contribution from the model's output (``(K, B, ...)`` for K = ``points``
        points, ``(B, ...)`` for one: ``points`` 0)."""
        lead = (points,) if points else ()
        if self.scores_in_one_pass and output.dim() == len(lead) + 2 and output.shape[-1] > 1 and targets.dim() == 1:
            if not self.compile:
                return _sums_by_rows(*cross_entropy_terms_eagerly(at_least_float32(output), targets), sets)
            # class by class where classes_as_rows can lay the scores out for it: float32 or float64 scores
            # (a low-precision model's are converted first, which the pass does not see through) of few classes
            by_class = (self.by_class_possible and output.shape[-1] <= CLASSES_ONE_BY_ONE
                        and output.dtype in (torch.float32, torch.float64))
            terms = cross_entropy_terms_by_class if by_class else cross_entropy_terms
            losses, right, broken = terms(at_least_float32(output), targets)
            losses = losses.to(torch.float64)
            return torch.stack([_per_set(losses, sets), _per_set(losses * losses, sets), _per_set(right, sets),
                                _per_set(broken, sets)], dim=-1)
        if self.loss.per_sample:
            losses = self.loss.of_samples(output, targets, points).to(torch.float64)
            total, squares = _per_set(losses, sets), _per_set(losses * losses, sets)
        else:  # a callable's batch mean: the sets went through apart (one set per batch)
            total = self.loss.batch_total(output, targets, points).unsqueeze(-1)
            squares = torch.full_like(total, float("nan"))
        right = correct_per_sample(output, targets) if self.with_accuracy else None
        if right is None:
            columns = (1,) if sets is None else sets.shape[1:]
            right = torch.full(lead + columns, float("nan"), dtype=torch.float64, device=targets.device)
            broken = torch.zeros_like(right)
        elif sets is None:  # within one set: whether any output holds NaN will do
            right = _per_set(right, sets)
            broken = torch.isnan(output).flatten(len(lead)).any(dim=-1, keepdim=True).to(torch.float64)
        else:
            right = _per_set(right, sets)
            broken = _per_set(torch.isnan(output).flatten(len(lead) + 1).any(dim=-1), sets)
        return torch.stack([total, squares, right, broken], dim=-1)


class Sweep(_Passes):
    """One point: ``self(weights)`` is a ``(sets, 3)`` float64 tensor on the device, so a point's
    results come back in one transfer."""

    def _step(self, weights, x, y, sets) -> torch.Tensor:
        return self._sums(self.call(weights, x), y, sets, 0)


class BatchedSweep(_Passes):
    """K points per forward pass: ``self(stacked)`` maps weights stacked along a first dimension of K
    to a ``(K, sets, 3)`` tensor of sums."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.forward = vmap(lambda weights, x: functional_call(self.model, weights, (x,)), in_dims=(0, None))

    def _points(self, stacked) -> tuple[int, ...]:
        return (next(iter(stacked.values())).shape[0],)

    def _step(self, stacked, x, y, sets) -> torch.Tensor:
        output = self.forward(stacked, x)  # (K, B, ...)
        return self._sums(output, y, sets, output.shape[0])


UNROLL = 8  # points per compiled call of an UnrolledSweep at most: its compile time grows with each
# What a surface file records of UnrolledSweep's arithmetic, which fixes its values' last bits, eager and
# compiled apart: a file begun under other passes is not resumed.  unrolled-2: the weights of all tensors one
# product (eagerly one addmm, compiled one fused kernel); eagerly the scores taken class by class and the sums set
# by set (cross_entropy_terms_eagerly, _sums_by_rows); compiled, a linear layer's bias added after its product
# (compilation.split_bias); the gaps below the top score floored before their exp (losses.exp_floor).
# unrolled-3, compiled: besides, a few classes' scores made with the classes as rows and the loss taken class by
# class (compilation.classes_as_rows, losses.cross_entropy_terms_by_class; a new CLASSES_ONE_BY_ONE is a new name).
# unrolled-4, compiled: classes as rows only from a product of at most compilation.ROWS_INNER inputs.
# Eagerly, a model that ends with a linear classifier has its scores made as rows, which its files record apart
# (last_layer).
EAGER_PASSES = "unrolled-2"
COMPILED_PASSES = "unrolled-4"


class UnrolledSweep(_Passes):
    """K points per call, one after another, for a CPU: ``self(coefficients)`` maps ``(K, 2)`` float64
    coefficients ``(a, b)`` to ``(K, sets, 3)`` sums.

    Each point's weights ``origin + a*dx + b*dy`` are made inside the call (float64, rounded once into
    the model's dtype) and go through the model's own forward, so a point runs at the speed of a
    single forward pass, while what a call costs besides is shared by its points.  vmap would instead
    make K-fold activations, which on a CPU fall out of the caches: on the 1 MiB-L2 AMD EPYC of
    BENCHMARKS.md the digits MLP's 8 points vmapped and compiled took 1.5x the time of 8 bare forwards,
    this form 1.02x; on a 2 MiB-L2 Xeon, 32 points vmapped took 1.4-1.5x the time of this form, eagerly
    or compiled (at 8 points compiled, about the same).

    The weights of a call's K points are made at once, for all tensors side by side, ``origin +
    coefficients @ plane`` in float64 (``plane`` the directions as the ``(1 or 2, n)`` rows of one
    matrix), then rounded into the model's dtype; each point's tensors are views into the result.

    Compiled (``--compile``), what is shared is torch.compile's guards and the eager glue; the loss
    and the counts fuse into each point's last kernels.  A sweep of one batch is one call, weights to
    finished sums; a sweep of several batches makes the weights once per call of points, in a
    compiled call of their own (making them again for each of ResNet-20's 18 batches cost 4 %).  The
    weights' product is written out as one fused kernel (inductor's float64 addmm of so thin a
    product took 2.5x as long), and since every point's tensors
    are views of its output, inductor keeps that output rather than computing a bias again for every
    sample it is added to (``compilation.split_bias`` moves the bias out of the layer's product).
    Compiled, a model that begins with a wide linear layer has it taken by linearity (``first_layer``,
    ``start``): the passes run the rest of the model from the layer's features of the data, each point's
    input their combination by its coefficients, and the layer's tensors are left out of the weights.
    Calls hold ``min(K, UNROLL)`` points, so the graph compiled per batch shape stays small; the
    points of a pass that do not fill a call go one per call (a second graph, of one point: padding a
    5 x 5 grid's last point to a call of 8 would compute 7 copies of it for nothing).

    Eagerly, a call holds the whole pass: the weights are one ``addmm``, and the loss and the counts
    are taken once over the stacked ``(K, B, ...)`` outputs (class by class, ``_sums``), so their many
    small operations are paid once per pass rather than once per point.  A model that ends with a
    linear classifier (``last_layer``, ``end``) runs its body, and its class scores are made as rows
    straight into the stacked outputs' buffer.  A pass's points are the same in any run (chunks come
    from global point indices), so their bits are too."""

    one_pass_eagerly = cpu_passes = True

    def __init__(self, model, data, loss, batch_size, with_accuracy, *, origin: dict, plane: torch.Tensor,
                 dtype: torch.dtype, running_vars: set, points: int, compile: bool = True,
                 start: LinearStart | None = None, end: LinearEnd | None = None):
        """``origin``: float64 tensors by name; ``plane``: their directions, flattened in that order and side
        by side, as the rows of a float64 ``(1 or 2, n)`` matrix; ``start``: the model's first linear layer,
        taken by linearity (``first_layer``): the passes go through its ``tail`` from features of the data;
        ``end``, eagerly: the model's last linear layer, whose class scores the passes make as rows
        (``last_layer``) from what its ``body`` gives."""
        if end is not None and (compile or start is not None or loss.name != "crossentropy" or not with_accuracy):
            raise ValueError("the scores as rows are for the class scores of eager passes (compiled ones have "
                             "classes_as_rows)")
        self.start, self.end = start, end
        if start is not None:
            whole = FlatLayout(origin)
            directions = [whole.views(row) for row in plane]
            sets = data if isinstance(data, SetData) else SetData.of(data, loss)
            data = SetData.of({name: (start.features(model, x, origin, directions, dtype), y)
                               for name, (x, y) in sets.data.items()}, loss)
            # the tail holds what its forward uses: a tensor it lacks (an unused head) cannot change the outputs
            held = {name for name, _ in itertools.chain(start.tail.named_parameters(remove_duplicate=False),
                                                        start.tail.named_buffers(remove_duplicate=False))}
            kept = [name for name in origin if name in held]
            plane = torch.cat([plane[:, slice(*whole.spans[name])] for name in kept] or [plane[:, :0]], dim=1)
            origin, model = {name: origin[name] for name in kept}, start.tail
        self.layout = FlatLayout(origin)
        self.flat_origin = torch.cat([tensor.reshape(-1) for tensor in origin.values()] or [plane.new_zeros(0)])
        self.plane = plane
        self.variances = [span for name, span in self.layout.spans.items() if name in running_vars]
        self.dtype = dtype
        self.group = min(points, UNROLL) if compile else points
        super().__init__(model if end is None else end.body, data, loss, batch_size, with_accuracy, compile=compile)
        self.made = compiled(self._made, True) if compile else self._made
        self.rounded: dict[int, tuple] = {}  # eagerly, K -> (K points' weights in the model's dtype, their views)

    def _made(self, coefficients: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """Each point's weights, from its ``(a, b)``."""
        if self.compile:
            stacked = self.flat_origin
            for axis, row in enumerate(self.plane):
                stacked = stacked + coefficients[:, axis:axis + 1] * row
        else:
            stacked = torch.addmm(self.flat_origin, coefficients[:, :len(self.plane)], self.plane)
        for start, end in self.variances:
            stacked[:, start:end].clamp_(min=0.0)  # a perturbed variance is never negative
        if self.compile:
            return [self.layout.views(point) for point in stacked.to(self.dtype)]
        # eagerly into one buffer per number of points, whose views are made once (a point's tensors as fresh
        # views of the rounded product took 16 of the digits MLP's 37 µs a point for its weights)
        if len(coefficients) not in self.rounded:
            with torch.inference_mode(False):  # a buffer written in and out of inference mode alike
                buffer = stacked.new_empty(stacked.shape, dtype=self.dtype)
                self.rounded[len(coefficients)] = buffer, [self.layout.views(point) for point in buffer]
        buffer, views = self.rounded[len(coefficients)]
        buffer.copy_(stacked)
        return [dict(point) for point in views]  # a forward that replaces a tensor of its own changes only this pass's

    def _points(self, points: tuple) -> tuple[int, ...]:
        return (len(points[1]),)

    def _forward(self, points: tuple, i: int, x: torch.Tensor) -> torch.Tensor:
        """The output of the ``i``-th of ``points``, (coefficients, their weights), on a batch ``x`` of the
        data (of the first layer's features where it is taken by linearity)."""
        coefficients, weights = points
        return self.call(weights[i], x if self.start is None else self.start.at(x, coefficients[i]))

    def _step(self, points: tuple, x, y, sets) -> torch.Tensor:
        if self.compile:  # each point's loss and counts fuse into its forward's last kernels
            return torch.stack([self._sums(self._forward(points, i, x), y, sets, 0) for i in range(len(points[1]))])
        return self._sums(self._stacked(points, x), y, sets, len(points[1]))

    def _stacked(self, points: tuple, x: torch.Tensor) -> torch.Tensor:
        """The outputs of ``points`` as one ``(K, B, ...)`` tensor, each copied in right after its forward,
        while it is in the cache.  Class scores ``(B, C)`` are laid out ``(K, C, B)`` underneath (the view
        returned is ``(K, B, C)``), as ``cross_entropy_terms_eagerly`` reduces them: it then copies them
        whole rather than transposing them (the digits MLP's 32 points of 1,024 samples: torch.stack and
        the transposing copy cold took 30-50 µs a point)."""
        if self.end is not None:
            return self._rows(points[1], x)
        stacked = None
        for i in range(len(points[1])):
            output = self._forward(points, i, x)
            if stacked is None:
                by_class = self.scores_in_one_pass and output.dim() == 2 and output.shape[-1] > 1
                shape = (len(points[1]), *output.shape)
                stacked = (output.new_empty((shape[0], shape[2], shape[1])).transpose(-1, -2) if by_class
                           else output.new_empty(shape))
            elif output.shape != stacked.shape[1:] or output.dtype != stacked.dtype:  # not copied in silently
                raise RuntimeError(f"the model's outputs differ from point to point: {tuple(output.shape)} "
                                   f"{output.dtype} against {tuple(stacked.shape[1:])} {stacked.dtype}")
            stacked[i].copy_(output)
        return stacked

    def _rows(self, weights: list[dict], x: torch.Tensor) -> torch.Tensor:
        """``_stacked`` for a model that ends with a linear classifier (``last_layer``): each point's scores
        made as rows, classes x samples, in their place in the buffer."""
        rows = None
        for i, point in enumerate(weights):
            body, weight, bias = self.end.split(point)
            features = self.call(body, x)
            if rows is None:
                rows = features.new_empty((len(weights), self.end.layer.out_features, len(features)))
            self.end.rows(weight, bias, features, rows[i])
        return rows.transpose(-1, -2)

    def _whole(self, coefficients, x, y, sets) -> torch.Tensor:
        return _finished(self._step((coefficients, self._made(coefficients)), x, y, sets))

    def _call(self, coefficients: torch.Tensor) -> torch.Tensor:
        batches = self.sets.batches(self.batch_size)
        if self._one_batch(batches):
            return self.whole(coefficients, *batches[0][:3])
        return self._accumulated((coefficients, self.made(coefficients)), batches)

    def __call__(self, coefficients: torch.Tensor) -> torch.Tensor:
        if not self.compile:  # eagerly one call holds the pass, whatever its length
            return self._call(coefficients)
        full = len(coefficients) - len(coefficients) % self.group
        parts = [self._call(coefficients[start:start + self.group]) for start in range(0, full, self.group)]
        parts += [self._call(coefficients[i:i + 1]) for i in range(full, len(coefficients))]
        return parts[0] if len(parts) == 1 else torch.cat(parts)
