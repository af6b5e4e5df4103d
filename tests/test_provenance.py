"""What a result file records about how it was made: digests of files and tensors (known SHA-256 answers,
a change of any name, dtype, shape or bit), the versions, the host, and the command line as a shell reads it."""

import hashlib
import os
import platform
import sys

import numpy as np
import torch

import landscape
from landscape.provenance import command_line, machine, sha256_file, sha256_tensors, versions

ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2's example: SHA-256("abc")
EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_a_files_digest_is_its_sha256_whatever_the_block_size(tmp_path):
    (tmp_path / "abc").write_bytes(b"abc")
    (tmp_path / "empty").write_bytes(b"")
    assert sha256_file(str(tmp_path / "abc")) == sha256_file(str(tmp_path / "abc"), block=1) == ABC
    assert sha256_file(str(tmp_path / "empty")) == EMPTY


def test_a_tensors_digest_is_its_name_dtype_shape_and_bytes_in_name_order():
    w = np.array([1.0, -2.0])
    by_hand = hashlib.sha256(b"a|<f8|(1,)|" + np.array([0.5]).tobytes() + b"w|<f8|(2,)|" + w.tobytes()).hexdigest()
    assert sha256_tensors({"w": w, "a": np.array([0.5])}) == by_hand  # sorted by name, not by insertion
    assert sha256_tensors({"a": torch.tensor([0.5], dtype=torch.float64), "w": torch.from_numpy(w)}) == by_hand


def test_any_change_of_name_dtype_shape_or_bit_changes_the_digest():
    base = {"w": np.zeros(4)}
    changed = [
        {"v": np.zeros(4)},
        {"w": np.zeros(4, dtype=np.float32)},
        {"w": np.zeros((2, 2))},  # the same bytes in another shape
        {"w": np.array([0.0, 0.0, 0.0, -0.0])},  # one sign bit
        {"w": np.zeros(4), "b": np.zeros(0)},
    ]
    digests = {sha256_tensors(t) for t in [base, *changed]}
    assert len(digests) == 1 + len(changed)
    strided = np.arange(8.0)[::2]  # a view: its values, not the buffer beneath
    assert sha256_tensors({"w": strided}) == sha256_tensors({"w": np.array([0.0, 2.0, 4.0, 6.0])})


def test_versions_and_machine_name_this_interpreter_and_host():
    found = versions()
    assert set(found) == {
        "landscape_version", "python_version", "torch_version", "numpy_version", "h5py_version", "hdf5_version"
    }  # fmt: skip
    assert found["landscape_version"] == landscape.__version__
    assert found["python_version"] == platform.python_version()
    assert found["torch_version"] == str(torch.__version__) and found["numpy_version"] == np.__version__
    host = machine()
    assert host["host"] == os.uname().nodename and host["cores"] == os.cpu_count() and host["cpu"]


def test_the_command_line_is_quoted_so_a_shell_runs_it_again(monkeypatch):
    argv = ["landscape", "surface", "--x=-1:1:51", "--surf_file", "my run/s.h5", "--note", "it's"]
    assert command_line(argv) == "landscape surface --x=-1:1:51 --surf_file 'my run/s.h5' --note 'it'\"'\"'s'"
    monkeypatch.setattr(sys, "argv", ["landscape", "info", "a b.h5"])
    assert command_line() == "landscape info 'a b.h5'"
