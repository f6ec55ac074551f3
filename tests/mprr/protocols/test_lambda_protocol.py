"""Tests for mprr.protocols.lambda_protocol (λ-randomization, lambda paper Section 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.distributions import DenseDistribution
from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.estimation import covariance
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import lambda_randomization
from mprr.protocols import lambda_protocol, lambdas_for_entropy
from mprr.protocols.lambda_protocol import lambda_entropy_bits
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import five_sigma, planted, replay


def _three(n: int, seed: int):
    sd = planted(n, seed, strength=0.8)
    return sd.dataset.select(["A1", "A2", "A3"]), sd.truth.marginal((0, 1, 2))


def test_entropy_of_the_lambda_matrix() -> None:
    for r, lam in [(5, 0.9), (2, 0.5), (16, 0.1)]:
        assert lambda_entropy_bits(r, lam) == pytest.approx(lambda_randomization(r, lam).entropy_rate)
    assert lambda_entropy_bits(5, 1.0) == 0.0


def test_table_1_randomization_strengths_from_the_definitions() -> None:
    # Lambda paper Section 6, three attributes with 5 categories, lambdas (0.9, 0.8, 0.7).
    # beta per attribute from the definitions: 24.2%, 41.1%, 54.9% (printed: 25%, 41%, 56%);
    # joint beta = sum of entropies / log2(125) = 40.1% by Theorem 2 (printed: 31%).
    bits = [lambda_entropy_bits(5, lam) for lam in (0.9, 0.8, 0.7)]
    assert [round(100 * b / math.log2(5), 1) for b in bits] == [24.2, 41.1, 54.9]
    assert round(100 * sum(bits) / math.log2(125), 1) == 40.1


def test_accepted_check_release_and_theorem_2() -> None:
    ds, _ = _three(300, 2)
    r = lambda_protocol(ds, [0.5, 0.6, 0.7], rng=np.random.default_rng(0))
    (check,) = r.details["entropy_checks"]
    K = r.details["kronecker"]
    assert isinstance(K, KroneckerMatrix) and check.accepted and check.round == 1
    assert check.total_bits == pytest.approx(K.entropy_rate)  # Theorem 2: entropies add
    assert check.beta == pytest.approx(K.beta)
    assert isinstance(r.estimate, DenseDistribution) and r.estimate.sizes == ds.sizes
    assert r.uniforms_per_party == 1 and r.phases == ("record",)
    assert r.epsilon() == pytest.approx(K.epsilon)
    assert r.ledger[0].attribute_epsilons == pytest.approx([f.epsilon for f in K.factors])


def test_one_uniform_per_record_and_reproducible() -> None:
    ds, _ = _three(50, 3)
    a = lambda_protocol(ds, [0.3, 0.4, 0.5], rng=PartyStreams(6, ds.n))
    b = lambda_protocol(ds, [0.3, 0.4, 0.5], rng=PartyStreams(6, ds.n))
    np.testing.assert_array_equal(a.release("record").codes, b.release("record").codes)
    (expected,) = replay(ds, PartyStreams(6, ds.n), [(((0, 1, 2),), (a.details["kronecker"],))])
    np.testing.assert_array_equal(a.release("record").codes, expected)


def test_unsatisfactory_level_stops_or_is_regenerated() -> None:
    ds, _ = _three(200, 4)
    with pytest.raises(ConfigurationError, match=r"entropy check failed after 1 round\(s\).*min_bits=5"):
        lambda_protocol(ds, [0.9, 0.9, 0.9], min_bits=5.0, rng=np.random.default_rng(0))
    target = 5.5
    r = lambda_protocol(
        ds,
        [0.9, 0.9, 0.9],
        min_bits=5.0,
        max_bits=6.0,
        regenerate=lambda lams, check: lambdas_for_entropy(ds.sizes, target),
        rng=np.random.default_rng(0),
    )
    first, second = r.details["entropy_checks"]
    assert not first.accepted and second.accepted and second.round == 2
    assert second.total_bits == pytest.approx(target, abs=1e-9)
    assert r.parameters["initial_lambdas"] == [0.9, 0.9, 0.9]
    with pytest.raises(ConfigurationError, match="entropy check failed after 3 round"):
        lambda_protocol(
            ds, [0.9] * 3, min_beta=0.99, regenerate=lambda lams, check: lams, max_rounds=3,
            rng=np.random.default_rng(0),
        )


def test_lambdas_for_entropy() -> None:
    lams = lambdas_for_entropy([4, 3, 5], 3.0)
    assert sum(lambda_entropy_bits(r, lam) for r, lam in zip([4, 3, 5], lams)) == pytest.approx(3.0)
    assert lambdas_for_entropy([4, 3], 0.0) == pytest.approx((1.0, 1.0))
    with pytest.raises(ConfigurationError, match=r"bits must be in \[0, "):
        lambdas_for_entropy([2, 2], 2.0)


@pytest.mark.parametrize("n", [3_000, 60_000])
def test_joint_estimate_unbiased_within_five_sigma(n: int) -> None:
    ds, truth = _three(n, 5 + n)
    r = lambda_protocol(ds, [0.6, 0.7, 0.8], rng=np.random.default_rng(n), postprocess="none")
    K = r.details["kronecker"]
    err, tol = five_sigma(r.estimate.tensor, truth, covariance(K, truth, n))
    assert err <= tol


def test_bad_arguments() -> None:
    ds, _ = _three(20, 6)
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigurationError, match=r"lambdas\[1\] must be a finite number > 0 and <= 1, got 0\.0"):
        lambda_protocol(ds, [0.5, 0.0, 1.0], rng=rng)
    with pytest.raises(ConfigurationError, match=r"lambdas must be 3 numbers"):
        lambda_protocol(ds, [0.5], rng=rng)
    with pytest.raises(DomainTooLargeError, match="60 cells"):
        lambda_protocol(ds, [0.5] * 3, rng=rng, max_cells=59)
    with pytest.raises(ConfigurationError, match="max_rounds must be an integer >= 1"):
        lambda_protocol(ds, [0.5] * 3, rng=rng, max_rounds=0)
    with pytest.raises(ConfigurationError, match="min_bits must be a finite number, got nan"):
        lambda_protocol(ds, [0.5] * 3, rng=rng, min_bits=float("nan"))
    with pytest.raises(ConfigurationError, match="max_beta must be a finite number, got '1'"):
        lambda_protocol(ds, [0.5] * 3, rng=rng, max_beta="1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("r", "lam", "match"),
    [
        (3, 2.0, r"lam must be a real number in \[0, 1\], got 2\.0"),
        (3, -0.1, r"lam must be a real number in \[0, 1\], got -0\.1"),
        (3, float("nan"), r"lam must be a real number in \[0, 1\], got nan"),
        (0, 0.5, r"r must be an integer >= 1, got 0"),
        (2.5, 0.5, r"r must be an integer >= 1, got 2\.5"),
    ],
)
def test_lambda_entropy_bits_rejects_what_is_not_a_randomization_matrix(r: object, lam: float, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        lambda_entropy_bits(r, lam)  # type: ignore[arg-type]


def test_lambda_entropy_bits_ends_of_the_range() -> None:
    # λ = 0: every row uniform, log2 r bits; λ = 1: identity, 0 bits (not -0.0)
    assert lambda_entropy_bits(3, 0.0) == pytest.approx(math.log2(3), abs=1e-15)
    assert math.copysign(1.0, lambda_entropy_bits(3, 1.0)) == 1.0 and lambda_entropy_bits(3, 1.0) == 0.0
    assert lambda_entropy_bits(1, 0.3) == 0.0


def test_budget_per_respondent_gives_one_lambda_that_spends_it() -> None:
    """P(λ) = keep_or_uniform(r, λ): one λ whose Kronecker product spends exactly ε per respondent."""
    from mprr.protocols.budget import keep_for_budget
    from tests.mprr.protocols._helpers import planted

    ds = planted(300, 2).dataset
    r = lambda_protocol(ds, epsilon=3.0, max_cells=50_000, rng=np.random.default_rng(0))
    assert r.epsilon() == pytest.approx(3.0, rel=1e-9)
    assert r.parameters["lambdas"] == [pytest.approx(keep_for_budget(ds.sizes, 3.0))] * ds.m
    with pytest.raises(ConfigurationError, match="give lambdas .* or epsilon .*, exactly one"):
        lambda_protocol(ds, max_cells=50_000, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="regenerate cannot be combined with epsilon"):
        lambda_protocol(ds, epsilon=3.0, regenerate=lambda lam, check: lam, max_cells=50_000,
                        rng=np.random.default_rng(0))
