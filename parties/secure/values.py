"""Values into and out of a secure sum: a party's input checked and mapped into Z_M
(:func:`as_ring_vector`; in two steps, :func:`checked_input` and :func:`into_ring`), and totals that are exact int64 counts (:func:`check_total`,
:func:`to_counts`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mprr.errors import ConfigurationError, ProtocolError
from parties.secure.context import SecureSumContext
from parties.secure.ring import ZMod

__all__ = ["MAX_TOTAL", "as_ring_vector", "check_total", "checked_input", "into_ring", "to_counts"]


def as_ring_vector(vector: Any, ctx: SecureSumContext, ring: ZMod) -> np.ndarray:
    """Validate a party's input (1-D, length L, integers in [0, max_value]) and map it into Z_M
    (a new array of the ring's dtype): :func:`into_ring` of :func:`checked_input`."""
    return into_ring(checked_input(vector, ctx), ctx, ring)


def checked_input(vector: Any, ctx: SecureSumContext) -> np.ndarray:
    """A party's input as an array, validated: 1-D, length L, integers in [0, max_value]
    (ConfigurationError naming what is wrong)."""
    arr = np.asarray(vector)
    if arr.ndim != 1 or arr.shape[0] != ctx.length:
        raise ConfigurationError(
            f"vector must be 1-D of length {ctx.length}, got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iub":
        raise ConfigurationError(f"vector must hold integers, got dtype {arr.dtype}")
    high = int(arr.max()) if arr.size else 0
    if high > ctx.max_value or (arr.dtype.kind == "i" and arr.size and int(arr.min()) < 0):  # (unsigned: none < 0)
        low = int(arr.min()) if arr.size else 0
        raise ConfigurationError(
            f"vector entries must be integers in [0, {ctx.max_value}] (max_value), got range [{low}, {high}]"
        )
    return arr


def into_ring(arr: np.ndarray, ctx: SecureSumContext, ring: ZMod) -> np.ndarray:
    """An input :func:`checked_input` returned, mapped into Z_M: a new array of the ring's dtype
    (the masked engine masks it in place)."""
    out: np.ndarray = (arr.astype(ring.dtype) if ctx.max_value < ring.modulus  # every entry its own residue
                       else np.array(ring.reduce(arr), dtype=ring.dtype))
    return out


MAX_TOTAL = (1 << 63) - 1
"""Largest total an engine returns: totals are int64 counts, so every sum must stay <= 2^63 − 1."""


def check_total(n: int, max_value: int) -> None:
    """Refuse a session whose largest possible total, ``n * max_value``, leaves int64.

    Raises
    ------
    ConfigurationError
        Naming ``max_value``, ``n`` and the largest ``max_value`` allowed for ``n`` parties.
    """
    if n * max_value > MAX_TOTAL:
        raise ConfigurationError(
            f"max_value={max_value} with n={n} parties allows totals up to n * max_value = "
            f"{n * max_value}, beyond the int64 counts a secure sum returns (<= 2**63 - 1); "
            f"max_value must be <= {MAX_TOTAL // n} for n={n}"
        )


def to_counts(values: np.ndarray) -> np.ndarray:
    """Ring elements that are exact counts (<= 2^63 − 1, :func:`check_total`) as int64.

    Raises
    ------
    ProtocolError
        If an element exceeds :data:`MAX_TOTAL` (it cannot be a count; never cast to a negative).
    """
    arr = np.asarray(values)
    if arr.size and arr.dtype == np.uint64 and int(arr.max()) > MAX_TOTAL:
        raise ProtocolError(f"a secure-sum total of {int(arr.max())} exceeds 2**63 - 1 and is no count")
    return arr.astype(np.int64)
