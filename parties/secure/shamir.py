"""Shamir secret sharing over the prime field GF(p), p = 2^256 + 297.

A secret s (a 32-byte seed or X25519 private key read as a big-endian integer < 2^256 < p) is
hidden as the constant term of a random polynomial f of degree t - 1; share k is (x_k, f(x_k)),
x_k != 0.  Any t shares give s = f(0) by Lagrange interpolation; t - 1 shares are uniform and
independent of s (Shamir 1979).  Coefficients are uniform in GF(p), from the OS CSPRNG
(:func:`random_elements`: the rejection sampling of :func:`secrets.randbelow`, batched).

p = 2^256 + 297 is the smallest prime above 2^256 (checked by a Miller-Rabin test in
``tests/parties/secure/test_shamir.py``), so every 32-byte string is a field element and a
share value fits in 33 bytes.

Vectorized where it matters: the controller of the masked engine reconstructs one secret per
party, usually from the same abscissae, so Lagrange coefficients at 0 are cached per abscissa
set and reconstruction is a dot product.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from mprr.domain import check_int
from mprr.errors import ConfigurationError, SecureSumAborted

__all__ = [
    "PRIME",
    "SHARE_BYTES",
    "Share",
    "random_elements",
    "share_secret",
    "share_values",
    "interpolate",
    "interpolate_rows",
    "reconstruct_secret",
    "reconstruct_bytes",
    "lagrange_at_zero",
]

PRIME = (1 << 256) + 297
SHARE_BYTES = 33


@dataclass(frozen=True, slots=True)
class Share:
    """One Shamir share: abscissa ``x`` (1 <= x < p) and value ``y = f(x)`` in GF(p)."""

    x: int
    y: int

    def __post_init__(self) -> None:
        if not 1 <= self.x < PRIME:
            raise ConfigurationError(f"share abscissa x must be in [1, p), got {self.x}")
        if not 0 <= self.y < PRIME:
            raise ConfigurationError("share value y must be in [0, p)")

    def value_bytes(self) -> bytes:
        """``y`` as 33 big-endian bytes (for messages)."""
        return self.y.to_bytes(SHARE_BYTES, "big")

    @classmethod
    def from_bytes(cls, x: int, value: bytes) -> "Share":
        """Inverse of :meth:`value_bytes` for abscissa ``x``."""
        if len(value) != SHARE_BYTES:
            raise ConfigurationError(
                f"share value must be {SHARE_BYTES} bytes, got {len(value)}"
            )
        return cls(x, int.from_bytes(value, "big"))


def _check_threshold(threshold: int, count: int) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 1 <= threshold <= count:
        raise ConfigurationError(
            f"threshold must be an integer in [1, {count}] (number of shares), got {threshold!r}"
        )


def _check_abscissae(xs: Sequence[int]) -> tuple[int, ...]:
    xs = tuple(map(int, xs))
    if len(set(xs)) != len(xs):
        raise ConfigurationError(f"share abscissae must be distinct, got {xs}")
    if xs and not (1 <= min(xs) and max(xs) < PRIME):
        for x in xs:  # (the first one out of range, named)
            if not 1 <= x < PRIME:
                raise ConfigurationError(f"share abscissae must be in [1, p), got {x}")
    return xs


_WORD = 33  # bytes per candidate coefficient: 257 bits kept, as secrets.randbelow(PRIME) draws
_WORD_MASK = (1 << 257) - 1


def random_elements(count: int) -> list[int]:
    """``count`` independent uniform elements of GF(p) from the OS CSPRNG: the rejection
    sampling of :func:`secrets.randbelow` (uniform 257-bit words, those >= p rejected: about
    one in two), with the candidates of a batch drawn by one :func:`secrets.token_bytes`."""
    out: list[int] = []
    while len(out) < count:
        need = count - len(out)
        raw = secrets.token_bytes(_WORD * (2 * need + 4))
        for k in range(0, len(raw), _WORD):
            if raw[k] & 1:  # bit 256 set: the word is 2^256 + its low 256 bits, < p for 297 of them
                value = int.from_bytes(raw[k:k + _WORD], "big") & _WORD_MASK
                if value >= PRIME:
                    continue
            else:  # (below 2^256 < p: kept, and read from its low 32 bytes)
                value = int.from_bytes(raw[k + 1:k + _WORD], "big")
            out.append(value)
            if len(out) == count:
                break
    return out


def _evaluate(secret_values: Sequence[int], xs: tuple[int, ...], threshold: int) -> list[list[int]]:
    """f_s(x) for a fresh random polynomial f_s of degree t - 1 with f_s(0) = s, for each secret
    s and abscissa x (the coefficients of all the polynomials drawn at once, those of secret i
    ``coefficients[(t - 1) i : (t - 1) (i + 1)]``, c_1 first).

    Horner's rule, f(x) = s + x (c_1 + x (c_2 + ... + x c_(t-1))), on plain integers, reduced
    mod p once per share where the abscissa is a small rank (1, 2, ..., the holder count: a
    step adds its few bits), else after each run of steps that adds about 256 bits."""
    extra = threshold - 1
    coefficients = random_elements(extra * len(secret_values))
    values: list[list[int]] = []
    for i, secret in enumerate(secret_values):
        top_down = coefficients[extra * i: extra * (i + 1)][::-1]  # c_(t-1), ..., c_1
        row: list[int] = []
        for x in xs:
            y, run = 0, max(1, 256 // x.bit_length())  # steps between reductions
            if extra <= run:
                for c in top_down:
                    y = y * x + c
            else:
                for start in range(0, extra, run):
                    for c in top_down[start: start + run]:
                        y = y * x + c
                    y %= PRIME
            row.append((y * x + secret) % PRIME)
        values.append(row)
    return values


def share_secret(secret: int, xs: Sequence[int], threshold: int) -> list[Share]:
    """Shares of ``secret`` at abscissae ``xs``; any ``threshold`` of them reconstruct it.

    Parameters
    ----------
    secret
        Integer in [0, p).
    xs
        Distinct non-zero abscissae, one per share holder.
    threshold
        t, 1 <= t <= len(xs): degree of the polynomial is t - 1.
    """
    if not 0 <= secret < PRIME:
        raise ConfigurationError("secret must be an integer in [0, p)")
    xs = _check_abscissae(xs)
    _check_threshold(threshold, len(xs))
    return [Share(x, y) for x, y in zip(xs, _evaluate([secret], xs, threshold)[0])]


def share_values(secret_list: Sequence[bytes], xs: Sequence[int], threshold: int) -> list[list[bytes]]:
    """Shares of several secrets of at most 32 bytes (big-endian integers) at the same abscissae
    ``xs``, each with its own random polynomial: ``values[i][k]`` is f_i(xs[k]) as the
    :data:`SHARE_BYTES` big-endian bytes a message carries (:meth:`Share.value_bytes`)."""
    for secret in secret_list:
        if len(secret) > 32:
            raise ConfigurationError(f"secret must be at most 32 bytes, got {len(secret)}")
    xs = _check_abscissae(xs)
    _check_threshold(threshold, len(xs))
    return [[y.to_bytes(SHARE_BYTES, "big") for y in ys]
            for ys in _evaluate([int.from_bytes(secret, "big") for secret in secret_list], xs, threshold)]


@lru_cache(maxsize=4096)
def lagrange_at_zero(xs: tuple[int, ...]) -> tuple[int, ...]:
    """Lagrange basis values l_k(0) = prod_{m != k} x_m / (x_m - x_k) mod p (cached per set)."""
    xs = _check_abscissae(xs)
    coefficients = []
    for k, xk in enumerate(xs):
        num = 1
        den = 1
        for m, xm in enumerate(xs):
            if m != k:
                num = num * xm % PRIME
                den = den * (xm - xk) % PRIME
        coefficients.append(num * pow(den, -1, PRIME) % PRIME)
    return tuple(coefficients)


def reconstruct_secret(shares: Iterable[Share], threshold: int) -> int:
    """f(0) from at least ``threshold`` shares (uses the ``threshold`` smallest abscissae).

    Raises
    ------
    SecureSumAborted
        Fewer than ``threshold`` distinct shares: the secret is information-theoretically hidden.
    ConfigurationError
        Two shares with the same abscissa but different values.
    """
    by_x: dict[int, int] = {}
    for share in shares:
        if by_x.setdefault(share.x, share.y) != share.y:
            raise ConfigurationError(f"conflicting shares for abscissa x={share.x}")
    return interpolate(by_x, threshold)


def interpolate(points: dict[int, int], threshold: int) -> int:
    """f(0) from the points ``{x: f(x)}`` of at least ``threshold`` distinct abscissae (uses the
    ``threshold`` smallest): :func:`reconstruct_secret` of points checked by the caller
    (1 <= x < p, 0 <= y < p, as a :class:`Share` checks them), without a :class:`Share` per point
    (the masked engine's controller files each holder's checked shares by owner as they arrive).

    Raises
    ------
    SecureSumAborted
        Fewer than ``threshold`` points: the secret is information-theoretically hidden.
    """
    check_int("threshold", threshold, 1)
    if len(points) < threshold:
        raise SecureSumAborted(
            f"need at least threshold={threshold} shares to reconstruct, got {len(points)}",
            survivors=len(points),
            threshold=threshold,
        )
    xs = tuple(sorted(points)[:threshold])
    weights = lagrange_at_zero(xs)
    return sum([w * points[x] for w, x in zip(weights, xs)]) % PRIME


def interpolate_rows(values: bytes, xs: tuple[int, ...]) -> list[int]:
    """f(0) of each of several polynomials from their values at the same abscissae ``xs``:
    ``values`` holds one row per polynomial, ``len(xs)`` big-endian :data:`SHARE_BYTES`-byte
    values each (f(xs[0]), f(xs[1]), ...), as the controller of the masked engine files them
    (:class:`~parties.secure.unmasking.Unmasking`); the same integers as :func:`interpolate` of
    each row's points ``{x: f(x)}`` at ``len(xs)`` = the threshold: Lagrange at zero with the
    weights of ``xs`` (:func:`lagrange_at_zero`, once for all rows).  The values must be
    checked by the caller (each < p)."""
    if not xs:
        raise ConfigurationError("interpolate_rows needs at least one abscissa (threshold >= 1)")
    weights = lagrange_at_zero(xs)
    size, from_bytes = SHARE_BYTES, int.from_bytes
    row = size * len(xs)
    if len(values) % row:
        raise ConfigurationError(f"interpolate_rows needs rows of {len(xs)} values of {size} bytes, "
                                 f"got {len(values)} bytes")
    offsets = [(w, size * k) for k, w in enumerate(weights)]
    return [sum([w * from_bytes(values[start + at:start + at + size], "big") for w, at in offsets]) % PRIME
            for start in range(0, len(values), row)]


def reconstruct_bytes(shares: Iterable[Share] | dict[int, int], threshold: int, size: int = 32) -> bytes:
    """:func:`reconstruct_secret` (of ``shares``, or :func:`interpolate` of points ``{x: y}``)
    returned as ``size`` big-endian bytes."""
    value = interpolate(shares, threshold) if isinstance(shares, dict) else reconstruct_secret(shares, threshold)
    if value >= 1 << (8 * size):
        raise ConfigurationError(
            f"reconstructed secret does not fit in {size} bytes: the shares are inconsistent"
        )
    return value.to_bytes(size, "big")
