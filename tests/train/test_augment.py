"""The batched crop and flip against a brute force, image by image: pad with the fill colour, cut the
window at (top, left), mirror it when flipped; and a plan cut into micro-batches augments each sample as
the whole plan does, whoever takes it."""

import torch
import torch.nn.functional as F

from landscape.train import augment
from landscape.train.augment import PAD


def by_hand(image, top, left, flip, fill):
    """One image, (C, H, W): padded by PAD with ``fill`` per channel, cropped, and mirrored if asked."""
    c, h, w = image.shape
    padded = torch.stack([F.pad(image[i], (PAD, PAD, PAD, PAD), value=float(fill[i])) for i in range(c)])
    window = padded[:, top : top + h, left : left + w]
    return window.flip(-1) if flip else window


def test_every_corner_with_and_without_flip_is_the_brute_force():
    images = torch.rand(2 * 81, 2, 5, 7, generator=torch.Generator().manual_seed(0))  # not square: rows vs columns
    corners = torch.tensor([(top, left) for top in range(2 * PAD + 1) for left in range(2 * PAD + 1)] * 2)
    flips = torch.arange(2 * 81) >= 81
    fill = torch.tensor([-1.5, 2.0])
    out = augment.apply(images, augment.Plan(corners[:, 0], corners[:, 1], flips), fill)
    for i in range(len(images)):
        expected = by_hand(images[i], int(corners[i, 0]), int(corners[i, 1]), bool(flips[i]), fill)
        assert torch.equal(out[i], expected), (int(corners[i, 0]), int(corners[i, 1]), bool(flips[i]))


def test_a_plan_cut_into_micro_batches_augments_each_sample_as_the_whole_plan_does():
    images = torch.rand(10, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    fill = torch.zeros(3)
    whole = augment.plan(10, torch.Generator().manual_seed(4))
    together = augment.apply(images, whole, fill)
    parts = [augment.apply(images[a:b], whole[a:b], fill) for a, b in ((0, 3), (3, 4), (4, 10))]
    assert torch.equal(torch.cat(parts), together)
    cut = whole[2:5]
    assert torch.equal(cut.top, whole.top[2:5]) and torch.equal(cut.left, whole.left[2:5])
    assert torch.equal(cut.flip, whole.flip[2:5])


def test_a_plans_corners_cover_both_axes_and_the_input_is_left_alone():
    p = augment.plan(2000, torch.Generator().manual_seed(0))
    assert set(p.left.tolist()) == set(range(2 * PAD + 1)) == set(p.top.tolist())
    assert p.top.dtype == torch.int64 and p.flip.dtype == torch.bool
    images = torch.rand(4, 3, 6, 6)
    before = images.clone()
    augment.apply(images, augment.plan(4, torch.Generator().manual_seed(1)), torch.ones(3))
    assert torch.equal(images, before)
