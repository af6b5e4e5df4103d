"""The scheduler with a null communicator, and with ranks played by threads, and a writer that only
records: every point once, chunks of the grid, a stop signal honoured between passes, and work
shared so that no rank idles while another still has a long queue."""

import numpy as np
import pytest

from landscape.errors import CollectiveFailure, EvaluationError
from landscape.parallel.comm import SerialComm
from landscape.parallel.scheduler import run_points


class Recorder:
    quantities = ["a", "b"]

    def __init__(self):
        self.rounds = []

    def write_round(self, flat, values):
        self.rounds.append((np.array(flat), np.array(values)))


class Stop:
    def __init__(self, after: int):
        self.after, self.calls, self.received = after, 0, None


def kernel(points, calls=None, stop=None):
    if calls is not None:
        calls.append(len(points))
    if stop is not None:
        stop.calls += 1
        if stop.calls == stop.after:
            stop.received = "SIGTERM"
    return np.stack([points[:, 0] * 10, points[:, 1]], axis=1)


POINTS = np.stack([np.arange(20.0), np.zeros(20)], axis=1)


def test_every_point_to_do_is_evaluated_once_in_order_and_written_with_its_values():
    writer, todo = Recorder(), np.array([1, 2, 5, 7, 8, 13, 19])
    outcome = run_points(kernel, POINTS, todo, SerialComm(), writer, round_seconds=1e-9)
    flat = np.concatenate([r[0] for r in writer.rounds])
    assert flat.tolist() == todo.tolist()
    values = np.concatenate([r[1] for r in writer.rounds])
    assert np.array_equal(values[:, 0], todo * 10.0)
    assert outcome.computed == outcome.computed_here == 7 and outcome.stopped_by is None
    assert len(writer.rounds[0][0]) == 1  # round 0 times one point


def test_passes_are_chunks_of_the_whole_grid_whatever_is_left_to_do():
    calls, writer = [], Recorder()
    run_points(lambda p: kernel(p, calls), POINTS, np.arange(20), SerialComm(), writer, round_seconds=60, per_pass=4)
    assert calls == [4, 4, 4, 4, 4]  # chunks 0..4 of points 4c..4c+3
    seen, writer = [], Recorder()
    outcome = run_points(
        lambda p: (seen.append(p[:, 0].tolist()), kernel(p))[1],
        POINTS[:18],
        np.array([5, 6, 13, 17]),
        SerialComm(),
        writer,
        round_seconds=60,
        per_pass=4,
    )
    # a resumed grid: each point is evaluated with its chunk's companions, only the missing ones written
    assert seen == [[4.0, 5.0, 6.0, 7.0], [12.0, 13.0, 14.0, 15.0], [16.0, 17.0]]
    assert np.concatenate([r[0] for r in writer.rounds]).tolist() == [5, 6, 13, 17] and outcome.computed == 4
    values = np.concatenate([r[1] for r in writer.rounds])
    assert values[:, 0].tolist() == [50.0, 60.0, 130.0, 170.0]


def test_a_stop_signal_ends_the_run_after_the_pass_in_progress_is_written():
    writer, stop = Recorder(), Stop(after=6)
    outcome = run_points(
        lambda p: kernel(p, stop=stop), POINTS, np.arange(20), SerialComm(), writer, round_seconds=60, stop=stop
    )
    assert outcome.stopped_by == "SIGTERM" and outcome.computed == 6
    assert np.concatenate([r[0] for r in writer.rounds]).tolist() == list(range(6))


def test_a_failing_point_is_an_agreed_failure_naming_it():
    def fails(points):
        if points[0, 0] == 3:
            raise EvaluationError("evaluating the model at (x=3, y=0) failed: boom")
        return kernel(points)

    writer = Recorder()
    with pytest.raises(CollectiveFailure, match=r"x=3, y=0"):
        run_points(fails, POINTS, np.arange(20), SerialComm(), writer, round_seconds=60)
    assert np.concatenate([r[0] for r in writer.rounds]).tolist() == [0]  # only finished rounds were written


class ThreadRanks:
    """A world of ``size`` ranks played by threads: allgather meets at a barrier, one locked counter."""

    def __init__(self, size: int):
        import threading

        self.size, self.barrier, self.slots = size, threading.Barrier(size), [None] * size
        self.lock, self.next = threading.Lock(), 0

    def rank(self, r: int):
        world = self

        class Comm:
            rank, size, local_rank, local_size = r, world.size, r, world.size

            def allgather(self, value):
                world.slots[r] = value
                world.barrier.wait()
                out = list(world.slots)
                world.barrier.wait()
                return out

            def watch(self, signals, patience):
                pass

            def counter(self):
                class Counter:
                    def claim(self, n):
                        with world.lock:
                            start, world.next = world.next, world.next + n
                            return start

                    def free(self):
                        pass

                return Counter()

        return Comm()


def test_ranks_share_the_work_when_point_costs_vary_tenfold():
    """Half the grid costs 10 times the other half; with fixed blocks one rank would get all the
    expensive points.  Taking chunks from a shared counter, the wall time stays within 15 % of the
    total work divided by the ranks."""
    import threading
    import time

    costs = np.where(np.arange(60) < 30, 0.01, 0.1)
    points = np.stack([np.arange(60.0), np.zeros(60)], axis=1)

    def kernel(p):
        time.sleep(costs[int(p[0, 0])])
        return np.stack([p[:, 0], p[:, 1]], axis=1)

    world, writers, outcomes = ThreadRanks(2), [Recorder(), Recorder()], [None, None]

    def rank(r):
        outcomes[r] = run_points(kernel, points, np.arange(60), world.rank(r), writers[r], round_seconds=0.5)

    started = time.perf_counter()
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    written = sorted(np.concatenate([r[0] for w in writers for r in w.rounds]).tolist())
    assert written == list(range(60)) and outcomes[0].computed == 60
    ideal = costs.sum() / 2
    assert wall <= 1.15 * ideal, (wall, ideal)
    assert min(o.computed_here for o in outcomes) >= 20  # both ranks worked
