"""Message kinds of the release requests (kinds 100-149).

The generic kinds of :mod:`parties.messages` carry the replies: a party answers a request with
:class:`~parties.messages.RandomizedValues` (one released code per unit, in request order) or
with :class:`~parties.messages.Refusal` (reason, requested ε, remaining ε).  This module adds
the request the controller sends:

:class:`ReleaseRequest` (kind 100)
    "In phase ``phase``, whose announced plan is ``plan``, release ``units``, unit ``j``
    randomized through the matrix described by ``families[j]`` / ``params[j]``."  One request
    per party per phase carries the whole record's worth of units, so a party sends O(m) bytes
    per phase, as in main paper 4.1 ("they have to send their randomized record, then receive
    the attribute clustering and finally return their randomized record according to the
    received clustering").  ``plan`` is the announcement of the phase: the first request of a
    phase fixes the party's plan for that phase (e.g. the clusters of RR-Clusters); a later
    request with another plan, or a unit outside the plan, is refused by the party.

:class:`SecureRelease` (kind 101) and :class:`SecureSumStart` (kind 102)
    The dependence phases 4.2 / 4.3 of RR-Clusters: the party commits (ledger, input vector)
    and answers :class:`~parties.messages.Ack` or :class:`~parties.messages.Refusal`; the
    controller then starts a secure sum (:mod:`parties.secure`) among the committed parties.

Matrices travel as :class:`~mprr.protocols.steps.MatrixSpec` (family and parameters, see
:mod:`mprr.protocols.steps`): every party rebuilds them with the fast path's constructors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mprr.errors import MessageError
from mprr.protocols.steps import FAMILIES, Matrix, MatrixSpec
from parties.messages import Message, message

__all__ = ["FAMILIES", "Matrix", "MatrixSpec", "ReleaseRequest", "SecureRelease", "SecureSumStart"]


def _require(ok: bool, text: str) -> None:
    if not ok:
        raise MessageError(text)


def _check_groups(where: str, groups: tuple[tuple[int, ...], ...]) -> None:
    _require(len(groups) > 0, f"{where} must not be empty")
    for g in groups:
        _require(len(g) > 0, f"{where} must not contain an empty group, got {groups}")
        _require(all(a >= 0 for a in g), f"{where} must hold attribute indices >= 0, got {g}")
        _require(len(set(g)) == len(g), f"{where} groups must not repeat an attribute, got {g}")


@message(kind=100)
class ReleaseRequest(Message):
    """Controller → party: release ``units`` in ``phase`` (see the module docstring).

    Parameters
    ----------
    request_id
        Identifier (>= 0) echoed by the reply; a repeated request reuses it.
    phase
        Protocol phase (non-empty); the phase of the party's ledger entries.
    plan
        Attribute groups announced for the phase (non-empty tuples of indices >= 0).
    units
        Groups to release now, in draw order (the party consumes one uniform per unit).
    families, params
        One matrix specification per unit (:class:`MatrixSpec`).

    Notes
    -----
    Validation is structural only.  Whether a unit is in the plan, a plan changed, an
    attribute exists or a matrix is well formed is the party's decision (it refuses with a
    :class:`~parties.messages.Refusal`), because those are what a curious controller tries.
    """

    request_id: int
    phase: str
    plan: tuple[tuple[int, ...], ...]
    units: tuple[tuple[int, ...], ...]
    families: tuple[str, ...]
    params: tuple[tuple[float, ...], ...]

    def validate(self) -> None:
        _require(self.request_id >= 0, f"ReleaseRequest.request_id must be >= 0, got {self.request_id}")
        _require(bool(self.phase), "ReleaseRequest.phase must not be empty")
        _check_groups("ReleaseRequest.plan", self.plan)
        _check_groups("ReleaseRequest.units", self.units)
        k = len(self.units)
        _require(
            len(self.families) == k and len(self.params) == k,
            f"ReleaseRequest needs one family and one params tuple per unit ({k}), "
            f"got {len(self.families)} and {len(self.params)}",
        )
        for f in self.families:
            _require(f in FAMILIES, f"ReleaseRequest.families must be in {list(FAMILIES)}, got {f!r}")
        for p in self.params:
            _require(all(math.isfinite(x) for x in p), f"ReleaseRequest.params must be finite, got {p}")

    @property
    def specs(self) -> tuple[MatrixSpec, ...]:
        """The matrix specification of every unit."""
        return tuple(MatrixSpec(f, p) for f, p in zip(self.families, self.params))

    @classmethod
    def build(
        cls,
        request_id: int,
        phase: str,
        units: Sequence[Sequence[int]],
        specs: Sequence[MatrixSpec],
        *,
        plan: Sequence[Sequence[int]] | None = None,
    ) -> ReleaseRequest:
        """Build a request from units and :class:`MatrixSpec` objects (plan defaults to ``units``)."""
        units_t = tuple(tuple(int(a) for a in u) for u in units)
        plan_t = units_t if plan is None else tuple(tuple(int(a) for a in g) for g in plan)
        return cls(
            request_id=request_id,
            phase=phase,
            plan=plan_t,
            units=units_t,
            families=tuple(s.family for s in specs),
            params=tuple(s.params for s in specs),
        )


@message(kind=101)
class SecureRelease(Message):
    """Controller → party: contribute ``units`` to the secure sum ``session`` (main paper 4.2 / 4.3).

    The party decides as for a :class:`ReleaseRequest` (plan, budget, atomically) and answers
    :class:`~parties.messages.Ack` (committed: the releases are in its ledger and its input
    vector is ready) or :class:`~parties.messages.Refusal`.  Its input is the concatenation,
    unit by unit, of the one-hot vector of the unit's value: the **true** joint value when
    ``exact`` (4.2: ε = ∞, no DP guarantee) or the value randomized through the unit's matrix
    (4.3, one uniform per unit in unit order).  Releases inside a secure sum are unlinkable.

    Parameters
    ----------
    request_id, phase, plan, units
        As :class:`ReleaseRequest`.
    session
        Secure-sum session id (non-empty) the contribution is for.
    exact
        True for 4.2 (no matrix: ``families`` and ``params`` empty).
    families, params
        4.3: one matrix specification per unit.
    shares
        Optional per-unit, per-attribute ε shares recorded in the ledger (``unlinkable-pairs``
        policy of :mod:`mprr.ledger`); empty, or one tuple per unit (an empty tuple = none).
    """

    request_id: int
    phase: str
    session: str
    plan: tuple[tuple[int, ...], ...]
    units: tuple[tuple[int, ...], ...]
    exact: bool
    families: tuple[str, ...] = ()
    params: tuple[tuple[float, ...], ...] = ()
    shares: tuple[tuple[float, ...], ...] = ()

    def validate(self) -> None:
        _require(self.request_id >= 0, f"SecureRelease.request_id must be >= 0, got {self.request_id}")
        _require(bool(self.phase), "SecureRelease.phase must not be empty")
        _require(bool(self.session), "SecureRelease.session must not be empty")
        _check_groups("SecureRelease.plan", self.plan)
        _check_groups("SecureRelease.units", self.units)
        k = len(self.units)
        want = 0 if self.exact else k
        _require(
            len(self.families) == want and len(self.params) == want,
            f"SecureRelease needs {want} families and params (exact={self.exact}, {k} units), "
            f"got {len(self.families)} and {len(self.params)}",
        )
        for f in self.families:
            _require(f in FAMILIES, f"SecureRelease.families must be in {list(FAMILIES)}, got {f!r}")
        for p in self.params:
            _require(all(math.isfinite(x) for x in p), f"SecureRelease.params must be finite, got {p}")
        _require(len(self.shares) in (0, k), f"SecureRelease.shares must be empty or one per unit ({k})")
        for u, s in zip(self.units, self.shares):
            _require(len(s) in (0, len(u)) and all(x >= 0 for x in s),
                     f"SecureRelease.shares must give one ε >= 0 per attribute of unit {u}, got {s}")

    @property
    def specs(self) -> tuple[MatrixSpec, ...]:
        """The matrix specification of every unit (empty for an exact release)."""
        return tuple(MatrixSpec(f, p) for f, p in zip(self.families, self.params))


@message(kind=102)
class SecureSumStart(Message):
    """Controller → committed parties: run your side of secure-sum ``session`` now."""

    request_id: int
    session: str

    def validate(self) -> None:
        _require(self.request_id >= 0, f"SecureSumStart.request_id must be >= 0, got {self.request_id}")
        _require(bool(self.session), "SecureSumStart.session must not be empty")
