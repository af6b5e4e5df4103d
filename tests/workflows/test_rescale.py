"""``landscape rescale`` as a function on a digits network: the model and data set a ``landscape train``
checkpoint records, the layer asked for, weights times α and 1/α, the origin and the training record kept
in the new checkpoint; a checkpoint that records no model needs one (the default layer and the refusal
to overwrite, on the command line: tests/models/test_rescale.py)."""

import pytest
import torch

from landscape.errors import ConfigError
from landscape.io.checkpoint import save
from landscape.models import build_model
from landscape.provenance import sha256_file
from landscape.workflows.rescale import RescaleParams, run

IDENTITY = {"model": "digits_mlp", "dataset": "digits", "num_classes": 10}


def trained(path, meta: dict | None = None) -> str:
    torch.manual_seed(0)
    save(build_model("digits_mlp"), str(path), {"meta": meta} if meta else None)
    return str(path)


def test_the_recorded_network_s_layer_is_rescaled_and_the_new_checkpoint_says_where_it_came_from(tmp_path, capsys):
    meta = {"identity": IDENTITY, "epochs": 3}
    source = trained(tmp_path / "final.pt", meta)
    out = tmp_path / "scaled.pt"
    done = run({"model_file": source, "alpha": 0.5, "out": out, "layer": "net.3"}, ("rescale", "..."))
    assert (done.layer, done.following, done.alpha) == ("net.3", "net.5", 0.5) and done.difference < 1e-5
    assert done.out == str(out) and capsys.readouterr().out.startswith(f"wrote {out}: net.3's units times 0.5, ")
    before, after = torch.load(source, weights_only=True)["state_dict"], torch.load(out, weights_only=True)
    scaled = after["state_dict"]
    assert torch.equal(scaled["net.1.weight"], before["net.1.weight"])  # the layers before: untouched
    assert torch.equal(scaled["net.3.weight"], 0.5 * before["net.3.weight"])
    assert torch.equal(scaled["net.3.bias"], 0.5 * before["net.3.bias"])
    assert torch.equal(scaled["net.5.weight"], before["net.5.weight"] / 0.5)
    assert after["rescaled"] == {"from": source, "from_sha256": sha256_file(source), "layer": "net.3",
                                 "following": "net.5", "alpha": 0.5, "difference": done.difference}  # fmt: skip
    assert after["meta"] == meta and after["command"] == "rescale ..."  # still the run's network, trained so


def test_a_checkpoint_that_records_no_model_needs_one_and_threads_are_checked(tmp_path):
    bare = trained(tmp_path / "bare.pt")
    with pytest.raises(ConfigError, match="model=None: expected a value .required: the checkpoint records no model"):
        run({"model_file": bare, "alpha": 2.0, "out": tmp_path / "x.pt"})
    assert not (tmp_path / "x.pt").exists()
    with pytest.raises(ConfigError, match="threads=0: expected a positive number of threads"):
        RescaleParams.of({"model_file": bare, "alpha": 2.0, "out": "x.pt", "threads": 0})
    assert RescaleParams.of({"model_file": tmp_path / "m.pt", "alpha": 2.0, "out": tmp_path / "o.pt"}).out == str(
        tmp_path / "o.pt"
    )  # paths as text, for the record
