"""What a batch of K points' outputs adds to each set's sums, and the finished sums."""

import torch

from landscape.losses import Loss
from landscape.surface.kernels.sums import BROKEN, CORRECT, SQUARES, SUM, correct_per_sample, finished, of_outputs


def test_each_run_of_a_batch_adds_to_its_own_set_and_counts_exactly():
    g = torch.Generator().manual_seed(0)
    outputs = torch.randn(3, 12, 4, generator=g)
    targets = torch.randint(0, 4, (12,), generator=g)
    runs = ((0, 0, 5), (2, 5, 12))  # set 1 has no sample in this batch
    got = of_outputs(outputs, targets, runs, Loss("crossentropy"), True, 3)
    losses = torch.nn.functional.cross_entropy(outputs.reshape(-1, 4), targets.repeat(3), reduction="none").view(3, 12)
    right = outputs.argmax(-1) == targets
    for s, a, b in runs:
        assert torch.allclose(got[:, s, SUM], losses[:, a:b].double().sum(-1), rtol=1e-12)
        assert torch.allclose(got[:, s, SQUARES], (losses[:, a:b].double() ** 2).sum(-1), rtol=1e-12)
        assert torch.equal(got[:, s, CORRECT], right[:, a:b].sum(-1).double())
    assert (got[:, 1] == 0).all()


def test_a_diverged_sample_leaves_the_other_sets_finite_and_its_accuracy_nan():
    """Sets are slices, not masks: inf * 0 would put NaN into the other set."""
    outputs = torch.zeros(1, 6, 4)
    outputs[0, 1] = float("nan")
    outputs[0, 2, 0] = float("inf")
    targets = torch.zeros(6, dtype=torch.long)
    total = finished(of_outputs(outputs, targets, ((0, 0, 3), (1, 3, 6)), Loss("mse"), True, 2))
    assert torch.isnan(total[0, 0, 0]) and torch.isnan(total[0, 0, 2])  # the diverged set: loss and accuracy
    assert torch.isfinite(total[0, 1]).all()  # the other set untouched
    assert of_outputs(outputs, targets, ((0, 0, 3), (1, 3, 6)), Loss("mse"), True, 2)[0, 0, BROKEN] == 1


def test_a_callables_batch_mean_is_weighted_by_the_batch_and_has_no_squares():
    outputs, targets = torch.randn(2, 5, 3), torch.randint(0, 3, (5,))
    loss = Loss(lambda out, y: torch.nn.functional.cross_entropy(out, y))
    got = of_outputs(outputs, targets, ((1, 0, 5),), loss, True, 2)
    for k in range(2):
        assert torch.isclose(got[k, 1, SUM], 5 * torch.nn.functional.cross_entropy(outputs[k], targets).double())
    assert torch.isnan(got[:, 1, SQUARES]).all() and (got[:, 0] == 0).all()


def test_correct_predictions_along_the_class_dimension_of_any_output_shape():
    targets = torch.tensor([1, 0])
    scores = torch.tensor([[[0.0, 1.0], [0.0, 1.0]]])  # (K=1, B=2, C=2)
    assert correct_per_sample(scores, targets).tolist() == [[True, False]]
    tokens = torch.zeros(1, 2, 3, 4)
    tokens[..., 2] = 1.0  # (K, B, T, V): class 2 everywhere
    assert correct_per_sample(tokens, torch.tensor([[2, 2, 0], [0, 0, 0]])).tolist() == [[2, 0]]
    dense = torch.zeros(1, 2, 3, 5, 5)  # (K, B, C, H, W)
    dense[:, :, 1] = 1.0
    assert correct_per_sample(dense, torch.ones(2, 5, 5, dtype=torch.long)).tolist() == [[25, 25]]
    assert correct_per_sample(torch.zeros(1, 2, 1), torch.zeros(2, 1, dtype=torch.long)) is None  # one logit
