"""Shamir sharing over GF(2^256 + 297): any t shares reconstruct, fewer abort."""

from __future__ import annotations

import itertools
import random

import pytest

from mprr.errors import ConfigurationError, SecureSumAborted
from parties.secure.shamir import (
    PRIME,
    Share,
    lagrange_at_zero,
    reconstruct_bytes,
    reconstruct_secret,
    share_bytes,
    share_secret,
)


def _miller_rabin(n: int, bases: list[int]) -> bool:
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def test_prime_is_smallest_prime_above_2_256() -> None:
    # Miller-Rabin with 40 bases: a composite passes with probability < 4^-40.
    bases = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] + random.Random(7).sample(range(41, 10**6), 28)
    assert PRIME == 2**256 + 297 and _miller_rabin(PRIME, bases)
    for odd in range(2**256 + 1, PRIME, 2):
        assert not _miller_rabin(odd, bases[:12])


@pytest.mark.parametrize(("count", "threshold"), [(1, 1), (3, 2), (5, 3), (6, 6)])
def test_every_threshold_subset_reconstructs(count: int, threshold: int) -> None:
    secret = 2**255 + 12345
    shares = share_secret(secret, range(1, count + 1), threshold)
    for subset in itertools.combinations(shares, threshold):
        assert reconstruct_secret(subset, threshold) == secret


def test_below_threshold_aborts_with_counts() -> None:
    shares = share_secret(42, [1, 2, 3, 4], 3)
    with pytest.raises(SecureSumAborted, match="threshold=3 shares to reconstruct, got 2") as info:
        reconstruct_secret(shares[:2], 3)
    assert info.value.survivors == 2 and info.value.threshold == 3


def test_coefficients_are_fresh_and_t1_is_the_secret() -> None:
    # Two sharings of the same secret use fresh random coefficients (else t - 1 shares from
    # two runs would leak); with t = 1 the polynomial is constant (documented edge case).
    first = share_secret(7, [1, 2, 3], 2)
    second = share_secret(7, [1, 2, 3], 2)
    assert [s.y for s in first] != [s.y for s in second]
    assert [s.y for s in share_secret(7, [4, 5], 1)] == [7, 7]


def test_bytes_roundtrip_and_share_encoding() -> None:
    secret = bytes(range(32))
    shares = share_bytes(secret, [3, 9, 11], 2)
    encoded = [Share.from_bytes(s.x, s.value_bytes()) for s in shares]
    assert reconstruct_bytes(encoded[1:], 2) == secret
    assert all(len(s.value_bytes()) == 33 for s in shares)


def test_lagrange_weights_sum_to_one() -> None:
    # f = 1 (constant) interpolates to 1 at 0, so the weights sum to 1 mod p.
    assert sum(lagrange_at_zero((1, 2, 3, 7))) % PRIME == 1


def test_validation_errors() -> None:
    with pytest.raises(ConfigurationError, match="threshold must be an integer in \\[1, 3\\]"):
        share_secret(1, [1, 2, 3], 4)
    with pytest.raises(ConfigurationError, match="distinct"):
        share_secret(1, [1, 1], 1)
    with pytest.raises(ConfigurationError, match="abscissa x must be in"):
        Share(0, 1)
    with pytest.raises(ConfigurationError, match="at most 32 bytes"):
        share_bytes(bytes(33), [1], 1)
    a, _ = share_secret(5, [1, 2], 2)
    with pytest.raises(ConfigurationError, match="conflicting shares"):
        reconstruct_secret([a, Share(1, (a.y + 1) % PRIME)], 1)
