"""The sweeps over the data: the sets joined into one pass where they can be, the sums still per set."""
import numpy as np
import pytest
import torch
from torch import nn

from landscape.surface.losses import Loss
from landscape.surface.sweep import BatchedSweep, SetData, Sweep

pytestmark = pytest.mark.usefixtures("one_thread")


def sets(train: int = 37, test: int = 11, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return {"train": (torch.randn(train, 6, generator=g), torch.randint(0, 4, (train,), generator=g)),
            "test": (torch.randn(test, 6, generator=g), torch.randint(0, 4, (test,), generator=g))}


def by_hand(model, data, name="crossentropy"):
    """Per set: loss sum, squared-loss sum, correct predictions, in float64 from whole-set forwards."""
    out = []
    with torch.no_grad():
        for x, y in data.values():
            logits = model(x)
            losses = nn.functional.cross_entropy(logits, y, reduction="none").double()
            out.append([losses.sum().item(), (losses ** 2).sum().item(), (logits.argmax(1) == y).sum().item()])
    return np.array(out)


@pytest.mark.parametrize("batch", [5, 16, 37, 48, 1000])
def test_joined_sets_give_each_set_its_own_sums_whatever_the_batches_straddle(batch):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4)).eval()
    data = sets()
    sweep = Sweep(model, data, Loss("crossentropy"), batch, True)
    assert sweep.joined and sweep.largest_pass == 48
    weights = dict(model.named_parameters())
    with torch.no_grad():
        got = sweep(weights).numpy()
    assert got.shape == (2, 3)
    assert np.allclose(got, by_hand(model, data), rtol=1e-6, atol=0)
    assert np.array_equal(got[:, 2], by_hand(model, data)[:, 2])  # counts exactly
    for name, (x, y) in data.items():  # the sets stay reachable by name, as views of one copy
        assert torch.equal(sweep.data[name][0], x) and torch.equal(sweep.data[name][1], y)


def test_joined_and_apart_agree_in_float64_to_the_last_digits():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4)).double().eval()
    data = {k: (x.double(), y) for k, (x, y) in sets().items()}
    weights = dict(model.named_parameters())
    joined = Sweep(model, data, Loss("crossentropy"), 16, True)
    apart = [Sweep(model, {name: pair}, Loss("crossentropy"), 16, True) for name, pair in data.items()]
    with torch.no_grad():
        together = joined(weights).numpy()
        alone = np.concatenate([s(weights).numpy() for s in apart])
    assert joined.joined and not apart[0].joined
    assert np.allclose(together, alone, rtol=1e-12, atol=0)


def test_a_diverged_training_sample_leaves_the_test_sums_finite():
    """Set membership selects, it does not multiply: inf * 0 would put NaN into the other set."""
    model = nn.Linear(6, 4).eval()
    data = sets()
    data["train"][0][3] = float("inf")
    sweep = Sweep(model, data, Loss("mse"), 64, True)
    with torch.no_grad():
        got = sweep(dict(model.named_parameters())).numpy()
    assert not np.isfinite(got[0, 0])          # the training loss went to inf or NaN
    assert np.isnan(got[0, 2])                 # and its accuracy means nothing
    assert np.isfinite(got[1]).all()           # the test set is untouched by it


def test_k_points_joined_equal_one_point_at_a_time():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    data = sets()
    points = [{n: p.detach() + 0.1 * k for n, p in model.named_parameters()} for k in range(3)]
    stacked = {n: torch.stack([w[n] for w in points]) for n in points[0]}
    one = Sweep(model, SetData.of(data, Loss("crossentropy")), Loss("crossentropy"), 10, True)
    many = BatchedSweep(model, one.sets, Loss("crossentropy"), 10, True)
    with torch.no_grad():
        together = many(stacked).numpy()
        each = np.stack([one(w).numpy() for w in points])
    assert many.data is one.data  # one copy of the data for both
    assert np.allclose(together, each, rtol=1e-6, atol=0) and np.array_equal(together[..., 2], each[..., 2])


def test_sets_that_cannot_be_joined_go_through_apart():
    torch.manual_seed(0)
    model = nn.Linear(6, 4).eval()
    data = sets()
    batch_mean = Loss(lambda out, y: nn.functional.cross_entropy(out, y))  # a callable: no per-sample losses
    assert not SetData.of(data, batch_mean).joined
    other_shape = {"train": data["train"], "test": (torch.randn(5, 3, 2), torch.randint(0, 4, (5,)))}
    assert not SetData.of(other_shape, Loss("crossentropy")).joined
    sweep = Sweep(model, data, batch_mean, 16, True)
    with torch.no_grad():
        got = sweep(dict(model.named_parameters())).numpy()
    expected = by_hand(model, data)
    assert np.allclose(got[:, 0], expected[:, 0], rtol=1e-6) and np.isnan(got[:, 1]).all()
    assert np.array_equal(got[:, 2], expected[:, 2]) and sweep.largest_pass == 37


def test_the_file_records_how_the_sets_went_through_and_an_older_file_is_not_resumed(tmp_path, capsys):
    """An older landscape batched each set apart, so its last bits differ: its file is plotted, not resumed."""
    import hashlib

    from conftest import begun_before, landscape
    from landscape.io.surface_file import read as read_surface
    surf = tmp_path / "s.h5"
    args = ["surface", "--model", "digits_mlp", "--x=-1:1:3", "--threads", "1", "--quiet", "--surf_file", surf]
    assert landscape(*args) == 0
    assert read_surface(str(surf)).attrs["set_passes"] == "joined"
    begun_before(surf, "set_passes")
    before = hashlib.sha256(surf.read_bytes()).hexdigest()
    assert landscape(*args) != 0
    assert "set_passes: file has '(absent)', this run has 'joined'" in capsys.readouterr().err
    assert hashlib.sha256(surf.read_bytes()).hexdigest() == before


@pytest.mark.slow
@pytest.mark.parametrize("form", ["eager", "compiled", "eagerly", "by_class", "by_class_compiled"])
def test_cross_entropy_in_one_pass_gives_the_loss_argmax_and_nan_of_the_general_path(form):
    """Ties (the first maximum wins, as argmax breaks them), infinite and NaN scores included; ``eagerly``:
    the class-by-class form of eager unrolled passes; ``by_class``: compiled unrolled passes' form (here on
    scores that are an input, which classes_as_rows leaves as they are: test_compilation has the pass)."""
    from landscape.surface.losses import (cross_entropy_terms, cross_entropy_terms_by_class,
                                          cross_entropy_terms_eagerly, per_sample)
    from landscape.surface.compilation import compiled
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 40, 5, generator=g)
    targets = torch.randint(0, 5, (40,), generator=g)
    logits[0, :8] = 1.0                                   # all classes tied
    logits[1, :2, :] = torch.tensor([2.0, 3.0, 3.0, 0.0, 3.0])
    targets[:3] = torch.tensor([2, 1, 3])                 # 2: tied with class 1 before it, wrong; 1: right
    logits[1, 2, 3] = float("inf")                        # the label's score is +inf: right, its loss NaN
    logits[2, 3, :] = float("-inf")
    logits[2, 4, 2] = float("nan")
    terms = {"eager": cross_entropy_terms, "compiled": compiled(cross_entropy_terms),
             "eagerly": cross_entropy_terms_eagerly, "by_class": cross_entropy_terms_by_class,
             "by_class_compiled": compiled(cross_entropy_terms_by_class, cpu_passes=True)}[form]
    near = torch.tensor([[1e-3, 1e-3]]).nextafter(torch.tensor([[0.0, 1.0]]))  # exp 1.0 both: a tie to be checked
    for one, label in ((near, 1), (near.flip(-1), 0), (torch.tensor([[0.5, 0.5]]), 1)):  # a batch of one sample
        kept = one.clone()
        assert torch.equal(terms(one, torch.tensor([label]))[1], one.argmax(dim=-1) == label)
        assert torch.equal(one, kept)                                           # the scores left as they were
    losses, right, broken = terms(logits, targets)
    expected = per_sample("crossentropy", logits.reshape(-1, 5), targets.repeat(3)).view(3, 40)
    assert torch.allclose(losses, expected, rtol=1e-6, atol=1e-7, equal_nan=True)
    assert torch.equal(torch.isnan(losses), torch.isnan(expected))
    assert torch.equal(right, logits.argmax(dim=-1) == targets)
    assert torch.equal(broken, torch.isnan(logits).any(dim=-1))
    assert not right[1, 0] and right[1, 1] and right[1, 2] and torch.isnan(losses[1, 2])
    assert broken[2, 4] and not broken[2, 3] and broken.sum() == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_scores_far_below_the_top_leave_the_loss_as_without_the_floor_to_the_bit(dtype):
    """exp of a gap below exp_floor is subnormal (slow on a CPU); floored it is the smallest normal number,
    and the sum holding the top class's 1 comes out the same."""
    from landscape.surface.losses import (cross_entropy_terms, cross_entropy_terms_by_class,
                                          cross_entropy_terms_eagerly, exp_floor)
    g = torch.Generator().manual_seed(0)
    floor = exp_floor(dtype)
    assert torch.exp(torch.tensor(floor, dtype=dtype)) >= torch.finfo(dtype).tiny
    assert torch.exp(torch.tensor(floor - 1, dtype=dtype)) < torch.finfo(dtype).tiny
    logits = torch.randn(4, 300, 10, generator=g, dtype=dtype)
    logits[..., 3:] += floor - 40 * torch.rand(4, 300, 7, generator=g, dtype=dtype)   # gaps from subnormal to 0
    targets = torch.randint(0, 10, (300,), generator=g)
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    label = targets.expand(4, -1).unsqueeze(-1)
    plain = torch.log(torch.exp(shifted).sum(dim=-1)) - shifted.gather(-1, label).squeeze(-1)
    assert (torch.exp(shifted) < torch.finfo(dtype).tiny).logical_and(shifted > -745).any()  # subnormals were there
    assert torch.equal(cross_entropy_terms(logits, targets)[0], plain)
    for terms in (cross_entropy_terms_eagerly, cross_entropy_terms_by_class):
        assert torch.allclose(terms(logits, targets)[0], plain, rtol=1e-6 if dtype == torch.float32 else 1e-14, atol=0)


def test_eager_sums_by_rows_equal_the_sums_by_membership_an_empty_set_included():
    from landscape.surface.sweep import _per_set, _sums_by_rows
    g = torch.Generator().manual_seed(0)
    losses = torch.rand(3, 12, generator=g)
    right, broken = torch.rand(3, 12, generator=g) > 0.5, torch.rand(3, 12, generator=g) > 0.8
    position = torch.arange(12).unsqueeze(1)
    for ends in ([0, 12], [0, 5, 12], [0, 5, 5, 12], [0, 0, 12]):
        low, high = torch.tensor(ends[:-1]), torch.tensor(ends[1:])
        sets = (position >= low) & (position < high) if len(ends) > 2 else None
        wide = losses.to(torch.float64)
        expected = torch.stack([_per_set(wide, sets), _per_set(wide * wide, sets), _per_set(right, sets),
                                _per_set(broken, sets)], dim=-1)
        got = _sums_by_rows(losses, right, broken, sets)
        assert got.shape == expected.shape == (3, len(ends) - 1, 4)
        assert torch.allclose(got, expected, rtol=1e-12, atol=0)
        assert torch.equal(got[..., 2:], expected[..., 2:])   # counts exactly


@pytest.mark.parametrize("batch", [1, 4, 5, 12, 50])
def test_every_sample_is_counted_once_in_its_own_set_an_empty_set_included(batch):
    data = {name: (torch.randn(n, 2), torch.zeros(n, dtype=torch.long)) for name, n in (("a", 5), ("b", 0), ("c", 7))}
    plan = SetData.of(data, Loss("crossentropy"))
    assert plan.joined
    counted = torch.zeros(3, dtype=torch.long)
    for inputs, targets, membership, slot in plan.batches(batch):
        assert len(inputs) == len(targets) <= batch
        if membership is None:                     # a batch within one set: the slot is that set
            assert slot.stop - slot.start == 1
            counted[slot] += len(targets)
        else:                                      # a batch across sets: each sample in exactly one
            assert membership.shape == (len(targets), slot.stop - slot.start) and (membership.sum(1) == 1).all()
            counted[slot] += membership.sum(0)
    assert counted.tolist() == [5, 0, 7]
