"""Tests for mprr.protocols.joint (RR-Joint, main paper Protocol 2)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.distributions import DenseDistribution
from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.estimation import covariance
from mprr.matrices import grr
from mprr.protocols import rr_independent, rr_joint
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import five_sigma, planted, replay


def _first_cluster(n: int, seed: int):  # (0, 1, 2): 4 x 3 x 5 = 60 cells, strongly dependent
    sd = planted(n, seed, strength=0.8)
    return sd.dataset.select(list(sd.dataset.schema.names[:3])), sd.truth.marginal((0, 1, 2))


def test_result_and_budget_equivalence_with_rr_independent() -> None:
    ds, _ = _first_cluster(500, 1)
    r = rr_joint(ds, p=0.5, rng=np.random.default_rng(0))
    assert r.protocol == "RR-Joint" and isinstance(r.estimate, DenseDistribution)
    assert r.estimate.sizes == (4, 3, 5) and r.clusters == ((0, 1, 2),)
    assert r.uniforms_per_party == 1
    ind = rr_independent(ds, p=0.5, rng=np.random.default_rng(0))
    # main paper 6.3.2: the joint matrix carries the sum of the 6.3.1 attribute epsilons
    assert r.epsilon() == pytest.approx(ind.epsilon(), rel=1e-12)
    assert rr_joint(ds, epsilon=2.0, rng=np.random.default_rng(0)).epsilon() == pytest.approx(2.0)


def test_refuses_a_domain_above_the_cell_limit_before_drawing() -> None:
    ds = planted(50, 2).dataset  # 4*3*5*2*6*3*8*2 = 34,560 cells
    streams = PartyStreams(1, ds.n)
    with pytest.raises(DomainTooLargeError, match="needs 34,560 cells, more than max_cells=4,096") as info:
        rr_joint(ds, p=0.5, rng=streams)
    assert info.value.cells == 34_560 and info.value.limit == 4096
    # nothing was drawn: the streams are still at their start
    np.testing.assert_array_equal(streams.uniforms(1), PartyStreams(1, ds.n).uniforms(1))
    with pytest.raises(DomainTooLargeError, match="max_cells=59"):
        rr_joint(ds.select(["A1", "A2", "A3"]), p=0.5, rng=streams, max_cells=59)
    # raising max_cells does not let RR-Joint build a dense matrix beyond MAX_MATRIX_CELLS
    big = ds.select(["A1", "A2", "A3", "A4", "A5", "A6", "A7"])  # 4*3*5*2*6*3*8 = 17,280 cells
    fresh = PartyStreams(1, ds.n)
    for kw in ({"p": 0.5}, {"epsilon": 2.0}):
        with pytest.raises(DomainTooLargeError, match=r"RR-Joint: a dense 17,280x17,280 matrix needs 298,598,400 cells, more than MAX_MATRIX_CELLS=16,777,216; .* explicit matrix"):
            rr_joint(big, rng=fresh, max_cells=20_000, **kw)
    np.testing.assert_array_equal(fresh.uniforms(1), PartyStreams(1, ds.n).uniforms(1))


def test_reproducible_and_follows_the_draw_order() -> None:
    ds, _ = _first_cluster(80, 3)
    a = rr_joint(ds, p=0.4, rng=PartyStreams(4, ds.n))
    b = rr_joint(ds, p=0.4, rng=PartyStreams(4, ds.n))
    np.testing.assert_array_equal(a.release("joint").codes, b.release("joint").codes)
    (expected,) = replay(ds, PartyStreams(4, ds.n), [(((0, 1, 2),), a.release("joint").matrices)])
    np.testing.assert_array_equal(a.release("joint").codes, expected)
    g1 = rr_joint(ds, p=0.4, rng=np.random.default_rng(3)).estimate.tensor
    g2 = rr_joint(ds, p=0.4, rng=np.random.default_rng(3)).estimate.tensor
    np.testing.assert_array_equal(g1, g2)


@pytest.mark.parametrize("n", [3_000, 60_000])
def test_unbiased_joint_within_five_sigma(n: int) -> None:
    ds, truth = _first_cluster(n, n + 1)  # data seed != protocol seed
    r = rr_joint(ds, p=0.7, rng=np.random.default_rng(n), postprocess="none")
    (P,) = r.release("joint").matrices
    err, tol = five_sigma(r.estimate.tensor, truth, covariance(P, truth.ravel(), n))
    assert err <= tol


def test_explicit_matrix_and_bad_arguments() -> None:
    ds, _ = _first_cluster(50, 5)
    r = rr_joint(ds, matrix=grr(60, 3.0), rng=np.random.default_rng(0))
    assert r.epsilon() == pytest.approx(3.0)
    with pytest.raises(ConfigurationError, match="matrix must be a RandomizationMatrix over the 60"):
        rr_joint(ds, matrix=grr(6, 3.0), rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="exactly one of p, epsilon or matrix"):
        rr_joint(ds, p=0.5, epsilon=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="max_cells must be an integer >= 2"):
        rr_joint(ds, p=0.5, rng=np.random.default_rng(0), max_cells=0)
