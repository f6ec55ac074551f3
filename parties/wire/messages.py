"""The generic message kinds: released codes, oracle reports, refusals, aborts and acknowledgements.

Each is a frozen, typed, validated dataclass of :mod:`parties.wire.codec` (which gives its wire
layout); the release requests they answer are in :mod:`parties.wire.requests`, the secure-sum
engines' kinds in :mod:`parties.secure.messages`.  :class:`ReplyBlock` is the wire form of
reply columns (:mod:`parties.columns`): the :class:`RandomizedValues` replies of several parties
of one shard to one request, carried as one frame between processes; :func:`values_layout`
gives where the codec writes a reply's codes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Annotated

import numpy as np

from mprr.errors import MessageError
from parties.wire.codec import ArraySpec, Message, encode, message, require

if TYPE_CHECKING:
    from mprr.privacy import Refusal as PrivacyRefusal

__all__ = ["Abort", "Ack", "OracleReport", "RandomizedValues", "Refusal", "ReplyBlock", "values_layout"]


def _check_ids(where: str, values: tuple[int, ...]) -> None:
    if values and min(values) < 0:
        raise MessageError(f"{where} must contain integers >= 0, got {min(values)}")


def _min(values: np.ndarray) -> float | int:
    """Smallest entry (through a list for small arrays, which is several times faster)."""
    smallest: float | int = min(values.tolist()) if values.size <= 64 else values.min()
    return smallest


def _check_epsilon(where: str, value: float) -> None:
    if not value >= 0:  # also NaN
        raise MessageError(f"{where} must be >= 0 (inf allowed), got {value}")


@message(kind=2)
class RandomizedValues(Message):
    """Party → controller: the randomized codes released for ``request_id``.

    ``codes`` is int64 1-D, every code >= 0 (one code per release in the request order).
    """

    request_id: int
    codes: Annotated[np.ndarray, ArraySpec(("int64",), ndim=1)]
    ids: tuple[int, ...] = ()

    def validate(self) -> None:
        if self.request_id < 0:
            raise MessageError(f"RandomizedValues.request_id must be >= 0, got {self.request_id}")
        require(self.codes.size == 0 or _min(self.codes) >= 0, "RandomizedValues.codes must be >= 0")
        if self.ids:
            _check_ids("RandomizedValues.ids", self.ids)


@lru_cache(maxsize=256)
def values_layout(request_id: int, units: int) -> tuple[bytes, bytes] | None:
    """Where the codec writes the codes of ``RandomizedValues(request_id, codes)`` with ``units``
    codes (and no ``ids``): ``(prefix, suffix)`` such that every such reply encodes as ``prefix +
    codes.tobytes() + suffix`` (int64, little endian), found by encoding two probes whose codes
    differ in every byte; ``None`` when there are no codes to locate (``units`` 0) or the codec
    does not lay them out so."""
    width = units * 8
    if units <= 0 or request_id < 0:
        return None
    low = encode(RandomizedValues(request_id, np.zeros(units, dtype=np.int64)))
    full = np.full(units, 0x0101010101010101, dtype=np.int64)
    high = encode(RandomizedValues(request_id, full))
    at = next((j for j, (a, b) in enumerate(zip(low, high)) if a != b), -1)
    if (len(low) != len(high) or at < 0 or high[at:at + width] != full.astype("<i8").tobytes()
            or low[at + width:] != high[at + width:]):  # pragma: no cover - (the codec writes arrays in place)
        return None
    return low[:at], low[at + width:]


@message(kind=8)
class ReplyBlock(Message):
    """Shard host → router: the :class:`RandomizedValues` replies of parties ``srcs`` to
    ``request_id`` in ``phase``, as one frame (the wire form of
    :class:`~parties.columns.ReplyColumns`, :mod:`parties.channel`).

    Member ``k``'s message is ``RandomizedValues(request_id, codes[k])``, encoded by the codec as
    ``prefix + codes[k] + suffix``: ``srcs`` int64 1-D, distinct, each >= 0 (at least one);
    ``codes`` int64 ``(len(srcs), units)``, ``units`` >= 1, every code >= 0; ``prefix`` and
    ``suffix`` exactly the codec's layout of such a reply (:func:`values_layout`), so each
    member's bytes are the codec's encoding of its own message.  Which parties a sender may
    speak for is the router's check (:meth:`parties.router.Router.ingress_columns`).
    """

    request_id: int
    phase: str
    srcs: Annotated[np.ndarray, ArraySpec(("int64",), ndim=1)]
    codes: Annotated[np.ndarray, ArraySpec(("int64",), ndim=2)]
    prefix: bytes
    suffix: bytes

    def validate(self) -> None:
        require(self.request_id >= 0, f"ReplyBlock.request_id must be >= 0, got {self.request_id}")
        require(bool(self.phase), "ReplyBlock.phase must not be empty")
        srcs, codes = self.srcs, self.codes
        count = int(srcs.shape[0])
        require(count >= 1, "ReplyBlock.srcs must hold at least one party, got none")
        require(codes.shape[0] == count,
                f"ReplyBlock.codes must have one row per party of srcs ({count}), got shape {codes.shape}")
        require(codes.shape[1] >= 1, f"ReplyBlock.codes must have at least one code per party, got shape {codes.shape}")
        require(_min(srcs) >= 0, f"ReplyBlock.srcs must be party ids >= 0, got {_min(srcs)}")
        if count > 1 and not bool(np.all(srcs[1:] > srcs[:-1])):  # (ascending: distinct at once)
            require(np.unique(srcs).shape[0] == count, "ReplyBlock.srcs must be distinct parties")
        require(_min(codes.reshape(-1)) >= 0, "ReplyBlock.codes must be >= 0")
        layout = values_layout(self.request_id, int(codes.shape[1]))
        require(layout is not None and (self.prefix, self.suffix) == layout,
                f"ReplyBlock.prefix and suffix must be the codec's layout of RandomizedValues({self.request_id}, "
                f"{codes.shape[1]} codes): {layout!r}, got {(self.prefix[:40], self.suffix[:40])!r}")


@message(kind=7)
class OracleReport(Message):
    """Party → controller: the frequency-oracle reports for ``request_id`` (a
    :class:`~parties.wire.requests.ReportRequest`).

    ``unit`` is the index of the unit the party drew and reports (``assign="sampled"``), or
    ``-1``: every unit is reported (``"every"``, ``"sampled-fake"``: one report per unit, in
    request order, the assignment hidden) or, with no report, the party reports nothing in this
    phase (it abstained or was excluded).  ``reports`` is int64 1-D, every code >= 0
    (:mod:`mprr.oracles`: GRR the cell, OUE the bitmask, OLH ``seed * g + y``); a drawn unit
    has exactly one.
    """

    request_id: int
    unit: int
    reports: Annotated[np.ndarray, ArraySpec(("int64",), ndim=1)]

    def validate(self) -> None:
        if self.request_id < 0:
            raise MessageError(f"OracleReport.request_id must be >= 0, got {self.request_id}")
        if self.unit < -1:
            raise MessageError(f"OracleReport.unit must be >= -1 (-1: no drawn unit), got {self.unit}")
        if self.unit >= 0 and self.reports.size != 1:
            raise MessageError(f"OracleReport.reports must hold exactly one report for the drawn unit {self.unit}, "
                               f"got {self.reports.size}")
        require(self.reports.size == 0 or _min(self.reports) >= 0, "OracleReport.reports must be >= 0")


@message(kind=3)
class Refusal(Message):
    """Party → controller: ``request_id`` refused, e.g. it would exceed the privacy budget.

    ``requested`` is the ε the release would cost, ``remaining`` the ε left (both >= 0, inf
    allowed), ``reason`` a non-empty explanation.
    """

    request_id: int
    reason: str
    requested: float
    remaining: float

    @classmethod
    def of(cls, refusal: PrivacyRefusal) -> Refusal:
        """The wire form of a party's :class:`mprr.privacy.Refusal` record of a controller request."""
        return cls(int(refusal.request_id or 0), f"{refusal.reason}: {refusal.message}", refusal.requested,
                   refusal.remaining)

    def validate(self) -> None:
        if self.request_id < 0:
            raise MessageError(f"Refusal.request_id must be >= 0, got {self.request_id}")
        require(bool(self.reason), "Refusal.reason must not be empty")
        _check_epsilon("Refusal.requested", self.requested)
        _check_epsilon("Refusal.remaining", self.remaining)


@message(kind=5)
class Abort(Message):
    """Any actor → others: the run stops; ``reason`` non-empty, ``phase`` where it happened."""

    reason: str
    phase: str = ""

    def validate(self) -> None:
        require(bool(self.reason), "Abort.reason must not be empty")


@message(kind=6)
class Ack(Message):
    """Acknowledges ``request_id`` (>= 0); ``ids`` free identifiers (>= 0)."""

    request_id: int
    ids: tuple[int, ...] = ()

    def validate(self) -> None:
        if self.request_id < 0:
            raise MessageError(f"Ack.request_id must be >= 0, got {self.request_id}")
        if self.ids:
            _check_ids("Ack.ids", self.ids)
