"""LARS: layer-wise adaptive rate scaling (You, Gitman, Ginsburg 2017, "Large Batch Training of
Convolutional Networks", Algorithm 1).

Each weight tensor ``w`` with gradient ``g`` gets its own ("local") rate

    local = trust * |w| / (|g| + weight_decay * |w|)

so that a step moves every layer by about ``trust`` of its norm whatever the scale of its gradient:
the remedy for layers whose |g|/|w| ratios differ by orders of magnitude at large batch.  The update
is heavy-ball momentum on the scaled step (the paper's):

    v = momentum * v + lr * local * (g + weight_decay * w);   w = w - v

Biases and BatchNorm parameters (every tensor of one dimension) are left out of the scaling and of the
weight decay, as in the paper's and later implementations: they get plain momentum SGD.  A tensor
with ``|w| = 0`` or ``|g| = 0`` also gets the plain step (the ratio means nothing there).
"""

from __future__ import annotations

import torch


def trust_ratio(weight_norm: float, grad_norm: float, weight_decay: float, trust: float) -> float:
    """The local rate of one tensor; 1 when a norm is zero."""
    if weight_norm <= 0 or grad_norm <= 0:
        return 1.0
    return trust * weight_norm / (grad_norm + weight_decay * weight_norm)


def excluded(param: torch.Tensor) -> bool:
    """Biases and BatchNorm weights: tensors of one dimension (or none)."""
    return param.dim() <= 1


class LARS(torch.optim.Optimizer):
    """Momentum SGD with You et al.'s layer-wise trust ratio; 1-D tensors take plain SGD."""

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 5e-4, trust: float = 0.001):
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "trust": trust})

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("LARS takes no closure")
        for group in self.param_groups:
            lr, momentum, decay, trust = group["lr"], group["momentum"], group["weight_decay"], group["trust"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if excluded(p):
                    step = g * lr
                else:
                    local = trust_ratio(float(p.norm()), float(g.norm()), decay, trust)
                    step = (g + decay * p) * (lr * local)
                state = self.state[p]
                if momentum:
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = step.clone()
                    else:
                        buf.mul_(momentum).add_(step)
                    step = buf
                p.sub_(step)
        return None


__all__ = ["LARS", "trust_ratio", "excluded"]
