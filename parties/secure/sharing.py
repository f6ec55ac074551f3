"""Additive secret sharing over Z_M.

A vector x is split into n shares s_1, ..., s_n with s_1 + ... + s_n = x (mod M): any n - 1 of
them are independent and uniform, so they reveal nothing about x.

Two variants are used by the engines:

- :func:`split` — shares of a given vector (graph engine: one share kept, the others sent to the
  neighbours in the communication graph);
- :func:`zero_shares` — main paper Section 4.2 step 1: party i chooses r_i1, ..., r_in with
  sum_j r_ij = 0 (mod n + 1); its own indicator is added only in step 3 to the sum of the
  shares it received.  Step 3 adds the shares a party received (:func:`reconstruct`) to its
  indicator; step 4 is :func:`reconstruct` of the broadcasts.
"""

from __future__ import annotations

import numpy as np

from mprr.domain import check_int
from mprr.errors import ConfigurationError
from parties.secure.prg import Keystream
from parties.secure.ring import ZMod

__all__ = ["split", "zero_shares", "reconstruct"]


def _check_count(count: int, name: str) -> int:
    return check_int(name, count, 1)


def zero_shares(count: int, length: int, ring: ZMod, stream: Keystream) -> np.ndarray:
    """``count`` uniform share vectors of ``length`` elements summing to 0 mod M.

    Main paper Section 4.2 step 1 with M = n + 1 and ``count = n``: rows 0..n-2 are uniform,
    the last row is minus their sum, so every n - 1 rows are jointly uniform.

    Returns
    -------
    ndarray of shape (count, length) and dtype ``ring.dtype``.
    """
    count = _check_count(count, "count")
    check_int("length", length, 0)
    shares = np.empty((count, length), dtype=ring.dtype)
    if count > 1:
        shares[:-1] = ring.random(stream, (count - 1, length))
        shares[-1] = ring.neg(ring.sum(shares[:-1], axis=0))
    else:
        shares[0] = 0
    return shares


def split(vector: np.ndarray, count: int, ring: ZMod, stream: Keystream) -> np.ndarray:
    """Split ``vector`` (elements of Z_M) into ``count`` additive shares.

    Returns an array of shape (count, len(vector)); row 0 is ``vector`` minus the sum of the
    uniform rows 1..count-1, so the rows sum to ``vector`` mod M.
    """
    vec = ring.reduce(np.asarray(vector))
    if vec.ndim != 1:
        raise ConfigurationError(f"vector must be 1-D, got shape {vec.shape}")
    shares = zero_shares(count, vec.size, ring, stream)
    shares[0] = ring.add(shares[0], vec)
    return shares


def reconstruct(shares: np.ndarray, ring: ZMod) -> np.ndarray:
    """Sum of the share rows mod M (main paper Section 4.2 step 4)."""
    arr = np.asarray(shares)
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ConfigurationError(f"shares must be a non-empty 2-D array, got shape {arr.shape}")
    return ring.sum(arr, axis=0)
