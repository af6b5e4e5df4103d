"""LARS's edge cases by hand: which tensors it leaves out, a zero weight or gradient taking the plain
step, no momentum buffer without momentum, gradients missing, and no closure (the trust ratio and the
momentum on the scaled steps are in test_recipes)."""

import pytest
import torch
from torch import nn

from landscape.train.lars import LARS, excluded


def test_tensors_of_one_dimension_or_none_are_left_out_of_the_scaling():
    assert excluded(torch.zeros(5)) and excluded(torch.tensor(1.0))
    assert not excluded(torch.zeros(2, 3)) and not excluded(torch.zeros(1, 1, 3, 3))


def test_a_zero_weight_takes_the_plain_step_and_a_zero_gradient_only_the_decay():
    zero = nn.Parameter(torch.zeros(2, 2))
    still = nn.Parameter(torch.tensor([[3.0, 4.0]]))
    opt = LARS([zero, still], lr=0.5, momentum=0.0, weight_decay=0.1, trust=0.001)
    zero.grad, still.grad = torch.tensor([[1.0, -2.0], [0.0, 4.0]]), torch.zeros(1, 2)
    opt.step()
    assert torch.equal(zero.detach(), torch.tensor([[-0.5, 1.0], [0.0, -2.0]]))  # ratio 1: w - lr · g
    assert torch.allclose(still.detach(), torch.tensor([[3.0 - 0.15, 4.0 - 0.2]]))  # w - lr · decay · w
    assert opt.state[zero] == {} and opt.state[still] == {}  # no momentum: no buffer kept


def test_a_parameter_without_a_gradient_is_untouched_and_closures_are_refused():
    used, unused = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(2, 2))
    opt = LARS([used, unused], lr=0.1, momentum=0.9)
    used.grad = torch.full((3,), 2.0)
    opt.step()
    assert torch.allclose(used.detach(), torch.full((3,), 0.8)) and torch.equal(unused.detach(), torch.ones(2, 2))
    assert unused not in opt.state
    with pytest.raises(ValueError, match="LARS takes no closure"):
        opt.step(lambda: 0.0)
