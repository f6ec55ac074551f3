"""Tests for mprr.protocols.release (units, draw order, exact tables, ledger entries)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.domain import encode_joint
from mprr.errors import ConfigurationError, DataError, DomainTooLargeError
from mprr.matrices import cluster_optimal, grr, keep_or_uniform, kron
from mprr.protocols.release import (
    all_pairs,
    check_inputs,
    exact_tables,
    release_units,
    unit_codes,
)
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import planted, replay


def test_all_pairs_lexicographic() -> None:
    assert all_pairs(4) == ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
    assert all_pairs(1) == ()


def test_unit_codes_are_c_order() -> None:
    codes = np.array([[1, 2, 0], [3, 0, 1]])
    assert unit_codes(codes, (4, 3, 2), (0, 1)).tolist() == [1 * 3 + 2, 3 * 3 + 0]
    assert unit_codes(codes, (4, 3, 2), (2,)).tolist() == [0, 1]


def test_release_units_follows_the_draw_order_contract() -> None:
    ds = planted(40, 1).dataset
    units = ((0, 1), (2,), (3, 4))
    mats = (
        cluster_optimal((4, 3), 2.0),
        keep_or_uniform(5, 0.4),
        kron(grr(2, 1.0), grr(6, 1.0)),
    )
    streams = PartyStreams(11, ds.n)
    rel = release_units("x", ds.codes, ds.sizes, units, mats, streams.uniforms(len(units)))
    (expected,) = replay(ds, PartyStreams(11, ds.n), [(units, mats)])
    np.testing.assert_array_equal(rel.codes, expected)
    assert rel.uniforms_per_party == 3
    assert rel.counts[0].shape == (4, 3) and rel.counts[0].sum() == ds.n
    assert not rel.codes.flags.writeable


def test_records_and_unit_records_decode_the_release() -> None:
    ds = planted(30, 2).dataset
    units = ((0, 2), (1,), (3, 4, 5), (6, 7))
    mats = tuple(cluster_optimal([ds.sizes[a] for a in u], 50.0) for u in units)  # ~identity
    u = np.random.default_rng(0).random((ds.n, 4))
    rel = release_units("x", ds.codes, ds.sizes, units, mats, u)
    np.testing.assert_array_equal(rel.records(ds.m), ds.codes)
    np.testing.assert_array_equal(rel.unit_records(0), ds.codes[:, [0, 2]])
    with pytest.raises(ConfigurationError, match="do not partition the 9 attributes"):
        rel.records(9)


def test_exact_tables_are_the_true_bivariate_counts() -> None:
    ds = planted(200, 3).dataset
    rel = exact_tables("dependence", ds.codes, ds.sizes, all_pairs(ds.m), max_cells=1000)
    assert rel.codes is None and rel.exact and not rel.linkable
    assert rel.uniforms_per_party == 0
    assert all(math.isinf(e) for e in rel.epsilons)
    i, j = 0, 2
    table = rel.counts[all_pairs(ds.m).index((i, j))]
    flat = encode_joint(ds.codes[:, [i, j]], (4, 5))
    np.testing.assert_array_equal(table.ravel(), np.bincount(flat, minlength=20))
    with pytest.raises(ConfigurationError, match="released no per-record values"):
        rel.unit_records(0)
    with pytest.raises(DomainTooLargeError, match="more than max_cells=10"):
        exact_tables("dependence", ds.codes, ds.sizes, [(0, 1)], max_cells=10)


def test_ledger_entries() -> None:
    ds = planted(20, 4).dataset
    names = ds.schema.names
    units = ((0, 1),)
    rel = release_units(
        "pairs", ds.codes, ds.sizes, units, (cluster_optimal((4, 3), 3.0),),
        np.random.default_rng(1).random((ds.n, 1)), linkable=False,
    )
    (entry,) = rel.ledger_entries(names)
    assert entry.attributes == (names[0], names[1])
    assert entry.epsilon == pytest.approx(3.0)
    assert entry.attribute_epsilons is None
    assert not entry.linkable and entry.phase == "pairs"
    exact = exact_tables("d", ds.codes, ds.sizes, units, max_cells=100).ledger_entries(names)
    assert exact[0].exact and math.isinf(exact[0].epsilon)


def test_release_units_rejects_mismatches() -> None:
    ds = planted(10, 5).dataset
    u = np.zeros((ds.n, 1))
    with pytest.raises(ConfigurationError, match="one matrix per unit"):
        release_units("x", ds.codes, ds.sizes, ((0,),), (), u)
    with pytest.raises(ConfigurationError, match="must be over 4 cells"):
        release_units("x", ds.codes, ds.sizes, ((0,),), (grr(3, 1.0),), u)
    with pytest.raises(ConfigurationError, match=r"uniforms must have shape \(10, 1\)"):
        release_units("x", ds.codes, ds.sizes, ((0,),), (grr(4, 1.0),), np.zeros((10, 2)))


def test_check_inputs() -> None:
    ds = planted(10, 6).dataset
    check_inputs(ds, np.random.default_rng(0))
    check_inputs(ds, PartyStreams(0, 10))
    with pytest.raises(ConfigurationError, match="dataset must be a mprr.data.Dataset"):
        check_inputs(ds.codes, np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="rng must be a numpy.random.Generator or a PartyStreams"):
        check_inputs(ds, 3)
    with pytest.raises(ConfigurationError, match="streams for 9 parties but the data set has n=10"):
        check_inputs(ds, PartyStreams(0, 9))


def test_replayed_units_resend_codes_without_uniforms() -> None:
    ds = planted(30, 7).dataset
    units = ((0,), (1, 2), (3,))
    mats = (keep_or_uniform(4, 0.5), cluster_optimal((3, 5), 2.0), keep_or_uniform(2, 0.5))
    old = np.arange(30) % 4
    u = np.random.default_rng(0).random((30, 2))  # one column per unit not replayed
    rel = release_units("x", ds.codes, ds.sizes, units, mats, u, previous=[old, None, None])
    assert rel.replayed == (True, False, False) and rel.uniforms_per_party == 2
    np.testing.assert_array_equal(rel.codes[:, 0], old)
    plain = release_units("x", ds.codes, ds.sizes, units[1:], mats[1:], u)
    np.testing.assert_array_equal(rel.codes[:, 1:], plain.codes)
    assert len(rel.ledger_entries(ds.schema.names)) == 2  # a replay is not new spending
    with pytest.raises(ConfigurationError, match=r"shape \(30, 2\) \(one per unit not replayed\)"):
        release_units("x", ds.codes, ds.sizes, units, mats, np.zeros((30, 3)), previous=[old, None, None])
    with pytest.raises(ConfigurationError, match="previous must have one entry per unit"):
        release_units("x", ds.codes, ds.sizes, units, mats, u, previous=[old])


def test_overwriting_the_uniforms_releases_the_same_codes() -> None:
    ds = planted(500, 8).dataset
    units = ((0, 1), (2,), (3, 4), (1,))
    mats = (cluster_optimal((4, 3), 2.0), keep_or_uniform(5, 0.4), kron(grr(2, 1.0), grr(6, 1.0)), grr(3, 0.7))
    u = np.random.default_rng(3).random((ds.n, len(units)))
    kept = release_units("x", ds.codes, ds.sizes, units, mats, u.copy())
    scratch = u.copy()
    reused = release_units("x", ds.codes, ds.sizes, units, mats, scratch, overwrite_uniforms=True)
    np.testing.assert_array_equal(reused.codes, kept.codes)
    for a, b in zip(reused.counts, kept.counts, strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.shares_memory(reused.codes, scratch)  # the codes were written over the uniforms
    assert reused.codes.dtype == np.int64 and not reused.codes.flags.writeable
    # with a replay the columns no longer line up with the units: the uniforms are left alone
    old = np.arange(ds.n) % 12
    given = u[:, 1:].copy()
    rel = release_units("x", ds.codes, ds.sizes, units, mats, given, previous=[old, None, None, None],
                        overwrite_uniforms=True)
    np.testing.assert_array_equal(given, u[:, 1:])
    plain = release_units("x", ds.codes, ds.sizes, units[1:], mats[1:], u[:, 1:].copy())
    np.testing.assert_array_equal(rel.codes[:, 1:], plain.codes)


def test_bad_uniforms_or_codes_still_raise_with_the_value() -> None:
    ds = planted(20, 9).dataset
    u = np.full((ds.n, 1), 0.5)
    u[3, 0] = 1.0
    with pytest.raises(ConfigurationError, match=r"uniforms must be finite and in \[0, 1\), got 1.0"):
        release_units("x", ds.codes, ds.sizes, ((0,),), (keep_or_uniform(4, 0.5),), u, overwrite_uniforms=True)
    codes = ds.codes.copy()
    codes[5, 0] = 4
    with pytest.raises(DataError, match=r"codes must be in \[0, 4\) \(the matrix size\), got 4"):
        release_units("x", codes, ds.sizes, ((0,),), (keep_or_uniform(4, 0.5),), np.full((ds.n, 1), 0.5))
