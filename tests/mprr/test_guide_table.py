"""Tests of mprr.guide_table: the guide table gives the binary search's inverse-CDF samples bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.guide_table import GuideTable
from mprr.matrices import RandomizationMatrix, grr, k_anonymity, keep_or_uniform, tridiagonal, warner
from mprr.randomize import inverse_cdf, randomize, sample_rows


def _hard_uniforms(cdf: np.ndarray, rows: np.ndarray, buckets: int, rng: np.random.Generator) -> np.ndarray:
    """Uniforms on and next to every CDF value of the drawn rows and on bucket edges, then random ones."""
    below_one = np.nextafter(1.0, 0.0)
    n = rows.size
    u = rng.random(n)
    k = n // 5
    values = cdf[rows[:k], rng.integers(0, cdf.shape[1], k)]
    u[:k] = np.minimum(values, below_one)
    u[k:2 * k] = np.minimum(np.nextafter(values, 0.0), below_one)
    u[2 * k:3 * k] = np.minimum(np.nextafter(values, 1.0), below_one)
    edges = rng.integers(0, buckets, k) / buckets
    u[3 * k:4 * k] = edges
    u[4 * k:4 * k + k // 2] = np.nextafter(edges[: k // 2], 0.0).clip(0.0)
    return u


MATRICES = [
    keep_or_uniform(2, 0.037), keep_or_uniform(16, 0.037), keep_or_uniform(42, 0.5), keep_or_uniform(100, 0.9),
    grr(7, 1.0), grr(100, 0.5), tridiagonal([0.2, 0.3, 0.1, 0.4, 0.25]), k_anonymity([2, 3, 1]), warner(0.7),
    RandomizationMatrix([[0.25, 0.0, 0.25, 0.5], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.25] * 4]),
]


@pytest.mark.parametrize("matrix", MATRICES, ids=lambda m: f"r{m.size}")
def test_same_samples_as_binary_search(matrix: RandomizationMatrix, rng: np.random.Generator) -> None:
    guide = matrix.guide
    assert guide is not None
    rows = rng.integers(0, matrix.size, 50_000)
    u = _hard_uniforms(matrix.cdf, rows, guide.buckets, rng)
    np.testing.assert_array_equal(guide.sample(rows, u), inverse_cdf(matrix.cdf, rows, u))
    np.testing.assert_array_equal(sample_rows(matrix, rows, u), randomize(rows, matrix, uniforms=u))


def test_random_matrices_with_zeros(rng: np.random.Generator) -> None:
    built = 0
    for _ in range(60):
        r = int(rng.integers(2, 25))
        v = rng.random((r, r)) + 0.01
        v[rng.random((r, r)) < 0.3] = 0.0
        v[:, -1] += 0.01  # no empty row
        m = RandomizationMatrix(v / v.sum(axis=1, keepdims=True))
        guide = GuideTable.build(m.cdf)
        if guide is None:
            continue
        built += 1
        rows = rng.integers(0, r, 5_000)
        u = _hard_uniforms(m.cdf, rows, guide.buckets, rng)
        np.testing.assert_array_equal(guide.sample(rows, u), inverse_cdf(m.cdf, rows, u))
    assert built >= 50  # steps of at least ~1e-4: a table for nearly every one


def test_worked_example() -> None:
    # cdf row 0 = (0.25, 0.25, 0.5, 1.0): smallest step 0.25, so B = 2 * 4 = 8 buckets
    m = RandomizationMatrix([[0.25, 0.0, 0.25, 0.5], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.25] * 4])
    guide = m.guide
    assert guide is not None and guide.buckets == 8
    assert guide.low[:8].tolist() == [0, 0, 2, 2, 3, 3, 3, 3]  # first v with cdf[0, v] > b/8
    assert guide.high[:8].tolist() == [2, 2, 3, 3, 3, 3, 3, 3]  # first v with cdf[0, v] > cdf[0, low]
    codes = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3])
    u = np.array([0.0, 0.25, 0.4999999, 0.5, 0.0, 0.999999, 0.0, 0.999999, 0.75])
    assert guide.sample(codes, u).tolist() == [0, 2, 2, 3, 3, 3, 0, 0, 3]


def test_too_large_has_no_table() -> None:
    m = grr(300, 8.0)  # off-diagonal 1 / (e^8 + 299): about 3e-4, 300 rows x 4096 buckets
    assert GuideTable.build(m.cdf, max_cells=1 << 17) is None
    assert m.guide is None
    u = np.linspace(0.0, 0.999, 1000)
    rows = np.arange(1000) % 300
    np.testing.assert_array_equal(sample_rows(m, rows, u), inverse_cdf(m.cdf, rows, u))


def test_a_few_draws_keep_the_binary_search() -> None:
    from mprr.randomization_matrix import GUIDE_DRAWS_PER_ROW

    m = RandomizationMatrix(grr(200, 1.0).values)  # a matrix of its own (grr shares small ones)
    assert m.guide_for(1) is None and "guide" not in m.__dict__  # a single party's draw builds nothing
    table = m.guide_for(GUIDE_DRAWS_PER_ROW * 200)
    assert table is not None and m.guide_for(1) is table  # once built, every draw uses it
    rows = np.array([0, 199, 57])
    u = np.array([0.0, 0.5, 0.999])
    np.testing.assert_array_equal(sample_rows(m, rows, u), inverse_cdf(m.cdf, rows, u))
