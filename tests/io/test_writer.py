"""Choosing the write path, and the order every write keeps: values and checksums on disk before done marks."""

import errno
import os

import numpy as np
import pytest

from landscape.errors import ConfigError, InputError, UsageError
from landscape.io import surface_file, writer
from landscape.parallel.comm import SerialComm


def test_auto_takes_mpio_only_with_parallel_hdf5_and_several_ranks(monkeypatch):
    monkeypatch.setattr(writer, "parallel_hdf5", lambda: True)
    assert writer.choose("auto", 1) == "gather" and writer.choose("auto", 4) == "mpio"
    monkeypatch.setattr(writer, "parallel_hdf5", lambda: False)
    assert writer.choose("auto", 4) == "gather" and writer.choose("gather", 4) == "gather"
    with pytest.raises(UsageError, match="io=mpio: this h5py was built without parallel HDF5"):
        writer.choose("mpio", 4)
    with pytest.raises(ConfigError, match="io=posix: expected one of auto, mpio, gather"):
        writer.choose("posix", 1)


def test_values_reach_the_disk_before_their_done_marks(tmp_path, monkeypatch):
    path = str(tmp_path / "s.h5")
    names = ["train_loss", "train_acc"]
    surface_file.create(path, np.arange(6.0), None, {n: {"long_name": n, "units": ""} for n in names}, {})
    seen = []
    real_sync = writer._sync

    def sync(file):  # what the file holds at the moment values are made durable
        real_sync(file)
        seen.append((file["done"][()].copy(), file["train_loss"][()].copy()))

    monkeypatch.setattr(writer, "_sync", sync)
    w = writer.open_writer("gather", SerialComm(), path, names)
    w.write_round(np.array([4, 1]), np.array([[4.0, 40.0], [1.0, 10.0]]))
    w.close()
    done_then, loss_then = seen[0]
    assert not done_then.any() and loss_then[1] == 1.0 and loss_then[4] == 4.0
    s = surface_file.read(path)  # checksums verified on read
    assert s.done.tolist() == [False, True, False, False, True, False]
    assert s.values["train_acc"][4] == 40.0


def test_a_refused_write_is_one_line_the_file_is_closed_and_the_points_done_before_stay(tmp_path, monkeypatch):
    path = str(tmp_path / "s.h5")
    names = ["train_loss", "train_acc"]
    surface_file.create(path, np.arange(6.0), None, {n: {"long_name": n, "units": ""} for n in names}, {})
    w = writer.open_writer("gather", SerialComm(), path, names)
    w.write_round(np.array([0]), np.array([[0.5, 50.0]]))

    def refuse(fd):  # the disk is full (or failing) when the next round is made durable
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writer.os, "fsync", refuse)
    with pytest.raises(InputError, match=rf"^surface file {path} cannot be written \(No space left on device\)$"):
        w.write_round(np.array([3]), np.array([[3.0, 30.0]]))
    assert w.file is None and w.datasets is None  # closed, its datasets first
    w.close()
    monkeypatch.undo()
    s = surface_file.read(path)
    assert s.done.tolist() == [True, False, False, False, False, False] and s.values["train_loss"][0] == 0.5
