"""Tests for mprr.protocols.synthesis (synthetic microdata from an estimate)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.errors import ConfigurationError
from mprr.metrics import total_variation
from mprr.protocols import rr_adjustment, rr_clusters, rr_independent, synthesize
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import planted


def test_synthetic_data_follow_the_estimate() -> None:
    ds = planted(20_000, 1, strength=0.8).dataset
    r = rr_clusters(ds, p=0.7, Tv=100, Td=0.2, rng=np.random.default_rng(0))
    syn = synthesize(r, rng=np.random.default_rng(1))
    assert isinstance(syn, Dataset) and syn.n == ds.n and syn.schema == ds.schema
    # n i.i.d. draws from the 60-cell cluster estimate p: cell frequencies are binomial, so
    # with every cell within 5 standard errors TV <= ½ Σ_c 5 sqrt(p_c (1 − p_c) / n).
    p = r.estimate.marginal((0, 1, 2))
    emp = syn.joint_counts((0, 1, 2)) / syn.n
    assert total_variation(emp, p) <= 2.5 * np.sqrt(p * (1 - p) / syn.n).sum()
    big = synthesize(r, 50, rng=np.random.default_rng(1))
    assert big.n == 50


def test_from_a_weighted_sample_and_a_bare_distribution() -> None:
    ds = planted(500, 2).dataset
    adj = rr_adjustment(rr_independent(ds, p=0.6, rng=np.random.default_rng(0)))
    syn = synthesize(adj, 100, rng=np.random.default_rng(2))
    released = {tuple(row) for row in adj.released_records[adj.estimate.weights > 0]}
    assert all(tuple(row) in released for row in syn.codes)  # resampled released records
    bare = synthesize(adj.estimate, 10, rng=np.random.default_rng(2), schema=ds.schema)
    assert bare.n == 10
    with pytest.raises(ConfigurationError, match="schema is required"):
        synthesize(adj.estimate, 10, rng=np.random.default_rng(2))
    with pytest.raises(ConfigurationError, match="rng must be a numpy.random.Generator .* got PartyStreams"):
        synthesize(adj, 10, rng=PartyStreams(1, ds.n))
    with pytest.raises(ConfigurationError, match="rng must be a numpy.random.Generator .* got int"):
        synthesize(adj, 10, rng=42)
    with pytest.raises(ConfigurationError, match="do not match the distribution sizes"):
        synthesize(adj, 10, rng=np.random.default_rng(2), schema=ds.select(["A1"]).schema)
