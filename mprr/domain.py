"""Joint codes and tallies over product domains.

A record of k categorical attributes with ``sizes = (r_1, ..., r_k)`` categories is coded
either as a row of k codes or as one joint code in ``[0, Π r_i)`` in C order (the first
attribute varies slowest), exactly like ``numpy.ravel_multi_index``.  The same order is used
for joint tensors (one axis per attribute) and for Kronecker products ``P1 ⊗ ... ⊗ Pk``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from mprr.errors import ConfigurationError, DataError, DomainTooLargeError

__all__ = ["MAX_TALLY_CELLS", "check_sizes", "encode_joint", "decode_joint", "tally", "joint_tally"]

#: Largest joint domain a dense tally tensor may have (2**28 cells = 2 GiB of int64).
MAX_TALLY_CELLS: int = 1 << 28

_MAX_JOINT_CODE = 1 << 62


def check_sizes(sizes: Any) -> tuple[int, ...]:
    """Validate a sequence of category counts (each an integer >= 1, non-empty)."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray)):
        raise ConfigurationError(f"sizes must be a non-empty sequence of integers >= 1, got {sizes!r}")
    out = []
    for i, s in enumerate(list(sizes)):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ConfigurationError(f"sizes[{i}] must be an integer >= 1, got {s!r}")
        out.append(int(s))
    if not out:
        raise ConfigurationError("sizes must be a non-empty sequence of integers >= 1, got []")
    if math.prod(out) > _MAX_JOINT_CODE:
        raise DomainTooLargeError(
            f"joint domain of sizes {tuple(out)} has {math.prod(out)} values, more than 2**62",
            cells=math.prod(out),
            limit=_MAX_JOINT_CODE,
        )
    return tuple(out)


def _int_codes(name: str, codes: ArrayLike, ndim: int) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)
        else:
            raise DataError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise DataError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def encode_joint(codes: ArrayLike, sizes: Sequence[int]) -> np.ndarray:
    """Joint code of every row: ``(n, k)`` codes -> ``(n,)`` int64 in C order.

    Raises
    ------
    DataError
        If ``codes`` is not an (n, k) integer array matching ``sizes`` or a code is out of range.
    """
    dims = check_sizes(sizes)
    arr = _int_codes("codes", codes, 2)
    if arr.shape[1] != len(dims):
        raise DataError(f"codes must have {len(dims)} columns (one per size), got shape {arr.shape}")
    _check_range(arr, dims)
    if arr.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    flat: np.ndarray = np.ravel_multi_index(tuple(arr.T), dims).astype(np.int64, copy=False)
    return flat


def decode_joint(flat: ArrayLike, sizes: Sequence[int]) -> np.ndarray:
    """Inverse of :func:`encode_joint`: ``(n,)`` joint codes -> ``(n, k)`` int64 codes."""
    dims = check_sizes(sizes)
    arr = _int_codes("flat", flat, 1)
    total = math.prod(dims)
    _check_range(arr[:, None], (total,), name="flat")
    if arr.shape[0] == 0:
        return np.zeros((0, len(dims)), dtype=np.int64)
    return np.stack(np.unravel_index(arr, dims), axis=1).astype(np.int64, copy=False)


def tally(codes: ArrayLike, r: int) -> np.ndarray:
    """Counts of every value ``0..r-1`` among ``codes`` (``(r,)`` int64, one bincount)."""
    if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)) or r < 1:
        raise ConfigurationError(f"r must be an integer >= 1, got {r!r}")
    arr = _int_codes("codes", codes, 1)
    _check_range(arr[:, None], (int(r),))
    return np.bincount(arr, minlength=int(r)).astype(np.int64, copy=False)


def joint_tally(codes: ArrayLike, sizes: Sequence[int]) -> np.ndarray:
    """Contingency tensor of shape ``sizes``: counts of every joint value among the rows.

    Raises DomainTooLargeError beyond :data:`MAX_TALLY_CELLS` cells.
    """
    dims = check_sizes(sizes)
    total = math.prod(dims)
    if total > MAX_TALLY_CELLS:
        raise DomainTooLargeError(
            f"a tally tensor of sizes {dims} has {total} cells, more than {MAX_TALLY_CELLS}",
            cells=total,
            limit=MAX_TALLY_CELLS,
        )
    flat = encode_joint(codes, dims)
    return np.bincount(flat, minlength=total).astype(np.int64, copy=False).reshape(dims)


def _check_range(arr: np.ndarray, dims: Sequence[int], name: str = "codes") -> None:
    if arr.size == 0:
        return
    lo = arr.min(axis=0)
    hi = arr.max(axis=0)
    for j, r in enumerate(dims):
        if lo[j] < 0 or hi[j] >= r:
            bad = lo[j] if lo[j] < 0 else hi[j]
            where = f" column {j}" if len(dims) > 1 else ""
            raise DataError(f"{name}{where} must be in [0, {r}), got {int(bad)}")
