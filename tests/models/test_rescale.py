"""Dinh et al.'s rescaling: the same function with other weights (and another λmax), refused where it would
not be the same function, written as a new checkpoint that says where it came from."""

import pytest
import torch

import landscape
from landscape.errors import ConfigError, InputError
from landscape.io.checkpoint import save
from landscape.models import build_model
from landscape.models.rescale import pair, rescale, same_function


def test_a_relu_layer_rescaled_computes_the_same_function_with_another_hessian():
    torch.manual_seed(0)
    model = build_model("mnist1d_mlp")
    state = model.state_dict()
    assert pair(state) == ("net.1", "net.3") and pair(state, "net.3") == ("net.3", "net.5")
    scaled = build_model("mnist1d_mlp")
    scaled.load_state_dict(rescale(state, 3.0, "net.3"))
    x, y = torch.randn(64, 40), torch.randint(0, 10, (64,))
    assert same_function(model, scaled, x) < 1e-5
    assert torch.equal(scaled.state_dict()["net.3.weight"], 3.0 * state["net.3.weight"])
    assert torch.equal(scaled.state_dict()["net.5.weight"], state["net.5.weight"] / 3.0)
    top = [landscape.hessian_eigs(m, (x, y), which="top", tol=1e-8)["top"].values[0] for m in (model, scaled)]
    assert abs(top[1] - top[0]) > 0.1 * top[0]


def test_bad_factors_and_layers_are_refused_and_a_batchnorm_in_between_is_caught():
    state = build_model("mnist1d_mlp").state_dict()
    with pytest.raises(ConfigError, match="alpha"):
        rescale(state, 0.0)
    with pytest.raises(ConfigError, match="net.5"):
        rescale(state, 2.0, "net.5")
    for factor, named in ((1e308, "net.1.weight finite"), (1e-308, "net.1.weight finite")):  # inf, then 0 · 1/0
        with pytest.raises(ConfigError, match=named):
            rescale(state, factor)
    with pytest.raises(ConfigError, match="non-zero"):
        rescale(state, 1e-45)  # the first layer's weights underflow to 0: finite, but another function
    with pytest.raises(ConfigError, match="layer"):
        rescale(state, 2.0, "net.2")
    torch.manual_seed(0)
    cnn = build_model("digits_cnn")  # convolution, BatchNorm, ReLU: the running statistics are not rescaled
    cnn.train()
    cnn(torch.rand(32, 1, 8, 8))
    scaled = build_model("digits_cnn")
    scaled.load_state_dict(rescale(cnn.state_dict(), 2.0))
    with pytest.raises(InputError, match="another function"):
        same_function(cnn, scaled, torch.rand(16, 1, 8, 8))


def test_the_command_writes_a_new_checkpoint_with_its_origin_and_never_overwrites(tmp_path, cli):
    torch.manual_seed(0)
    source = tmp_path / "net.pt"
    save(build_model("mnist1d_mlp"), str(source))
    out = tmp_path / "scaled.pt"
    flags = ["--model", "mnist1d_mlp", "--dataset", "mnist1d_200", "--model_file", str(source), "--alpha", "4"]
    done = cli("rescale", [*flags, "--out", str(out)])
    assert done.returncode == 0, done.stderr
    record = torch.load(out, weights_only=True)
    assert record["rescaled"]["layer"] == "net.1" and record["rescaled"]["alpha"] == 4.0
    assert record["rescaled"]["difference"] < 1e-5
    before = out.read_bytes()
    again = cli("rescale", [*flags, "--out", str(out)])
    assert again.returncode == 3 and "exists" in again.stderr and out.read_bytes() == before
    bad = cli("rescale", [*flags[:-1], "-2", "--out", str(tmp_path / "x.pt")])
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.pt").exists()
