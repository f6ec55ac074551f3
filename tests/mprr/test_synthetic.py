"""Tests of mprr.synthetic: Zipf pair (RR-Ind-Joint 4.1) and planted clusters."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.dependence import cramers_v
from mprr.distributions import DenseDistribution, ProductDistribution
from mprr.errors import ConfigurationError
from mprr.synthetic import (
    DEFAULT_CLUSTERS,
    DEFAULT_SIZES,
    comonotone_coupling,
    planted_clusters,
    zipf_marginal,
    zipf_pair,
)


def test_zipf_marginal_is_c_over_a() -> None:
    # RR-Ind-Joint 4.1: Pr(A = a) = c/a, a = 2..d+1 (d values), c = 1 / sum(1/a)
    p = zipf_marginal(3)
    c = 1 / (1 / 2 + 1 / 3 + 1 / 4)
    np.testing.assert_allclose(p, [c / 2, c / 3, c / 4])
    np.testing.assert_allclose(zipf_marginal(4, exponent=0.0), 0.25)
    with pytest.raises(ConfigurationError, match="d must be an integer >= 2, got 1"):
        zipf_marginal(1)


def test_comonotone_coupling_exact() -> None:
    # equal marginals: diagonal
    p = np.array([0.5, 0.3, 0.2])
    np.testing.assert_allclose(comonotone_coupling([p, p]), np.diag(p), atol=1e-15)
    # (0.5, 0.5) vs (0.25, 0.75): U in [0, .25) -> (0,0); [.25, .5) -> (0,1); [.5, 1) -> (1,1)
    m = comonotone_coupling([np.array([0.5, 0.5]), np.array([0.25, 0.75])])
    np.testing.assert_allclose(m, [[0.25, 0.25], [0.0, 0.5]])
    with pytest.raises(ConfigurationError, match="must sum to 1"):
        comonotone_coupling([np.array([0.5, 0.6])])


@pytest.mark.parametrize("v", [0.0, 0.25, 0.5, 1.0])
def test_zipf_pair_truth_has_target_v_and_zipf_marginals(v: float, rng: np.random.Generator) -> None:
    data = zipf_pair(500, 10, v, rng=rng)
    assert isinstance(data.truth, DenseDistribution)
    joint = data.truth.tensor
    assert cramers_v(joint) == pytest.approx(v, abs=1e-12)
    np.testing.assert_allclose(joint.sum(axis=1), zipf_marginal(10))
    np.testing.assert_allclose(joint.sum(axis=0), zipf_marginal(10))
    # mixture (1 - v) pi pi^T + v diag(pi)
    pi = zipf_marginal(10)
    np.testing.assert_allclose(joint, (1 - v) * np.outer(pi, pi) + v * np.diag(pi), atol=1e-15)
    assert data.dataset.n == 500 and data.dataset.schema.names == ("A", "B")


def test_zipf_pair_unequal_sizes_and_bounds(rng: np.random.Generator) -> None:
    data = zipf_pair(100, (4, 7), 0.3, rng=rng)
    assert data.truth.sizes == (4, 7)
    assert cramers_v(data.truth.tensor) == pytest.approx(0.3, abs=1e-12)
    v_max = cramers_v(comonotone_coupling([zipf_marginal(4), zipf_marginal(7)]))
    with pytest.raises(ConfigurationError, match=r"cramers_v must be <= 0\.9\d+ for sizes \(4, 7\)"):
        zipf_pair(100, (4, 7), min(1.0, v_max + 0.01), rng=rng)
    with pytest.raises(ConfigurationError, match=r"cramers_v must be in \[0, 1\], got 1.5"):
        zipf_pair(100, 4, 1.5, rng=rng)
    with pytest.raises(ConfigurationError, match="n must be an integer >= 1, got 0"):
        zipf_pair(0, 4, 0.5, rng=rng)
    with pytest.raises(ConfigurationError, match="sizes must be d or a pair"):
        zipf_pair(10, (2, 3, 4), 0.5, rng=rng)


def test_zipf_pair_reproducible() -> None:
    a = zipf_pair(300, 6, 0.5, rng=np.random.default_rng(3))
    b = zipf_pair(300, 6, 0.5, rng=np.random.default_rng(3))
    c = zipf_pair(300, 6, 0.5, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a.dataset.codes, b.dataset.codes)
    assert not np.array_equal(a.dataset.codes, c.dataset.codes)


def test_zipf_pair_sample_converges_to_truth(rng: np.random.Generator) -> None:
    n = 100_000
    data = zipf_pair(n, 10, 0.5, rng=rng)
    p = data.truth.tensor
    freq = data.dataset.joint_counts() / n
    # binomial cell frequencies: 5 standard errors
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_planted_clusters_default_structure(rng: np.random.Generator) -> None:
    data = planted_clusters(2000, rng=rng)
    truth = data.truth
    assert isinstance(truth, ProductDistribution)
    assert data.dataset.schema.sizes == DEFAULT_SIZES
    assert data.clusters == DEFAULT_CLUSTERS
    assert truth.clusters == DEFAULT_CLUSTERS + ((5,), (6,), (7,))
    assert data.dataset.schema.kinds[1:3] == ("ordinal", "ordinal")
    # marginals are Zipf-like, independent pairs have V = 0, planted pairs V = s * V(M)
    for j, d in enumerate(DEFAULT_SIZES):
        np.testing.assert_allclose(truth.marginal((j,)), zipf_marginal(d), atol=1e-14)
    assert cramers_v(truth.marginal((0, 3))) == pytest.approx(0.0, abs=1e-9)
    assert cramers_v(truth.marginal((5, 6))) == pytest.approx(0.0, abs=1e-9)
    for i, j in ((0, 1), (0, 2), (1, 2), (3, 4)):
        vm = cramers_v(comonotone_coupling([zipf_marginal(DEFAULT_SIZES[i]), zipf_marginal(DEFAULT_SIZES[j])]))
        assert cramers_v(truth.marginal((i, j))) == pytest.approx(0.7 * vm, abs=1e-12)
        assert cramers_v(truth.marginal((i, j))) > 0.4


def test_planted_clusters_custom_equal_sizes_give_v_equal_strength(rng: np.random.Generator) -> None:
    data = planted_clusters(50, rng=rng, sizes=(3, 3, 3, 4), clusters=((0, 2, 1),), strength=0.4, names=list("wxyz"))
    assert data.dataset.schema.names == ("w", "x", "y", "z")
    assert data.dataset.schema.kinds == ("nominal",) * 4
    assert cramers_v(data.truth.marginal((0, 1))) == pytest.approx(0.4)
    assert cramers_v(data.truth.marginal((2, 3))) == pytest.approx(0.0, abs=1e-12)


def test_planted_clusters_reproducible_and_converges() -> None:
    a = planted_clusters(20_000, rng=np.random.default_rng(11))
    b = planted_clusters(20_000, rng=np.random.default_rng(11))
    np.testing.assert_array_equal(a.dataset.codes, b.dataset.codes)
    n = a.dataset.n
    for axes in ((0, 1, 2), (3, 4), (6,)):
        p = a.truth.marginal(axes)
        freq = a.dataset.joint_counts(list(axes)) / n
        # binomial cell frequencies: 5 standard errors
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12), axes


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sizes": (3, 1)}, "every size must be an integer >= 2, got 1"),
        ({"sizes": (3, 3), "clusters": ((0, 2),)}, r"disjoint groups of >= 2 attribute indices in \[0, 2\)"),
        ({"sizes": (3, 3, 3), "clusters": ((0, 1), (1, 2))}, "disjoint"),
        ({"sizes": (3, 3), "clusters": ((0,),)}, "disjoint groups of >= 2"),
        ({"strength": 1.2}, r"strength must be in \[0, 1\], got 1.2"),
        ({"sizes": (3, 3), "clusters": (), "kinds": ("nominal",)}, r"one kind per attribute \(2\), got 1"),
        ({"names": ("a",)}, r"one name per attribute \(8\), got 1"),
    ],
)
def test_planted_clusters_rejects(kwargs: dict, match: str, rng: np.random.Generator) -> None:
    with pytest.raises(ConfigurationError, match=match):
        planted_clusters(10, rng=rng, **kwargs)
