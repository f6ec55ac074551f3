"""Shamir sharing over GF(2^256 + 297): any t shares reconstruct, fewer abort."""

from __future__ import annotations

import itertools
import random

import pytest

from mprr.errors import ConfigurationError, SecureSumAborted
from parties.secure.shamir import (
    PRIME,
    Share,
    interpolate,
    interpolate_rows,
    lagrange_at_zero,
    reconstruct_bytes,
    reconstruct_secret,
    random_elements,
    share_secret,
    share_values,
)
import parties.secure.shamir as shamir


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
    secret, other = bytes(range(32)), b"\xff" * 32
    values, others = share_values([secret, other], [3, 9, 11], 2)
    assert all(len(v) == 33 for v in values + others)
    encoded = [Share.from_bytes(x, v) for x, v in zip([3, 9, 11], values)]
    assert reconstruct_bytes(encoded[1:], 2) == secret
    assert reconstruct_bytes([Share.from_bytes(x, v) for x, v in zip([3, 11], others[::2])], 2) == other
    # the same from points {x: y} (the masked controller's filing of checked shares)
    points = {share.x: share.y for share in encoded}
    assert interpolate(points, 2) == reconstruct_secret(encoded, 2) == int.from_bytes(secret, "big")
    assert reconstruct_bytes(points, 3) == reconstruct_bytes({9: points[9], 11: points[11]}, 2) == secret
    with pytest.raises(SecureSumAborted, match="need at least threshold=3 shares to reconstruct, got 2"):
        interpolate({3: points[3], 9: points[9]}, 3)


def test_several_secrets_get_independent_polynomials() -> None:
    # the same secret twice: different fresh coefficients, so different shares (else t - 1
    # shares of one and t - 1 of the other would be t - 1 points of one polynomial)
    first, second = share_values([bytes(32), bytes(32)], [1, 2, 3], 2)
    assert first != second
    assert reconstruct_bytes([Share.from_bytes(2, first[1]), Share.from_bytes(3, first[2])], 2) == bytes(32)


def test_random_elements_reject_words_outside_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    # 257-bit words >= p are rejected, as secrets.randbelow(PRIME) rejects them: the candidates
    # here are p, 2^257 - 1 (both rejected) and 5, then everything 0
    words = [PRIME, (1 << 257) - 1, 5]
    raw = b"".join(w.to_bytes(33, "big") for w in words)
    monkeypatch.setattr(shamir.secrets, "token_bytes", lambda n: (raw + bytes(n))[:n])
    assert random_elements(2) == [5, 0]
    # words of 257 bits below p are kept: 2^256 + 296 = p - 1 is the largest
    raw = b"".join(w.to_bytes(33, "big") for w in [PRIME, PRIME - 1, 1 << 256, 7])
    monkeypatch.setattr(shamir.secrets, "token_bytes", lambda n: (raw + bytes(n))[:n])
    assert random_elements(3) == [PRIME - 1, 1 << 256, 7]
    # the top bits above the 257 kept ones are ignored, as getrandbits(257) never sets them
    monkeypatch.setattr(shamir.secrets, "token_bytes", lambda n: (b"\xfe" + bytes(32) + bytes(n))[:n])
    assert random_elements(1) == [0]


def test_random_elements_are_fresh_and_in_the_field() -> None:
    values = random_elements(200)
    assert len(set(values)) == 200 and all(0 <= v < PRIME for v in values)
    # about half the draws fall in the upper half [2^255, p): a binomial(200, 1/2) count
    assert 60 < sum(v >= 1 << 255 for v in values) < 140


def test_lagrange_weights_sum_to_one() -> None:
    # f = 1 (constant) interpolates to 1 at 0, so the weights sum to 1 mod p.
    assert sum(lagrange_at_zero((1, 2, 3, 7))) % PRIME == 1


@pytest.mark.parametrize("xs", [(1, 2, 3, 4, 5), (2, 4, 7), (9,)])
def test_interpolate_rows_is_interpolate_of_each_row(xs: tuple[int, ...]) -> None:
    secrets_ = [0, 1, 2**255 + 12345, 2**256 + 296, PRIME - 1]  # (the last two: at or above 2^256, below p)
    rows = [share_secret(s, xs, len(xs)) for s in secrets_]
    values = b"".join(share.value_bytes() for row in rows for share in row)
    got = interpolate_rows(values, xs)
    assert got == [interpolate({share.x: share.y for share in row}, len(xs)) for row in rows] == secrets_
    assert interpolate_rows(b"", xs) == []
    with pytest.raises(ConfigurationError, match=f"rows of {len(xs)} values of 33 bytes, got 34 bytes"):
        interpolate_rows(values[:34], xs)
    with pytest.raises(ConfigurationError, match=r"at least one abscissa \(threshold >= 1\)"):
        interpolate_rows(b"", ())


def test_validation_errors() -> None:
    with pytest.raises(ConfigurationError, match="threshold must be an integer in \\[1, 3\\]"):
        share_secret(1, [1, 2, 3], 4)
    with pytest.raises(ConfigurationError, match="distinct"):
        share_secret(1, [1, 1], 1)
    with pytest.raises(ConfigurationError, match="abscissa x must be in"):
        Share(0, 1)
    with pytest.raises(ConfigurationError, match="at most 32 bytes"):
        share_values([bytes(33)], [1], 1)
    a, _ = share_secret(5, [1, 2], 2)
    with pytest.raises(ConfigurationError, match="conflicting shares"):
        reconstruct_secret([a, Share(1, (a.y + 1) % PRIME)], 1)


@pytest.mark.parametrize("threshold", [1, 2, 5, 40, 300])
def test_horner_evaluation_is_the_polynomial_mod_p(threshold: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # f(x) = s + sum_k c_k x^k mod p, whatever the size of x (small ranks reduced once per
    # share, or in runs of steps where t is large; x of 257 bits at every step), each secret
    # with its own coefficients
    rng = random.Random(threshold)
    coefficients = [rng.randrange(PRIME) for _ in range(3 * (threshold - 1))]
    monkeypatch.setattr(shamir, "random_elements", lambda count: coefficients[:count])
    secrets_ = [PRIME - 1, rng.randrange(PRIME), 0]  # three polynomials evaluated at once
    xs = tuple(sorted({1, 2, 3, 255, 256, 300, 2**40 + 7, PRIME - 1, *rng.sample(range(4, 5000), 20)}))
    values = shamir._evaluate(secrets_, xs, threshold)
    for i, s in enumerate(secrets_):
        cs = coefficients[(threshold - 1) * i: (threshold - 1) * (i + 1)]
        assert values[i] == [(s + sum(c * pow(x, k, PRIME) for k, c in enumerate(cs, 1))) % PRIME for x in xs]
