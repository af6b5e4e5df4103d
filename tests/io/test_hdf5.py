"""Files from others that reach outside themselves are refused before anything in them is read or
written: external links, soft links, datasets with external storage (another file, a FIFO) and virtual
datasets, in surface and direction files, by every command that reads them."""

import os
import shutil

import h5py
import numpy as np
import pytest

from landscape.errors import InputError
from landscape.io import hdf5

ARGV = ["--model", "digits_mlp", "--x=-1:1:3", "--y=-1:1:3", "--quiet", "--train_subset", "64"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A real surface file and its direction file, computed once."""
    from conftest import landscape

    folder = tmp_path_factory.mktemp("made")
    assert landscape("surface", *ARGV, "--surf_file", folder / "s.h5") == 0
    return folder


def victim(folder) -> tuple:
    """A file outside the surface that must neither be read into a result nor written."""
    path = folder / "victim.bin"
    path.write_bytes(b"SECRET-" * 64)
    return path, path.read_bytes()


def replaced(path, name: str, how, *args) -> None:
    """``path``'s dataset ``name`` replaced by one that reaches outside the file."""
    with h5py.File(path, "r+") as f:
        shape, dtype = f[name].shape, f[name].dtype
        del f[name]
        how(f, name, shape, dtype, *args)


def external_storage(f, name, shape, dtype, target):
    f.create_dataset(name, shape=shape, dtype=dtype, external=[(str(target), 0, h5py.h5f.UNLIMITED)])


def virtual(f, name, shape, dtype, target):
    layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
    layout[...] = h5py.VirtualSource(str(target), name, shape=shape)
    f.create_virtual_dataset(name, layout, fillvalue=0)


def external_link(f, name, shape, dtype, target):
    f[name] = h5py.ExternalLink(str(target), "/" + name)


def soft_link(f, name, shape, dtype):
    f[name] = h5py.SoftLink("/xcoordinates")


HOSTILE = {
    "train_loss in external storage": ("train_loss", external_storage, "victim"),
    "runs in external storage": ("runs", external_storage, "victim"),
    "test_acc virtual": ("test_acc", virtual, "copy"),
    "train_acc an external link": ("train_acc", external_link, "copy"),
    "test_loss a soft link": ("test_loss", soft_link, None),
}


def hostile(made, folder, case):
    name, how, target = HOSTILE[case]
    path = folder / "hostile.h5"
    shutil.copy(made / "s.h5", path)
    shutil.copy(made / "s.h5", folder / "copy.h5")
    args = () if target is None else (folder / ("victim.bin" if target == "victim" else "copy.h5"),)
    replaced(path, name, how, *args)
    return path


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_reader_refuses_a_file_that_reaches_outside_itself(made, tmp_path, cli, case):
    """info, plot2d, export --html and --vtk, and a resumed surface: exit 3, one line naming the dataset,
    no output made, the victim file unchanged (never written into, never copied out)."""
    target, before = victim(tmp_path)
    path = hostile(made, tmp_path, case)
    copy_before = (tmp_path / "copy.h5").read_bytes()
    for program, flags in (
        ("info", [path]),
        ("plot2d", [path, "--out", tmp_path / "plot"]),
        ("export", [path, "--html", "--out", tmp_path / "page"]),
        ("export", [path, "--vtk", "--out", tmp_path / "grid"]),
        ("surface", [*ARGV, "--surf_file", path, "--dir_file", made / "s.directions.h5"]),
    ):
        done = cli(program, [str(f) for f in flags], cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 3, (program, done.stderr)
        assert len(lines) == 1 and f"{path} is refused: " in lines[0], (program, lines)
        assert HOSTILE[case][0] in lines[0] and "self-contained" in lines[0]
        assert "Traceback" not in done.stderr + done.stdout
    assert target.read_bytes() == before and (tmp_path / "copy.h5").read_bytes() == copy_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.h5", "hostile.h5", "victim.bin"]


def test_external_storage_on_a_fifo_is_refused_without_blocking(made, tmp_path, cli):
    """A dataset whose bytes live in a FIFO would block any read forever: refused on sight."""
    os.mkfifo(tmp_path / "pipe")
    path = tmp_path / "hostile.h5"
    shutil.copy(made / "s.h5", path)
    replaced(path, "train_loss", external_storage, tmp_path / "pipe")
    done = cli("info", [str(path)], cwd=tmp_path)  # pytest-timeout ends a hang
    assert done.returncode == 3 and "keeps its data in external files" in done.stderr and "pipe" in done.stderr


def test_a_direction_file_with_an_external_link_is_refused(made, tmp_path, cli):
    path = tmp_path / "d.h5"
    shutil.copy(made / "s.directions.h5", path)
    with h5py.File(path, "r+") as f:
        first = sorted(f["xdirection"])[0]
        del f["xdirection"][first]
        f["xdirection"][first] = h5py.ExternalLink(str(made / "s.directions.h5"), f"/xdirection/{first}")
    done = cli("info", [str(path)], cwd=tmp_path)
    assert done.returncode == 3
    assert f"/xdirection/{first} is an external link to {made / 's.directions.h5'}" in done.stderr
    done = cli("surface", [*ARGV, "--surf_file", str(tmp_path / "new.h5"), "--dir_file", str(path)], cwd=tmp_path)
    assert done.returncode == 3 and "is refused" in done.stderr and not (tmp_path / "new.h5").exists()


def test_a_fifo_or_a_folder_in_place_of_the_file_is_refused_before_opening(tmp_path):
    os.mkfifo(tmp_path / "pipe.h5")
    for path, found in ((tmp_path / "pipe.h5", "a FIFO"), (tmp_path, "a directory")):
        with pytest.raises(InputError, match=f"is {found}, not a regular file"):
            with hdf5.reading(str(path), "surface file"):
                pass


def test_a_self_contained_file_has_nothing_outside_it_even_with_hard_link_cycles(made, tmp_path):
    """Our own files pass; a group reachable twice (a hard-link cycle) is visited once."""
    for name in ("s.h5", "s.directions.h5"):
        with h5py.File(made / name, "r") as f:
            assert hdf5.outside_reference(f) is None
    with h5py.File(tmp_path / "cycle.h5", "w") as f:
        group = f.create_group("g")
        group["data"] = np.arange(3.0)
        group["again"] = group  # a hard link back to itself
    with h5py.File(tmp_path / "cycle.h5", "r") as f:
        assert hdf5.outside_reference(f) is None
