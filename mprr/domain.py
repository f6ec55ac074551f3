"""Checks of parameter values (one of each kind), and joint codes and tallies over product domains.

``check_int``, ``check_real``, ``check_epsilon``, ``check_unit``, ``check_sizes`` and
``check_cells`` raise :class:`~mprr.errors.ConfigurationError` naming the parameter, the bad
value and what is allowed; the modules of ``mprr`` share them.

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

__all__ = [
    "MAX_TENSOR_CELLS",
    "MAX_MATRIX_CELLS",
    "MAX_TABLE_CELLS",
    "check_cells",
    "check_epsilon",
    "check_int",
    "check_real",
    "check_sizes",
    "check_unit",
    "real_array",
    "encode_joint",
    "decode_joint",
    "tally",
    "joint_tally",
]

MAX_TENSOR_CELLS: int = 50_000_000
"""Default largest dense tensor over a joint domain (probabilities, counts): 50 million cells,
400 MB of float64.  Functions that build one take ``max_cells`` to raise it."""

MAX_MATRIX_CELLS: int = 1 << 24
"""Largest dense randomization matrix: 2**24 entries (128 MiB of float64), i.e. a joint domain
of 4096 values.  Larger domains use per-attribute factors (Kronecker products)."""

MAX_TABLE_CELLS: int = 1 << 22
"""Default largest joint table a protocol estimates or releases per unit (4,194,304 cells)."""

_MAX_JOINT_CODE = 1 << 62


def _shown(value: Any) -> Any:
    """Plain Python value for error messages (``1.5``, not ``np.float64(1.5)``)."""
    return value.item() if isinstance(value, np.generic) else value


def check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an ``int`` or raise ConfigurationError naming the rule."""
    value = _shown(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ConfigurationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise ConfigurationError."""
    value = _shown(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ConfigurationError(f"{name} must be finite and > 0, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0.0:
        raise ConfigurationError(f"{name} must be finite and > 0, got {value!r}")
    return v


def check_unit(name: str, value: Any, *, low_open: bool = False, high_open: bool = False,
               why: str = "") -> float:
    """Return ``value`` as a float in [0, 1], the ends excluded with ``low_open`` / ``high_open``
    (``why`` explains the excluded ends in the error)."""
    allowed = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
    value = _shown(value)
    v = float(value) if isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_)) else None
    if v is None or not (math.isfinite(v) and 0.0 <= v <= 1.0) or (low_open and v == 0.0) or (high_open and v == 1.0):
        raise ConfigurationError(f"{name} must be a real number in {allowed}{why}, got {value!r}")
    return v


def check_real(name: str, value: Any, *, minimum: float | None = 0.0, allow_inf: bool = False,
               strict: bool = False) -> float:
    """Return ``value`` as a float if it is a real number (no bool, no NaN), finite unless
    ``allow_inf``, and ``>= minimum`` (``> minimum`` if ``strict``) unless ``minimum`` is None;
    else raise ConfigurationError."""
    value = _shown(value)
    real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    v = float(value) if real else math.nan
    if math.isnan(v) or (math.isinf(v) and not allow_inf) or (minimum is not None and (v <= minimum if strict else v < minimum)):
        bound = "" if minimum is None else f" {'>' if strict else '>='} {minimum:g}"
        allowed = f"a number{bound} or math.inf" if allow_inf and bound else "a real number" if allow_inf else (
            f"a finite number{bound}")
        raise ConfigurationError(f"{name} must be {allowed}, got {value!r}")
    return v


def real_array(name: str, values: ArrayLike, *, finite: bool = False) -> np.ndarray:
    """``values`` as a float64 array (``values`` itself if it is one), or ConfigurationError naming
    ``name``: complex values are refused, not cast (the cast would drop the imaginary part); with
    ``finite``, NaN and ∞ too."""
    try:
        if np.iscomplexobj(values):
            raise TypeError("complex values")
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{name} must be an array of real numbers, got {values!r}") from exc
    if finite and not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{name} must be finite (no NaN or inf), got {arr[~np.isfinite(arr)][0]}")
    return arr


def check_cells(cells: int, limit: int, what: str, *, name: str = "max_cells", remedy: str = "") -> int:
    """``cells`` when at most ``limit``; otherwise DomainTooLargeError naming ``what`` needs them,
    the limit ``name=limit`` and, when given, the ``remedy``.

    The one check of the size of a dense object, made before anything is built or drawn.
    """
    if cells > limit:
        raise DomainTooLargeError(
            f"{what} needs {cells:,} cells, more than {name}={limit:,}" + (f"; {remedy}" if remedy else ""),
            cells=cells,
            limit=limit,
        )
    return cells


def check_sizes(sizes: Any, *, name: str = "sizes") -> tuple[int, ...]:
    """Validate category counts: a non-empty sequence of integers >= 1 (``name`` is the
    parameter the error names); their joint codes must fit in int64."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray, tuple)):
        raise ConfigurationError(f"{name} must be a non-empty sequence of integers >= 1, got {sizes!r}")
    out = []
    for i, s in enumerate(list(sizes)):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ConfigurationError(f"{name}[{i}] must be an integer >= 1, got {s!r}")
        out.append(int(s))
    if not out:
        raise ConfigurationError(f"{name} must be a non-empty sequence of integers >= 1, got []")
    check_cells(math.prod(out), _MAX_JOINT_CODE, f"the joint domain of {name} {tuple(out)}",
                name="2**62 (int64 joint codes)")
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
    r = check_int("r", r, 1)
    arr = _int_codes("codes", codes, 1)
    _check_range(arr[:, None], (r,))
    return np.bincount(arr, minlength=r).astype(np.int64, copy=False)


def joint_tally(codes: ArrayLike, sizes: Sequence[int], *, max_cells: int = MAX_TENSOR_CELLS) -> np.ndarray:
    """Contingency tensor of shape ``sizes``: counts of every joint value among the rows.

    Raises DomainTooLargeError beyond ``max_cells`` cells.
    """
    dims = check_sizes(sizes)
    total = check_cells(math.prod(dims), max_cells, f"a tally tensor of sizes {dims}")
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
