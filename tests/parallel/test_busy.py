"""How busy the machine is (``landscape/parallel/busy.py``); what a rank does with it:
tests/parallel/test_comm.py."""

import os

from landscape.parallel import busy


def test_the_running_count_is_read_from_the_kernel_s_statistics(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3\nprocs_running 4\n")
    assert busy.running(str(stat)) == 4 and busy.others_running(1, str(stat), samples=3, interval=0) == 3
    assert busy.running(str(tmp_path / "none")) is None and busy.others_running(1, str(tmp_path / "none")) == 0
    assert busy.free_cores(2, 1, str(stat)) == 1  # at least one core per rank of ours
    if os.path.exists(busy.STAT):
        assert busy.running() >= 1  # this test is running
