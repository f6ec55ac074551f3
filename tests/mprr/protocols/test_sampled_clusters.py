"""RR-Clusters-Sampled: one report per respondent, a plan fixed before the data, noise-aware clustering."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.protocols import rr_clusters_sampled
from mprr.protocols.oracle_reports import ReportedData
from mprr.protocols.sampled_clusters import plan_sampled_clusters
from mprr.synthetic import planted_clusters

SIZES = (3, 4, 2, 5, 3)


def _planted(n: int, seed: int, strength: float) -> object:
    return planted_clusters(n, sizes=SIZES, clusters=((0, 1), (2, 3)), strength=strength,
                            rng=np.random.default_rng(seed)).dataset


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 6.0])
def test_every_respondent_reports_once_with_the_whole_budget(epsilon: float) -> None:
    ds = _planted(4000, 1, 0.8)
    r = rr_clusters_sampled(ds, epsilon=epsilon, n=ds.n, discovery_share=0.3, rng=np.random.default_rng(2))
    assert r.epsilon() == pytest.approx(epsilon) and len(r.ledger) == 1
    discovery, release = r.releases
    assert isinstance(discovery, ReportedData) and isinstance(release, ReportedData)
    took = (discovery.assigned >= 0, release.assigned >= 0)  # type: ignore[operator]
    assert not np.any(took[0] & took[1]) and np.all(took[0] | took[1])  # one phase each, every party once
    assert 0.25 < took[0].mean() < 0.35


def test_recovers_planted_clusters_and_merges_nothing_independent() -> None:
    """Planted clusters found in most runs; on independent data the Bonferroni-corrected test merges
    nothing in at least 1 − α of the runs (its family-wise size)."""
    found = sum(rr_clusters_sampled(_planted(20000, s, 0.6), epsilon=2.0, n=20000, discovery_share=0.3,
                                    rng=np.random.default_rng(s)).clusters == ((0, 1), (2, 3), (4,))
                for s in range(10))
    assert found >= 8
    merged = sum(any(len(c) > 1 for c in rr_clusters_sampled(_planted(20000, s, 0.0), epsilon=2.0, n=20000,
                                                             discovery_share=0.3, rng=np.random.default_rng(s)).clusters)
                 for s in range(40))
    assert merged <= 5  # expected ≤ 2 (α = 0.05 family-wise); 5 is the binomial 99.9 % bound


def test_the_plan_is_chosen_before_the_data_and_said() -> None:
    small = plan_sampled_clusters(1000, (9, 16, 7, 15, 6, 5, 2, 2), 1.0)
    assert small.discovery_share == 0.0 and "discovery share 0" in small.reason
    large = plan_sampled_clusters(32561, (9, 16, 7, 15, 6, 5, 2, 2), 8.0)
    assert large.discovery_share == 0.2 and large.Tv >= 256
    given = plan_sampled_clusters(100, SIZES, 1.0, discovery_share=0.5, Tv=12)
    assert (given.discovery_share, given.Tv) == (0.5, 12) and "(given)" in given.reason
    with pytest.raises(ConfigurationError, match=r"discovery_share must be a real number in \[0, 1\)"):
        plan_sampled_clusters(100, SIZES, 1.0, discovery_share=1.0)
    with pytest.raises(ConfigurationError, match="Tv must be an integer >= 1, got 0"):
        plan_sampled_clusters(100, SIZES, 1.0, Tv=0)


def test_without_discovery_it_is_one_attribute_per_respondent() -> None:
    ds = _planted(3000, 3, 0.8)
    r = rr_clusters_sampled(ds, epsilon=1.0, n=ds.n, discovery_share=0.0, rng=np.random.default_rng(0))
    assert r.phases == ("clusters",) and r.clusters == tuple((j,) for j in range(len(SIZES)))
    assert r.details["tests"] == [] and r.epsilon() == pytest.approx(1.0)


def test_cluster_estimates_are_unbiased_within_their_closed_form_variance() -> None:
    """Runs whose clustering found the planted cluster (0, 1): the raw estimate of that cluster from
    its sampled reporters is within 5 SE of the truth, SE from the closed form (sampling term included)."""
    ds = _planted(10000, 11, 0.8)
    truth = ds.joint_counts((0, 1)).reshape(-1) / ds.n
    est, var = [], []
    for k in range(60):
        r = rr_clusters_sampled(ds, epsilon=4.0, n=ds.n, discovery_share=0.3, postprocess="none",
                                rng=np.random.default_rng(100 + k))
        release = r.releases[-1]
        assert isinstance(release, ReportedData)
        if (0, 1) not in release.units:
            continue
        j = release.units.index((0, 1))
        est.append(release.raw_frequencies(j))
        var.append(release.variance(j, truth))
    assert len(est) >= 40
    z = (np.mean(est, axis=0) - truth) / np.sqrt(np.mean(var, axis=0) / len(est))
    assert np.all(np.abs(z) < 5.0), z
