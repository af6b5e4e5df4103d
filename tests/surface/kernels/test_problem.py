"""The plane of weights every kernel evaluates: points made fresh from the float64 origin, rounded once."""

import pytest
import torch
from torch import nn

from landscape.losses import Loss
from landscape.surface.kernels import Problem


def problem(model, dtype=torch.float32, directions=None, bn="eval"):
    g = torch.Generator().manual_seed(1)
    origin = (
        {n: p.detach().double() for n, p in model.state_dict().items() if p.is_floating_point()}
        if directions == "states"
        else {n: p.detach().double() for n, p in model.named_parameters()}
    )
    dirs = [{n: torch.randn(v.shape, generator=g, dtype=torch.float64) for n, v in origin.items()} for _ in range(2)]
    x = torch.randn(20, 6, generator=g)
    data = {"train": (x, torch.randint(0, 3, (20,), generator=g))}
    return (
        Problem.of(model, origin, dirs, data, Loss("crossentropy"), dtype, torch.device("cpu"), True, bn),
        origin,
        dirs,
    )


def test_a_points_weights_are_the_float64_combination_rounded_once():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    p, origin, (dx, dy) = problem(model)
    w = p.weights(torch.tensor([[0.3, -0.7], [0.0, 0.0]], dtype=torch.float64))
    for name in origin:
        exact = (origin[name] + 0.3 * dx[name] - 0.7 * dy[name]).to(torch.float32)
        assert w[0][name].dtype == torch.float32 and torch.allclose(w[0][name], exact, rtol=0, atol=1e-7)
        assert torch.equal(w[1][name], origin[name].to(torch.float32))  # (0, 0) is the model exactly
    assert p.model is not model and not p.model.training and next(model.parameters()).requires_grad


def test_a_perturbed_running_variance_is_never_negative_and_a_target_is_reached_exactly():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Linear(5, 3)).eval()
    p, origin, (dx, _) = problem(model, torch.float64, "states")
    name = "1.running_var"
    assert (origin[name] + 50 * dx[name] < 0).any()
    stacked = p.stacked(torch.tensor([[50.0, 0.0]], dtype=torch.float64))
    assert (p.layout.views(stacked[0])[name] >= 0).all()


def test_directions_not_shaped_as_the_origin_are_refused_by_name():
    model = nn.Linear(6, 3)
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    bad = {"weight": torch.zeros(4, 6, dtype=torch.float64), "bias": torch.zeros(3, dtype=torch.float64)}
    with pytest.raises(ValueError, match=r"direction tensor 'weight' has shape \(4, 6\), expected .*\(3, 6\)"):
        Problem.of(
            model,
            origin,
            [bad],
            {"train": (torch.zeros(2, 6), torch.zeros(2, dtype=torch.long))},
            Loss("crossentropy"),
            torch.float32,
            torch.device("cpu"),
            True,
        )
