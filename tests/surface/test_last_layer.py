"""A last linear layer whose class scores eager passes make as rows: which models qualify, the body and
the rows against the model, kernels that agree with the model's own forward, and files that record it."""
import hashlib

import numpy as np
import pytest
import torch
from torch import nn

from conftest import begun_before, digits_kernel, landscape
from landscape.io.surface_file import read as read_surface
from landscape.models import build_model
from landscape.surface.compilation import ROWS_INNER
from landscape.surface.evaluation import EvaluationConfig
from landscape.surface.last_layer import LinearEnd, find


class Head(nn.Module):
    """Features, then a linear classifier whose output is the model's."""

    def __init__(self, inner=32, classes=10):
        super().__init__()
        self.first, self.last = nn.Linear(16, inner), nn.Linear(inner, classes)

    def forward(self, x):
        return self.last(torch.tanh(self.first(x.flatten(1))))


class Scaled(Head):
    def forward(self, x):  # something after the layer
        return self.last(torch.tanh(self.first(x.flatten(1)))) * 2


class Twice(Head):
    def __init__(self):
        super().__init__(inner=10)

    def forward(self, x):  # the last layer is used twice
        return self.last(self.last(self.first(x.flatten(1))))


class Tied(Head):
    def __init__(self):
        super().__init__(inner=16, classes=16)
        self.last.weight = self.first.weight

    def forward(self, x):
        return self.last(torch.tanh(self.first(x.flatten(1))))


class Sequence(Head):
    def forward(self, x):  # scores per token: (B, T, C), not one row per sample
        return self.last(torch.tanh(self.first(x)))


class Branching(Head):
    def forward(self, x):
        return self.last(self.first(x.flatten(1))) if x.sum() > 0 else self.last(self.first(-x.flatten(1)))


class Subclass(nn.Linear):
    pass


class ViewWritten(Head):
    def forward(self, x):  # fx records the write into a view of h as a new tensor: the graph would differ
        h = self.first(x.flatten(1))
        v = h[:, :4]
        v += 1
        return self.last(torch.relu(h))


class WithAux(Head):
    """An auxiliary head its forward never uses."""

    def __init__(self):
        super().__init__()
        self.aux = nn.Linear(32, 3)


def hooked(where: str) -> nn.Module:
    model = Head()
    {"layer": lambda: model.last.register_forward_hook(lambda m, a, out: out * 3),
     "model": lambda: model.register_forward_hook(lambda m, a, out: out + 1)}[where]()
    return model


IMAGES, TOKENS = torch.randn(2, 4, 4), torch.randn(2, 5, 16)


def test_models_ending_in_a_linear_classifier_qualify_and_their_body_leaves_the_layer_out():
    end = find(Head(), torch.float32, IMAGES)
    assert end is not None and end.names == ("last.weight", "last.bias")
    assert {name for name, _ in end.body.named_parameters()} == {"first.weight", "first.bias"}
    mlp = find(build_model("digits_mlp").double().eval(), torch.float64, torch.randn(2, 8, 8, dtype=torch.float64))
    assert mlp is not None and mlp.names == ("net.5.weight", "net.5.bias")
    resnet = find(build_model("resnet20").eval(), torch.float32, torch.randn(2, 3, 32, 32))
    assert resnet is not None and resnet.names == ("linear.weight", "linear.bias")
    plain = find(nn.Sequential(nn.Flatten(), nn.Linear(16, 3, bias=False)), torch.float32, IMAGES)
    assert plain.names == ("1.weight",) and plain.bias is None


@pytest.mark.parametrize("model, dtype, example", [
    (Head(inner=ROWS_INNER + 1), torch.float32, IMAGES),   # past ROWS_INNER the transposed product is slower
    (Head(classes=1), torch.float32, IMAGES),              # one score: no classes to lay out
    (Head(), torch.bfloat16, IMAGES),                      # low precision: its own products
    (Scaled(), torch.float32, IMAGES), (Twice(), torch.float32, IMAGES), (Tied(), torch.float32, IMAGES),
    (Sequence(), torch.float32, TOKENS), (Branching(), torch.float32, IMAGES),
    (nn.Sequential(nn.Flatten(), Subclass(16, 10)), torch.float32, IMAGES),
    (nn.Sequential(nn.Flatten(), torch.nn.utils.parametrizations.weight_norm(nn.Linear(16, 10))), torch.float32,
     IMAGES),
    (hooked("layer"), torch.float32, IMAGES), (hooked("model"), torch.float32, IMAGES),
    (ViewWritten(), torch.float32, IMAGES),
], ids=["wide", "one-class", "bfloat16", "scaled", "twice", "tied", "per-token", "untraceable", "subclass",
        "weight-norm", "layer-hook", "model-hook", "view-written"])
def test_models_that_do_not_qualify_are_left_alone(model, dtype, example):
    assert find(model.to(dtype), dtype, example.to(dtype)) is None


def test_the_body_and_the_rows_are_the_model_transposed():
    """Closed form: at any weights, the rows are the model's scores transposed (float64, to rounding), and a
    tensor a point lacks stays as the model has it."""
    torch.manual_seed(0)
    model = Head().double().eval()
    end = find(model, torch.float64, IMAGES.double())
    x = torch.randn(50, 4, 4, dtype=torch.float64)
    weights = {name: p.detach() + torch.randn_like(p) for name, p in model.named_parameters()}
    body, weight, bias = end.split(weights)
    assert set(body) == {"first.weight", "first.bias"} and len(weights) == 4  # the point's own dict is left whole
    rows = torch.empty(10, 50, dtype=torch.float64)
    assert LinearEnd.rows(weight, bias, torch.func.functional_call(end.body, body, (x,)), rows) is rows
    expected = torch.func.functional_call(model, weights, (x,))
    assert torch.allclose(rows.T, expected, rtol=1e-12, atol=1e-12)
    del weights["last.bias"]
    _, _, bias = end.split(weights)
    assert bias is model.last.bias


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-6), ("float64", 1e-12)])
def test_eager_passes_with_the_scores_as_rows_agree_with_the_model_s_own_forward(dtype, rtol):
    """Passes of several points (batches of 500: four per point, the same weights in each) against one
    point per pass, which runs the model's own forward; the counts are equal."""
    points = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5], [30.0, 30.0]])
    rows = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=3, dtype=dtype))
    own = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=1, dtype=dtype))
    assert rows.end is not None and own.end is None and rows.unrolled.end is rows.end
    got, expected = rows.evaluate(points), own.evaluate(points)
    assert np.allclose(got, expected, rtol=rtol, atol=0)
    assert np.array_equal(got[:, [1, 3]], expected[:, [1, 3]])
    compiled = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=3, dtype=dtype, compile=True))
    assert compiled.end is None  # compiled passes lay the scores out by a graph pass of their own


def test_a_loss_that_is_not_the_cross_entropy_keeps_the_model_s_forward():
    mse = digits_kernel(EvaluationConfig(loss_name="mse", batch_size=500, points_per_pass=3))
    assert mse.end is None and mse.unrolled is not None


def test_an_eager_surface_records_it_and_one_begun_without_it_is_not_resumed(tmp_path, capsys):
    mlp = ["surface", "--model", "digits_mlp", "--x=-1:1:3", "--y=-1:1:3", "--threads", "1", "--quiet",
           "--points_per_pass", "4"]
    surf = tmp_path / "e.h5"
    assert landscape(*mlp, "--surf_file", surf) == 0
    assert read_surface(str(surf)).attrs["last_layer"] == "as rows"
    begun_before(surf, "last_layer")
    before = hashlib.sha256(surf.read_bytes()).hexdigest()
    assert landscape(*mlp, "--surf_file", surf) != 0
    assert "last_layer: file has '(absent)', this run has 'as rows'" in capsys.readouterr().err
    assert hashlib.sha256(surf.read_bytes()).hexdigest() == before
    cnn = ["surface", "--model", "digits_cnn", "--x=-1:1:3", "--threads", "1", "--quiet", "--points_per_pass", "2"]
    assert landscape(*cnn, "--surf_file", tmp_path / "cnn.h5") == 0  # its classifier's 512 inputs are too many
    assert "last_layer" not in read_surface(str(tmp_path / "cnn.h5")).attrs


def test_a_head_the_forward_never_uses_is_left_out_of_the_body_s_weights():
    """Its tensors are among a point's weights (weights directions cover every parameter) but not the
    body's: passes of several points run and agree with one point per pass."""
    from landscape.surface.evaluation import Evaluator
    from landscape.data import Samples
    torch.manual_seed(3)
    model = WithAux().double().eval()
    origin = {name: p.detach().clone() for name, p in model.named_parameters()}
    g = torch.Generator().manual_seed(4)
    dx = {name: torch.randn(p.shape, generator=g, dtype=torch.float64) for name, p in origin.items()}
    data = {"train": Samples(torch.randn(40, 4, 4, dtype=torch.float64), torch.randint(0, 10, (40,), generator=g))}
    kernels = [Evaluator(model, origin, dx, None, data, "crossentropy", EvaluationConfig(batch_size=16, points_per_pass=k,
                                                                                         dtype="float64"))
               for k in (3, 1)]
    assert kernels[0].end is not None and "aux.weight" not in kernels[0].end.held
    kernels[0].probe()
    points = np.array([[0.0, 0.0], [0.5, 0.0], [-1.0, 0.0]])
    assert np.allclose(kernels[0].evaluate(points), kernels[1].evaluate(points), rtol=1e-12, atol=0)
