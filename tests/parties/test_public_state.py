"""Tests for parties.public_state: the shared memo of public objects and the session directory."""

from __future__ import annotations

import numpy as np

from mprr.data import Attribute, Schema
from mprr.matrices import keep_or_uniform
from parties.wire.requests import ReleaseRequest, SecureRelease, SecureSumStart
from mprr.privacy import RefusalReason
from mprr.protocols.steps import MatrixSpec
from parties.secure.agreement import DIGEST_BYTES, agreed_session, request_digest
from parties.public_state import ReleaseBook, ResolvedUnit
from parties.secure.graph import GraphEngine

SCHEMA = Schema(tuple(Attribute(f"a{j}", tuple(map(str, range(s))), "nominal") for j, s in enumerate((3, 4, 2))))


def test_resolution_is_memoized_per_request_object_and_units_are_shared() -> None:
    book = ReleaseBook(SCHEMA)
    req = ReleaseRequest.build(1, "p", [(0,), (1, 2)], [MatrixSpec.keep_or_uniform(0.5)] * 2)
    first = book.resolve(req)
    assert book.resolve(req) is first
    again = book.resolve(ReleaseRequest.build(2, "p", [(0,), (1, 2)], [MatrixSpec.keep_or_uniform(0.5)] * 2))
    assert again is not first and again.units[0] is first.units[0]  # same public unit object
    unit = first.units[1]
    assert unit.names == ("a1", "a2") and unit.sizes == (4, 2) and unit.cells == 8
    assert unit.values(np.array([[2, 3, 1], [0, 0, 0]])).tolist() == [7, 0]  # C order: 3 * 2 + 1
    assert np.array_equal(first.units[0].matrix.values, keep_or_uniform(3, 0.5).values)
    assert first.ask.plan == (("a0",), ("a1", "a2")) and first.ask.releases == tuple(u.release for u in first.units)


def test_resolution_reports_unknown_attributes_and_bad_matrices() -> None:
    book = ReleaseBook(SCHEMA)
    bad = book.resolve(ReleaseRequest.build(1, "p", [(3,)], [MatrixSpec.grr(1.0)]))
    assert bad.units is None and "holds attributes 0..2 only" in bad.message
    invalid = book.resolve(ReleaseRequest.build(1, "p", [(0,)], [MatrixSpec("grr", (0.0,))]))
    assert invalid.units is None and invalid.reason is RefusalReason.INVALID_REQUEST


def test_secure_units_are_unlinkable_and_exact_ones_have_no_matrix() -> None:
    book = ReleaseBook(SCHEMA)
    res = book.resolve(SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), True))
    (unit,) = res.units
    assert unit.exact and unit.matrix is None
    assert unit.release.exact and not unit.release.linkable and unit.release.phase == "dependence"


def test_secure_context_is_derived_from_the_start_message_and_memoized() -> None:
    book = ReleaseBook(SCHEMA)
    engine = GraphEngine(degree=2)
    start = SecureSumStart(1, "s", "graph", ((0, 3), (5, 7)))
    release = SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), True)
    digest = book.digest(release)
    assert digest == request_digest(release) and book.digest(release) is digest
    ctx = book.secure_context(engine, start, 12, digest=digest)
    agreed = agreed_session(digest, start)
    assert ctx.parties == (0, 1, 2, 5, 6) and ctx.length == 12 and ctx.session == agreed
    assert agreed.startswith("s#") and len(agreed) == 2 + 2 * DIGEST_BYTES
    assert book.secure_context(engine, start, 12, digest=digest) is ctx
    assert ctx == engine.context((0, 1, 2, 5, 6), 12, session=agreed)  # what the controller builds
    # another request under the same controller session is another session
    other = SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), False, ("dense",), ((0.5,),))
    assert book.secure_context(engine, start, 12, digest=request_digest(other)).session != agreed


def test_value_of_is_values_for_one_record() -> None:
    """The one-record joint code a party computes on its own equals the fast path's
    (:func:`mprr.protocols.release.unit_codes`) for every unit shape."""
    from mprr.data import Attribute, Schema

    schema = Schema([Attribute(f"a{k}", tuple(str(v) for v in range(s))) for k, s in enumerate((3, 5, 2, 4))])
    records = np.random.default_rng(5).integers(0, (3, 5, 2, 4), size=(40, 4))
    for unit in [(0,), (2,), (0, 1), (3, 1), (0, 2, 3), (1, 2, 3, 0)]:
        resolved = ResolvedUnit(unit, schema, None, "p")
        expected = resolved.values(records)
        assert [resolved.value_of(tuple(int(v) for v in r)) for r in records] == expected.tolist()


def test_sample_one_is_sample_for_one_record() -> None:
    """A party answering on its own releases what its row would in a vectorized batch, for a
    dense and a Kronecker matrix, uniforms on the CDF's own values included."""
    from mprr.data import Attribute, Schema
    from mprr.kronecker import KroneckerMatrix
    from mprr.matrices import keep_or_uniform

    schema = Schema([Attribute(f"a{k}", tuple(str(v) for v in range(s))) for k, s in enumerate((3, 4))])
    rng = np.random.default_rng(8)
    records = rng.integers(0, (3, 4), size=(200, 2))
    dense = keep_or_uniform(12, 0.6)
    kron = KroneckerMatrix((keep_or_uniform(3, 0.5), keep_or_uniform(4, 0.7)))
    for matrix in (dense, kron):
        resolved = ResolvedUnit((0, 1), schema, matrix, "p")
        uniforms = rng.random(200)
        uniforms[:12] = dense.cdf[0, :12] if matrix is dense else uniforms[:12]  # ties with the CDF
        uniforms = np.minimum(uniforms, np.nextafter(1.0, 0.0))
        expected = resolved.sample(records, uniforms)
        got = [resolved.sample_one(tuple(int(v) for v in r), float(u)) for r, u in zip(records, uniforms)]
        assert got == expected.tolist()
