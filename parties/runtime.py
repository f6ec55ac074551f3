"""Runtimes: where the party actors of a run live, and how their frames travel.

``memory`` (:class:`MemoryRuntime`, the default)
    Party shard hosts (one by default) in this process and on this event loop, each behind a
    :class:`LocalLink`: a direct call each way (a frame is still the one codec's bytes, counted
    as everywhere).
``tcp`` (:class:`parties.tcp.TcpRuntime`)
    Party shard hosts in worker processes — spawned and supervised, or started by hand with
    ``mprr party --connect`` on any machine — joined to the controller process by
    length-prefixed frames over mutual TLS.
``ray`` (:class:`parties.ray_runtime.RayRuntime`)
    Party shard hosts as Ray async actors on a local or remote Ray cluster; the controller in
    the driver.

Every runtime implements :meth:`Runtime.host`: given a :class:`HostingPlan` it starts the
shard hosts (:mod:`parties.shard`), attaches one :class:`~parties.link.Link` per shard
to a :class:`~parties.router.Router`, and — when the plan's secure-sum engine signs —
collects every shard's verification keys and installs the run's key directory in every shard
(the runner is the run's PKI, never the controller actor; the private keys stay in the
shards).  Then it yields a :class:`Hosting`; the simulation runs the controller on
``hosting.router`` (the run's router), then calls :meth:`Hosting.parties` for the parties'
summaries.  Leaving the context stops every shard host the runtime started (no orphan process or actor, after success, error or Ctrl-C).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from mprr.data import Schema
from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, MessageError
from mprr.privacy import DEFAULT_MIN_ROSTER, CompositionPolicy
from mprr.streams import StreamTable
from parties.channel import read_columns
from parties.faults import FaultPlan
from parties.link import Link
from parties.router import Router
from parties.shard import PartyShard, ShardSetup, split
from parties.shard_setup import directory
from parties.shard_report import PartySummaries, PartySummary, ShardReport
from parties.transport import Frame
from parties.traffic import LatencyModel
from parties.wire.codec import Message

if TYPE_CHECKING:  # annotations only: a worker imports the engines and networkx only when a run needs them
    import networkx as nx

    from parties.party import Party
    from parties.columns import Columns
    from parties.secure.engine import SecureSumEngine

__all__ = [
    "Hosting",
    "HostingPlan",
    "LocalLink",
    "MemoryRuntime",
    "Runtime",
    "task_group",
    "unwrap",
]

@dataclass(frozen=True, eq=False, kw_only=True)
class HostingPlan:
    """Everything a runtime needs to host the parties of one run (the trusted runner's plan):
    the setup of every party (parties ``range(n)``; attributes as
    :class:`~parties.shard.ShardSetup`, except ``seed``) and the options of the controller
    process's network.  Keyword-only, validated when built.

    Attributes
    ----------
    n
        Number of parties (>= 1).
    schema, records
        The attributes and the ``(n, m)`` true codes, row ``i`` = party ``i``.
    budgets
        One ε budget per party.
    policy
        Composition policy of every party's accountant (:class:`mprr.privacy.CompositionPolicy` value).
    accept
        Message kinds a party endpoint accepts.
    engine, min_roster, mesh, topology
        As :class:`~parties.shard.ShardSetup`: the secure-sum engine (``None``: the run's plan
        has no secure sum), the fewest parties of a roster, whether the parties need a full
        mesh (the plan's :class:`~mprr.protocols.plan.Needs`), a user-given graph.
    seed
        Run seed.  It stays with the runner: :meth:`setup` hands each shard the stream keys of
        its own parties only (:attr:`ShardSetup.streams <parties.shard.ShardSetup.streams>`).
    faults, latency, fault_seed
        The network's :class:`~parties.faults.FaultPlan`, latency model and fault seed.
    timeout
        Seconds a round waits for the parties (and a runtime for the shards' reports).
    """

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
    faults: FaultPlan | None = None
    latency: LatencyModel | None = None
    fault_seed: int = 0
    timeout: float = 30.0

    def __post_init__(self) -> None:
        n = check_int("n", self.n, 1)
        if not isinstance(self.schema, Schema):
            raise ConfigurationError(f"schema must be a mprr.data.Schema, got {type(self.schema).__name__}")
        records = np.asarray(self.records)
        if records.shape != (n, self.schema.m):
            raise ConfigurationError(f"records must have shape (n, m) = {(n, self.schema.m)}, got {records.shape}")
        check_int("seed", self.seed, 0)
        check_int("fault_seed", self.fault_seed, 0)
        check_int("min_roster", self.min_roster, 1)
        budgets = tuple(float(b) for b in self.budgets)
        if len(budgets) != n:
            raise ConfigurationError(f"budgets must hold one budget per party ({n}), got {len(budgets)}")
        policies = [p.value for p in CompositionPolicy]
        if self.policy not in policies:
            raise ConfigurationError(f"policy must be one of {policies}, got {self.policy!r}")
        check_real("timeout", self.timeout, strict=True)
        object.__setattr__(self, "budgets", budgets)
        object.__setattr__(self, "accept", tuple(int(k) for k in self.accept))

    @property
    def parties(self) -> range:
        """Every party of the run, ``range(n)``."""
        return range(self.n)

    def setup(self, parties: range) -> ShardSetup:
        """The setup of a shard hosting ``parties``: their records, budgets and stream keys."""
        shared = {f.name: getattr(self, f.name) for f in fields(ShardSetup) if f.name != "streams"}
        return ShardSetup(**{**shared, "parties": parties, "budgets": self.budgets[parties.start:parties.stop],
                             "records": np.ascontiguousarray(self.records[parties.start:parties.stop]),
                             "streams": StreamTable(self.seed, parties)})

    def graph(self) -> nx.Graph[int] | None:
        """The run's graph of party links (:meth:`ShardSetup.graph <parties.shard.ShardSetup.graph>`)."""
        return ShardSetup.graph(self)  # type: ignore[arg-type]  # (the same fields)

    @property
    def signs(self) -> bool:
        """Whether the parties need PKI signing keys (the engine signs)."""
        return self.engine is not None and self.engine.signs

    def router(self) -> Router:
        """The controller process's router for this run (on :meth:`graph`)."""
        return Router(self.n, faults=self.faults, latency=self.latency, seed=self.fault_seed,
                               topology=self.graph())


class Hosting(ABC):
    """Shard hosts of a run, seen from the controller process (through the plan's router)."""

    def __init__(self, plan: HostingPlan) -> None:
        self.plan = plan
        self.router = plan.router()
        self.problems: list[str] = []  # what went wrong with a shard (a bad record, a lost worker...)

    @abstractmethod
    async def finish(self) -> list[ShardReport]:
        """Stop the parties and collect one report per shard (a lost shard: placeholders)."""

    async def parties(self) -> Sequence[Party] | Sequence[PartySummary]:
        """Stop the parties; what the harness keeps of each (by default rebuilt from the shard
        reports of :meth:`finish`, their delivery counters added to the router's)."""
        return PartySummaries(await self.finish(), self.plan.n)

    @abstractmethod
    def wire(self) -> dict[str, Any]:
        """Measured channel figures (framing, TLS, socket bytes...) as a JSON-friendly dict."""

    def byte_counts(self, links: Sequence[Any], sent: tuple[str, ...], received: tuple[str, ...]) -> dict[str, Any]:
        """:meth:`wire`'s byte counts summed over the links' ``sent`` / ``received`` counters
        (:class:`~parties.channel.RecordBatcher`): payload both ways (a party-to-party frame crosses
        twice, ``party_to_party_bytes`` of it), framing, control, broadcast copies saved and the
        payload bytes reply columns saved (:mod:`parties.channel`: bytes on the wire = payload +
        framing + control - multicast_saved - columns_saved)."""
        s = {k: sum(link.sent[k] for link in links) for k in sent}
        r = {k: sum(link.received[k] for link in links) for k in received}
        return {"payload_bytes": s["payload"] + r["payload"], "party_to_party_bytes": self.router.party_to_party[1],
                "framing_bytes": s["framing"] + r["framing"], "control_bytes": s["control"] + r.get("control", 0),
                **({"multicast_saved_bytes": s["multicast_saved"]} if "multicast_saved" in s else {}),
                "columns_saved_bytes": s.get("columns_saved", 0) + r.get("columns_saved", 0),
                "sent": s, "received": r}

    def columns_in(self, link: Any, record: bytes) -> None:
        """A ``COLUMNS`` record from the shard behind ``link`` (:mod:`parties.channel`): its reply
        columns go to the router (:meth:`Router.ingress_columns
        <parties.router.Router.ingress_columns>`, which checks that the link hosts
        every sender), counted by the link (``count_columns_in``).  A malformed record is the sending shard's
        fault: dropped, counted ``rejected`` and noted in :attr:`problems`, never the run's end."""
        try:
            block = read_columns(record)
        except MessageError as exc:
            self.router.counter.record_fault("rejected")
            self.problems.append(f"shard {link.parties.start}-{link.parties.stop - 1}: reply columns rejected: {exc}")
            return
        link.count_columns_in(record, int(block.sizes.sum()))
        self.router.ingress_columns(link, block)

    def collected(self, ranges: Sequence[range], reports: dict[int, ShardReport]) -> list[ShardReport]:
        """The reports of the shards hosting ``ranges`` (``reports``: by index), their delivery
        counters added to the network's; a placeholder (:meth:`ShardReport.lost
        <parties.shard_report.ShardReport.lost>`) for each shard that did not report."""
        self.router.merge(list(reports.values()))
        plan = self.plan
        return [reports[k] if k in reports else ShardReport.lost(r, plan.budgets[r.start:r.stop], plan.policy)
                for k, r in enumerate(ranges)]


class Runtime(ABC):
    """A way of hosting the parties of a run (module docstring)."""

    name: str

    @abstractmethod
    def host(self, plan: HostingPlan) -> AbstractAsyncContextManager[Hosting]:
        """Start the shard hosts of ``plan``; stop them on exit."""

    @abstractmethod
    def options(self) -> dict[str, Any]:
        """The runtime's options (for reports)."""


class LocalLink(Link):
    """The router's link to a party host in its own process and on its own event loop (the
    ``memory`` runtime): a direct call each way, a cohort's replies as reply columns and the
    secure-sum programs' messages of one turn as message columns (:mod:`parties.columns`) up,
    the controller's messages to several parties as they are down (:meth:`push_each`).

    ``shared``: the host shares the router's topology and counters (a single host), so its
    frames need no check at ingress.
    """

    def __init__(self, router: Router, setup: ShardSetup, shared: bool) -> None:
        self.router, self.parties, self.checked = router, setup.parties, shared
        self.shard = PartyShard(setup, self.uplink, router=router if shared else None, columns=self.uplink_columns,
                                sum_columns=self.uplink_columns)

    def push(self, frame: Frame, position: int | None) -> None:
        self.shard.deliver(frame, position)

    def push_many(self, frame: Frame, dsts: np.ndarray) -> None:
        self.shard.deliver_many(frame, dsts)

    carries_messages = True

    def push_each(self, src: int, phase: str, kind: int, dsts: Sequence[int], messages: Sequence[Message],
                  sizes: Sequence[int]) -> None:
        self.shard.deliver_each(src, phase, kind, dsts, messages, sizes)

    def crash(self, parties: Sequence[int]) -> None:
        self.shard.crash(parties)

    def buffered(self, party: int) -> int:
        return self.shard.buffered(party)

    def uplink(self, frame: Frame) -> None:
        """A frame a hosted party sent: into the router (:meth:`Router.ingress
        <parties.router.Router.ingress>`)."""
        self.router.ingress(self, frame, checked=self.checked)

    def uplink_columns(self, block: Columns) -> None:
        """Reply or message columns of hosted parties: into the router (:meth:`Router.ingress_columns
        <parties.router.Router.ingress_columns>`)."""
        self.router.ingress_columns(self, block, checked=self.checked)


class MemoryHosting(Hosting):
    """The memory runtime's hosting: party shards (:class:`~parties.shard.PartyShard`) on the
    caller's event loop, joined to the network by direct calls.

    One shard (the default) shares the network's topology and counters, so its frames need no
    check at ingress.  Several are joined as the remote runtimes' shards are: every frame checked
    at ingress, the run's key directory assembled from every shard's keys, the shards' delivery
    counters merged at the end.
    """

    def __init__(self, plan: HostingPlan, shards: int = 1) -> None:
        super().__init__(plan)
        self.links = [LocalLink(self.router, plan.setup(r), shards == 1) for r in split(plan.n, shards)]
        for link in self.links:
            self.router.attach(link)
        if plan.signs:  # the runner is the run's PKI: the shards' public keys make the directory
            keys = directory([(link.parties, link.shard.public_keys()) for link in self.links], plan.n)
            for link in self.links:
                link.shard.register(keys)
        self.serving: list[asyncio.Task[None]] = []

    async def finish(self) -> list[ShardReport]:
        await self._stop()
        reports = [ShardReport.of(link.shard) for link in self.links]
        return reports if len(reports) == 1 else self.collected([r.parties for r in reports], dict(enumerate(reports)))

    async def parties(self) -> Sequence[Party]:
        """The party actors themselves (harness access: they hold the private records)."""
        if len(self.links) > 1:
            await self.finish()  # the shards' delivery counters, added to the network's
        await self._stop()
        return self.links[0].shard.parties if len(self.links) == 1 else tuple(p for link in self.links for p in link.shard.parties)

    async def _stop(self) -> None:
        for link in self.links:
            link.shard.stop()
        for task in self.serving:
            await task

    def wire(self) -> dict[str, Any]:
        return {} if len(self.links) == 1 else {"runtime": "memory", "shards": len(self.links),
                                                "party_to_party_bytes": self.router.party_to_party[1]}


@dataclass(frozen=True)
class MemoryRuntime(Runtime):
    """Every party in this process, on the controller's event loop (module docstring).

    Parameters
    ----------
    shards
        Party shard hosts (:class:`MemoryHosting`): 1 (the default), or several, joined as the
        remote runtimes' shards are, on one event loop (a virtual clock runs them).
    """

    shards: int = 1
    name: str = field(default="memory", init=False)

    def __post_init__(self) -> None:
        check_int("shards", self.shards, 1)

    def options(self) -> dict[str, Any]:
        return {"runtime": "memory", "shards": self.shards}

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        hosting = MemoryHosting(plan, self.shards)
        async with task_group() as tg:
            hosting.serving = [tg.create_task(link.shard.serve()) for link in hosting.links]
            await asyncio.sleep(0)  # serving (secure-sum sessions need its task group) before any frame
            try:
                yield hosting
            finally:
                for link in hosting.links:
                    link.shard.stop()


def unwrap(group: BaseExceptionGroup) -> BaseException:
    """The error a task group failed with: its first leaf (a runtime's errors are single)."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


@asynccontextmanager
async def task_group() -> AsyncIterator[asyncio.TaskGroup]:
    """``asyncio.TaskGroup`` that re-raises its (single) error itself, not an ExceptionGroup."""
    try:
        async with asyncio.TaskGroup() as tg:
            yield tg
    except BaseExceptionGroup as group:
        raise unwrap(group) from None
