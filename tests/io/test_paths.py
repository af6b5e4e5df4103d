"""What a path names, checked before anything opens it: each kind of thing that is not a regular file
(missing, a dangling link, a folder, a FIFO, a device, a socket) is named in a one-line message."""

import os
import socket

import pytest

from landscape.errors import ConfigError, InputError
from landscape.io import paths
from landscape.io.paths import config_path, kind, output_path, read_text, readable_file


@pytest.fixture
def things(tmp_path):
    """One path of each kind in ``tmp_path``."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "nothing", tmp_path / "dangling")
    os.symlink(tmp_path / "file", tmp_path / "link")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        yield tmp_path


def test_each_kind_of_path_is_named(things):
    found = {name: kind(str(things / name)) for name in ("file", "folder", "fifo", "dangling", "link", "sock", "none")}
    assert found == {
        "file": "file",
        "folder": "directory",
        "fifo": "FIFO",
        "dangling": "dangling link",
        "link": "file",  # a link is what it leads to
        "sock": "socket",
        "none": "missing",
    }
    assert kind("/dev/null") == "device"


@pytest.mark.parametrize(
    "name, words",
    [
        ("none", "model file {t}/none does not exist"),
        ("dangling", "model file {t}/dangling is a symbolic link to {t}/nothing, which does not exist"),
        ("folder", "model file {t}/folder is a directory, not a regular file"),
        ("fifo", "model file {t}/fifo is a FIFO, not a regular file"),  # opening it would block forever
        ("sock", "model file {t}/sock is a socket, not a regular file"),
    ],
)
def test_only_a_regular_file_is_read(things, name, words):
    assert readable_file(things / "link", "model file") == str(things / "link")
    with pytest.raises(InputError) as caught:
        readable_file(things / name, "model file")
    assert str(caught.value) == words.format(t=things)


def test_text_is_read_whole_within_its_limit_and_in_its_encoding(tmp_path):
    (tmp_path / "log").write_bytes(b"a\r\nb\n")
    assert read_text(tmp_path / "log", "log") == "a\r\nb\n"  # line ends kept as written
    with pytest.raises(InputError, match=f"^log {tmp_path}/log holds 5 bytes: expected at most 4 "):
        read_text(tmp_path / "log", "log", limit=4)
    (tmp_path / "bin").write_bytes(b"ok\xff")
    with pytest.raises(InputError) as caught:
        read_text(tmp_path / "bin", "manifest")
    assert str(caught.value) == f"manifest {tmp_path}/bin is not a text file (utf-8: invalid start byte at byte 2)"


def test_an_output_is_a_file_or_nothing_in_a_folder_that_exists(things):
    output_path(things / "new.h5", "surface file", "surf_file")
    output_path(things / "file", "surface file", "surf_file")
    output_path(things / "link", "surface file", "surf_file")  # replaced whole: renamed over the link
    refused = {
        "folder": "surf_file={t}/folder is a directory; expected a surface file or no file",
        "fifo": "surf_file={t}/fifo is a FIFO; expected a surface file or no file",
        "dangling": "surf_file={t}/dangling is a symbolic link to {t}/nothing, which does not exist; ",
        "none/s.h5": "surf_file={t}/none/s.h5: folder {t}/none does not exist; create it or choose another surf_file",
        "x" * 201: "surf_file={t}/" + "x" * 201 + ": the file name is 201 characters long; expected at most 200",
    }
    for name, words in refused.items():
        with pytest.raises(InputError) as caught:
            output_path(things / name, "surface file", "surf_file")
        assert str(caught.value).startswith(words.format(t=things)), name


def test_a_file_updated_in_place_is_never_reached_through_a_link(things):
    output_path(things / "file", "surface file", "surf_file", in_place=True)
    with pytest.raises(InputError) as caught:
        output_path(things / "link", "surface file", "surf_file", in_place=True)
    assert str(caught.value) == (
        f"surf_file={things}/link is a symbolic link to {things}/file; a surface file is updated in place, "
        "never through a link: give the file's own path as surf_file"
    )
    assert caught.value.spelled({"surf_file": "--surf_file"}).startswith(f"--surf_file={things}/link is")


def test_a_path_setting_is_a_non_empty_str_or_path_like(tmp_path):
    assert config_path(None, "model_file") is None
    assert config_path(tmp_path / "m.pt", "model_file") == str(tmp_path / "m.pt")
    with pytest.raises(ConfigError, match=r"^model_file=3: expected a path \(str or os.PathLike\), not int$"):
        config_path(3, "model_file")
    with pytest.raises(ConfigError, match="^model_file='': expected a path; an empty value is none$"):
        config_path("", "model_file")


def test_the_cache_folder_is_landscape_cache_else_the_user_s(monkeypatch):
    assert paths.cache_folder({"LANDSCAPE_CACHE": "/c"}) == "/c"
    monkeypatch.setenv("HOME", "/home/u")
    assert paths.cache_folder({}) == os.path.join("/home/u", ".cache", "landscape")
