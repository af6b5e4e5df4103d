"""torch.distributed for the trainer, in one process: a job of one rank starts no process group and its
collective is the identity; the all-reduce of a list of tensors (one flat buffer per dtype) gives each
tensor back in its own shape and counts its bytes, here in a one-rank gloo group on loopback.
(Several ranks, under mpiexec, are tested with the trainer: tests/train/test_job_mpi.py.)"""

import pytest
import torch
import torch.distributed as dist
from torch import nn

from landscape.parallel.comm import SerialComm
from landscape.parallel.distributed import Collective, TorchCollective, collective


@pytest.fixture
def group(monkeypatch):
    """A TorchCollective of this process alone, closed afterwards."""
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    made = TorchCollective(SerialComm(), "cpu")
    yield made
    made.close()
    assert not dist.is_initialized()


def test_one_rank_starts_no_process_group_and_changes_nothing():
    serial = collective(SerialComm(), "cpu")
    assert type(serial) is Collective and (serial.rank, serial.size) == (0, 1)
    assert not dist.is_initialized()
    model = nn.Linear(2, 1)
    assert serial.wrap(model) is model
    t = torch.tensor([1.5, -2.0])
    serial.sum_([t])
    serial.mean_([t])
    assert t.tolist() == [1.5, -2.0] and (serial.seconds, serial.bytes) == (0.0, 0)


def test_the_reduced_tensors_come_back_in_their_shapes_and_dtypes_with_their_bytes_counted(group):
    assert (group.backend, group.rank, group.size) == ("gloo", 0, 1)
    assert group.where.startswith("tcp://127.0.0.1:")
    a, b = torch.arange(6.0).view(2, 3), torch.tensor([7.0, 8.0])
    c = torch.arange(4, dtype=torch.float64)
    group.mean_([a, b, c])
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]] and b.tolist() == [7, 8] and c.tolist() == [0, 1, 2, 3]
    assert c.dtype == torch.float64
    assert group.bytes == 8 * 4 + 4 * 8  # one float32 buffer of 8, one float64 buffer of 4
    group.sum_([])
    assert group.bytes == 64


def test_a_wrapped_models_gradients_are_its_own_and_their_all_reduce_is_counted(group):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    wrapped = group.wrap(model)
    wrapped(torch.ones(4, 3)).sum().backward()
    assert model.weight.grad.tolist() == [[4.0, 4.0, 4.0]] and model.bias.grad.tolist() == [4.0]
    assert group.bytes == 4 * 4  # three weights and a bias, float32, through the timed hook
    assert group.seconds > 0
