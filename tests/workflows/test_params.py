"""One ``Params`` class per command: the command line, the Python API and the settings a result records
agree on every parameter's name, default and help, because all three are made from its fields."""

import dataclasses
import inspect
import json

import pytest

from landscape import api
from landscape.cli import curvature as curvature_cli
from landscape.cli import demo as demo_cli
from landscape.cli import export as export_cli
from landscape.cli import info as info_cli
from landscape.cli import plot_1d, plot_2d
from landscape.cli import plot_training as plot_training_cli
from landscape.cli import report as report_cli
from landscape.cli import rescale as rescale_cli
from landscape.cli import study as study_cli
from landscape.cli import surface as surface_cli
from landscape.cli import sweep as sweep_cli
from landscape.cli import train as train_cli
from landscape.cli.params import parsed
from landscape.errors import ConfigError, UsageError
from landscape.io import surface_file
from landscape.workflows import curvature, demo, export, info, plots, report, rescale, study, surface, sweep, train
from landscape.workflows.params import Params, option

COMMANDS = [  # (the API's function, the command line's parser, the parameters, a minimal command line)
    (api.info, info_cli.build_parser(), info.InfoParams, ["s.h5"]),
    (api.export, export_cli.build_parser(), export.ExportParams, ["s.h5", "--vtk"]),
    (api.rescale, rescale_cli.build_parser(), rescale.RescaleParams, ["--model_file", "m.pt", "--alpha", "2",
                                                                      "--out", "r.pt"]),
    (api.plot1d, plot_1d.build_parser(), plots.Plot1DParams, ["s.h5"]),
    (api.plot2d, plot_2d.build_parser(), plots.Plot2DParams, ["s.h5"]),
    (api.plot_training, plot_training_cli.build_parser(), plots.TrainingPlotParams, ["sweep"]),
    (api.demo, demo_cli.build_parser(), demo.DemoParams, []),
    (api.curvature, curvature_cli.build_parser(), curvature.CurvatureParams, ["--model_file", "m", "--out", "c"]),
    (api.report, report_cli.build_parser(), report.ReportParams, ["manifest.json", "--out", "r"]),
    (api.study, study_cli.build_parser(), study.StudyParams, ["--quick"]),
    (api.surface, surface_cli.build_parser(), surface.SurfaceParams, ["--model", "digits_mlp"]),
    (api.train, train_cli.build_parser(), train.TrainParams, ["--model", "digits_mlp", "--out", "run"]),
    (api.sweep, sweep_cli.build_parser(), sweep.SweepParams, ["--out", "s", "--batch_sizes", "16", "64"]),
]  # fmt: skip


@pytest.mark.parametrize("function, parser, cls, argv", COMMANDS, ids=[c[2].COMMAND for c in COMMANDS])
def test_the_command_line_the_api_and_the_record_agree(function, parser, cls, argv):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    signature = inspect.signature(function)
    assert set(signature.parameters) == {n for n, f in fields.items() if f.metadata["api"]}  # one name each
    for name, p in signature.parameters.items():  # (mpi: a flag of the command line alone)
        default = fields[name].default
        assert p.default is (inspect.Parameter.empty if default is dataclasses.MISSING else default) or (
            p.default == default
        ), name
        assert fields[name].metadata["help"] or fields[name].metadata["switches"], f"{name} has no help"
    text = " ".join(parser.format_help().split())
    for f in fields.values():  # every field has its flag and its help text on the command line
        if f.metadata["positional"] or not f.metadata["cli"]:  # an API-only parameter: an object
            continue
        flags = [s[0] for s in f.metadata["switches"]] or [f.metadata["flag"] or f"--{f.name}"]
        for flag in flags:
            assert f"{flag}" in text, flag
        words = " ".join((f.metadata["help"] or f.metadata["switches"][0][2]).split())[:40]
        assert words in text, (f.name, words)
    given = parsed(parser, argv)  # only what was typed: every other value is the field's default
    params = cls.of(given)
    record = params.record()
    assert set(record) == set(fields)
    for name, f in fields.items():
        if name not in given and f.default is not dataclasses.MISSING and name not in ("dpi",):
            assert record[name] == (list(f.default) if isinstance(f.default, tuple) else f.default), name


def test_an_unknown_or_missing_parameter_is_refused_by_name():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Toy(Params):
        COMMAND = "toy"
        files: tuple[str, ...] = option(help="files", positional=True)
        runs: int = option(5, "runs")

    assert Toy.of({"files": ("a",)}).runs == 5
    assert Toy.of({"files": ("a",), "runs": None}).runs == 5  # None: the default, as the API's keywords give it
    with pytest.raises(UsageError, match="colour: not a parameter of landscape toy; expected one of files, runs"):
        Toy.of({"files": ("a",), "colour": 1})
    with pytest.raises(ConfigError, match="files=None: expected a value"):
        Toy.of({})
    with pytest.raises(TypeError, match="mutable default"):
        option([1], "a list")


def test_values_are_checked_when_the_parameters_are_made():
    with pytest.raises(ConfigError, match="runs"):
        info.InfoParams.of({"files": ("s.h5",), "runs": -1})
    with pytest.raises(UsageError, match="nothing to export"):
        export.ExportParams.of({"surf_files": ("s.h5",)})
    with pytest.raises(ConfigError, match="dpi"):
        plots.Plot1DParams.of({"surf_files": ("s.h5",), "dpi": 10**6})
    assert plots.Plot1DParams.of({"surf_files": "s.h5", "style": "paper"}).dpi == 300  # the style's own
    assert plots.Plot2DParams.of({"surf_files": "s.h5", "kinds": ("contour", "contour")}).kinds == ("contour",)
    with pytest.raises(ConfigError, match=r"^nesterov='no': expected True or False$"):  # a switch from Python
        train.TrainParams.of({"model": "m", "out": "r", "nesterov": "no"})


def test_one_value_given_for_a_list_parameter_is_a_list_of_one():
    """``seeds=0``, ``recipes="sgd"``, ``milestones=0.5``: what a Python caller writes for one item."""
    swept = sweep.SweepParams.of({"out": "s", "recipes": "sgd", "seeds": 0, "batch_sizes": 32})
    assert (swept.recipes, swept.seeds, swept.batch_sizes) == (("sgd",), (0,), (32,))
    trained = train.TrainParams.of({"model": "m", "out": "r", "milestones": 0.5, "save_at_loss": [0.1, 0.01]})
    assert (trained.milestones, trained.save_at_loss) == ((0.5,), (0.1, 0.01))


def _recorded(cls, parser, argv: list[str]) -> dict:
    return cls.of(parsed(parser, argv)).record()


def test_each_output_file_records_its_command_s_parameters(tmp_path, cli, one_thread):
    """What a command's output file records as its settings is its ``Params.record()``: run.json, the
    sweep's manifest.json, the surface file's run record and the curvature's JSON (the scorecard's:
    tests/workflows/test_report.py; the study's card: tests/workflows/test_study.py)."""
    run, sweep_out = tmp_path / "run", tmp_path / "sweep"
    argv = ["--model", "digits_mlp", "--epochs", "1", "--out", str(run), "--threads", "1", "--quiet"]
    assert cli("train", argv).returncode == 0
    assert read_json(run / "run.json")["settings"] == _recorded(train.TrainParams, train_cli.build_parser(), argv)

    argv = ["--out", str(sweep_out), "--batch_sizes", "64", "--model", "digits_mlp", "--epochs", "1", "--quiet"]
    assert cli("sweep", argv).returncode == 0
    recorded = read_json(sweep_out / "manifest.json")["settings"]
    assert recorded == _recorded(sweep.SweepParams, sweep_cli.build_parser(), argv)
    assert read_json(sweep_out / "sgd_b64_s0" / "run.json")["settings"]["batch_size"] == 64  # each run its own

    final = str(run / "final.pt")
    argv = ["--model_file", final, "--x=-1:1:3", "--surf_file", str(tmp_path / "s.h5"), "--quiet"]
    assert cli("surface", argv).returncode == 0
    recorded = surface_file.recorded_runs(str(tmp_path / "s.h5"))[-1]["settings"]
    assert recorded == _recorded(surface.SurfaceParams, surface_cli.build_parser(), argv)

    argv = ["--model_file", final, "--out", str(tmp_path / "c.json"), "--k", "1", "--train_subset", "64"]
    assert cli("curvature", argv).returncode == 0
    recorded = read_json(tmp_path / "c.json")["settings"]
    from_checkpoint = {"model": "digits_mlp", "dataset": "digits", "num_classes": 10}  # what the run.pt records
    assert recorded == {**_recorded(curvature.CurvatureParams, curvature_cli.build_parser(), argv), **from_checkpoint}


def read_json(path) -> dict:
    return json.loads(path.read_text())
