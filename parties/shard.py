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
:meth:`_transmit` is the uplink (crash set, counters, admission as everywhere).  Each frame
from the controller is answered on arrival by the party's own decision function
``Party.handle`` — what ``Party.run`` does with a controller message — so no task, endpoint or
pending receive is kept per party.  Every reply leaves the shard: the controller process
routes, counts and applies the fault plan in one place, so message counts, payload bytes and
fault semantics are those of :class:`~parties.network.InMemoryNetwork`.

Public state: each shard builds its own :class:`~parties.public_state.ReleaseBook` (a pure
memo of public derivations).  Party ``i``'s stream is rebuilt from the run seed as child ``i``
of ``SeedSequence(seed)`` (:func:`party_seed`), exactly ``PartyStreams(seed, n).seed_sequence(i)``
without spawning all ``n`` children.

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

import numpy as np

from mprr.data import Schema
from mprr.errors import ConfigurationError, MessageError
from mprr.privacy.ledger import Ledger
from mprr.privacy import PrivacyAccountant
from mprr.streams import run_seed_sequence
from parties.wire.codec import decode, encode
from parties.wire.messages import Abort, Message
from mprr.privacy import Refusal
from parties.party import Party
from parties.public_state import ReleaseBook
from parties.transport import CONTROLLER, Frame, Transport, actor_name

__all__ = ["PartyShard", "PartySummary", "ShardNetwork", "ShardReport", "ShardSetup", "party_seed", "split"]


def party_seed(seed: int, party: int) -> np.random.SeedSequence:
    """Child ``party`` of ``SeedSequence(seed)``: ``PartyStreams(seed, n).seed_sequence(party)``."""
    root = run_seed_sequence(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, party), pool_size=root.pool_size)


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
        Run seed (party streams, :func:`party_seed`).
    budgets
        ε budget of each hosted party.
    policy
        Composition policy of every party's accountant.
    accept
        Message kinds a party endpoint accepts.
    """

    parties: range
    n: int
    schema: Schema
    records: np.ndarray
    seed: int
    budgets: tuple[float, ...]
    policy: str
    accept: tuple[int, ...]


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

    def __init__(self, n: int, parties: range, uplink: Callable[[Frame], None]) -> None:
        super().__init__(n)
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

    Only the one-phase protocols and RR-Clusters 4.1 run here (no party-to-party traffic, no
    secure sums): every frame is a controller request answered on arrival (:meth:`deliver`).
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
        self.network = ShardNetwork(setup.n, setup.parties, uplink)
        self._uplink = uplink
        self._accept = frozenset(setup.accept)
        self._last_payload: bytes | None = None
        self._last_message: Message | None = None
        book = ReleaseBook(setup.schema)
        records = rows.tolist()
        self.parties: tuple[Party, ...] = tuple(
            Party(i, records[k], setup.schema, seed=party_seed(setup.seed, i), budget=setup.budgets[k],
                  policy=setup.policy, book=book)
            for k, i in enumerate(setup.parties)
        )
        self._stop: asyncio.Event | None = None

    async def serve(self) -> None:
        """Serve the parties until :meth:`stop` (frames are answered as they are delivered)."""
        self._stop = asyncio.Event()
        for p in self.parties:
            p.status = "running"
        await self._stop.wait()

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
        if frame.src != CONTROLLER:
            party.errors.append(f"{actor_name(dst)} ignored {msg.NAME} from {actor_name(frame.src)}: "
                                "this runtime carries no party-to-party protocol")
            return
        if isinstance(msg, Abort):
            party.status = "aborted"
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
