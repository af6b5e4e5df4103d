"""The compiled kernel: values that agree with the reference kernel's, calls of at most UNROLL points, code
reused across batch sizes; and the first linear layer taken by linearity (which models qualify, the features
against the closed form, the rest of the model as a graph)."""

import numpy as np
import pytest
import torch
from torch import nn

from landscape.losses import Loss
from landscape.surface.evaluation import EvaluationConfig
from landscape.surface.kernels import Problem, compiled
from landscape.surface.kernels.compiled import LinearStart, find

from conftest import digits_kernel

POINTS = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5], [30.0, 30.0]])


def kernel(name: str, k: int = 1, batch: int = 500, dtype: str = "float32", model: str = "digits_mlp"):
    return digits_kernel(EvaluationConfig(kernel=name, batch_size=batch, points_per_pass=k, dtype=dtype), model=model)


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, k, dtype, rtol",
    [
        ("digits_mlp", 1, "float32", 1e-6),
        ("digits_mlp", 3, "float32", 1e-6),
        ("digits_mlp", 2, "float64", 1e-12),
        ("digits_cnn", 2, "float32", 1e-5),
    ],
)
def test_compiled_values_agree_with_the_reference_kernels(model, k, dtype, rtol):
    reference = kernel("reference", k, dtype=dtype, model=model).evaluate(POINTS)
    ev = kernel("compiled", k, dtype=dtype, model=model)
    assert (ev.kernel.start is not None) == (model == "digits_mlp")  # the MLP's first layer by linearity
    got = ev.evaluate(POINTS)
    assert np.isfinite(reference).all() and reference[4, 0] > 10 * reference[0, 0]  # the far point: a real rise
    assert np.allclose(got, reference, rtol=rtol, atol=0)
    assert np.array_equal(got[:, [1, 3]], reference[:, [1, 3]])  # accuracies: counts of equal argmaxes


@pytest.mark.slow
def test_a_compiled_kernel_rebatched_runs_the_same_compiled_code_and_gives_the_values_of_that_batch_size():
    ev = kernel("compiled", batch=500)
    ev.evaluate(POINTS[:1])
    step, whole = ev.kernel.step, ev.kernel.whole
    other = ev.rebatched(200)
    assert (other.kernel.step, other.kernel.whole) == (step, whole)
    assert other.cfg.batch_size == 200 and ev.cfg.batch_size == 500
    assert np.array_equal(other.evaluate(POINTS), kernel("compiled", batch=200).evaluate(POINTS))
    one_call = ev.rebatched(2000)  # a batch holding both sets: one compiled call per pass, its sums finished inside
    assert np.allclose(one_call.evaluate(POINTS), ev.evaluate(POINTS), rtol=1e-6, atol=0)


@pytest.mark.slow
def test_points_go_in_calls_of_at_most_unroll_points_the_rest_one_per_call(monkeypatch):
    monkeypatch.setattr(compiled, "UNROLL", 2)
    ev = kernel("compiled", k=3, batch=2000)
    assert ev.kernel.group == 2 and ev.points_per_pass == 3
    calls = []
    whole = ev.kernel.whole
    ev.kernel.whole = lambda c, *rest: calls.append(c.clone()) or whole(c, *rest)
    got = ev.evaluate(POINTS)
    assert [c.shape[0] for c in calls] == [2, 1, 2]  # passes of 3 points: 2 + 1, then the last 2
    reference = kernel("reference", batch=2000).evaluate(POINTS)
    assert np.allclose(got, reference, rtol=1e-6, atol=0) and np.array_equal(got[:, [1, 3]], reference[:, [1, 3]])


class Flat(nn.Module):
    """Images flattened, then a linear layer: the reshape is taken along with the layer (a reshape to a
    size read from the input, `x.view(x.size(0), -1)`, uses the input twice and does not qualify)."""

    def __init__(self, fan_in=64, hidden=40, classes=10):
        super().__init__()
        self.first, self.last = nn.Linear(fan_in, hidden), nn.Linear(hidden, classes)

    def forward(self, x):
        return self.last(torch.tanh(self.first(x.flatten(1))))


class Skip(Flat):
    def forward(self, x):  # the input is used past the first layer too
        return self.last(torch.tanh(self.first(x))) + x[:, :10]


class Twice(Flat):
    def __init__(self):
        super().__init__(hidden=64)

    def forward(self, x):  # the first layer is used again
        return self.last(self.first(torch.tanh(self.first(x))))


class Tied(Flat):
    def __init__(self):
        super().__init__(hidden=64, classes=64)
        self.last.weight = self.first.weight  # one tensor, two layers

    def forward(self, x):
        return self.last(torch.tanh(self.first(x)))


class Merging(Flat):
    def __init__(self):
        super().__init__(hidden=10)

    def forward(self, x):  # two rows per sample reach the layer
        return self.first(x.reshape(-1, 64)).reshape(-1, 20)


class Subclass(nn.Linear):
    pass


class ViewWritten(Flat):
    def forward(self, x):  # fx records the write into a view of h as a new tensor: the graph would differ
        h = self.first(x.flatten(1))
        v = h[:, :4]
        v += 1
        return self.last(torch.tanh(h))


class WithHead(Flat):
    """An auxiliary head its forward never uses, and a buffer."""

    def __init__(self):
        super().__init__()
        self.aux = nn.Linear(5, 5)
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return self.last(torch.tanh(self.first(x.flatten(1)))) * self.scale


def hooked(where: str) -> nn.Module:
    model = Flat()
    {
        "layer": lambda: model.first.register_forward_hook(lambda m, a, out: out * 3),
        "pre": lambda: model.first.register_forward_pre_hook(lambda m, a: (a[0] * 2,)),
        "model": lambda: model.register_forward_hook(lambda m, a, out: out + 1),
    }[where]()
    return model


IMAGES, ROWS, PAIRS = torch.randn(2, 8, 8), torch.randn(2, 64), torch.randn(2, 128)


class Branching(Flat):
    def forward(self, x):  # fx cannot trace a branch on a value
        return self.last(self.first(x)) if x.sum() > 0 else self.last(self.first(-x))


def test_a_model_whose_input_goes_through_reshapes_into_a_wide_linear_layer_qualifies():
    start = find(Flat(), torch.float32, IMAGES, 1000)
    assert start is not None and start.names == ("first.weight", "first.bias")
    assert {name for name, _ in start.tail.named_parameters()} == {"last.weight", "last.bias"}
    mlp = find(
        nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).double(), torch.float64, ROWS.double(), 1000
    )
    assert mlp is not None and mlp.names == ("0.weight", "0.bias")
    assert find(nn.Sequential(nn.Flatten(), nn.Linear(64, 8, bias=False)), torch.float32, IMAGES, 10).names == (
        "1.weight",
    )


@pytest.mark.parametrize(
    "model, dtype, example, samples",
    [
        (Flat(fan_in=compiled.FAN_IN - 1), torch.float32, ROWS[:, :31], 100),  # too few inputs to pay
        (Flat(), torch.bfloat16, IMAGES, 100),  # low precision: its own products
        (Flat(), torch.float32, IMAGES, compiled.MEMORY // (3 * 40 * 4) + 1),  # arrays past the memory bound
        (Skip(), torch.float32, ROWS, 100),
        (Twice(), torch.float32, ROWS, 100),
        (Tied(), torch.float32, ROWS, 100),
        (Branching(), torch.float32, ROWS, 100),
        (nn.Sequential(nn.Conv2d(1, 4, 3), nn.Flatten(), nn.Linear(144, 10)), torch.float32, IMAGES[:, None], 100),
        (Merging(), torch.float32, PAIRS, 100),
        (nn.Sequential(Subclass(64, 10)), torch.float32, ROWS, 100),
        (nn.Sequential(torch.nn.utils.parametrizations.weight_norm(nn.Linear(64, 10))), torch.float32, ROWS, 100),
        (hooked("layer"), torch.float32, IMAGES, 100),
        (hooked("pre"), torch.float32, IMAGES, 100),
        (hooked("model"), torch.float32, IMAGES, 100),
        (ViewWritten(), torch.float32, IMAGES, 100),
    ],
    ids=[
        "narrow",
        "bfloat16",
        "memory",
        "skip",
        "twice",
        "tied",
        "untraceable",
        "conv-first",
        "merging-rows",
        "subclass",
        "weight-norm",
        "layer-hook",
        "layer-pre-hook",
        "model-hook",
        "view-written",
    ],
)
def test_models_that_do_not_qualify_are_left_alone(model, dtype, example, samples):
    """Each of these would compute otherwise by linearity (a hook not run, rows of samples merged, a layer
    that is not a plain product) or gain nothing from it."""
    assert find(model.to(dtype), dtype, example.to(dtype), samples) is None


def test_the_features_are_the_layer_at_the_origin_and_along_each_direction_and_the_tail_the_rest():
    """Closed form: at (a, b) the layer's output is x (W0 + a Dx + b Dy)ᵀ + c0 + a cx + b cy, exactly in
    float64 up to rounding; the tail on it is the model at those weights."""
    torch.manual_seed(0)
    model = Flat().double()
    start = find(model, torch.float64, IMAGES.double(), 50)
    x = torch.randn(50, 8, 8, dtype=torch.float64)
    origin = {name: p.detach().clone() for name, p in model.named_parameters()}
    dx, dy = ({name: torch.randn_like(p) for name, p in origin.items()} for _ in range(2))
    features = start.features(model, x, origin, [dx, dy], torch.float64, rows=7)  # in pieces of 7 samples
    assert features.shape == (50, 3, 40)
    for a, b in [(0.0, 0.0), (0.5, -1.5), (3.0, 2.0)]:
        w = {name: origin[name] + a * dx[name] + b * dy[name] for name in origin}
        layer = x.reshape(50, -1) @ w["first.weight"].T + w["first.bias"]
        got = LinearStart.at(features, torch.tensor([a, b], dtype=torch.float64))
        assert torch.allclose(got, layer, rtol=1e-12, atol=1e-12)
        whole = torch.func.functional_call(model, w, (x,))
        rest = torch.func.functional_call(start.tail, {k: v for k, v in w.items() if k.startswith("last")}, (got,))
        assert torch.allclose(rest, whole, rtol=1e-12, atol=1e-12)


def test_a_layer_the_directions_leave_out_stays_as_the_model_has_it():
    torch.manual_seed(1)
    model = Flat().double()
    start = find(model, torch.float64, IMAGES.double(), 20)
    x = torch.randn(20, 64, dtype=torch.float64)
    moved = {"last.weight": torch.randn(10, 40, dtype=torch.float64)}
    features = start.features(model, x, {}, [moved], torch.float64)
    assert torch.equal(features[:, 1], torch.zeros(20, 40, dtype=torch.float64))
    assert torch.allclose(features[:, 0], model.first(x), rtol=1e-12, atol=1e-12)


def test_an_unused_head_stays_out_of_the_weights_and_a_buffer_in():
    """The tail holds only what its forward uses: the head's tensors would be keys functional_call rejects."""
    torch.manual_seed(2)
    model = WithHead().double().eval()
    x, y = torch.randn(30, 8, 8, dtype=torch.float64), torch.randint(0, 10, (30,))
    origin = {name: t.detach().clone() for name, t in model.state_dict().items()}  # states: the buffer too
    dx = {name: torch.randn_like(t) for name, t in origin.items()}
    p = Problem.of(
        model, origin, [dx], {"train": (x, y)}, Loss("crossentropy"), torch.float64, torch.device("cpu"), True
    )
    start = find(p.model, torch.float64, x[:2], 30)
    assert start is not None and "aux.weight" not in dict(start.tail.named_parameters())
    tail = compiled._after(p, start)
    assert set(tail.layout.spans) == {"last.weight", "last.bias", "scale"}
