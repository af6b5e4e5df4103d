"""The unrolled kernel: a classifier's cross-entropy and counts taken class by class, the numbers of the
reference kernel's general path."""

import numpy as np
import pytest
import torch

from landscape.losses import per_sample
from landscape.surface.evaluation import EvaluationConfig
from landscape.surface.kernels.unrolled import cross_entropy_terms, exp_floor

from conftest import digits_kernel

pytestmark = pytest.mark.usefixtures("one_thread")
POINTS = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5], [30.0, 30.0]])


def as_columns(logits: torch.Tensor) -> torch.Tensor:
    """Scores ``(K, B, C)`` laid out ``(K, C, B)`` underneath, as the kernel's buffer holds them."""
    return logits.transpose(-1, -2).contiguous().transpose(-1, -2)


@pytest.mark.parametrize(
    "dtype, k, batch, rtol", [("float32", 3, 500, 1e-6), ("float64", 2, 2000, 1e-12), ("bfloat16", 2, 500, 1e-6)]
)
def test_unrolled_values_agree_with_the_reference_kernels(dtype, k, batch, rtol):
    cfg = EvaluationConfig(batch_size=batch, points_per_pass=k, dtype=dtype)
    got = digits_kernel(EvaluationConfig(**{**cfg.__dict__, "kernel": "unrolled"})).evaluate(POINTS)
    expected = digits_kernel(cfg).evaluate(POINTS)
    assert np.allclose(got, expected, rtol=rtol, atol=0)
    assert np.array_equal(got[:, [1, 3]], expected[:, [1, 3]])


def test_other_losses_take_the_general_path_with_the_same_values():
    cfg = EvaluationConfig(loss_name="mse", batch_size=700, points_per_pass=2)
    got = digits_kernel(EvaluationConfig(**{**cfg.__dict__, "kernel": "unrolled"})).evaluate(POINTS)
    assert np.array_equal(got, digits_kernel(cfg).evaluate(POINTS))


def test_ties_infinities_and_nan_give_the_loss_argmax_and_nan_of_the_general_path():
    """The first maximum wins a tie, as argmax breaks them."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 40, 5, generator=g)
    targets = torch.randint(0, 5, (40,), generator=g)
    logits[0, :8] = 1.0  # all classes tied
    logits[1, :2, :] = torch.tensor([2.0, 3.0, 3.0, 0.0, 3.0])
    targets[:3] = torch.tensor([2, 1, 3])  # 2: tied with class 1 before it, wrong; 1: right
    logits[1, 2, 3] = float("inf")  # the label's score is +inf: right, its loss NaN
    logits[2, 3, :] = float("-inf")
    logits[2, 4, 2] = float("nan")
    near = torch.tensor([[[1e-3, 1e-3]]]).nextafter(torch.tensor([[[0.0, 1.0]]]))  # exp 1.0 both: a tie to check
    for one, label in ((near, 1), (near.flip(-1), 0), (torch.tensor([[[0.5, 0.5]]]), 1)):
        kept = one.clone()
        assert torch.equal(cross_entropy_terms(as_columns(one), torch.tensor([label]))[1], one.argmax(-1) == label)
        assert torch.equal(one, kept)  # the scores left as they were
    losses, right, broken = cross_entropy_terms(as_columns(logits), targets)
    expected = per_sample("crossentropy", logits.reshape(-1, 5), targets.repeat(3)).view(3, 40)
    assert torch.allclose(losses, expected, rtol=1e-6, atol=1e-7, equal_nan=True)
    assert torch.equal(torch.isnan(losses), torch.isnan(expected))
    assert torch.equal(right, logits.argmax(dim=-1) == targets)
    assert torch.equal(broken, torch.isnan(logits).any(dim=-1))
    assert not right[1, 0] and right[1, 1] and right[1, 2] and torch.isnan(losses[1, 2])
    assert broken[2, 4] and not broken[2, 3] and broken.sum() == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_scores_far_below_the_top_leave_the_loss_as_without_the_floor(dtype):
    """exp of a gap below exp_floor is subnormal (slow on a CPU); floored it is the smallest normal number,
    and the sum holding the top class's 1 comes out the same."""
    g = torch.Generator().manual_seed(0)
    floor = exp_floor(dtype)
    assert torch.exp(torch.tensor(floor, dtype=dtype)) >= torch.finfo(dtype).tiny
    assert torch.exp(torch.tensor(floor - 1, dtype=dtype)) < torch.finfo(dtype).tiny
    logits = torch.randn(4, 300, 10, generator=g, dtype=dtype)
    logits[..., 3:] += floor - 40 * torch.rand(4, 300, 7, generator=g, dtype=dtype)  # gaps from subnormal to 0
    targets = torch.randint(0, 10, (300,), generator=g)
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    label = targets.expand(4, -1).unsqueeze(-1)
    plain = torch.log(torch.exp(shifted).sum(dim=-1)) - shifted.gather(-1, label).squeeze(-1)
    assert (torch.exp(shifted) < torch.finfo(dtype).tiny).logical_and(shifted > -745).any()  # subnormals were there
    got = cross_entropy_terms(as_columns(logits), targets)[0]
    assert torch.allclose(got, plain, rtol=1e-6 if dtype == torch.float32 else 1e-14, atol=0)


def test_unrolled_is_for_cpus_only():
    from landscape.surface.kernels import Unrolled

    ev = digits_kernel(EvaluationConfig(batch_size=128, points_per_pass=1))
    assert Unrolled.refuses(ev.problem) == ""
    ev.problem.origin = ev.problem.origin.to("meta")
    assert "CPUs" in Unrolled.refuses(ev.problem)
