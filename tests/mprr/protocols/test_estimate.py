"""Tests for mprr.protocols.estimate (eq. 2 per unit + post-processing)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.distributions import ProductDistribution
from mprr.errors import ConfigurationError
from mprr.matrices import cluster_optimal, keep_or_uniform, kron
from mprr.protocols.estimate import check_postprocess, estimate_unit, product_estimate
from mprr.protocols.release import release_units

from tests.mprr.protocols._helpers import planted

PI = np.array([[0.1, 0.2, 0.05], [0.3, 0.25, 0.1]])


@pytest.mark.parametrize("method", ["none", "clip-rescale", "project-simplex", "ibu"])
def test_expected_counts_give_back_the_distribution(method: str) -> None:
    # lambda = P^T pi exactly: eq. (2) returns pi, and every post-processing keeps a proper pi.
    K = kron(keep_or_uniform(2, 0.6), keep_or_uniform(3, 0.4))
    counts = 1000 * K.apply_transpose(PI)
    np.testing.assert_allclose(estimate_unit(K, counts, method), PI, atol=1e-7)
    dense = cluster_optimal((2, 3), 2.0)
    lam = (dense.values.T @ PI.ravel()).reshape(2, 3)
    np.testing.assert_allclose(estimate_unit(dense, lam, method), PI, atol=1e-7)


def test_kronecker_equals_its_dense_matrix() -> None:
    K = kron(keep_or_uniform(2, 0.3), keep_or_uniform(3, 0.5))
    counts = np.array([[30.0, 5.0, 1.0], [2.0, 40.0, 22.0]])
    dense = K.to_matrix()
    for method in ("none", "clip-rescale", "ibu"):
        np.testing.assert_allclose(
            estimate_unit(K, counts, method), estimate_unit(dense, counts, method), atol=1e-8
        )


def test_clip_rescale_of_a_negative_estimate() -> None:
    P = keep_or_uniform(3, 0.5)
    counts = np.array([100.0, 0.0, 0.0])  # pi_hat = (5/3, -1/3, -1/3)
    raw = estimate_unit(P, counts, "none")
    np.testing.assert_allclose(raw, [5 / 3, -1 / 3, -1 / 3])
    np.testing.assert_allclose(estimate_unit(P, counts, "clip-rescale"), [1.0, 0.0, 0.0])


def test_product_estimate_and_negative_flag() -> None:
    ds = planted(50, 1).dataset
    units = tuple((j,) for j in range(ds.m))
    mats = tuple(keep_or_uniform(s, 0.2) for s in ds.sizes)
    rel = release_units("a", ds.codes, ds.sizes, units, mats, np.random.default_rng(3).random((50, ds.m)))
    est = product_estimate(rel, ds.sizes, "clip-rescale")
    assert isinstance(est, ProductDistribution) and est.clusters == units
    raw = product_estimate(rel, ds.sizes, "none")
    assert raw.allow_negative and min(f.min() for f in raw.factors) < 0  # n = 50, p = 0.2


def test_check_postprocess() -> None:
    assert check_postprocess("ibu") == "ibu"
    with pytest.raises(ConfigurationError, match="postprocess must be one of"):
        check_postprocess("clip")
    with pytest.raises(ConfigurationError, match=r"postprocess must be one of \['clip-rescale', 'ibu'"):
        check_postprocess("none", allow_none=False)
