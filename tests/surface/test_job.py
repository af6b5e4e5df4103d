"""The surface job's choices: kernel, batch and points per pass given or measured (auto), recorded in each
run's record as provenance; a surface begun one way is finished another; what the values are values of
(the identity) must match."""

import hashlib
import json

import h5py
import numpy as np
import pytest
import torch

from landscape.io.surface_file import read as read_surface
from landscape.surface import cost, tuning

from conftest import landscape, run

CNN = ["surface", "--model", "digits_cnn", "--x=-1:1:7", "--y=-1:1:5", "--no_test", "--threads", "1", "--quiet"]
MLP = ["surface", "--model", "digits_mlp", "--x=-1:1:5", "--y=-1:1:3", "--threads", "1", "--quiet"]


@pytest.mark.slow
@pytest.mark.parametrize("kernel, dtype, rtol", [("reference", "float32", 1e-6), ("reference", "float64", 1e-12)])
def test_k_points_per_pass_agree_with_one_and_the_run_records_how(tmp_path, kernel, dtype, rtol):
    args = [*CNN, "--dtype", dtype, "--dir_file", tmp_path / "d.h5", "--batch_size", "500"]
    assert landscape(*args, "--kernel", "reference", "--points_per_pass", "1", "--surf_file", tmp_path / "k1.h5") == 0
    assert landscape(*args, "--kernel", kernel, "--points_per_pass", "4", "--surf_file", tmp_path / "k4.h5") == 0
    one, four = read_surface(str(tmp_path / "k1.h5")), read_surface(str(tmp_path / "k4.h5"))
    assert (four.run["kernel"], four.run["points_per_pass"], four.run["batch_size"]) == (kernel, 4, 500)
    assert one.run["set_passes"] == "apart" and "batch_size" not in one.attrs  # provenance, not identity
    for q in one.values:
        assert np.allclose(four.values[q], one.values[q], rtol=rtol, atol=0), q


@pytest.mark.mpi
def test_chunks_of_the_grid_give_the_same_bits_on_any_number_of_ranks_and_after_a_resume(tmp_path):
    args = [
        *CNN,
        "--kernel",
        "reference",
        "--batch_size",
        "500",
        "--points_per_pass",
        "3",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "0.01",
    ]
    assert landscape(*args, "--surf_file", tmp_path / "serial.h5") == 0  # 35 points: the last chunk has 2
    for ranks in (2, 3):
        proc = run("surface", [*map(str, args[1:]), "--surf_file", str(tmp_path / f"r{ranks}.h5")], ranks=ranks)
        assert proc.returncode == 0, proc.stderr
    with h5py.File(tmp_path / "serial.h5") as f, h5py.File(tmp_path / "resumed.h5", "w") as g:
        for key in f:
            f.copy(key, g)
        g.attrs.update(f.attrs)
        done = g["done"][()]
        done.reshape(-1)[[1, 4, 5, 20, 34]] = 0  # an interrupted run: scattered points left to do
        g["done"][...] = done
    assert landscape(*args, "--surf_file", tmp_path / "resumed.h5") == 0
    serial = read_surface(str(tmp_path / "serial.h5"))
    for name in ("r2.h5", "r3.h5", "resumed.h5"):
        other = read_surface(str(tmp_path / name))
        assert other.done.all() and all(np.array_equal(other.values[q], serial.values[q]) for q in serial.values)


def test_recalibration_takes_several_points_per_pass_with_the_reference_kernel(tmp_path):
    args = [
        *CNN,
        "--x=-1:1:3",
        "--y=0:1:2",
        "--bn",
        "recalibrate",
        "--bn_batches",
        "1",
        "--batch_size",
        "256",
        "--dir_file",
        tmp_path / "d.h5",
    ]
    assert landscape(*args, "--points_per_pass", "4", "--surf_file", tmp_path / "r4.h5") == 0
    assert landscape(*args, "--points_per_pass", "1", "--kernel", "reference", "--surf_file", tmp_path / "r1.h5") == 0
    four, one = read_surface(str(tmp_path / "r4.h5")), read_surface(str(tmp_path / "r1.h5"))
    assert four.run["kernel"] == "reference" and four.run["points_per_pass"] == 4  # auto: the only kernel that can
    assert all(np.allclose(four.values[q], one.values[q], rtol=1e-6, atol=0) for q in one.values)
    assert landscape(*args, "--kernel", "compiled", "--points_per_pass", "4", "--surf_file", tmp_path / "u.h5") == 2


def test_auto_settings_are_measured_recorded_and_reused_on_resume(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tuning, "BUDGET", 1.0)
    monkeypatch.setattr(cost, "MEASURE_AFTER", 0.0)  # a surface this small is not worth measuring otherwise
    args = [
        "surface",
        "--model",
        "digits_mlp",
        "--x=-1:1:41",
        "--no_test",
        "--threads",
        "1",
        "--surf_file",
        tmp_path / "a.h5",
    ]
    assert landscape(*args) == 0  # kernel, batch size and points per pass: auto by default
    first = capsys.readouterr().out
    assert "auto: kernel " in first and "measured in a budget of" in first and "on up to 1437 samples per set" in first
    s = read_surface(str(tmp_path / "a.h5"))
    assert s.run["kernel"] == "reference" and s.run["auto"].startswith("kernel ")
    with h5py.File(tmp_path / "a.h5", "r+") as f:
        done = f["done"][()]
        done[20:] = 0
        f["done"][...] = done
    assert landscape(*args) == 0
    second = capsys.readouterr().out
    assert "(as the surface file's latest run records)" in second and "21 to compute" in second
    again = read_surface(str(tmp_path / "a.h5"))
    assert len(again.runs) == 2 and {k: again.runs[1][k] for k in ("kernel", "batch_size", "points_per_pass")} == {
        k: s.run[k] for k in ("kernel", "batch_size", "points_per_pass")
    }


def test_a_small_surface_takes_the_settings_of_the_model_s_shape_without_measuring(tmp_path, capsys):
    """41 points of the digits MLP: a fraction of a second of work, so ``auto`` measures nothing and takes the
    whole training set as one batch (its activations fit the budget), the reference kernel, and 2 points
    per pass (a pass at most a sixteenth of the grid); the same on any machine and rank count
    (``surface.cost``)."""
    args = ["surface", "--model", "digits_mlp", "--x=-1:1:41", "--no_test", "--surf_file", tmp_path / "a.h5"]
    assert landscape(*args) == 0
    out = capsys.readouterr().out
    assert "auto: kernel reference, batch 1437, 2 point(s) per pass, from the model's shape" in out
    s = read_surface(str(tmp_path / "a.h5"))
    assert (s.run["kernel"], s.run["batch_size"], s.run["points_per_pass"]) == ("reference", 1437, 2)


def test_a_surface_begun_with_other_settings_is_finished_and_both_runs_say_how(tmp_path, capsys):
    """Kernel, batch size and points per pass change the values' last bits only: provenance."""
    surf = tmp_path / "s.h5"
    args = [*MLP, "--dir_file", tmp_path / "d.h5", "--surf_file", surf]
    assert landscape(*args, "--kernel", "reference", "--batch_size", "64", "--points_per_pass", "1") == 0
    with h5py.File(surf, "r+") as f:
        done = f["done"][()]
        done[2:] = 0
        f["done"][...] = done
    assert landscape(*args, "--kernel", "reference", "--batch_size", "2000", "--points_per_pass", "3") == 0
    s = read_surface(str(surf))
    assert s.done.all() and [r["points_per_pass"] for r in s.runs] == [1, 3]
    assert [r["batch_size"] for r in s.runs] == [64, 2000] and s.runs[1]["points_computed"] == 9
    assert (
        landscape(
            *args,
            "--kernel",
            "reference",
            "--batch_size",
            "64",
            "--points_per_pass",
            "1",
            "--surf_file",
            tmp_path / "whole.h5",
        )
        == 0
    )
    whole = read_surface(str(tmp_path / "whole.h5"))
    assert all(np.allclose(s.values[q], whole.values[q], rtol=1e-6, atol=0) for q in s.values)
    before = hashlib.sha256(surf.read_bytes()).hexdigest()
    assert landscape(*args, "--loss_name", "mse") == 4  # what the values are values of: refused, file untouched
    assert "loss_name: file has 'crossentropy', this run has 'mse'" in capsys.readouterr().err
    assert hashlib.sha256(surf.read_bytes()).hexdigest() == before


@pytest.mark.parametrize(
    "field, value",
    [
        ("set_passes", "joined"),
        ("eager_passes", "unrolled-2"),
        ("batch_size", 128),
        ("compile", False),
        ("device", "cpu"),
    ],
)
def test_a_file_of_landscape_0_2_whose_identity_held_how_it_was_computed_is_resumed(tmp_path, field, value):
    surf = tmp_path / "old.h5"
    args = [*MLP, "--surf_file", surf, "--kernel", "reference", "--batch_size", "128", "--points_per_pass", "1"]
    assert landscape(*args) == 0
    with h5py.File(surf, "r+") as f:
        identity = json.loads(f.attrs["identity"])
        identity[field] = f.attrs[field] = value
        f.attrs["identity"] = json.dumps(identity)
        f["done"][1] = False
    assert landscape(*args) == 0 and read_surface(str(surf)).done.all()


@pytest.mark.slow
def test_the_compiled_kernel_records_its_compile_time_and_a_first_layer_by_linearity(tmp_path):
    surf = tmp_path / "c.h5"
    assert (
        landscape(*MLP, "--kernel", "compiled", "--batch_size", "2000", "--points_per_pass", "8", "--surf_file", surf)
        == 0
    )
    s = read_surface(str(surf))
    assert s.run["kernel"] == "compiled" and s.run["compile_seconds"] > 0 and s.run["first_layer"] == "by linearity"
    assert (
        landscape(
            *CNN,
            "--kernel",
            "compiled",
            "--batch_size",
            "500",
            "--points_per_pass",
            "1",
            "--surf_file",
            tmp_path / "cnn.h5",
        )
        == 0
    )
    assert "first_layer" not in read_surface(str(tmp_path / "cnn.h5")).run


@pytest.mark.mpi
def test_compiled_surfaces_are_the_same_bits_on_one_and_two_ranks(tmp_path):
    args = [
        *MLP[1:],
        "--kernel",
        "compiled",
        "--batch_size",
        "2000",
        "--points_per_pass",
        "2",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "0.01",
    ]
    assert landscape("surface", *args, "--surf_file", tmp_path / "one.h5") == 0
    proc = run("surface", [*map(str, args), "--surf_file", str(tmp_path / "two.h5")], ranks=2)
    assert proc.returncode == 0, proc.stderr
    one, two = read_surface(str(tmp_path / "one.h5")), read_surface(str(tmp_path / "two.h5"))
    assert all(np.array_equal(one.values[q], two.values[q]) for q in one.values)


@pytest.mark.mpi
def test_auto_on_two_ranks_measures_on_both_and_gives_the_bits_of_one_rank_at_the_chosen_settings(
    tmp_path, plugins, monkeypatch
):
    seen = tmp_path / "seen"
    seen.mkdir()
    args = [
        "--model",
        f"{plugins}:marking_batches",
        "--x=-1:1:41",
        "--y=-1:1:41",
        "--threads",
        "1",
        "--dir_file",
        str(tmp_path / "d.h5"),
        "--round_seconds",
        "0.01",
    ]
    proc = run(
        "surface", [*args, "--surf_file", str(tmp_path / "auto.h5")], ranks=2, env={"LANDSCAPE_TEST_SEEN": str(seen)}
    )
    assert proc.returncode == 0, proc.stderr
    auto = read_surface(str(tmp_path / "auto.h5"))
    chosen = [auto.run[k] for k in ("kernel", "batch_size", "points_per_pass")]
    assert "every rank measuring at once" in auto.run["auto"]
    ran = {p.name for p in seen.iterdir()}
    for rank in (0, 1):  # both ranks ran the ladder (and the 2 samples of the model's check), the same batches
        assert f"{rank}-2" in ran and {n.split("-")[1] for n in ran if n.startswith(f"{rank}-")} == {
            n.split("-")[1] for n in ran if n.startswith("0-")
        }, rank
    assert f"0-{chosen[1]}" in ran  # the batch chosen was one measured
    (tmp_path / "serial").mkdir()
    monkeypatch.setenv("LANDSCAPE_TEST_SEEN", str(tmp_path / "serial"))
    assert (
        landscape(
            "surface",
            *args,
            "--kernel",
            chosen[0],
            "--batch_size",
            chosen[1],
            "--points_per_pass",
            chosen[2],
            "--surf_file",
            tmp_path / "serial.h5",
        )
        == 0
    )
    serial = read_surface(str(tmp_path / "serial.h5"))
    assert all(np.array_equal(auto.values[q], serial.values[q]) for q in serial.values)


@pytest.mark.mpi
def test_a_failure_on_one_rank_while_measuring_ends_every_rank_and_names_it(tmp_path, plugins):
    first = cost.start_batch(cost.shape_of(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)),
                                           torch.zeros(2, 8, 8)), 1437)  # fmt: skip
    assert first == 1437  # the whole training set: the ladder's first batch, measured on every rank
    proc = run(
        "surface",
        [
            "--model",
            f"{plugins}:failing_on_rank_one",
            "--x=-1:1:5",
            "--no_test",
            "--threads",
            "1",
            "--surf_file",
            str(tmp_path / "f.h5"),
        ],
        ranks=2,
        timeout=90,
        env={"LANDSCAPE_TEST_FAIL_BATCH": str(first)},
    )
    assert proc.returncode != 0 and proc.stderr.count(f"simulated failure on rank 1 at a batch of {first}") == 1, (
        proc.stderr
    )
    assert f"(rank 1): measuring kernel reference, batch {first} with 1 point(s) per pass for auto: " in proc.stderr
    assert not (tmp_path / "f.h5").exists()


@pytest.mark.mpi
def test_a_failure_on_one_rank_building_autos_first_evaluator_ends_every_rank_and_names_it(tmp_path, plugins):
    """The first evaluator auto builds checks the model on 2 samples; failing there on rank 1 alone must not
    leave rank 0 measuring on its own (it would wait for rank 1 forever)."""
    proc = run(
        "surface",
        [
            "--model",
            f"{plugins}:failing_on_rank_one",
            "--x=-1:1:5",
            "--no_test",
            "--threads",
            "1",
            "--surf_file",
            str(tmp_path / "f.h5"),
        ],
        ranks=2,
        timeout=90,
        env={"LANDSCAPE_TEST_FAIL_BATCH": "2"},
    )
    assert proc.returncode != 0 and proc.stderr.count("simulated failure on rank 1 at a batch of 2") == 1, proc.stderr
    assert "(rank 1)" in proc.stderr, proc.stderr
    assert not (tmp_path / "f.h5").exists()


def test_a_pass_given_more_points_than_the_surface_has_holds_them_all(tmp_path):
    args = [*MLP, "--no_test", "--kernel", "reference", "--batch_size", "2000", "--dir_file", tmp_path / "d.h5"]
    assert landscape(*args, "--points_per_pass", "100000", "--surf_file", tmp_path / "a.h5") == 0
    assert landscape(*args, "--points_per_pass", "15", "--surf_file", tmp_path / "b.h5") == 0  # one pass of all 15
    a, b = read_surface(str(tmp_path / "a.h5")), read_surface(str(tmp_path / "b.h5"))
    assert a.run["points_per_pass"] == 100_000 and all(np.array_equal(a.values[q], b.values[q]) for q in a.values)
