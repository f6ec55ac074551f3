"""RR-Clusters-Sampled: one report per respondent, a plan fixed before the data, noise-aware clustering."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.protocols import rr_clusters_sampled
from mprr.protocols.oracle_reports import ReportedData
from mprr.pair_cover import covered_pairs
from mprr.protocols.sampled_clusters import plan_sampled_clusters, pooled_marginals
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


def test_at_a_large_epsilon_the_units_overlap_and_cover_every_pair() -> None:
    ds = _planted(6000, 4, 0.8)
    plan = plan_sampled_clusters(ds.n, SIZES, 8.0)
    assert plan.design == "clusters-or-cover" and "design clusters-or-cover" in plan.reason
    assert plan_sampled_clusters(ds.n, SIZES, 1.0).design == "clusters"
    r = rr_clusters_sampled(ds, epsilon=8.0, n=ds.n, design="cover", rng=np.random.default_rng(5))
    assert r.parameters["design"] == "cover" and r.epsilon() == pytest.approx(8.0) and len(r.ledger) == 1
    assert covered_pairs(r.clusters) == set(itertools.combinations(range(len(SIZES)), 2))
    assert all(len(c) <= 3 for c in r.clusters)
    # every pair marginal is a projection of a released unit: its TVD from the data's own is within
    # 3 times the expected ½ Σ sqrt(2/π) sd of the raw projection (sampling + oracle variance of a cell)
    release = r.releases[-1]
    assert isinstance(release, ReportedData)
    for a, b in itertools.combinations(range(len(SIZES)), 2):
        truth = np.zeros((SIZES[a], SIZES[b]))
        np.add.at(truth, (ds.codes[:, a], ds.codes[:, b]), 1.0 / ds.n)
        j = next(k for k, u in enumerate(release.units) if {a, b} <= set(u))
        share = int(np.prod(release.unit_sizes[j])) // truth.size
        sd = np.sqrt(truth * (1.0 - truth) / release.reports[j] + share * float(np.mean(release.variance(j))))
        assert 0.5 * np.abs(r.estimate.marginal((a, b)) - truth).sum() < 3.0 * 0.5 * np.sqrt(2.0 / np.pi) * sd.sum()


def test_pooled_marginals_average_a_unit_reported_in_two_phases() -> None:
    ds = _planted(5000, 6, 0.8)
    r = rr_clusters_sampled(ds, epsilon=8.0, n=ds.n, discovery_share=0.3, design="cover",
                            rng=np.random.default_rng(7))
    discovery, release = r.releases
    assert isinstance(discovery, ReportedData) and isinstance(release, ReportedData)
    raw = pooled_marginals(r.releases, SIZES, "none")  # type: ignore[arg-type]
    both = next(u for u in release.units if u in discovery.units)
    i, j = discovery.units.index(both), release.units.index(both)

    def var(d: ReportedData, k: int) -> float:
        cells = int(np.prod(d.unit_sizes[k]))
        return float(np.mean(d.variance(k))) + (1.0 - 1.0 / cells) / (cells * d.reports[k])

    w = np.array([1.0 / var(discovery, i), 1.0 / var(release, j)])
    expected = (w[0] * discovery.frequencies(i, "none") + w[1] * release.frequencies(j, "none")) / w.sum()
    np.testing.assert_allclose(raw[both], expected)
    assert set(raw) == set(discovery.units) | set(release.units)


def test_design_is_checked() -> None:
    with pytest.raises(ConfigurationError,
                       match=r"design must be one of \['clusters', 'cover', 'clusters-or-cover'\] or None, got 'pairs'"):
        plan_sampled_clusters(100, SIZES, 1.0, design="pairs")


def test_a_discovery_estimate_with_a_non_positive_total_is_untestable() -> None:
    """OLH over a large pair domain from few reports can estimate a total <= 0: that pair is not tested."""
    ds = planted_clusters(300, sizes=(16, 15, 9), clusters=((0, 1),), rng=np.random.default_rng(0)).dataset
    r = rr_clusters_sampled(ds, epsilon=1.0, n=ds.n, discovery_share=0.9, oracle="olh", rng=np.random.default_rng(0))
    discovery = r.releases[0]
    assert isinstance(discovery, ReportedData)
    for j, t in enumerate(r.details["tests"]):
        total = float(discovery.raw_frequencies(j).sum())
        assert (t["statistic"] is None) == (total <= 0.0) and (total > 0.0 or not t["significant"])
    assert any(t["statistic"] is None for t in r.details["tests"]) and r.epsilon() == pytest.approx(1.0)


def test_the_plan_follows_the_noise_of_the_typical_pair() -> None:
    adult = (9, 16, 7, 15, 6, 5, 2, 2)
    # ε = 2: a typical Adult pair (33.5 cells) needs more than all respondents for discovery
    two = plan_sampled_clusters(32561, adult, 2.0)
    assert (two.design, two.discovery_share) == ("clusters", 0.0)
    # ε = 4: the oracle noise is within twice the sampling noise: a discovery decides between the designs
    four = plan_sampled_clusters(32561, adult, 4.0)
    assert four.design == "clusters-or-cover" and four.discovery_share >= 0.2
    # given the cover, whose least-error form at ε = 4 is all pairs, there is nothing for a discovery to choose
    cover = plan_sampled_clusters(32561, adult, 4.0, design="cover")
    assert cover.discovery_share == 0.0 and "pairs themselves" in cover.reason
    # the planted data's smaller pairs (13.5 cells) make discovery pay at ε = 2:
    # φ₀ = 4·13.5²·(e² + 11.5)/(e² − 1)² · 28 / 32561 ≈ 0.290, φ = 2 φ₀
    planted = plan_sampled_clusters(32561, (4, 3, 5, 2, 6, 3, 8, 2), 2.0)
    e = np.exp(2.0)
    phi0 = 4 * 13.5 ** 2 * (e + 11.5) / (e - 1) ** 2 * 28 / 32561
    assert planted.design == "clusters" and planted.discovery_share == pytest.approx(2 * phi0)


def test_after_the_discovery_disjoint_clusters_unless_a_dependence_crosses_them() -> None:
    """Planted disjoint clusters: every significant pair lies inside one, so the product of clusters
    is released; all attributes dependent but Tv too small to merge them: the cover is released."""
    ds = _planted(20000, 8, 0.8)
    r = rr_clusters_sampled(ds, epsilon=8.0, n=ds.n, rng=np.random.default_rng(9))
    assert r.details["plan"].design == "clusters-or-cover" and r.details["plan"].discovery_share > 0
    assert r.parameters["design"] == "clusters" and r.parameters["crossing_pairs"] == []
    assert r.clusters == ((0, 1), (2, 3), (4,))
    chain = planted_clusters(20000, sizes=SIZES, clusters=((0, 1, 2, 3, 4),), strength=0.8,
                             rng=np.random.default_rng(8)).dataset
    r = rr_clusters_sampled(chain, epsilon=8.0, n=chain.n, Tv=12, rng=np.random.default_rng(9))
    assert r.parameters["design"] == "cover" and r.parameters["crossing_pairs"]
    assert covered_pairs(r.clusters) == set(itertools.combinations(range(len(SIZES)), 2))
    assert all(tuple(p) not in {q for c in r.parameters["algorithm1_clusters"] for q in itertools.combinations(c, 2)}
               for p in r.parameters["crossing_pairs"])
