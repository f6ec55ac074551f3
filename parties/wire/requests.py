"""Message kinds of the release requests.

The generic kinds of :mod:`parties.wire.messages` carry the replies: a party answers a request with
:class:`~parties.wire.messages.RandomizedValues` (one released code per unit, in request order) or
with :class:`~parties.wire.messages.Refusal` (reason, requested ε, remaining ε).  This module adds
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

:class:`ReportRequest` (kind 103)
    "In phase ``phase``, report ``units`` through these frequency oracles" (a
    :class:`~mprr.protocols.steps.Report` step: oracle family and ε per unit, how units are
    assigned, their weights, the abstention probability, the phases whose reporters stay out).
    The party answers :class:`~parties.wire.messages.OracleReport` or
    :class:`~parties.wire.messages.Refusal`; it rebuilds the oracles, books what it reports at
    the ε its own oracles compute, and decides itself whether an ``exclude`` phase applies.

:class:`SecureRelease` (kind 101) and :class:`SecureSumStart` (kind 102)
    The dependence phases 4.2 / 4.3 of RR-Clusters: the party commits (ledger, input vector)
    and answers :class:`~parties.wire.messages.Ack` or :class:`~parties.wire.messages.Refusal`; the
    controller then starts a secure sum (:mod:`parties.secure`) among the committed parties.

Matrices travel as :class:`~mprr.protocols.steps.MatrixSpec` (family and parameters, see
:mod:`mprr.protocols.steps`): every party rebuilds them with the fast path's constructors.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from itertools import chain
from collections.abc import Sequence
from functools import cached_property

from mprr.errors import MessageError
from mprr.matrix_families import MATRIX_FAMILIES
from mprr.protocols.steps import ASSIGNMENTS, ORACLES, MatrixSpec, OracleSpec, Report
from parties.wire.codec import Message, message, require
from parties.wire.messages import Ack, OracleReport, RandomizedValues, Refusal

__all__ = ["ReleaseRequest", "ReportRequest", "SecureRelease", "SecureSumStart", "SortedIds", "TO_CONTROLLER",
           "expand_runs", "roster_runs"]


def _check_groups(name: str, where: str, groups: tuple[tuple[int, ...], ...]) -> None:
    """``groups`` is non-empty, of non-empty groups of distinct attribute indices >= 0 (checked
    over all groups at once; the groups one by one only to name the first bad one)."""
    if not groups:
        raise MessageError(f"{name}.{where} must not be empty")
    if (all(groups) and min(chain.from_iterable(groups)) >= 0
            and sum(map(len, map(set, groups))) == sum(map(len, groups))):  # (a set is never longer)
        return
    for g in groups:
        if not g or min(g) < 0 or len(set(g)) != len(g):
            require(len(g) > 0, f"{name}.{where} must not contain an empty group, got {groups}")
            require(min(g) >= 0, f"{name}.{where} must hold attribute indices >= 0, got {g}")
            raise MessageError(f"{name}.{where} groups must not repeat an attribute, got {g}")


def _check_request(msg: ReleaseRequest | SecureRelease, matrices: int) -> None:
    """The structural checks both request kinds share: ids, phase, plan and units (non-empty
    groups of distinct indices >= 0), and ``matrices`` matrix specifications."""
    name = msg.NAME
    if msg.request_id < 0:
        raise MessageError(f"{name}.request_id must be >= 0, got {msg.request_id}")
    if not msg.phase:
        raise MessageError(f"{name}.phase must not be empty")
    for where, groups in (("plan", msg.plan), ("units", msg.units)):
        _check_groups(name, where, groups)
    if len(msg.families) != matrices or len(msg.params) != matrices:
        raise MessageError(f"{name} needs {matrices} families and params ({len(msg.units)} units), "
                           f"got {len(msg.families)} and {len(msg.params)}")
    if not all(map(MATRIX_FAMILIES.__contains__, msg.families)):
        for f in msg.families:
            if f not in MATRIX_FAMILIES:
                raise MessageError(f"{name}.families must be in {list(MATRIX_FAMILIES)}, got {f!r}")
    if not all(map(math.isfinite, chain.from_iterable(msg.params))):
        for p in msg.params:
            if not all(math.isfinite(x) for x in p):
                raise MessageError(f"{name}.params must be finite, got {p}")


def _specs(msg: ReleaseRequest | SecureRelease) -> tuple[MatrixSpec, ...]:
    return tuple(MatrixSpec(f, p) for f, p in zip(msg.families, msg.params))


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
    :class:`~parties.wire.messages.Refusal`), because those are what a curious controller tries.
    """

    request_id: int
    phase: str
    plan: tuple[tuple[int, ...], ...]
    units: tuple[tuple[int, ...], ...]
    families: tuple[str, ...]
    params: tuple[tuple[float, ...], ...]

    def validate(self) -> None:
        _check_request(self, len(self.units))

    @property
    def specs(self) -> tuple[MatrixSpec, ...]:
        """The matrix specification of every unit."""
        return _specs(self)

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
    :class:`~parties.wire.messages.Ack` (committed: the releases are in its ledger and its input
    vector is ready) or :class:`~parties.wire.messages.Refusal`.  Its input is the concatenation,
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

    Notes
    -----
    The message says nothing about ε: the party computes what it books from the matrix it
    builds (main paper eq. (4); per-attribute shares only from a Kronecker product's factors,
    else the equal split), so a controller cannot claim a cheaper release than it asks for.
    """

    request_id: int
    phase: str
    session: str
    plan: tuple[tuple[int, ...], ...]
    units: tuple[tuple[int, ...], ...]
    exact: bool
    families: tuple[str, ...] = ()
    params: tuple[tuple[float, ...], ...] = ()

    def validate(self) -> None:
        require(bool(self.session), "SecureRelease.session must not be empty")
        _check_request(self, 0 if self.exact else len(self.units))

    @property
    def specs(self) -> tuple[MatrixSpec, ...]:
        """The matrix specification of every unit (empty for an exact release)."""
        return _specs(self)


@message(kind=103)
class ReportRequest(Message):
    """Controller → party: report ``units`` through frequency oracles in ``phase`` (a
    :class:`~mprr.protocols.steps.Report` step; see the module docstring).

    Parameters
    ----------
    request_id
        Identifier (>= 0) echoed by the reply; a repeated request reuses it.
    phase
        Protocol phase (non-empty); the phase of the party's ledger entries.
    units
        Attribute groups, one per oracle (non-empty tuples of distinct indices >= 0).
    families, epsilons
        One oracle per unit: a family of :data:`mprr.protocols.steps.ORACLES` and its ε
        (finite).
    assign
        ``"every"``, ``"sampled"`` or ``"sampled-fake"`` (:data:`mprr.protocols.steps.ASSIGNMENTS`).
    weights
        The units' weights of a sampled assignment, as the step holds them (empty: uniform);
        finite and >= 0.
    abstain
        Probability in [0, 1) that a party reports nothing (``"sampled"``).
    exclude
        Phases whose reporters report nothing here (``"sampled"``; non-empty names).

    Notes
    -----
    Validation is structural; whether the oracles can be built over the units' domains (ε > 0
    and at most :data:`mprr.oracles.MAX_EPSILON`, OUE's domain limit, GRR for fake values),
    whether the attributes exist and whether the budget allows the report is the party's
    decision (it refuses with a :class:`~parties.wire.messages.Refusal`).
    """

    request_id: int
    phase: str
    units: tuple[tuple[int, ...], ...]
    families: tuple[str, ...]
    epsilons: tuple[float, ...]
    assign: str
    weights: tuple[float, ...] = ()
    abstain: float = 0.0
    exclude: tuple[str, ...] = ()

    def validate(self) -> None:
        if self.request_id < 0:
            raise MessageError(f"ReportRequest.request_id must be >= 0, got {self.request_id}")
        require(bool(self.phase), "ReportRequest.phase must not be empty")
        _check_groups("ReportRequest", "units", self.units)
        k = len(self.units)
        if len(self.families) != k or len(self.epsilons) != k:
            raise MessageError(f"ReportRequest needs {k} families and epsilons ({k} units), "
                               f"got {len(self.families)} and {len(self.epsilons)}")
        for f in self.families:
            require(f in ORACLES, f"ReportRequest.families must be in {list(ORACLES)}, got {f!r}")
        require(all(math.isfinite(e) for e in self.epsilons),
                f"ReportRequest.epsilons must be finite, got {self.epsilons}")
        require(self.assign in ASSIGNMENTS, f"ReportRequest.assign must be in {list(ASSIGNMENTS)}, got {self.assign!r}")
        require(not self.weights or len(self.weights) == k,
                f"ReportRequest.weights must be empty (uniform) or hold one weight per unit ({k}), "
                f"got {len(self.weights)}")
        require(all(math.isfinite(w) and w >= 0.0 for w in self.weights),
                f"ReportRequest.weights must be finite and >= 0, got {self.weights}")
        require(0.0 <= self.abstain < 1.0, f"ReportRequest.abstain must be in [0, 1), got {self.abstain}")
        require(all(self.exclude), f"ReportRequest.exclude must hold non-empty phase names, got {self.exclude}")

    @property
    def step(self) -> Report:
        """The :class:`~mprr.protocols.steps.Report` step the request asks for.

        Raises
        ------
        ConfigurationError
            If the step is invalid (e.g. ε <= 0, weights that sum to 0, fake values with an
            oracle other than GRR).
        """
        return Report(self.phase, self.units, tuple(OracleSpec(f, e) for f, e in zip(self.families, self.epsilons)),
                      self.assign, self.weights or None, self.abstain, self.exclude)

    @classmethod
    def build(cls, request_id: int, step: Report) -> ReportRequest:
        """The request of ``step`` (its notes stay with the controller)."""
        return cls(
            request_id=request_id,
            phase=step.phase,
            units=step.units,
            families=tuple(o.family for o in step.oracles),
            epsilons=tuple(o.epsilon for o in step.oracles),
            assign=step.assign,
            weights=step.weights or (),
            abstain=step.abstain,
            exclude=step.exclude,
        )


def roster_runs(parties: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Distinct party ids as sorted half-open runs ``(start, stop)``: ``[0, 1, 2, 5]`` →
    ``((0, 3), (5, 6))``.  A roster with few gaps (the usual case: everyone but a few
    excluded parties) costs a few integers on the wire instead of n."""
    runs: list[list[int]] = []
    for p in sorted(set(int(x) for x in parties)):
        if runs and runs[-1][1] == p:
            runs[-1][1] = p + 1
        else:
            runs.append([p, p + 1])
    return tuple((a, b) for a, b in runs)


class SortedIds(tuple[int, ...]):
    """Sorted distinct party ids: a tuple whose ``in`` is a binary search (a party checks that
    it is in a roster of tens of thousands)."""

    __slots__ = ()

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, int):
            return super().__contains__(item)
        i = bisect_left(self, item)
        return i < len(self) and self[i] == item


def expand_runs(runs: Sequence[tuple[int, ...]]) -> SortedIds:
    """The sorted party ids of :func:`roster_runs` output."""
    return SortedIds(p for a, b in runs for p in range(a, b))


@message(kind=102)
class SecureSumStart(Message):
    """Controller → committed parties: run your side of secure-sum ``session`` now.

    Parameters
    ----------
    request_id
        The id of the :class:`SecureRelease` that committed the inputs.
    session
        The session the inputs were committed to.
    engine
        Name of the secure-sum engine to run (``"paper"``, ``"graph"``, ``"masked"``); the
        party runs its own engine, agreed at set-up, and refuses another name.
    roster
        The participants as sorted half-open runs of party ids (:func:`roster_runs`).  The
        party checks it (it must be in it, and it must be at least the party's minimum) and
        binds its committed input to it: the same input never enters a sum over another
        roster.
    """

    request_id: int
    session: str
    engine: str
    roster: tuple[tuple[int, ...], ...]

    def validate(self) -> None:
        if self.request_id < 0:
            raise MessageError(f"SecureSumStart.request_id must be >= 0, got {self.request_id}")
        require(bool(self.session), "SecureSumStart.session must not be empty")
        require(bool(self.engine), "SecureSumStart.engine must not be empty")
        require(len(self.roster) > 0, "SecureSumStart.roster must not be empty")
        last = -1
        for run in self.roster:
            if not (len(run) == 2 and last < run[0] < run[1]):
                raise MessageError("SecureSumStart.roster must be sorted, disjoint, non-adjacent runs (start, stop) "
                                   f"of party ids >= 0 with start < stop, got {self.roster[:10]}")
            last = run[1]

    @cached_property
    def parties(self) -> SortedIds:
        """The roster as sorted party ids (expanded once per message: a broadcast start is one
        decoded object for all its receivers, so n parties do not expand n ids each)."""
        return expand_runs(self.roster)


TO_CONTROLLER: tuple[type[Message], ...] = (RandomizedValues, Refusal, Ack, OracleReport)
"""Kinds a party sends the controller in answer to these requests (party → controller): the
released codes or a refusal for a :class:`ReleaseRequest`, ``Ack`` or a refusal for a
:class:`SecureRelease`, the reports or a refusal for a :class:`ReportRequest`.  The requests
themselves travel controller → party only."""
