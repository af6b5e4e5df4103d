"""The kernel interface on a kernel of our own whose outputs are known: logits (0, a, 0, 0) for the point
with coefficient a, whatever the input, so each set's cross-entropy and correct predictions have closed
forms, however the batches straddle the sets; ``rebatched`` and the defaults every kernel inherits."""

import math

import pytest
import torch
from torch import nn

from landscape.losses import Loss
from landscape.surface.kernels import Kernel, Problem


class Known(Kernel):
    """Outputs (K, B, 4): logit a on class 1 for the point (a, b), zero elsewhere."""

    name = "known"

    def _pass(self, coefficients):
        def outputs_of(inputs):
            logits = torch.zeros(len(coefficients), len(inputs), 4, dtype=torch.float64)
            logits[:, :, 1] = coefficients[:, 0].view(-1, 1)
            return logits

        return self._summed(outputs_of, coefficients)


def problem():
    model = nn.Linear(6, 4)
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    zero = {n: torch.zeros_like(v) for n, v in origin.items()}
    train = (torch.randn(7, 6), torch.tensor([1, 1, 0, 2, 1, 3, 0]))
    test = (torch.randn(4, 6), torch.tensor([3, 1, 0, 0]))
    return Problem.of(
        model,
        origin,
        [zero],
        {"train": train, "test": test},
        Loss("crossentropy"),
        torch.float32,
        torch.device("cpu"),
        True,
    )


@pytest.mark.parametrize("batch_size", [1, 5, 11, 100])
def test_each_sets_sums_are_the_closed_form_whatever_the_batches(batch_size):
    a = 2.0
    hit, miss = math.log(1 + 3 * math.exp(-a)), math.log(math.exp(a) + 3)  # -log softmax, target 1 or not
    sums = Known(problem(), batch_size, 2)(torch.tensor([[a, 0.0], [0.0, 0.0]], dtype=torch.float64))
    assert sums.shape == (2, 2, 3) and sums.dtype == torch.float64
    # train: three targets of class 1, four others; test: one of class 1, three others
    for s, (ones, others) in enumerate([(3, 4), (1, 3)]):
        assert sums[0, s, 0].item() == pytest.approx(ones * hit + others * miss, rel=1e-12)
        assert sums[0, s, 1].item() == pytest.approx(ones * hit**2 + others * miss**2, rel=1e-12)
        assert sums[0, s, 2].item() == ones  # argmax is class 1
    # at a = 0 every logit ties: log 4 per sample, and the argmax is class 0
    assert sums[1, :, 0].tolist() == pytest.approx([7 * math.log(4), 4 * math.log(4)], rel=1e-12)
    assert sums[1, :, 2].tolist() == [2.0, 2.0]


def test_a_rebatched_kernel_is_a_copy_that_shares_the_problem_and_changes_only_its_batch():
    kernel = Known(problem(), 5, 3)
    other = kernel.rebatched(2)
    assert (other.batch_size, kernel.batch_size) == (2, 5) and other.points_per_pass == 3
    assert other.problem is kernel.problem and type(other) is Known
    coefficients = torch.tensor([[1.5, 0.0]], dtype=torch.float64)
    assert torch.allclose(other(coefficients), kernel(coefficients), rtol=1e-14)


def test_the_interface_refuses_nothing_by_default_and_leaves_the_pass_to_subclasses():
    assert Kernel.refuses(problem()) == "" and Kernel.name == ""
    with pytest.raises(NotImplementedError):
        Kernel(problem(), 4, 1)(torch.zeros(1, 2, dtype=torch.float64))
