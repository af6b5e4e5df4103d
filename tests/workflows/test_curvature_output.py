"""What ``landscape curvature`` prints and writes, from stand-in measures and a counting Hessian: the
products each measure plans, counted by hand; the plan, timing, progress and end lines; the stop check
between measures; each measure's lines and record; the JSON file, incomplete after a stop (the command
end to end: tests/workflows/test_curvature.py)."""

import json
import math
import re
from types import SimpleNamespace

import pytest

from landscape.errors import Stopped
from landscape.parallel import stop
from landscape.parallel.comm import SerialComm
from landscape.workflows import curvature_output
from landscape.workflows.curvature_output import Ledger, between, lines, products_planned, recorded, write


class Counting:
    """A Hessian of the parameters ``names`` (sizes ``sizes``) that counts its products."""

    def __init__(self, names=("0.weight",), sizes=(3,)):
        self.names, self.sizes, self.dim, self.products = list(names), list(sizes), sum(sizes), 0

    def matvec(self, v):
        self.products += 1
        return v


def test_each_measure_plans_its_products_and_says_which_are_only_a_bound():
    # layers 0 (420 parameters), 2 (21) and 4 (1): Lanczos in each block, capped at 300 steps, plus one
    hessian = Counting(["0.weight", "0.bias", "2.weight", "2.bias", "4.scale"], [400, 20, 20, 1, 1])
    s = SimpleNamespace(k=2, which="both", layers=True, trace=10, trace_se=None, density_steps=50, density_runs=3,
                        layer_samples=5, relative_flatness=4)  # fmt: skip
    planned = ["eigenvalues", "trace", "density", "layers", "relative_flatness", "epsilon"]
    assert products_planned(s, planned, hessian) == {
        "eigenvalues": (2 * (300 + 2), True),  # both ends: 300 steps and the k residuals each
        "trace": (10, False),
        "density": (50 * 3, True),
        "layers": (5 + (300 + 1) + (21 + 1) + 1, True),
        "relative_flatness": (4, False),
        "epsilon": (0, False),  # gradients and losses only
    }
    small = SimpleNamespace(**{**vars(s), "which": "top", "trace_se": 0.1})
    assert products_planned(small, ["eigenvalues", "trace"], Counting(sizes=(7,))) == {
        "eigenvalues": (7 + 2, True),  # a Krylov space of 7 dimensions
        "trace": (10, True),  # may stop at its standard error
    }


def test_the_ledger_prints_the_plan_the_time_the_progress_and_each_measure_s_end(monkeypatch):
    monkeypatch.setattr(curvature_output, "PROGRESS_SECONDS", 0.0)  # a progress line after every product
    said, hessian = [], Counting()
    ledger = Ledger(hessian, {"trace": (3, False), "fisher_rao": (0, False)}, said.append)
    assert said == [
        "plan: 2 measure(s), 3 Hessian-vector products in all",
        "  trace               3 products",
        "  fisher_rao          no products",
    ]
    before = ledger.wrap(lambda: None)
    before()
    for _ in range(3):
        hessian.matvec([1.0])
    before()
    ledger.close()
    ledger.close()  # nothing twice
    assert re.fullmatch(r"time: about \d+ s at \S+ s per product \(3 products\)", said[3])
    assert [re.sub(r"\d+ s$", "T s", line) for line in said[4:6]] == [
        "  trace: 2 of 3 products, T s",
        "  trace: 3 of 3 products, T s",
    ]
    assert [re.sub(r"[\d.]+ s$", "T s", line) for line in said[6:]] == [
        "trace: 3 products in T s",
        "fisher_rao: 0 products in T s",
    ]
    assert hessian.products == 3


def test_a_stop_signal_between_measures_names_those_made(monkeypatch):
    signals = SimpleNamespace(received=None)
    monkeypatch.setattr(stop, "_installed", signals)
    next_measure = between(SerialComm(), ["eigenvalues", "trace", "density"], "c.json")
    next_measure()
    next_measure()
    signals.received = "SIGUSR1"
    with pytest.raises(Stopped) as stopped:
        next_measure()
    assert str(stopped.value) == (
        "stopped by SIGUSR1 after 2 of 3 measures (eigenvalues, trace written to c.json, marked incomplete); "
        "rerun the same command to measure again"
    )
    with pytest.raises(Stopped, match=r"after 0 of 1 measures \(none made\)"):
        between(SerialComm(), ["trace"], "c.json")()


def test_each_measure_s_lines_and_record():
    s = SimpleNamespace(k=2, trace=20, trace_se=0.05)
    top = SimpleNamespace(values=[3.0, 1.5], converged=False, note="300 steps", residuals=[1e-3, 2e-2], products=302,
                          record=lambda: {"values": [3.0, 1.5]})  # fmt: skip
    assert lines("eigenvalues", {"top": top}, s) == [
        "top 2 eigenvalue(s): 3, 1.5  [NOT converged (300 steps); max residual 2.0e-02; 302 products; "
        "Lanczos, Ghorbani et al. 2019]"
    ]
    met = SimpleNamespace(value=12.5, stderr=0.5, samples=8, record=lambda: {"value": 12.5})
    assert lines("trace", met, s) == [
        "trace 12.5 ± 0.5 (8 Rademacher vectors, stopped at a relative standard error of 0.05; Hutchinson 1990)"
    ]
    missed = SimpleNamespace(value=12.5, stderr=1.0, samples=20, record=lambda: {"value": 12.5})
    assert lines("trace", missed, s) == [
        "trace 12.5 ± 1 (20 Rademacher vectors; --trace_se 0.05 NOT met: relative standard error 0.08 at the last; "
        "Hutchinson 1990)"
    ]
    epsilon = SimpleNamespace(record=lambda: {"value": 0.2})
    report = recorded({"model_file": "m.pt"}, {"eigenvalues": {"top": top}, "trace": missed, "epsilon": epsilon}, s)
    assert report == {
        "model_file": "m.pt",
        "eigenvalues": {"top": {"values": [3.0, 1.5]}},
        "trace": {"value": 12.5, "se_met": False},
        "sharpness": {"epsilon": {"value": 0.2}},  # the sharpness measures together
    }


def test_the_file_says_which_measures_a_stop_left_out_and_only_rank_0_writes_it(tmp_path):
    out = tmp_path / "c.json"
    s = SimpleNamespace(model_file=str(tmp_path / "m.pt"), out=str(out))
    said = []
    made = {"trace": object()}
    assert write(s, SerialComm(), said.append, {"trace": {"value": math.nan}}, made, ["eigenvalues", "trace"]) == []
    assert json.loads(out.read_text()) == {
        "trace": {"value": None},  # NaN: null, strict JSON
        "complete": False,
        "not_made": ["eigenvalues"],
    }
    assert said == [f"wrote {out} (incomplete: eigenvalues not made)"]
    other = tmp_path / "other.json"
    write(SimpleNamespace(model_file="m.pt", out=str(other)), SimpleNamespace(rank=1), said.append, {}, made, ["trace"])
    assert not other.exists() and len(said) == 1
