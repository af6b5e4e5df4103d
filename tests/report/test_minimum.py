"""Which compared networks are not at a minimum, on scorecard runs written by hand: a training error above
1 % at a compared point (the matched weights too, where an arm has them), a stop rule not met; the
rescaling control is not compared (the final weights and the unmet rule alone: tests/report/test_scorecard.py)."""

from landscape.report.minimum import MINIMUM_ERROR, away


def scored(name, train_error, recipe="sgd", **more):
    return {"name": name, "recipe": recipe, "values": {"train_error": train_error}, **more}


def test_a_training_error_of_exactly_the_limit_is_at_a_minimum_and_above_it_is_not():
    assert MINIMUM_ERROR == 1.0
    runs = [scored("a", 1.0), scored("b", 1.01), scored("c", 0.0), scored("d", 6.0)]
    assert away(runs) == [
        ("b", "train error 1.01 % at its final weights"),
        ("d", "train error 6.00 % at its final weights"),
    ]


def test_an_arm_compared_at_matched_loss_is_judged_at_both_points_and_each_run_listed_once():
    runs = [scored("a", 0.5), scored("b", 0.0), scored("c", 0.0, recipe="adam")]
    runs[0]["values"]["train_error_matched"] = 7.5  # still descending where the arm compares it
    runs[1]["values"]["train_error_matched"] = 0.2
    runs[1]["minimum"] = {"rule": "train loss <= 0.01", "reached": False}
    runs[2]["values"]["train_error_matched"] = 9.0  # adam: measured there too, judged there
    assert away(runs) == [
        ("a", "train error 7.50 % at its matched loss"),
        ("b", "its training ended before its rule (train loss <= 0.01)"),
        ("c", "train error 9.00 % at its matched loss"),
    ]
    runs[0]["values"]["train_error"] = 2.0  # both points: one entry, both reasons
    assert away(runs)[0] == ("a", "train error 7.50 % at its matched loss; train error 2.00 % at its final weights")


def test_the_rescaling_control_and_a_met_rule_are_not_reasons():
    control = scored("copy", 40.0, recipe="rescaled", control=True)
    met = scored("a", 0.0, minimum={"rule": "train loss <= 0.01", "reached": True})
    assert away([met, control]) == []
