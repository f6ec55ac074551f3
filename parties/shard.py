"""Party shard host: many :class:`~parties.party.Party` actors on one event loop, far from the controller.

The multi-process runtimes share one idea.  The controller runs in the controller process on a
:class:`~parties.router.RouterNetwork`; parties ``lo..hi-1`` run in a **party shard host**
(:class:`PartyShard`) — a worker process (:mod:`parties.tcp`) or a Ray async actor
(:mod:`parties.ray_runtime`) — and the two are joined by a *frame channel* carrying the one
codec's bytes (:mod:`parties.channel`).  The shard is written once; a runtime only supplies the
channel: an ``uplink`` callable that carries a :class:`~parties.transport.Frame` towards the
controller process, and calls of :meth:`PartyShard.deliver` / :meth:`PartyShard.crash` for
what comes back.

Inside the shard, :class:`ShardNetwork` is a :class:`~parties.transport.Transport` whose
:meth:`_transmit` is the uplink (crash set, counters, topology, admission as everywhere).  Each
release request from the controller is answered on arrival by the party's own decision
function ``Party.handle`` — what ``Party.run`` does with a controller message — so no task,
endpoint or pending receive is kept per party.  Every frame leaves the shard: the controller
process routes, counts and applies the fault plan in one place, so message counts, payload
bytes and fault semantics are those of :class:`~parties.network.InMemoryNetwork`.

Secure sums (RR-Clusters 4.2 / 4.3): a party that receives a
:class:`~parties.wire.requests.SecureSumStart` runs its side of the engine
(``Party.secure_sum``) as a task owned by :meth:`PartyShard.serve`, on an endpoint of the
shard's network; the engine's messages for it — from the controller, or from peers in this or
another shard, always routed through the controller process's router, which checks the
topology — are delivered into that endpoint as in memory.  The setup carries what each party
agreed to before the run: the engine (its configuration is the party's policy), the minimum
roster and whether the engine needs party-to-party links (``mesh``).  Signing keys
(:mod:`parties.secure.pki`) are generated *here*, where the parties live
(:func:`~parties.secure.pki.generate_signers`); only their verification keys leave the shard
(:meth:`PartyShard.public_keys`), and the run's directory of every party's key comes back
before the protocol (:meth:`PartyShard.register`), from the runner — the PKI of the run, never
the controller actor.

Public state: each shard builds its own :class:`~parties.public_state.ReleaseBook` (a pure
memo of public derivations).  The hosted parties' streams are rebuilt from the run seed
(:func:`mprr.streams.party_seeds`), exactly ``PartyStreams(seed, n).seed(i)``, without computing
the other parties' streams.

At the end the shard answers :meth:`PartyShard.report`: one :class:`PartySummary` per party
(accountant, refusals, released values — harness data, never seen by the controller actor)
and its delivery counters (deliveries, rejected frames, losses to crashes), which the router
adds to its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from mprr.data import Schema
from mprr.errors import ConfigurationError, MessageError
from mprr.privacy.ledger import Ledger
from mprr.privacy import DEFAULT_MIN_ROSTER, PrivacyAccountant, Refusal
from mprr.streams import party_seeds
from parties.wire.codec import decode, encode
from parties.wire.messages import Abort, Message
from parties.wire.requests import ReleaseRequest, SecureRelease, SecureSumStart
from parties.party import Party
from parties.public_state import ReleaseBook
from parties.secure.engine import SecureSumEngine
from parties.secure.pki import PUBLIC_KEY_BYTES, KeyRegistry, Signer, generate_signers
from parties.transport import CONTROLLER, Endpoint, Frame, Transport, actor_name

__all__ = ["PartyShard", "PartySummary", "ShardNetwork", "ShardReport", "ShardSetup", "directory", "split"]

_CONTROLLER_REQUESTS = frozenset(k.KIND for k in (ReleaseRequest, SecureRelease, SecureSumStart, Abort))
"""Kinds a party takes from the controller in its main loop (``Party.run``); every other frame
(secure-sum traffic from the controller or from peers) goes to the party's endpoint."""


def split(n: int, shards: int) -> list[range]:
    """``shards`` contiguous, near-equal ranges covering parties ``0..n-1`` (none empty)."""
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ConfigurationError(f"the number of workers/shards must be an integer >= 1, got {shards!r}")
    if shards > n:
        raise ConfigurationError(f"{shards} workers/shards for {n} parties: at most one per party (n = {n})")
    bounds = [round(k * n / shards) for k in range(shards + 1)]
    return [range(bounds[k], bounds[k + 1]) for k in range(shards)]


@dataclass(frozen=True)
class ShardSetup:
    """What a shard host needs to build its parties (sent once, before the protocol).

    Attributes
    ----------
    parties
        The party ids it hosts (contiguous).
    n
        Number of parties of the run.
    schema
        Attributes every party holds.
    records
        ``(len(parties), m)`` true codes, row ``k`` = party ``parties[k]`` (harness data: in a
        deployment each worker reads its own parties' records).
    seed
        Run seed (party streams, :func:`mprr.streams.party_seeds`).
    budgets
        ε budget of each hosted party.
    policy
        Composition policy of every party's accountant.
    accept
        Message kinds a party endpoint accepts.
    engine
        The secure-sum engine every party agreed to (``None``: no secure sum in this run).
    min_roster
        Fewest parties each party accepts in a secure-sum roster.
    mesh
        The run's topology links every party to every other (engines that send shares over
        direct party links); otherwise the star.
    """

    parties: range
    n: int
    schema: Schema
    records: np.ndarray
    seed: int
    budgets: tuple[float, ...]
    policy: str
    accept: tuple[int, ...]
    engine: SecureSumEngine | None = None
    min_roster: int = DEFAULT_MIN_ROSTER
    mesh: bool = False


@dataclass(frozen=True)
class PartySummary:
    """What the harness keeps of a remote party after the run (no record, no stream)."""

    index: int
    accountant: PrivacyAccountant
    released_values: tuple[int, ...] = ()
    draws: int = 0
    status: str = "idle"
    errors: tuple[str, ...] = ()

    @property
    def ledger(self) -> Ledger:
        """The party's ledger."""
        return self.accountant.ledger

    @property
    def refusals(self) -> tuple[Refusal, ...]:
        """The requests the party refused (its accountant's records)."""
        return self.accountant.refusals

    @classmethod
    def of(cls, party: Party) -> PartySummary:
        """Summary of a live party."""
        return cls(party.index, party.accountant, party.released_values, party.draws,
                   party.status, tuple(party.errors))

    @classmethod
    def lost(cls, index: int, budget: float, policy: str) -> PartySummary:
        """Placeholder of a party whose host was lost (empty ledger, status ``"lost"``)."""
        return cls(index, PrivacyAccountant(budget, policy, party=index), status="lost")


@dataclass(frozen=True)
class ShardReport:
    """A shard's answer at the end of the run: party summaries and delivery counters."""

    parties: range
    summaries: tuple[PartySummary, ...]
    received_messages: tuple[int, ...]
    received_bytes: tuple[int, ...]
    delivered: int
    faults: dict[str, int] = field(default_factory=dict)


class ShardNetwork(Transport):
    """The shard's side of the frame channel: every frame goes to ``uplink``.

    Parameters
    ----------
    n
        Number of parties of the run.
    parties
        Parties hosted here.
    uplink
        Carries a frame towards the controller process (must not block).
    """

    def __init__(self, n: int, parties: range, uplink: Callable[[Frame], None], *,
                 topology: nx.Graph[int] | None = None) -> None:
        super().__init__(n, topology=topology)
        self.parties = parties
        self._uplink = uplink

    async def _transmit(self, frame: Frame) -> None:
        self._uplink(frame)


class PartyShard:
    """Hosts the parties of ``setup.parties`` and serves them until :meth:`stop`.

    Use::

        shard = PartyShard(setup, uplink)
        task = asyncio.create_task(shard.serve())   # owner: the runtime's worker
        shard.deliver(frame, position)              # frames from the controller process
        shard.stop(); await task; shard.report()

    With a secure-sum engine in the setup, call :meth:`register` with the run's key
    directory (:func:`directory` of every shard's :meth:`public_keys`) before the protocol.
    """

    def __init__(self, setup: ShardSetup, uplink: Callable[[Frame], None]) -> None:
        rows = np.asarray(setup.records)
        if rows.shape != (len(setup.parties), setup.schema.m):
            raise ConfigurationError(
                f"shard setup: records must have shape ({len(setup.parties)}, {setup.schema.m}), got {rows.shape}"
            )
        if len(setup.budgets) != len(setup.parties):
            raise ConfigurationError(f"shard setup: {len(setup.budgets)} budgets for {len(setup.parties)} parties")
        self.setup = setup
        topology = nx.complete_graph(setup.n) if setup.mesh else None
        self.network = ShardNetwork(setup.n, setup.parties, uplink, topology=topology)
        self._uplink = uplink
        self._accept = frozenset(setup.accept)
        self._last_payload: bytes | None = None
        self._last_message: Message | None = None
        engine = setup.engine
        # the parties' signing keys are born here and never leave (parties.secure.pki)
        self._signers: dict[int, Signer] = generate_signers(setup.parties) if engine is not None and engine.signs else {}
        self._registered = False
        book = ReleaseBook(setup.schema)
        records = rows.tolist()
        seeds = party_seeds(setup.seed, setup.parties)
        self.parties: tuple[Party, ...] = tuple(
            Party(i, records[k], setup.schema, seed=seeds[k], budget=setup.budgets[k],
                  policy=setup.policy, book=book, engine=engine, min_roster=setup.min_roster,
                  signer=self._signers.get(i))
            for k, i in enumerate(setup.parties)
        )
        self._stop: asyncio.Event | None = None
        self._sessions: asyncio.TaskGroup | None = None
        self._tasks: set[asyncio.Task[None]] = set()

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
        if self._registered:
            raise ConfigurationError("shard setup: the key directory is installed once")
        registry = KeyRegistry.from_keys(range(self.setup.n), keys)
        wrong = [i for i, signer in self._signers.items() if registry.key(i) != signer.public]
        if wrong:  # checked for all before any party holds it: all or nothing
            raise ConfigurationError(
                f"the key directory does not hold the own verification keys of parties {wrong[:10]}: refused"
            )
        for party in self.parties:
            party.register(registry)
        self._registered = True

    async def serve(self) -> None:
        """Serve the parties until :meth:`stop` (frames are answered as they are delivered).

        Owns the parties' secure-sum sessions: each runs as a task of this call's task group,
        and the sessions still running at :meth:`stop` are cancelled (as the memory runtime
        cancels its party tasks when the controller is done).
        """
        self._stop = asyncio.Event()
        for p in self.parties:
            p.status = "running"
        async with asyncio.TaskGroup() as tg:
            self._sessions = tg
            try:
                await self._stop.wait()
            finally:
                self._sessions = None
                for task in self._tasks:
                    task.cancel()

    def stop(self) -> None:
        """End :meth:`serve`."""
        if self._stop is not None:
            self._stop.set()

    def deliver(self, frame: Frame, position: int | None = None) -> None:
        """A frame from the controller process for one of the hosted parties: answer it now.

        The party's own decision function (:meth:`Party.handle <parties.party.Party.handle>`)
        runs as the frame arrives — what ``Party.run`` does with a message from the controller —
        so no task, endpoint or pending receive is kept per party (about 4 KB each).  Decoding
        rejects the unexpected (counted ``rejected``, logged in the party's ``errors``); a
        broadcast, arriving as equal bytes for every party, is decoded once.  ``position`` (a
        reorder fault) has no buffer to act on: frames are handled in arrival order.
        """
        net = self.network
        dst = frame.dst
        start = self.setup.parties.start
        if dst not in self.setup.parties:
            net._traffic.record_fault("rejected")
            return
        if dst in net._crashed:
            net._traffic.record_fault("lost_to_crash")
            return
        party = self.parties[dst - start]
        if frame.src != CONTROLLER or frame.kind not in _CONTROLLER_REQUESTS:
            self._endpoint(dst)  # secure-sum traffic: into the party's mailbox, as in memory
            net._deliver(frame, position)
            return
        payload = frame.payload
        try:
            if payload == self._last_payload and self._last_message is not None:
                msg = self._last_message
            else:
                msg = decode(payload, expected=self._accept)
                self._last_payload, self._last_message = payload, msg
        except MessageError as exc:
            net._traffic.record_fault("rejected")
            party.errors.append(f"{actor_name(dst)} rejected a message from {actor_name(frame.src)} "
                                f"in phase {frame.phase!r}: {exc}")
            return
        net._traffic.record_delivery(dst, len(payload))
        if isinstance(msg, Abort):
            party.status = "aborted"
            return
        if isinstance(msg, SecureSumStart):
            self._start_session(party, msg)
            return
        try:
            reply = party.handle(msg)
        except MessageError as exc:
            party.errors.append(str(exc))
            return
        if reply is not None and net._admit(dst):
            data = encode(reply)
            net._traffic.record_send(dst, frame.phase, reply.KIND, len(data))
            self._uplink(Frame(dst, CONTROLLER, frame.phase, reply.KIND, data))

    def _endpoint(self, party: int) -> Endpoint:
        """The party's endpoint on the shard network (created on first use)."""
        ep = self.network._endpoints.get(party)
        if ep is None or ep._accept is None:
            ep = self.network.endpoint(party, accept=self._accept)
        return ep

    def _start_session(self, party: Party, start: SecureSumStart) -> None:
        """Run the party's side of a secure sum as a task owned by :meth:`serve`."""
        group = self._sessions
        if group is None:  # stopped (or not serving yet): the session cannot run
            party.errors.append(f"secure sum {start.session!r} refused: the shard is not serving")
            return
        task = group.create_task(party.secure_sum(self._endpoint(party.index), start))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def crash(self, parties: Sequence[int]) -> None:
        """Crash hosted parties (a crash fault decided in the controller process)."""
        for p in parties:
            if p in self.setup.parties:
                self.network.crash(p)
                self.parties[p - self.setup.parties.start].status = "crashed"

    def report(self) -> ShardReport:
        """Party summaries and delivery counters (call after :meth:`serve` has returned)."""
        t = self.network._traffic
        lo, hi = self.setup.parties.start + 1, self.setup.parties.stop + 1
        return ShardReport(
            parties=self.setup.parties,
            summaries=tuple(PartySummary.of(p) for p in self.parties),
            received_messages=tuple(t.recv_messages[lo:hi]),
            received_bytes=tuple(t.recv_bytes[lo:hi]),
            delivered=t.delivered,
            faults={"rejected": t.faults["rejected"], "lost_to_crash": t.faults["lost_to_crash"]},
        )


def directory(keys: Sequence[tuple[range, bytes]], n: int) -> bytes:
    """The run's key directory: every shard's :meth:`PartyShard.public_keys`, in party order.

    Raises
    ------
    ConfigurationError
        If the shards do not cover ``0..n-1`` exactly once, or a shard registered a wrong
        number of key bytes.
    """
    out: list[bytes] = []
    expected = 0
    for parties, blob in sorted(keys, key=lambda kv: kv[0].start):
        if parties.start != expected:
            raise ConfigurationError(f"key directory: no keys registered for parties {expected}-{parties.start - 1}")
        if not isinstance(blob, bytes) or len(blob) != PUBLIC_KEY_BYTES * len(parties):
            raise ConfigurationError(
                f"key directory: the shard of parties {parties.start}-{parties.stop - 1} registered "
                f"{len(blob) if isinstance(blob, bytes) else type(blob).__name__} bytes, expected "
                f"{PUBLIC_KEY_BYTES} per party ({PUBLIC_KEY_BYTES * len(parties)})"
            )
        out.append(blob)
        expected = parties.stop
    if expected != n:
        raise ConfigurationError(f"key directory: no keys registered for parties {expected}-{n - 1}")
    return b"".join(out)


def lost_report(parties: range, budgets: Sequence[float], policy: str) -> ShardReport:
    """The report standing in for a shard that was lost (its parties have empty ledgers)."""
    zeros = (0,) * len(parties)
    return ShardReport(parties, tuple(PartySummary.lost(i, b, policy) for i, b in zip(parties, budgets)),
                       zeros, zeros, 0, {})


def summaries_in_order(reports: Sequence[ShardReport], n: int) -> tuple[Any, ...]:
    """Party summaries of every report, indexed by party id (ConfigurationError on gaps)."""
    out: list[Any] = [None] * n
    for r in reports:
        for s in r.summaries:
            out[s.index] = s
    missing = [i for i, s in enumerate(out) if s is None]
    if missing:
        raise ConfigurationError(f"no shard reported parties {missing[:10]}")
    return tuple(out)
