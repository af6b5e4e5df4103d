"""The evaluator: (n, 2) coefficients in, (n, q) values out, the model never touched, the same values
(to rounding) whatever the kernel and however the points are grouped into passes."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from landscape import directions as dirs
from landscape.data import load_named
from landscape.data.samples import Samples
from landscape.errors import ConfigError, EvaluationError
from landscape.models import DigitsCNN, build_model
from landscape.surface.evaluation import EvaluationConfig, Evaluator

from conftest import digits_kernel

pytestmark = pytest.mark.usefixtures("one_thread")
POINTS = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5], [30.0, 30.0]])


def config(**given) -> EvaluationConfig:
    return EvaluationConfig(**{"kernel": "reference", "batch_size": 16, "points_per_pass": 1, **given})


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = DigitsCNN().eval()
    g = torch.Generator().manual_seed(1)
    data = {
        "train": Samples(torch.rand(50, 1, 8, 8, generator=g), torch.randint(0, 10, (50,), generator=g)),
        "test": Samples(torch.rand(20, 1, 8, 8, generator=g), torch.randint(0, 10, (20,), generator=g)),
    }
    origin = dirs.origin_tensors(model, "weights")
    dx = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(2))
    dy = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(3))
    return model, origin, dx, dy, data


def test_a_batch_of_points_gives_one_row_per_point_equal_to_one_point_at_a_time(setup):
    model, origin, dx, dy, data = setup
    ev = Evaluator(model, origin, dx, dy, data, "crossentropy", config())
    points = np.array([[0.0, 0.0], [0.5, -0.25], [-1.0, 1.0]])
    values = ev.evaluate(points)
    assert values.shape == (3, 4) and ev.names == ["train_loss", "train_acc", "test_loss", "test_acc"]
    for row, (a, b) in zip(values, points):
        assert np.array_equal(row, ev.evaluate(np.array([[a, b]]))[0])


def test_the_centre_is_the_model_itself_and_the_model_is_never_modified(setup):
    model, origin, dx, dy, data = setup
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ev = Evaluator(model, origin, dx, dy, data, "crossentropy", config())
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
    ev = Evaluator(model, origin, dx, dy, data, "crossentropy", config(dtype="float32"))
    w = ev.weights(0.3, -0.7)
    name = "features.0.weight"
    exact = (origin[name].double() + 0.3 * dx[name] - 0.7 * dy[name]).to(torch.float32)
    assert w[name].dtype == torch.float32 and torch.allclose(w[name], exact, rtol=0, atol=1e-7)
    assert torch.equal(ev.weights(0.0, 0.0)[name], origin[name].to(torch.float32))


def test_settings_left_auto_or_a_kernel_that_cannot_run_are_refused(setup):
    model, origin, dx, dy, data = setup
    with pytest.raises(ValueError, match="resolve auto first"):
        Evaluator(model, origin, dx, dy, data, "crossentropy", EvaluationConfig())
    with pytest.raises(ConfigError, match=r"kernel=compiled: expected a kernel that can evaluate this surface .*recal"):
        Evaluator(model, origin, dx, dy, data, "crossentropy", config(kernel="compiled"), bn="recalibrate")


class NaNOut(torch.nn.Module):
    def forward(self, x):
        return torch.full((len(x), 10), float("nan"))


class Exits(torch.nn.Module):
    def forward(self, x):
        raise SystemExit(0)


@pytest.mark.parametrize("kernel", ["reference", pytest.param("compiled", marks=pytest.mark.slow)])
def test_nan_outputs_have_nan_accuracy_and_sys_exit_names_the_point(kernel):
    data = {"train": Samples(torch.rand(8, 3), torch.randint(0, 10, (8,)))}
    ev = Evaluator(NaNOut(), {}, {}, None, data, "crossentropy", config(kernel=kernel, points_per_pass=2))
    assert np.isnan(ev.evaluate(np.zeros((3, 2)))).all()  # a model with no weights at all
    with pytest.raises(EvaluationError, match=r"at \(x=0.5, y=0\) failed: the model or loss called sys.exit\(0\)"):
        Evaluator(Exits(), {}, {}, None, data, "crossentropy", config(kernel=kernel))(0.5)


def test_quantities_of_many_points_at_once_are_the_bits_of_one_points_arithmetic():
    """The means, standard errors and accuracies of a pass's points, taken as arrays, against the same
    formulas on each point's sums as Python floats."""
    import math

    def by_hand(ev, sums):
        out = []
        for (name, n), (total, squares, correct) in zip(ev.sizes.items(), sums):
            mean = total / n
            out += [
                mean,
                math.sqrt(max(squares - n * mean * mean, 0.0) / (n - 1) / n),
                100.0 * correct / ev.counts[name],
            ]
        return out

    three = digits_kernel(EvaluationConfig(batch_size=1797, points_per_pass=3), stderr=True)
    assert [q.name for q in three.quantities][:2] == ["train_loss", "train_loss_se"]
    with torch.inference_mode():
        sums = three.kernel(torch.from_numpy(POINTS[:3])).tolist()
    assert three.evaluate(POINTS[:3]).tolist() == [by_hand(three, point) for point in sums]


@pytest.mark.parametrize("kernel", ["reference"])
@pytest.mark.parametrize(
    "loss, dtype, batch",
    [
        ("mse", "float32", 500),
        ("torch.nn:CrossEntropyLoss", "float32", 500),
        ("crossentropy", "bfloat16", 500),
        ("crossentropy", "float64", 2000),
    ],
)
def test_a_pass_of_several_points_agrees_with_one_per_pass_for_every_loss_precision_and_batch(
    kernel, loss, dtype, batch
):
    """A loss per sample or a callable's batch mean (the sets then apart), low precision, and one batch
    holding both sets; a point's values do not depend on the points it shares its pass with."""
    cfg = EvaluationConfig(loss_name=loss, dtype=dtype, batch_size=batch)
    one, three = digits_kernel(cfg), digits_kernel(replace(cfg, kernel=kernel, points_per_pass=3))
    assert three.sets.joined == (loss != "torch.nn:CrossEntropyLoss")
    values = three.evaluate(POINTS)
    rtol = {"float64": 1e-12, "bfloat16": 1e-2}.get(dtype, 1e-6)
    assert np.isfinite(values).all() and values[4, 0] > 10 * values[0, 0]
    losses, accuracies = [0, 2], [1, 3]  # bfloat16: a point's products may round an argmax the other way
    assert np.allclose(values[:, losses], one.evaluate(POINTS)[:, losses], rtol=rtol, atol=0)
    assert np.allclose(
        values[:, accuracies], one.evaluate(POINTS)[:, accuracies], rtol=0, atol=0.5 if dtype == "bfloat16" else 0
    )
    again = three.evaluate(POINTS[[3, 0, 4, 1, 2]])
    assert np.allclose(again[:, losses], values[[3, 0, 4, 1, 2]][:, losses], rtol=rtol, atol=0)


@pytest.mark.parametrize("kernel", ["reference", pytest.param("compiled", marks=pytest.mark.slow)])
def test_a_pass_of_states_points_reaches_a_target_exactly_and_keeps_perturbed_variances_non_negative(kernel):
    torch.manual_seed(0)
    model = build_model("digits_cnn").eval()
    torch.manual_seed(1)
    other = build_model("digits_cnn").eval()
    with torch.no_grad():
        for name, buffer in other.named_buffers():
            if name.endswith("running_var"):
                buffer.mul_(3.0)  # variances that move: far enough back along dx they would go negative
    origin, target = dirs.origin_tensors(model, "states"), dirs.origin_tensors(other, "states")
    dx = {k: target[k].double() - origin[k].double() for k in origin}
    data = {"train": load_named("digits").train}
    points = np.array([[0.0, 0.0], [1.0, 0.0], [-5.0, 0.0]])
    ev = Evaluator(
        model, origin, dx, None, data, "crossentropy", config(kernel=kernel, batch_size=500, points_per_pass=3)
    )
    assert all(torch.equal(ev.weights(1.0, 0.0)[k], target[k].float()) for k in dx)
    variances = [k for k in dx if k.endswith("running_var")]
    assert variances and all(ev.weights(-5.0, 0.0)[k].min() == 0 for k in variances)
    torch.manual_seed(1)
    reached = Evaluator(
        build_model("digits_cnn").eval().requires_grad_(False),
        dirs.origin_tensors(other, "states"),
        {k: torch.zeros_like(v) for k, v in dx.items()},
        None,
        data,
        "crossentropy",
        config(batch_size=500),
    )
    values = ev.evaluate(points)
    assert np.allclose(values[1], reached(0.0), rtol=1e-5, atol=0)  # coefficient 1 is the target network
    one = Evaluator(model, origin, dx, None, data, "crossentropy", config(batch_size=500))
    assert np.allclose(values, one.evaluate(points), rtol=1e-5, atol=0)


def test_directions_given_in_other_types_are_held_in_float64_and_give_the_same_values():
    """An API user's directions may be float32 tensors or numpy arrays, one direction of each."""
    torch.manual_seed(0)
    model = build_model("digits_mlp").eval()
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    g = torch.Generator().manual_seed(1)
    dx = {n: torch.randn(v.shape, generator=g).double() for n, v in origin.items()}  # float32 values, exact
    dy = {n: torch.randn(v.shape, generator=g).double() for n, v in origin.items()}
    data = {"train": load_named("digits").train}
    mixed = Evaluator(
        model,
        origin,
        {k: v.float() for k, v in dx.items()},
        {k: v.numpy() for k, v in dy.items()},
        data,
        "crossentropy",
        config(batch_size=500, points_per_pass=2),
    )
    assert mixed.problem.plane.dtype == torch.float64 and mixed.problem.origin.dtype == torch.float64
    values = Evaluator(model, origin, dx, dy, data, "crossentropy", config(batch_size=500, points_per_pass=2))
    assert np.array_equal(mixed.evaluate(POINTS), values.evaluate(POINTS))


@pytest.mark.parametrize("kernel", ["reference", pytest.param("compiled", marks=pytest.mark.slow)])
def test_a_channels_last_model_runs_several_points_per_pass(kernel):
    """Its convolution weights are not contiguous: laid out as copies in the plane."""
    torch.manual_seed(0)
    model = build_model("digits_cnn").eval().to(memory_format=torch.channels_last)
    origin = dirs.origin_tensors(model, "weights")
    assert any(not v.is_contiguous() for v in origin.values())
    dx = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(0))
    data = {"train": load_named("digits").train}
    one, two = (
        Evaluator(
            model, origin, dx, None, data, "crossentropy", config(kernel=kernel, batch_size=500, points_per_pass=k)
        )
        for k in (1, 2)
    )
    two.probe()
    points = np.array([[0.0, 0.0], [0.5, 0.0], [-1.0, 0.0]])
    assert np.allclose(two.evaluate(points), one.evaluate(points), rtol=1e-5, atol=0)
