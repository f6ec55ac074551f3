"""Matrix digests (mprr.privacy.fingerprint): the documented SHA-256, equal for equal matrices, changes seen."""

from __future__ import annotations

import hashlib

import numpy as np

from mprr.privacy.fingerprint import matrix_fingerprint
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import grr, keep_or_uniform


def reference_digest(*arrays: np.ndarray) -> str:
    """SHA-256 over (repr(shape), float64 bytes) of each part, in order — the documented digest."""
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array, dtype=np.float64)
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def test_digest_is_the_documented_sha256_for_every_input_kind() -> None:
    P = keep_or_uniform(4, 0.6)
    expected = reference_digest(P.values)
    assert matrix_fingerprint(P) == expected  # RandomizationMatrix
    assert matrix_fingerprint(P.values.copy()) == expected  # writeable ndarray
    assert matrix_fingerprint(P.values.tolist()) == expected  # array-like
    factors = (grr(3, 0.5), grr(2, 1.0))
    kron = KroneckerMatrix(factors)
    assert matrix_fingerprint(kron) == reference_digest(*(f.values for f in factors))
    assert matrix_fingerprint(KroneckerMatrix(factors[::-1])) != matrix_fingerprint(kron)
    assert matrix_fingerprint({"a": 1}) is None and matrix_fingerprint(np.ones(3)) is None


def test_repeated_and_equal_matrices_get_the_same_digest_and_different_ones_differ() -> None:
    P = keep_or_uniform(9, 0.7)
    kron = KroneckerMatrix((grr(3, 0.5), grr(2, 1.0)))
    first, first_kron = matrix_fingerprint(P), matrix_fingerprint(kron)
    for _ in range(3):  # many parties recording a release through the same matrices
        assert matrix_fingerprint(P) == first and matrix_fingerprint(kron) == first_kron
    assert matrix_fingerprint(keep_or_uniform(9, 0.7)) == first  # a new, equal matrix object
    assert matrix_fingerprint(KroneckerMatrix((grr(3, 0.5), grr(2, 1.0)))) == first_kron
    assert matrix_fingerprint(keep_or_uniform(9, 0.71)) != first
    assert matrix_fingerprint(KroneckerMatrix((grr(3, 0.5), grr(2, 1.1)))) != first_kron


def test_a_changed_array_gets_a_new_digest() -> None:
    P = keep_or_uniform(3, 0.5).values.copy()
    before = matrix_fingerprint(P)
    P[0] = [0.9, 0.05, 0.05]
    assert matrix_fingerprint(P) == reference_digest(P) != before
