"""The summary page: panels lettered in order, each from its own source (the scorecard, the runs' logs,
the interpolation record, the run folders), a panel without data left out, the verdict in a few lines."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from landscape.plotting.study.summary import A4, draw_summary, glance, write_summary

from synthetic_study import BATCHES, card, results, run_folders

LR, MOMENTUM = 0.05, 0.9


def logs(root: str, found: list[dict]) -> None:
    """Each run's checkpoint folder with a log.csv holding λmax every 100 steps, and its run.json."""
    for result in found:
        folder = os.path.join(root, "nets", result["run"]["name"])
        os.makedirs(folder, exist_ok=True)
        result["run"]["checkpoint"] = os.path.join(folder, "final.pt")
        rows = ["epoch,step,lr,train_loss,train_acc,test_loss,test_acc,lambda_max"]
        rows += [f"{k},{100 * k},{LR},0.1,99,0.5,80,{1 + k * result['run']['batch_size'] / 256}" for k in range(5)]
        with open(os.path.join(folder, "log.csv"), "w") as handle:
            handle.write("\n".join(rows) + "\n")
        with open(os.path.join(folder, "run.json"), "w") as handle:
            json.dump({"identity": {"momentum": MOMENTUM, "nesterov": False}}, handle)


def interpolation_record(path: str) -> None:
    alphas = np.linspace(-0.5, 1.5, 9)
    pairs = [
        {
            "recipe": "naive",
            "seed": s,
            "from": f"naive_b16_s{s}",
            "to": f"naive_b1024_s{s}",
            "batch_from": 16,
            "batch_to": 1024,
            "train_loss": list(0.01 + (alphas - 0.5) ** 2),
            "test_loss": list(0.3 + (alphas - 0.5) ** 2),
            "train_error": [None] * len(alphas),
            "test_error": [None] * len(alphas),
        }
        for s in (0, 1)
    ]
    with open(path, "w") as handle:
        json.dump({"alphas": list(alphas), "pairs": pairs}, handle)


def titles(fig) -> list[str]:
    return [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]


def test_every_panel_lettered_in_order_when_every_source_is_there(tmp_path):
    found = results(recipes=("naive", "linear"))
    run_folders(str(tmp_path), found)
    logs(str(tmp_path), found)
    stem = str(tmp_path / "card")
    interpolation_record(f"{stem}_interpolation.json")
    paths = write_summary(found, card(found), str(tmp_path), stem, formats=("png", "pdf"))
    assert paths == [f"{stem}_summary.png", f"{stem}_summary.pdf"]
    assert all(os.path.getsize(p) > 10_000 for p in paths)

    with open(f"{stem}_interpolation.json") as handle:
        fig = draw_summary(found, card(found), str(tmp_path), json.load(handle), "card")
    assert tuple(fig.get_size_inches()) == pytest.approx(A4)
    assert all(t.startswith("(") for t in titles(fig)), titles(fig)  # every titled panel has its letter
    letters = [t[:3] for t in titles(fig)]
    assert letters == ["(a)", "(b)", "(c)", "(d)", "(e)", "(f)", "(g)", "(h)"]
    named = dict(zip(letters, titles(fig)))
    assert "test error" in named["(a)"] and "λmax along training" in named["(b)"]
    assert "interpolation" in named["(c)"] and "λmax" in named["(d)"] and "adaptive sharpness" in named["(e)"]
    assert "λmax against the training loss (naive, linear" in named["(f)"] and "eigenvector" in named["(g)"]
    training = next(ax for ax in fig.axes if "along training" in ax.get_title(loc="left"))
    limits = {float(y) for line in training.lines if line.get_drawstyle() == "steps-pre" for y in line.get_ydata()}
    assert sorted(limits) == pytest.approx([2 * (1 + MOMENTUM) / LR])  # heavy-ball momentum's stability limit
    assert len([line for line in training.lines if line.get_drawstyle() != "steps-pre"]) == len(BATCHES)


def test_a_panel_without_data_is_left_out_and_the_letters_close_up(tmp_path):
    found = results()
    run_folders(str(tmp_path), found, hessian=False)  # no eigenvector surfaces, no logs, no interpolation
    fig = draw_summary(found, card(found), str(tmp_path), None, "card")
    letters = [t for t in titles(fig) if t.startswith("(")]
    assert [t[:3] for t in letters] == ["(a)", "(b)", "(c)", "(d)"]
    assert "test error" in letters[0] and "λmax" in letters[1] and "adaptive" in letters[2] and "verdict" in letters[3]
    assert not any("interpolation" in t or "along training" in t for t in titles(fig))


def test_the_verdict_in_a_few_lines_from_the_test_records(tmp_path):
    found = results(mismatch=True)
    scored = card(found)
    lines = glance(scored, "card")
    assert len(lines) <= 10 and all(len(line) <= 190 for line in lines)
    t = scored.test("naive", "lambda_max")
    text = "\n".join(lines)
    assert f"λmax* no difference shown (τ = {t.tau:+.2f}, Holm p = {t.p_holm:.2g}" in text
    assert "*: at matched train loss" in text and "the full verdict: card.md" in text
    assert "smallest p-value this design can reach" in text  # 3 seeds of 3 batch sizes: Holm over 6 blocks it


def test_a_non_monotone_difference_is_worded_as_the_verdict_words_it():
    found = results(batches=(16, 64, 256, 1024), seeds=(0, 1, 2, 3, 4))
    for r in found:
        bump = {16: 0.0, 64: 3.0, 256: 2.9, 1024: 0.1}[r["run"]["batch_size"]]
        r["values"]["lambda_max"] = bump + 0.01 * r["run"]["seed"]
    scored = card(found)
    f = scored.test("naive", "lambda_max", "friedman_within_seeds")
    assert scored.test("naive", "lambda_max").p_holm >= 0.05 and f.p_holm < 0.05
    text = "\n".join(glance(scored, "card"))
    assert f"λmax differs, not monotonically (Friedman Holm p = {f.p_holm:.2g})" in text
    assert "differs among batch sizes, not monotonically" in scored.verdict
