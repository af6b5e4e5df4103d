"""How busy the machine is (``landscape/parallel/busy.py``); what a rank does with it:
tests/parallel/test_comm.py."""

import os

from landscape.parallel import busy


def tasks(folder, *states: str) -> str:
    """A fake ``/proc/self/task``: one thread per state letter."""
    for i, state in enumerate(states):
        (folder / str(100 + i)).mkdir(parents=True)
        (folder / str(100 + i) / "stat").write_text(f"{100 + i} (python (x)) {state} 1 2 3\n")
    return str(folder)


def test_other_programs_running_threads_are_the_kernel_s_count_less_this_process_and_its_sibling_ranks(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3\nprocs_running 4\n")
    assert busy.running(str(stat)) == 4
    one = tasks(tmp_path / "one", "R", "S", "S")  # the asking thread runs, the others sleep
    assert busy.others_running(1, str(stat), samples=3, interval=0, tasks=one) == 3
    assert busy.others_running(2, str(stat), samples=3, interval=0, tasks=one) == 2  # a sibling rank runs
    spinning = tasks(tmp_path / "spinning", "R", "R", "R")  # this process's pool, spinning down: ours
    assert busy.own_running(spinning) == 3 and busy.others_running(1, str(stat), 3, 0, spinning) == 1
    assert busy.own_running(str(tmp_path / "none")) == 1  # at least the asking thread
    assert busy.free_cores(2, 1, str(stat)) == 1  # at least one core per rank of ours


def test_a_moment_s_work_is_not_a_busy_machine_and_no_count_is_no_one(tmp_path, monkeypatch):
    counts = iter([5, 1, 5])  # the least of the readings: one of them saw nobody else
    monkeypatch.setattr(busy, "running", lambda path=busy.STAT: next(counts))
    assert busy.others_running(1, samples=3, interval=0, tasks=tasks(tmp_path / "t", "R")) == 0
    monkeypatch.undo()
    assert busy.running(str(tmp_path / "none")) is None and busy.others_running(1, str(tmp_path / "none")) == 0
    if os.path.exists(busy.STAT):
        assert busy.running() >= 1 and busy.own_running() >= 1  # this test is running
