"""Digests of randomization matrices, to recognise a repeated release request.

:func:`matrix_fingerprint` is how a party's ledger (:mod:`mprr.privacy.ledger`) tells "the same matrix
again" (a replay: nothing new is spent) from "another matrix" (new spending).  The digest is
memoized per set of read-only arrays, so 32,561 parties sharing one matrix object hash it once.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["matrix_fingerprint"]

_FINGERPRINTS: dict[Any, tuple[tuple[weakref.ref[np.ndarray], ...], str]] = {}
"""Digest memo: id of the read-only values array of a matrix (a tuple of ids for the factors of
a Kronecker product) -> (weak references to the arrays, digest).  An entry is used only while
its arrays are alive, the very objects asked about, and still read-only; it is dropped when an
array is freed."""


def _frozen_array(values: Any) -> bool:
    """Whether ``values`` is a 2-D float64 ndarray that nothing can write through.

    Read-only itself and, through its whole ``base`` chain, a view of read-only arrays only
    (a read-only view of a writeable array could still change).
    """
    if type(values) is not np.ndarray or values.dtype != np.float64 or values.ndim != 2:
        return False
    array: Any = values
    while True:
        if array.flags.writeable:
            return False
        base = array.base
        if base is None:
            return True
        if not isinstance(base, np.ndarray):
            return False
        array = base


def _forget(key: Any) -> Any:
    def callback(_: Any) -> None:
        _FINGERPRINTS.pop(key, None)

    return callback


def _digest(parts: Sequence[Any]) -> str | None:
    digest = hashlib.sha256()
    for part in parts:
        values = getattr(part, "values", part)
        if callable(values):  # e.g. a Mapping's .values method: no probabilities here
            return None
        try:
            array = np.ascontiguousarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        if array.ndim != 2:
            return None
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def matrix_fingerprint(matrix: Any) -> str | None:
    """A stable digest of a matrix's probabilities, used to recognise a repeated request.

    Duck-typed: an object with ``factors`` (a Kronecker product) is digested factor by
    factor; an object with ``values`` (or an array-like) by its float64 entries and shape.
    When every part's values are read-only float64 arrays (as in
    ``mprr.matrices.RandomizationMatrix``) the digest is computed once per set of arrays and
    memoized (weak references: the memo entry goes when an array does), so the thousands of
    parties sharing one matrix object hash it once.  A read-only array is taken to be
    immutable.

    Parameters
    ----------
    matrix
        ``mprr.matrices.RandomizationMatrix``, ``KroneckerMatrix``, an ndarray, or anything
        exposing ``values`` / ``factors``.

    Returns
    -------
    str or None
        Hex SHA-256 digest, or ``None`` when the object exposes no probabilities.
    """
    factors = getattr(matrix, "factors", None)
    if factors is None:
        values = getattr(matrix, "values", matrix)
        hit = _FINGERPRINTS.get(id(values))
        if hit is not None and hit[0][0]() is values and values is not None and not values.flags.writeable:
            return hit[1]
        parts: tuple[Any, ...] = (matrix,)
        arrays: tuple[Any, ...] = (values,)
        key: Any = id(values)
    else:
        parts = tuple(factors)
        arrays = tuple(getattr(part, "values", part) for part in parts)
        key = tuple(map(id, arrays))
        hit = _FINGERPRINTS.get(key)
        if hit is not None and all(ref() is a and a is not None and not a.flags.writeable for ref, a in zip(hit[0], arrays)):
            return hit[1]
    if not all(_frozen_array(a) for a in arrays):
        return _digest(parts)
    digest = _digest(arrays)
    if digest is not None:
        callback = _forget(key)
        _FINGERPRINTS[key] = (tuple(weakref.ref(a, callback) for a in arrays), digest)
    return digest
