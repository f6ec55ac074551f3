"""Digests of randomization matrices, to recognise a repeated release request.

:func:`matrix_fingerprint` is how a party's ledger (:mod:`mprr.privacy.ledger`) tells "the same matrix
again" (a replay: nothing new is spent) from "another matrix" (new spending).  A run digests each
matrix once: the actor path builds one :class:`~mprr.privacy.release.Release` per request unit for
all its parties (``parties.public_state.ReleaseBook``), the local path one per unit.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["matrix_fingerprint"]


def matrix_fingerprint(matrix: Any) -> str | None:
    """A stable digest of a matrix's probabilities, used to recognise a repeated request.

    Duck-typed: an object with ``factors`` (a Kronecker product) is digested factor by
    factor; an object with ``values`` (or an array-like) by its float64 entries and shape.

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
    digest = hashlib.sha256()
    for part in (matrix,) if factors is None else tuple(factors):
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
