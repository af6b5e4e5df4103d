"""The standard error of a Monte Carlo estimate, on draws whose answer is known."""

import math

from landscape.curvature.estimate import stderr


def test_the_standard_error_is_the_sample_deviation_over_the_root_of_the_draws():
    assert math.isclose(stderr([1.0, 2.0, 3.0]), 1.0 / math.sqrt(3))  # sample sd 1 (ddof 1)
    assert stderr([5.0, 5.0, 5.0, 5.0]) == 0.0
    assert math.isnan(stderr([4.0]))  # one draw: no spread to estimate
