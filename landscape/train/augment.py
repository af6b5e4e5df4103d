"""CIFAR's standard augmentation on whole batches of tensors: a random crop of the image padded by 4
pixels, and a horizontal flip with probability 1/2 (He et al. 2016, Sec. 4.2), with no PIL and no
per-image Python loop.

An epoch's crops and flips are drawn at once, one per *position* in the epoch's sample order, from a
generator seeded by the run's seed and the epoch (``plan``).  A sample's augmentation thus depends
only on (seed, epoch, position), never on which rank or micro-batch takes it: 1 or 4 ranks see the same
images, and a resumed run redraws exactly what the interrupted one drew.  Padding uses the value of a
black pixel in the normalized data, as torchvision pads before it normalizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PAD = 4


@dataclass(frozen=True)
class Plan:
    """Per position of an epoch: the crop's top-left corner in the padded image, and the flip."""

    top: torch.Tensor  # (n,) int64 in 0..2*PAD
    left: torch.Tensor  # (n,) int64 in 0..2*PAD
    flip: torch.Tensor  # (n,) bool

    def __getitem__(self, where: slice) -> Plan:
        return Plan(self.top[where], self.left[where], self.flip[where])


def plan(n: int, generator: torch.Generator) -> Plan:
    """The crops and flips of ``n`` positions, drawn from ``generator``."""
    corners = torch.randint(0, 2 * PAD + 1, (2, n), generator=generator)
    flip = torch.rand(n, generator=generator) < 0.5
    return Plan(corners[0], corners[1], flip)


def apply(images: torch.Tensor, plan: Plan, fill: torch.Tensor) -> torch.Tensor:
    """``images`` (B, C, H, W) cropped and flipped as ``plan`` says (one entry per image).

    The padded batch is built once; each output pixel is gathered from it with one advanced index
    (rows ``top + i``, columns ``left + j``, reversed where the image is flipped).
    """
    b, c, h, w = images.shape
    at = images.device
    padded = fill.to(at, images.dtype).view(1, c, 1, 1).expand(b, c, h + 2 * PAD, w + 2 * PAD).clone()
    padded[:, :, PAD : PAD + h, PAD : PAD + w] = images
    rows = plan.top.view(b, 1) + torch.arange(h, device=at).view(1, h)  # (B, H)
    cols = torch.arange(w, device=at).view(1, w).expand(b, w)
    cols = torch.where(plan.flip.view(b, 1), (w - 1) - cols, cols) + plan.left.view(b, 1)  # (B, W)
    batch = torch.arange(b, device=at).view(b, 1, 1, 1)
    channel = torch.arange(c, device=at).view(1, c, 1, 1)
    return padded[batch, channel, rows.view(b, 1, h, 1), cols.view(b, 1, 1, w)]


__all__ = ["Plan", "plan", "apply", "PAD"]
