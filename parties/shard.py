"""The party host: many :class:`~parties.party.Party` actors on one event loop, behind a link.

Every runtime hosts its parties this way: parties ``lo..hi-1`` live in a :class:`PartyShard`
— on the controller's event loop (``memory``), in a worker process (:mod:`parties.tcp`) or in
a Ray async actor (:mod:`parties.ray_runtime`) — and the :class:`~parties.router.Router` of the
controller process reaches them through a :class:`~parties.link.Link`.  A runtime supplies the
channel: ``uplink`` (and ``columns``) callables carrying what the parties send up, and calls
of :meth:`PartyShard.deliver` / :meth:`~PartyShard.deliver_many` / :meth:`~PartyShard.crash`,
or :meth:`PartyShard.take` of the channel's records (:mod:`parties.channel`), for what comes
down.  Inside, :class:`ShardNetwork` is the host's :class:`~parties.transport.Transport`
(crash set, counters, topology, admission); its sends go up the uplink.

The host holds its parties as **columns** (:mod:`parties.cohort`): parties in identical state
form a :class:`~parties.cohort.Cohort`, and a broadcast release request is answered for all
its members in one vectorized step, each deciding by the accountant state it shares and
drawing from its own stream row.  A broadcast's frames are collected as they arrive and
answered on the loop's next turn, in arrival order; every reply is its own message, encoded by
the codec and counted; a run of cohort members' replies leaves as one
:class:`~parties.columns.ReplyColumns` (given a ``columns`` uplink).  A party whose state
diverges (refusal, crash, frequency-oracle report, its side of a sum, :attr:`PartyShard.parties`) is
built as a :class:`~parties.party.Party` from its cohort's state and answers on its own: its
own accountant decides (:meth:`Party.decide <parties.party.Party.decide>`); with a ``columns``
uplink, the codes of the built parties a release request reached whose every unit was granted
are then drawn at once, as a cohort's are, and their replies leave as columns too.  No
task, endpoint or pending receive is kept per party.  Every frame leaves the host: the router
routes, counts and applies the fault plan in one place, the same on every runtime.

Secure sums (RR-Clusters 4.2 / 4.3): a party that receives a
:class:`~parties.wire.requests.SecureSumStart` hands its host its side of the engine
as a program (``Party.secure_program``; a cohort's members run a sum in their cohort, each its
own side: :mod:`parties.cohort_sum`); the shard steps the programs of all its parties
together (:class:`~parties.party_sum.PartySums`: no task, endpoint or pending receive per
party, one timer per distinct round deadline) while :meth:`PartyShard.serve` runs; what
the programs send the controller on one turn goes up as :class:`~parties.columns.MessageColumns`
through a ``sum_columns`` uplink, given by a runtime whose shards share the router's process
(``memory``); the engine's messages for a party — from the controller, or from peers in this or another shard,
always routed through the controller process's router, which checks the topology — go to its
program's open round, or wait for it.  The setup carries what each party
agreed to before the run: the engine (its configuration is the party's policy), the minimum
roster and whether the engine needs party-to-party links (``mesh``).  Signing keys
(:mod:`parties.secure.pki`) are generated *here*, where the parties live
(:func:`~parties.secure.pki.generate_signers`); only their verification keys leave the shard
(:meth:`PartyShard.public_keys`), and the run's directory of every party's key comes back
before the protocol (:meth:`PartyShard.register`), from the runner — the PKI of the run, never
the controller actor.

Public state: each shard builds its own :class:`~parties.public_state.ReleaseBook` (a pure
memo of public derivations).  Party ``i``'s stream is child ``i`` of ``SeedSequence(seed)``;
the shard receives only its parties' rows (:attr:`ShardSetup.streams`, never the run seed), so
the same seed gives the same result on every runtime.

At the end :meth:`ShardReport.of <parties.shard_report.ShardReport.of>` holds what the harness
keeps of the hosted parties, in columns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mprr.errors import ConfigurationError, MessageError
from mprr.privacy import PrivacyAccountant
from parties.channel import DATA, MULTI, loads, read_multi, read_record
from parties.cohort import Cohort, CohortTable, ReplyLayout
from parties.cohort_sum import CohortSums
from parties.columns import MessageColumns, ReplyColumns
from parties.wire.codec import Message, decode, encode, known_kinds
from parties.wire.messages import Abort, Ack, RandomizedValues
from parties.wire.requests import ReleaseRequest, SecureRelease, SecureSumStart
from parties.party import LOOP_KINDS, Party
from parties.built_release import release_together
from parties.hosted_parties import HostedParties
from parties.party_sum import PartySums
from parties.public_state import ReleaseBook
from parties.secure.pki import KeyRegistry, Signer, generate_signers
from parties.shard_network import ShardNetwork
from parties.shard_setup import ShardSetup, split
from parties.transport import CONTROLLER, Frame, Transport

__all__ = [
    "HostedParties",  # (from parties.hosted_parties)
    "PartyShard",
    "ShardNetwork",
    "ShardSetup",
    "split",
]

_CONTROLLER_REQUESTS = frozenset(k.KIND for k in LOOP_KINDS)
"""Kinds a party takes from the controller (:meth:`Party.receive <parties.party.Party.receive>`);
every other frame (secure-sum traffic from the controller or from peers) goes to the party's
endpoint."""
_COHORT_KINDS = (ReleaseRequest, Abort)
"""Kinds a cohort answers for all its receivers at once (:mod:`parties.cohort`; a secure sum's
commitment and start too: :mod:`parties.cohort_sum`)."""
_VALUES = RandomizedValues.KIND


class PartyShard:
    """Hosts the parties of ``setup.parties`` and serves them until :meth:`stop`.

    Use::

        shard = PartyShard(setup, uplink, columns=uplink_columns)  # columns: reply columns up
        task = asyncio.create_task(shard.serve())   # owner: the runtime's worker
        shard.deliver(frame, position)              # frames from the controller process
        shard.stop(); await task; ShardReport.of(shard)

    With a secure-sum engine in the setup, call :meth:`register` with the run's key
    directory (:func:`directory` of every shard's :meth:`public_keys`) before the protocol.
    """

    def __init__(self, setup: ShardSetup, uplink: Callable[[Frame], None], *,
                 router: Transport | None = None, columns: Callable[[ReplyColumns], None] | None = None,
                 sum_columns: Callable[[MessageColumns], None] | None = None) -> None:
        rows = setup.checked_records()
        self.setup = setup
        self._size = len(setup.parties)
        self.network = ShardNetwork(setup.n, setup.parties, uplink, router=router,
                                    topology=setup.graph() if router is None else None)
        self._counter = self.network.counter
        self._uplink = uplink
        self._uplink_columns = columns  # a cohort's replies leave as columns (parties.columns), if given
        self._accept = known_kinds(setup.accept)  # a kind unknown here could not be decoded
        self._last_payload: bytes | None = None
        self._last_message: Message | None = None
        self._replies: list[Frame | ReplyColumns] = []
        self._scheduled = False
        # the broadcast being collected: its message, phase and the rows it reached, in order
        self._batch: Message | None = None
        self._batch_phase = ""
        self._batch_rows: list[int] = []
        self._batch_seen: set[int] = set()
        self._batch_array: np.ndarray | None = None  # rows a broadcast reached at once (deliver_many)
        # the parties' signing keys are born here and never leave (parties.secure.pki)
        signing = setup.engine is None or setup.engine.pki_signing  # (the masked engine signs nothing)
        self._signers: dict[int, Signer] = generate_signers(setup.parties, signing=signing) if setup.signs else {}
        self._registry: KeyRegistry | None = None
        self._book = ReleaseBook(setup.schema)
        self._records = rows
        # every party starts in the cohort of its budget (parties.cohort)
        budgets = np.asarray(setup.budgets, dtype=np.float64)
        self._table = CohortTable(len(setup.parties), setup.parties.start)
        for budget in dict.fromkeys(budgets.tolist()):
            members = np.flatnonzero(budgets == budget) if len(budgets) else np.zeros(0, dtype=np.int64)
            self._table.add(Cohort(members, self._accountant(budget, int(members[0]))))
        self._parties: dict[int, Party] = {}  # row -> the party built to answer on its own
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None
        self._sums = PartySums(self.network, self._accept, self._fail, columns=sum_columns)  # their secure-sum programs
        self._cohort_sums = CohortSums(self._table, setup.parties.start, self._parties, self._build, self._sums)

    def _accountant(self, budget: float, row: int) -> PrivacyAccountant:
        """A fresh accountant of the hosted party at ``row`` (as :class:`Party` builds one)."""
        return PrivacyAccountant(budget, self.setup.policy, party=self.setup.parties.start + row,
                                 allowed_attributes=self._book.names, min_roster=self.setup.min_roster)

    # ------------------------------------------------------------------ the parties
    @property
    def parties(self) -> HostedParties:
        """The hosted parties as :class:`~parties.party.Party` objects (harness access: each is
        built on first access from its cohort's state, and answers on its own from then on)."""
        return HostedParties(self)

    def party_at(self, row: int) -> Party:
        """The hosted party at ``row`` (built from its cohort's state on first access)."""
        party = self._parties.get(row)
        if party is None:
            self.materialize(np.array([row], dtype=np.int64))
            party = self._parties[row]
        return party

    def materialize(self, rows: np.ndarray) -> None:
        """Build the parties at ``rows`` (those still in a cohort) as :class:`Party` objects, each
        with its cohort's state; they leave their cohorts and answer on their own from then on."""
        self._settle()
        self._cohort_sums.close()  # (members whose side of a sum failed leave first, at once)
        self._build(rows)

    def _build(self, rows: np.ndarray) -> None:
        """:meth:`materialize`, without answering what was collected first."""
        setup, start, streams, records = self.setup, self.setup.parties.start, self.setup.streams, self._records
        hand_over = self._cohort_sums.hand_over
        for moved in self._table.leave(rows):
            for row, record, state in zip(moved.rows.tolist(), records[moved.rows].tolist(), moved.party_states(start)):
                i = start + row
                party = Party(i, record, setup.schema, seed=streams.stream(i), budget=setup.budgets[row],
                              policy=setup.policy, book=self._book, engine=setup.engine,
                              min_roster=setup.min_roster, signer=self._signers.get(i), registry=self._registry,
                              accountant=state.accountant, released=state.released, draws=state.draws)
                party.status = state.status
                self._parties[row] = party
                hand_over(row, party)  # (the inputs it committed in its cohort)

    def cohorts(self) -> tuple[Cohort, ...]:
        """The cohorts of parties still stepped together (:mod:`parties.cohort`)."""
        self._settle()
        self._cohort_sums.close()
        return self._table.live()

    def built(self) -> dict[int, Party]:
        """The parties built as :class:`Party` objects, by row (a copy of the mapping)."""
        self._settle()
        self._cohort_sums.close()
        return dict(self._parties)

    def accountants(self) -> list[PrivacyAccountant]:
        """Per hosted party, in order, its accountant (a cohort's members share their cohort's)."""
        self._settle()
        self._cohort_sums.close()
        out: list[PrivacyAccountant | None] = [None] * len(self.setup.parties)
        for cohort in self._table.live():
            acc = cohort.accountant
            for row in cohort.rows.tolist():
                out[row] = acc
        for row, party in self._parties.items():
            out[row] = party.accountant
        return out  # type: ignore[return-value]  # (every row is in a cohort or built)

    # ------------------------------------------------------------------ set-up
    def public_keys(self) -> bytes:
        """The hosted parties' verification keys, concatenated in party order (``b""`` when
        the engine signs nothing): what the shard registers with the run's PKI."""
        return b"".join(self._signers[i].public for i in self.setup.parties) if self._signers else b""

    def register(self, keys: bytes) -> None:
        """Install the run's key directory in every hosted party (once, before the protocol).

        ``keys`` holds every party's verification key, ``0..n-1`` in order (:func:`directory`).

        Raises
        ------
        ConfigurationError
            A malformed directory, a second directory, or one that does not hold the hosted
            parties' own keys (a substituted key is refused here, before any session).
        """
        if not self._signers:
            if keys:
                raise ConfigurationError("shard setup: a key directory for parties whose engine signs nothing")
            return
        if self._registry is not None:
            raise ConfigurationError("shard setup: the key directory is installed once")
        registry = KeyRegistry.from_keys(range(self.setup.n), keys)
        wrong = [i for i, signer in self._signers.items() if registry.key(i) != signer.public]
        if wrong:  # checked for all before any party holds it: all or nothing
            raise ConfigurationError(
                f"the key directory does not hold the own verification keys of parties {wrong[:10]}: refused"
            )
        for party in self._parties.values():
            party.register(registry)
        self._registry = registry  # the parties built later get it with their set-up

    async def serve(self) -> None:
        """Serve the parties until :meth:`stop` (frames are answered as they are delivered).

        Owns the parties' secure-sum sessions (:class:`~parties.party_sum.PartySums`): they run
        while this call does, and the sessions still running when it ends are left where they
        stand (as the memory runtime leaves its parties when the controller is done).  A
        program's bug ends the serving: it is raised here.
        """
        for cohort in self._table.live():
            cohort.status = "running"
        for p in self._parties.values():
            p.status = "running"
        self._sums.serving = True
        try:
            await self._stop.wait()
        finally:
            self._sums.stop()
        if self._failure is not None:
            raise self._failure

    def _fail(self, exc: BaseException) -> None:
        """A party's program failed with a bug: serving ends, and :meth:`serve` raises it."""
        if self._failure is None:
            self._failure = exc
        self._stop.set()

    def stop(self) -> None:
        """End :meth:`serve` (at once, if called before it)."""
        self._settle()
        self._stop.set()

    # ------------------------------------------------------------------ frames
    def deliver(self, frame: Frame, position: int | None = None) -> None:
        """A frame from the controller process for one of the hosted parties.

        A request of the controller joins the broadcast being collected, answered for all its
        receivers on the loop's next turn (:meth:`_flush`; module docstring): a release request,
        an abort, a sum's commitment or start by the receivers' cohorts, any request by each party built on its own
        (:meth:`Party.receive <parties.party.Party.receive>`; the receivers still in a cohort
        are built at once).  Any other frame (secure-sum traffic, to the party's program:
        :class:`~parties.party_sum.PartySums`) first answers what was collected.  No task,
        endpoint or pending receive is kept per party.  Decoding rejects the unexpected (counted
        ``rejected``, against the sender); a broadcast, arriving as equal bytes for every party,
        is decoded once.  ``position`` (a reorder fault) has no buffer to act on: frames are
        handled in arrival order.
        """
        net = self.network
        dst = frame.dst
        start = self.setup.parties.start
        msg = frame.message
        if self._batch_array is not None:  # (one more frame of a broadcast delivered at once: as lists)
            self._batch_rows = self._batch_array.tolist()
            self._batch_seen, self._batch_array = set(self._batch_rows), None
        if msg is not None and msg is self._batch and frame.phase == self._batch_phase and frame.src == CONTROLLER:
            row = dst - start  # the broadcast being collected reaches one more party
            if 0 <= row < self._size and row not in self._batch_seen and not net.is_crashed(dst):
                self._counter.record_delivery(dst, len(frame.payload))
                self._batch_rows.append(row)
                self._batch_seen.add(row)
                return
        if dst not in self.setup.parties:
            self._counter.record_fault("rejected")
            return
        if net.is_crashed(dst):
            self._counter.record_fault("lost_to_crash")
            return
        if frame.src != CONTROLLER or frame.kind not in _CONTROLLER_REQUESTS:
            self._settle()
            self._sums.deliver(frame, position)  # secure-sum traffic: to the party's program
            return
        payload = frame.payload
        try:
            if msg is not None and frame.kind in self._accept:
                pass  # encoded in this process: the message itself (Frame)
            elif payload == self._last_payload and self._last_message is not None:
                msg = self._last_message
            else:
                msg = decode(payload, expected=self._accept)
                self._last_payload, self._last_message = payload, msg
        except MessageError:  # a bad frame is its sender's fault: counted against it, never the party's
            self._counter.record_rejection(frame.src)
            return
        self._counter.record_delivery(dst, len(payload))
        row = dst - start
        if msg is not self._batch or frame.phase != self._batch_phase or row in self._batch_seen:
            self._settle()  # (a request collected so far is answered first)
            self._batch, self._batch_phase = msg, frame.phase
            self._schedule()
        self._batch_rows.append(row)
        self._batch_seen.add(row)

    def deliver_each(self, src: int, phase: str, kind: int, dsts: Sequence[int], messages: Sequence[Message],
                     sizes: Sequence[int]) -> None:
        """``messages[k]`` from ``src`` for hosted party ``dsts[k]``, all of ``kind``, ``sizes[k]``
        bytes encoded: as many :meth:`deliver` calls of their frames.  The messages of this
        process (:class:`~parties.runtime.LocalLink`) for the programs of parties all hosted and
        none crashed go to them as they are (:meth:`PartySums.take <parties.party_sum.PartySums.take>`)."""
        hosted = self.setup.parties
        if ((src == CONTROLLER and kind in _CONTROLLER_REQUESTS) or kind not in self._accept or self.network.crashed
                or (dsts and (min(dsts) < hosted.start or max(dsts) >= hosted.stop))):
            for dst, msg in zip(dsts, messages):  # (each by the rules of a frame)
                self.deliver(Frame(src, dst, phase, kind, encode(msg), msg))
            return
        self._settle()  # (a request collected so far is answered first)
        self._counter.record_deliveries_each(dsts, sizes)
        take = self._sums.take
        for dst, msg in zip(dsts, messages):
            take(src, dst, phase, msg)

    def deliver_many(self, frame: Frame, dsts: np.ndarray) -> None:
        """``frame`` (a broadcast of the controller) for every party of ``dsts`` (ascending):
        as many :meth:`deliver` calls; a request joins the broadcast being collected at once."""
        msg = frame.message
        rows = dsts - self.setup.parties.start
        net = self.network
        if (msg is None or frame.src != CONTROLLER or frame.kind not in _CONTROLLER_REQUESTS
                or frame.kind not in self._accept or rows.shape[0] == 0 or rows[0] < 0
                or rows[-1] >= self._size or net.crashed or (msg is self._batch and frame.phase == self._batch_phase)):
            for dst in dsts.tolist():
                self.deliver(frame._replace(dst=dst))
            return
        self._counter.record_deliveries_to(dsts, len(frame.payload))
        self._settle()  # (a request collected so far is answered first)
        self._batch, self._batch_phase = msg, frame.phase
        self._batch_array = rows
        self._schedule()

    def _deliver_multi(self, frame: Frame, dsts: np.ndarray) -> None:
        """One payload from the controller process for every party of ``dsts`` (a ``MULTI``
        record): a request, decoded once, reaches them all at once (:meth:`deliver_many`, for
        ascending ``dsts``); anything else — or bytes that do not decode as the kind their header
        names — frame by frame (:meth:`deliver`: decoded, counted and rejected there)."""
        msg: Message | None = None
        if (frame.src == CONTROLLER and frame.kind in _CONTROLLER_REQUESTS and frame.kind in self._accept
                and dsts.shape[0] > 1 and bool(np.all(dsts[1:] > dsts[:-1]))):
            payload = frame.payload
            try:
                if payload == self._last_payload and self._last_message is not None:
                    msg = self._last_message
                else:
                    msg = decode(payload, expected=self._accept)
                    self._last_payload, self._last_message = payload, msg
            except MessageError:
                msg = None
        if msg is not None and msg.KIND == frame.kind:
            self.deliver_many(frame._replace(message=msg), dsts)
            return
        for dst in dsts.tolist():
            self.deliver(Frame(frame.src, dst, frame.phase, frame.kind, frame.payload))

    def _answer(self, party: Party, msg: Message, phase: str) -> None:
        """``party``'s own answer to ``msg`` (the per-party path)."""
        reply = party.receive(msg)
        if isinstance(reply, SecureSumStart):
            self._start_session(party, reply)
        elif reply is not None:
            self._send(party.index, phase, reply, encode(reply))

    def _send(self, src: int, phase: str, reply: Message, payload: bytes) -> None:
        """Queue ``src``'s reply (it leaves with the next :meth:`_flush`)."""
        if self.network.admit(src):
            self._replies.append(Frame(src, CONTROLLER, phase, reply.KIND, payload, reply))
            self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _settle(self) -> None:
        """Answer the broadcast collected so far, for every party it reached, in arrival order."""
        msg = self._batch
        if msg is None:
            return
        rows = self._batch_array if self._batch_array is not None else np.array(self._batch_rows, dtype=np.int64)
        self._batch_array = None
        phase = self._batch_phase
        self._batch, self._batch_rows, self._batch_seen = None, [], set()
        start = self.setup.parties.start
        self._cohort_sums.close()  # (the sums members are done with, closed in their cohorts before they act)
        if isinstance(msg, SecureRelease) and self.setup.engine is not None:
            self._commit(rows, msg, phase)
            return
        if isinstance(msg, SecureSumStart) and self.setup.engine is not None:
            self._start(rows, msg, phase)
            return
        if not isinstance(msg, _COHORT_KINDS):  # a request each party answers on its own: built at once
            self.materialize(rows)
            for row in rows.tolist():
                self._answer(self._parties[row], msg, phase)
            return
        # each cohort the broadcast reached: its receivers (split off when only some), stepped at once
        answers: dict[int, tuple[Cohort, np.ndarray | None]] = {}
        for index, cohort in self._table.reached(rows):
            if isinstance(msg, Abort):
                cohort.status = "aborted"
                continue
            assert isinstance(msg, ReleaseRequest)
            answers[index] = (cohort, cohort.release(msg, self._book, self._records, self.setup.streams))
        if isinstance(msg, Abort):
            for row in rows[self._table.of[rows] < 0].tolist():
                self._parties[row].receive(msg)
            return
        apart = [cohort.rows for cohort, codes in answers.values() if codes is None]
        if apart:  # members that do not all release: each answers on its own
            self.materialize(np.concatenate(apart))
        of = self._table.of[rows]
        position = np.zeros(rows.shape[0], dtype=np.int64)
        for index, (cohort, codes) in answers.items():
            if codes is not None:
                mine = of == index
                position[mine] = np.searchsorted(cohort.rows, rows[mine])
        assert isinstance(msg, ReleaseRequest)
        rid = msg.request_id
        send, admit = self._replies.append, self.network.admit
        layouts = {index: ReplyLayout.of(rid, codes) for index, (_, codes) in answers.items() if codes is not None}
        if self._uplink_columns is not None:  # runs of cohort members' replies leave as columns
            self._send_columns(rows, of, position, answers, msg, phase)
            return
        for row, index, at in zip(rows.tolist(), of.tolist(), position.tolist()):
            if index < 0:
                self._answer(self._parties[row], msg, phase)
                continue
            reply, payload = layouts[index].reply(at)
            if admit(start + row):
                send(Frame(start + row, CONTROLLER, phase, _VALUES, payload, reply))
        if self._replies:
            self._schedule()

    def _commit(self, rows: np.ndarray, msg: SecureRelease, phase: str) -> None:
        """Answer the commitment ``msg`` that reached ``rows`` (in arrival order): each cohort reached
        computes its members' inputs at once (:meth:`Cohort.commit <parties.cohort.Cohort.commit>`),
        which stay in it (:meth:`CohortSums.hold <parties.cohort_sum.CohortSums.hold>`), and
        acknowledges; the members of a cohort that cannot commit as a whole answer on their own."""
        committed: set[int] = set()  # the rows whose cohort committed as a whole: they stay in it
        digest = self._book.digest(msg)
        for _, cohort in self._table.reached(rows):
            inputs = cohort.commit(msg, self._book, self._records, self.setup.streams)
            if inputs is not None:
                self._cohort_sums.hold(msg.session, cohort.rows, inputs, digest)
                committed.update(cohort.rows.tolist())
        self._build(rows[~np.isin(rows, np.fromiter(committed, dtype=np.int64, count=len(committed)))])
        ack = Ack(msg.request_id)
        payload, start, admit, send = encode(ack), self.setup.parties.start, self.network.admit, self._replies.append
        for row in rows.tolist():
            if row not in committed:
                self._answer(self._parties[row], msg, phase)
            elif admit(start + row):
                send(Frame(start + row, CONTROLLER, phase, Ack.KIND, payload, ack))
        if self._replies:
            self._schedule()

    def _start(self, rows: np.ndarray, msg: SecureSumStart, phase: str) -> None:
        """Start the secure sum ``msg`` for ``rows`` (in arrival order): each cohort reached as a
        whole, each member running its own side (:meth:`CohortSums.start
        <parties.cohort_sum.CohortSums.start>`); any other receiver decides on its own."""
        programs: dict[int, Any] = {}
        sums = self._cohort_sums
        for _, cohort in self._table.reached(rows):
            programs.update(sums.start(cohort, msg, self.setup.engine, self._signers, self._registry, self._book,
                                       self.network) or {})
        self._build(rows[~np.isin(rows, np.fromiter(programs, dtype=np.int64, count=len(programs)))])
        run = self._sums.run
        for row in rows.tolist():
            program = programs.get(row)
            if program is None:
                self._answer(self._parties[row], msg, phase)
            else:
                run(sums.member(row), msg.session, program)

    def _send_columns(self, rows: np.ndarray, of: np.ndarray, position: np.ndarray,
                      answers: dict[int, tuple[Cohort, np.ndarray | None]], msg: ReleaseRequest, phase: str) -> None:
        """Queue the replies to ``msg`` in arrival order: each run of cohort members, and of
        parties on their own whose every unit is granted (:func:`~parties.built_release.release_together`), as one
        :class:`~parties.columns.ReplyColumns`, each other party's reply as its own frame."""
        table = np.empty((rows.shape[0], len(msg.units)), dtype=np.int64)
        for index, (_, codes) in answers.items():
            if codes is not None:
                mine = of == index
                table[mine] = codes[position[mine]]
        alone = np.flatnonzero(of < 0)
        replies = (release_together(self._parties, self.network.is_crashed, self._records, self.setup.streams,
                                    rows, alone, msg, table) if alone.size else {})
        table.flags.writeable = False
        layout = ReplyLayout.of(msg.request_id, table)
        start = self.setup.parties.start
        at = 0
        for stop in [*sorted(replies), rows.shape[0]]:
            if stop > at:
                self._replies.append(layout.columns(rows[at:stop] + start, phase, slice(at, stop)))
            if stop < rows.shape[0] and (reply := replies[stop]) is not None:
                self._send(start + int(rows[stop]), phase, reply, encode(reply))
            at = stop + 1
        if self._replies:
            self._schedule()

    def _flush(self) -> None:
        """Answer what was collected, then send the replies since the last flush, in that order.

        A reply leaves after the delivery that caused it has returned, as a party actor's would
        (on its next turn of the event loop): a controller's broadcast round closes before its
        answers arrive, whatever the host.
        """
        self._scheduled = False
        self._settle()
        replies, self._replies = self._replies, []
        for item in replies:
            if isinstance(item, Frame):
                self._uplink(item)
            elif self._uplink_columns is not None:
                self._uplink_columns(item)

    def _start_session(self, party: Party, start: SecureSumStart) -> None:
        """Run the party's side of a secure sum (:class:`~parties.party_sum.PartySums`)."""
        self._sums.start(party, start)

    def buffered(self, party: int) -> int:
        """Secure-sum messages delivered to hosted ``party`` that its program has not taken yet."""
        return self._sums.buffered(party)

    def take(self, record: bytes) -> tuple[str, Any] | None:
        """One record of the frame channel (:mod:`parties.channel`) from the controller process:
        a frame (``DATA``, or a broadcast to many hosted parties, ``MULTI``) is delivered, a
        ``crash`` notice crashes its parties; any other control record is returned as ``(tag, body)``."""
        if record[0] == DATA:
            self.deliver(*read_record(record))
        elif record[0] == MULTI:
            self._deliver_multi(*read_multi(record))
        elif (control := loads(record))[0] == "crash":
            self.crash(tuple(int(p) for p in control[1]))
        else:
            return control
        return None

    def crash(self, parties: Sequence[int]) -> None:
        """Crash hosted parties (a crash fault decided in the controller process)."""
        hosted = [p for p in parties if p in self.setup.parties]
        if not hosted:
            return
        start = self.setup.parties.start
        self.materialize(np.array([p - start for p in hosted], dtype=np.int64))
        for p in hosted:
            self.network.crash(p)
            self._sums.crash(p)
            self._parties[p - start].status = "crashed"

