"""``landscape plot1d``'s command line (``cli/plot_1d.py``): every example its --help shows is a command the
parser takes, with values its parameters accept (the parameters themselves: tests/workflows)."""

from help_examples import check_examples

from landscape.cli import plot_1d


def test_every_example_in_its_help_is_a_valid_command():
    assert check_examples(plot_1d) >= 1
