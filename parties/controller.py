"""The controller actor (untrusted): orchestrates phases and gathers what the parties release.

A :class:`Controller` owns the controller's :class:`~parties.transport.Endpoint` and a
:class:`~parties.view.ViewLog`.  Choreographies (:mod:`parties.choreographies`) drive it
phase by phase with :meth:`Controller.release`:

1. one :class:`~parties.wire.requests.ReleaseRequest` is broadcast to every active party
   (one communication round), encoded once;
2. the replies are collected, one round under one ``asyncio.timeout``
   (:func:`parties.exchange.exchange`): one :class:`~parties.wire.messages.RandomizedValues` or
   :class:`~parties.wire.messages.Refusal` per party.  Every received message goes to the view
   log first.  A reply to another request (a late or duplicated message) is logged and ignored;
3. with ``retries > 0`` the request is re-sent, with the same request id, to the parties
   still silent after ``timeout`` seconds; a party that had already answered replays the same
   values (no new randomness, no new spending), so a retry never changes the release;
4. the replies become one ``(parties, units)`` table, checked at once
   (:func:`parties.reply_table.reply_table`);
5. parties still silent or refusing are handled by the **dropout policy**
   (:mod:`parties.dropout`): ``"fail"`` (default) stops the run, ``"exclude"`` leaves them out
   of this phase and every later one; estimates use the parties that answered
   (:attr:`PhaseRelease.contributors`), and :attr:`Controller.excluded` says who was left out
   and why.  A phase nobody answers still fails.

**Faulty parties.**  A party whose reply does not fit the request, or that sent the controller
a frame its endpoint rejected (undecodable, or of a kind the controller does not accept:
:meth:`parties.transport.Endpoint.take_rejections`) during a phase, is faulty: under
``"fail"`` the run stops with a :class:`~mprr.errors.MessageError` naming it (``parties``
lists them); under ``"exclude"`` it is excluded like a silent party, even if it also sent a
valid reply (its values are not used).  A rejected frame never disturbs the receive of the
other parties' replies, so it cannot abort the run on its own.

:meth:`Controller.report` answers a :class:`~mprr.protocols.steps.Report` step (units through
frequency oracles) the same way: one :class:`~parties.wire.requests.ReportRequest` broadcast,
one :class:`~parties.wire.messages.OracleReport` or ``Refusal`` per party, the dropout policy
as above; a reply that does not fit the step is malformed (:mod:`parties.report_phase`, which
builds the phase's data with :func:`mprr.protocols.oracle_reports.reported_data`, the one place
both drivers build it).

:meth:`Controller.secure_release` runs the dependence phases 4.2 / 4.3: the parties commit
(:class:`~parties.wire.requests.SecureRelease` → ``Ack``), then a secure-sum engine of
:mod:`parties.secure` adds their one-hot vectors; the controller learns only the tallies.

The controller's endpoint is wrapped in a :class:`~parties.recording.RecordingEndpoint`, so
every message it receives — replies, and the secure-sum messages an engine consumes on its behalf — lands in
the view.  Matrices for estimation are rebuilt on the controller from the same
:class:`~mprr.protocols.steps.MatrixSpec` the parties use, so they are identical.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from mprr.data import Schema
from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, PartyDropped, ProtocolError
from mprr.protocols.release import readonly
from mprr.protocols.steps import Matrix, MatrixSpec, Report
from parties.columns import ReplyColumns
from parties.dropout import DROPOUT_POLICIES, ReleaseRefused, describe_actors, dropout_error, exclusions
from parties.exchange import exchange
from parties.phase_release import PhaseRelease
from parties.public_state import ReleaseBook
from parties.recording import RecordingEndpoint
from parties.reply_table import reply_table
from parties.report_phase import PhaseReport, ReportGathering
from parties.secure.agreement import agreed_session, check_unit_totals, request_digest
from parties.secure.messages import TO_CONTROLLER as SECURE_TO_CONTROLLER
from parties.transport import Endpoint
from parties.view import ViewLog
from parties.wire.codec import Message
from parties.wire.messages import Abort, Ack, OracleReport, RandomizedValues, Refusal
from parties.wire.requests import TO_CONTROLLER as RELEASE_TO_CONTROLLER
from parties.wire.requests import ReleaseRequest, ReportRequest, SecureRelease, SecureSumStart, roster_runs

__all__ = [
    "CONTROLLER_KINDS",
    "DROPOUT_POLICIES",
    "Controller",
    "PhaseRelease",
    "PhaseReport",
    "RecordingEndpoint",
    "ReleaseRefused",
    "REPLY_KINDS",
]

REPLY_KINDS = (RandomizedValues, Refusal)
"""Kinds a party answers a release request with."""

CONTROLLER_KINDS: tuple[type[Message], ...] = RELEASE_TO_CONTROLLER + SECURE_TO_CONTROLLER
"""Every kind a party may send the controller: the answers to the release requests
(:data:`parties.wire.requests.TO_CONTROLLER`) and the party -> controller messages of the
secure-sum engines (:data:`parties.secure.messages.TO_CONTROLLER`).  The controller's endpoint
accepts these only; any other kind (e.g. a ``ReleaseRequest`` or ``SurvivorSet`` sent by a
party) is rejected on delivery and its sender is faulty (module docstring)."""


class Controller:
    """The untrusted controller (see the module docstring).

    Parameters
    ----------
    endpoint
        The controller's endpoint.
    schema
        Public schema of the parties' records (names, sizes, kinds — no data).
    parties
        Ids of the parties taking part.
    timeout
        Seconds each round waits for the replies (> 0).
    on_dropout
        ``"fail"`` or ``"exclude"`` (:data:`DROPOUT_POLICIES`).
    retries
        Times a request is re-sent to parties still silent after ``timeout`` (>= 0).
    view
        The view log to append to (default: a new one).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        schema: Schema,
        parties: Iterable[int],
        *,
        timeout: float,
        on_dropout: str = "fail",
        retries: int = 0,
        view: ViewLog | None = None,
    ) -> None:
        check_real("timeout", timeout, strict=True)
        if on_dropout not in DROPOUT_POLICIES:
            raise ConfigurationError(f"on_dropout must be one of {list(DROPOUT_POLICIES)}, got {on_dropout!r}")
        check_int("retries", retries, 0)
        self.view = view if view is not None else ViewLog()
        self.endpoint = RecordingEndpoint(endpoint, self.view)
        self.schema = schema
        self.parties = tuple(sorted(map(int, parties)))
        if not self.parties:
            raise ConfigurationError("parties must name at least one party")
        self.timeout = float(timeout)
        self.on_dropout = on_dropout
        self.retries = retries
        self.active: list[int] = list(self.parties)
        self._excluded: dict[int, str] = {}
        self._book = ReleaseBook(schema)
        self._next_id = 1
        self.requests: list[ReleaseRequest | SecureRelease | ReportRequest] = []
        self.phases: list[PhaseRelease] = []
        self.reports: list[PhaseReport] = []
        self.tallies: list[PhaseRelease] = []
        self.engines: dict[str, Any] = {}  # secure-sum session -> the engine the controller ran

    # ------------------------------------------------------------------ state
    @property
    def excluded(self) -> Mapping[int, str]:
        """Parties excluded under ``on_dropout="exclude"``: party -> phase and cause."""
        return MappingProxyType(self._excluded)

    def matrix(self, spec: MatrixSpec, unit: Sequence[int]) -> Matrix:
        """The matrix of ``spec`` over ``unit`` (built, and kept, as the parties' :class:`ReleaseBook`
        does: a function of public data only)."""
        return self._book.matrix(spec, tuple(self.schema.sizes[a] for a in unit))

    def new_request_id(self) -> int:
        """A fresh request id."""
        rid = self._next_id
        self._next_id += 1
        return rid

    # ------------------------------------------------------------------ rounds
    async def exchange(
        self,
        request: ReleaseRequest | SecureRelease | ReportRequest,
        targets: Sequence[int],
        *,
        kinds: tuple[type[Message], ...] = REPLY_KINDS,
        columns: list[ReplyColumns] | None = None,
    ) -> tuple[dict[int, Message], tuple[int, ...]]:
        """Broadcast ``request`` to ``targets`` and gather one reply each (with retries).

        Returns ``({party: reply message}, silent parties)``.  Every received envelope is in
        the view (the endpoint records it); replies to other request ids are ignored.  With
        ``columns``, replies that arrive as reply columns (:mod:`parties.columns`) are appended
        to it instead of becoming messages (each party once, in either place).
        """
        self.requests.append(request)
        return await exchange(self.endpoint, request, targets, timeout=self.timeout, retries=self.retries,
                              kinds=kinds, columns=columns)

    async def _settle(
        self,
        phase: str,
        request_id: int,
        targets: Sequence[int],
        silent: Sequence[int],
        refusals: Mapping[int, Refusal],
        malformed: Mapping[int, str],
    ) -> None:
        """Apply the dropout policy (:mod:`parties.dropout`) to the parties that stayed silent,
        refused or misbehaved."""
        if self.on_dropout == "fail":
            error = dropout_error(phase, request_id, targets, silent, refusals, malformed,
                                  timeout=self.timeout, retries=self.retries)
            if error is not None:
                reason = (f"parties {list(silent)[:10]} did not answer" if silent else
                          f"{len(refusals)} parties refused" if refusals else "malformed replies")
                await self._abort(phase, reason)
                raise error
            return
        self._excluded.update(exclusions(phase, silent, refusals, malformed, timeout=self.timeout))
        dropped = set(silent) | set(refusals) | set(malformed)
        if dropped:
            self.active = [p for p in self.active if p not in dropped]

    async def release(
        self,
        phase: str,
        units: Sequence[Sequence[int]],
        specs: Sequence[MatrixSpec],
        *,
        plan: Sequence[Sequence[int]] | None = None,
    ) -> PhaseRelease:
        """Ask every active party to release ``units`` through ``specs`` (one round trip).

        Raises
        ------
        RoundTimeout
            ``on_dropout="fail"`` and some party stayed silent (``missing`` lists them).
        ReleaseRefused
            ``on_dropout="fail"`` and some party refused.
        ProtocolError
            No party answered, or a reply does not fit the request (wrong number of codes or
            a code outside a unit's domain) under ``"fail"``.
        """
        units_t = tuple(tuple(int(a) for a in u) for u in units)
        specs_t = tuple(specs)
        matrices = tuple(self.matrix(s, u) for s, u in zip(specs_t, units_t))
        request = ReleaseRequest.build(self.new_request_id(), phase, units_t, specs_t, plan=plan)
        targets = list(self.active)
        columns: list[ReplyColumns] = []
        replies, silent = await self.exchange(request, targets, columns=columns)
        refusals = {p: m for p, m in replies.items() if isinstance(m, Refusal)}
        values = {p: m for p, m in replies.items() if isinstance(m, RandomizedValues)}
        table = reply_table(targets, [m.size for m in matrices], values, columns)
        faulty = self._faulty(targets)
        await self._settle(phase, request.request_id, targets, silent, refusals, {**table.malformed, **faulty})
        parties, stacked = table.parties, table.codes
        if faulty:  # (a faulty party's values are not used, even if well-formed)
            keep = np.fromiter((p not in faulty for p in parties), dtype=bool, count=len(parties))
            parties, stacked = [p for p, k in zip(parties, keep.tolist()) if k], stacked[keep]
        if not parties:
            raise ProtocolError(f"phase {phase!r}: no party released anything for request {request.request_id}")
        everyone = len(parties) == len(self.parties) and list(parties) == list(self.parties)
        contributors = self.parties if everyone else tuple(parties)  # (everyone: the one tuple of the run)
        codes = readonly(np.ascontiguousarray(stacked, dtype=np.int64))
        release = PhaseRelease(
            phase=phase,
            request_id=request.request_id,
            units=units_t,
            specs=specs_t,
            matrices=matrices,
            contributors=contributors,
            codes=codes,
            refusals=MappingProxyType(refusals),
            silent=silent,
        )
        self.phases.append(release)
        return release

    def reported_in(self, phases: Sequence[str]) -> set[int]:
        """Parties that released or reported something in any of ``phases`` (what a party's
        own ledger shows when it decides whether a report step's ``exclude`` applies)."""
        out: set[int] = set()
        for release in (*self.phases, *self.tallies):
            if release.phase in phases:
                out.update(release.contributors)
        for report in self.reports:
            if report.phase in phases:
                out.update(report.reporters())
        return out

    async def report(self, step: Report) -> PhaseReport:
        """Ask every active party to report ``step``'s units through its frequency oracles.

        Raises
        ------
        ConfigurationError
            An oracle that cannot be built over its unit (before anything is sent).
        RoundTimeout, ReleaseRefused, MessageError
            As :meth:`release` under ``on_dropout="fail"`` (a malformed reply: module docstring).
        ProtocolError
            No party answered.
        """
        # the oracles are built (and checked) before anything is sent
        gathered = ReportGathering(step, self.schema, self.reported_in(step.exclude) if step.exclude else set())
        request = ReportRequest.build(self.new_request_id(), step)
        targets = list(self.active)
        replies, silent = await self.exchange(request, targets, kinds=(OracleReport, Refusal))
        refusals = {p: m for p, m in replies.items() if isinstance(m, Refusal)}
        malformed = {p: why for p in targets if isinstance(m := replies.get(p), OracleReport)
                     and (why := gathered.add(p, m)) is not None}
        malformed.update(self._faulty(targets))
        await self._settle(step.phase, request.request_id, targets, silent, refusals, malformed)
        phase = gathered.phase(request.request_id, [p for p in targets if p not in malformed], refusals, silent)
        self.reports.append(phase)
        return phase

    async def secure_release(
        self,
        phase: str,
        units: Sequence[Sequence[int]],
        *,
        engine: Any,
        specs: Sequence[MatrixSpec] | None = None,
        plan: Sequence[Sequence[int]] | None = None,
    ) -> PhaseRelease:
        """Tallies of ``units`` over the active parties through a secure sum (main paper 4.2 / 4.3).

        Round 1: :class:`~parties.wire.requests.SecureRelease` to every active party, which
        commits (Ack) or refuses; the dropout policy applies as in :meth:`release`.  Round 2:
        :class:`~parties.wire.requests.SecureSumStart` to the committed parties, then the
        engine's controller side returns the exact sum of their one-hot vectors — the controller
        learns only the tallies.  ``specs=None`` is an exact release (4.2), otherwise each unit
        is randomized through its matrix first (4.3).  The start message names the engine and
        the roster (the committed parties); each party runs its own copy of the engine agreed
        at set-up and checks the roster itself.  The engine runs under the agreed session id
        (:func:`~parties.secure.agreement.agreed_session`): the one every party derives from
        the request and the start it received, so only parties asked the same thing sum
        together.  The sum is checked against the request before it is reported
        (:func:`~parties.secure.agreement.check_unit_totals`).

        Raises
        ------
        RoundTimeout, ReleaseRefused, MessageError
            As :meth:`release` under ``on_dropout="fail"``.
        PartyDropped, SecureSumAborted, ProtocolError
            The secure sum could not produce the exact sum (raised by the engine), or under
            ``"fail"`` a committed party dropped out of it, or the sum fails the unit-total
            check (a contributor's input was not one one-hot vector per unit).
        """
        units_t = tuple(tuple(int(a) for a in u) for u in units)
        specs_t = None if specs is None else tuple(specs)
        matrices = (None,) * len(units_t) if specs_t is None else tuple(
            self.matrix(s, u) for s, u in zip(specs_t, units_t)
        )
        rid = self.new_request_id()
        session = f"{phase}/{rid}"
        request = SecureRelease(
            request_id=rid,
            phase=phase,
            session=session,
            plan=units_t if plan is None else tuple(tuple(int(a) for a in g) for g in plan),
            units=units_t,
            exact=specs_t is None,
            families=() if specs_t is None else tuple(s.family for s in specs_t),
            params=() if specs_t is None else tuple(s.params for s in specs_t),
        )
        targets = list(self.active)
        replies, silent = await self.exchange(request, targets, kinds=(Ack, Refusal))
        refusals = {p: m for p, m in replies.items() if isinstance(m, Refusal)}
        faulty = self._faulty(targets)
        await self._settle(phase, rid, targets, silent, refusals, faulty)
        committed = tuple(p for p in targets if isinstance(replies.get(p), Ack) and p not in faulty)
        if not committed:
            raise ProtocolError(f"phase {phase!r}: no party committed to the secure sum of request {rid}")
        sizes = self.schema.sizes
        cells = [math.prod(sizes[a] for a in u) for u in units_t]
        net = self.endpoint.network
        start = SecureSumStart(rid, session, engine.name, roster_runs(committed))
        # the engine's session id is the one every party derives from what it was asked
        agreed = agreed_session(request_digest(request), start)
        context = engine.context(committed, sum(cells), network=net, session=agreed)
        self.engines[session] = engine
        with net.round(phase):
            await self.endpoint.broadcast(committed, start, phase=phase)
        total, contributors = await engine.controller(self.endpoint, context)
        contributors = tuple(sorted(int(p) for p in contributors))
        check_unit_totals(total, cells, len(contributors), session=session)  # never report a poisoned sum
        # garbage sent during the sum: the sum is exact, but its senders are faulty from now on
        await self._settle(phase, rid, committed, (), {}, self._faulty(committed))
        summed = set(contributors)
        lost = tuple(p for p in committed if p not in summed)
        if lost:
            if self.on_dropout == "fail":
                raise PartyDropped(
                    f"phase {phase!r}: {len(lost)} parties dropped out of the secure sum {session!r} "
                    f"({engine.name}); its total covers the other {len(contributors)}: {describe_actors(lost)}",
                    parties=lost,
                )
            for p in lost:
                self._excluded[p] = f"{phase}: dropped out of the secure sum"
            self.active = [p for p in self.active if p not in lost]
        counts = []
        offset = 0
        for u, c in zip(units_t, cells):
            shape = tuple(sizes[a] for a in u)
            counts.append(readonly(np.asarray(total[offset: offset + c], dtype=np.float64).reshape(shape)))
            offset += c
        tally = PhaseRelease(
            phase=phase,
            request_id=rid,
            units=units_t,
            specs=specs_t or (),
            matrices=matrices,
            contributors=contributors,
            counts=tuple(counts),
            session=session,
            engine=engine.name,
            refusals=MappingProxyType(refusals),
            silent=silent,
        )
        self.tallies.append(tally)
        return tally

    def _faulty(self, parties: Sequence[int]) -> dict[int, str]:
        """Parties among ``parties`` whose frames the controller's endpoint rejected since the
        last call: ``{party: why}`` (the rejections are taken)."""
        return {
            p: f"sent a frame the controller rejected in phase {r.phase!r} ({r.reason})"
            for p, r in self.endpoint.take_rejections(parties).items()
        }

    async def _abort(self, phase: str, reason: str) -> None:
        """Best effort: tell the active parties the run stops."""
        try:
            await self.endpoint.broadcast(self.active, Abort(reason, phase), phase="abort")
        except ProtocolError:  # pragma: no cover - a broken topology must not hide the real error
            pass

    def drain(self) -> None:
        """Log the messages still buffered at the controller (received but never consumed)."""
        for env in self.endpoint.pending():
            self.view.record(env)

    def note(self, name: str, value: object) -> None:
        """Note a derived value in the view."""
        self.view.note(name, value)
