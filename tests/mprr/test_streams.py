"""Tests for mprr.streams."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.streams import PartyStreams, StreamTable, run_seed_sequence


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
    with pytest.raises(ConfigurationError, match="seed must be an integer >= 0"):
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


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**70 + 3])
def test_vectorized_streams_equal_spawned_generators(seed: int) -> None:
    """Every party's draws equal Generator(PCG64(SeedSequence(seed).spawn(n + 1)[i])) bit for bit."""
    n = 300
    children = np.random.SeedSequence(seed).spawn(n + 1)
    expected = np.stack([np.random.Generator(np.random.PCG64(c)).random(3) for c in children[:n]])
    streams = PartyStreams(seed, n)
    np.testing.assert_array_equal(np.hstack([streams.uniforms(2), streams.uniforms(1)]), expected)
    assert streams.seed_sequence(17).spawn_key == children[17].spawn_key
    np.testing.assert_array_equal(streams.seed_sequence(17).pool, children[17].pool)


def test_seed_sequence_root_with_spawn_key_and_prior_children() -> None:
    root, twin = np.random.SeedSequence(9, spawn_key=(2,)), np.random.SeedSequence(9, spawn_key=(2,))
    root.spawn(3)
    children = twin.spawn(3 + 6)[3:]  # the streams start after the children already spawned
    streams = PartyStreams(root, 5)
    assert root.n_children_spawned == 3 + 6  # advanced as spawn(n + 1) would
    expected = np.stack([np.random.Generator(np.random.PCG64(c)).random(2) for c in children[:5]])
    np.testing.assert_array_equal(streams.uniforms(2), expected)


def test_handed_out_generator_and_uniforms_share_one_stream() -> None:
    streams, reference = PartyStreams(4, 6), PartyStreams(4, 6).uniforms(4)
    streams.uniforms(1)
    gen = streams.generator(2)
    assert gen is streams.generator(2)
    np.testing.assert_array_equal(gen.random(1), reference[2, 1:2])
    rest = streams.uniforms(2)
    np.testing.assert_array_equal(rest[2], reference[2, 2:4])
    np.testing.assert_array_equal(np.delete(rest, 2, axis=0), np.delete(reference[:, 1:3], 2, axis=0))


def test_uniforms_of_unknown_party_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"party must be in \[0, 3\), got 3"):
        PartyStreams(1, 3).uniforms(1, parties=np.array([0, 3]))


def test_preset_seed_seeds_pcg64_like_the_seed_sequence_child() -> None:
    streams = PartyStreams(5, 40)
    for i in (0, 17, 39):
        preset, child = streams.seed(i), streams.seed_sequence(i)
        np.testing.assert_array_equal(
            np.random.Generator(np.random.PCG64(preset)).random(3),
            np.random.Generator(np.random.PCG64(child)).random(3),
        )
        np.testing.assert_array_equal(preset.generate_state(7), child.generate_state(7))
        np.testing.assert_array_equal(preset.generate_state(3, np.uint64), child.generate_state(3, np.uint64))
    with pytest.raises(ConfigurationError, match="dtype must be uint32 or uint64, got int8"):
        streams.seed(0).generate_state(2, np.int8)


def test_a_stream_table_row_is_the_party_stream_of_the_run() -> None:
    streams, table = PartyStreams(7, 50), StreamTable(7, range(10, 50))
    for i in (10, 13, 49):
        row = table.stream(i)
        a = [row.random() for _ in range(20)]
        b = np.random.Generator(np.random.PCG64(streams.seed_sequence(i))).random(20)
        assert a == b.tolist()
    with pytest.raises(ConfigurationError, match="party must be in 10..49, got 9"):
        table.stream(9)
    with pytest.raises(ConfigurationError, match="parties must be a range of party ids with step 1"):
        StreamTable(7, range(0, 10, 2))
