"""Which device a rank takes, from what the ranks of its node see: checked without GPUs or MPI."""

import pytest

from landscape.errors import ConfigError, InputError, UsageError
from landscape.parallel.devices import choose


def test_cpu_and_auto_without_a_gpu():
    assert choose("cpu", 0, [None], 4) == "cpu"
    assert choose("auto", 0, [None], 0) == "cpu"
    assert choose("auto", 1, [None, None], 2) == "cuda:1"


def test_ranks_that_see_the_same_gpus_take_one_each():
    shared = ["0,1,2,3"] * 4
    assert [choose("cuda", r, shared, 4) for r in range(4)] == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    with pytest.raises(UsageError, match="5 ranks on this node would share 4 GPUs"):
        choose("cuda", 4, ["0,1,2,3"] * 5, 4)
    assert choose("cuda", 4, ["0,1,2,3"] * 5, 4, allow_shared=True) == "cuda:0"


def test_slurm_binding_one_gpu_per_task_gives_each_rank_its_own():
    bound = ["0", "1", "2", "3"]  # --gpus-per-task=1: each task sees only its GPU, as device 0
    assert [choose("cuda", r, bound, 1) for r in range(4)] == ["cuda:0"] * 4


def test_an_explicit_index_and_bad_requests():
    assert choose("cuda:1", 0, ["0,1"], 2) == "cuda:1"
    with pytest.raises(UsageError, match="2 ranks on this node would share 1 GPU"):
        choose("cuda:1", 0, ["0,1", "0,1"], 2)
    with pytest.raises(InputError, match="device=cuda:2: this rank sees 2 CUDA devices; expected an index below 2"):
        choose("cuda:2", 0, ["0,1"], 2)
    with pytest.raises(
        InputError, match=r"device=cuda: no CUDA device is visible to this rank \(CUDA_VISIBLE_DEVICES=\)"
    ):
        choose("cuda", 0, [""], 0)
    with pytest.raises(ConfigError, match="device=gpu: expected auto, cpu, cuda or cuda:N"):
        choose("gpu", 0, [None], 1)
