"""An output never replaces an input, nor a file of another kind: what a file is, from its first bytes; the
same file seen through links; and every command that writes (curvature, report, export, rescale, the plot
commands, study) refusing with one line before anything is computed, the file left as it was."""

import json
import os
import shutil
import zipfile

import h5py
import numpy as np
import pytest
import torch

from landscape.errors import InputError
from landscape.io.outputs import LOG_HEADER, MANIFEST_HEADER, replaceable, what
from landscape.train.sweep import COLUMNS

from ..workflows.test_plots import surface_1d, surface_2d
from conftest import landscape

MLP = ["--model", "mnist1d_mlp", "--dataset", "mnist1d_400", "--threads", "1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A sweep of one run of a few steps: the run's folder (final.pt, log.csv, run.json) in the sweep's (its
    manifest.csv and manifest.json)."""
    out = tmp_path_factory.mktemp("trained") / "sweep"
    flags = ["--batch_sizes", "64", "--steps", "4", "--eval_every", "4", "--out", str(out)]
    assert landscape("sweep", *MLP, *flags) == 0
    return out / "sgd_b64_s0"


def kept(path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def test_each_kind_the_toolkit_keeps_is_known_by_its_first_bytes(trained, tmp_path):
    assert what(trained / "final.pt") == "checkpoint"
    assert what(trained / "log.csv") == "training log" and kept(trained / "log.csv").startswith(LOG_HEADER.encode())
    assert what(trained / "run.json") == "run record"
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    assert what(legacy) == "checkpoint"
    with h5py.File(tmp_path / "plain.h5", "w") as h:
        h["x"] = np.arange(3)
    with h5py.File(tmp_path / "user_block.h5", "w", userblock_size=512) as h:
        h["x"] = np.arange(3)
    assert what(tmp_path / "plain.h5") == what(tmp_path / "user_block.h5") == "HDF5 file"
    assert what(trained.parent / "manifest.csv") == what(trained.parent / "manifest.json") == "manifest"
    assert MANIFEST_HEADER == ",".join(COLUMNS[:7]) + ","  # what the sweep's manifest.csv begins with
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("notes.txt", "not a checkpoint")
    (tmp_path / "table.csv").write_text("run,recipe,batch_size,seed,train_loss\n")  # a scorecard's runs table
    (tmp_path / "result.json").write_text(json.dumps({"eigenvalues": [1.0]}))
    (tmp_path / "deep.json").write_text("{" + '"a":[' * 20000)
    for name in ("other.zip", "table.csv", "result.json", "deep.json", "missing.txt"):
        assert what(tmp_path / name) is None, name


def test_the_same_file_through_a_link_is_an_input_even_with_force_and_a_kept_kind_needs_force(trained, tmp_path):
    os.symlink(trained / "final.pt", tmp_path / "soft.pt")
    os.link(trained / "log.csv", tmp_path / "hard.csv")
    for path in ("soft.pt", "hard.csv"):
        with pytest.raises(InputError, match="is this command's input model_file"):
            replaceable(tmp_path / path, "out", {"model_file": [trained / "final.pt", trained / "log.csv"]}, force=True)
    with pytest.raises(InputError, match=r"is an existing training log; expected a new path .*force replaces it"):
        replaceable(tmp_path / "hard.csv", "out", {})
    replaceable(tmp_path / "hard.csv", "out", {}, force=True)
    (tmp_path / "old.json").write_text("{}")
    replaceable(tmp_path / "old.json", "out", {"model_file": str(trained / "final.pt")})  # a rerun's own output
    replaceable(tmp_path / "new.json", "out", {"model_file": None})


def refused(result, words: str) -> None:
    assert result.returncode == 3, result.stderr
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_curvature_keeps_its_input_checkpoint_and_a_training_log(trained, tmp_path, cli):
    before = {name: kept(trained / name) for name in ("final.pt", "log.csv")}
    flags = [*MLP, "--train_subset", "40", "--model_file", str(trained / "final.pt")]
    refused(cli("curvature", [*flags, "--out", str(trained / "final.pt")]), "is this command's input --model_file")
    refused(cli("curvature", [*flags, "--out", str(trained / "log.csv")]), "is an existing training log")
    assert {name: kept(trained / name) for name in before} == before
    shutil.copy(trained / "log.csv", tmp_path / "old_log.csv")
    forced = cli("curvature", [*flags, "--out", str(tmp_path / "old_log.csv"), "--force"])
    assert forced.returncode == 0, forced.stderr
    assert "eigenvalues" in json.loads((tmp_path / "old_log.csv").read_text())


def test_report_keeps_the_manifest_it_reads_and_files_of_other_kinds(trained, tmp_path, cli):
    shutil.copy(trained / "final.pt", tmp_path / "b16.pt")
    shutil.copy(trained / "final.pt", tmp_path / "b256.pt")
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("checkpoint,batch_size,seed\nb16.pt,16,0\nb256.pt,256,0\n")
    text = manifest.read_text()
    flags = [*MLP, "--out", str(tmp_path / "out"), "--figures", str(tmp_path)]
    refused(cli("report", [str(manifest), *flags, "--name", "manifest"]), "is this command's input manifest")
    shutil.copy(trained / "run.json", tmp_path / "card.json")
    refused(cli("report", [str(manifest), *flags, "--name", "card"]), "is an existing run record")
    shutil.copy(trained / "final.pt", tmp_path / "card_measures.png")
    forced = cli("report", [str(manifest), *flags, "--name", "card", "--force"])  # the tables, never a figure
    refused(forced, "an existing checkpoint is there")
    assert manifest.read_text() == text and what(tmp_path / "card.json") == "run record"
    assert not (tmp_path / "out" / "runs").exists()


def test_export_rescale_and_the_plots_keep_their_inputs(trained, tmp_path, cli):
    surface, line = surface_2d(tmp_path, name="s.html"), surface_1d(tmp_path)
    before = kept(surface)
    refused(cli("export", [surface, "--html", "--out", str(tmp_path / "s")]), "is this command's input surf_files")
    shutil.copy(trained / "final.pt", tmp_path / "page.html")
    refused(cli("export", [surface, "--html", "--out", str(tmp_path / "page")]), "is an existing checkpoint")
    assert cli("export", [surface, "--html", "--out", str(tmp_path / "page"), "--force"]).returncode == 0
    model = str(trained / "final.pt")
    rescale = cli("rescale", [*MLP, "--model_file", model, "--alpha", "2", "--out", model])
    refused(rescale, "exists: expected a new file")
    shutil.copy(trained / "log.csv", tmp_path / "p_1d.png")
    refused(cli("plot1d", [line, "--out", str(tmp_path / "p"), "--format", "png"]), "an existing training log")
    shutil.copy(trained / "run.json", tmp_path / "t.png")
    plot = cli("plot-training", [str(trained.parent), "--out", str(tmp_path / "t"), "--format", "png"])
    refused(plot, "an existing run record is there")
    assert kept(surface) == before and kept(model) == kept(trained / "final.pt")
    assert what(tmp_path / "p_1d.png") == "training log" and what(tmp_path / "t.png") == "run record"


def test_a_study_checks_its_outputs_before_any_training(trained, tmp_path, cli):
    config = tmp_path / "study.md"  # a study file where the scorecard's Markdown would go
    config.write_text("batch_sizes = [16, 1024]\nseeds = [0, 1]\n")
    flags = ["--config", str(config), "--out", str(tmp_path / "out"), "--figures", str(tmp_path), "--name", "study"]
    refused(cli("study", flags), "is this command's input --config")
    shutil.copy(trained / "log.csv", tmp_path / "other_training.csv")
    flags[-1] = "other"
    refused(cli("study", flags), "is an existing training log")
    assert not (tmp_path / "out").exists()
