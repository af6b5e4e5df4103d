"""Choosing the evaluation batch and the points per pass by measurement (``auto``).

Small models leave the hardware idle at the reference code's batch of 128, one point per pass;
large ones run out of memory with too much at once.  ``tune`` times the kernel itself on a
prefix of the data for a ladder of batch sizes and then of points per pass, measures the few
fastest again taking turns (a shared machine's speed drifts while the ladder climbs), and returns
the fastest of them.  Every rank measures at once, as the surface's ranks will share the machine's
caches and memory (``together``: the job passes its communicator's exchange; nothing here knows
about MPI or files).  The choice enters the values at the last bit, so the job records it in the
surface file, all ranks use rank 0's, and a resumed job reuses the file's instead of measuring again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..errors import EvaluationError

AUTO = "auto"
SAMPLES = 4096          # data prefix the measurement runs on (per data set)
BATCHES = (64, 128, 256, 512, 1024, 2048, 4096)
PASSES = (1, 2, 4, 8, 16, 32, 64)
SECONDS_PER_TRIAL = 0.1   # each setting: the best of three trials this long (a shared machine is noisy)
LONGEST_PASS = 0.5        # seconds: no setting whose single pass would take longer
BUDGET = 6.0              # seconds for the ladders
FINALISTS = 3             # the fastest settings of the ladders, measured again ...
FINAL_TURNS = 2           # ... this many times each, taking turns
COMPILED_BUDGET = 30.0    # with --compile: each setting tried is compiled first (seconds each)


@dataclass(frozen=True)
class Choice:
    """The setting chosen and what it was chosen on."""

    batch_size: int
    points_per_pass: int
    points_per_second: float     # a rank's, on the measured prefix of the data
    tried: int
    again: int = 0               # the fastest settings measured again, taking turns

    def describe(self, measured: bool = True, samples: int = SAMPLES) -> str:
        """``samples``: per set, those the measurement ran on (``SAMPLES``, or all of a smaller set)."""
        if not measured:
            return f"batch {self.batch_size}, {self.points_per_pass} point(s) per pass (as the surface file records)"
        settings = f"{self.tried} setting{'s' * (self.tried != 1)} measured"
        if self.points_per_second == 0.0:
            return (f"batch {self.batch_size}, {self.points_per_pass} point(s) per pass, the smallest: "
                    f"{'none of the ' + settings if self.tried > 1 else 'the one setting measured'} ran (out of "
                    "memory, or more points per pass than this model takes)")
        again = f", the fastest {self.again} again taking turns" if self.again > 1 else ""
        return (f"batch {self.batch_size}, {self.points_per_pass} point(s) per pass: the best for this surface of "
                f"{settings}{again} ({self.points_per_second:.1f} points/s a rank, every rank measuring at once on "
                f"up to {samples} samples per set)")


def _rate(evaluator, k: int, rng: np.random.Generator) -> float:
    """Points per second of ``evaluator`` on passes of ``k`` random points: the best of three trials."""
    points = rng.uniform(-0.5, 0.5, size=(k, 2))
    evaluator.evaluate(points)  # warm up: first-call allocations, lazy initialisation
    best = 0.0
    for _ in range(3):
        done, started = 0, time.perf_counter()
        while True:
            evaluator.evaluate(points)
            done += k
            spent = time.perf_counter() - started
            if spent >= SECONDS_PER_TRIAL:
                break
        best = max(best, done / spent)
    return best


def _runs(make, batch: int, k: int, rng) -> float:
    try:
        ev = make(batch, k)
        if k > 1 and ev.points_per_pass == 1:  # vmap cannot run this model: no point in more
            return 0.0
        return _rate(ev, k, rng)
    except (EvaluationError, RuntimeError, MemoryError) as exc:
        # the kernel reports a failure of the model as an EvaluationError caused by it
        if _out_of_memory(exc.__cause__ if isinstance(exc, EvaluationError) else exc):
            if torch.cuda.is_available():
                torch.cuda.empty_cache()  # what the setting too large left cached
            return 0.0
        if isinstance(exc, EvaluationError):  # the point is one the measurement drew, not one of the grid: say so
            raise EvaluationError(f"measuring batch {batch} with {k} point(s) per pass for auto: {exc}") from exc
        raise


def _out_of_memory(exc: BaseException | None) -> bool:
    """Whether ``exc`` says a setting needs more memory than there is: a ``MemoryError``, CUDA's out of
    memory, or the CPU allocator's refusal."""
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and (
        "out of memory" in text or "can't allocate memory" in text))


def over_surface(rate: float, k: int, points_per_rank: float) -> float:
    """Points per second that passes of ``k`` points measured at ``rate`` keep over a surface of
    ``points_per_rank`` points per rank (0: one rank, or not known).  Ranks wait for each other at the
    end of round 0 (a chunk each) and when the last chunks are taken, each for about half a chunk of
    ``k`` points at each, so a surface costs about one chunk more than its points: on 2 ranks a 41 x 41
    grid in passes of 64 points loses 7 %, in passes of 16, 2 %.  The waits at the end of each later round
    (every ``round_seconds``) are left out: a round holds many chunks."""
    return rate * points_per_rank / (points_per_rank + k) if points_per_rank > 0 else rate


def alone(measure):
    """``together`` for one process: its own result, as the results of a world of one."""
    return [measure()]


def tune(make, largest: int, batch_size, points_per_pass, seed: int = 0, budget: float = BUDGET,
         ladder: tuple[int, ...] = PASSES, points_per_rank: float = 0.0, together=alone, points: int = 0) -> Choice:
    """The fastest (batch size, points per pass) for a surface of ``points_per_rank`` points per rank
    (``over_surface``), trying only what is ``auto``.

    ``make(batch_size, points_per_pass)`` builds an evaluation kernel on a prefix of the data
    (``SAMPLES`` samples per set), whose longest pass holds ``largest`` samples (the batch sizes tried
    end there); a value given as an int is kept as it is.  ``ladder``: the points per pass to try
    (a kernel that runs a call's points one after another gains nothing between 1 and its largest call).
    ``together(measure)`` runs ``measure()`` on every rank at once and returns each rank's result (the
    job's is an agreed exchange: a failure on any rank ends all of them); a setting's rate is the ranks'
    mean (a faster rank takes more of the surface's chunks), 0 where it ran out of memory on any, and
    every step rests on values all ranks share, so every rank takes the same steps.  The ladders stop
    after ``budget`` seconds; then the ``FINALISTS`` fastest that ran are measured again, taking turns,
    once each and then, turn by turn, up to ``FINAL_TURNS`` times while within half as long, and the
    fastest of them then is chosen, its ``points_per_second`` as measured then.  ``points``: the
    surface's (0: not known); a pass never holds more, so none is measured with more (a points per pass
    given larger is measured as that many and kept as given), and the ladder stops there.
    """
    rng = np.random.default_rng(seed)
    batches = ([b for b in BATCHES if b < largest] + [largest]) if batch_size == AUTO else [batch_size]
    passes = [k for k in ladder if not points or k <= points] if points_per_pass == AUTO else [points_per_pass]
    deadline = time.perf_counter() + budget
    late = False  # whether a rank was past the deadline after the last measurement

    def measured(batch: int, k: int) -> float:
        nonlocal late
        most = min(k, points) if points else k
        reports = together(lambda: (_runs(make, batch, most, rng), time.perf_counter() > deadline))
        rates = [rate for rate, _ in reports]
        late = any(past for _, past in reports)
        return 0.0 if min(rates) == 0.0 else float(np.mean(rates))

    def weighed(item) -> float:
        (_, k), rate = item
        return over_surface(rate, k, points_per_rank)

    results: dict[tuple[int, int], float] = {}
    # the batch first, at the smallest number of points per pass; then the points per pass at the best
    # two batches (their best combination is rarely elsewhere), within the time budget
    for batch in batches:
        if results and late:
            break
        results[(batch, passes[0])] = measured(batch, passes[0])
    best_batches = sorted({b for b, _ in results}, key=lambda b: -results[(b, passes[0])])[:2]
    for batch in best_batches:
        for k in passes[1:]:
            fastest = max(results.values())
            if late or fastest == 0.0 or k / fastest > LONGEST_PASS:
                break  # out of time, or a pass of k points would take too long to measure or to be worth it
            results[(batch, k)] = rate = measured(batch, k)
            if rate == 0.0:  # out of memory: more points per pass would be worse
                break
    nothing = Choice(min(batches), passes[0], 0.0, len(results))  # the smallest, whose errors the job reports
    ran = [item for item in sorted(results.items(), key=weighed, reverse=True) if item[1] > 0.0]
    if not ran:
        return nothing
    finalists, again = dict(ran[:FINALISTS]), 0
    if len(finalists) > 1:
        # measured again side by side: the ladders' measurements lie seconds apart on a machine whose speed drifts
        deadline, late, again = time.perf_counter() + budget / 2, False, len(finalists)
        turns, out = dict.fromkeys(finalists, 0.0), set()  # out: ran out of memory on a rank, and stays out
        for turn in range(FINAL_TURNS):
            if late and turn > 0:  # a whole turn or none, so that each finalist is measured as often; the first always
                break
            for setting in [s for s in turns if s not in out][::1 if turn % 2 == 0 else -1]:
                rate = measured(*setting)
                turns[setting] = max(turns[setting], rate)
                if rate == 0.0:
                    out.add(setting)
        finalists = {setting: rate for setting, rate in turns.items() if setting not in out}
        if not finalists:
            return replace(nothing, again=again)
    (batch, k), rate = max(finalists.items(), key=weighed)
    return Choice(batch, k, rate, len(results), again)
