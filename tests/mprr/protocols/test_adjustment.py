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
    # assuming independence.  Attributes 0 and 1 are strongly dependent (planted, V = 0.8); Y
    # keeps about p_a p_b = 0.49 of their covariance (Proposition 1).  R independent replicates
    # (data and release): the mean improvement TV(before) − TV(after) must exceed 5 standard
    # errors of that mean (sample variance over the replicates).
    R, n = 8, 5_000
    gains = []
    for r in range(R):
        sd = planted(n, 300 + r, strength=0.8)
        base = rr_independent(sd.dataset, p=0.7, rng=np.random.default_rng(400 + r))
        adj = rr_adjustment(base)
        truth = sd.truth.marginal((0, 1))
        before = total_variation(base.estimate.marginal((0, 1)), truth)
        gains.append(before - total_variation(adj.estimate.marginal((0, 1)), truth))
    g = np.array(gains)
    assert g.mean() > 5 * g.std(ddof=1) / np.sqrt(R)


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
    # With independent attributes Y is a product across attributes in expectation and
    # Algorithm 2 with single-attribute targets keeps weights of product form, so its limit is
    # the product of the true marginals = the truth.  No bias floor: TV error x sqrt(n) must not
    # grow from n to 16 n.  R replicates at each n; tolerance 5 standard errors of the
    # difference of the two means (sample variances).
    R = 8
    scaled = {}
    for n in (2_000, 32_000):
        errs = []
        for r in range(R):
            sd = planted(n, 500 + r, strength=0.0)
            adj = rr_adjustment(rr_independent(sd.dataset, p=0.6, rng=np.random.default_rng(600 + r)))
            errs.append(total_variation(adj.estimate.marginal((0, 2)), sd.truth.marginal((0, 2))))
        scaled[n] = np.sqrt(n) * np.array(errs)
    small, large = scaled[2_000], scaled[32_000]
    se = np.sqrt(small.var(ddof=1) / R + large.var(ddof=1) / R)
    assert large.mean() <= small.mean() + 5 * se
    # a bias of 0.01 in TV would add sqrt(32,000) x 0.01 = 1.8 to the large-n mean


def test_sampled_releases_are_explained_not_adjusted() -> None:
    """One sampled unit per respondent leaves no record to reweight: the refusal says what to use."""
    from mprr.protocols import rr_clusters_sampled, synthesize

    ds = planted(2000, 1).dataset
    r = rr_clusters_sampled(ds, epsilon=2.0, n=ds.n, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match=r"RR-Clusters-Sampled released none across its units .* "
                                                 r"maximum-entropy \(IPF\) fit"):
        rr_adjustment(r)
    records = synthesize(r, 100, rng=np.random.default_rng(1))
    assert records.n == 100
