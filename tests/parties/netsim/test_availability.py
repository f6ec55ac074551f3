"""Availability: dropouts per round (binomial), on/off traces from CSV."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.netsim.availability import Availability, Traces, expected_missing

CSV = """party,online_from,online_until
0,0,12.5
0,30,inf
7,2.0,4.0
"""


def test_traces_from_csv() -> None:
    t = Traces.from_csv(CSV)
    assert t.parties == {0, 7}
    assert [t.online(0, x) for x in (0.0, 12.4, 12.5, 29.9, 30.0, 1e9)] == [True, True, False, False, True, True]
    assert [t.online(7, x) for x in (1.9, 2.0, 3.9, 4.0)] == [False, True, True, False]
    assert t.online(3, 5.0)  # not listed: always online


def test_trace_errors_name_the_row() -> None:
    with pytest.raises(ConfigurationError, match=r"trace CSV must have the header party,online_from,online_until"):
        Traces.from_csv("who,when\n1,2\n")
    with pytest.raises(ConfigurationError, match=r"trace row 2: party must be an integer"):
        Traces.from_csv("party,online_from,online_until\nx,0,1\n")
    with pytest.raises(ConfigurationError, match=r"party 1: online intervals overlap at 1.0"):
        Traces({1: ((0.0, 2.0), (1.0, 3.0))})
    with pytest.raises(ConfigurationError, match=r"party 1: online_from must be < online_until"):
        Traces({1: ((2.0, 2.0),)})


def test_dropouts_per_round_are_binomial() -> None:
    n, q = 20_000, 0.1
    away = Availability(q).away(n, rng=np.random.default_rng(5))
    mean, sd = expected_missing(n, q)
    assert abs(int(away.sum()) - mean) < 4 * sd


def test_no_dropout_draws_nothing_and_dropout_is_checked() -> None:
    rng = np.random.default_rng(6)
    state = rng.bit_generator.state
    assert not Availability().away(10, rng=rng).any() and rng.bit_generator.state == state
    with pytest.raises(ConfigurationError, match=r"Availability.dropout must be a real number in \[0, 1\)"):
        Availability(1.0)
