"""auto: the kernel, the batch and the points per pass chosen by measurement, in a budget proportional to
the surface, every rank measuring, the reference kernel kept unless another is clearly faster."""

import time

import numpy as np
import pytest
import torch

from landscape.surface import tuning
from landscape.surface.tuning import Setting

REFERENCE = ["reference"]


class Fake:
    """A pass costs 2 ms x (1 + 3 |batch - 512| / 512), whatever its points: best at 512, K large; a batch of
    more than 4,096 samples' activations (batch x K) runs out of memory."""

    def __init__(self, setting: Setting, scale: float = 1.0):
        if setting.batch_size * setting.points_per_pass > 4096:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        self.points_per_pass, self.batch, self.scale = setting.points_per_pass, setting.batch_size, scale

    def evaluate(self, points):
        time.sleep(self.scale * 2e-3 * (1 + 3 * abs(self.batch - 512) / 512))


def rates(table: dict, calls: list | None = None):
    """``_runs`` from a table of rates by setting (kernel, batch, K; 1 point/s where it has none),
    recording the calls."""

    def runs(make, setting, rng, seconds=0.1):
        if calls is not None:
            calls.append(setting)
        return table.get((setting.kernel, setting.batch_size, setting.points_per_pass), 1.0)

    return runs


def test_tune_picks_the_fastest_setting_that_runs_and_keeps_what_was_given(monkeypatch):
    monkeypatch.setattr(tuning, "SECONDS_PER_TRIAL", 0.02)
    chosen = tuning.tune(Fake, tuning.Request(2000, "auto", "auto", tuple(REFERENCE)))
    assert (chosen.batch_size, chosen.points_per_pass) == (512, 8)  # 512 x 16 runs out of memory
    assert (
        tuning.tune(Fake, tuning.Request(2000, 256, "auto", tuple(REFERENCE))).points_per_pass == 16
    )  # the batch given is kept
    kept = tuning.tune(Fake, tuning.Request(2000, 128, 2, tuple(REFERENCE)))
    assert (kept.kernel, kept.batch_size, kept.points_per_pass, kept.tried) == ("reference", 128, 2, 1)


def test_the_batch_ladder_starts_at_the_reference_batch_and_climbs_each_way_while_it_pays(monkeypatch):
    """From 128 (the reference code's batch) up to the whole joined data set while each is faster, then down
    until it stops paying; a model that is faster at smaller batches (a convolutional network whose
    activations outgrow the caches) goes down instead."""
    calls = []
    up = {128: 300.0, 256: 400.0, 512: 450.0, 1024: 500.0, 1797: 600.0, 64: 200.0}
    monkeypatch.setattr(tuning, "_runs", rates({("reference", b, 1): r for b, r in up.items()}, calls))
    chosen = tuning.tune(None, tuning.Request(1797, "auto", 1, tuple(REFERENCE)))
    assert tuning.FIRST_BATCH == 128
    assert [s.batch_size for s in calls][:6] == [128, 256, 512, 1024, 1797, 64]  # measured again: the fastest
    assert chosen.batch_size == 1797 and chosen.again == 3
    calls.clear()
    down = {128: 10.0, 256: 9.0, 64: 11.0}
    monkeypatch.setattr(tuning, "_runs", rates({("reference", b, 1): r for b, r in down.items()}, calls))
    chosen = tuning.tune(None, tuning.Request(1797, "auto", 1, tuple(REFERENCE)))
    assert [s.batch_size for s in calls][:3] == [128, 256, 64] and chosen.batch_size == 64


def test_a_small_surface_spends_little_time_measuring(monkeypatch):
    """The budget is SHARE of the surface's estimated time at the first setting: 5 points at 25 points/s
    per rank (0.2 s) leave 0.02 s, less than the first measurement took: nothing more is measured."""
    monkeypatch.setattr(tuning, "SECONDS_PER_TRIAL", 0.02)
    started = time.perf_counter()
    small = tuning.tune(
        lambda s: Fake(s, scale=5.0), tuning.Request(2000, "auto", "auto", tuple(REFERENCE), points_per_rank=5)
    )
    assert small.tried == 1 and (small.batch_size, small.points_per_pass) == (tuning.FIRST_BATCH, 1)
    assert small.budget < 0.05 and time.perf_counter() - started < 1.0
    large = tuning.tune(
        Fake, tuning.Request(2000, "auto", "auto", tuple(REFERENCE), points_per_rank=100_000, scale=2.0)
    )
    assert large.budget == tuning.BUDGET and large.tried > 5


def test_the_reference_kernel_is_kept_unless_another_is_more_than_ten_percent_faster(monkeypatch):
    def table(other: float) -> dict:
        return {
            **{("reference", 128, k): 100.0 for k in tuning.PASSES},
            **{("compiled", 128, k): other for k in tuning.PASSES},
        }

    monkeypatch.setattr(tuning, "_runs", rates(table(108.0)))
    assert (
        tuning.tune(None, tuning.Request(128, "auto", "auto", tuple(["reference", "compiled"]))).kernel == "reference"
    )
    monkeypatch.setattr(tuning, "_runs", rates(table(115.0)))
    faster = tuning.tune(None, tuning.Request(128, "auto", "auto", tuple(["reference", "compiled"])))
    assert (faster.kernel, faster.points_per_pass) == ("compiled", 8)  # first measured at PROBE_PASS
    assert "kernel compiled, batch 128, 8 point(s) per pass" in faster.describe()


def test_the_batch_ladder_comes_first_then_the_other_kernels_at_the_best_batch(monkeypatch):
    """The batch ladder (the reference kernel) is what a small surface's budget should buy first; the
    other kernels are then probed at the best batch, and the points per pass of each climbed."""
    calls = []
    table = {
        ("reference", 128, 1): 100.0,
        ("reference", 256, 1): 120.0,
        ("reference", 512, 1): 110.0,
        ("reference", 64, 1): 90.0,
        ("compiled", 256, 8): 200.0,
        **{("compiled", 256, k): 190.0 for k in (1, 2, 4, 16, 32, 64)},
        **{("reference", 256, k): 90.0 for k in tuning.PASSES if k > 1},
    }
    monkeypatch.setattr(tuning, "_runs", rates(table, calls))
    chosen = tuning.tune(None, tuning.Request(1797, "auto", "auto", tuple(["reference", "compiled"])))
    assert calls[:5] == [
        Setting("reference", 128, 1),
        Setting("reference", 256, 1),
        Setting("reference", 512, 1),
        Setting("reference", 64, 1),
        Setting("compiled", 256, 8),
    ]
    assert (chosen.kernel, chosen.batch_size, chosen.points_per_pass) == ("compiled", 256, 8)


def test_a_finalist_out_of_memory_on_a_rank_stays_out_and_none_left_gives_the_first_setting(monkeypatch):
    """16 points per pass runs out of memory when measured again (a rank's memory taken by another job,
    say): 64, slower in the ladder, is chosen, at its rate then; if every finalist runs out, the first
    setting, saying so."""
    calls = []

    def runs(make, setting, rng, seconds=0.1):
        calls.append(setting.points_per_pass)
        again = len(calls) > 3
        return {1: 800.0, 16: 0.0 if again else 1000.0, 64: 950.0}[setting.points_per_pass]

    monkeypatch.setattr(tuning, "_runs", runs)
    monkeypatch.setattr(tuning, "PASSES", (1, 16, 64))
    chosen = tuning.tune(None, tuning.Request(512, 512, "auto", tuple(REFERENCE)))
    assert (chosen.points_per_pass, chosen.points_per_second, chosen.again) == (64, 950.0, 3)
    assert calls[3:] == [16, 64, 1, 1, 64]  # 16 is not measured in the second turn

    def runs_out_again(make, setting, rng, seconds=0.1):
        calls.append(setting.points_per_pass)
        return 0.0 if len(calls) > 3 else 900.0

    monkeypatch.setattr(tuning, "_runs", runs_out_again)
    calls.clear()
    none = tuning.tune(None, tuning.Request(512, 512, "auto", tuple(REFERENCE)))
    assert (none.batch_size, none.points_per_pass, none.points_per_second) == (512, 1, 0.0)
    assert "the first: none of the 3 settings measured ran" in none.describe()


def test_a_pass_is_measured_with_no_more_points_than_the_surface_has(monkeypatch):
    """A surface of 25 points never holds a pass of more: 100,000 points per pass given is measured as
    passes of 25, and kept as given; auto's ladder stops at 16."""
    monkeypatch.setattr(tuning, "SECONDS_PER_TRIAL", 0.01)
    built = []

    class Small:
        def __init__(self, setting):
            if setting.points_per_pass > 25:
                raise MemoryError()
            built.append(setting.points_per_pass)
            self.points_per_pass = setting.points_per_pass

        def evaluate(self, points):
            assert len(points) <= 25

    given = tuning.tune(Small, tuning.Request(2000, 512, 100_000, tuple(REFERENCE), points=25))
    assert (given.points_per_pass, built) == (100_000, [25])
    built.clear()
    assert (
        tuning.tune(Small, tuning.Request(2000, 512, "auto", tuple(REFERENCE), points=25)).tried == 5
        and max(built) == 16
    )


def test_tune_weighs_the_wait_for_the_last_chunks_of_a_short_surface_on_several_ranks(monkeypatch):
    """Passes of 64 points measured 4 % faster than passes of 16 lose to them on a surface of 840 points
    per rank on 2 ranks (a chunk of 64 is 7 % of it), not on one rank or on a long surface."""
    monkeypatch.setattr(
        tuning, "_runs", lambda make, s, rng, seconds=0.1: {1: 800.0, 16: 1000.0, 64: 1040.0}[s.points_per_pass]
    )
    monkeypatch.setattr(tuning, "PASSES", (1, 16, 64))
    assert tuning.over_surface(1040.0, 64, 840) == pytest.approx(1040 * 840 / 904)
    assert tuning.over_surface(1040.0, 64, 0.0) == 1040.0
    assert (
        tuning.tune(
            None, tuning.Request(512, 512, "auto", tuple(REFERENCE), points_per_rank=840, ranks=2)
        ).points_per_pass
        == 16
    )
    assert (
        tuning.tune(
            None, tuning.Request(512, 512, "auto", tuple(REFERENCE), points_per_rank=840, ranks=1)
        ).points_per_pass
        == 64
    )
    assert (
        tuning.tune(
            None, tuning.Request(512, 512, "auto", tuple(REFERENCE), points_per_rank=10**6, ranks=2)
        ).points_per_pass
        == 64
    )


def test_the_finalists_measured_again_side_by_side_undo_a_lucky_moment_of_the_ladder(monkeypatch):
    """Passes of 16 points run at 1,000 points/s, of 64 at 950; the machine ran 20 % faster while the ladder
    measured 64.  Measured again taking turns, 16 wins, at the rate measured then."""
    calls = []

    def runs(make, setting, rng, seconds=0.1):
        calls.append(setting.points_per_pass)
        return {1: 800.0, 16: 1000.0, 64: 950.0}[setting.points_per_pass] * (1.2 if len(calls) == 3 else 1.0)

    monkeypatch.setattr(tuning, "_runs", runs)
    monkeypatch.setattr(tuning, "PASSES", (1, 16, 64))
    chosen = tuning.tune(None, tuning.Request(512, 512, "auto", tuple(REFERENCE)))
    assert (chosen.points_per_pass, chosen.points_per_second, chosen.tried) == (16, 1000.0, 3)
    assert calls[3:] == [64, 16, 1, 1, 16, 64]  # two turns, both ways
    assert "the fastest 3 again taking turns" in chosen.describe()


def test_every_rank_measures_and_a_setting_is_as_fast_as_the_ranks_mean(monkeypatch):
    """Rank 0 alone would take 64 points per pass, 16 after it; with rank 1's rates 1 is faster on the mean
    than 16, and 64 ran out of memory on rank 1, so it is out for both.  A rank past the budget ends the
    ladders for all."""
    monkeypatch.setattr(
        tuning, "_runs", lambda make, s, rng, seconds=0.1: {1: 800.0, 16: 1000.0, 64: 2000.0}[s.points_per_pass]
    )
    monkeypatch.setattr(tuning, "PASSES", (1, 16, 64))
    rank1 = {800.0: 900.0, 1000.0: 600.0, 2000.0: 0.0}
    seen = []

    def together(measure):
        rate, spent = measure()
        seen.append(rate)
        return [(rate, spent), (rank1[rate], spent)]

    chosen = tuning.tune(None, tuning.Request(512, 512, "auto", tuple(REFERENCE)), together=together)
    assert (chosen.points_per_pass, chosen.points_per_second, chosen.tried, chosen.again) == (1, 850.0, 3, 2)
    assert seen[:3] == [800.0, 1000.0, 2000.0]  # both ranks measured each setting of the ladder
    assert seen[3:] == [800.0, 1000.0, 1000.0, 800.0]  # the two that ran on both, again, taking turns
    rushed = tuning.tune(
        None,
        tuning.Request(2000, "auto", "auto", tuple(REFERENCE)),
        together=lambda measure: [measure(), (800.0, tuning.BUDGET + 1)],
    )
    assert rushed.tried == 1  # rank 1 was past the budget after the first setting: nothing more


class Raises(torch.nn.Module):
    """The digits MLP's first layer, raising ``error`` for a batch of ``at`` samples."""

    def __init__(self, error, at):
        super().__init__()
        self.net, self.error, self.at = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)), error, at

    def forward(self, x):
        if isinstance(x, torch.Tensor) and x.shape[0] == self.at:
            raise self.error
        return self.net(x)


OUT_OF_MEMORY = [
    torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
    RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 GB"),
    MemoryError(),
]


@pytest.mark.parametrize(
    "error", [*OUT_OF_MEMORY, ValueError("a bug in the model")], ids=["cuda", "cpu", "memoryerror", "bug"]
)
@pytest.mark.parametrize("at", [2, 64], ids=["checking the model", "evaluating"])
def test_out_of_memory_in_the_kernel_rules_a_setting_out_and_other_failures_end_the_measurement(error, at):
    """A real evaluator on a model that fails at batch 64, or already at its probe on 2 samples: the
    evaluator reports the failure as an EvaluationError caused by it, and out of memory only rules the
    setting out."""
    from landscape import directions as dirs
    from landscape.data import load_named
    from landscape.errors import EvaluationError
    from landscape.surface.evaluation import EvaluationConfig, Evaluator

    model = Raises(error, at)
    origin = dirs.origin_tensors(model, "weights")
    dx = dirs.random_direction(origin, "filter", "biasbn", torch.Generator().manual_seed(0))
    data = {"train": load_named("digits").train}

    def make(setting):
        ev = Evaluator(
            model,
            origin,
            dx,
            None,
            data,
            "crossentropy",
            EvaluationConfig(
                kernel=setting.kernel, batch_size=setting.batch_size, points_per_pass=setting.points_per_pass
            ),
        )
        ev.probe()
        return ev

    rng = np.random.default_rng(0)
    if isinstance(error, ValueError):
        with pytest.raises(
            EvaluationError,
            match=r"^measuring kernel reference, batch 64 with 1 point\(s\) per "
            r"pass for auto: .*a bug in the model",
        ):
            tuning._runs(make, Setting("reference", 64, 1), rng)
    else:
        assert tuning._runs(make, Setting("reference", 64, 1), rng) == 0.0
    if at == 64:
        assert tuning._runs(make, Setting("reference", 128, 1), rng) > 0.0  # another batch runs
