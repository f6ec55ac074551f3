"""Z_M arithmetic: dtype choice, wrap-around, exact uniform sampling (rejection)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.secure.prg import Keystream
from parties.secure.ring import ZMod


@pytest.mark.parametrize(
    ("modulus", "dtype"),
    [(2, np.uint8), (256, np.uint8), (257, np.uint16), (1001, np.uint16), (2**32, np.uint32),
     (2**32 - 5, np.uint32), (2**33, np.uint64), (2**64, np.uint64)],
)
def test_smallest_dtype(modulus: int, dtype: type) -> None:
    assert ZMod(modulus).dtype == np.dtype(dtype)


@pytest.mark.parametrize("modulus", [1, 0, -3, 2**64 + 1, 2**40 + 1])
def test_bad_modulus(modulus: int) -> None:
    with pytest.raises(ConfigurationError, match="modulus must be"):
        ZMod(modulus)


@pytest.mark.parametrize("modulus", [2, 7, 1001, 2**16, 2**32 - 5, 2**32, 2**40, 2**64])
def test_arithmetic_matches_python_ints(modulus: int) -> None:
    ring = ZMod(modulus)
    stream = Keystream(bytes(32))
    a = ring.random(stream, 200)
    b = ring.random(stream, 200)
    rows = ring.random(stream, (7, 200))
    ai = [int(v) for v in a]
    bi = [int(v) for v in b]
    assert [int(v) for v in ring.add(a, b)] == [(x + y) % modulus for x, y in zip(ai, bi)]
    assert [int(v) for v in ring.sub(a, b)] == [(x - y) % modulus for x, y in zip(ai, bi)]
    assert [int(v) for v in ring.neg(a)] == [(-x) % modulus for x in ai]
    expected = [sum(int(v) for v in col) % modulus for col in rows.T]
    assert [int(v) for v in ring.sum(rows, axis=0)] == expected
    assert ring.add(a, b).dtype == ring.dtype


def test_reduce_handles_negative_and_large() -> None:
    ring = ZMod(1001)
    assert ring.reduce(np.array([-1, 1001, 2002, 5])).tolist() == [1000, 0, 0, 5]
    big = ZMod(2**64)
    assert big.reduce(np.array([-1])).tolist() == [2**64 - 1]


def test_check_rejects_wrong_dtype_and_range() -> None:
    ring = ZMod(1001)
    with pytest.raises(ConfigurationError, match="dtype uint16"):
        ring.check(np.zeros(3, dtype=np.int64))
    with pytest.raises(ConfigurationError, match=r"\[0, 1001\)"):
        ring.check(np.array([1001], dtype=np.uint16))


def test_rejection_sampling_is_uniform() -> None:
    # q = 43691 in uint16 rejects 1/3 of the words; a modulo-reduction without rejection
    # would give residues < 65536 - 43691 = 21845 twice the mass of the others.
    ring = ZMod(43691)
    draws = ring.random(Keystream(bytes(32)), 400_000).astype(np.int64)
    assert draws.max() < 43691
    low = np.mean(draws < 21845)
    # uniform: P(low) = 21845/43691 ~ 0.5, sd = sqrt(.25/4e5) ~ 7.9e-4; biased would be ~0.667.
    assert abs(low - 21845 / 43691) < 5 * 7.9e-4


def test_power_of_two_sampling_uses_low_bits() -> None:
    ring = ZMod(2**12)
    draws = ring.random(Keystream(bytes(32)), 100_000).astype(np.int64)
    assert draws.max() < 2**12 and draws.dtype == np.int64
    # mean of uniform{0..4095} = 2047.5, sd of the mean = 4096/sqrt(12)/sqrt(1e5) ~ 3.74
    assert abs(draws.mean() - 2047.5) < 5 * 3.74
