"""The ``ray`` runtime: party shard hosts as Ray async actors, the controller in the driver.

Each shard is one Ray async actor (:class:`ShardActor`) running a
:class:`~parties.shard.PartyShard` on the actor's event loop.  The frame channel is made of
actor calls carrying the same records as the ``tcp`` runtime (:mod:`parties.channel`):

- driver → shard: ``push(records)`` — the frames for its parties (and crash notices), batched
  per event-loop turn of the driver;
- shard → driver: a long poll, ``pull()``, returns every frame the shard's parties sent since
  the last call (waits until there is one), a cohort's replies to a release request as one
  ``COLUMNS`` record (reply columns, :mod:`parties.columns`); one pull loop per shard, owned by
  the runtime's task group, feeds them to the router
  (:meth:`~parties.network.InMemoryNetwork.ingress`,
  :meth:`~parties.network.InMemoryNetwork.ingress_columns`).

Secure sums: ``start()`` returns the verification keys of the shard's parties (their signing
keys are generated inside the actor and stay there); the driver assembles the run's key
directory and installs it with ``register(keys)`` in every shard before the protocol.
Party-to-party frames travel shard → driver (router: topology, counts, faults) → shard.

The controller runs in the driver on the :class:`~parties.network.InMemoryNetwork`, so counting,
rounds and seeded faults are those of the in-memory network.  A shard actor that dies makes its
pull fail: the router loses the shard (all its parties crash) and the controller's gather ends
at the round timeout with ``PartyDropped`` or a degraded result — never a hang.

``RayRuntime(address=None)`` starts a local Ray (and shuts it down after the run);
``address="auto"`` or ``"HOST:PORT"`` connects to a running cluster (left running).  Every
actor the runtime creates is killed when the run ends.  Ray is an optional dependency
(``pip install mprr[ray]``); without it :class:`~mprr.errors.RuntimeFailure` says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from mprr.domain import check_int, check_real
from mprr.errors import RuntimeFailure
from parties.runtime import Hosting, HostingPlan, Runtime, task_group
from parties.shard import PartyShard, ShardSetup, directory, split
from parties.shard_report import ShardReport
from parties.transport import Frame
from parties.channel import COLUMNS, RecordBatcher, column_frames, columns_record, frame_record, read_record
from parties.columns import ReplyColumns

__all__ = ["RayRuntime", "ShardActor", "import_ray"]


def import_ray() -> Any:
    """The ``ray`` module (RuntimeFailure with the install hint when it is missing)."""
    try:
        import ray
    except ImportError:
        raise RuntimeFailure("runtime 'ray' needs Ray: pip install 'mprr[ray]'") from None
    return ray


class ShardActor:
    """A party shard host as a Ray async actor (wrapped with ``ray.remote`` when used)."""

    def __init__(self, setup: ShardSetup) -> None:
        self._setup = setup
        self._out: list[bytes] = []
        self._shard: PartyShard | None = None
        self._serving: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    async def start(self) -> bytes:
        """Build the parties and start serving them; returns their verification keys
        (:meth:`PartyShard.public_keys <parties.shard.PartyShard.public_keys>`: generated here,
        the private keys stay in this actor)."""
        self._wake = asyncio.Event()
        self._shard = PartyShard(self._setup, self._uplink, columns=self._uplink_columns)
        self._serving = asyncio.get_running_loop().create_task(self._shard.serve())  # owner: this actor
        return self._shard.public_keys()

    async def register(self, keys: bytes) -> None:
        """Install the run's key directory in the hosted parties (before the protocol)."""
        assert self._shard is not None
        self._shard.register(keys)

    def _uplink(self, frame: Frame) -> None:
        self._out.append(frame_record(frame))
        if self._wake is not None:
            self._wake.set()

    def _uplink_columns(self, block: ReplyColumns) -> None:
        record = columns_record(block)
        if record is None:  # (a few members: one frame each)
            for frame in column_frames(block):
                self._uplink(frame)
            return
        self._out.append(record)
        if self._wake is not None:
            self._wake.set()

    async def push(self, records: list[bytes]) -> None:
        """Frames (and crash notices) from the driver."""
        if self._shard is not None:
            for record in records:
                self._shard.take(record)  # it returns other control records: the driver sends none

    async def pull(self) -> list[bytes]:
        """Every frame sent since the last pull (waits for at least one)."""
        assert self._wake is not None
        while not self._out:
            self._wake.clear()
            await self._wake.wait()
        out, self._out = self._out, []
        return out

    def peak_rss(self) -> int:
        """Peak resident memory of this actor's process in bytes (Linux ``ru_maxrss``)."""
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    async def finish(self) -> ShardReport:
        """Stop the parties; their summaries and the delivery counters."""
        assert self._shard is not None and self._serving is not None
        self._shard.stop()
        await self._serving
        return ShardReport.of(self._shard)


class _RayLink(RecordBatcher):
    """The driver's link to one shard actor: frames and crash notices out, batched per turn,
    a broadcast as one ``MULTI`` record (:mod:`parties.channel`)."""

    multicast = True

    def __init__(self, parties: range, actor: Any) -> None:
        super().__init__()
        self.parties, self.actor = parties, actor
        self.received = {"payload": 0, "framing": 0, "columns_saved": 0}
        self.pushes = self.pulls = 0

    def _write(self, records: list[bytes]) -> None:
        self.pushes += 1
        self.actor.push.remote(records)


class RayHosting(Hosting):
    """The driver's view of the shard actors of one run."""

    def __init__(self, plan: HostingPlan, links: list[_RayLink]) -> None:
        super().__init__(plan)
        self.links = links
        for link in links:
            self.network.attach(link)
        self.shard_peak_rss: list[int] = []

    async def _ingress(self, link: _RayLink, batch: list[bytes]) -> None:
        """Hand one pulled batch of records to the router."""
        link.pulls += 1
        for record in batch:
            if record[0] == COLUMNS:
                self.columns_in(link, record)
                continue
            frame, _ = read_record(record)
            link.received["payload"] += len(frame.payload)
            link.received["framing"] += len(record) - len(frame.payload)
            self.network.ingress(link, frame)

    async def pull_loop(self, link: _RayLink) -> None:
        """Feed the frames of one shard to the router until cancelled or the actor dies."""
        try:
            while True:
                await self._ingress(link, await link.actor.pull.remote())  # no batch kept while the next pull waits
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the actor died (RayActorError) or sent garbage: its parties are lost
            self.problems.append(f"shard {link.parties.start}-{link.parties.stop - 1}: {type(exc).__name__}")
            self.network.lose(link, str(exc))

    async def finish(self) -> list[ShardReport]:
        lost = set(self.network.lost)

        async def one(k: int, link: _RayLink) -> ShardReport | None:
            if k in lost:
                return None
            try:
                async with asyncio.timeout(self.plan.timeout):
                    report = await link.actor.finish.remote()
                return report if isinstance(report, ShardReport) else None
            except Exception as exc:  # dead actor or timeout: a lost shard
                self.problems.append(f"shard {k} finish: {type(exc).__name__}")
                return None

        got = await asyncio.gather(*(one(k, link) for k, link in enumerate(self.links)))
        rss = []
        for k, link in enumerate(self.links):
            if k not in lost:
                with suppress(Exception):
                    rss.append(int(await link.actor.peak_rss.remote()))
        self.shard_peak_rss = rss
        reports = {k: r for k, r in enumerate(got) if r is not None}
        return self.collected([link.parties for link in self.links], reports)

    def wire(self) -> dict[str, Any]:
        return {
            "runtime": "ray",
            "shards": len(self.links),
            **self.byte_counts(self.links, ("payload", "framing", "control", "multicast_saved"),
                               ("payload", "framing", "columns_saved")),
            "calls": {"push": sum(link.pushes for link in self.links), "pull": sum(link.pulls for link in self.links)},
            "lost_shards": len(self.network.lost),
            "shard_peak_rss_bytes": list(self.shard_peak_rss),
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class RayRuntime(Runtime):
    """Party shards as Ray async actors (module docstring).

    Parameters
    ----------
    address
        ``None``: start a local Ray for the run; ``"auto"`` or ``"HOST:PORT"``: connect to a
        running cluster.
    shards
        Number of shard actors (default: the cluster's CPUs, at least 1).
    num_cpus
        CPUs reserved by each shard actor (default 1; fractions allowed).
    start_timeout
        Seconds to wait for every shard to be ready.
    """

    address: str | None = None
    shards: int | None = None
    num_cpus: float = 1.0
    start_timeout: float = 120.0
    name: str = field(default="ray", init=False)

    def __post_init__(self) -> None:
        if self.shards is not None:
            check_int("shards", self.shards, 1)
        check_real("num_cpus", self.num_cpus, strict=True)

    def options(self) -> dict[str, Any]:
        return {"runtime": "ray", "address": self.address or "local", "shards": self.shards}

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        ray = import_ray()
        started_here = False
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     logging_level="ERROR", configure_logging=False)
            started_here = True
        actors: list[Any] = []
        try:
            shards = self.shards or max(1, int(ray.cluster_resources().get("CPU", 1) // self.num_cpus))
            ranges = split(plan.n, min(shards, plan.n))
            remote = ray.remote(num_cpus=self.num_cpus, max_restarts=0)(ShardActor)
            for r in ranges:
                actors.append(remote.remote(plan.setup(r)))
            try:
                async with asyncio.timeout(self.start_timeout):
                    keys = await asyncio.gather(*(a.start.remote() for a in actors))
                    if plan.signs:  # the driver is the run's PKI: every shard gets the directory
                        table = directory(list(zip(ranges, keys)), plan.n)
                        await asyncio.gather(*(a.register.remote(table) for a in actors))
            except TimeoutError:
                raise RuntimeFailure(f"ray runtime: {len(actors)} shard actors not ready after "
                                     f"{self.start_timeout} s") from None
            except ray.exceptions.RayError as exc:
                raise RuntimeFailure(f"ray runtime: a shard actor failed to start: {exc}") from None
            hosting = RayHosting(plan, [_RayLink(r, a) for r, a in zip(ranges, actors)])
            async with task_group() as tg:
                pulls = [tg.create_task(hosting.pull_loop(link)) for link in hosting.links]
                try:
                    yield hosting
                finally:
                    for t in pulls:
                        t.cancel()
        finally:
            for a in actors:
                with suppress(Exception):
                    ray.kill(a)
            if started_here:
                ray.shutdown()
