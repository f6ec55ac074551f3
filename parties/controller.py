"""The controller actor (untrusted): orchestrates phases and gathers what the parties release.

A :class:`Controller` owns the controller's :class:`~parties.transport.Endpoint` and a
:class:`~parties.view.ViewLog`.  Choreographies (:mod:`parties.choreographies`) drive it
phase by phase with :meth:`Controller.release`:

1. one :class:`~parties.wire.requests.ReleaseRequest` is broadcast to every active party
   (one communication round), encoded once;
2. the replies are gathered under ``asyncio.timeout`` (:meth:`Endpoint.gather`): one
   :class:`~parties.wire.messages.RandomizedValues` or :class:`~parties.wire.messages.Refusal` per
   party.  Every received message goes to the view log first.  A reply to another request
   (a late or duplicated message) is logged and ignored;
3. with ``retries > 0`` the request is re-sent, with the same request id, to the parties
   still silent after ``timeout`` seconds; a party that had already answered replays the same
   values (no new randomness, no new spending), so a retry never changes the release;
4. parties still silent or refusing are handled by the **dropout policy**:

   ``"fail"`` (default)
       the run stops: :class:`~mprr.errors.RoundTimeout` (silent parties; ``missing``
       lists them) or :class:`ReleaseRefused` (refusals).  Nothing partial is reported.
   ``"exclude"``
       documented degraded result: the silent / refusing parties are excluded from this
       phase and every later one; estimates use the parties that answered
       (:attr:`PhaseRelease.contributors`), and :attr:`Controller.excluded` says who was
       left out and why.  A phase nobody answers still fails.

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

The controller's endpoint is wrapped in a :class:`RecordingEndpoint`, so every message it
receives — replies, and the secure-sum messages an engine consumes on its behalf — lands in
the view.  Matrices for estimation are rebuilt on the controller from the same
:class:`~mprr.protocols.steps.MatrixSpec` the parties use, so they are identical.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from mprr.data import Schema
from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, MessageError, PartyDropped, ProtocolError, RoundTimeout
from mprr.protocols.release import ReleasedData, readonly
from mprr.protocols.steps import Matrix, MatrixSpec, Report
from parties.wire.codec import Message
from parties.wire.messages import Abort, Ack, OracleReport, RandomizedValues, Refusal
from parties.secure.messages import TO_CONTROLLER as SECURE_TO_CONTROLLER
from parties.wire.requests import TO_CONTROLLER as RELEASE_TO_CONTROLLER
from parties.secure.agreement import agreed_session, check_unit_totals, request_digest
from parties.wire.requests import ReleaseRequest, ReportRequest, SecureRelease, SecureSumStart, roster_runs
from parties.transport import Endpoint, Envelope, actor_name
from parties.public_state import ReleaseBook
from parties.report_phase import PhaseReport, ReportGathering
from parties.view import ViewLog
from parties.columns import ReplyColumns

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

DROPOUT_POLICIES: tuple[str, ...] = ("fail", "exclude")
"""What the controller does with parties that stay silent or refuse (module docstring)."""

REPLY_KINDS = (RandomizedValues, Refusal)
"""Kinds a party answers a release request with."""

CONTROLLER_KINDS: tuple[type[Message], ...] = RELEASE_TO_CONTROLLER + SECURE_TO_CONTROLLER
"""Every kind a party may send the controller: the answers to the release requests
(:data:`parties.wire.requests.TO_CONTROLLER`) and the party -> controller messages of the
secure-sum engines (:data:`parties.secure.messages.TO_CONTROLLER`).  The controller's endpoint
accepts these only; any other kind (e.g. a ``ReleaseRequest`` or ``SurvivorSet`` sent by a
party) is rejected on delivery and its sender is faulty (module docstring)."""


class ReleaseRefused(ProtocolError):
    """Parties refused a release the protocol needs (``on_dropout="fail"``).

    Parameters
    ----------
    phase
        Phase of the refused request.
    refusals
        ``{party: Refusal message}``.
    """

    def __init__(self, message: str, *, phase: str, refusals: Mapping[int, Refusal]) -> None:
        super().__init__(message)
        self.phase = phase
        self.refusals = dict(refusals)


@dataclass(frozen=True, eq=False)
class PhaseRelease:
    """What one phase brought back to the controller: the parties' released codes (a release
    round, :meth:`Controller.release`), or the tallies of their values (a secure sum,
    :meth:`Controller.secure_release`).

    Attributes
    ----------
    phase, request_id
        The phase and the request id.
    units
        Attribute indices of each released unit, in draw order.
    specs, matrices
        The matrix specification of each unit and the matrix the controller rebuilt from it
        (no specs and ``None`` matrices: an exact secure sum, main paper 4.2).
    contributors
        Parties whose values are in :attr:`codes` / :attr:`counts`, ascending (row ``k`` of
        :attr:`codes` = ``contributors[k]``).
    codes
        A release round's ``(len(contributors), len(units))`` int64 codes (read-only);
        ``None`` after a secure sum.
    counts
        A secure sum's per-unit tallies of the contributors' values; empty after a release
        round.
    session, engine
        A secure sum's session and engine name (``""`` for a release round).
    refusals
        ``{party: Refusal}`` of the parties that refused.
    silent
        Parties that never answered.
    """

    phase: str
    request_id: int
    units: tuple[tuple[int, ...], ...]
    specs: tuple[MatrixSpec, ...]
    matrices: tuple[Matrix | None, ...]
    contributors: tuple[int, ...]
    codes: np.ndarray | None = None
    counts: tuple[np.ndarray, ...] = ()
    session: str = ""
    engine: str = ""
    refusals: Mapping[int, Refusal] = field(default_factory=dict)
    silent: tuple[int, ...] = ()

    def released_data(self, schema: Schema, *, replayed: Sequence[bool] | None = None) -> ReleasedData:
        """The phase as a :class:`mprr.protocols.release.ReleasedData`: tallies as the fast path's
        from a release round's codes; a secure sum's tallies only, unlinkable.

        ``replayed`` flags the units the parties answered by replaying an earlier release
        (same attributes and matrix): they add no ledger entry.  After a secure sum there are
        no per-attribute ε shares: like the parties, the controller books each pair matrix's
        own ε (split equally among its attributes unless the matrix is a Kronecker product).
        """
        sizes = schema.sizes
        usizes = tuple(tuple(sizes[a] for a in u) for u in self.units)
        if self.codes is not None:
            return ReleasedData.randomized(self.phase, self.units, usizes, self.matrices, self.codes,
                                           replayed=None if replayed is None else tuple(bool(r) for r in replayed))
        return ReleasedData(phase=self.phase, units=self.units, unit_sizes=usizes, matrices=self.matrices, codes=None,
                            counts=self.counts, linkable=False, exact=not self.specs)


class RecordingEndpoint:
    """The controller's endpoint, appending every envelope it receives to the view.

    Forwards everything to the wrapped :class:`~parties.transport.Endpoint`; every receiving
    method (``recv``, ``recv_many``, ``take_all``, ``gather``, ``gather_columns``,
    ``gather_each``) logs what it returns, so messages consumed by a secure-sum program on the
    controller's behalf (:func:`parties.secure.drive.drive`) are in the view too.
    """

    def __init__(self, endpoint: Endpoint, view: ViewLog) -> None:
        self._endpoint = endpoint
        self._view = view

    def __getattr__(self, name: str) -> Any:
        return getattr(self._endpoint, name)

    async def recv(self, **kwargs: Any) -> Envelope[Message]:
        env: Envelope[Message] = await self._endpoint.recv(**kwargs)
        self._view.record(env)
        return env

    async def recv_many(self, **kwargs: Any) -> list[Envelope[Message]]:
        envs: list[Envelope[Message]] = await self._endpoint.recv_many(**kwargs)
        for env in envs:
            self._view.record(env)
        return envs

    def take_all(self, **kwargs: Any) -> list[Envelope[Message]]:
        envs: list[Envelope[Message]] = self._endpoint.take_all(**kwargs)
        for env in envs:
            self._view.record(env)
        return envs

    async def gather(self, sources: Iterable[int], **kwargs: Any) -> dict[int, Envelope[Message]]:
        got: dict[int, Envelope[Message]] = await self._endpoint.gather(sources, **kwargs)
        for env in got.values():
            self._view.record(env)
        return got

    async def gather_columns(self, sources: Iterable[int],
                             **kwargs: Any) -> tuple[dict[int, Envelope[Message]], list[ReplyColumns]]:
        got, blocks = await self._endpoint.gather_columns(sources, **kwargs)
        for env in got.values():
            self._view.record(env)
        for block in blocks:
            self._view.record_columns(block)
        return got, blocks

    async def gather_each(self, sources: Iterable[int], **kwargs: Any) -> AsyncIterator[dict[int, Envelope[Message]]]:
        async for got in self._endpoint.gather_each(sources, **kwargs):
            for env in got.values():
                self._view.record(env)
            yield got


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
        ep = self.endpoint
        net = ep.network
        phase = request.phase
        loop = asyncio.get_running_loop()
        pending = set(targets)
        got: dict[int, Message] = {}
        for attempt in range(self.retries + 1):
            if not pending:
                break
            with net.round(phase):
                await ep.broadcast(sorted(pending) if attempt else targets, request, phase=phase)
            deadline = loop.time() + self.timeout
            while pending:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                if columns is None:
                    batch = await ep.gather(pending, kinds=kinds, phase=phase, timeout=remaining, partial=True)
                    blocks: list[ReplyColumns] = []
                else:
                    batch, blocks = await ep.gather_columns(pending, kinds=kinds, phase=phase, timeout=remaining)
                if not batch and not blocks:
                    break
                for block in blocks:
                    if block.request_id == request.request_id:
                        assert columns is not None
                        columns.append(block)
                        pending.difference_update(block.srcs.tolist())
                for src, env in batch.items():
                    msg = env.message
                    if msg.request_id == request.request_id:  # type: ignore[attr-defined]
                        got[src] = msg
                        pending.discard(src)
        return got, tuple(sorted(pending))

    async def _settle(
        self,
        phase: str,
        request_id: int,
        targets: Sequence[int],
        silent: Sequence[int],
        refusals: Mapping[int, Refusal],
        malformed: Mapping[int, str],
    ) -> None:
        """Apply the dropout policy to the parties that stayed silent, refused or misbehaved."""
        if self.on_dropout == "fail":
            if silent:
                await self._abort(phase, f"parties {list(silent)[:10]} did not answer")
                raise RoundTimeout(
                    f"phase {phase!r}: {len(silent)} of {len(targets)} parties did not answer request "
                    f"{request_id} within {self.timeout} s"
                    + (f" (after {self.retries} retries)" if self.retries else "")
                    + f": {_actors(tuple(silent))}",
                    phase=phase, timeout=self.timeout, missing=tuple(silent),
                )
            if refusals:
                first = min(refusals)
                await self._abort(phase, f"{len(refusals)} parties refused")
                raise ReleaseRefused(
                    f"phase {phase!r}: {len(refusals)} of {len(targets)} parties refused request "
                    f"{request_id}; {actor_name(first)}: {refusals[first].reason}",
                    phase=phase, refusals=refusals,
                )
            if malformed:
                first = min(malformed)
                await self._abort(phase, "malformed replies")
                raise MessageError(
                    f"phase {phase!r}: {len(malformed)} of {len(targets)} parties are faulty "
                    f"(malformed replies to request {request_id} or rejected frames): "
                    f"{_actors(sorted(malformed))}; {actor_name(first)}: {malformed[first]}",
                    parties=tuple(sorted(malformed)),
                )
            return
        for p in silent:
            self._excluded[p] = f"{phase}: silent (no answer within {self.timeout} s)"
        for p, m in refusals.items():
            self._excluded[p] = f"{phase}: refused ({m.reason})"
        for p, why in malformed.items():
            self._excluded[p] = f"{phase}: {why}"
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
        cells = np.array([m.size for m in matrices], dtype=np.int64)
        # one (parties, units) array of every well-shaped reply, in target order, checked at once
        shape = (len(units_t),)
        order = np.asarray(targets, dtype=np.int64)
        sort = None if order.shape[0] < 2 or np.all(order[1:] > order[:-1]) else np.argsort(order, kind="stable")
        table = np.zeros((len(targets), len(units_t)), dtype=np.int64)
        present = np.zeros(len(targets), dtype=bool)
        wrong: dict[int, np.ndarray] = {p: m.codes for p, m in values.items() if m.codes.shape != shape}
        for p, m in values.items():
            if m.codes.shape == shape:
                at = int(np.searchsorted(order, p, sorter=sort))
                at = at if sort is None else int(sort[at])
                table[at], present[at] = m.codes, True
        for block in columns:
            if block.codes.shape[1:] != shape:
                wrong.update((int(p), block.codes[k]) for k, p in enumerate(block.srcs.tolist()))
                continue
            rows = np.searchsorted(order, block.srcs, sorter=sort)
            rows = rows if sort is None else sort[rows]
            table[rows], present[rows] = block.codes, True
        shaped = [targets[k] for k in np.flatnonzero(present).tolist()]  # (the targets' own ints)
        stacked = table if present.all() else table[present]
        out_of_domain = (stacked >= cells).any(axis=1)
        bad_codes = dict(wrong)
        bad_codes.update((shaped[k], stacked[k]) for k in np.flatnonzero(out_of_domain).tolist())
        malformed = {
            p: f"malformed reply {c.tolist()[:10]} ({len(units_t)} codes within the unit domains expected)"
            for p, c in bad_codes.items()
        }
        malformed.update(self._faulty(targets))
        await self._settle(phase, request.request_id, targets, silent, refusals, malformed)
        keep = (np.fromiter((p not in malformed for p in shaped), dtype=bool, count=len(shaped)) if malformed
                else np.ones(len(shaped), dtype=bool))
        contributors = tuple(p for p, k in zip(shaped, keep.tolist()) if k) if malformed else tuple(shaped)
        if not contributors:
            raise ProtocolError(f"phase {phase!r}: no party released anything for request {request.request_id}")
        codes = readonly(np.ascontiguousarray(stacked[keep] if malformed else stacked, dtype=np.int64))
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
                    f"({engine.name}); its total covers the other {len(contributors)}: {_actors(lost)}",
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


def _actors(actors: Sequence[int], limit: int = 10) -> str:
    names = ", ".join(actor_name(a) for a in actors[:limit])
    return names + (f" and {len(actors) - limit} more" if len(actors) > limit else "")

