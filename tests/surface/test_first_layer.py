"""A first linear layer taken by linearity: which models qualify, the features against the closed form,
the rest of the model as a graph, and compiled surfaces that agree with eager ones and record it."""
import hashlib

import numpy as np
import pytest
import torch
from torch import nn

from conftest import begun_before, digits_kernel, landscape
from landscape.io.surface_file import read as read_surface
from landscape.surface import first_layer
from landscape.surface.evaluation import EvaluationConfig
from landscape.surface.first_layer import LinearStart, find


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
    {"layer": lambda: model.first.register_forward_hook(lambda m, a, out: out * 3),
     "pre": lambda: model.first.register_forward_pre_hook(lambda m, a: (a[0] * 2,)),
     "model": lambda: model.register_forward_hook(lambda m, a, out: out + 1)}[where]()
    return model


IMAGES, ROWS, PAIRS = torch.randn(2, 8, 8), torch.randn(2, 64), torch.randn(2, 128)


class Branching(Flat):
    def forward(self, x):  # fx cannot trace a branch on a value
        return self.last(self.first(x)) if x.sum() > 0 else self.last(self.first(-x))


def test_a_model_whose_input_goes_through_reshapes_into_a_wide_linear_layer_qualifies():
    start = find(Flat(), torch.float32, IMAGES, 1000)
    assert start is not None and start.names == ("first.weight", "first.bias")
    assert {name for name, _ in start.tail.named_parameters()} == {"last.weight", "last.bias"}
    mlp = find(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).double(), torch.float64,
               ROWS.double(), 1000)
    assert mlp is not None and mlp.names == ("0.weight", "0.bias")
    assert find(nn.Sequential(nn.Flatten(), nn.Linear(64, 8, bias=False)), torch.float32, IMAGES,
                10).names == ("1.weight",)


@pytest.mark.parametrize("model, dtype, example, samples", [
    (Flat(fan_in=first_layer.FAN_IN - 1), torch.float32, ROWS[:, :31], 100),  # too few inputs to pay
    (Flat(), torch.bfloat16, IMAGES, 100),                                   # low precision: its own products
    (Flat(), torch.float32, IMAGES, first_layer.MEMORY // (3 * 40 * 4) + 1),  # arrays past the memory bound
    (Skip(), torch.float32, ROWS, 100), (Twice(), torch.float32, ROWS, 100), (Tied(), torch.float32, ROWS, 100),
    (Branching(), torch.float32, ROWS, 100),
    (nn.Sequential(nn.Conv2d(1, 4, 3), nn.Flatten(), nn.Linear(144, 10)), torch.float32, IMAGES[:, None], 100),
    (Merging(), torch.float32, PAIRS, 100),
    (nn.Sequential(Subclass(64, 10)), torch.float32, ROWS, 100),
    (nn.Sequential(torch.nn.utils.parametrizations.weight_norm(nn.Linear(64, 10))), torch.float32, ROWS, 100),
    (hooked("layer"), torch.float32, IMAGES, 100), (hooked("pre"), torch.float32, IMAGES, 100),
    (hooked("model"), torch.float32, IMAGES, 100), (ViewWritten(), torch.float32, IMAGES, 100),
], ids=["narrow", "bfloat16", "memory", "skip", "twice", "tied", "untraceable", "conv-first", "merging-rows",
        "subclass", "weight-norm", "layer-hook", "layer-pre-hook", "model-hook", "view-written"])
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


@pytest.mark.slow
@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-6), ("float64", 1e-12)])
def test_compiled_passes_take_the_digits_mlp_first_layer_by_linearity_and_agree_with_eager_ones(dtype, rtol):
    points = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5], [30.0, 30.0]])
    compiled = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=2, compile=True, dtype=dtype))
    eager = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=2, dtype=dtype))
    assert compiled.start is not None and eager.start is None  # eagerly the sum costs what the product did
    assert set(compiled.unrolled.layout.spans) == {"net.3.weight", "net.3.bias", "net.5.weight", "net.5.bias"}
    got, expected = compiled.evaluate(points), eager.evaluate(points)
    assert np.allclose(got, expected, rtol=rtol, atol=0)
    assert np.array_equal(got[:, [1, 3]], expected[:, [1, 3]])


@pytest.mark.slow
def test_a_compiled_surface_records_it_and_one_begun_without_it_is_not_resumed(tmp_path, capsys):
    mlp = ["surface", "--model", "digits_mlp", "--x=-1:1:3", "--y=-1:1:3", "--threads", "1", "--quiet", "--compile"]
    surf = tmp_path / "c.h5"
    assert landscape(*mlp, "--surf_file", surf) == 0
    assert read_surface(str(surf)).attrs["first_layer"] == "by linearity"
    begun_before(surf, "first_layer")
    before = hashlib.sha256(surf.read_bytes()).hexdigest()
    assert landscape(*mlp, "--surf_file", surf) != 0
    assert "first_layer: file has '(absent)', this run has 'by linearity'" in capsys.readouterr().err
    assert hashlib.sha256(surf.read_bytes()).hexdigest() == before
    cnn = ["surface", "--model", "digits_cnn", "--x=-1:1:2", "--threads", "1", "--quiet", "--compile"]
    assert landscape(*cnn, "--surf_file", tmp_path / "cnn.h5") == 0
    assert "first_layer" not in read_surface(str(tmp_path / "cnn.h5")).attrs


def test_an_unused_head_stays_out_of_the_weights_and_a_buffer_in():
    """The tail holds only what its forward uses: the head's tensors would be keys functional_call rejects."""
    from landscape.surface.losses import Loss
    from landscape.surface.sweep import UnrolledSweep
    torch.manual_seed(2)
    model = WithHead().double().eval()
    x, y = torch.randn(30, 8, 8, dtype=torch.float64), torch.randint(0, 10, (30,))
    origin = {name: t.detach().clone() for name, t in model.state_dict().items()}  # states: the buffer too
    dx = {name: torch.randn_like(t) for name, t in origin.items()}
    start = find(model, torch.float64, x[:2], 30)
    assert start is not None and "aux.weight" not in dict(start.tail.named_parameters())
    sweep = UnrolledSweep(model, {"train": (x, y)}, Loss("crossentropy"), 30, True, origin=origin,
                          plane=torch.cat([d.flatten() for d in dx.values()])[None], dtype=torch.float64,
                          running_vars=set(), points=2, compile=False, start=start)
    assert set(sweep.layout.spans) == {"last.weight", "last.bias", "scale"}
    got = sweep(torch.tensor([[0.5, 0.0], [-1.0, 0.0]], dtype=torch.float64))
    for row, a in zip(got, (0.5, -1.0)):
        output = torch.func.functional_call(model, {k: origin[k] + a * dx[k] for k in origin}, (x,))
        expected = torch.nn.functional.cross_entropy(output, y, reduction="sum")
        assert torch.allclose(row[0, 0], expected, rtol=1e-12, atol=0)
