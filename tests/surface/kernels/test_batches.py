"""The data as the kernels go through it: the sets joined into one run where they can be, each batch
knowing its sets by slice."""

import pytest
import torch

from landscape.surface.kernels.batches import SetData, joinable


def sets(train: int = 37, test: int = 11, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return {
        "train": (torch.randn(train, 6, generator=g), torch.randint(0, 4, (train,), generator=g)),
        "test": (torch.randn(test, 6, generator=g), torch.randint(0, 4, (test,), generator=g)),
    }


@pytest.mark.parametrize("batch", [1, 4, 5, 12, 50])
def test_every_sample_is_counted_once_in_its_own_set_an_empty_set_included(batch):
    data = {name: (torch.randn(n, 2), torch.zeros(n, dtype=torch.long)) for name, n in (("a", 5), ("b", 0), ("c", 7))}
    plan = SetData.of(data, per_sample=True)
    assert plan.joined and plan.largest_pass == 12
    counted = [0, 0, 0]
    for b in plan.batches(batch):
        assert len(b.inputs) == len(b.targets) <= batch
        assert b.runs[0][1] == 0 and b.runs[-1][2] == len(b.targets)  # the runs cover the batch ...
        assert all(r[2] == s[1] for r, s in zip(b.runs, b.runs[1:]))  # ... in order, end to end
        for s, start, end in b.runs:
            counted[s] += end - start
            assert start < end
    assert counted == [5, 0, 7]


def test_joined_sets_stay_reachable_by_name_as_views_of_one_copy():
    data = sets()
    plan = SetData.of(data, per_sample=True)
    inputs = plan.passes[0][0]
    for name, (x, y) in data.items():
        assert torch.equal(plan.data[name][0], x) and torch.equal(plan.data[name][1], y)
        assert plan.data[name][0].untyped_storage().data_ptr() == inputs.untyped_storage().data_ptr()
    assert plan.batches(16) is plan.batches(16)  # planned once per batch size


def test_sets_that_cannot_be_joined_go_through_apart():
    data = sets()
    assert not joinable(data, per_sample=False)  # a callable's batch mean cannot be split between sets
    other_shape = {"train": data["train"], "test": (torch.randn(5, 3, 2), torch.randint(0, 4, (5,)))}
    assert not joinable(other_shape, per_sample=True)
    plan = SetData.of(data, per_sample=False)
    assert not plan.joined and plan.largest_pass == 37
    assert all(len(b.runs) == 1 for b in plan.batches(16))  # never a batch of two sets
    assert [b.runs[0][0] for b in plan.batches(16)] == [0, 0, 0, 1]
