"""Each recipe's rule against its paper's formula: schedules, LARS's trust ratio, the norm test on a
quadratic whose gradient noise is known, averaging every H steps, the augmentation, BatchNorm per step."""

import math

import pytest
import torch
from torch import nn

from landscape.errors import ConfigError
from landscape.train import augment
from landscape.train.adaptive import norm_test
from landscape.train.batchnorm import StepStatistics
from landscape.train.lars import LARS, trust_ratio
from landscape.train.local import Averaging
from landscape.train.loop import micro_batches, mine
from landscape.train.recipes import resolve

# -- schedules -------------------------------------------------------------------------------------


def test_sgd_steps_down_at_half_and_three_quarters_of_the_epochs():
    r = resolve("sgd", epochs=300)
    assert r.milestone_epochs() == [150, 225]
    assert [r.lr_at(e) for e in (0, 149, 150, 224, 225, 299)] == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001, 0.001])


def test_naive_keeps_the_rate_at_any_batch():
    assert resolve("naive", batch_size=8192).lr_at(0) == 0.1
    assert resolve("naive", batch_size=16).lr_at(0) == 0.1


def test_linear_scales_by_batch_over_256_with_a_linear_warm_up_from_lr():
    r = resolve("linear", batch_size=1024, epochs=100, warmup_epochs=5)
    assert r.peak_lr == pytest.approx(0.4)
    assert r.lr_at(0, 0.0) == pytest.approx(0.1)  # Goyal et al.: start at the small-batch rate
    assert r.lr_at(2, 0.5) == pytest.approx(0.1 + 0.3 * 0.5)  # halfway through the warm-up
    assert r.lr_at(4, 0.999) == pytest.approx(0.1 + 0.3 * 4.999 / 5)
    assert r.lr_at(5) == pytest.approx(0.4)
    assert r.lr_at(50) == pytest.approx(0.04)


def test_linear_below_the_base_batch_needs_no_warm_up():
    r = resolve("linear", batch_size=64)
    assert r.lr_at(0) == pytest.approx(0.025) and r.lr_at(3, 0.5) == pytest.approx(0.025)


def test_a_drop_inside_the_warm_up_scales_it():
    r = resolve("linear", batch_size=512, epochs=4, warmup_epochs=5)  # drops at epochs 2 and 3
    assert r.lr_at(2, 0.0) == pytest.approx(0.2 * 0.1 * (0.5 + 0.5 * 2 / 5))


@pytest.mark.parametrize(
    "name, value",
    [
        ("lr", 0),
        ("momentum", 1.0),
        ("batch_size", 0),
        ("epochs", 1.5),
        ("milestones", (0.75, 0.5)),
        ("gamma", 0),
        ("trust", -1),
        ("max_batch", 8),
        ("sync_every", 0),
        ("warmup_epochs", float("nan")),
    ],
)
def test_bad_hyper_parameters_are_refused_by_name(name, value):
    with pytest.raises(ConfigError, match=rf"^{name}="):
        resolve("linear", **{"batch_size": 16, name: value})


def test_unknown_recipe_and_parameter_are_refused():
    with pytest.raises(ConfigError, match="recipe=adam: expected one of sgd, naive"):
        resolve("adam")
    with pytest.raises(ConfigError, match="^betas="):
        resolve("sgd", betas=0.9)


def test_every_hyper_parameter_is_recorded():
    record = resolve("lars", batch_size=512, trust=0.002).record()
    assert record["recipe"] == "lars" and record["trust"] == 0.002 and record["nesterov"] is False
    assert record["milestones"] == [0.5, 0.75]


# -- LARS --------------------------------------------------------------------------------------------


def test_trust_ratio_is_you_et_al_formula():
    assert trust_ratio(2.0, 0.5, 0.01, 0.001) == pytest.approx(0.001 * 2.0 / (0.5 + 0.01 * 2.0))
    assert trust_ratio(0.0, 1.0, 0.01, 0.001) == 1.0 and trust_ratio(1.0, 0.0, 0.01, 0.001) == 1.0


def test_lars_scales_weight_tensors_and_leaves_biases_plain():
    torch.manual_seed(0)
    layer = nn.Linear(4, 3)
    w0, b0 = layer.weight.detach().clone(), layer.bias.detach().clone()
    gw, gb = torch.randn(3, 4), torch.randn(3)
    layer.weight.grad, layer.bias.grad = gw.clone(), gb.clone()
    LARS(layer.parameters(), lr=0.5, momentum=0.9, weight_decay=0.01, trust=0.02).step()
    local = 0.02 * float(w0.norm()) / (float(gw.norm()) + 0.01 * float(w0.norm()))
    assert torch.allclose(layer.weight.detach(), w0 - 0.5 * local * (gw + 0.01 * w0), atol=1e-7)
    assert torch.allclose(layer.bias.detach(), b0 - 0.5 * gb, atol=1e-7)  # no ratio, no decay


def test_lars_momentum_accumulates_the_scaled_steps():
    p = nn.Parameter(torch.tensor([[3.0, 4.0]]))  # |w| = 5
    opt = LARS([p], lr=1.0, momentum=0.5, weight_decay=0.0, trust=0.1)
    p.grad = torch.tensor([[0.0, 2.0]])  # |g| = 2: local = 0.1 * 5 / 2 = 0.25
    opt.step()
    assert torch.allclose(p.detach(), torch.tensor([[3.0, 3.5]]))
    p.grad = torch.tensor([[0.0, 2.0]])  # |w| = sqrt(9 + 12.25)
    local = 0.1 * math.sqrt(21.25) / 2
    opt.step()
    assert torch.allclose(p.detach(), torch.tensor([[3.0, 3.5 - (0.5 * 0.5 + local * 2)]]))


# -- the norm test -----------------------------------------------------------------------------------


def test_norm_test_estimates_the_gradient_noise_of_a_quadratic():
    """Loss_i(w) = |w - x_i|^2 / 2 with x_i ~ N(mu, s^2 I) in d dimensions: the per-sample gradient
    w - x_i has covariance trace sigma^2 = d s^2 exactly; the test must recover it and ask for the batch
    sigma^2 / (theta^2 |G|^2)."""
    torch.manual_seed(0)
    d, s, m, count = 50, 2.0, 32, 400
    w, mu = torch.zeros(d, dtype=torch.float64), torch.full((d,), 0.05, dtype=torch.float64)
    x = mu + s * torch.randn(count * m, d, dtype=torch.float64)
    micro = (w - x).view(count, m, d).mean(dim=1)  # the micro-batches' mean gradients
    G = micro.mean(dim=0)
    result = norm_test(
        float(micro.pow(2).sum()), count, float(G.pow(2).sum()), m, batch=count * m, theta=0.1, max_batch=10**9
    )
    assert result.sample_variance == pytest.approx(d * s * s, rel=0.05)
    wanted = d * s * s / (0.01 * float(G.pow(2).sum()))
    assert not result.passed
    assert result.next_batch == pytest.approx(wanted, rel=0.06) and result.next_batch % m == 0


def test_norm_test_keeps_a_batch_that_passes_and_caps_growth():
    assert norm_test(10.0, 10, 1.0, 8, 80, theta=1.0, max_batch=1000).passed  # sigma^2 = 0: no noise
    grown = norm_test(1000.0, 10, 1.0, 8, 80, theta=0.1, max_batch=200)
    assert not grown.passed and grown.next_batch == 200
    assert norm_test(5.0, 1, 1.0, 8, 8, theta=0.1, max_batch=200).next_batch == 8  # one micro-batch: no estimate


# -- periodic averaging --------------------------------------------------------------------------------


def _ranks(count):
    """``count`` one-parameter models and an all-reduce mean across them, done by hand."""
    models = [nn.Linear(1, 1, bias=False) for _ in range(count)]
    for i, m in enumerate(models):
        m.weight.data.fill_(float(i))
    averagers = []

    def mean_for(index):
        def mean(tensors):
            mean.calls.append(index)
            mean.pending[index] = tensors
            if len(mean.pending) == count:  # the last rank to arrive completes the all-reduce
                stacks = list(zip(*[mean.pending[i] for i in range(count)]))
                for group in stacks:
                    avg = sum(t.clone() for t in group) / count
                    for t in group:
                        t.copy_(avg)
                mean.pending.clear()

        return mean

    shared = mean_for(0)
    shared.calls, shared.pending = [], {}
    for i, m in enumerate(models):
        fn = mean_for(i)
        fn.calls, fn.pending = shared.calls, shared.pending
        averagers.append(Averaging(m, fn, sync_every=3, control_variates=False))
    return models, averagers, shared.calls


def test_models_are_averaged_every_h_steps_and_bytes_are_counted():
    models, averagers, calls = _ranks(2)
    for step in range(1, 7):
        for i, (m, a) in enumerate(zip(models, averagers)):
            m.weight.data.add_(1.0 + i)  # rank-dependent local steps
            a.stepped(0.1)
        if step % 3:
            assert models[0].weight.item() != models[1].weight.item()
        else:
            assert models[0].weight.item() == models[1].weight.item()
    assert len(calls) == 4  # 2 averages x 2 ranks
    assert averagers[0].bytes == 2 * 4  # one float32 weight per average


def test_control_variates_follow_scaffold_option_two():
    models, _, _ = _ranks(2)
    a = Averaging(models[1], lambda tensors: None, sync_every=2, control_variates=True)  # one rank, mean = identity
    x = models[1].weight.detach().clone()
    models[1].weight.data.sub_(0.3)
    a.stepped(0.1)
    models[1].weight.data.sub_(0.3)
    a.stepped(0.1)  # averages: c_i = 0 - 0 + (x - y) / (0.1 + 0.1) = 0.6 / 0.2
    assert a.c_own[0].item() == pytest.approx(3.0) and a.c_all[0].item() == pytest.approx(3.0)
    models[1].weight.grad = torch.tensor([[1.0]])
    a.c_all[0].fill_(5.0)
    a.correct()
    assert models[1].weight.grad.item() == pytest.approx(1.0 + 5.0 - 3.0)
    assert torch.equal(a.anchor[0], models[1].weight.detach()) and not torch.equal(x, a.anchor[0])


# -- micro-batches -------------------------------------------------------------------------------------


def test_micro_batches_go_round_robin_and_cover_the_step_once():
    slices = micro_batches(157, 64)
    assert [(s.start, s.stop) for s in slices] == [(0, 64), (64, 128), (128, 157)]
    assert [mine(3, r, 4) for r in range(4)] == [[0], [1], [2], []]
    assert sorted(j for r in range(2) for j in mine(5, r, 2)) == list(range(5))


# -- augmentation ------------------------------------------------------------------------------------


def test_centre_crop_without_flip_is_the_image_and_flip_mirrors_it():
    images = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).view(2, 3, 32, 32)
    fill = torch.tensor([-1.0, -2.0, -3.0])
    same = augment.apply(
        images, augment.Plan(torch.tensor([4, 4]), torch.tensor([4, 4]), torch.tensor([False, True])), fill
    )
    assert torch.equal(same[0], images[0]) and torch.equal(same[1], images[1].flip(-1))


def test_a_shifted_crop_moves_the_image_and_pads_with_black():
    images = torch.rand(1, 3, 32, 32)
    fill = torch.tensor([-1.0, -2.0, -3.0])
    out = augment.apply(images, augment.Plan(torch.tensor([0]), torch.tensor([8]), torch.tensor([False])), fill)
    assert torch.equal(out[0, :, 4:, :28], images[0, :, :28, 4:])  # 4 rows down, 4 columns left
    assert torch.equal(out[0, :, :4, :], fill.view(3, 1, 1).expand(3, 4, 32))  # padded rows: black
    assert torch.equal(out[0, :, :, 28:], fill.view(3, 1, 1).expand(3, 32, 4))


def test_an_epochs_plan_depends_only_on_its_generator():
    a = augment.plan(1000, torch.Generator().manual_seed(3))
    b = augment.plan(1000, torch.Generator().manual_seed(3))
    assert torch.equal(a.top, b.top) and torch.equal(a.flip, b.flip)
    assert int(a.top.min()) == 0 and int(a.top.max()) == 8 and 0.4 < float(a.flip.float().mean()) < 0.6


def test_black_is_zero_before_normalization():
    from landscape.data.cifar import NORMALIZATION, black

    mean, std = NORMALIZATION["cifar10"]
    assert torch.allclose(
        black("cifar10") * torch.tensor(std) / 255 + torch.tensor(mean) / 255, torch.zeros(3), atol=1e-6
    )
    assert torch.equal(black("cifar10", raw=True), torch.zeros(3))


# -- BatchNorm per step --------------------------------------------------------------------------------


def test_one_micro_batch_per_step_is_pytorchs_own_update():
    torch.manual_seed(0)
    ours, theirs = nn.BatchNorm1d(5), nn.BatchNorm1d(5)
    stats = StepStatistics(ours)
    for _ in range(3):
        x = torch.randn(16, 5) * 3 + 1
        stats.begin()
        ours(x)
        stats.finish(lambda tensors: None)
        theirs(x)
    assert torch.allclose(ours.running_mean, theirs.running_mean, atol=1e-7)
    assert torch.allclose(ours.running_var, theirs.running_var, atol=1e-6)
    assert int(ours.num_batches_tracked) == 3 and ours.momentum == 0.1


def test_several_micro_batches_move_the_statistics_once_by_their_mean():
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(4)
    stats = StepStatistics(bn)
    parts = [torch.randn(8, 4) + i for i in range(3)]
    stats.begin()
    for x in parts:
        bn(x)
    stats.finish(lambda tensors: None)
    mean = torch.stack([x.mean(0) for x in parts]).mean(0)
    var = torch.stack([x.var(0, unbiased=True) for x in parts]).mean(0)
    assert torch.allclose(bn.running_mean, 0.1 * mean, atol=1e-6)
    assert torch.allclose(bn.running_var, 0.9 * torch.ones(4) + 0.1 * var, atol=1e-6)
    assert int(bn.num_batches_tracked) == 1


def test_the_phase_is_the_warm_up_then_one_per_rate():
    """``Recipe.phase`` follows ``lr_at``: warm-up while a scaled rate climbs, then one phase per rate."""
    r = resolve("linear", batch_size=1024, epochs=100, warmup_epochs=5)
    assert [r.phase(e, f) for e, f in ((0, 0.0), (4, 0.99), (5, 0.0), (49, 0.9), (50, 0.0), (75, 0.0))] == [
        "warm-up",
        "warm-up",
        "rate 0",
        "rate 0",
        "rate 1",
        "rate 2",
    ]
    assert resolve("linear", batch_size=128, epochs=10).phase(0) == "rate 0"  # at or below base: no warm-up
    flat = resolve("naive", steps=100, milestones=())
    assert {flat.phase(0, 0.0, s) for s in range(100)} == {"rate 0"} and flat.lr_at(0, 0.0, 99) == 0.1
