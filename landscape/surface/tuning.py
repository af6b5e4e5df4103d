"""Choosing the kernel, the evaluation batch and the points per pass by measurement (``auto``).

Small models leave the hardware idle at the reference code's batch of 128, one point per pass; large
ones run out of memory with too much at once; and which kernel is fastest depends on the model and the
machine. ``tune`` is asked only for a surface long enough to be worth measuring (``surface.cost``;
a shorter one takes its settings from the model's shape), and times the kernels themselves on a prefix
of the data: first a ladder of batch sizes with the reference kernel, one point per pass, starting at
``Request.start`` (``cost.start_batch``; ``FIRST_BATCH``, the reference code's 128, where the model's
shape is unknown) and climbing each way while it pays; then, at the best batch, a ladder of points per pass for every
candidate kernel. The few fastest settings are measured again taking turns (a shared machine's speed
drifts while the ladders climb), and the fastest then is chosen, except that the reference kernel is
kept wherever it is within ``REFERENCE_MARGIN`` of the best (the simple path is the default).

Measuring costs time, so it is spent in proportion to the surface: after the first setting the budget
is ``SHARE`` of the surface's estimated time at that setting, at most ``BUDGET`` seconds.  The first
setting is always among those measured, so a choice is never one measured slower than the start.
Every rank measures at once, as the surface's ranks will share the machine's caches and memory
(``together``: the job passes its communicator's exchange; nothing here knows about MPI or files).
A setting's rate is the ranks' mean, 0 where it ran out of memory on any.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..errors import EvaluationError

AUTO = "auto"
SAMPLES = 4096  # data prefix the measurement runs on (per data set)
FIRST_BATCH = 128  # the first batch measured (or all of a smaller pass): the reference code's
BATCHES = (64, 128, 256, 512, 1024, 2048, 4096)
PASSES = (1, 2, 4, 8, 16, 32, 64)
PROBE_PASS = 8  # points per pass at which the other kernels are first measured
COMPILED_PASSES = (1, 8)  # compiled: a call holds up to 8 points, so only 1 and 8 are worth their compile time
SECONDS_PER_TRIAL = 0.1  # each setting: the best of three trials this long (a shared machine is noisy) ...
TRIALS_PER_BUDGET = 40  # ... or shorter, for a budget too small to hold that many trials of 0.1 s
LONGEST_PASS = 0.5  # seconds: no setting whose single pass would take longer
BUDGET = 6.0  # seconds for the ladders at most
COMPILED_BUDGET = 30.0  # with the compiled kernel: each setting tried is compiled first (seconds each)
SHARE = 0.02  # of the surface's estimated time, spent measuring
FINALISTS = 3  # the fastest settings of the ladders, measured again ...
FINAL_TURNS = 2  # ... this many times each, taking turns
REFERENCE_MARGIN = 1.1  # another kernel is chosen only when this much faster than the reference


@dataclass(frozen=True)
class Setting:
    kernel: str
    batch_size: int
    points_per_pass: int


@dataclass(frozen=True)
class Choice:
    """The setting chosen and what it was chosen on."""

    kernel: str
    batch_size: int
    points_per_pass: int
    points_per_second: float  # a rank's, on the measured prefix of the data
    tried: int
    again: int = 0  # the fastest settings measured again, taking turns
    budget: float = 0.0  # seconds the ladders could take

    def describe(self, samples: int = SAMPLES) -> str:
        setting = f"kernel {self.kernel}, batch {self.batch_size}, {self.points_per_pass} point(s) per pass"
        settings = f"{self.tried} setting{'s' * (self.tried != 1)} measured"
        if self.points_per_second == 0.0:
            return (
                f"{setting}, the first: {'none of the ' + settings if self.tried > 1 else 'the one setting measured'}"
                " ran (out of memory, or more points per pass than this model takes)"
            )
        again = f", the fastest {self.again} again taking turns" if self.again > 1 else ""
        return (
            f"{setting}: the best for this surface of {settings}{again} in a budget of {self.budget:.1f} s "
            f"({self.points_per_second:.1f} points/s a rank, every rank measuring at once on up to {samples} "
            "samples per set)"
        )


def _rate(evaluator, k: int, rng: np.random.Generator, seconds: float = SECONDS_PER_TRIAL) -> float:
    """Points per second of ``evaluator`` on passes of ``k`` random points: the best of three trials of
    ``seconds`` (each at least one pass), or one trial where the first pass alone took longer (a pass that
    long averages the noise out itself, and three would spend a small surface's budget on one setting)."""
    points = rng.uniform(-0.5, 0.5, size=(k, 2))
    started = time.perf_counter()
    evaluator.evaluate(points)  # warm up: first-call allocations, lazy initialisation, compilation
    trials = 1 if time.perf_counter() - started > seconds else 3
    best = 0.0
    for _ in range(trials):
        done, started = 0, time.perf_counter()
        while True:
            evaluator.evaluate(points)
            done += k
            spent = time.perf_counter() - started
            if spent >= seconds:
                break
        best = max(best, done / spent)
    return best


def _runs(make, setting: Setting, rng, seconds: float = SECONDS_PER_TRIAL) -> float:
    """The rate of ``setting``, 0 where it runs out of memory or its kernel cannot take several points."""
    try:
        ev = make(setting)
        if setting.points_per_pass > 1 and ev.points_per_pass == 1:
            return 0.0
        return _rate(ev, setting.points_per_pass, rng, seconds)
    except (EvaluationError, RuntimeError, MemoryError) as exc:
        # the kernel reports a failure of the model as an EvaluationError caused by it
        if _out_of_memory(exc.__cause__ if isinstance(exc, EvaluationError) else exc):
            if torch.cuda.is_available():
                torch.cuda.empty_cache()  # what the setting too large left cached
            return 0.0
        if isinstance(exc, EvaluationError):  # the point is one the measurement drew, not one of the grid: say so
            raise EvaluationError(
                f"measuring kernel {setting.kernel}, batch {setting.batch_size} with "
                f"{setting.points_per_pass} point(s) per pass for auto: {exc}"
            ) from exc
        raise


def _out_of_memory(exc: BaseException | None) -> bool:
    """Whether ``exc`` says a setting needs more memory than there is: a ``MemoryError``, CUDA's out of
    memory, or the CPU allocator's refusal."""
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)
    )


def over_surface(rate: float, k: int, points_per_rank: float) -> float:
    """Points per second that passes of ``k`` points measured at ``rate`` keep over a surface of
    ``points_per_rank`` points per rank (0: one rank, or not known).  Ranks wait for each other at the
    end of round 0 and when the last chunks are taken, each for about half a chunk of ``k`` points, so
    a surface costs about one chunk more than its points."""
    return rate * points_per_rank / (points_per_rank + k) if points_per_rank > 0 else rate


def alone(measure):
    """``together`` for one process: its own result, as the results of a world of one."""
    return [measure()]


@dataclass(frozen=True)
class Request:
    """What ``tune`` is asked for: the settings left ``auto`` (``batch_size``, ``points_per_pass``; ints
    are kept), the ``kernels`` to try (the reference first; one name: that kernel), the longest pass's
    samples (``largest``: the batch sizes tried end there), and the surface the choice is for: its
    ``points`` (0: not known; no pass is measured with more), ``points_per_rank`` on ``ranks`` ranks
    (``over_surface``), and ``scale``, the surface's samples per measured sample (a point of the surface
    takes about ``scale`` times a measured one), for the budget."""

    largest: int
    batch_size: int | str = AUTO
    points_per_pass: int | str = AUTO
    kernels: tuple[str, ...] = ("reference",)
    points: int = 0
    points_per_rank: float = 0.0
    ranks: int = 1
    scale: float = 1.0
    start: int = FIRST_BATCH  # the batch the ladder starts from (``cost.start_batch``)


def tune(make, request: Request, *, together=alone, seed: int = 0, budget: float | None = None) -> Choice:
    """The fastest (kernel, batch size, points per pass) for the surface ``request`` describes, trying
    only what is ``auto``.

    ``make(setting)`` builds an evaluator on a prefix of the data.  ``together(measure)`` runs
    ``measure()`` on every rank at once and returns each rank's result; every step rests on values all
    ranks share, so every rank takes the same steps.  ``budget``: the most seconds of measuring (default
    ``BUDGET``, ``COMPILED_BUDGET`` for the compiled kernel alone).
    """
    largest, batch_size, points_per_pass = request.largest, request.batch_size, request.points_per_pass
    kernels, points, points_per_rank = list(request.kernels), request.points, request.points_per_rank
    ranks, scale = request.ranks, request.scale
    rng = np.random.default_rng(seed)
    compiled = kernels == ["compiled"]
    ladder = COMPILED_PASSES if compiled else PASSES
    passes = (
        ([k for k in ladder if not points or k <= points] or [1])
        if points_per_pass == AUTO
        else [min(points_per_pass, points) if points else points_per_pass]
    )
    first = min(request.start, largest) if batch_size == AUTO else batch_size
    results: dict[Setting, float] = {}
    ceiling = budget if budget is not None else (COMPILED_BUDGET if compiled else BUDGET)
    allowed = limit = ceiling  # limit: seconds from the start after which a rank is late
    late, spent = False, 0.0  # spent: the most seconds any rank had spent after the last measurement
    started = time.perf_counter()

    def measured(setting: Setting) -> float:
        """The ranks' mean rate of ``setting``, 0 if it failed on any; ``late``: whether any rank is past
        the limit after it (every rank decides on the same values, so all take the same steps)."""
        nonlocal late, spent
        trial = min(SECONDS_PER_TRIAL, allowed / TRIALS_PER_BUDGET)
        reports = together(lambda: (_runs(make, setting, rng, trial), time.perf_counter() - started))
        rates = [rate for rate, _ in reports]
        spent = max(seconds for _, seconds in reports)
        late = spent > limit
        results[setting] = rate = 0.0 if min(rates) == 0.0 else float(np.mean(rates))
        return rate

    rate = measured(Setting(kernels[0], first, passes[0]))
    if rate > 0 and points_per_rank > 0:  # the budget: a share of the surface's estimated time at this setting
        allowed = limit = min(ceiling, SHARE * points_per_rank * scale / rate)
        late = spent > limit

    def too_long(setting: Setting) -> bool:
        """A pass of this many points would take too long to measure or to be worth it."""
        fastest = max(results.values(), default=0.0)
        return fastest == 0.0 or setting.points_per_pass / fastest > LONGEST_PASS

    def climb(settings: list[Setting], longest: bool = False, down: bool = False, after: float | None = None) -> None:
        """Measure along ``settings`` while in time and while each is at least as fast as the one before
        (the first as fast as ``after``, the rate of the setting the ladder leaves from); ``longest``: not
        past a pass too long (``too_long``); ``down``: past settings that ran out of memory until one runs
        (smaller batches)."""
        previous = after
        for setting in settings:
            if late or (longest and too_long(setting)):
                return
            rate = measured(setting)
            if rate == 0.0 and down and previous is None:
                continue
            if rate == 0.0 or (previous is not None and rate < previous):
                return
            previous = rate

    # the batch sizes with the reference kernel first (what pays most, and what a small surface's budget
    # should buy); then, at the best batch, the other kernels at a few points per pass; then the points
    # per pass of every kernel
    leader = Setting(kernels[0], first, passes[0])
    if batch_size == AUTO:
        above = sorted({b for b in (*BATCHES, largest) if first < b <= largest})
        below = [b for b in reversed(BATCHES) if b < first]
        if results[leader] > 0:
            climb([replace(leader, batch_size=b) for b in above], after=results[leader])
        climb([replace(leader, batch_size=b) for b in below], down=True, after=results[leader] or None)
    ran = {s: r for s, r in results.items() if r > 0}
    best_batch = max(ran, key=ran.get).batch_size if ran else first
    probe = max([k for k in passes if k <= PROBE_PASS] or passes[:1])
    for kernel in kernels[1:]:
        climb([Setting(kernel, best_batch, probe)], longest=True)
    for kernel in kernels:
        climb(
            [Setting(kernel, best_batch, k) for k in passes if Setting(kernel, best_batch, k) not in results],
            longest=True,
        )

    def weighed(setting: Setting, rate: float) -> float:
        return over_surface(rate, setting.points_per_pass, points_per_rank if ranks > 1 else 0.0)

    nothing = Choice(
        kernels[0], first, passes[0] if points_per_pass == AUTO else points_per_pass, 0.0, len(results), budget=allowed
    )
    ran = sorted(((s, r) for s, r in results.items() if r > 0), key=lambda item: weighed(*item), reverse=True)
    if not ran:
        return nothing
    finalists, again = dict(ran[:FINALISTS]), 0
    reference = next(((s, r) for s, r in ran if s.kernel == kernels[0]), None)
    if reference is not None:
        finalists.setdefault(*reference)  # the reference's best is always among them: it may be kept
    if len(finalists) > 1 and not late:
        # measured again side by side: the ladders' measurements lie seconds apart on a machine whose speed drifts
        limit, late, again = spent + allowed / 2, False, len(finalists)
        turns, out = dict.fromkeys(finalists, 0.0), set()  # out: ran out of memory on a rank, and stays out
        for turn in range(FINAL_TURNS):
            if late and turn > 0:  # whole turns, so that each finalist is measured as often; the first always
                break
            for setting in [s for s in turns if s not in out][:: 1 if turn % 2 == 0 else -1]:
                rate = measured(setting)
                turns[setting] = max(turns[setting], rate)
                if rate == 0.0:
                    out.add(setting)
        finalists = {setting: rate for setting, rate in turns.items() if setting not in out}
        if not finalists:
            return replace(nothing, again=again)
    best, rate = max(finalists.items(), key=lambda item: weighed(*item))
    simple = [(s, r) for s, r in finalists.items() if s.kernel == kernels[0]]
    if simple:
        plain, plain_rate = max(simple, key=lambda item: weighed(*item))
        if weighed(plain, plain_rate) * REFERENCE_MARGIN >= weighed(best, rate):
            best, rate = plain, plain_rate
    given = best.points_per_pass if points_per_pass == AUTO else points_per_pass  # measured as at most ``points``
    return Choice(best.kernel, best.batch_size, given, rate, len(results), again, allowed)
