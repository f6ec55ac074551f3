"""Tests of mprr.hashing: the documented family exactly, broadcasting, collision rate, checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError, DataError
from mprr.hashing import OLH_MAX_G, bucket_members, hash_buckets, splitmix64, universal_hash

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def _splitmix64(x: int) -> int:
    x &= M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def _reference(seed: int, v: int, g: int) -> int:
    """The family as its docstring writes it, in Python integers."""
    a = _splitmix64(seed + GAMMA)
    b = _splitmix64(seed + 2 * GAMMA)
    h = ((a * v + b) & M64) >> 32
    return (h * g) >> 32


def test_splitmix64_known_output() -> None:
    # splitmix64 seeded with 0: the first output of the generator (state 0 + gamma)
    assert int(splitmix64(np.array([GAMMA], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF


@pytest.mark.parametrize("g", [2, 4, 8, 1000, OLH_MAX_G])
def test_matches_the_documented_family(g: int, rng: np.random.Generator) -> None:
    seeds = rng.integers(0, 1 << 32, 50, dtype=np.int64)
    values = np.concatenate(([0, 1, (1 << 32) - 1], rng.integers(0, 1 << 32, 47, dtype=np.int64)))
    out = universal_hash(seeds, values, g)
    assert out.dtype == np.int64
    assert out.tolist() == [_reference(int(s), int(v), g) for s, v in zip(seeds, values, strict=True)]


def test_broadcasts_over_reports_and_cells(rng: np.random.Generator) -> None:
    seeds = rng.integers(0, 1 << 32, 30, dtype=np.int64)
    cells = np.arange(17)
    grid = universal_hash(seeds[:, None], cells[None, :], 5)
    assert grid.shape == (30, 17)
    for i in range(30):
        np.testing.assert_array_equal(grid[i], universal_hash(np.full(17, seeds[i]), cells, 5))
    assert grid.min() >= 0 and grid.max() < 5


@pytest.mark.parametrize("g", [2, 3, 4, 7, 1000, OLH_MAX_G - 1, OLH_MAX_G])
def test_bucket_members_is_hash_equality(g: int, rng: np.random.Generator) -> None:
    seeds = rng.integers(0, 1 << 32, 2000, dtype=np.int64).astype(np.uint64)
    cells = np.concatenate(([0, (1 << 32) - 1], rng.integers(0, 1 << 32, 62))).astype(np.uint64)
    table = hash_buckets(seeds[:, None], cells[None, :], g)
    for buckets in (table[:, 5], np.full(2000, g - 1), np.zeros(2000, dtype=np.int64),
                    rng.integers(0, g, 2000, dtype=np.int64)):
        np.testing.assert_array_equal(bucket_members(seeds, buckets, cells, g), table == buckets[:, None])


@pytest.mark.parametrize("g", [2, 3, 8])
def test_collision_rate_and_marginal_are_uniform(g: int, rng: np.random.Generator) -> None:
    """OLH needs Pr[H(x) = H(y)] = 1/g for x != y and uniform buckets, over random seeds."""
    n = 200_000
    seeds = rng.integers(0, 1 << 32, n, dtype=np.int64)
    h = universal_hash(seeds[:, None], np.array([[3, 4, 1000]]), g)
    for x, y in ((0, 1), (0, 2)):
        rate = float(np.mean(h[:, x] == h[:, y]))
        se = math.sqrt((1 / g) * (1 - 1 / g) / n)
        assert abs(rate - 1 / g) < 5 * se, (x, y, rate)
    counts = np.bincount(h[:, 0], minlength=g)
    chi2 = float(np.sum((counts - n / g) ** 2 / (n / g)))
    assert chi2 < g - 1 + 6 * math.sqrt(2 * (g - 1)), chi2


def test_checks() -> None:
    with pytest.raises(ConfigurationError, match="g must be an integer >= 2, got 1"):
        universal_hash([0], [0], 1)
    with pytest.raises(ConfigurationError, match=r"g must be an integer in \[2, 2,147,483,648\], got 2,147,483,649"):
        universal_hash([0], [0], OLH_MAX_G + 1)
    with pytest.raises(DataError, match=r"seeds must be in \[0, 2\*\*32\), got 4294967296"):
        universal_hash([1 << 32], [0], 4)
    with pytest.raises(DataError, match=r"values must be in \[0, 2\*\*32\), got -1"):
        universal_hash([0], [-1], 4)
    with pytest.raises(DataError, match="values must be an integer array, got dtype float64"):
        universal_hash([0], [0.5], 4)
