"""Release records (mprr.privacy.release): validation, constructors, derived properties, and the
matrix digest (the documented SHA-256, equal for equal matrices, changes seen)."""

from __future__ import annotations

import dataclasses
import hashlib
import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import cluster_optimal, grr, keep_or_uniform
from mprr.privacy.release import EXACT_KEY, Release, matrix_fingerprint

GOOD = dict(attributes=("A", 1), epsilon=1.0, entropy_bits=2.0, beta=0.5, linkable=True, exact=False,
            phase="release", request_id=None, matrix_key="k", attribute_epsilons=(0.5, 0.5))


@pytest.mark.parametrize(
    ("field", "bad", "match"),
    [
        ("attributes", ("A", "A"), r"attributes must be non-empty and without repeats, got \('A', 'A'\)"),
        ("attributes", (True,), r"attributes must be names \(str\) or indices \(int\), got True"),
        ("epsilon", math.nan, r"epsilon"),
        ("entropy_bits", math.inf, r"entropy_bits"),
        ("beta", 1.5, r"beta must be in \[0, 1\], got 1.5"),
        ("linkable", 1, r"linkable must be True or False, got 1"),
        ("exact", True, r"an exact release .* has epsilon = inf, got 1.0"),
        ("phase", "", r"phase must be a non-empty string, got ''"),
        ("request_id", 3, r"request_id must be a string or None, got 3"),
        ("attribute_epsilons", (0.5,), r"attribute_epsilons must have one entry per attribute \(2\), got 1"),
        ("attribute_epsilons", (1.5, -0.5), r"attribute_epsilons entry"),
    ],
)
def test_an_invalid_field_is_named_with_its_value(field: str, bad: object, match: str) -> None:
    Release(**GOOD)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=match):
        Release(**{**GOOD, field: bad})  # type: ignore[arg-type]


def test_fields_are_normalised() -> None:
    r = Release(**{**GOOD, "attributes": ["A", np.int64(1)], "epsilon": 1, "linkable": np.True_})  # type: ignore[arg-type]
    assert r.attributes == ("A", 1) and type(r.attributes[1]) is int
    assert type(r.epsilon) is float and r.linkable is True
    assert Release("A", 0.5).attributes == ("A",)


def test_from_matrix_equals_the_validated_constructor() -> None:
    dense = keep_or_uniform(9, 0.7)
    r = Release.from_matrix(["education"], dense, phase="dependence", request_id="r1")
    assert r == Release(
        attributes=("education",),
        epsilon=dense.epsilon,
        entropy_bits=dense.entropy_rate,
        beta=dense.beta,
        phase="dependence",
        request_id="r1",
        matrix_key=r.matrix_key,
    )
    assert type(r.epsilon) is float and r.linkable is True and r.exact is False
    kron = KroneckerMatrix((grr(3, 0.5), grr(4, 1.0)))
    k = Release.from_matrix((np.int64(0), 2), kron, linkable=np.bool_(False))
    assert k.attributes == (0, 2) and type(k.attributes[0]) is int and k.linkable is False
    assert k.attribute_epsilons == pytest.approx((0.5, 1.0))
    cluster = cluster_optimal((3, 4), 1.5)
    assert Release.from_matrix(("a", "b"), cluster).attribute_epsilons is None
    with pytest.raises(ConfigurationError, match=r"without repeats"):
        Release.from_matrix(("a", "a"), cluster)
    with pytest.raises(ConfigurationError, match=r"phase must be a non-empty string"):
        Release.from_matrix("a", dense, phase="")


def test_exact_values_and_derived_properties() -> None:
    r = Release.exact_values(["A", "B"], request_id="x")
    assert (r.epsilon, r.entropy_bits, r.beta, r.exact, r.linkable, r.matrix_key) == (
        math.inf,
        0.0,
        0.0,
        True,
        False,
        EXACT_KEY,
    )
    assert r.attribute_set == frozenset({"A", "B"})
    # Derived caches never enter equality, hashing or repr, and replace() recomputes them.
    s = dataclasses.replace(r, attributes=("A", "C"))
    assert s.attribute_set == frozenset({"A", "C"}) and r != s
    assert r == Release.exact_values(["A", "B"], request_id="x") and "attribute_set" not in repr(r)
    assert hash(r) == hash(Release.exact_values(["A", "B"], request_id="x"))


# ---------------------------------------------------------------------- matrix digests


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
