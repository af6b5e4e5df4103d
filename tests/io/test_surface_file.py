"""The surface file read back: scales, units, provenance, done mask, checksums, and the row writer."""

import json

import h5py
import numpy as np
import pytest
import torch

from landscape.cli.surface import main
from landscape.errors import InputError
from landscape.io import surface_file
from landscape.io.direction_file import read as read_directions
from landscape.io.schema import point_checksums
from landscape.provenance import sha256_file, sha256_tensors

from conftest import landscape, mean_losses


@pytest.fixture(scope="module")
def surface(tmp_path_factory):
    from landscape.io.checkpoint import save
    from landscape.models import DigitsCNN

    tmp = tmp_path_factory.mktemp("schema")
    torch.manual_seed(3)
    save(DigitsCNN(), str(tmp / "cnn.pt"))
    argv = [
        "--model",
        "digits_cnn",
        "--model_file",
        str(tmp / "cnn.pt"),
        "--x=-1:1:5",
        "--y=0:2:3",
        "--seed",
        "7",
        "--surf_file",
        str(tmp / "s.h5"),
        "--quiet",
    ]
    assert main(argv) == 0
    return tmp


def test_coordinates_are_dimension_scales_of_every_quantity(surface):
    with h5py.File(surface / "s.h5") as f:
        assert list(f["xcoordinates"][()]) == [-1, -0.5, 0, 0.5, 1]
        assert list(f["ycoordinates"][()]) == [0, 1, 2]
        for name in ("train_loss", "train_acc", "test_loss", "test_acc", "done", "checksum"):
            assert f[name].shape == (5, 3)
            assert f[name].dims[0][0].name == "/xcoordinates"
            assert f[name].dims[1][0].name == "/ycoordinates"
        assert f["train_loss"].fillvalue != f["train_loss"].fillvalue  # NaN: never computed


def test_quantities_carry_long_names_and_units(surface):
    with h5py.File(surface / "s.h5") as f:
        assert f["train_loss"].attrs["units"] == "nats"  # cross-entropy, natural logarithm
        assert f["test_acc"].attrs["units"] == "%"
        assert f["test_acc"].attrs["long_name"].startswith("accuracy")
        assert "test data" in f["test_acc"].attrs["long_name"]
    assert surface_file.read(str(surface / "s.h5")).units["train_loss"] == "nats"


def test_provenance_attributes_and_run_records(surface):
    s = surface_file.read(str(surface / "s.h5"))
    a = s.attrs
    assert a["schema"] == "landscape.surface" and a["schema_version"] == 2
    assert a["model_file_sha256"] == sha256_file(str(surface / "cnn.pt"))
    assert a["dir_seed"] == 7 and a["xnorm"] == "filter" and a["xignore"] == "biasbn" and a["dir_type"] == "weights"
    assert a["dataset"] == "digits" and a["train_size"] == 1437 and a["test_size"] == 360
    assert json.loads(a["identity"])["directions_sha256"] == a["directions_sha256"]
    assert len(s.runs) == 1
    run = s.run
    assert run["ranks"] == 1 and run["points_computed"] == 15 and run["ended"] == "complete"
    assert run["command_line"].startswith("landscape surface --model digits_cnn")
    import landscape

    assert run["landscape_version"] == landscape.__version__ and run["torch_version"] == str(torch.__version__)
    assert run["numpy_version"] == np.__version__ and run["h5py_version"] == h5py.__version__
    assert run["cpu"] and run["host"]


def test_the_surface_knows_its_directions(surface):
    d = read_directions(str(surface / "s.directions.h5"))
    assert d.axes[0].seed == 7 and d.axes[0].norm == "filter"
    assert "features.0.weight" in d.x and "classifier.bias" in d.y  # keyed by parameter name
    digest = sha256_tensors({**d.x, **{f"y/{k}": v for k, v in d.y.items()}})
    with h5py.File(surface / "s.h5") as f:
        assert f.attrs["directions_sha256"] == digest


def test_centre_of_the_grid_is_exactly_the_trained_model(surface):
    from landscape.data import load_named
    from landscape.io.checkpoint import load_into, read_state_dict
    from landscape.models import DigitsCNN

    model = DigitsCNN()
    load_into(model, read_state_dict(str(surface / "cnn.pt")), "cnn.pt")
    model.eval()
    data = load_named("digits")
    s = surface_file.read(str(surface / "s.h5"))
    sets = {"train": data.train, **({"test": data.test} if "test_loss" in s.values else {})}
    assert s.values["train_loss"][2, 0] == mean_losses(model, sets)[0]  # x = 0, y = 0


def blank(path, shape=(4, 3)):
    x, y = np.arange(float(shape[0])), np.arange(float(shape[1]))
    surface_file.create(str(path), x, y, {"train_loss": {"long_name": "loss", "units": "nats"}}, {"k": "v"})
    return x, y


def written(path, flat, values):
    with h5py.File(path, "r+") as f:
        surface_file.write_values(f, flat, values, ["train_loss"])
        surface_file.mark_done(f, flat)


def test_any_value_is_a_result_once_done(tmp_path):
    path = tmp_path / "v.h5"
    x, y = blank(path)
    flat = np.array([0, 1, 2, 5, 6, 11])
    written(path, flat, np.array([[0.0], [-1.0], [np.nan], [np.inf], [-np.inf], [3.5]]))
    s = surface_file.read(str(path))
    assert list(np.flatnonzero(s.done)) == list(flat)
    got = s.values["train_loss"].reshape(-1)
    assert got[0] == 0 and got[1] == -1 and np.isnan(got[2]) and got[5] == np.inf and got[6] == -np.inf
    assert surface_file.open_for_resume(str(path), x, y, ["train_loss"], {"k": "v"}).sum() == 6


def test_checksums_depend_on_index_value_bits_and_are_never_zero():
    values = np.array([[1.0, 2.0], [1.0, 2.0], [np.nan, 0.0]])
    sums = point_checksums(np.array([0, 1, 2]), values)
    assert sums[0] != sums[1] and np.all(sums != 0)
    assert point_checksums(np.array([0]), np.array([[1.0, 2.0000000000000004]]))[0] != sums[0]
    assert (
        point_checksums(np.array([0]), np.array([[-0.0, 2.0]]))[0]
        != point_checksums(np.array([0]), np.array([[0.0, 2.0]]))[0]
    )


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda f: f["train_loss"].__setitem__((0, 1), 7.0), "1 of 3 computed points do not match their checksums"),
        (lambda f: f["done"].__setitem__((3, 2), 1), "1 of 4 computed points do not match their checksums"),
        (lambda f: f["done"].__setitem__((2, 2), 9), "done marks are neither 0 nor 1"),
        (lambda f: f["checksum"].__setitem__((0, 0), 12345), "do not match their checksums"),
        (lambda f: f["xcoordinates"].__setitem__(1, 9.0), "its xcoordinates differ"),
    ],
)
def test_damage_to_values_marks_or_checksums_is_refused_on_read_and_resume(tmp_path, damage, words):
    path = tmp_path / "d.h5"
    x, y = blank(path)
    written(path, np.array([0, 1, 2]), np.array([[0.5], [0.25], [0.125]]))
    with h5py.File(path, "r+") as f:
        damage(f)
    before = path.read_bytes()
    with pytest.raises(InputError, match="is damaged") as caught:
        surface_file.open_for_resume(str(path), x, y, ["train_loss"], {"k": "v"})
    assert words in str(caught.value)
    if "coordinates" not in words:
        with pytest.raises(InputError, match=words.split(" (")[0]):
            surface_file.read(str(path))
    assert path.read_bytes() == before


@pytest.mark.parametrize("edit", ["delete", "another schema", "garbage version", "version 1"])
def test_a_file_with_our_checksums_is_verified_whatever_its_attributes_say(tmp_path, edit, capsys):
    """Removing or editing the schema attributes does not make a file the reference code's: its checksums
    are still verified (a value changed behind them is found), and nothing raises an internal error."""
    path = tmp_path / "a.h5"
    blank(path)
    written(path, np.array([0, 1]), np.array([[0.5], [0.25]]))
    with h5py.File(path, "r+") as f:
        if edit == "delete":
            del f.attrs["schema"], f.attrs["schema_version"]
        elif edit == "another schema":
            f.attrs["schema"] = "something.else"
        else:
            f.attrs["schema_version"] = "two" if edit == "garbage version" else 1
    assert surface_file.read(str(path)).done.sum() == 2  # intact: read as ours
    with h5py.File(path, "r+") as f:
        f["train_loss"][0, 1] = 7.0
    with pytest.raises(InputError, match="1 of 2 computed points do not match their checksums"):
        surface_file.read(str(path))
    assert landscape("info", path) == 3 and "do not match their checksums" in capsys.readouterr().err


@pytest.mark.parametrize("x", [[0.0, -1.0, 1.0], [-1.0, 0.0, 0.0], [1.0, 0.0, -1.0]])
def test_coordinates_that_do_not_ascend_are_refused_in_every_kind_of_file(tmp_path, x, capsys):
    ours, reference = tmp_path / "ours.h5", tmp_path / "reference.h5"
    blank(ours, shape=(3, 3))
    with h5py.File(ours, "r+") as f:
        f["xcoordinates"][...] = x
    with h5py.File(reference, "w") as f:  # the reference code's: coordinates and values only
        f["xcoordinates"], f["ycoordinates"] = np.array(x), np.array([0.0, 1.0])
        f["train_loss"] = np.ones((3, 2))
    for path in (ours, reference):
        with pytest.raises(InputError, match="xcoordinates must be strictly ascending"):
            surface_file.read(str(path))
        assert landscape("plot2d", path) == 3
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "strictly ascending" in err[0], err


def test_a_truncated_file_is_called_damaged_not_locked(tmp_path, capsys):
    path = tmp_path / "t.h5"
    blank(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert landscape("plot2d", path) == 3
    err = capsys.readouterr().err.strip()
    assert "damaged" in err and "lock" not in err.replace("block", ""), err


def test_heap_damage_is_an_input_error(tmp_path, capsys):
    """Overwrite the bytes of the file's local heap (names of its objects): exit 3, one line."""
    path = tmp_path / "h.h5"
    blank(path)
    data = bytearray(path.read_bytes())
    at = data.find(b"HEAP")
    assert at > 0
    data[at + 8 : at + 64] = b"\xff" * 56
    path.write_bytes(bytes(data))
    assert landscape("plot2d", path) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "h.h5 is damaged" in err[0], err


def test_schema_1_files_are_read_but_not_resumed(tmp_path):
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:  # as landscape 0.1 wrote them
        f["xcoordinates"] = np.array([-1.0, 0.0, 1.0])
        f["train_loss"] = np.array([1.0, 0.5, np.nan])
        f["done"] = np.array([1, 1, 0], np.uint8)
        f.attrs.update(
            schema="landscape.surface",
            schema_version=1,
            identity="{}",
            runs=json.dumps([{"ranks": 2, "points_computed": 2}]),
        )
    s = surface_file.read(str(path))
    assert s.done.tolist() == [True, True, False] and s.run == {"ranks": 2, "points_computed": 2}
    from landscape.errors import MismatchError

    with pytest.raises(MismatchError, match="schema version 1"):
        surface_file.open_for_resume(str(path), np.array([-1.0, 0.0, 1.0]), None, ["train_loss"], {})


@pytest.mark.parametrize("shape", [(7,), (4, 5), (1, 9), (6, 1)])
def test_contiguous_slices_cover_each_point_once(shape):
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    flat = np.sort(rng.choice(n, size=n // 2 + 1, replace=False))
    target = np.zeros(shape)
    for index, rows in surface_file.contiguous_slices(flat, shape):
        target[index] += flat[rows] + 1
    expected = np.zeros(n)
    expected[flat] = flat + 1
    assert np.array_equal(target.reshape(-1), expected)


@pytest.mark.parametrize("shape", [(40,), (6, 7), (1, 30), (30, 1)])
def test_a_sole_writer_writes_whole_rows_to_the_same_file_as_pieces(tmp_path, shape):
    """Rounds of consecutive chunks, a resumed run's scattered points and a single point, each written
    over earlier values: whole rows (the gather writer's) and pieces (mpio's) leave the same bits."""
    rng = np.random.default_rng(1)
    n = int(np.prod(shape))
    coordinates = [np.arange(float(k)) for k in shape] + [None] * (2 - len(shape))
    rounds = [
        np.arange(0, n // 2),
        np.sort(rng.choice(n, size=3, replace=False)),
        np.array([n - 1]),
        np.arange(n // 3, n),
    ]
    files = {}
    for sole in (True, False):
        path = str(tmp_path / f"{sole}.h5")
        surface_file.create(
            path,
            *coordinates,
            {
                "train_loss": {"long_name": "loss", "units": "nats"},
                "train_acc": {"long_name": "accuracy", "units": "%"},
            },
            {"k": "v"},
        )
        with h5py.File(path, "r+") as f:
            for flat in rounds:
                values = rng.standard_normal((len(flat), 2)) if sole else files["values"].pop(0)
                if sole:
                    files.setdefault("given", []).append(values)
                surface_file.write_values(f, flat, values, ["train_loss", "train_acc"], sole_writer=sole)
                surface_file.mark_done(f, flat, sole_writer=sole)
        if sole:
            files["values"] = list(files["given"])
        files[sole] = surface_file.read(path)
    assert np.array_equal(files[True].done, files[False].done)
    assert files[True].done.sum() == len(np.unique(np.concatenate(rounds)))
    for name in ("train_loss", "train_acc"):
        assert np.array_equal(files[True].values[name], files[False].values[name], equal_nan=True)
    with h5py.File(tmp_path / "True.h5") as a, h5py.File(tmp_path / "False.h5") as b:
        assert np.array_equal(a["checksum"][()], b["checksum"][()]) and a["checksum"][()].any()
    last = rounds[-1]
    assert np.array_equal(files[True].values["train_loss"].reshape(-1)[last], files["given"][-1][:, 0])


def test_partial_files_of_dead_makers_are_removed_and_live_ones_kept(tmp_path):
    import os
    import subprocess
    import sys

    from landscape.io import atomic

    path = str(tmp_path / "s.h5")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = [f"{path}.partial-{atomic.HOST}-{dead.stdout.strip()}", f"{path}.partial-{dead.stdout.strip()}"]
    live = [f"{path}.partial-{atomic.HOST}-{os.getppid()}", f"{path}.partial-otherhost-{dead.stdout.strip()}"]
    for name in stale + live:
        open(name, "w").close()
    blank(tmp_path / "s.h5")
    assert sorted(str(p) for p in tmp_path.iterdir()) == sorted([path, *live])


def test_a_file_that_named_its_plug_in_from_its_folder_resumes_from_that_folder(tmp_path, monkeypatch, capsys):
    """Before plug-ins were recorded by their absolute path a file named ``--model oldnames_net:make`` as
    given: a resume from that folder continues it; from another folder the mismatch names both."""
    from conftest import begun_before

    (tmp_path / "oldnames_net.py").write_text(
        "from torch import nn\n\n\ndef make():\n    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10))\n"
    )
    monkeypatch.chdir(tmp_path)
    argv = ["surface", "--model", "oldnames_net:make", "--x=-1:1:3", "--no_test", "--surf_file", "s.h5", "--quiet"]
    assert landscape(*argv) == 0
    begun_before(tmp_path / "s.h5", "model", "oldnames_net:make")
    assert landscape(*argv) == 0, capsys.readouterr().err
    assert surface_file.read(str(tmp_path / "s.h5")).done.all()

    begun_before(tmp_path / "s.h5", "model", "oldnames_net:make")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    capsys.readouterr()
    code = landscape(*argv[:2], str(tmp_path / "oldnames_net.py:make"), *argv[3:-3], "--surf_file", "../s.h5")
    err = capsys.readouterr().err
    assert code == 4 and "model: file has 'oldnames_net:make', this run has" in err, err
