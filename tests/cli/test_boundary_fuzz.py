"""Hostile files, crafted as an adversary would, given to every command that reads them.

Each surface, direction, checkpoint and manifest file below breaks one rule (external storage, a virtual
dataset, an external or soft link, a wrong shape, coordinates out of order, escapes in its text, JSON
nested 20,000 deep, a plug-in it names); every reading command runs on each, in this process.  Whatever
a command makes of it: no exit 1, no traceback, at most one line of error, nothing outside the test's
folder changed, no recorded plug-in imported, and no control character printed from the file."""

from __future__ import annotations

import hashlib
import json
import os

import h5py
import numpy as np
import pytest

from landscape.io import runs as run_records
from landscape.io import surface_file
from landscape.io.checkpoint import save
from landscape.models import build_model

from conftest import landscape

pytestmark = [pytest.mark.faults, pytest.mark.timeout(900)]

X1, X2, Y2 = np.linspace(-1, 1, 7), np.linspace(-1, 1, 5), np.linspace(-0.5, 0.5, 3)
ESCAPES = "\x1b[2J\x1b[1;1Hforged\rline\nnext\u202e"
DEEP = '{"a":' * 20_000 + "1" + "}" * 20_000
EVIL = (
    "import pathlib\npathlib.Path(__file__).with_name('IMPORTED').write_text('ran')\ndef make(**kw):\n    return None\n"
)


def digest(folder) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def surface(path, ndim: int = 2) -> str:
    """A valid surface file of train_loss and train_acc, every point done (``io.surface_file``)."""
    x, y = (X2, Y2) if ndim == 2 else (X1, None)
    names = ["train_loss", "train_acc"]
    surface_file.create(str(path), x, y, {n: {"long_name": n, "units": ""} for n in names}, {"xnorm": "filter"})
    points = [(a, b) for a in x for b in y] if y is not None else [(a, 0.0) for a in x]
    values = np.array([[1 + a * a + b * b, 90 - a] for a, b in points])
    with h5py.File(path, "r+") as f:
        surface_file.write_values(f, np.arange(len(points)), values, names)
        surface_file.mark_done(f, np.arange(len(points)))
    return str(path)


def replace_dataset(path, name, **create):
    with h5py.File(path, "r+") as f:
        del f[name]
        f.create_dataset(name, **create)


def hostile_surfaces(t, outside) -> dict[str, str]:
    victim_h5, victim_raw = outside / "victim.h5", outside / "secret.bin"
    with h5py.File(victim_h5, "w") as v:
        v["data"] = np.arange(15, dtype=np.float64).reshape(5, 3)
    victim_raw.write_bytes(np.arange(15, dtype=np.float64).tobytes())
    made = {}

    made["external_storage"] = surface(t / "external_storage.h5")
    replace_dataset(
        made["external_storage"], "train_loss", shape=(5, 3), dtype="f8", external=[(str(victim_raw), 0, 120)]
    )

    made["virtual"] = surface(t / "virtual.h5")
    layout = h5py.VirtualLayout(shape=(5, 3), dtype="f8")
    layout[:] = h5py.VirtualSource(str(victim_h5), "data", shape=(5, 3))
    with h5py.File(made["virtual"], "r+") as f:
        del f["train_acc"]
        f.create_virtual_dataset("train_acc", layout)

    made["external_link"] = surface(t / "external_link.h5")
    with h5py.File(made["external_link"], "r+") as f:
        f["test_loss"] = h5py.ExternalLink(str(victim_h5), "/data")

    made["soft_link"] = surface(t / "soft_link.h5")
    with h5py.File(made["soft_link"], "r+") as f:
        f["test_loss"] = h5py.SoftLink("/train_loss")

    made["wrong_shape"] = surface(t / "wrong_shape.h5")
    replace_dataset(made["wrong_shape"], "train_loss", data=np.ones((2, 2)))

    made["descending"] = surface(t / "descending.h5")
    with h5py.File(made["descending"], "r+") as f:
        f["xcoordinates"][...] = X2[::-1]

    made["duplicate_1d"] = surface(t / "duplicate_1d.h5", ndim=1)
    with h5py.File(made["duplicate_1d"], "r+") as f:
        f["xcoordinates"][...] = np.r_[X1[:3], X1[2:6]]

    made["escapes"] = surface(t / "escapes.h5")
    with h5py.File(made["escapes"], "r+") as f:
        run_records.append(f, "start", {"command_line": ESCAPES, "host": ESCAPES, "started": ESCAPES})
        f["train_loss"].attrs["long_name"] = ESCAPES

    made["deep_identity"] = surface(t / "deep_identity.h5")
    with h5py.File(made["deep_identity"], "r+") as f:
        f.attrs["identity"] = DEEP

    made["plugin_identity"] = surface(t / "plugin_identity.h5")
    with h5py.File(made["plugin_identity"], "r+") as f:
        f.attrs["identity"] = json.dumps({"model": f"{t}/evil.py:make", "model_args": '{"command": "true"}'})

    made["no_schema"] = surface(t / "no_schema.h5")
    with h5py.File(made["no_schema"], "r+") as f:
        del f.attrs["schema"]
        f["train_loss"][0, 0] = 123.0  # its checksums no longer match: verified all the same

    with h5py.File(t / "reference_huge.h5", "w") as f:  # the reference code's layout, coordinates at 1e308
        f["xcoordinates"] = np.array([-1e308, 0.0, 1e308])
        f["ycoordinates"] = np.array([-1e308, 0.0, 1e308])
        f["train_loss"] = np.ones((3, 3))
    made["reference_huge"] = str(t / "reference_huge.h5")

    os.mkfifo(t / "fifo.h5")
    made["fifo"] = str(t / "fifo.h5")
    return made


def hostile_directions(t, outside) -> dict[str, str]:
    from landscape.io import direction_file
    from landscape.surface.direction_set import DirectionConfig, draw

    model = build_model("digits_mlp")
    origin = {k: v.detach().double() for k, v in model.state_dict().items()}
    made = {}
    good = t / "good_directions.h5"
    direction_file.write(str(good), draw(DirectionConfig(), 2, origin, "weights", None, "digits_mlp", None))
    for name, change in (
        (
            "directions_external_link",
            lambda f: f.__setitem__("extra", h5py.ExternalLink(str(outside / "victim.h5"), "/data")),
        ),
        ("directions_wrong_shape", lambda f: _reshape_first(f)),
        ("directions_deep_json", lambda f: f.attrs.__setitem__("identity", DEEP)),
    ):
        path = t / f"{name}.h5"
        path.write_bytes(good.read_bytes())
        with h5py.File(path, "r+") as f:
            change(f)
        made[name] = str(path)
    return made


def _reshape_first(f):
    group = f["xdirection"] if "xdirection" in f else f[next(iter(f))]
    name = next(k for k in group if isinstance(group[k], h5py.Dataset))
    del group[name]
    group[name] = np.zeros((3, 3))


def hostile_checkpoints(t) -> dict[str, str]:
    model = build_model("digits_mlp")
    made = {}
    for name, identity in (
        ("checkpoint_plugin", {"model": f"{t}/evil.py:make", "dataset": "digits", "model_args": '{"command": "true"}'}),
        ("checkpoint_data_plugin", {"model": "digits_mlp", "dataset": f"{t}/evil.py:make"}),
        ("checkpoint_deep_json", {"model": "digits_mlp", "dataset": "digits", "model_args": DEEP}),
        ("checkpoint_escapes", {"model": "digits_mlp" + ESCAPES, "dataset": "digits"}),
    ):
        path = t / f"{name}.pt"
        save(model, str(path), {"meta": {"identity": identity}})
        made[name] = str(path)
    (t / "checkpoint_garbage.pt").write_bytes(b"PK\x03\x04" + os.urandom(200))
    made["checkpoint_garbage"] = str(t / "checkpoint_garbage.pt")
    return made


def hostile_manifests(t) -> dict[str, str]:
    header = (
        "run,recipe,batch_size,seed,epochs,steps,done,diverged,epoch,step,checkpoint,train_loss,train_error,"
        "test_loss,test_error,seconds,images_per_second,ranks\n"
    )
    made = {}
    rows = {
        "manifest_values": "b,sgd,-5,1e300,1,,True,False,1,1,b/final.pt,1,1,1,1,1,1,1\n",
        "manifest_names": "../../escape,sgd,16,0,1,,True,False,1,1,../../escape/final.pt,1,1,1,1,1,1,1\n",
        "manifest_escapes": f"{ESCAPES!s},sgd,16,0,1,,True,False,1,1,x/final.pt,1,1,1,1,1,1,1\n".replace("\n", " ", 1),
        "manifest_plugin": "p,sgd,16,0,1,,True,False,1,1,p/final.pt,1,1,1,1,1,1,1\n",
    }
    for name, row in rows.items():
        folder = t / name
        folder.mkdir()
        (folder / "manifest.csv").write_text(header + row)
        made[name] = str(folder / "manifest.csv")
    plugin_run = t / "manifest_plugin" / "p"
    plugin_run.mkdir()
    save(
        build_model("digits_mlp"),
        str(plugin_run / "final.pt"),
        {"meta": {"identity": {"model": f"{t}/evil.py:make", "dataset": "digits"}}},
    )
    (plugin_run / "run.json").write_text(json.dumps({"identity": {"model": f"{t}/evil.py:make", "dataset": "digits"}}))
    deep = t / "manifest_deep"
    deep.mkdir()
    (deep / "manifest.json").write_text('{"runs": ' + DEEP + "}")
    made["manifest_deep"] = str(deep)
    return made


def commands(kind: str, path: str, t) -> list[list]:
    out = t / "outputs"
    if kind == "surface":
        return [
            ["info", path],
            ["plot1d", path, "--out", out / "p1"],
            ["plot2d", path, "--out", out / "p2", "--dpi", "30"],
            ["export", path, "--vtk", "--html", "--out", out / "e"],
            ["surface", "--model", "digits_mlp", "--model_file", t / "mlp.pt", "--x=-1:1:5", "--y=-0.5:0.5:3",
             "--train_subset", "20", "--no_test", "--quiet", "--surf_file", path, "--dir_file", out / "d.h5"],
        ]  # fmt: skip
    if kind == "directions":
        return [
            ["info", path],
            ["surface", "--model", "digits_mlp", "--model_file", t / "mlp.pt", "--x=-1:1:3", "--y=-1:1:3",
             "--train_subset", "20", "--no_test", "--quiet", "--dir_file", path, "--surf_file", out / "s.h5"],
        ]  # fmt: skip
    if kind == "checkpoint":
        return [
            ["curvature", "--model_file", path, "--train_subset", "20", "--k", "1", "--out", out / "c.json"],
            ["rescale", "--model_file", path, "--alpha", "2", "--out", out / "r.pt"],
            ["surface", "--model_file", path, "--x=-1:1:3", "--train_subset", "20", "--no_test", "--quiet",
             "--surf_file", out / "s1.h5"],
            ["info", path],
        ]  # fmt: skip
    return [
        ["report", path, "--out", out / "report", "--figures", out / "figures"],
        ["plot-training", path, "--out", out / "training"],
    ]


def test_every_reading_command_on_every_hostile_file(tmp_path, capsys, one_thread):
    t, outside = tmp_path / "work", tmp_path / "outside"
    t.mkdir()
    outside.mkdir()
    (t / "outputs").mkdir()
    (t / "evil.py").write_text(EVIL)
    save(build_model("digits_mlp"), str(t / "mlp.pt"))
    cases = [
        *[("surface", name, path) for name, path in hostile_surfaces(t, outside).items()],
        *[("directions", name, path) for name, path in hostile_directions(t, outside).items()],
        *[("checkpoint", name, path) for name, path in hostile_checkpoints(t).items()],
        *[("manifest", name, path) for name, path in hostile_manifests(t).items()],
    ]
    before = digest(outside)
    failures, refused = [], 0
    for kind, name, path in cases:
        for argv in commands(kind, path, t):
            capsys.readouterr()
            code = landscape(*argv)
            out, err = capsys.readouterr()
            lines = err.strip().splitlines()
            what = f"{name}: landscape {' '.join(map(str, argv[:1]))} -> {code}: {err.strip()[:300]!r}"
            if code == 1 or "Traceback" in err or "internal error" in err:
                failures.append(what)
            elif code != 0 and len([x for x in lines if "warning" not in x]) != 1:
                failures.append(f"{what} ({len(lines)} lines)")
            elif any(c in out + err for c in "\x1b\r\u202e"):
                failures.append(f"{what} (a control character from the file printed)")
            refused += code != 0
    assert not failures, "\n".join(failures)
    assert digest(outside) == before, "a file outside the test's folder changed"
    assert not (t / "IMPORTED").exists(), "a plug-in a file names was imported"
    assert refused >= len(cases)  # most of them are refused; the rest were read safely
