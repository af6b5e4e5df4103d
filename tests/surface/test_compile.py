"""--compile: torch.compile of a batch's forward pass, loss and counts, agreeing with eager evaluation,
recorded in the file, the same bits on any number of ranks, and reused across batch sizes in tuning."""
import numpy as np
import pytest

from conftest import digits_kernel, landscape, run
from landscape.io.surface_file import read as read_surface
from landscape.surface.evaluation import EvaluationConfig, Evaluator
from landscape.surface.sweep import COMPILED_PASSES

MLP = ["surface", "--model", "digits_mlp", "--x=-1:1:5", "--y=-1:1:3", "--threads", "1", "--quiet"]
POINTS = np.array([[0.0, 0.0], [0.4, -0.3], [1.0, 1.0], [-2.0, 0.5], [30.0, 30.0]])


def kernel(compile: bool, k: int = 1, batch: int = 500, dtype: str = "float32") -> Evaluator:
    return digits_kernel(EvaluationConfig(batch_size=batch, points_per_pass=k, compile=compile, dtype=dtype))


@pytest.mark.slow
@pytest.mark.parametrize("k, dtype, rtol", [(1, "float32", 1e-6), (3, "float32", 1e-6), (1, "float64", 1e-12)])
def test_compiled_values_agree_with_eager_ones(k, dtype, rtol):
    eager, compiled = kernel(False, k, dtype=dtype).evaluate(POINTS), kernel(True, k, dtype=dtype).evaluate(POINTS)
    assert np.isfinite(eager).all() and eager[4, 0] > 10 * eager[0, 0]  # the far point is a real loss rise
    assert np.allclose(compiled, eager, rtol=rtol, atol=0)
    assert np.array_equal(compiled[:, [1, 3]], eager[:, [1, 3]])  # accuracies: counts of equal argmaxes


@pytest.mark.slow
def test_a_compiled_kernel_rebatched_runs_the_same_compiled_code_and_gives_the_values_of_that_batch_size():
    ev = kernel(True, batch=500)
    ev.evaluate(POINTS[:1])
    step, whole = ev.unrolled.step, ev.unrolled.whole
    other = ev.rebatched(200)
    assert (other.unrolled.step, other.unrolled.whole) == (step, whole)
    assert other.cfg.batch_size == 200 and ev.cfg.batch_size == 500
    assert np.array_equal(other.evaluate(POINTS), kernel(True, batch=200).evaluate(POINTS))
    # a batch holding both sets: one compiled call per pass, its sums finished inside it
    one_call = ev.rebatched(2000)
    assert np.allclose(one_call.evaluate(POINTS), ev.evaluate(POINTS), rtol=1e-6, atol=0)


@pytest.mark.slow
def test_compiled_on_a_cpu_points_go_one_after_another_in_calls_of_at_most_unroll_points(monkeypatch):
    """Weights made inside the call from the coefficients; the points that do not fill a call go one per
    call (not padded with copies); the values those of eager one-point evaluation."""
    from landscape.surface import sweep
    monkeypatch.setattr(sweep, "UNROLL", 2)
    ev = kernel(True, k=3)
    assert ev.unrolled is not None and ev.batched is None and ev.unrolled.group == 2 and ev.points_per_pass == 3
    calls = []
    whole = ev.unrolled.whole
    ev.unrolled.whole = lambda c, *rest: calls.append(c.clone()) or whole(c, *rest)
    ev.unrolled.batch_size = 2000  # one batch: one call per group
    got = ev.evaluate(POINTS)
    assert [c.shape[0] for c in calls] == [2, 2, 1]
    eager = kernel(False, batch=2000).evaluate(POINTS)
    assert got.shape == eager.shape and np.allclose(got, eager, rtol=1e-6, atol=0)
    assert np.array_equal(got[:, [1, 3]], eager[:, [1, 3]])
    assert np.array_equal(ev.evaluate(POINTS[2:]), got[2:])  # a chunk's points: the same bits however called


@pytest.mark.slow
def test_compile_is_recorded_and_a_resume_must_match_it(tmp_path, capsys):
    assert landscape(*MLP, "--compile", "--points_per_pass", "2", "--surf_file", tmp_path / "c.h5") == 0
    written = read_surface(str(tmp_path / "c.h5"))
    assert written.attrs["compile"] is True or written.attrs["compile"] == 1
    assert written.run["compile_seconds"] > 0 and written.attrs["compiled_passes"] == COMPILED_PASSES
    assert "eager_passes" not in written.attrs
    assert landscape(*MLP, "--points_per_pass", "2", "--surf_file", tmp_path / "c.h5") != 0
    assert "compile: file has True, this run has False" in capsys.readouterr().err


@pytest.mark.slow
def test_compiled_surfaces_are_the_same_bits_on_one_and_two_ranks(tmp_path):
    args = [*MLP[1:], "--compile", "--points_per_pass", "2", "--dir_file", str(tmp_path / "d.h5"),
            "--round_seconds", "0.01"]
    assert landscape("surface", *args, "--surf_file", tmp_path / "one.h5") == 0
    proc = run("surface", [*args, "--surf_file", str(tmp_path / "two.h5")], ranks=2)
    assert proc.returncode == 0, proc.stderr
    one, two = read_surface(str(tmp_path / "one.h5")), read_surface(str(tmp_path / "two.h5"))
    assert all(np.array_equal(one.values[q], two.values[q]) for q in one.values)


@pytest.mark.slow
def test_auto_with_compile_on_a_cpu_tries_one_point_per_call_and_full_calls_only(tmp_path, monkeypatch):
    from landscape.surface import sweep, tuning
    ladders = []
    tune = tuning.tune
    monkeypatch.setattr(tuning, "tune", lambda *a, **k: ladders.append(k["ladder"]) or tune(*a, **k))
    monkeypatch.setattr(tuning, "COMPILED_BUDGET", 0.1)
    assert landscape(*MLP, "--compile", "--batch_size", "2000", "--points_per_pass", "auto",
                     "--surf_file", tmp_path / "c.h5") == 0
    assert ladders == [(1, sweep.UNROLL)]
    assert read_surface(str(tmp_path / "c.h5")).attrs["points_per_pass"] in (1, sweep.UNROLL)


@pytest.mark.slow
@pytest.mark.parametrize("before", [None, "unrolled", "unrolled-2", "unrolled-3"])
def test_a_compiled_surface_begun_under_other_passes_is_plotted_not_resumed(tmp_path, capsys, before):
    """Before the unrolled passes its weights were made outside the compiled call; under the first unrolled
    passes each linear layer's addmm added its bias; under the second the loss reduced each sample's scores;
    under the third a classifier of many inputs made its scores transposed: its last bits differ from this
    kernel's."""
    import hashlib

    from conftest import begun_before
    surf = tmp_path / "c.h5"
    assert landscape(*MLP, "--compile", "--surf_file", surf) == 0
    begun_before(surf, "compiled_passes", before)
    before_bytes = hashlib.sha256(surf.read_bytes()).hexdigest()
    assert landscape(*MLP, "--compile", "--surf_file", surf) != 0
    assert (f"compiled_passes: file has {before or '(absent)'!r}, this run has {COMPILED_PASSES!r}"
            in capsys.readouterr().err)
    assert hashlib.sha256(surf.read_bytes()).hexdigest() == before_bytes
