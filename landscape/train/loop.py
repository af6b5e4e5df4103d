"""The training loop: epochs of global batches, each split into micro-batches shared by the ranks.

One optimizer step takes the next ``batch`` positions of the epoch's sample order (a permutation
drawn from the run's seed and the epoch, so the same on every rank and on resume), cuts them into
micro-batches of ``micro_batch`` samples and hands micro-batch ``j`` to rank ``j % ranks``.  Each
rank runs its micro-batches one after the other, adding their gradients (gradient accumulation),
and the gradient of the step is the sum over ranks of ``grad(sum of per-sample losses) / batch``:
the mean over the global batch, whatever the number of ranks, up to the order of float32 sums.
BatchNorm normalizes each micro-batch by its own statistics and moves its running statistics once
per step (``batchnorm.py``), so those too do not depend on the number of ranks.

How gradients meet is the caller's choice, given as a ``collective`` (``parallel.distributed``):
for ``sgd``, ``naive``, ``linear`` and ``lars`` the model is wrapped in DistributedDataParallel,
which all-reduces during the backward pass of each rank's last micro-batch (``no_sync`` before);
``adaptive`` needs every micro-batch's gradient norm, so its ranks accumulate without DDP and sum
gradients and norms in one all-reduce; ``local`` averages models every few steps (``local.py``).
Nothing here imports torch.distributed or MPI.
"""

from __future__ import annotations

import hashlib
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass, field

import torch
from torch import nn

from ..data import Samples
from ..losses import Loss, per_sample
from ..parallel.partition import shard
from . import augment, divergence
from .adaptive import norm_test
from .batchnorm import StepStatistics
from .lars import LARS
from .local import Averaging
from .recipes import Recipe

EVAL_BATCH = 1024  # evaluation: memory only, sums in float64 do not depend on it


def epoch_seed(seed: int, epoch: int, what: str) -> int:
    """A 63-bit seed for one purpose in one epoch: independent streams, no arithmetic collisions."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{epoch}/{what}".encode()).digest()[:8], "little") >> 1


def micro_batches(size: int, micro: int) -> list[slice]:
    """The micro-batches of a step of ``size`` samples: slices of ``micro`` (the last may be shorter)."""
    return [slice(start, min(start + micro, size)) for start in range(0, size, micro)]


def mine(count: int, rank: int, ranks: int) -> list[int]:
    """The micro-batches (of ``count``) that rank ``rank`` of ``ranks`` computes: ``j % ranks == rank``."""
    return list(range(rank, count, ranks))


def make_optimizer(params, recipe: Recipe) -> torch.optim.Optimizer:
    if recipe.recipe == "lars":
        return LARS(
            params, lr=recipe.lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay, trust=recipe.trust
        )
    return torch.optim.SGD(
        params, lr=recipe.lr, momentum=recipe.momentum, nesterov=recipe.nesterov, weight_decay=recipe.weight_decay
    )


@dataclass
class Position:
    """Where training stands: the next epoch and sample position in it, steps so far, the batch."""

    epoch: int = 0
    offset: int = 0
    step: int = 0
    batch: int = 0
    partial: dict = field(default_factory=dict)  # a stopped epoch's totals so far, so its log row is whole


@dataclass
class EpochStats:
    """One epoch as the log shows it (training part; evaluation is added by the caller)."""

    epoch: int
    steps: int
    samples: int
    running_loss: float  # mean training loss of the epoch's batches (augmented, train mode)
    lr: float  # at the epoch's last step
    batch: int  # at the epoch's last step
    seconds: float  # training only, this rank
    comm_seconds: float  # in all-reduces, this rank (with DDP they overlap the backward pass)
    comm_bytes: int  # handed to all-reduces by this rank
    batches: list[int] = field(default_factory=list)  # adaptive: the batch of every step


class Trainer:
    """Trains ``model`` (already on ``device``) on ``train``; ``collective`` joins the ranks."""

    def __init__(
        self,
        model: nn.Module,
        recipe: Recipe,
        train: Samples,
        micro_batch: int,
        seed: int,
        collective,
        device: str,
        fill: torch.Tensor | None = None,
        loss: Loss | str = "crossentropy",
    ):
        self.recipe, self.train, self.micro, self.seed = recipe, train, micro_batch, seed
        self.collective, self.device, self.fill = collective, device, fill
        self.loss = loss if isinstance(loss, Loss) else Loss(loss)
        self.module = model
        self.mode = {"adaptive": "reduce", "local": "local"}.get(recipe.recipe, "ddp")
        self.model = collective.wrap(model) if self.mode == "ddp" else model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = make_optimizer(self.params, recipe)
        self.bn = StepStatistics(model)
        self.averaging = (
            Averaging(model, collective.mean_, recipe.sync_every, recipe.control_variates)
            if self.mode == "local"
            else None
        )
        self.max_batch = recipe.max_batch or len(train)
        self.position = Position(batch=recipe.batch_size)
        self.stop_requested = lambda: False  # set by the caller: True stops after the current step
        # the first step whose training loss was NaN or infinite on this rank: epoch, step, lr, loss (the
        # caller agrees on a divergence: ranks may see it a step apart, and it polls once a step)
        self.nonfinite: dict | None = None
        self.pause_after = lambda step: False  # set by the caller: True pauses the epoch after this step
        # set by the caller: called after each step (steps done, its rate, the epoch and the epoch's share
        # done before it), the model holding its weights
        self.after_step = lambda step, lr, epoch, fraction: None

    # -- one step -------------------------------------------------------------------------------------

    def _inputs(self, index: torch.Tensor, plan) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.train.inputs[index], self.train.targets[index]
        if plan is not None:
            x = augment.apply(x, plan, self.fill)
        return x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)

    def _loss_sum(self, output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The sum of the samples' losses (a loss given as code: its batch mean times the batch)."""
        if self.loss.per_sample:
            return per_sample(self.loss.name, output, targets).sum()
        return self.loss.batch_total(output, targets)

    def _flat_grad(self) -> torch.Tensor:
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in self.params])

    def step(self, index: torch.Tensor, plan, lr: float) -> tuple[float, int]:
        """One optimizer step on the samples ``index`` (the whole global batch); returns this rank's
        (loss sum, samples)."""
        c = self.collective
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        slices = micro_batches(len(index), self.micro)
        own = mine(len(slices), c.rank, c.size)
        local_total = sum(slices[j].stop - slices[j].start for j in own)
        if self.mode == "ddp":
            scale = c.size / len(index)  # DDP averages over ranks: this makes it the sum / batch
        elif self.mode == "reduce":
            scale = 1.0 / len(index)
        else:  # local steps: this rank's mean
            scale = 1.0 / max(local_total, 1)
        self.optimizer.zero_grad(set_to_none=True)
        self.bn.begin()
        loss_sum, sum_sq, before = 0.0, 0.0, None
        for k, j in enumerate(own):
            part = slices[j]
            x, y = self._inputs(index[part], plan[part] if plan is not None else None)
            last = k == len(own) - 1
            with self.model.no_sync() if self.mode == "ddp" and not last and c.size > 1 else nullcontext():
                total = self._loss_sum(self.model(x), y)
                (total * scale).backward()
            loss_sum += float(total.detach())
            if self.mode == "reduce":  # this micro-batch's mean gradient, for the norm test
                now = self._flat_grad()
                step_grad = now - before if before is not None else now
                sum_sq += float(step_grad.pow(2).sum()) * (len(index) / (part.stop - part.start)) ** 2
                before = now
        if not own and self.mode == "ddp" and c.size > 1:
            self._idle_pass(index[:1])
        self.bn.finish(c.sum_ if self.mode != "local" else (lambda tensors: None))
        if self.mode == "reduce":
            self._reduce_and_test(len(slices), sum_sq, len(index))
        if self.averaging is not None:
            self.averaging.correct()
        self.optimizer.step()
        if self.averaging is not None:
            self.averaging.stepped(lr)
        self.position.step += 1
        return loss_sum, local_total

    def _idle_pass(self, index: torch.Tensor) -> None:
        """A rank without a micro-batch in this step (a short last batch) still joins DDP's all-reduce:
        a pass of one sample with zero weight, BatchNorm in eval mode so nothing of it is kept."""
        x, y = self._inputs(index, None)
        norms = self.bn.layers
        for m in norms:
            m.eval()
        try:
            (self._loss_sum(self.model(x), y) * 0.0).backward()
        finally:
            for m in norms:
                m.train()

    def _reduce_and_test(self, count: int, sum_sq: float, batch: int) -> None:
        """adaptive: sum gradients and micro-batch norms over ranks, then grow the batch if the norm
        test fails."""
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        stats = torch.tensor([sum_sq], dtype=torch.float64, device=grads[0].device)
        self.collective.sum_(grads + [stats])
        for p, g in zip(self.params, grads):
            p.grad = g
        g2 = float(sum(float(g.double().pow(2).sum()) for g in grads))
        test = norm_test(float(stats), count, g2, self.micro, batch, self.recipe.theta, self.max_batch)
        if batch == self.position.batch:  # a short last batch of an epoch does not set the next
            self.position.batch = test.next_batch

    # -- epochs ---------------------------------------------------------------------------------------

    def plan(self, epoch: int):
        """The epoch's sample order and augmentation, from the seed and the epoch alone."""
        generator = torch.Generator().manual_seed(epoch_seed(self.seed, epoch, "order"))
        order = torch.randperm(len(self.train), generator=generator)
        moves = augment.plan(len(self.train), generator) if self.fill is not None else None
        at = self.train.inputs.device  # the data may live on the GPU: index it there
        if moves is not None:
            moves = augment.Plan(moves.top.to(at), moves.left.to(at), moves.flip.to(at))
        return order.to(at), moves

    def run_epoch(self, epoch: int) -> EpochStats | None:
        """Train epoch ``epoch`` from the current position, to its end or to the end of a budget in
        steps; None if a stop was requested mid-epoch, or the caller pauses it after a step (an
        evaluation due): the position then says where to go on, and ``position.partial`` holds the
        epoch's totals so far (``partial_stats``)."""
        self.module.train()
        torch.manual_seed(epoch_seed(self.seed, epoch, f"torch/{self.collective.rank}"))  # dropout and the like
        order, moves = self.plan(epoch)
        n = len(order)
        c = self.collective
        comm0, bytes0 = c.seconds, c.bytes
        started = time.perf_counter()
        lr, offset = self.recipe.lr, self.position.offset
        before = self.position.partial if offset else {}  # a resumed epoch: the part before the stop
        # the loss and sample totals before the stop are over all ranks: rank 0 carries them, once
        loss_sum = before.get("loss_sum", 0.0) if c.rank == 0 else 0.0
        samples = before.get("samples", 0) if c.rank == 0 else 0
        steps = before.get("steps", 0)
        batches = list(before.get("batches", []))

        def so_far() -> dict:
            return {
                "loss_sum": loss_sum,
                "samples": samples,
                "steps": steps,
                "batches": batches,
                "seconds": before.get("seconds", 0.0) + time.perf_counter() - started,
                "comm_seconds": before.get("comm_seconds", 0.0) + c.seconds - comm0,
                "comm_bytes": before.get("comm_bytes", 0) + c.bytes - bytes0,
            }

        budget = self.recipe.steps
        while offset < n and not (budget and self.position.step >= budget):
            batch = self.position.batch
            lr = self.recipe.lr_at(epoch, offset / n, self.position.step)
            where = slice(offset, min(offset + batch, n))
            part_loss, part_samples = self.step(order[where], moves[where] if moves is not None else None, lr)
            self.after_step(self.position.step, lr, epoch, offset / n)
            if self.nonfinite is None and not math.isfinite(part_loss):
                self.nonfinite = divergence.seen(epoch + 1, self.position.step, lr, part_loss)
            loss_sum += part_loss
            samples += part_samples
            steps += 1
            batches.append(where.stop - where.start)
            offset = where.stop
            self.position.offset = offset
            # local: only right after an average, where all ranks hold one model (a resume needs no more)
            settled = self.averaging is None or self.averaging.local_steps == 0
            going_on = offset < n and not (budget and self.position.step >= budget)
            if going_on and settled and (self.pause_after(self.position.step) or self.stop_requested()):
                partial = so_far()
                totals = torch.tensor([loss_sum, float(samples)], dtype=torch.float64)
                c.sum_([totals])
                partial.update(loss_sum=float(totals[0]), samples=int(totals[1]), lr=lr, batch=batch)
                self.position.partial = partial
                return None
        if self.averaging is not None:
            self.averaging.average()
        done = so_far()
        self.position.epoch, self.position.offset, self.position.partial = epoch + 1, 0, {}
        totals = torch.tensor([loss_sum, float(samples)], dtype=torch.float64)
        c.sum_([totals])
        return EpochStats(
            epoch=epoch,
            steps=steps,
            samples=int(totals[1]),
            running_loss=float(totals[0] / max(totals[1], 1)),
            lr=lr,
            batch=self.position.batch,
            seconds=done["seconds"],
            comm_seconds=done["comm_seconds"],
            comm_bytes=done["comm_bytes"],
            batches=batches if self.recipe.recipe == "adaptive" else [],
        )

    def partial_stats(self) -> EpochStats:
        """The paused epoch so far, as a log row shows it."""
        p = self.position.partial
        return EpochStats(
            epoch=self.position.epoch,
            steps=p["steps"],
            samples=p["samples"],
            running_loss=p["loss_sum"] / max(p["samples"], 1),
            lr=p.get("lr", math.nan),
            batch=p.get("batch", self.position.batch),
            seconds=p["seconds"],
            comm_seconds=p["comm_seconds"],
            comm_bytes=p["comm_bytes"],
            batches=list(p["batches"]) if self.recipe.recipe == "adaptive" else [],
        )

    # -- state ----------------------------------------------------------------------------------------

    def state(self) -> dict:
        """This rank's optimizer (and control variates) and the position: what a resume needs."""
        out = {"optimizer": self.optimizer.state_dict(), "position": vars(self.position).copy()}
        if self.averaging is not None:
            out["averaging"] = self.averaging.state()
        return out

    def restore(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.position = Position(**state["position"])
        if self.averaging is not None and "averaging" in state:
            self.averaging.restore(state["averaging"])


@torch.no_grad()
def evaluate(
    model: nn.Module,
    samples: Samples,
    device: str,
    collective,
    loss: Loss | str = "crossentropy",
    batch: int = EVAL_BATCH,
) -> tuple[float, float]:
    """Mean loss and accuracy in percent (NaN for regression) over ``samples``, in eval mode (BatchNorm's
    running statistics), each rank a contiguous share, the sums added over ranks in float64."""
    loss = loss if isinstance(loss, Loss) else Loss(loss)
    was = model.training
    model.eval()
    part = shard(len(samples), collective.rank, collective.size)
    start, stop = part.start, part.stop
    sums = torch.zeros(3, dtype=torch.float64)
    for first in range(start, stop, batch):
        x = samples.inputs[first : min(first + batch, stop)].to(device)
        y = samples.targets[first : min(first + batch, stop)].to(device)
        output = model(x)
        sums[0] += float(loss.total(output, y)[0])
        if not y.is_floating_point():
            sums[1] += float((output.argmax(dim=-1) == y).sum())
        sums[2] += len(y)
    collective.sum_([sums])
    model.train(was)
    count = float(sums[2])
    accuracy = 100.0 * float(sums[1]) / count if samples.is_classification else math.nan
    return float(sums[0]) / count, accuracy


__all__ = ["Trainer", "Position", "EpochStats", "evaluate", "micro_batches", "mine", "epoch_seed", "make_optimizer"]
