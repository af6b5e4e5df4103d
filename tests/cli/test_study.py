"""``landscape study``'s command line (``cli/study.py``): every example its --help shows is a command the
parser takes, with values its parameters accept (the parameters themselves: tests/workflows)."""

from help_examples import check_examples

from landscape.cli import study


def test_every_example_in_its_help_is_a_valid_command():
    assert check_examples(study) >= 1
