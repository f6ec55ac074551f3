"""Matrix digests (mprr.privacy.fingerprint): exact values, memo hits only for the very same read-only arrays."""

from __future__ import annotations

import gc
import hashlib
import weakref

import numpy as np

import mprr.privacy.fingerprint as fingerprint_module
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
    assert matrix_fingerprint(P) == expected  # RandomizationMatrix (memoized path)
    assert matrix_fingerprint(P.values.copy()) == expected  # writeable ndarray (not memoized)
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


def test_writeable_arrays_are_rehashed_so_mutations_are_seen() -> None:
    P = keep_or_uniform(3, 0.5).values.copy()
    before = matrix_fingerprint(P)
    P[0] = [0.9, 0.05, 0.05]
    assert matrix_fingerprint(P) == reference_digest(P) != before
    # A read-only *view* of a writeable array can still change through its base: not memoized.
    base = keep_or_uniform(3, 0.5).values.copy()
    view = base.view()
    view.setflags(write=False)
    digest = matrix_fingerprint(view)
    base[1] = [0.1, 0.8, 0.1]
    assert matrix_fingerprint(view) != digest


def test_memo_entry_is_used_only_for_the_very_same_live_read_only_array() -> None:
    P = keep_or_uniform(5, 0.4)
    honest = matrix_fingerprint(P)
    # Plant a wrong entry under the id of P's array but pointing at another array (as if an
    # id had been reused): it must be ignored and replaced.
    other = np.ones((2, 2))
    fingerprint_module._FINGERPRINTS[id(P.values)] = ((weakref.ref(other),), "bogus")
    assert matrix_fingerprint(P) == honest
    # An array made writeable again after being memoized is re-hashed.
    array = np.array(P.values)
    array.setflags(write=False)
    digest = matrix_fingerprint(array)
    array.setflags(write=True)
    array[0] = np.roll(array[0], 1)
    assert matrix_fingerprint(array) != digest


def test_memo_does_not_outlive_its_arrays() -> None:
    def memoize_temporary() -> int:
        P = keep_or_uniform(7, 0.3)
        matrix_fingerprint(P)
        key = id(P.values)
        assert key in fingerprint_module._FINGERPRINTS
        return key

    key = memoize_temporary()
    gc.collect()
    entry = fingerprint_module._FINGERPRINTS.get(key)
    assert entry is None or entry[0][0]() is not None  # dropped, or re-used by a live array
