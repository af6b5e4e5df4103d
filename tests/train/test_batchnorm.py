"""BatchNorm's running statistics moved once per step: two ranks whose ``reduce`` adds each other's
sums end where one rank that saw every micro-batch ends; ``momentum=None`` keeps PyTorch's cumulative
average over steps; a model without BatchNorm never calls ``reduce`` (one micro-batch per step and
several are checked against PyTorch in test_recipes)."""

import copy

import torch
from torch import nn

from landscape.train.batchnorm import StepStatistics


def micro_batches(seed, count=4):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(6, 3, generator=g) * (1 + i) + i for i in range(count)]


def test_two_ranks_adding_their_sums_end_where_one_rank_with_every_micro_batch_ends():
    torch.manual_seed(0)
    one = nn.BatchNorm1d(3)
    ranks = [copy.deepcopy(one), copy.deepcopy(one)]
    parts = micro_batches(1)
    stats = StepStatistics(one)
    stats.begin()
    for x in parts:
        one(x)
    stats.finish(lambda tensors: None)

    shares = (parts[:1], parts[1:])  # uneven: one micro-batch on rank 0, three on rank 1
    other = StepStatistics(ranks[1])
    other.begin()
    for x in shares[1]:
        ranks[1](x)
    sent = []
    other.finish(lambda tensors: sent.extend(t.clone() for t in tensors))  # what rank 1 hands to the all-reduce
    mine = StepStatistics(ranks[0])
    mine.begin()
    ranks[0](shares[0][0])
    mine.finish(lambda tensors: [t.add_(s) for t, s in zip(tensors, sent)])
    assert torch.allclose(ranks[0].running_mean, one.running_mean, atol=1e-6)
    assert torch.allclose(ranks[0].running_var, one.running_var, atol=1e-6)
    assert int(ranks[0].num_batches_tracked) == 1 and ranks[0].momentum == 0.1


def test_without_momentum_the_statistics_are_the_cumulative_average_of_the_steps():
    bn = nn.BatchNorm1d(3, momentum=None)
    stats = StepStatistics(bn)
    steps = [micro_batches(seed, 2) for seed in range(3)]
    for parts in steps:
        stats.begin()
        for x in parts:
            bn(x)
        stats.finish(lambda tensors: None)
    means = [torch.stack([x.mean(0) for x in parts]).mean(0) for parts in steps]
    variances = [torch.stack([x.var(0, unbiased=True) for x in parts]).mean(0) for parts in steps]
    assert torch.allclose(bn.running_mean, torch.stack(means).mean(0), atol=1e-6)
    assert torch.allclose(bn.running_var, torch.stack(variances).mean(0), atol=1e-6)
    assert int(bn.num_batches_tracked) == 3 and bn.momentum is None


def test_a_model_without_batchnorm_hands_nothing_to_reduce():
    calls = []
    stats = StepStatistics(nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2)))
    stats.begin()
    stats.finish(calls.append)
    assert stats.layers == [] and calls == []
