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


def test_draw_uniforms_generator_and_streams() -> None:
    from mprr.streams import draw_uniforms

    g = np.random.default_rng(5)
    np.testing.assert_array_equal(draw_uniforms(g, 3, 2), np.random.default_rng(5).random((3, 2)))
    np.testing.assert_array_equal(draw_uniforms(PartyStreams(4, 3), 3, 2), PartyStreams(4, 3).uniforms(2))


def test_draw_uniforms_rejects_mismatch_and_bad_type() -> None:
    from mprr.streams import draw_uniforms

    with pytest.raises(ConfigurationError, match="streams for 3 parties but the data set has n=4"):
        draw_uniforms(PartyStreams(1, 3), 4, 1)
    with pytest.raises(ConfigurationError, match="rng must be a numpy.random.Generator"):
        draw_uniforms(42, 3, 1)  # type: ignore[arg-type]
