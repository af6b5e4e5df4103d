"""``landscape demo``'s command line (``cli/demo.py``): every example its --help shows is a command the
parser takes, with values its parameters accept (the parameters themselves: tests/workflows)."""

from help_examples import check_examples

from landscape.cli import demo


def test_every_example_in_its_help_is_a_valid_command():
    assert check_examples(demo) >= 1
