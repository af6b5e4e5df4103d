"""Several grid points per pass (one after another on a CPU, vmap on a GPU), and the batch and K chosen by
measurement."""
import os
from dataclasses import replace

import h5py
import numpy as np
import pytest
import torch

from conftest import landscape, run
from landscape.io.surface_file import read as read_surface
from landscape.surface import tuning

CNN = ["surface", "--model", "digits_cnn", "--x=-1:1:7", "--y=-1:1:5", "--no_test", "--threads", "1", "--quiet"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-6), ("float64", 1e-12)])
def test_k_points_per_pass_agree_with_one(tmp_path, dtype, rtol):
    args = [*CNN, "--dtype", dtype, "--dir_file", tmp_path / "d.h5"]
    assert landscape(*args, "--surf_file", tmp_path / "k1.h5") == 0
    assert landscape(*args, "--points_per_pass", "4", "--surf_file", tmp_path / "k4.h5") == 0
    one, four = read_surface(str(tmp_path / "k1.h5")), read_surface(str(tmp_path / "k4.h5"))
    assert four.attrs["points_per_pass"] == 4 and one.attrs["points_per_pass"] == 1
    for q in one.values:
        assert np.allclose(four.values[q], one.values[q], rtol=rtol, atol=0), q


@pytest.mark.mpi
def test_chunks_of_the_grid_give_the_same_bits_on_any_number_of_ranks_and_after_a_resume(tmp_path):
    args = [*CNN, "--points_per_pass", "3", "--dir_file", str(tmp_path / "d.h5"), "--round_seconds", "0.01"]
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


def test_recalibration_falls_back_to_one_point_per_pass_and_says_so(tmp_path, capsys):
    assert landscape(*CNN[:-1], "--bn", "recalibrate", "--bn_batches", "1", "--points_per_pass", "4",
                     "--surf_file", tmp_path / "r.h5") == 0
    assert "note: points_per_pass: BatchNorm recalibration updates statistics in place" in capsys.readouterr().out
    assert read_surface(str(tmp_path / "r.h5")).attrs["points_per_pass"] == 1


def test_auto_settings_are_measured_once_recorded_and_reused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tuning, "BUDGET", 1.0)
    args = ["surface", "--model", "digits_mlp", "--x=-1:1:5", "--no_test", "--threads", "1", "--batch_size", "auto",
            "--points_per_pass", "auto", "--surf_file", tmp_path / "a.h5"]
    assert landscape(*args) == 0
    first = capsys.readouterr().out
    assert "auto: batch " in first and "settings measured, the fastest" in first and "again taking turns" in first
    assert "on up to 1437 samples per set" in first
    s = read_surface(str(tmp_path / "a.h5"))
    assert isinstance(s.attrs["batch_size"], (int, np.integer)) and s.run["auto"].startswith("batch ")
    assert landscape(*args) == 0
    second = capsys.readouterr().out
    assert "(as the surface file records)" in second and "0 to compute" in second


@pytest.mark.mpi
def test_auto_on_two_ranks_measures_on_both_and_gives_the_bits_of_one_rank_at_the_chosen_settings(
        tmp_path, plugins, monkeypatch):
    seen = tmp_path / "seen"
    seen.mkdir()
    args = ["--model", f"{plugins}:marking_batches", "--x=-1:1:5", "--y=-1:1:3", "--threads", "1",
            "--dir_file", str(tmp_path / "d.h5"), "--round_seconds", "0.01"]
    proc = run("surface", [*args, "--batch_size", "auto", "--points_per_pass", "auto", "--surf_file",
                           str(tmp_path / "auto.h5")], ranks=2, env={"LANDSCAPE_TEST_SEEN": str(seen)})
    assert proc.returncode == 0, proc.stderr
    auto = read_surface(str(tmp_path / "auto.h5"))
    batch, k = int(auto.attrs["batch_size"]), int(auto.attrs["points_per_pass"])
    assert "every rank measuring at once" in auto.run["auto"]
    for rank in (0, 1):  # both ranks ran the ladder's first batch sizes (the surface runs one of them at most)
        assert {f"{rank}-64", f"{rank}-128", f"{rank}-256"} <= {p.name for p in seen.iterdir()}, rank
    (tmp_path / "serial").mkdir()
    monkeypatch.setenv("LANDSCAPE_TEST_SEEN", str(tmp_path / "serial"))
    assert landscape("surface", *args, "--batch_size", str(batch), "--points_per_pass", str(k),
                     "--surf_file", tmp_path / "serial.h5") == 0
    serial = read_surface(str(tmp_path / "serial.h5"))
    assert all(np.array_equal(auto.values[q], serial.values[q]) for q in serial.values)


@pytest.mark.mpi
def test_a_failure_on_one_rank_while_measuring_ends_every_rank_and_names_it(tmp_path, plugins):
    proc = run("surface", ["--model", f"{plugins}:failing_on_rank_one", "--x=-1:1:5", "--no_test", "--threads", "1",
                           "--batch_size", "auto", "--surf_file", str(tmp_path / "f.h5")], ranks=2, timeout=90)
    assert proc.returncode != 0 and proc.stderr.count("simulated failure on rank 1 at a batch of 128") == 1, \
        proc.stderr
    assert "(rank 1): measuring batch 128 with 1 point(s) per pass for auto: " in proc.stderr, proc.stderr
    assert not (tmp_path / "f.h5").exists()


def test_a_failure_on_one_rank_building_auto_s_first_kernel_ends_every_rank_and_names_it(tmp_path, plugins):
    """The first kernel auto builds checks the model on 2 samples; failing there on rank 1 alone must not
    leave rank 0 measuring on its own (it would wait for rank 1 forever)."""
    proc = run("surface", ["--model", f"{plugins}:failing_on_rank_one", "--x=-1:1:5", "--no_test", "--threads", "1",
                           "--batch_size", "auto", "--surf_file", str(tmp_path / "f.h5")], ranks=2, timeout=90,
               env={"LANDSCAPE_TEST_FAIL_BATCH": "2"})
    assert proc.returncode != 0 and proc.stderr.count("simulated failure on rank 1 at a batch of 2") == 1, \
        proc.stderr
    assert "(rank 1)" in proc.stderr, proc.stderr
    assert not (tmp_path / "f.h5").exists()


class Raises(torch.nn.Module):
    """The digits MLP's first layer, raising ``error`` for a batch of ``at`` samples."""

    def __init__(self, error, at):
        super().__init__()
        self.net, self.error, self.at = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)), error, at

    def forward(self, x):
        if isinstance(x, torch.Tensor) and x.shape[0] == self.at:
            raise self.error
        return self.net(x)


OUT_OF_MEMORY = [torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
                 RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 GB"), MemoryError()]


@pytest.mark.parametrize("error", [*OUT_OF_MEMORY, ValueError("a bug in the model")],
                         ids=["cuda", "cpu", "memoryerror", "bug"])
@pytest.mark.parametrize("at", [2, 64], ids=["checking the model", "evaluating"])
def test_out_of_memory_in_the_kernel_rules_a_setting_out_and_other_failures_end_the_measurement(error, at):
    """A real kernel on a model that fails at batch 64, or already at its check on 2 samples: the kernel
    reports the failure as an EvaluationError caused by it, and out of memory only rules the setting out."""
    from landscape.data import load_named
    from landscape.errors import EvaluationError
    from landscape.surface import directions as dirs
    from landscape.surface.evaluation import EvaluationConfig, Evaluator
    model = Raises(error, at)
    origin = dirs.origin_tensors(model, "weights")
    dx = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(0))
    data = {"train": load_named("digits").train}

    def make(batch, k):
        ev = Evaluator(model, origin, dx, None, data, "crossentropy", EvaluationConfig(batch_size=batch,
                                                                                      points_per_pass=k))
        ev.probe()
        return ev

    rng = np.random.default_rng(0)
    if isinstance(error, ValueError):
        with pytest.raises(EvaluationError, match=r"^measuring batch 64 with 1 point\(s\) per pass for auto: .*"
                                                  r"a bug in the model"):
            tuning._runs(make, 64, 1, rng)
    else:
        assert tuning._runs(make, 64, 1, rng) == 0.0
    if at == 64:
        assert tuning._runs(make, 128, 1, rng) > 0.0  # another batch runs


def test_a_finalist_out_of_memory_on_a_rank_stays_out_and_none_left_gives_the_smallest_setting(monkeypatch):
    """16 points per pass runs out of memory when measured again (a rank's memory taken by another job,
    say): 64, slower in the ladder, is chosen, at its rate then; if every finalist runs out, the smallest
    setting, saying so."""
    calls = []

    def runs(make, batch, k, rng):
        calls.append(k)
        again = len(calls) > 3
        return {1: 800.0, 16: 0.0 if again else 1000.0, 64: 950.0}[k]

    monkeypatch.setattr(tuning, "_runs", runs)
    chosen = tuning.tune(None, 512, 512, "auto", ladder=(1, 16, 64))
    assert (chosen.points_per_pass, chosen.points_per_second, chosen.again) == (64, 950.0, 3)
    assert calls[3:] == [16, 64, 1, 1, 64]  # 16 is not measured in the second turn
    def runs_out_again(make, batch, k, rng):
        calls.append(k)
        return 0.0 if len(calls) > 3 else 900.0

    monkeypatch.setattr(tuning, "_runs", runs_out_again)
    calls.clear()
    none = tuning.tune(None, 512, 512, "auto", ladder=(1, 16, 64))
    assert (none.batch_size, none.points_per_pass, none.points_per_second) == (512, 1, 0.0)
    assert "the smallest: none of the 3 settings measured ran" in none.describe()


def test_tune_picks_the_fastest_setting_that_runs_and_keeps_what_was_given(monkeypatch):
    import time
    monkeypatch.setattr(tuning, "SECONDS_PER_TRIAL", 0.02)

    class Fake:
        """A pass costs 2 ms x (1 + 3 |batch - 512| / 512), whatever its points: best at 512, K large."""

        def __init__(self, batch, k):
            if batch * k > 4096:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            self.points_per_pass, self.batch = k, batch

        def evaluate(self, points):
            time.sleep(2e-3 * (1 + 3 * abs(self.batch - 512) / 512))

    chosen = tuning.tune(Fake, 2000, "auto", "auto")
    assert (chosen.batch_size, chosen.points_per_pass) == (512, 8)  # 512 x 16 runs out of memory
    assert tuning.tune(Fake, 2000, 256, "auto").points_per_pass == 16  # the batch given is kept
    kept = tuning.tune(Fake, 2000, 128, 2)
    assert (kept.batch_size, kept.points_per_pass, kept.tried) == (128, 2, 1)
    rungs = tuning.tune(Fake, 2000, 512, "auto", ladder=(1, 4))  # only the rungs given are tried
    assert (rungs.points_per_pass, rungs.tried) == (4, 2)


def test_a_pass_is_measured_with_no_more_points_than_the_surface_has(tmp_path, monkeypatch):
    """A surface of 25 points never holds a pass of more: 100,000 points per pass given is measured as
    passes of 25 (not 100,000 points' weights at once), and kept as given; auto's ladder stops at 16."""
    monkeypatch.setattr(tuning, "SECONDS_PER_TRIAL", 0.01)
    built = []

    class Fake:
        def __init__(self, batch, k):
            if k > 25:
                raise MemoryError()
            built.append(k)
            self.points_per_pass = k

        def evaluate(self, points):
            assert len(points) <= 25

    given = tuning.tune(Fake, 2000, 512, 100_000, points=25)
    assert (given.points_per_pass, built) == (100_000, [25])
    built.clear()
    assert tuning.tune(Fake, 2000, 512, "auto", points=25).tried == 5 and max(built) == 16
    args = ["surface", "--model", "digits_mlp", "--x=-1:1:5", "--y=-1:1:5", "--no_test", "--threads", "1", "--quiet",
            "--dir_file", tmp_path / "d.h5"]
    assert landscape(*args, "--batch_size", "auto", "--points_per_pass", "100000", "--surf_file", tmp_path / "a.h5") == 0
    auto = read_surface(str(tmp_path / "a.h5"))
    assert int(auto.attrs["points_per_pass"]) == 100_000
    assert landscape(*args, "--batch_size", str(auto.attrs["batch_size"]), "--points_per_pass", "25",
                     "--surf_file", tmp_path / "b.h5") == 0  # one pass of all 25 points, as with 100,000
    fixed = read_surface(str(tmp_path / "b.h5"))
    assert all(np.array_equal(auto.values[q], fixed.values[q]) for q in fixed.values)


def test_tune_weighs_the_wait_for_the_last_chunks_of_a_short_surface(monkeypatch):
    """Passes of 64 points measured 4 % faster than passes of 16 lose to them on a surface of 840 points
    per rank (a chunk of 64 is 7 % of it), not on one rank or a long surface."""
    monkeypatch.setattr(tuning, "_runs", lambda make, batch, k, rng: {1: 800.0, 16: 1000.0, 64: 1040.0}[k])
    assert tuning.over_surface(1040.0, 64, 840) == pytest.approx(1040 * 840 / 904)
    assert tuning.over_surface(1040.0, 64, 0.0) == 1040.0
    ladder = (1, 16, 64)
    assert tuning.tune(None, 512, 512, "auto", ladder=ladder, points_per_rank=840).points_per_pass == 16
    for points_per_rank in (0.0, 100_000):
        assert tuning.tune(None, 512, 512, "auto", ladder=ladder, points_per_rank=points_per_rank).points_per_pass == 64
    chosen = tuning.tune(None, 512, 512, "auto", ladder=ladder, points_per_rank=840)
    assert chosen.points_per_second == 1000.0 and chosen.tried == 3


def test_the_finalists_measured_again_side_by_side_undo_a_lucky_moment_of_the_ladder(monkeypatch):
    """Passes of 16 points run at 1,000 points/s, of 64 at 950; the machine ran 20 % faster while the ladder
    measured 64.  Measured again taking turns, 16 wins, at the rate measured then."""
    calls = []

    def runs(make, batch, k, rng):
        calls.append((batch, k))
        return {1: 800.0, 16: 1000.0, 64: 950.0}[k] * (1.2 if len(calls) == 3 else 1.0)

    monkeypatch.setattr(tuning, "_runs", runs)
    chosen = tuning.tune(None, 512, 512, "auto", ladder=(1, 16, 64))
    assert (chosen.points_per_pass, chosen.points_per_second, chosen.tried) == (16, 1000.0, 3)
    assert calls[3:] == [(512, 64), (512, 16), (512, 1), (512, 1), (512, 16), (512, 64)]  # two turns, both ways
    assert "the fastest 3 again taking turns" in chosen.describe()


def test_every_rank_measures_and_a_setting_is_as_fast_as_the_ranks_mean(monkeypatch):
    """Rank 0 alone would take 64 points per pass, 16 after it; with rank 1's rates 1 is faster on the mean
    than 16, and 64 ran out of memory on rank 1, so it is out for both, although its mean with 0 (1,000)
    would beat 1's (850).  A rank past the deadline ends the ladders for all."""
    monkeypatch.setattr(tuning, "_runs", lambda make, batch, k, rng: {1: 800.0, 16: 1000.0, 64: 2000.0}[k])
    rank1 = {1: 900.0, 16: 600.0, 64: 0.0}
    seen = []

    def together(measure):
        rate, late = measure()
        seen.append(rate)
        return [(rate, late), (rank1[{800.0: 1, 1000.0: 16, 2000.0: 64}[rate]], False)]

    chosen = tuning.tune(None, 512, 512, "auto", ladder=(1, 16, 64), together=together)
    assert (chosen.points_per_pass, chosen.points_per_second, chosen.tried, chosen.again) == (1, 850.0, 3, 2)
    assert seen[:3] == [800.0, 1000.0, 2000.0]  # both ranks measured each setting of the ladder
    assert seen[3:] == [800.0, 1000.0, 1000.0, 800.0]  # the two that ran on both, again, taking turns
    rushed = tuning.tune(None, 2000, "auto", "auto", together=lambda measure: [measure(), (800.0, True)])
    assert rushed.tried == 1  # rank 1 was past the deadline after the first setting: nothing more


def test_the_ladder_of_batch_sizes_ends_at_the_kernels_longest_pass(monkeypatch):
    """With the training and test sets joined, a whole small data set in one batch is a candidate."""
    monkeypatch.setattr(tuning, "SECONDS_PER_TRIAL", 0.01)
    tried = []

    class Fake:
        def __init__(self, batch, k):
            self.points_per_pass = k
            tried.append(batch)

        def evaluate(self, points):
            pass

    tuning.tune(Fake, 1797, "auto", 1)
    assert sorted(set(tried)) == [64, 128, 256, 512, 1024, 1797]


POINTS = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5], [30.0, 30.0]])


def test_on_a_cpu_a_pass_of_several_points_runs_them_one_after_another_and_agrees_with_one_per_pass():
    """Not through vmap (its K-fold activations fall out of a CPU's caches): the weights made from the
    coefficients in the call (one product per tensor); (0, 0) is the trained model exactly, and a
    point's values do not depend on the points it shares its pass with."""
    import torch

    from conftest import digits_kernel
    from landscape.surface.evaluation import EvaluationConfig
    one = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=1))
    five = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=5))
    assert one.unrolled is None and five.unrolled is not None and five.batched is None
    assert five.points_per_pass == 5 and not five.unrolled.compile
    values = five.evaluate(POINTS)
    assert np.isfinite(values).all() and values[4, 0] > 10 * values[0, 0]
    assert np.allclose(values, one.evaluate(POINTS), rtol=1e-6, atol=0)
    assert np.array_equal(values[:, [1, 3]], one.evaluate(POINTS)[:, [1, 3]])  # accuracies: counts
    per_point = five.unrolled.made(torch.from_numpy(POINTS))
    assert all(torch.equal(per_point[0][name], p) for name, p in five.model.named_parameters())
    for (a, b), weights in zip(POINTS, per_point):
        assert all(torch.allclose(weights[name], w, rtol=1e-7, atol=0) for name, w in one.weights(a, b).items())
    # per point: the same within rounding however the pass is made up (the same chunks give the same
    # bits, which the test across ranks checks; the matrix products of other passes may round otherwise)
    assert np.allclose(five.evaluate(POINTS[[3, 0, 4, 1, 2]]), values[[3, 0, 4, 1, 2]], rtol=1e-6, atol=0)
    assert np.allclose(five.evaluate(POINTS[1:3]), values[1:3], rtol=1e-6, atol=0)  # a shorter pass: the grid's last


def test_through_vmap_k_points_agree_with_one_and_a_model_vmap_rejects_falls_back_to_one_per_pass(monkeypatch):
    """As on a GPU: several points per pass in one vmapped forward."""
    import torch
    from torch import nn

    from conftest import digits_kernel
    from landscape.surface import evaluation
    monkeypatch.setattr(evaluation, "unrolls", lambda device, cfg: False)  # as on a GPU
    one = digits_kernel(evaluation.EvaluationConfig(batch_size=500, points_per_pass=1))
    three = digits_kernel(evaluation.EvaluationConfig(batch_size=500, points_per_pass=3))
    assert three.batched is not None and three.unrolled is None
    assert np.allclose(three.evaluate(POINTS), one.evaluate(POINTS), rtol=1e-6, atol=0)

    class Branching(nn.Module):
        """A plug-in model vmap cannot run: its forward branches on a value."""

        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(64, 10)

        def forward(self, x):
            out = self.linear(x.flatten(1))
            return out if out.sum().item() > -1e30 else -out

    torch.manual_seed(0)
    model = Branching()
    origin = {n: p.detach().double() for n, p in model.named_parameters()}
    dx = {n: torch.ones_like(v) for n, v in origin.items()}
    from landscape.data import load_named
    data = load_named("digits")
    ev = evaluation.Evaluator(model, origin, dx, None, {"train": data.train}, "crossentropy",
                              evaluation.EvaluationConfig(batch_size=500, points_per_pass=4))
    assert ev.batched is not None
    ev.probe()
    assert ev.batched is None and ev.points_per_pass == 1
    assert ev.note.startswith("points_per_pass: vmap cannot run this model") and ev.note.endswith("one point per pass")
    assert np.isfinite(ev.evaluate(POINTS[:3])).all()


@pytest.mark.parametrize("before", [None, "unrolled"])
def test_passes_of_several_points_on_a_cpu_are_recorded_and_one_begun_under_other_passes_is_plotted_not_resumed(
        tmp_path, capsys, before):
    """Before the unrolled passes its weights were made point by point and its points went through vmap;
    under the first unrolled passes its scores were reduced sample by sample: other last bits."""
    import hashlib

    from conftest import begun_before
    from landscape.surface.sweep import EAGER_PASSES
    args = ["surface", "--model", "digits_mlp", "--x=-1:1:5", "--threads", "1", "--quiet"]
    assert landscape(*args, "--surf_file", tmp_path / "one.h5") == 0
    assert "eager_passes" not in read_surface(str(tmp_path / "one.h5")).attrs  # one point per pass: as before
    surf = tmp_path / "k.h5"
    assert landscape(*args, "--points_per_pass", "2", "--surf_file", surf) == 0
    assert read_surface(str(surf)).attrs["eager_passes"] == EAGER_PASSES
    begun_before(surf, "eager_passes", before)
    sha = hashlib.sha256(surf.read_bytes()).hexdigest()
    assert landscape(*args, "--points_per_pass", "2", "--surf_file", surf) != 0
    message = f"eager_passes: file has {before or '(absent)'!r}, this run has {EAGER_PASSES!r}"
    assert message in capsys.readouterr().err
    assert hashlib.sha256(surf.read_bytes()).hexdigest() == sha


@pytest.mark.slow
@pytest.mark.parametrize("compile", [False, True])
def test_a_pass_of_states_points_reaches_a_target_exactly_and_keeps_perturbed_variances_non_negative(compile):
    """Compiled, the variances are clamped in place on a slice of an intermediate inside the graph; a 1-D
    grid: one row of directions."""
    import torch

    from landscape.data import load_named
    from landscape.models import build_model
    from landscape.surface import directions as dirs
    from landscape.surface.evaluation import EvaluationConfig, Evaluator
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
    data = load_named("digits")
    ev = Evaluator(model, origin, dx, None, {"train": data.train}, "crossentropy",
                   EvaluationConfig(batch_size=500, points_per_pass=3, compile=compile))
    made = ev.unrolled.made(torch.tensor([[0.0, 0.0], [1.0, 0.0], [-5.0, 0.0]], dtype=torch.float64))
    assert all(torch.equal(made[0][k], origin[k].float()) and torch.equal(made[1][k], target[k].float()) for k in dx)
    variances = [k for k in dx if k.endswith("running_var")]
    assert variances and all(made[2][k].min() == 0 for k in variances)  # clamped, as Evaluator.weights does
    assert all(torch.equal(made[2][k], ev.weights(-5.0, 0.0)[k]) for k in variances)
    values = ev.evaluate(np.array([[0.0, 0.0], [1.0, 0.0], [-5.0, 0.0]]))
    one = Evaluator(model, origin, dx, None, {"train": data.train}, "crossentropy", EvaluationConfig(batch_size=500))
    assert one.unrolled is None and np.allclose(values, one.evaluate(np.array([[0.0, 0.0], [1.0, 0.0], [-5.0, 0.0]])),
                                                 rtol=1e-5 if compile else 1e-6, atol=0)


def test_directions_not_shaped_as_the_origin_are_refused_by_name():
    """Held side by side in one matrix, sizes that only add up alike would otherwise be misaligned."""
    import torch

    from conftest import digits_kernel
    from landscape.surface.evaluation import EvaluationConfig, Evaluator
    ref = digits_kernel(EvaluationConfig(points_per_pass=2))
    dx = {k: v.clone() for k, v in ref.dx.items()}
    first, second = list(dx)[:2]
    dx[first], dx[second] = torch.zeros(dx[first].numel() + 1), torch.zeros(dx[second].numel() - 1)
    with pytest.raises(ValueError, match=rf"direction tensor '{first}' has shape"):
        Evaluator(ref.model, ref.origin, dx, None, {"train": ref.sweep.data["train"]}, "crossentropy", ref.cfg)


def test_directions_given_in_other_types_are_held_in_float64_and_give_the_same_values():
    """An API user's directions may be float32 tensors or numpy arrays, one direction of each."""
    import torch

    from conftest import digits_kernel
    from landscape.data import load_named
    from landscape.surface.evaluation import EvaluationConfig, Evaluator
    ref = digits_kernel(EvaluationConfig(batch_size=500, points_per_pass=2))
    dy = {k: v.numpy() for k, v in ref.dy.items()}
    dx = {k: v.float().double() for k, v in ref.dx.items()}  # float32 values, exact in float64
    same = {k: v.float() for k, v in dx.items()}
    data = {"train": load_named("digits").train}
    ev = Evaluator(ref.model, ref.origin, same, dy, data, "crossentropy", ref.cfg)
    assert all(v.dtype == torch.float64 for v in (*ev.dx.values(), *ev.dy.values(), ev.plane))
    assert all(np.array_equal(ev.dy[k].numpy(), dy[k]) for k in dy)
    values = Evaluator(ref.model, ref.origin, dx, ref.dy, data, "crossentropy", ref.cfg).evaluate(POINTS)
    assert np.isfinite(values).all() and np.array_equal(ev.evaluate(POINTS), values)


@pytest.mark.parametrize("loss, dtype, batch", [("mse", "float32", 500), ("torch.nn:CrossEntropyLoss", "float32", 500),
                                                ("crossentropy", "bfloat16", 500), ("crossentropy", "float64", 2000)])
def test_a_pass_of_several_points_agrees_with_one_per_pass_for_every_loss_precision_and_batch(loss, dtype, batch):
    """A loss per sample or a callable's batch mean (the sets then apart), low precision, and one batch
    holding both sets (one call, sums finished in it)."""
    from conftest import digits_kernel
    from landscape.surface.evaluation import EvaluationConfig
    cfg = EvaluationConfig(loss_name=loss, dtype=dtype, batch_size=batch)
    one, three = digits_kernel(cfg), digits_kernel(replace(cfg, points_per_pass=3))
    assert three.unrolled is not None and three.sweep.joined == (loss != "torch.nn:CrossEntropyLoss")
    values = three.evaluate(POINTS)
    assert np.isfinite(values).all()
    assert np.allclose(values, one.evaluate(POINTS), rtol={"float64": 1e-12, "bfloat16": 1e-2}.get(dtype, 1e-6), atol=0)


def test_a_channels_last_model_runs_several_points_per_pass():
    """Its convolution weights are not contiguous: flattened as copies for the weights' product."""
    import torch

    from landscape.data import load_named
    from landscape.models import build_model
    from landscape.surface import directions as dirs
    from landscape.surface.evaluation import EvaluationConfig, Evaluator
    torch.manual_seed(0)
    model = build_model("digits_cnn").eval().to(memory_format=torch.channels_last)
    origin = dirs.origin_tensors(model, "weights")
    assert any(not v.is_contiguous() for v in origin.values())
    dx = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(0))
    data = {"train": load_named("digits").train}
    one, two = (Evaluator(model, origin, dx, None, data, "crossentropy", EvaluationConfig(batch_size=500,
                                                                                         points_per_pass=k))
                for k in (1, 2))
    two.probe()
    points = np.array([[0.0, 0.0], [0.5, 0.0], [-1.0, 0.0]])
    assert np.allclose(two.evaluate(points), one.evaluate(points), rtol=1e-5, atol=0)


def test_passes_of_several_points_run_unrolled_on_a_cpu_and_vmapped_on_a_gpu():
    import torch

    from landscape.surface.evaluation import EvaluationConfig, unrolls
    cpu, gpu = torch.device("cpu"), torch.device("cuda:0")
    assert unrolls(cpu, EvaluationConfig(points_per_pass=4)) and unrolls(cpu, EvaluationConfig(compile=True))
    assert not unrolls(cpu, EvaluationConfig(points_per_pass=1))  # one point per pass: Sweep, as before
    assert not unrolls(gpu, EvaluationConfig(points_per_pass=4))
    assert not unrolls(gpu, EvaluationConfig(points_per_pass=4, compile=True))
