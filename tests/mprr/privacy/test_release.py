"""Release records (mprr.privacy.release): the fast validation path equals the full one, exactly."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mprr.privacy.release as release_module
from mprr.errors import ConfigurationError
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import cluster_optimal, grr, keep_or_uniform
from mprr.privacy.release import EXACT_KEY, Release

FIELDS = [f.name for f in dataclasses.fields(Release)]


def outcome(kwargs: dict, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """(field values with their types) or (error type, message) of Release(**kwargs)."""
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(release_module, "_canonical", lambda *args: False)  # force full validation
        try:
            r = Release(**kwargs)
        except ConfigurationError as exc:
            return ("error", str(exc))
    values = tuple(getattr(r, name) for name in FIELDS)
    return ("ok", values, tuple(type(v) for v in values), tuple(map(type, r.attributes)))


field_values = st.fixed_dictionaries(
    {
        "attributes": st.one_of(
            st.lists(st.one_of(st.sampled_from("ABC"), st.integers(0, 3)), min_size=0, max_size=3).map(tuple),
            st.lists(st.integers(0, 3).map(np.int64), min_size=1, max_size=2),
            st.just("A"),
            st.just((True,)),
        ),
        "epsilon": st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-1, 3),
            st.just(np.float64(0.5)),
            st.just(-0.0),
        ),
        "entropy_bits": st.one_of(st.none(), st.floats(min_value=-1.0, max_value=8.0), st.just(math.inf)),
        "beta": st.one_of(st.none(), st.floats(min_value=-0.5, max_value=1.5), st.just(1.0 + 1e-10)),
        "linkable": st.one_of(st.booleans(), st.just(np.bool_(False)), st.just(1)),
        "exact": st.booleans(),
        "phase": st.sampled_from(["release", "dependence", ""]),
        "request_id": st.one_of(st.none(), st.just("q1"), st.just(3)),
        "matrix_key": st.one_of(st.none(), st.just("k"), st.just(b"k")),
        "attribute_epsilons": st.one_of(
            st.none(),
            st.lists(st.one_of(st.floats(min_value=-1.0, max_value=2.0), st.just(1)), min_size=1, max_size=3).map(
                tuple
            ),
        ),
    }
)


@settings(max_examples=400, deadline=None)
@given(field_values)
def test_fast_path_accepts_and_normalises_exactly_like_full_validation(kwargs) -> None:
    # Every combination (valid or not): same fields, same types, or the same error message.
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert outcome(kwargs, fast=True, monkeypatch=monkeypatch) == outcome(
            kwargs, fast=False, monkeypatch=monkeypatch
        )


def test_canonical_values_skip_nothing_that_validation_checks() -> None:
    canonical = release_module._canonical
    good = (("A", 1), 1.0, 2.0, 0.5, True, False, "release", None, "k", (0.5, 0.5))
    assert canonical(*good)
    for position, bad in [
        (0, ("A", "A")),
        (0, ["A"]),
        (0, (np.int64(1),)),
        (1, math.nan),
        (1, 1),
        (2, math.inf),
        (3, 1.5),
        (4, np.True_),
        (5, True),  # exact with a finite ε
        (6, ""),
        (7, 3),
        (9, (0.5,)),
        (9, (0.5, -1.0)),
    ]:
        fields = list(good)
        fields[position] = bad
        assert not canonical(*fields), (position, bad)


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
