"""Two noisy spirals, generated in code, and an MLP whose width is an argument: a plug-in model and data
set for the command line (see examples/README.md).

    landscape train --model examples/spirals.py:mlp --model_args '{"width": 32}' \
        --dataset examples/spirals.py:spirals --data_args '{"n": 1000, "noise": 0.2}' ...

Each factory takes keyword arguments (``--model_args``, ``--data_args``: a JSON object); the run records
them with the file's absolute path, so ``surface`` and ``report`` on its checkpoint need neither flag.
"""

import math

import torch
from torch import nn


def spirals(n: int = 1000, noise: float = 0.2, turns: float = 1.5, seed: int = 0):
    """``n`` points of two interleaved spirals (classes 0 and 1, arms 1 apart), Gaussian noise of scale ``noise``;
    80 % for training, 20 % for testing.  Seeded: every call (every rank, every later command) draws the
    same points."""
    g = torch.Generator().manual_seed(seed)
    half = n // 2
    t = torch.sqrt(torch.rand(half, generator=g)) * turns * 2 * math.pi  # denser near the centre
    arm = torch.stack([t * torch.cos(t), t * torch.sin(t)], dim=1) / math.pi  # the arms 1 apart, radius 2 turns
    x = torch.cat([arm, -arm]) + noise * torch.randn(2 * half, 2, generator=g)
    y = torch.cat([torch.zeros(half, dtype=torch.long), torch.ones(half, dtype=torch.long)])
    order = torch.randperm(2 * half, generator=g)
    x, y = x[order], y[order]
    cut = (8 * len(x)) // 10
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def mlp(width: int = 64, depth: int = 2) -> nn.Module:
    """An MLP from the plane to two classes: ``depth`` hidden layers of ``width`` tanh units."""
    layers, inputs = [], 2
    for _ in range(depth):
        layers += [nn.Linear(inputs, width), nn.Tanh()]
        inputs = width
    return nn.Sequential(*layers, nn.Linear(inputs, 2))
