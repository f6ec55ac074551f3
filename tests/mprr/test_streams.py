"""Tests for mprr.streams."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.streams import PartyStreams, run_seed_sequence


def test_party_stream_matches_spawned_seed_sequence() -> None:
    streams = PartyStreams(7, 5)
    expected = np.random.Generator(np.random.PCG64(np.random.SeedSequence(7).spawn(6)[3]))
    np.testing.assert_array_equal(streams.uniforms(4)[3], expected.random(4))


def test_uniforms_advance_like_sequential_calls() -> None:
    a, b = PartyStreams(1, 3), PartyStreams(1, 3)
    first, second = a.uniforms(2), a.uniforms(1)
    manual = np.array([[b.generator(i).random() for _ in range(3)] for i in range(3)])
    np.testing.assert_array_equal(np.hstack([first, second]), manual)


def test_same_seed_same_draws_and_parties_differ() -> None:
    u1, u2 = PartyStreams(3, 4).uniforms(5), PartyStreams(3, 4).uniforms(5)
    np.testing.assert_array_equal(u1, u2)
    assert len({tuple(row) for row in u1}) == 4


def test_subset_of_parties() -> None:
    s = PartyStreams(2, 4)
    sub = s.uniforms(1, parties=np.array([2]))
    assert sub.shape == (1, 1)
    np.testing.assert_array_equal(sub[0], PartyStreams(2, 4).uniforms(1)[2])


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_bad_seed(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="seed must be a non-negative integer"):
        run_seed_sequence(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -2, 2.0])
def test_bad_n(bad: object) -> None:
    with pytest.raises(ConfigurationError, match=r"n \(number of parties\) must be"):
        PartyStreams(1, bad)  # type: ignore[arg-type]


def test_bad_party_index() -> None:
    with pytest.raises(ConfigurationError, match=r"party must be in \[0, 2\)"):
        PartyStreams(1, 2).generator(2)
