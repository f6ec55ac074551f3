"""A universal hash family for local hashing (OLH): deterministic given a seed, vectorized.

``H_seed(v)`` maps 32-bit keys ``v`` to ``[0, g)`` for a 32-bit ``seed`` (:func:`universal_hash`).
Respondents of :class:`mprr.oracles.OLH` pick the seed from their own random stream; the
aggregator evaluates ``H_seed`` over (reports x cells) as one numpy broadcast in uint64
arithmetic (wrapping mod 2**64, as the C code of the family would).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mprr.domain import check_int
from mprr.errors import ConfigurationError, DataError

__all__ = ["OLH_MAX_G", "universal_hash", "hash_buckets", "bucket_members", "splitmix64"]

OLH_MAX_G: int = 1 << 31
"""Largest number of buckets g: ``(h * g) >> 32`` must not overflow, and OLH's report
``seed * g + y`` with a 32-bit seed must fit in an int64."""

IntArray = NDArray[np.int64]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_GAMMA2 = np.uint64((2 * 0x9E3779B97F4A7C15) % (1 << 64))
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix64(state: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The splitmix64 output function (Steele, Lea and Flood 2014) of ``state`` (wrapping uint64)."""
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    out: NDArray[np.uint64] = z ^ (z >> np.uint64(31))
    return out


def universal_hash(seeds: ArrayLike, values: ArrayLike, g: int) -> IntArray:
    """The hash family of local hashing ``H_seed: [0, 2**32) -> [0, g)``, vectorized (broadcasting).

    Dietzfelbinger's multiply-add-shift hash (*Universal hashing and k-wise independent random
    variables via integer arithmetic without primes*, STACS 1996) reduced to g buckets:

    - ``a = splitmix64(seed + γ)``, ``b = splitmix64(seed + 2γ)`` (64-bit, ``γ = 0x9E3779B97F4A7C15``);
    - ``h = ((a·v + b) mod 2**64) >> 32`` — strongly universal from 32-bit keys to 32 bits;
    - ``H = (h·g) >> 32`` — bucket sizes differ by at most one of 2**32, so two distinct values
      collide with probability 1/g up to a relative ``g/2**32``, which OLH's ``q* = 1/g`` needs.

    Parameters
    ----------
    seeds
        Integer seeds in ``[0, 2**32)`` (any shape broadcasting with ``values``).
    values
        Integer values in ``[0, 2**32)``.
    g
        Number of buckets, in [2, :data:`OLH_MAX_G`].

    Returns
    -------
    numpy.ndarray
        int64 buckets of the broadcast shape; a deterministic function of (seed, value, g).
    """
    g = check_int("g", g, 2)
    if g > OLH_MAX_G:
        raise ConfigurationError(f"g must be an integer in [2, {OLH_MAX_G:,}], got {g:,}")
    s = np.asarray(seeds)
    v = np.asarray(values)
    for name, arr in (("seeds", s), ("values", v)):
        if arr.dtype.kind not in "iu":
            raise DataError(f"{name} must be an integer array, got dtype {arr.dtype}")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= 1 << 32):
            raise DataError(f"{name} must be in [0, 2**32), got {int(arr.min()) if arr.min() < 0 else int(arr.max())}")
    return hash_buckets(s.astype(np.uint64), v.astype(np.uint64), g)


def hash_buckets(seeds: NDArray[np.uint64], values: NDArray[np.uint64], g: int) -> IntArray:
    """:func:`universal_hash` without the checks: uint64 ``seeds`` and ``values`` below 2**32,
    ``2 <= g <=`` :data:`OLH_MAX_G` (broadcasting)."""
    a = splitmix64(seeds + _GAMMA)
    b = splitmix64(seeds + _GAMMA2)
    h = (a * values + b) >> np.uint64(32)
    out: IntArray = ((h * np.uint64(g)) >> np.uint64(32)).astype(np.int64)
    return out


def bucket_members(seeds: NDArray[np.uint64], buckets: IntArray, values: NDArray[np.uint64], g: int) -> NDArray[np.bool_]:
    """``(m, k)`` table of ``H_seeds[i](values[j]) == buckets[i]`` (unchecked, like :func:`hash_buckets`).

    The aggregator's side of local hashing, in three passes over the table instead of
    :func:`hash_buckets`' six: ``H = (h·g) >> 32 = y`` exactly when ``h`` lies in
    ``[ceil(y·2**32/g), ceil((y+1)·2**32/g))``, i.e. when ``z = (a·v + b) mod 2**64`` lies in
    ``[L, L + W)`` with ``L`` and ``W`` those bounds times 2**32 — tested as
    ``(z - L) mod 2**64 < W`` (``L + W <= 2**64``), the same answer bit for bit.
    """
    a = splitmix64(seeds + _GAMMA)
    y = buckets.astype(np.uint64)
    gg = np.uint64(g)
    low = (y << np.uint64(32)) // gg + ((y << np.uint64(32)) % gg != 0)  # ceil(y 2**32 / g)
    y1 = y + np.uint64(1)
    high = (y1 << np.uint64(32)) // gg + ((y1 << np.uint64(32)) % gg != 0)
    shift = splitmix64(seeds + _GAMMA2) - (low << np.uint64(32))  # b - L, wrapping
    width = (high - low) << np.uint64(32)
    out: NDArray[np.bool_] = a[:, None] * values[None, :] + shift[:, None] < width[:, None]
    return out
