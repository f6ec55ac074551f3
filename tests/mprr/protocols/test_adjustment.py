"""Tests for mprr.protocols.adjustment (RR-Adjustment, main paper Algorithm 2)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.distributions import WeightedSample
from mprr.errors import ConfigurationError
from mprr.metrics import total_variation
from mprr.protocols import rr_adjustment, rr_clusters, rr_independent, rr_joint

from tests.mprr.protocols._helpers import planted


def test_after_rr_independent_weights_fit_the_marginals() -> None:
    ds = planted(2_000, 1, strength=0.8).dataset
    base = rr_independent(ds, p=0.6, rng=np.random.default_rng(0))
    adj = rr_adjustment(base, tol=1e-10)
    assert adj.protocol == "RR-Independent+Adjustment"
    assert isinstance(adj.estimate, WeightedSample)
    assert adj.adjustment.converged and adj.adjustment.gap <= 1e-10
    np.testing.assert_array_equal(adj.estimate.codes, base.released_records)
    for j in range(ds.m):
        np.testing.assert_allclose(adj.estimate.marginal((j,)), base.estimate.marginal((j,)), atol=1e-9)
    # post-processing only: same releases, same ledger, no new epsilon
    assert adj.releases is base.releases and adj.ledger is base.ledger
    assert adj.epsilon() == base.epsilon()
    assert adj.details["base_estimate"] is base.estimate


def test_after_rr_clusters_weights_fit_the_cluster_marginals() -> None:
    ds = planted(5_000, 2, strength=0.8).dataset
    base = rr_clusters(ds, p=0.7, Tv=100, Td=0.2, rng=np.random.default_rng(1))
    adj = rr_adjustment(base)
    assert adj.protocol == "RR-Clusters+Adjustment"
    for c in base.clusters:
        np.testing.assert_allclose(adj.estimate.marginal(c), base.estimate.marginal(c), atol=1e-8)


def test_adjustment_recovers_dependence_lost_by_independence() -> None:
    # Main paper 6.5: for weak randomization RR-Adjustment repairs part of the accuracy lost by
    # assuming independence.  Attributes 0 and 1 are strongly dependent (planted, V = 0.8).
    sd = planted(20_000, 3, strength=0.8)
    base = rr_independent(sd.dataset, p=0.7, rng=np.random.default_rng(4))
    adj = rr_adjustment(base)
    truth = sd.truth.marginal((0, 1))
    before = total_variation(base.estimate.marginal((0, 1)), truth)
    after = total_variation(adj.estimate.marginal((0, 1)), truth)
    # Y keeps about p_a p_b = 0.49 of the covariance (Proposition 1), so roughly half of the
    # independence error can be repaired: 0.42 -> 0.21 with this seed.
    assert after < 0.6 * before


def test_refusals() -> None:
    ds = planted(300, 5).dataset
    joint = rr_joint(ds.select(["A1", "A2"]), p=0.5, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="rr_adjustment applies to results of"):
        rr_adjustment(joint)
    raw = rr_independent(ds, p=0.5, rng=np.random.default_rng(0), postprocess="none")
    with pytest.raises(ConfigurationError, match="postprocess='none'"):
        rr_adjustment(raw)
    with pytest.raises(ConfigurationError, match="rr_adjustment applies to results of"):
        rr_adjustment(ds)  # type: ignore[arg-type]


def test_adjusted_estimate_converges_for_independent_attributes() -> None:
    # With independent attributes the randomized records carry no spurious dependence in
    # expectation, so the weighted sample converges to the product of the true marginals.
    errs = []
    for n in (2_000, 100_000):
        sd = planted(n, 11, strength=0.0)
        adj = rr_adjustment(rr_independent(sd.dataset, p=0.6, rng=np.random.default_rng(12)))
        errs.append(total_variation(adj.estimate.marginal((0, 2)), sd.truth.marginal((0, 2))))
    assert errs[1] < errs[0] / 3 and errs[1] < 0.02
