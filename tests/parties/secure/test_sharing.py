"""Additive sharing: shares reconstruct the vector; the paper 4.2 variant sums to zero."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.secure.prg import Keystream
from parties.secure.ring import ZMod
from parties.secure.sharing import reconstruct, split, zero_shares


@pytest.mark.parametrize("modulus", [3, 1001, 2**32, 2**64])
@pytest.mark.parametrize("count", [1, 2, 5])
def test_split_reconstructs(modulus: int, count: int, rng: np.random.Generator) -> None:
    ring = ZMod(modulus)
    vec = rng.integers(0, min(modulus, 2**62), size=17)
    shares = split(vec, count, ring, Keystream())
    assert shares.shape == (count, 17) and shares.dtype == ring.dtype
    assert reconstruct(shares, ring).tolist() == [int(v) % modulus for v in vec]


def test_zero_shares_sum_to_zero_mod_n_plus_1() -> None:
    n = 6
    ring = ZMod(n + 1)
    shares = zero_shares(n, 30, ring, Keystream())
    sums = shares.astype(np.int64).sum(axis=0)
    assert np.all(sums % (n + 1) == 0)
    assert not np.all(shares == 0)  # probability 7^-150 of failing


def test_paper_protocol_by_hand_n3() -> None:
    """Main paper 4.2 steps 1-4 for n = 3 parties and one value combination."""
    n = 3
    ring = ZMod(n + 1)
    indicators = np.array([[1], [0], [1]])
    r = np.stack([zero_shares(n, 1, ring, Keystream()) for _ in range(n)])  # r[i, j] = r_ij
    # step 3: r_j = sum_i r_ij + [party j holds (a, a')] mod n + 1
    broadcasts = [ring.add(reconstruct(r[:, j], ring), ring.reduce(indicators[j])) for j in range(n)]
    total = reconstruct(np.stack(broadcasts), ring)
    assert total.tolist() == [2]


def test_split_is_uniform_per_share(rng: np.random.Generator) -> None:
    # A single share of a fixed vector is uniform on Z_5: each residue has frequency 1/5,
    # sd = sqrt(0.16/20000) ~ 0.00283, tolerance 5 sd.
    ring = ZMod(5)
    shares = split(np.full(20_000, 3), 3, ring, Keystream())
    freq = np.bincount(shares[1].astype(np.int64), minlength=5) / 20_000
    assert np.all(np.abs(freq - 0.2) < 5 * 0.00283)


def test_bad_arguments() -> None:
    ring = ZMod(7)
    with pytest.raises(ConfigurationError, match="count must be an integer >= 1"):
        split(np.zeros(3, dtype=np.int64), 0, ring, Keystream())
    with pytest.raises(ConfigurationError, match="vector must be 1-D"):
        split(np.zeros((2, 2), dtype=np.int64), 2, ring, Keystream())
    with pytest.raises(ConfigurationError, match="non-empty 2-D"):
        reconstruct(np.zeros(3, dtype=np.uint8), ring)
