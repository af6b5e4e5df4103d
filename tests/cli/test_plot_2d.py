"""``landscape plot2d``'s command line (``cli/plot_2d.py``): every example its --help shows is a command the
parser takes, with values its parameters accept (the parameters themselves: tests/workflows)."""

from help_examples import check_examples

from landscape.cli import plot_2d


def test_every_example_in_its_help_is_a_valid_command():
    assert check_examples(plot_2d) >= 1
