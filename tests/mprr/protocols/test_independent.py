"""Tests for mprr.protocols.independent (RR-Independent, main paper Protocol 1)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.distributions import ProductDistribution
from mprr.errors import ConfigurationError
from mprr.estimation import covariance
from mprr.metrics import total_variation
from mprr.protocols import rr_independent
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import five_sigma, planted, replay, tv_bound_projected


def test_result_on_small_synthetic_data() -> None:
    ds = planted(500, 1).dataset
    r = rr_independent(ds, p=0.5, rng=np.random.default_rng(0))
    assert r.protocol == "RR-Independent" and r.postprocessing == "clip-rescale"
    assert isinstance(r.estimate, ProductDistribution)
    assert r.clusters == tuple((j,) for j in range(ds.m))
    assert r.phases == ("attributes",) and r.uniforms_per_party == ds.m
    assert r.released_records.shape == (500, ds.m)
    eps = [P.epsilon for P in r.release("attributes").matrices]
    assert r.epsilon("sequential") == pytest.approx(sum(eps))
    assert r.parameters["attribute_epsilons"] == pytest.approx(eps)
    assert r.timings == {}
    assert r.epsilon() == pytest.approx(sum(eps))


def test_same_seed_same_release_and_estimate() -> None:
    ds = planted(300, 2).dataset
    a = rr_independent(ds, p=0.4, rng=np.random.default_rng(7))
    b = rr_independent(ds, p=0.4, rng=np.random.default_rng(7))
    c = rr_independent(ds, p=0.4, rng=np.random.default_rng(8))
    np.testing.assert_array_equal(a.released_records, b.released_records)
    np.testing.assert_array_equal(a.estimate.marginal((0, 1)), b.estimate.marginal((0, 1)))
    assert not np.array_equal(a.released_records, c.released_records)
    s1 = rr_independent(ds, p=0.4, rng=PartyStreams(5, ds.n))
    s2 = rr_independent(ds, p=0.4, rng=PartyStreams(5, ds.n))
    np.testing.assert_array_equal(s1.released_records, s2.released_records)
    np.testing.assert_array_equal(s1.estimate.marginal((3,)), s2.estimate.marginal((3,)))


def test_party_streams_follow_the_draw_order() -> None:
    # Each party draws m uniforms, one per attribute in schema order.
    ds = planted(60, 3).dataset
    r = rr_independent(ds, p=0.3, rng=PartyStreams(9, ds.n))
    units = tuple((j,) for j in range(ds.m))
    (expected,) = replay(ds, PartyStreams(9, ds.n), [(units, r.release("attributes").matrices)])
    np.testing.assert_array_equal(r.release("attributes").codes, expected)


@pytest.mark.parametrize("n", [2_000, 50_000])
def test_unbiased_marginals_within_five_sigma(n: int) -> None:
    # Raw eq. (2) is unbiased; its covariance (sampling + randomization) is Nayak eq. (3.2).
    # Every cell of every marginal is within 5 standard deviations of the truth.
    sd = planted(n, 10 + n)  # data seed != protocol seed
    r = rr_independent(sd.dataset, p=0.5, rng=np.random.default_rng(n), postprocess="none")
    for j, P in enumerate(r.release("attributes").matrices):
        truth = sd.truth.marginal((j,))
        err, tol = five_sigma(r.estimate.marginal((j,)), truth, covariance(P, truth, n))
        assert err <= tol


def test_error_shrinks_as_n_grows() -> None:
    # Independent attributes: the product of the marginals is the truth.  TV of a product of
    # distributions is at most the sum of the marginals' TVs, each bounded (when every cell of
    # the raw eq. (2) estimate is within 5 sd, Nayak eq. 3.2) by tv_bound_projected: a bound
    # that shrinks as 1/sqrt(n), so a bias that does not vanish would fail at the larger n.
    bounds = []
    for n in (1_000, 100_000):
        sd = planted(n, 3, strength=0.0)
        r = rr_independent(sd.dataset, p=0.5, rng=np.random.default_rng(1), postprocess="project-simplex")
        err = total_variation(r.estimate.marginal((0, 3, 6)), sd.truth.marginal((0, 3, 6)))
        mats = r.release("attributes").matrices
        bound = sum(tv_bound_projected(covariance(mats[j], sd.truth.marginal((j,)), n)) for j in (0, 3, 6))
        assert err <= bound, n
        bounds.append(bound)
    assert bounds[1] == pytest.approx(bounds[0] / 10)


@pytest.mark.parametrize("method", ["clip-rescale", "project-simplex", "ibu"])
def test_postprocessed_estimates_are_distributions(method: str) -> None:
    ds = planted(200, 4).dataset
    r = rr_independent(ds, p=0.2, rng=np.random.default_rng(2), postprocess=method)
    assert r.postprocessing == method
    for f in r.estimate.factors:
        assert f.min() >= 0 and f.sum() == pytest.approx(1.0)


def test_epsilon_choice() -> None:
    ds = planted(100, 5).dataset
    r = rr_independent(ds, epsilon_per_attribute=1.5, rng=np.random.default_rng(0))
    assert r.epsilon() == pytest.approx(1.5 * ds.m)


def test_bad_arguments() -> None:
    ds = planted(50, 6).dataset
    with pytest.raises(ConfigurationError, match="exactly one of p, epsilon_per_attribute, epsilon \\(per respondent\\) or matrices"):
        rr_independent(ds, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="postprocess must be one of"):
        rr_independent(ds, p=0.5, rng=np.random.default_rng(0), postprocess="clip")
    with pytest.raises(ConfigurationError, match="rng must be a numpy.random.Generator"):
        rr_independent(ds, p=0.5, rng=42)  # type: ignore[arg-type]
