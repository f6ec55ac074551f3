"""Party shard host: many :class:`~parties.party.Party` actors on one event loop.

Every runtime hosts its parties this way.  The controller runs on a
:class:`~parties.network.InMemoryNetwork`; parties ``lo..hi-1`` run in a **party shard host**
(:class:`PartyShard`) — on the controller's own event loop (the ``memory`` runtime,
:class:`parties.runtime.MemoryRuntime`), in a worker process (:mod:`parties.tcp`) or in a Ray
async actor (:mod:`parties.ray_runtime`) — and the two are joined by a *frame channel*
carrying the one codec's bytes (:mod:`parties.channel`; in memory, a direct call each way).  The shard is written once; a runtime only supplies the
channel: an ``uplink`` callable that carries a :class:`~parties.transport.Frame` towards the
controller process, and calls of :meth:`PartyShard.take` (the channel's records) or
:meth:`PartyShard.deliver` / :meth:`PartyShard.crash` for what comes back.

Inside the shard, :class:`ShardNetwork` is a :class:`~parties.transport.Transport` whose
:meth:`_transmit` is the uplink (crash set, counters, topology, admission as everywhere).  Each
release request from the controller is answered on arrival by the party's own decision
function (:meth:`Party.receive <parties.party.Party.receive>`), so no task, endpoint or
pending receive is kept per party; the replies leave on the loop's next turn, as an actor's
would.  Every frame leaves the shard: the router routes, counts and applies the fault plan
in one place, so message counts, payload bytes and fault semantics are the same on every
runtime.

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
memo of public derivations).  Party ``i``'s stream is child ``i`` of ``SeedSequence(seed)``,
exactly ``PartyStreams(seed, n).seed_sequence(i)``: one :class:`~mprr.streams.StreamTable` row
per hosted party (32 bytes).  The runner computes the rows of the shard's range from the run
seed and sends only those (:attr:`ShardSetup.streams`): a worker never holds the seed, from
which the noise of every other worker's parties derives, and the same seed still gives the
same result on every runtime.

At the end the shard's :class:`~parties.shard_report.ShardReport` (:meth:`ShardReport.of
<parties.shard_report.ShardReport.of>`) holds what the harness keeps of its parties, in columns
(:mod:`parties.shard_report`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mprr.data import Schema
from mprr.domain import check_int
from mprr.errors import ConfigurationError, MessageError
from mprr.privacy import DEFAULT_MIN_ROSTER
from mprr.streams import StreamTable
from parties.channel import DATA, MULTI, loads, read_multi, read_record
from parties.wire.codec import Message, decode, encode
from parties.wire.requests import SecureSumStart
from parties.party import LOOP_KINDS, Party
from parties.public_state import ReleaseBook
from parties.secure.pki import PUBLIC_KEY_BYTES, KeyRegistry, Signer, generate_signers
from parties.transport import CONTROLLER, Endpoint, Frame, Transport, actor_name

if TYPE_CHECKING:  # annotations only: a worker imports networkx and the engines only when a run needs them
    import networkx as nx

    from parties.secure.engine import SecureSumEngine

__all__ = [
    "PartyShard",
    "ShardNetwork",
    "ShardSetup",
    "directory",
    "split",
]

_CONTROLLER_REQUESTS = frozenset(k.KIND for k in LOOP_KINDS)
"""Kinds a party takes from the controller (:meth:`Party.receive <parties.party.Party.receive>`);
every other frame (secure-sum traffic from the controller or from peers) goes to the party's
endpoint."""


def split(n: int, shards: int) -> list[range]:
    """``shards`` contiguous, near-equal ranges covering parties ``0..n-1`` (none empty)."""
    check_int("the number of workers/shards", shards, 1)
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
    streams
        The stream keys of the hosted parties only (:class:`~mprr.streams.StreamTable` rows of
        ``parties``), computed by the runner from the run seed: a shard never holds the seed,
        from which every other shard's parties' noise derives.
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
    topology
        A user-given graph of party links (the memory runtime's shard only); it overrides
        ``mesh``.
    """

    parties: range
    n: int
    schema: Schema
    records: np.ndarray
    streams: StreamTable
    budgets: tuple[float, ...]
    policy: str
    accept: tuple[int, ...]
    engine: SecureSumEngine | None = None
    min_roster: int = DEFAULT_MIN_ROSTER
    mesh: bool = False
    topology: nx.Graph[int] | None = None

    def graph(self) -> nx.Graph[int] | None:
        """The run's graph of party links: ``topology``, else the full mesh when ``mesh``, else
        ``None`` (the star)."""
        if self.topology is None and self.mesh:
            import networkx as nx  # only for the engines that need direct party links

            mesh: nx.Graph[int] = nx.complete_graph(self.n)
            return mesh
        return self.topology

    @property
    def signs(self) -> bool:
        """Whether the parties need PKI signing keys (the engine signs)."""
        return self.engine is not None and self.engine.signs


class ShardNetwork(Transport):
    """The shard's side of the frame channel: every frame goes to ``uplink``.

    Sends are not counted here: the router counts each one once, when it admits it.

    Parameters
    ----------
    n
        Number of parties of the run.
    parties
        Parties hosted here.
    uplink
        Carries a frame towards the controller process (must not block).
    topology
        The run's graph of party links (``None``: the star).
    router
        The router, when it lives in this process (the memory runtime): the shard then shares
        its topology and its traffic counter, so deliveries are counted where sends are.
    """

    counts_sends = False

    def __init__(self, n: int, parties: range, uplink: Callable[[Frame], None], *,
                 topology: nx.Graph[int] | None = None, router: Transport | None = None) -> None:
        super().__init__(n, topology=None if router is not None else topology)
        if router is not None:
            self.topology = router.topology
            self._traffic = router._traffic
        self.parties = parties
        self._uplink = uplink

    def _transmit(self, frame: Frame) -> None:
        self._uplink(frame)


class PartyShard:
    """Hosts the parties of ``setup.parties`` and serves them until :meth:`stop`.

    Use::

        shard = PartyShard(setup, uplink)
        task = asyncio.create_task(shard.serve())   # owner: the runtime's worker
        shard.deliver(frame, position)              # frames from the controller process
        shard.stop(); await task; ShardReport.of(shard)

    With a secure-sum engine in the setup, call :meth:`register` with the run's key
    directory (:func:`directory` of every shard's :meth:`public_keys`) before the protocol.
    """

    def __init__(self, setup: ShardSetup, uplink: Callable[[Frame], None], *,
                 router: Transport | None = None) -> None:
        rows = np.asarray(setup.records)
        if rows.shape != (len(setup.parties), setup.schema.m):
            raise ConfigurationError(
                f"shard setup: records must have shape ({len(setup.parties)}, {setup.schema.m}), got {rows.shape}"
            )
        if not isinstance(setup.streams, StreamTable) or setup.streams.parties != setup.parties:
            raise ConfigurationError(
                f"shard setup: streams must be the StreamTable of the hosted parties {setup.parties}, "
                f"got {getattr(setup.streams, 'parties', setup.streams)!r}")
        if len(setup.budgets) != len(setup.parties):
            raise ConfigurationError(f"shard setup: {len(setup.budgets)} budgets for {len(setup.parties)} parties")
        self.setup = setup
        self.network = ShardNetwork(setup.n, setup.parties, uplink, router=router,
                                    topology=setup.graph() if router is None else None)
        self._uplink = uplink
        self._accept = frozenset(setup.accept)
        self._last_payload: bytes | None = None
        self._last_message: Message | None = None
        self._replies: list[Frame] = []
        # the parties' signing keys are born here and never leave (parties.secure.pki)
        self._signers: dict[int, Signer] = generate_signers(setup.parties) if setup.signs else {}
        self._registered = False
        book = ReleaseBook(setup.schema)
        records = rows.tolist()
        streams = setup.streams
        self.parties: tuple[Party, ...] = tuple(
            Party(i, records[k], setup.schema, seed=streams.stream(i), budget=setup.budgets[k],
                  policy=setup.policy, book=book, engine=setup.engine, min_roster=setup.min_roster,
                  signer=self._signers.get(i))
            for k, i in enumerate(setup.parties)
        )
        self._stop = asyncio.Event()
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
        """End :meth:`serve` (at once, if called before it)."""
        self._stop.set()

    def deliver(self, frame: Frame, position: int | None = None) -> None:
        """A frame from the controller process for one of the hosted parties: answer it now.

        The party's own decision function (:meth:`Party.receive <parties.party.Party.receive>`)
        runs as the frame arrives, so no task, endpoint or pending receive is kept per party
        (about 4 KB each); its reply leaves on the loop's next turn (:meth:`_flush`).  Decoding
        rejects the unexpected (counted ``rejected``, against the sender); a
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
            msg = frame.message
            if msg is not None and frame.kind in self._accept:
                pass  # encoded in this process: the message itself (Frame)
            elif payload == self._last_payload and self._last_message is not None:
                msg = self._last_message
            else:
                msg = decode(payload, expected=self._accept)
                self._last_payload, self._last_message = payload, msg
        except MessageError:  # a bad frame is its sender's fault: counted against it, never the party's
            net._traffic.record_rejection(frame.src)
            return
        net._traffic.record_delivery(dst, len(payload))
        reply = party.receive(msg)
        if isinstance(reply, SecureSumStart):
            self._start_session(party, reply)
            return
        if reply is not None and net._admit(dst):
            replies = self._replies
            if not replies:
                asyncio.get_running_loop().call_soon(self._flush)
            replies.append(Frame(dst, CONTROLLER, frame.phase, reply.KIND, encode(reply), reply))

    def _flush(self) -> None:
        """Send the replies of the frames delivered since the last flush, in that order.

        A reply leaves after the delivery that caused it has returned, as a party actor's would
        (on its next turn of the event loop): a controller's broadcast round closes before its
        answers arrive, whatever the host.
        """
        replies, self._replies = self._replies, []
        for frame in replies:
            self._uplink(frame)

    def buffered(self, party: int) -> int:
        """Messages delivered to ``party``'s endpoint and not yet taken (where a reorder fault
        inserts the next one)."""
        ep = self.network._endpoints.get(party)
        return 0 if ep is None else ep.buffered

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

    def take(self, record: bytes) -> tuple[str, Any] | None:
        """One record of the frame channel (:mod:`parties.channel`) from the controller process:
        a frame (``DATA``, or a broadcast to many hosted parties, ``MULTI``) is delivered, a
        ``crash`` notice crashes its parties; any other control record is returned as ``(tag, body)``."""
        if record[0] == DATA:
            self.deliver(*read_record(record))
        elif record[0] == MULTI:
            frame, dsts = read_multi(record)
            for dst in dsts:
                self.deliver(Frame(frame.src, dst, frame.phase, frame.kind, frame.payload))
        elif (control := loads(record))[0] == "crash":
            self.crash(tuple(int(p) for p in control[1]))
        else:
            return control
        return None

    def crash(self, parties: Sequence[int]) -> None:
        """Crash hosted parties (a crash fault decided in the controller process)."""
        for p in parties:
            if p in self.setup.parties:
                self.network.crash(p)
                self.parties[p - self.setup.parties.start].status = "crashed"


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
