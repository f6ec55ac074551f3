"""CALM-style marginal release: budget, consistent marginals, maximum-entropy answers, accuracy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.marginals import project
from mprr.protocols import MarginalSetDistribution, calm, smp
from mprr.protocols.oracle_reports import ReportedData
from tests.mprr.protocols._helpers import planted


def test_one_marginal_per_respondent_with_all_of_the_budget() -> None:
    ds = planted(2000, 1).dataset
    r = calm(ds, epsilon=2.0, rng=np.random.default_rng(0))
    data = r.releases[0]
    assert isinstance(data, ReportedData) and data.assign == "sampled"
    assert r.epsilon() == pytest.approx(2.0) and len(r.ledger) == 1
    assert data.units == tuple(itertools.combinations(range(ds.m), 2))
    assert sum(data.reports) == ds.n and r.parameters["marginals"] == 28


def test_released_marginals_agree_on_every_shared_attribute() -> None:
    ds = planted(3000, 2).dataset
    est = calm(ds, epsilon=1.0, rng=np.random.default_rng(1)).estimate
    assert isinstance(est, MarginalSetDistribution)
    tables = est.marginals
    for a in range(ds.m):
        views = [project(t, k, (a,)) for k, t in tables.items() if a in k]
        for v in views[1:]:
            np.testing.assert_allclose(v, views[0], atol=1e-9)
        assert np.all(views[0] >= 0.0) and views[0].sum() == pytest.approx(1.0)
    # a pair is read from its released marginal, in the order asked
    np.testing.assert_allclose(est.marginal((3, 1)), tables[(1, 3)].T)
    # a triple comes from maximum entropy on the released pairs (noisy pairs, consistent on every
    # attribute, need not be jointly feasible: IPF then ends at its iteration cap on a distribution)
    tri = est.marginal((0, 1, 2))
    assert tri.shape == tuple(ds.sizes[a] for a in (0, 1, 2)) and tri.sum() == pytest.approx(1.0)
    assert np.all(tri >= 0.0)


def test_exact_pair_marginals_give_a_triple_with_exactly_those_margins() -> None:
    ds = planted(3000, 2).dataset
    pairs = {k: ds.joint_counts(k) / ds.n for k in itertools.combinations(range(ds.m), 2)}
    est = MarginalSetDistribution(pairs, ds.sizes)
    tri = est.marginal((2, 0, 1))
    np.testing.assert_allclose(tri.sum(axis=0), pairs[(0, 1)], atol=2e-6)
    np.testing.assert_allclose(tri.sum(axis=2).T, pairs[(0, 2)], atol=2e-6)
    np.testing.assert_allclose(tri.sum(axis=1).T, pairs[(1, 2)], atol=2e-6)


def test_at_large_budget_calm_beats_one_attribute_per_respondent_on_pairs() -> None:
    """Planted dependences: SMP's product of marginals cannot see them, CALM-style pairs can."""
    ds = planted(20000, 3, strength=0.8).dataset
    truth = {k: ds.joint_counts(k) / ds.n for k in itertools.combinations(range(ds.m), 2)}

    def tvd(est: object) -> float:
        return float(np.mean([0.5 * np.abs(est.marginal(k) - t).sum() for k, t in truth.items()]))  # type: ignore[attr-defined]

    c = tvd(calm(ds, epsilon=8.0, rng=np.random.default_rng(4)).estimate)
    s = tvd(smp(ds, epsilon=8.0, rng=np.random.default_rng(4)).estimate)
    assert c < 0.8 * s


def test_validation() -> None:
    ds = planted(50, 1).dataset
    with pytest.raises(ConfigurationError, match=r"k must be an integer >= 2 and <= 3, got 4"):
        calm(ds, epsilon=1.0, k=4, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="epsilon must be a finite number > 0, got -1.0"):
        calm(ds, epsilon=-1.0, rng=np.random.default_rng(0))
