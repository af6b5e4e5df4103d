"""The plateau of λmax against its stability limit, on logs whose answer is known: a rise to the limit
and a hover there (the edge of stability), a plateau below it, and a rate phase after a drop."""

import math

import pytest

from landscape.io.run_files import write_log, write_run
from landscape.report.mechanism import AT_LIMIT, judged, plateau, sentence


def log(folder, values, lr=0.8, momentum=0.9, batch=4000, phases=None):
    """A run folder whose log holds λmax ``values`` every 50 steps at rate ``lr``."""
    folder.mkdir()
    rows = [
        {"epoch": i, "step": 50 * i, "lr": lr, "phase": (phases or {}).get(i, "rate 0"), "train_loss": 0.1,
         "train_acc": 90.0, "lambda_max": v}
        for i, v in enumerate(values)
    ]  # fmt: skip
    write_log(str(folder), rows)
    write_run(str(folder), {"identity": {"momentum": momentum, "nesterov": False, "batch_size": batch,
                                         "loss_name": "mse"}})  # fmt: skip
    return str(folder)


def test_a_rise_to_the_limit_and_a_hover_there_is_at_the_limit(tmp_path):
    limit = 2 * 1.9 / 0.8  # 4.75
    values = [0.5, 1.0, 2.0, 3.5, 4.6, 4.7, 4.8, 4.6, 4.7, 4.75]
    p = plateau(log(tmp_path / "gd", values))
    assert p.limit == pytest.approx(limit) and p.peak == 4.8
    assert p.rise_step == 200 and p.points == 6  # from the first value >= 0.9 x 4.8 = 4.32
    assert p.plateau == pytest.approx(4.7) and p.fraction == pytest.approx(4.7 / limit)
    assert p.verdict == "at the limit"


def test_a_plateau_well_below_the_limit_is_below_and_a_rate_before_a_drop_does_not_count(tmp_path):
    values = [0.5, 1.6, 1.5, 1.7, 1.6, 9.0, 9.0]  # the last two at another phase: left out
    phases = {5: "rate 1", 6: "rate 1"}
    p = plateau(log(tmp_path / "sgd", [*values[:5]], batch=256))
    assert p.verdict == "below the limit" and p.fraction == pytest.approx(1.6 / 4.75)
    q = plateau(log(tmp_path / "two", values, phases=phases))
    assert q.points == 2 and q.plateau == 9.0  # only the last phase's values


def test_words_and_the_sentence_follow_the_fractions(tmp_path):
    assert judged(1 + AT_LIMIT) == "at the limit" and judged(0.84) == "below the limit"
    assert judged(1.2) == "above the limit" and judged(math.nan) == "no λmax logged"
    at = plateau(log(tmp_path / "gd", [0.5, 4.7, 4.7, 4.7]))
    below = plateau(log(tmp_path / "sgd", [0.5, 1.6, 1.6], batch=256))
    said = sentence([at, below])
    assert said.startswith("λmax plateaus at the limit (batch 4000: η = 0.8, plateau 99%–99% of 2(1 + β)/η)")
    assert "below the limit (batch 256: η = 0.8, plateau 34%–34%" in said
    empty = tmp_path / "none"
    assert plateau(log(empty, [])).verdict == "no λmax logged"
