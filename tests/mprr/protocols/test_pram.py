"""Tests for mprr.protocols.pram (PRAM and invariant PRAM, concise-theory paper Section 4)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.estimation import covariance
from mprr.matrices import grr, keep_or_uniform
from mprr.protocols import (
    invariant_mixture,
    invariant_two_stage,
    is_invariant,
    pram,
    pram_conditional_variance,
)
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import five_sigma, planted, small_dataset

T = np.array([50.0, 30.0, 0.0, 15.0, 5.0])


@pytest.mark.parametrize(
    "P",
    [
        invariant_two_stage(T, keep_or_uniform(5, 0.3)),
        invariant_two_stage(T, grr(5, 0.5)),
        invariant_mixture(T, 0.4),
    ],
)
def test_invariant_constructions(P) -> None:
    # Concise paper eq. (4.1) in the row convention: P^T T = T.
    np.testing.assert_allclose(P.values.T @ T, T, atol=1e-9)
    assert is_invariant(P, T)
    np.testing.assert_allclose(P.values.sum(axis=1), 1.0)


def test_a_plain_rr_matrix_is_not_invariant_for_skewed_data() -> None:
    assert not is_invariant(keep_or_uniform(5, 0.3), T)
    assert is_invariant(keep_or_uniform(5, 0.3), np.ones(5))  # bistochastic: uniform is stationary


def test_eq_4_4_two_forms_agree_for_invariant_p() -> None:
    M = invariant_two_stage(T, keep_or_uniform(5, 0.5))
    P, n = M.values, T.sum()
    second_form = (np.diag(T / n) - sum((T[i] / n) * np.outer(P[i], P[i]) for i in range(5))) / n
    np.testing.assert_allclose(pram_conditional_variance(M, T), second_form, atol=1e-15)


def test_invariant_pram_s_over_n_and_its_conditional_variance() -> None:
    # Given T and P, S/n has mean T/n (eq. 4.3) and covariance eq. (4.4).  1000 replicate
    # post-randomizations of the same 120 records; the sample variance of each cell has a
    # relative standard error sqrt(2/999) = 4.5%, so 5 standard errors is 22%.
    ds = small_dataset([[0, 0]] * 50 + [[0, 1]] * 30 + [[1, 0]] * 25 + [[1, 2]] * 15, (2, 3))
    rng = np.random.default_rng(1)
    est = np.array(
        [pram(ds, invariant="mixture", theta=0.3, rng=rng).estimate.tensor.ravel() for _ in range(1000)]
    )
    r = pram(ds, invariant="mixture", theta=0.3, rng=rng)
    V = r.details["variance"]
    truth = ds.joint_counts().ravel() / ds.n
    se_mean = np.sqrt(np.diag(V) / 1000)
    assert np.all(np.abs(est.mean(axis=0) - truth) <= 5 * se_mean + 1e-12)
    pos = np.diag(V) > 0
    np.testing.assert_allclose(est.var(axis=0, ddof=1)[pos], np.diag(V)[pos], rtol=0.22)
    assert r.details["invariant"] and r.details["estimator"] == "S/n"
    assert r.postprocessing == "none" and r.protocol == "PRAM"


@pytest.mark.parametrize("n", [4_000, 40_000])
def test_fixed_matrix_uses_eq_2_and_is_unbiased(n: int) -> None:
    # Every cell within 5 standard deviations (Nayak eq. 3.2) at both n: the error shrinks
    # as 1/sqrt(n).
    sd = planted(n, 3 + n, strength=0.8)
    ds = sd.dataset.select(["A1", "A2"])
    truth = sd.truth.marginal((0, 1))
    P = grr(12, 2.0)
    r = pram(ds, matrix=P, rng=np.random.default_rng(4), postprocess="none")
    assert r.details["estimator"] == "eq. 2" and not r.details["invariant"]
    err, tol = five_sigma(r.estimate.tensor, truth, covariance(P, truth.ravel(), n))
    assert err <= tol


def test_two_stage_pram_on_data_and_ledger() -> None:
    ds = planted(2_000, 5).dataset.select(["A1", "A2"])
    r = pram(ds, invariant="two-stage", base=keep_or_uniform(12, 0.5), rng=PartyStreams(2, ds.n))
    again = pram(ds, invariant="two-stage", base=keep_or_uniform(12, 0.5), rng=PartyStreams(2, ds.n))
    np.testing.assert_array_equal(r.release("pram").codes, again.release("pram").codes)
    assert r.details["invariant"]
    # the curator sees the true records: no local DP guarantee toward it
    assert r.no_dp_guarantee and r.ledger[0].exact and r.ledger[0].phase == "collection"
    assert r.uniforms_per_party == 1


def test_bad_arguments() -> None:
    ds = small_dataset([[0, 1], [1, 0]], (2, 2))
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigurationError, match="exactly one of matrix"):
        pram(ds, rng=rng)
    with pytest.raises(ConfigurationError, match="exactly one of matrix"):
        pram(ds, matrix=grr(4, 1.0), invariant="mixture", theta=0.5, rng=rng)
    with pytest.raises(ConfigurationError, match="invariant must be one of"):
        pram(ds, invariant="gouweleeuw", rng=rng)
    with pytest.raises(ConfigurationError, match="invariant='mixture' needs theta"):
        pram(ds, invariant="mixture", rng=rng)
    with pytest.raises(ConfigurationError, match="invariant='two-stage' needs base"):
        pram(ds, invariant="two-stage", theta=0.2, rng=rng)
    with pytest.raises(ConfigurationError, match=r"theta must be a real number in \[0, 1\) \(theta = 1 releases the data unchanged\)"):
        invariant_mixture(T, 1.0)
    with pytest.raises(ConfigurationError, match="base must be a RandomizationMatrix of size 5"):
        invariant_two_stage(T, grr(4, 1.0))
    with pytest.raises(ConfigurationError, match="matrix must be a RandomizationMatrix over the 4"):
        pram(ds, matrix=grr(3, 1.0), rng=rng)
    with pytest.raises(ConfigurationError, match="counts must be 5 finite non-negative counts"):
        pram_conditional_variance(grr(5, 1.0), np.array([1.0, np.nan, 2.0, 3.0, 4.0]))
    with pytest.raises(ConfigurationError, match="counts must be 5 finite non-negative counts"):
        pram_conditional_variance(grr(5, 1.0), np.array([1.0, -1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(ConfigurationError, match="counts must be 5"):
        pram_conditional_variance(grr(5, 1.0), T[:4])
    big = planted(20, 7).dataset  # 34,560 cells: an invariant matrix would be dense
    with pytest.raises(DomainTooLargeError, match="invariant PRAM: a dense 34,560x34,560 matrix needs"):
        pram(big, invariant="mixture", theta=0.5, rng=rng, max_cells=50_000)
    with pytest.raises(ConfigurationError, match="P must be a RandomizationMatrix, got ndarray"):
        pram_conditional_variance(np.eye(5), T)
    with pytest.raises(ConfigurationError, match=r"max_cells must be an integer >= 2, got 1"):
        pram(ds, matrix=grr(3, 1.0), rng=rng, max_cells=1)  # checked by pram itself: no parameter object did
