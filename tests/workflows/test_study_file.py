"""A study file's [rescale] and [mechanism] tables checked against the study they belong to, a study too
large to be meant, and the report's parameters a study implies: its plug-ins named, one thread unless
set, --force from the command line alone (the defaults, the merge and the top-level keys:
tests/workflows/test_study.py)."""

import os
import re

import pytest

from landscape.errors import ConfigError, UsageError
from landscape.workflows.study_file import MAX_NETWORKS, report_flags, report_params, report_threads, settings


def study(tmp_path, text: str, **given) -> dict:
    (tmp_path / "s.toml").write_text(text)
    return settings(str(tmp_path / "s.toml"), **given)


@pytest.mark.parametrize(
    "table, error, message",
    [
        ("[rescale]\nlayers = 1\n", UsageError, "[rescale] layers: unknown key; expected recipe, batch_sizes,"),
        ('[rescale]\nrecipe = "adam"\n', UsageError, "[rescale] recipe='adam': expected one of the study's recipes"),
        ("[rescale]\nbatch_sizes = [32]\n", UsageError, "[rescale] batch_sizes: 32: expected the study's batch sizes"),
        ("[rescale]\nseeds = [9]\n", UsageError, "[rescale] seeds: 9: expected the study's seeds [0, 1, 2, 3, 4,"),
        ("[rescale]\nalphas = [4.0, 0]\n", ConfigError, "alphas=0: expected positive factors ([rescale] alphas)"),
        ("[mechanism]\nlr = [0.1]\n", UsageError, "[mechanism] lr: unknown key; expected rates, batch_sizes,"),
        ("[mechanism]\nrates = []\n", UsageError, "[mechanism] rates=[]: expected a non-empty list"),
        ("[mechanism]\nrates = [0.4, -0.8]\n", ConfigError, "rates=-0.8: expected positive learning rates"),
        ('[mechanism]\nbatch_sizes = ["half"]\n', ConfigError, "batch_sizes='half': expected whole batch sizes or"),
        ("[mechanism]\nseeds = [-1]\n", ConfigError, "seeds=-1: expected whole seeds >= 0"),
        ("[mechanism]\nsteps = 0\n", ConfigError, "steps=0: expected a whole number of steps"),
    ],
)
def test_the_control_and_the_mechanism_are_checked_against_the_study(tmp_path, table, error, message):
    with pytest.raises(error, match="^" + re.escape(message)):
        study(tmp_path, table)


def test_a_mechanism_of_full_batches_and_a_control_within_the_study_are_taken(tmp_path):
    s = study(tmp_path, '[rescale]\nseeds = [7]\nalphas = [0.5]\n[mechanism]\nbatch_sizes = ["full", 64]\n')
    assert s["rescale"] == {"recipe": "naive", "batch_sizes": [16, 1024], "seeds": [7], "alphas": [0.5]}
    assert s["mechanism"]["batch_sizes"] == ["full", 64] and s["mechanism"]["rates"] == [0.4, 0.8, 1.6]


def test_a_study_of_more_networks_than_anyone_means_is_refused(tmp_path):
    # 2 recipes x 4 batch sizes x 1,249 seeds, and the mechanism's 1 rate x 1 batch size x 8 or 9 seeds
    assert MAX_NETWORKS == 10_000
    seeds = ", ".join(map(str, range(1249)))
    mechanism = '[mechanism]\nrates = [0.4]\nbatch_sizes = ["full"]\nseeds = [{}]\n'
    at_most = study(tmp_path, f"seeds = [{seeds}]\n" + mechanism.format("0, 1, 2, 3, 4, 5, 6, 7"))
    assert len(at_most["seeds"]) == 1249  # 9,992 + 8 = 10,000: taken
    with pytest.raises(UsageError, match=r"the study would train 10,001 networks .*expected at most 10,000; split"):
        study(tmp_path, f"seeds = [{seeds}]\n" + mechanism.format("0, 1, 2, 3, 4, 5, 6, 7, 8"))


def test_the_report_names_the_study_s_plug_ins_and_runs_one_thread_unless_told(tmp_path):
    s = study(tmp_path, '[train]\nmodel = "mymodels:mlp"\ndataset = "digits"\n[report]\nradius = 0.5\n', out="o")
    assert report_params(s) == {
        "manifest": os.path.join("o", "manifest.json"),
        "out": os.path.join("o", "report"),
        "figures": "study_out/figures",
        "name": "study",
        "model": "mymodels:mlp",  # a plug-in: the report imports it only when the user names it
        "radius": 0.5,
    }
    assert report_threads(s) == ["--threads", "1"] and "--force" not in report_flags(s)
    forced = study(tmp_path, "[report]\nthreads = 4\n", force=True)
    assert report_threads(forced) == [] and report_flags(forced)[-2:] == ["--threads=4", "--force"]
    assert "model" not in report_params(forced)  # a registry name: the runs' records say it


def test_report_config_takes_the_study_file_s_report_settings_under_those_given(tmp_path):
    """``landscape report --config STUDY.toml`` (report.sbatch): the file's [report] table, folders and
    name, then the flags given on top."""
    from landscape.workflows.report import settings_of

    (tmp_path / "s.toml").write_text(
        f'out = "{tmp_path / "o"}"\nname = "tiny"\n[train]\nmodel = "digits_mlp"\n'
        "[report]\nradius = 0.5\ndirections = 2\n"
    )
    p, _ = settings_of({"config": str(tmp_path / "s.toml"), "directions": 3})
    assert (p.manifest, p.out, p.name) == (
        str(tmp_path / "o" / "manifest.json"),
        str(tmp_path / "o" / "report"),
        "tiny",
    )
    assert (p.radius, p.directions) == (0.5, 3)
