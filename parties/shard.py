"""Party shard host: many :class:`~parties.party.Party` actors on one event loop.

Every runtime hosts its parties this way.  The controller runs on a
:class:`~parties.router.RouterNetwork`; parties ``lo..hi-1`` run in a **party shard host**
(:class:`PartyShard`) — on the controller's own event loop (the ``memory`` runtime,
:class:`parties.runtime.MemoryRuntime`), in a worker process (:mod:`parties.tcp`) or in a Ray
async actor (:mod:`parties.ray_runtime`) — and the two are joined by a *frame channel*
carrying the one codec's bytes (:mod:`parties.channel`; in memory, a direct call each way).  The shard is written once; a runtime only supplies the
channel: an ``uplink`` callable that carries a :class:`~parties.transport.Frame` towards the
controller process, and calls of :meth:`PartyShard.deliver` / :meth:`PartyShard.crash` for
what comes back.

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
memo of public derivations).  Party ``i``'s stream is rebuilt from the run seed as child ``i``
of ``SeedSequence(seed)``, exactly ``PartyStreams(seed, n).seed_sequence(i)``: one
:class:`~mprr.streams.StreamTable` row per hosted party (32 bytes), computed for the shard's
whole range at once.

At the end the shard answers :meth:`PartyShard.report`: a :class:`ShardReport` of what the
harness keeps of its parties (accountants, refusals, released values — harness data, never seen
by the controller actor), in columns: the parties of a run mostly share one history, so they
share one accountant in the report, which grows by a few integers per party; and its delivery
counters (deliveries, rejected frames, losses to crashes), which the router adds to its own.
:class:`PartySummaries` rebuilds a :class:`PartySummary` per party on demand.
"""

from __future__ import annotations

import asyncio
import operator
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from mprr.data import Schema
from mprr.errors import ConfigurationError, MessageError
from mprr.privacy.ledger import Ledger
from mprr.privacy import DEFAULT_MIN_ROSTER, PrivacyAccountant, Refusal
from mprr.streams import StreamTable
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
    "PartySummaries",
    "PartySummary",
    "ShardNetwork",
    "ShardReport",
    "ShardSetup",
    "accountant_for",
    "accountant_state",
    "directory",
    "split",
]

_CONTROLLER_REQUESTS = frozenset(k.KIND for k in LOOP_KINDS)
"""Kinds a party takes from the controller (:meth:`Party.receive <parties.party.Party.receive>`);
every other frame (secure-sum traffic from the controller or from peers) goes to the party's
endpoint."""


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
        Run seed (party streams: :class:`~mprr.streams.StreamTable`).
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
    seed: int
    budgets: tuple[float, ...]
    policy: str
    accept: tuple[int, ...]
    engine: SecureSumEngine | None = None
    min_roster: int = DEFAULT_MIN_ROSTER
    mesh: bool = False
    topology: nx.Graph[int] | None = None


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


def _state_key(value: Any) -> Any:
    """What identifies an accountant's field for sharing: content for containers and ledgers (of
    releases compared by identity: the parties of a shard share their release objects through
    the :class:`~parties.public_state.ReleaseBook`), the value for scalars, the identity of any
    other object (never merges two states that could differ)."""
    if value is None or isinstance(value, (bool, int, float, str, Enum)):
        return value
    if isinstance(value, Ledger):
        return (Ledger, tuple(map(id, value.releases)))
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_state_key(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((_state_key(k), _state_key(v)) for k, v in value.items()))
    if isinstance(value, (frozenset, set)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return (type(value), frozenset(value))
    return (object, id(value))


def _fields(obj: object) -> dict[str, Any]:
    """An object's attributes (``__dict__`` and ``__slots__``)."""
    fields = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                fields[name] = getattr(obj, name)
    return fields


def accountant_state(accountant: PrivacyAccountant) -> tuple[Any, ...]:
    """Key equal for two accountants whose state is equal apart from the party they belong to."""
    return tuple((name, _state_key(value)) for name, value in sorted(_fields(accountant).items()) if name != "party")


def accountant_for(template: PrivacyAccountant, party: int) -> PrivacyAccountant:
    """A copy of ``template`` belonging to ``party`` (its own lists, dicts and sets; ledgers,
    being immutable, shared)."""
    copy = object.__new__(type(template))
    for name, value in _fields(template).items():
        object.__setattr__(copy, name, type(value)(value) if isinstance(value, (list, dict, set)) else value)
    object.__setattr__(copy, "party", party)
    return copy


def _int_array(values: Any, length: int, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (length,) or array.dtype.kind not in "iu":
        raise MessageError(f"shard report: {what} must be {length} integers, got shape {array.shape} "
                           f"of {array.dtype}")
    return array


@dataclass(frozen=True, eq=False)
class ShardReport:
    """A shard's answer at the end of the run: what the harness keeps of its parties, in columns.

    Parties with the same history (the same ledger, plans, replays; no refusal of their own)
    share one accountant in :attr:`accountants`; :attr:`accountant_of` gives each party's.  A
    report therefore grows by a few integers per party (released values, draws, status,
    counters) however many releases the parties made, and so does the harness that keeps it.
    :class:`PartySummaries` rebuilds each party's :class:`PartySummary` on demand.

    Attributes
    ----------
    parties
        The hosted party ids.
    accountants, accountant_of
        Distinct accountant states (a representative each) and, per party, the index of its own.
    values, values_end
        Every party's released values, concatenated in party order; party ``k``'s end at
        ``values_end[k]`` (and start at ``values_end[k - 1]``, 0 for the first).
    draws
        Uniforms each party drew.
    statuses, status_of
        Distinct statuses and, per party, the index of its own.
    errors
        Party -> the errors it logged (parties without errors omitted).
    received_messages, received_bytes
        Deliveries to each party (counted by the shard).
    delivered, faults
        Deliveries and fault counters of the shard.
    """

    parties: range
    accountants: tuple[PrivacyAccountant, ...]
    accountant_of: np.ndarray
    values: np.ndarray
    values_end: np.ndarray
    draws: np.ndarray
    statuses: tuple[str, ...]
    status_of: np.ndarray
    errors: dict[int, tuple[str, ...]]
    received_messages: np.ndarray
    received_bytes: np.ndarray
    delivered: int
    faults: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.parties)
        of = _int_array(self.accountant_of, n, "accountant_of")
        status = _int_array(self.status_of, n, "status_of")
        end = _int_array(self.values_end, n, "values_end")
        for what in ("draws", "received_messages", "received_bytes"):
            _int_array(getattr(self, what), n, what)
        if n and (of.min() < 0 or of.max() >= len(self.accountants) or status.min() < 0
                  or status.max() >= len(self.statuses) or np.any(np.diff(end) < 0) or end[0] < 0
                  or end[-1] != len(self.values)):
            raise MessageError(f"shard report of parties {self.parties.start}-{self.parties.stop - 1}: "
                               "indices out of range")

    @classmethod
    def of(cls, shard: PartyShard) -> ShardReport:
        """The report of ``shard`` (after its parties have stopped)."""
        parties = shard.parties
        n = len(parties)
        groups: dict[tuple[Any, ...], int] = {}
        accountants: list[PrivacyAccountant] = []
        accountant_of = np.empty(n, dtype=np.int64)
        statuses: dict[str, int] = {}
        status_of = np.empty(n, dtype=np.int64)
        draws = np.empty(n, dtype=np.int64)
        values_end = np.empty(n, dtype=np.int64)
        values: list[int] = []
        errors: dict[int, tuple[str, ...]] = {}
        for k, p in enumerate(parties):
            acc = p.accountant
            key = accountant_state(acc)
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(accountants)
                accountants.append(acc)
            accountant_of[k] = g
            status_of[k] = statuses.setdefault(p.status, len(statuses))
            draws[k] = p.draws
            values.extend(p.released_values)
            values_end[k] = len(values)
            if p.errors:
                errors[p.index] = tuple(p.errors)
        t = shard.network._traffic
        lo, hi = shard.setup.parties.start + 1, shard.setup.parties.stop + 1
        return cls(
            parties=shard.setup.parties,
            accountants=tuple(accountants),
            accountant_of=accountant_of,
            values=np.asarray(values, dtype=np.int64),
            values_end=values_end,
            draws=draws,
            statuses=tuple(statuses),
            status_of=status_of,
            errors=errors,
            received_messages=np.asarray(t.recv_messages[lo:hi], dtype=np.int64),
            received_bytes=np.asarray(t.recv_bytes[lo:hi], dtype=np.int64),
            delivered=t.delivered,
            faults={"rejected": t.faults["rejected"], "lost_to_crash": t.faults["lost_to_crash"]},
        )

    @classmethod
    def lost(cls, parties: range, budgets: Sequence[float], policy: str) -> ShardReport:
        """The report standing in for a shard that was lost: its parties have empty ledgers and
        status ``"lost"``."""
        n = len(parties)
        distinct = tuple(dict.fromkeys(float(b) for b in budgets))
        where = {b: k for k, b in enumerate(distinct)}
        zeros = np.zeros(n, dtype=np.int64)
        return cls(parties, tuple(PrivacyAccountant(b, policy) for b in distinct),
                   np.array([where[float(b)] for b in budgets], dtype=np.int64), np.zeros(0, dtype=np.int64),
                   zeros, zeros, ("lost",), zeros, {}, zeros, zeros, 0, {})

    def summary(self, party: int) -> PartySummary:
        """The :class:`PartySummary` of hosted party ``party``."""
        k = party - self.parties.start
        start = int(self.values_end[k - 1]) if k else 0
        return PartySummary(
            party,
            accountant_for(self.accountants[int(self.accountant_of[k])], party),
            tuple(int(v) for v in self.values[start:int(self.values_end[k])]),
            int(self.draws[k]),
            self.statuses[int(self.status_of[k])],
            self.errors.get(party, ()),
        )


class PartySummaries(Sequence[PartySummary]):
    """The :class:`PartySummary` of every party of a run, rebuilt on demand from the shard reports.

    ``summaries[i]`` is party ``i``'s (a new object at each access).  Whole-run views are read
    straight from the reports, without a summary per party: :meth:`ledgers`,
    :meth:`accountants` (the shared representatives, for :func:`mprr.privacy.summarize`) and
    :meth:`refusals`.

    Raises
    ------
    ConfigurationError
        If the reports do not cover parties ``0..n-1`` exactly once.
    """

    def __init__(self, reports: Sequence[ShardReport], n: int) -> None:
        ordered = sorted(reports, key=lambda r: r.parties.start)
        covered = 0
        for r in ordered:
            if r.parties.start != covered or r.parties.step != 1:
                missing = range(covered, r.parties.start) if r.parties.start > covered else r.parties
                raise ConfigurationError(f"no shard reported parties {list(missing)[:10]} (or two reported them)")
            covered = r.parties.stop
        if covered != n:
            raise ConfigurationError(f"no shard reported parties {list(range(covered, n))[:10]}")
        self._reports = tuple(ordered)
        self._starts = [r.parties.start for r in ordered]
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> PartySummary: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[PartySummary, ...]: ...

    def __getitem__(self, index: int | slice) -> PartySummary | tuple[PartySummary, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        i = operator.index(index)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"party index {index} out of range for {self._n} parties")
        return self._reports[bisect_right(self._starts, i) - 1].summary(i)

    def __iter__(self) -> Iterator[PartySummary]:
        for r in self._reports:
            for i in r.parties:
                yield r.summary(i)

    def ledgers(self) -> tuple[Ledger, ...]:
        """Every party's ledger, by party id (parties with the same history share one object)."""
        return tuple(r.accountants[k].ledger for r in self._reports for k in r.accountant_of.tolist())

    def accountants(self) -> list[PrivacyAccountant]:
        """Per party, the accountant whose state it shares (its ``party`` attribute is the
        representative's): what :func:`mprr.privacy.summarize` needs, without a copy per party."""
        return [r.accountants[k] for r in self._reports for k in r.accountant_of.tolist()]

    def refusals(self) -> tuple[Refusal, ...]:
        """Every refusal of every party, in party order (a party that refused has its own
        accountant in its report)."""
        return tuple(x for r in self._reports for k in r.accountant_of.tolist() for x in r.accountants[k].refusals)


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
        shard.stop(); await task; shard.report()

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
        if len(setup.budgets) != len(setup.parties):
            raise ConfigurationError(f"shard setup: {len(setup.budgets)} budgets for {len(setup.parties)} parties")
        self.setup = setup
        topology = setup.topology
        if topology is None and setup.mesh and router is None:
            import networkx as nx  # only for the engines that need direct party links

            topology = nx.complete_graph(setup.n)
        self.network = ShardNetwork(setup.n, setup.parties, uplink, topology=topology, router=router)
        self._uplink = uplink
        self._accept = frozenset(setup.accept)
        self._last_payload: bytes | None = None
        self._last_message: Message | None = None
        self._replies: list[Frame] = []
        engine = setup.engine
        # the parties' signing keys are born here and never leave (parties.secure.pki)
        self._signers: dict[int, Signer] = generate_signers(setup.parties) if engine is not None and engine.signs else {}
        self._registered = False
        book = ReleaseBook(setup.schema)
        records = rows.tolist()
        streams = StreamTable(setup.seed, setup.parties)
        self.parties: tuple[Party, ...] = tuple(
            Party(i, records[k], setup.schema, seed=streams.stream(i), budget=setup.budgets[k],
                  policy=setup.policy, book=book, engine=engine, min_roster=setup.min_roster,
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

    def crash(self, parties: Sequence[int]) -> None:
        """Crash hosted parties (a crash fault decided in the controller process)."""
        for p in parties:
            if p in self.setup.parties:
                self.network.crash(p)
                self.parties[p - self.setup.parties.start].status = "crashed"

    def report(self) -> ShardReport:
        """Party summaries and delivery counters (call after :meth:`serve` has returned)."""
        return ShardReport.of(self)


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
