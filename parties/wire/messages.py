"""The generic message kinds: released codes, oracle reports, refusals, aborts and acknowledgements.

Each is a frozen, typed, validated dataclass of :mod:`parties.wire.codec` (which gives its wire
layout); the release requests they answer are in :mod:`parties.wire.requests`, the secure-sum
engines' kinds in :mod:`parties.secure.messages`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import numpy as np

from mprr.errors import MessageError
from parties.wire.codec import ArraySpec, Message, message, require

if TYPE_CHECKING:
    from mprr.privacy import Refusal as PrivacyRefusal

__all__ = ["Abort", "Ack", "OracleReport", "RandomizedValues", "Refusal"]


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
        require(self.request_id >= 0, f"RandomizedValues.request_id must be >= 0, got {self.request_id}")
        require(self.codes.size == 0 or _min(self.codes) >= 0, "RandomizedValues.codes must be >= 0")
        _check_ids("RandomizedValues.ids", self.ids)


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
        require(self.request_id >= 0, f"OracleReport.request_id must be >= 0, got {self.request_id}")
        require(self.unit >= -1, f"OracleReport.unit must be >= -1 (-1: no drawn unit), got {self.unit}")
        require(self.unit < 0 or self.reports.size == 1,
                f"OracleReport.reports must hold exactly one report for the drawn unit {self.unit}, "
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
        require(self.request_id >= 0, f"Refusal.request_id must be >= 0, got {self.request_id}")
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
        require(self.request_id >= 0, f"Ack.request_id must be >= 0, got {self.request_id}")
        _check_ids("Ack.ids", self.ids)
