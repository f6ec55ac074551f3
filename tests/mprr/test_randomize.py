"""Tests of mprr.randomize: exact inverse-CDF rule, reproducibility, frequencies."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.domain import encode_joint
from mprr.errors import ConfigurationError, DataError
from mprr.matrices import RandomizationMatrix, cluster_optimal, grr, k_anonymity, kron, tridiagonal, warner
from mprr.randomize import inverse_cdf, randomize, randomize_joint


def _reference(cdf: np.ndarray, codes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The contract literally: first v with cdf[code, v] > u."""
    return np.array([int(np.argmax(cdf[c] > w)) for c, w in zip(codes, u, strict=True)])


@pytest.mark.parametrize(
    "matrix",
    [grr(7, 1.0), tridiagonal([0.2, 0.3, 0.1, 0.4, 0.25]), k_anonymity([2, 3, 1]), warner(0.7)],
    ids=["grr", "tridiagonal", "k-anonymity", "warner"],
)
def test_matches_contract_rule(matrix: RandomizationMatrix, rng: np.random.Generator) -> None:
    n = 3000
    codes = rng.integers(0, matrix.size, n)
    u = rng.random(n)
    out = randomize(codes, matrix, uniforms=u)
    np.testing.assert_array_equal(out, _reference(matrix.cdf, codes, u))
    # a value of zero probability is never released
    assert np.all(matrix.values[codes, out] > 0)


def test_boundaries_exact() -> None:
    m = RandomizationMatrix([[0.25, 0.0, 0.25, 0.5], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.25] * 4])
    codes = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3])
    u = np.array([0.0, 0.25, 0.4999999, 0.5, 0.0, 0.999999, 0.0, 0.999999, 0.75])
    # u == cdf boundary goes to the next value: cdf[0] = (0.25, 0.25, 0.5, 1.0)
    assert randomize(codes, m, uniforms=u).tolist() == [0, 2, 2, 3, 3, 3, 0, 0, 3]


def test_large_domain_matches_gather(rng: np.random.Generator) -> None:
    m = grr(1500, 4.0)
    codes = rng.integers(0, 1500, 5000)
    u = rng.random(5000)
    ref = np.sum(m.cdf[codes] <= u[:, None], axis=1)
    np.testing.assert_array_equal(randomize(codes, m, uniforms=u), ref)
    np.testing.assert_array_equal(inverse_cdf(m.cdf, codes, u), ref)


def test_reproducible_and_batch_independent(rng: np.random.Generator) -> None:
    m = grr(5, 0.8)
    codes = rng.integers(0, 5, 200)
    u = rng.random(200)
    batch = randomize(codes, m, uniforms=u)
    single = [int(randomize(codes[i : i + 1], m, uniforms=u[i : i + 1])[0]) for i in range(200)]
    assert batch.tolist() == single
    np.testing.assert_array_equal(batch, randomize(codes, m, uniforms=u.copy()))


def test_release_frequencies_follow_the_row(rng: np.random.Generator) -> None:
    m = tridiagonal([0.3, 0.2, 0.4])
    n = 200_000
    codes = np.full(n, 1)
    out = randomize(codes, m, uniforms=rng.random(n))
    freq = np.bincount(out, minlength=4) / n
    p = m.values[1]
    # binomial standard error per cell; 5 standard errors
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) <= 5 * se + 1e-12)


def test_randomize_joint_dense_and_kronecker(rng: np.random.Generator) -> None:
    sizes = (3, 4, 2)
    n = 20_000
    codes = np.stack([rng.integers(0, s, n) for s in sizes], axis=1)
    u = rng.random(n)
    km = kron(grr(3, 1.0), tridiagonal([0.2, 0.3, 0.1]), warner(0.7))
    via_kron = randomize_joint(codes, km, sizes, uniforms=u)
    via_dense = randomize_joint(codes, km.to_matrix(), sizes, uniforms=u)
    # the factorised inverse CDF equals the joint inverse CDF (up to float round-off at
    # cell boundaries, which has probability ~1e-16 per draw)
    np.testing.assert_array_equal(via_kron, via_dense)
    assert via_kron.shape == (n, 3) and via_kron.dtype == np.int64
    cm = cluster_optimal(sizes, 2.0)
    out = randomize_joint(codes, cm, sizes, uniforms=u)
    np.testing.assert_array_equal(
        encode_joint(out, sizes), randomize(encode_joint(codes, sizes), cm, uniforms=u)
    )


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: randomize(np.array([0, 3]), grr(3, 1.0), uniforms=np.array([0.1, 0.2])), DataError, r"\[0, 3\)"),
        (lambda: randomize(np.array([0.0, 1.0]), grr(3, 1.0), uniforms=np.array([0.1, 0.2])), DataError, "integer"),
        (lambda: randomize(np.array([0, 1]), grr(3, 1.0), uniforms=np.array([0.1])), ConfigurationError, r"shape \(2,\)"),
        (lambda: randomize(np.array([0]), grr(3, 1.0), uniforms=np.array([1.0])), ConfigurationError, r"\[0, 1\), got 1.0"),
        (lambda: randomize(np.array([0]), grr(3, 1.0), uniforms=np.array([np.nan])), ConfigurationError, "finite"),
        (lambda: randomize(np.array([0]), np.eye(2), uniforms=np.array([0.5])), ConfigurationError, "RandomizationMatrix"),
        (lambda: randomize_joint(np.zeros((1, 2), dtype=int), grr(5, 1.0), (2, 3), uniforms=np.array([0.5])), ConfigurationError, "size 5"),
        (lambda: randomize_joint(np.zeros((1, 2), dtype=int), kron(grr(2, 1.0), grr(2, 1.0)), (2, 3), uniforms=np.array([0.5])), ConfigurationError, "do not match"),
        (lambda: randomize_joint(np.array([[0, 5]]), kron(grr(2, 1.0), grr(3, 1.0)), (2, 3), uniforms=np.array([0.5])), DataError, "column 1"),
    ],
)
def test_bad_inputs(call: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        call()  # type: ignore[operator]
