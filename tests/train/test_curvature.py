"""λmax along training on a closed form: a linear model under MSE, whose Hessian is exactly 2/n X̃ᵀX̃
(X̃ the inputs with a column of ones), to the tolerance the log records; and a rank's shard with the
products summed over ranks gives the same λmax as the whole set on one rank."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from landscape.data import Samples
from landscape.losses import Loss
from landscape.parallel.comm import SerialComm
from landscape.train.curvature import TOL, top_eigenvalue


def linear_case():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(30, 4, generator=g) * torch.tensor([3.0, 1.0, 0.5, 0.2])
    samples = Samples(x, torch.randn(30, 1, generator=g))
    x1 = np.hstack([x.double().numpy(), np.ones((30, 1))])
    return nn.Linear(4, 1), samples, np.linalg.eigvalsh(2 * x1.T @ x1 / 30)[-1]


def test_the_top_eigenvalue_of_a_least_squares_loss_is_its_closed_form_to_the_tolerance():
    model, samples, exact = linear_case()
    value, residual = top_eigenvalue(model, samples, Loss("mse"), SerialComm(), "cpu")
    assert TOL == 1e-3 and residual <= TOL
    assert value == pytest.approx(exact, rel=TOL)


def test_a_shard_per_rank_with_products_summed_over_the_ranks_is_the_whole_training_set():
    """Two ranks holding the same samples twice over: rank 0's shard is one copy, and adding rank 1's
    identical share is doubling each sum, so λmax must be that of one copy on one rank."""
    model, samples, exact = linear_case()
    twice = Samples(torch.cat([samples.inputs] * 2), torch.cat([samples.targets] * 2))
    rank0 = SimpleNamespace(rank=0, size=2, sum_=lambda array: array.__imul__(2))
    value, _ = top_eigenvalue(model, twice, Loss("mse"), rank0, "cpu")
    assert value == pytest.approx(exact, rel=TOL)
    alone = SimpleNamespace(rank=0, size=2, sum_=lambda array: None)  # without the other half: half the mean
    assert top_eigenvalue(model, twice, Loss("mse"), alone, "cpu")[0] == pytest.approx(exact / 2, rel=TOL)
