"""Which networks a report covers: a trainer's manifest (finished runs only) or a hand-written CSV."""

import os

import pytest

from landscape.errors import InputError
from landscape.io import run_files
from landscape.report.runs import describe, read_runs
from landscape.train import checkpoints as files
from landscape.train.sweep import configurations, write_manifest


def sweep(tmp_path, finished=((16, 0), (16, 1), (256, 0))):
    out = str(tmp_path / "sweep")
    configs = configurations(["sgd"], [16, 256], [0, 1])
    for c in configs:
        folder = os.path.join(out, c.name)
        os.makedirs(folder)
        done = (c.batch_size, c.seed) in finished
        run_files.write_run(
            folder,
            {
                "done": done,
                "identity": {
                    "model": "digits_mlp",
                    "dataset": "digits",
                    "recipe": c.recipe,
                    "batch_size": c.batch_size,
                    "seed": c.seed,
                    "epochs": 3,
                },
                "metrics": {"test_acc": 90.0},
                "epoch": 3 if done else 1,
            },
        )
        if done:
            open(os.path.join(folder, files.FINAL), "wb").close()
    write_manifest(out, configs, 3, {})
    return out


@pytest.mark.parametrize("form", ["folder", "manifest.json", "manifest.csv"])
def test_a_trainer_manifest_gives_its_finished_runs(tmp_path, form):
    out = sweep(tmp_path)
    runs, skipped = read_runs(out if form == "folder" else os.path.join(out, form))
    assert [(r.name, r.batch_size, r.seed, r.model, r.dataset) for r in runs] == [
        ("sgd_b16_s0", 16, 0, "digits_mlp", "digits"),
        ("sgd_b16_s1", 16, 1, "digits_mlp", "digits"),
        ("sgd_b256_s0", 256, 0, "digits_mlp", "digits"),
    ]
    assert skipped == ["sgd_b256_s1"]
    assert all(os.path.isabs(r.checkpoint) and r.checkpoint.endswith("final.pt") for r in runs)
    assert describe(runs) == "3 runs: recipe sgd, batch sizes 16, 256, seeds 0, 1"


def test_a_hand_written_csv_with_relative_paths(tmp_path):
    (tmp_path / "nets").mkdir()
    for name in ("a.pt", "b.pt"):
        (tmp_path / "nets" / name).write_bytes(b"")
    (tmp_path / "list.csv").write_text("checkpoint,batch_size,seed,model\nnets/b.pt,512,1,vgg9\nnets/a.pt,128,0,\n")
    runs, skipped = read_runs(str(tmp_path / "list.csv"))
    assert [(r.name, r.recipe, r.batch_size, r.model) for r in runs] == [
        ("sgd_b128_s0", "sgd", 128, None),
        ("sgd_b512_s1", "sgd", 512, "vgg9"),
    ]
    assert runs[0].checkpoint == str(tmp_path / "nets" / "a.pt") and skipped == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("path,batch_size,seed\nx.pt,1,0\n", "has no checkpoint column"),
        ("checkpoint,batch_size,seed\nx.pt,big,0\n", "line 2: batch_size='big': expected a whole number"),
        ("checkpoint,batch_size,seed\nx.pt,0,0\n", "line 2: batch_size='0': expected a whole number from 1 to"),
        ("checkpoint,batch_size,seed\nx.pt,-5,0\n", "line 2: batch_size='-5': expected a whole number from 1"),
        ("checkpoint,batch_size,seed\nx.pt,16.5,0\n", "line 2: batch_size='16.5': expected a whole number"),
        ("checkpoint,batch_size,seed\nx.pt,16,1e300\n", "line 2: seed='1e300': expected a whole number from 0"),
        ("checkpoint,batch_size,seed\nx.pt,16,99999999999999999999\n", "seed='99999999999999999999': expected"),
        ("checkpoint,batch_size,seed,recipe\nx.pt,16,0,a/b\n", "line 2: recipe='a/b': expected a name of letters"),
        ("checkpoint,batch_size,seed\nmissing.pt,16,0\n", "the checkpoint of sgd_b16_s0"),
        ("checkpoint,batch_size,seed\nx.pt,16,0\nx.pt,16,0\n", "run 'sgd_b16_s0' is listed twice"),
        ("checkpoint,batch_size,seed\n", "has its columns but no row"),
        ("checkpoint,batch_size,seed,run\nx.pt,16,0,../escape\n", "run='../escape': expected a name of letters"),
        ("checkpoint,batch_size,seed,run\nx.pt,16,0,/tmp/evil\n", "run='/tmp/evil': expected a name"),
        ("checkpoint,batch_size,seed\nsub,16,0\n", "is a folder; expected a checkpoint file"),
    ],
)
def test_bad_lists_are_refused_with_the_line(tmp_path, text, message):
    (tmp_path / "x.pt").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    (tmp_path / "list.csv").write_text(text)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        read_runs(str(tmp_path / "list.csv"))


def test_a_spreadsheet_s_csv_and_a_file_that_is_no_manifest(tmp_path):
    (tmp_path / "x.pt").write_bytes(b"")
    (tmp_path / "excel.csv").write_bytes("\ufeffcheckpoint,batch_size,seed\nx.pt,16,0\n".encode("utf-8"))
    runs, _ = read_runs(str(tmp_path / "excel.csv"))  # a byte-order mark, as Excel writes
    assert runs[0].name == "sgd_b16_s0"
    (tmp_path / "weights.pt").write_bytes(bytes(range(256)) * 4)  # the checkpoint given by mistake
    with pytest.raises(InputError, match="is not a text file"):
        read_runs(str(tmp_path / "weights.pt"))


def test_no_manifest_and_no_finished_run(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_runs(str(tmp_path / "nothing.json"))
    out = sweep(tmp_path, finished=())
    with pytest.raises(InputError, match=r"lists no finished run \(4 unfinished\)"):
        read_runs(out)


def test_a_run_name_in_a_hand_edited_manifest_json_is_checked_as_a_csv_s(tmp_path):
    """The name becomes out/runs/<name>/: from a sweep's manifest too, never a path out of it."""
    import json

    out = sweep(tmp_path / "a")
    manifest = os.path.join(out, "manifest.json")
    with open(manifest) as handle:
        record = json.load(handle)
    record["runs"][0]["run"] = "../../elsewhere"
    with open(manifest, "w") as handle:
        json.dump(record, handle)
    os.makedirs(tmp_path / "elsewhere")
    open(tmp_path / "elsewhere" / files.FINAL, "wb").close()  # a finished run where the name leads
    with pytest.raises(InputError, match=r"run='../../elsewhere': expected a name of letters"):
        read_runs(manifest)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("batch_size", -5, "batch_size=-5: expected a whole number from 1 to 2147483647"),
        ("batch_size", 16.5, "batch_size=16.5: expected a whole number"),
        ("batch_size", True, "batch_size=True: expected a whole number"),
        ("seed", 1e300, "seed=1e+300: expected a whole number from 0 to 9223372036854775807"),
        ("seed", "0x1", "seed='0x1': expected a whole number"),
        ("recipe", "../up", "recipe='../up': expected a name of letters"),
        ("test_error", "lots", "test_error='lots': expected a number"),
    ],
)
def test_edited_numbers_and_names_in_a_sweep_s_manifest_are_refused_with_the_run(tmp_path, key, value, message):
    """Anyone may have edited manifest.json: a batch size or seed no run could have stops the reading."""
    import json

    out = sweep(tmp_path)
    manifest = os.path.join(out, "manifest.json")
    with open(manifest) as handle:
        record = json.load(handle)
    record["runs"][1][key] = value
    with open(manifest, "w") as handle:
        json.dump(record, handle)
    with pytest.raises(InputError, match=r"run 1 \(.*\): " + message.replace("+", r"\+")):
        read_runs(manifest)
    record["runs"][1][key] = {"batch_size": 16.0, "seed": "1"}.get(key, record["runs"][1][key])
    if key in ("batch_size", "seed"):  # JSON's 16.0 and a CSV's "1" are whole numbers
        with open(manifest, "w") as handle:
            json.dump(record, handle)
        assert read_runs(manifest)[0][1].batch_size == 16
