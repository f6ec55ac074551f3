"""Tests for mprr.protocols.clusters (RR-Clusters: main paper Section 4 + 6.3.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.distributions import ProductDistribution
from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.estimation import covariance
from mprr.protocols import rr_clusters, rr_independent
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import five_sigma, planted, replay

PLANTED = ((0, 1, 2), (3, 4), (5,), (6,), (7,))


@pytest.mark.parametrize("dependence", ["4.1", "4.2", "4.3"])
def test_recovers_planted_clusters_with_strong_dependence(dependence: str) -> None:
    ds = planted(20_000, 1, strength=0.8).dataset
    r = rr_clusters(ds, p=0.7, Tv=100, Td=0.2, dependence=dependence, rng=np.random.default_rng(2))
    assert r.clusters == PLANTED
    assert isinstance(r.estimate, ProductDistribution) and r.estimate.clusters == PLANTED
    assert r.phases == ("dependence", "clusters")
    assert r.dependence.shape == (8, 8) and len(r.clustering_trace) > 0
    assert set(r.details["dependence_tables"]) == {(i, j) for i in range(8) for j in range(i + 1, 8)}


def test_budget_equivalence_with_rr_independent() -> None:
    # Main paper 6.3: the cluster release uses matrices carrying sum_{A in C} eps_A, so it
    # spends what RR-Independent spends.
    ds = planted(20_000, 1, strength=0.8).dataset
    ind = rr_independent(ds, p=0.7, rng=np.random.default_rng(0))
    eps = ind.parameters["attribute_epsilons"]
    for dependence in ("4.1", "4.2", "4.3"):
        r = rr_clusters(ds, p=0.7, Tv=100, Td=0.2, dependence=dependence, rng=np.random.default_rng(2))
        assert r.clusters == PLANTED
        mats = r.release("clusters").matrices
        for c, P in zip(r.clusters, mats):
            assert P.epsilon == pytest.approx(sum(eps[a] for a in c), rel=1e-12)
            assert P.size == math.prod(ds.sizes[a] for a in c)
        assert sum(P.epsilon for P in mats) == pytest.approx(ind.epsilon(), rel=1e-12)
    r43 = rr_clusters(ds, p=0.7, Tv=100, Td=0.2, dependence="4.3", rng=np.random.default_rng(2))
    assert r43.epsilon_by_phase()["clusters"] == pytest.approx(ind.epsilon())
    split = sum(max((eps[a] + eps[b]) / 2 for b in range(ds.m) if b != a) for a in range(ds.m))
    assert r43.epsilon("unlinkable-pairs") == pytest.approx(split + ind.epsilon())
    assert r43.epsilon("unlinkable-pairs") >= 2 * ind.epsilon() - 1e-12  # main paper 4.3's figure at least
    assert r43.epsilon("sequential") == pytest.approx((ds.m - 1 + 1) * ind.epsilon())
    r42 = rr_clusters(ds, p=0.7, Tv=100, Td=0.2, dependence="4.2", rng=np.random.default_rng(2))
    assert r42.no_dp_guarantee and math.isinf(r42.epsilon())
    assert r42.epsilon_by_phase()["clusters"] == pytest.approx(ind.epsilon())


def test_4_1_singleton_clusters_replay_their_phase_1_release() -> None:
    # Under 4.1 the matrix of a singleton cluster {A} is the matrix A was already released
    # with: every party resends that value (no uniform, no new epsilon), as its privacy
    # accountant prescribes for a repeated request.
    ds = planted(20_000, 1, strength=0.8).dataset
    r = rr_clusters(ds, p=0.7, Tv=100, Td=0.2, rng=np.random.default_rng(2))
    ind = rr_independent(ds, p=0.7, rng=np.random.default_rng(0))
    eps = r.parameters["attribute_epsilons"]
    rel, dep = r.release("clusters"), r.release("dependence")
    assert rel.replayed == (False, False, True, True, True)
    for k, c in enumerate(r.clusters):
        if len(c) == 1:
            np.testing.assert_array_equal(rel.codes[:, k], dep.codes[:, c[0]])
            assert rel.matrices[k] is dep.matrices[c[0]]
    assert r.uniforms_per_party == ds.m + 2
    merged = sum(eps[a] for c in r.clusters if len(c) > 1 for a in c)
    assert r.epsilon_by_phase()["clusters"] == pytest.approx(merged)
    assert r.epsilon("sequential") == pytest.approx(ind.epsilon() + merged)
    assert len(r.ledger) == ds.m + 2
    # party by party: m uniforms, then one per merged cluster only
    small = planted(200, 1, strength=0.8).dataset
    s = rr_clusters(small, p=0.7, Tv=100, Td=0.2, rng=PartyStreams(3, small.n))
    fresh = [k for k, flag in enumerate(s.release("clusters").replayed) if not flag]
    assert 0 < len(fresh) < len(s.clusters)  # both kinds present
    phases = [
        (s.release("dependence").units, s.release("dependence").matrices),
        ([s.clusters[k] for k in fresh], [s.release("clusters").matrices[k] for k in fresh]),
    ]
    expected = replay(small, PartyStreams(3, small.n), phases)
    np.testing.assert_array_equal(s.release("dependence").codes, expected[0])
    np.testing.assert_array_equal(s.release("clusters").codes[:, fresh], expected[1])


def test_same_seed_same_result_and_draw_order() -> None:
    ds = planted(60, 3, strength=0.9).dataset
    a = rr_clusters(ds, p=0.7, Tv=60, Td=0.1, rng=PartyStreams(5, ds.n))
    b = rr_clusters(ds, p=0.7, Tv=60, Td=0.1, rng=PartyStreams(5, ds.n))
    assert a.clusters == b.clusters
    for ra, rb in zip(a.releases, b.releases):
        np.testing.assert_array_equal(ra.codes, rb.codes)
    # party i: m uniforms (phase 1, schema order) then one per cluster (canonical order)
    phases = [(r.units, r.matrices) for r in a.releases]
    expected = replay(ds, PartyStreams(5, ds.n), phases)
    for rel, exp in zip(a.releases, expected):
        np.testing.assert_array_equal(rel.codes, exp)
    g = [rr_clusters(ds, p=0.7, Tv=60, Td=0.1, rng=np.random.default_rng(9)) for _ in range(2)]
    np.testing.assert_array_equal(g[0].estimate.marginal((0, 4)), g[1].estimate.marginal((0, 4)))


@pytest.mark.parametrize("n", [5_000, 50_000])
def test_cluster_estimates_unbiased_within_five_sigma(n: int) -> None:
    sd = planted(n, 100 + n, strength=0.8)
    r = rr_clusters(sd.dataset, p=0.7, Tv=100, Td=0.2, rng=np.random.default_rng(n), postprocess="none")
    assert r.clusters == PLANTED
    for c, P, f in zip(r.clusters, r.release("clusters").matrices, r.estimate.factors):
        truth = sd.truth.marginal(c)
        err, tol = five_sigma(f, truth, covariance(P, truth.ravel(), n))
        assert err <= tol


def test_tv_blocks_large_clusters_and_td_one_gives_singletons() -> None:
    ds = planted(5_000, 4, strength=0.8).dataset
    r = rr_clusters(ds, p=0.7, Tv=12, Td=0.2, rng=np.random.default_rng(1))
    assert all(math.prod(ds.sizes[a] for a in c) <= 12 for c in r.clusters)
    assert r.clusters == ((0, 1), (2,), (3, 4), (5,), (6,), (7,))
    r = rr_clusters(ds, p=0.7, Tv=1000, Td=1.0, rng=np.random.default_rng(1))
    assert r.clusters == tuple((j,) for j in range(ds.m))


def test_cluster_above_the_cell_limit_is_refused() -> None:
    ds = planted(5_000, 5, strength=0.8).dataset
    with pytest.raises(DomainTooLargeError, match="the release of cluster"):
        rr_clusters(ds, p=0.7, Tv=100, Td=0.2, rng=np.random.default_rng(1), max_cells=30)


def test_release_clusters_checks_max_cells_once_whatever_the_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    """A public function: it checks max_cells (once, not for each cluster), then each cluster's domain."""
    import mprr.protocols.clusters as clusters_module
    from mprr.clustering import Clustering
    from mprr.protocols.clusters import release_clusters

    three = Clustering(clusters=((2,), (0, 1), (3,)), trace=())
    with pytest.raises(ConfigurationError, match=r"max_cells must be an integer >= 2, got 1\.5"):
        release_clusters(three, (3, 2, 4, 2), 1.5)  # type: ignore[arg-type]
    checks: list[object] = []
    check_int = clusters_module.check_int
    monkeypatch.setattr(clusters_module, "check_int", lambda *a: (checks.append(a), check_int(*a))[1])
    assert release_clusters(three, (3, 2, 4, 2), 6) == ((0, 1), (2,), (3,)) and checks == [("max_cells", 6, 2)]
    with pytest.raises(DomainTooLargeError, match=r"the release of cluster \(0, 1\)"):
        release_clusters(three, (3, 2, 4, 2), 5)


# ---------------------------------------------------------------- budget per respondent
@pytest.mark.parametrize("dependence", ["4.1", "4.3"])
@pytest.mark.parametrize("share", [0.2, 0.5, 0.8])
def test_budget_per_respondent_bounds_every_ledger(dependence: str, share: float) -> None:
    """With ``epsilon`` the plan is fixed before the data: the sequential ledger is at most ε
    whatever clusters Algorithm 1 forms (several data sets and seeds, strong and no dependence)."""
    for seed, strength in ((1, 0.9), (2, 0.0), (3, 0.5)):
        ds = planted(400, seed, strength=strength).dataset
        r = rr_clusters(ds, Tv=40, Td=0.1, epsilon=3.0, discovery_share=share, dependence=dependence,
                        rng=np.random.default_rng(seed))
        assert r.epsilon() <= 3.0 * (1 + 1e-12)
        assert r.epsilon_by_phase()["dependence"] == pytest.approx(3.0 * share)
        if share != 0.5 or dependence == "4.3":  # no replays: the release spends exactly the rest
            assert r.epsilon() == pytest.approx(3.0)
        assert r.parameters["epsilon"] == 3.0 and r.parameters["discovery_share"] == share


def test_budget_per_respondent_is_monotone_where_p_was_not() -> None:
    """The issue's example: with p the ledger total jumps with the clusters the noise forms; with
    ``epsilon`` it is the budget, for every budget."""
    ds = planted(600, 7, strength=0.6).dataset
    spent = [rr_clusters(ds, Tv=50, Td=0.2, epsilon=e, discovery_share=0.3, rng=np.random.default_rng(7)).epsilon()
             for e in (1.0, 1.04, 1.08, 1.12)]
    assert spent == pytest.approx([1.0, 1.04, 1.08, 1.12])


@pytest.mark.parametrize("p, message", [
    (1.0, r"^p must be a finite number > 0 and < 1, got 1.0 \(float\)$"),
    (0, r"^p must be a finite number > 0 and < 1, got 0 \(int\)$"),
    ([0.5, 1.2], r"^p\[1\] must be a finite number > 0 and < 1, got 1.2 \(float\)$"),
    ("0.5", r"^p must be a finite number > 0 and < 1, or a non-empty list of them \(one per attribute\), "
            r"got '0.5' \(str\)$"),
    ([0.5, 0.6], r"^p must give one value per attribute \(8\), got 2 values$"),
])
def test_keep_probability_is_checked_once_by_the_parameter_object(p: object, message: str) -> None:
    """The fast path builds RRClustersParameters, whose constructor checks p (name, value, range);
    only the count of a per-attribute list is the program's, as the schema decides it."""
    ds = planted(50, 1).dataset
    assert ds.m == 8
    with pytest.raises(ConfigurationError, match=message):
        rr_clusters(ds, Tv=10, Td=0.1, p=p, rng=np.random.default_rng(0))


def test_budget_per_respondent_refusals() -> None:
    ds = planted(50, 1).dataset
    with pytest.raises(ConfigurationError, match=r"dependence='4.2' releases exact pair values \(ε = ∞, no DP "
                                                 r"guarantee\) and cannot meet a budget of epsilon = 2.0"):
        rr_clusters(ds, Tv=10, Td=0.1, epsilon=2.0, dependence="4.2", rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="pair_epsilon cannot be combined with a budget per respondent"):
        rr_clusters(ds, Tv=10, Td=0.1, epsilon=2.0, dependence="4.3", pair_epsilon=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match=r"discovery_share must be a finite number > 0 and < 1, got 1.0 \(float\)"):
        rr_clusters(ds, Tv=10, Td=0.1, epsilon=2.0, discovery_share=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="discovery_share applies with a budget per respondent"):
        rr_clusters(ds, Tv=10, Td=0.1, p=0.5, discovery_share=0.3, rng=np.random.default_rng(0))
