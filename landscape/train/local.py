"""Periodic model averaging ("local SGD", Lin, Stich, Patel, Jaggi 2020), with optional SCAFFOLD
control variates (Karimireddy et al. 2020, Algorithm 1, option II).

Each rank takes ``sync_every`` = H optimizer steps on its own share of each global batch, then the
ranks average their models (parameters and buffers): H times fewer all-reduces than data-parallel
SGD.  The ranks also average at the end of every epoch, so a checkpoint holds one model.  Momentum
buffers stay local.

Local steps drift apart when the ranks' data differ.  SCAFFOLD corrects each local gradient by
``c - c_i``: ``c_i`` estimates this rank's gradient and ``c`` the average one, so the corrected
steps follow the global gradient.  After H local steps from the averaged model ``x`` to ``y_i``,

    c_i <- c_i - c + (x - y_i) / (sum of the H learning rates),     c <- mean over ranks of c_i,

which doubles the bytes of an average (the ``c_i`` travel with the model).  Nothing here knows about
ranks: ``mean`` (all-reduce average, in place) comes from the caller, and each call's bytes are
counted as the tensors' size (what one rank hands to the all-reduce).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class Averaging:
    def __init__(
        self, model: nn.Module, mean: Callable[[list[torch.Tensor]], None], sync_every: int, control_variates: bool
    ):
        self.model, self.mean, self.sync_every = model, mean, sync_every
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.control_variates = control_variates
        self.local_steps, self.lr_sum, self.bytes = 0, 0.0, 0
        self.anchor = [p.detach().clone() for p in self.params] if control_variates else []
        self.c_own = [torch.zeros_like(p) for p in self.params] if control_variates else []
        self.c_all = [torch.zeros_like(p) for p in self.params] if control_variates else []

    @torch.no_grad()
    def correct(self) -> None:
        """Before the optimizer step: g <- g + c - c_i."""
        if self.control_variates:
            for p, own, avg in zip(self.params, self.c_own, self.c_all):
                if p.grad is not None:
                    p.grad.add_(avg).sub_(own)

    def stepped(self, lr: float) -> bool:
        """After a local step at rate ``lr``: average when H steps are done; True if it averaged."""
        self.local_steps += 1
        self.lr_sum += lr
        if self.local_steps >= self.sync_every:
            self.average()
            return True
        return False

    @torch.no_grad()
    def average(self) -> None:
        """Average the ranks' models (and update the control variates); nothing to do right after one."""
        if self.local_steps == 0:
            return
        tensors = [t for t in self.model.state_dict().values() if t.is_floating_point()]
        if self.control_variates:
            for own, avg, x, y in zip(self.c_own, self.c_all, self.anchor, self.params):
                own.sub_(avg).add_((x - y) / self.lr_sum)
            fresh = [own.clone() for own in self.c_own]
            tensors = tensors + fresh
        self.mean(tensors)
        self.bytes += sum(t.numel() * t.element_size() for t in tensors)
        if self.control_variates:
            for avg, mean_c in zip(self.c_all, fresh):
                avg.copy_(mean_c)
            for x, p in zip(self.anchor, self.params):
                x.copy_(p)
        self.local_steps, self.lr_sum = 0, 0.0

    def state(self) -> dict:
        """What a checkpoint keeps (taken right after an average: anchor = model, no local steps)."""
        return {"c_own": [t.clone() for t in self.c_own], "c_all": [t.clone() for t in self.c_all]}

    @torch.no_grad()
    def restore(self, state: dict) -> None:
        for dst, src in zip(self.c_own, state.get("c_own", [])):
            dst.copy_(src)
        for dst, src in zip(self.c_all, state.get("c_all", [])):
            dst.copy_(src)
        for x, p in zip(self.anchor, self.params):
            x.copy_(p)


__all__ = ["Averaging"]
