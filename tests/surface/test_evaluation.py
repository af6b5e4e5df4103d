"""The evaluation kernel: (n, 2) coefficients in, (n, q) values out, the model never touched."""
import numpy as np
import pytest
import torch

from landscape.data.samples import Samples
from landscape.errors import EvaluationError
from landscape.models import DigitsCNN
from landscape.surface import directions as dirs
from landscape.surface.evaluation import EvaluationConfig, Evaluator

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = DigitsCNN().eval()
    g = torch.Generator().manual_seed(1)
    data = {"train": Samples(torch.rand(50, 1, 8, 8, generator=g), torch.randint(0, 10, (50,), generator=g)),
            "test": Samples(torch.rand(20, 1, 8, 8, generator=g), torch.randint(0, 10, (20,), generator=g))}
    origin = dirs.origin_tensors(model, "weights")
    dx = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(2))
    dy = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(3))
    return model, origin, dx, dy, data


def test_a_batch_of_points_gives_one_row_per_point_equal_to_one_point_at_a_time(setup):
    model, origin, dx, dy, data = setup
    ev = Evaluator(model, origin, dx, dy, data, "crossentropy", EvaluationConfig(batch_size=16))
    points = np.array([[0.0, 0.0], [0.5, -0.25], [-1.0, 1.0]])
    values = ev.evaluate(points)
    assert values.shape == (3, 4) and ev.names == ["train_loss", "train_acc", "test_loss", "test_acc"]
    for row, (a, b) in zip(values, points):
        assert np.array_equal(row, ev.evaluate(np.array([[a, b]]))[0])


def test_the_centre_is_the_model_itself_and_the_model_is_never_modified(setup):
    model, origin, dx, dy, data = setup
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ev = Evaluator(model, origin, dx, dy, data, "crossentropy", EvaluationConfig(batch_size=16))
    ev.evaluate(np.array([[0.7, 0.3], [0.0, 0.0]]))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert next(model.parameters()).dtype == torch.float32 and not model.training
    with torch.no_grad():
        out = model(data["train"].inputs)
    expected = torch.nn.functional.cross_entropy(out, data["train"].targets, reduction="sum").item() / 50
    assert ev(0.0, 0.0)[0] == pytest.approx(expected, rel=1e-6)
    assert ev(0.0, 0.0)[1] == 100.0 * (out.argmax(1) == data["train"].targets).sum().item() / 50


def test_weights_are_rounded_once_from_the_float64_combination(setup):
    model, origin, dx, dy, data = setup
    ev = Evaluator(model, origin, dx, dy, data, "crossentropy", EvaluationConfig(dtype="float32"))
    w = ev.weights(0.3, -0.7)
    name = "features.0.weight"
    exact = (origin[name] + 0.3 * dx[name] - 0.7 * dy[name]).to(torch.float32)
    assert w[name].dtype == torch.float32 and torch.equal(w[name], exact)  # not float32 arithmetic
    assert torch.equal(ev.weights(0.0, 0.0)[name], origin[name].to(torch.float32))


class NaNOut(torch.nn.Module):
    def forward(self, x):
        return torch.full((len(x), 10), float("nan"))


class Exits(torch.nn.Module):
    def forward(self, x):
        raise SystemExit(0)


def test_nan_outputs_have_nan_accuracy_and_sys_exit_names_the_point():
    data = {"train": Samples(torch.rand(8, 3), torch.randint(0, 10, (8,)))}
    ev = Evaluator(NaNOut(), {}, {}, None, data, "crossentropy")
    loss, acc = ev(0.0)
    assert np.isnan(loss) and np.isnan(acc)
    several = Evaluator(NaNOut(), {}, {}, None, data, "crossentropy", EvaluationConfig(points_per_pass=2))
    assert several.unrolled is not None and np.isnan(several.evaluate(np.zeros((3, 2)))).all()  # no weights at all
    with pytest.raises(EvaluationError, match=r"at \(x=0.5, y=0\) failed: the model or loss called sys.exit\(0\)"):
        Evaluator(Exits(), {}, {}, None, data, "crossentropy")(0.5)


def test_quantities_of_many_points_at_once_are_the_bits_of_one_points_arithmetic(one_thread):
    """The means, standard errors and accuracies of a pass's points, taken as arrays, against the same
    formulas on each point's sums as Python floats, for a pass of three points and for one."""
    import math

    import torch

    from conftest import digits_kernel
    from landscape.surface.evaluation import EvaluationConfig

    def by_hand(kernel, sums):
        out = []
        for (name, n), (total, squares, correct) in zip(kernel.sizes.items(), sums):
            mean = total / n
            out += [mean, math.sqrt(max(squares - n * mean * mean, 0.0) / (n - 1) / n),
                    100.0 * correct / kernel.counts[name]]
        return out

    points = np.array([[0.0, 0.0], [0.3, -0.2], [-1.0, 0.5]])
    three = digits_kernel(EvaluationConfig(batch_size=1797, points_per_pass=3), stderr=True)
    one = digits_kernel(EvaluationConfig(batch_size=1797), stderr=True)
    assert [q.name for q in three.quantities][:2] == ["train_loss", "train_loss_se"]
    with torch.inference_mode():
        sums = three.unrolled(torch.from_numpy(points)).tolist()
        single = one.sweep(one.weights(0.3, -0.2)).tolist()
    assert three.evaluate(points).tolist() == [by_hand(three, point) for point in sums]
    assert one(0.3, -0.2).tolist() == by_hand(one, single)
