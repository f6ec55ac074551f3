"""Tests for mprr.protocols.ind_joint (RR-Ind-Joint, Kikuchi & Domingo-Ferrer)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.distributions import DenseDistribution, ProductDistribution
from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.estimation import covariance
from mprr.matrices import kron, warner
from mprr.metrics import total_variation
from mprr.protocols import ind_joint_estimate, rr_clusters, rr_ind_joint, rr_independent
from mprr.protocols.estimate import estimate_unit
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import five_sigma, planted, tv_bound_projected, tv_bound_raw


def test_paper_example_3_3() -> None:
    # p_A = p_B = 3/4.  The aggregated matrix is (1/16)[[9,3,3,1],[3,9,1,3],[3,1,9,3],[1,3,3,9]].
    PA = warner(0.75)
    K = kron(PA, PA)
    np.testing.assert_allclose(K.todense() * 16, [[9, 3, 3, 1], [3, 9, 1, 3], [3, 1, 9, 3], [1, 3, 3, 9]])
    # True joint f^X: (a1,b1)=4, (a2,b1)=2, (a1,b2)=0, (a2,b2)=4 (tensor axes A, B).
    pi = np.array([[0.4, 0.0], [0.2, 0.4]])
    # The paper's "lambda without rounding error" (0.2875, 0.1625, 0.2625, 0.2875), C order.
    np.testing.assert_allclose(K.apply_transpose(pi).ravel(), [0.2875, 0.1625, 0.2625, 0.2875])
    # Observed f^Y = [[3, 2], [2, 3]].  The definitions give (0.45, 0.05, 0.05, 0.45); the paper
    # prints (0.375, 0.075, 0.275, 0.375), which sums to 1.1 (see the final report).
    est = estimate_unit(K, np.array([[3.0, 2.0], [2.0, 3.0]]), "none")
    np.testing.assert_allclose(est, [[0.45, 0.05], [0.05, 0.45]], atol=1e-12)
    assert est.sum() == pytest.approx(1.0)
    assert np.abs(est - pi).mean() == pytest.approx(0.075)


def test_same_release_as_rr_independent_and_dense_full_joint() -> None:
    ds = planted(400, 1).dataset
    a = rr_ind_joint(ds, p=0.5, rng=np.random.default_rng(3))
    b = rr_independent(ds, p=0.5, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.released_records, b.released_records)
    assert a.epsilon() == pytest.approx(b.epsilon())
    assert isinstance(a.estimate, DenseDistribution) and a.estimate.sizes == ds.sizes
    assert a.protocol == "RR-Ind-Joint" and a.uniforms_per_party == ds.m


def test_groups_give_a_product_and_subsets_can_be_estimated_later() -> None:
    ds = planted(1_000, 2).dataset
    r = rr_ind_joint(ds, p=0.5, groups=[(2, 0, 1), (4, 3)], rng=np.random.default_rng(0))
    assert isinstance(r.estimate, ProductDistribution)
    assert r.clusters == ((0, 1, 2), (3, 4), (5,), (6,), (7,))
    np.testing.assert_allclose(ind_joint_estimate(r, (0, 1, 2)), r.estimate.factors[0])
    sub = ind_joint_estimate(r, (4, 0), postprocess="none")
    y = r.released_records
    counts = np.zeros((6, 4))
    np.add.at(counts, (y[:, 4], y[:, 0]), 1.0)
    direct = estimate_unit(kron(r.releases[0].matrices[4], r.releases[0].matrices[0]), counts, "none")
    np.testing.assert_allclose(sub, direct, atol=1e-12)
    # the same estimator applies to RR-Independent and to the 4.1 phase of RR-Clusters
    ind = rr_independent(ds, p=0.5, rng=np.random.default_rng(0))
    np.testing.assert_allclose(ind_joint_estimate(ind, (0, 1, 2)), r.estimate.factors[0])
    clu = rr_clusters(ds, p=0.5, Tv=50, Td=0.2, rng=np.random.default_rng(0))
    assert ind_joint_estimate(clu, (0, 1)).shape == (4, 3)
    exact = rr_clusters(ds, p=0.5, Tv=50, Td=0.2, dependence="4.2", rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="did not release every attribute separately"):
        ind_joint_estimate(exact, (0, 1))


@pytest.mark.parametrize("n", [3_000, 60_000])
def test_joint_of_dependent_attributes_unbiased_within_five_sigma(n: int) -> None:
    sd = planted(n, 7 + n, strength=0.8)
    r = rr_ind_joint(sd.dataset, p=0.6, groups=[(0, 1, 2)], rng=np.random.default_rng(n), postprocess="none")
    truth = sd.truth.marginal((0, 1, 2))
    K = kron(*r.releases[0].matrices[:3])
    err, tol = five_sigma(r.estimate.factors[0], truth, covariance(K, truth, n))
    assert err <= tol


def test_beats_rr_independent_on_dependent_attributes_for_large_n() -> None:
    # RR-Ind-Joint paper 4.2: the RR-Ind error grows with V, RR-Ind-Joint's does not.
    # Bounds on the event that every cell is within 5 sd (Nayak eq. 3.2):
    #   RR-Ind-Joint (raw eq. 2, unbiased):  TV <= tv_bound_raw(Cov of the Kronecker estimate);
    #   RR-Ind (product of projected marginals): TV >= b − Σ_j tv_bound_projected(Cov_j),
    #   with b = TV(π_0 ⊗ π_1, π_01) the exact independence bias.
    n = 100_000
    sd = planted(n, 8, strength=0.8)
    truth = sd.truth.marginal((0, 1))
    joint = rr_ind_joint(sd.dataset, p=0.6, groups=[(0, 1)], rng=np.random.default_rng(1), postprocess="none")
    ind = rr_independent(sd.dataset, p=0.6, rng=np.random.default_rng(1), postprocess="project-simplex")
    mats = joint.releases[0].matrices
    upper_joint = tv_bound_raw(covariance(kron(mats[0], mats[1]), truth, n))
    bias = total_variation(np.outer(truth.sum(axis=1), truth.sum(axis=0)), truth)
    lower_ind = bias - sum(tv_bound_projected(covariance(mats[j], truth.sum(axis=1 - j), n)) for j in (0, 1))
    assert upper_joint < lower_ind  # the comparison is decided by the variances alone
    assert total_variation(joint.estimate.marginal((0, 1)), truth) <= upper_joint
    assert total_variation(ind.estimate.marginal((0, 1)), truth) >= lower_ind


def test_ibu_and_limits() -> None:
    ds = planted(500, 9).dataset
    r = rr_ind_joint(ds, p=0.6, groups=[(0, 1)], rng=np.random.default_rng(0), postprocess="ibu")
    assert r.postprocessing == "ibu"
    assert r.estimate.factors[0].min() >= 0 and r.estimate.factors[0].sum() == pytest.approx(1.0)
    with pytest.raises(DomainTooLargeError, match="more than max_cells=100"):
        rr_ind_joint(ds, p=0.4, rng=np.random.default_rng(0), max_cells=100)
    with pytest.raises(ConfigurationError, match="groups must be disjoint"):
        rr_ind_joint(ds, p=0.4, groups=[(0, 1), (1, 2)], rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match=r"groups\[0\] must be attribute indices in \[0, 8\), got \(0, 9\)"):
        rr_ind_joint(ds, p=0.4, groups=[(0, 9)], rng=np.random.default_rng(0))


def test_party_streams_reproduce_the_release_and_estimate() -> None:
    ds = planted(200, 10).dataset
    a = rr_ind_joint(ds, p=0.5, groups=[(0, 1)], rng=PartyStreams(4, ds.n))
    b = rr_ind_joint(ds, p=0.5, groups=[(0, 1)], rng=PartyStreams(4, ds.n))
    c = rr_independent(ds, p=0.5, rng=PartyStreams(4, ds.n))
    np.testing.assert_array_equal(a.released_records, b.released_records)
    np.testing.assert_array_equal(a.released_records, c.released_records)  # m uniforms, schema order
    np.testing.assert_array_equal(a.estimate.factors[0], b.estimate.factors[0])
