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
  (:meth:`~parties.router.Router.ingress`,
  :meth:`~parties.router.Router.ingress_columns`).

Secure sums: ``start()`` returns the verification keys of the shard's parties (their signing
keys are generated inside the actor and stay there); the driver assembles the run's key
directory and installs it with ``register(keys)`` in every shard before the protocol.
Party-to-party frames travel shard → driver (router: topology, counts, faults) → shard.

The controller runs in the driver on the :class:`~parties.router.Router`, so counting,
rounds and seeded faults are those of the in-memory network.  A shard actor that dies makes its
pull fail: the router loses the shard (all its parties crash) and the controller's gather ends
at the round timeout with ``PartyDropped`` or a degraded result — never a hang.

``RayRuntime(address=None)`` starts a local Ray (and shuts it down after the run);
``address="auto"`` or ``"HOST:PORT"`` connects to a running cluster (left running).  By
default every run creates its shard actors and kills them when it ends.  A :class:`RayPool`
owns shard actors that serve run after run (``with RayPool(shards=3) as pool: simulate(...,
runtime=pool.runtime())``): each run hands them fresh setups through :meth:`ShardActor.start`,
and closing the pool kills them.  Ray is an optional dependency
(``pip install mprr[ray]``); without it :class:`~mprr.errors.RuntimeFailure` says so.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, RuntimeFailure
from parties.runtime import Hosting, HostingPlan, Runtime, task_group
from parties.shard import PartyShard, ShardSetup, split
from parties.shard_setup import directory
from parties.shard_report import ShardReport
from parties.transport import Frame
from parties.channel import COLUMNS, RecordBatcher, column_frames, columns_record, frame_record, read_record
from parties.columns import ReplyColumns

__all__ = ["RayPool", "RayRuntime", "ShardActor", "import_ray"]


def import_ray() -> Any:
    """The ``ray`` module (RuntimeFailure with the install hint when it is missing)."""
    try:
        import ray
    except ImportError:
        raise RuntimeFailure("runtime 'ray' needs Ray: pip install 'mprr[ray]'") from None
    return ray


class ShardActor:
    """A party shard host as a Ray async actor (wrapped with ``ray.remote`` when used).

    It serves one run at a time and run after run: :meth:`start` builds a fresh
    :class:`~parties.shard.PartyShard` from the run's :class:`~parties.shard.ShardSetup`
    (fresh parties, streams, keys, counters) and ends whatever the previous run left; every
    other call names its run, and a call of an earlier run is ignored (``push``) or answered
    empty (``pull``), so nothing of one run reaches the next.
    """

    def __init__(self) -> None:
        self._run = -1
        self._out: list[bytes] = []
        self._shard: PartyShard | None = None
        self._serving: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    async def start(self, run: int, setup: ShardSetup) -> bytes:
        """Build run ``run``'s parties from ``setup`` and start serving them; returns their
        verification keys (:meth:`PartyShard.public_keys <parties.shard.PartyShard.public_keys>`:
        generated here, the private keys stay in this actor)."""
        previous, serving, wake = self._shard, self._serving, self._wake
        self._run, self._out, self._wake = run, [], asyncio.Event()
        wake.set()  # a pull of the previous run returns []
        if previous is not None and serving is not None and not serving.done():  # that run did not finish
            previous.stop()
            serving.cancel()
            with suppress(BaseException):
                await serving
        self._shard = PartyShard(setup, functools.partial(self._uplink, run),
                                 columns=functools.partial(self._uplink_columns, run))
        self._serving = asyncio.get_running_loop().create_task(self._shard.serve())  # owner: this actor
        return self._shard.public_keys()

    async def register(self, run: int, keys: bytes) -> None:
        """Install the run's key directory in the hosted parties (before the protocol)."""
        assert self._shard is not None and run == self._run
        self._shard.register(keys)

    def _uplink(self, run: int, frame: Frame) -> None:
        if run != self._run:  # a frame of an earlier run's parties
            return
        self._out.append(frame_record(frame))
        self._wake.set()

    def _uplink_columns(self, run: int, block: ReplyColumns) -> None:
        if run != self._run:
            return
        record = columns_record(block)
        if record is None:  # (a few members: one frame each)
            for frame in column_frames(block):
                self._uplink(run, frame)
            return
        self._out.append(record)
        self._wake.set()

    async def push(self, run: int, records: list[bytes]) -> None:
        """Frames (and crash notices) from the driver."""
        if self._shard is not None and run == self._run:
            for record in records:
                self._shard.take(record)  # it returns other control records: the driver sends none

    async def pull(self, run: int) -> list[bytes]:
        """Every frame sent since the last pull (waits for at least one); ``[]`` once ``run``
        is not the current run."""
        while run == self._run and not self._out:
            wake = self._wake
            wake.clear()
            await wake.wait()
        if run != self._run:
            return []
        out, self._out = self._out, []
        return out

    def peak_rss(self) -> int:
        """Peak resident memory of this actor's process in bytes (Linux ``ru_maxrss``)."""
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    async def finish(self, run: int) -> ShardReport:
        """Stop the parties; their summaries and the delivery counters."""
        assert self._shard is not None and self._serving is not None and run == self._run
        self._shard.stop()
        await self._serving
        return ShardReport.of(self._shard)


class _RayLink(RecordBatcher):
    """The driver's link to one shard actor in run ``run``: frames and crash notices out,
    batched per turn, a broadcast as one ``MULTI`` record (:mod:`parties.channel`)."""

    multicast = True

    def __init__(self, parties: range, actor: Any, run: int) -> None:
        super().__init__()
        self.parties, self.actor, self.run = parties, actor, run
        self.pushes = self.pulls = 0

    def _write(self, records: list[bytes]) -> None:
        self.pushes += 1
        self.actor.push.remote(self.run, records)


class RayHosting(Hosting):
    """The driver's view of the shard actors of one run."""

    def __init__(self, plan: HostingPlan, links: list[_RayLink], replaced: list[str]) -> None:
        super().__init__(plan)
        self.links = links
        for link in links:
            self.router.attach(link)
        self.shard_peak_rss: list[int] = []
        self.replaced = replaced

    async def _ingress(self, link: _RayLink, batch: list[bytes]) -> None:
        """Hand one pulled batch of records to the router."""
        link.pulls += 1
        for record in batch:
            if record[0] == COLUMNS:
                self.columns_in(link, record)
                continue
            frame, _ = read_record(record)
            link.count_in(record, len(frame.payload))
            self.router.ingress(link, frame)

    async def pull_loop(self, link: _RayLink) -> None:
        """Feed the frames of one shard to the router until cancelled or the actor dies."""
        try:
            while True:  # no batch kept while the next pull waits
                await self._ingress(link, await link.actor.pull.remote(link.run))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the actor died (RayActorError) or sent garbage: its parties are lost
            self.problems.append(f"shard {link.parties.start}-{link.parties.stop - 1}: {type(exc).__name__}")
            self.router.lose(link, str(exc))

    async def finish(self) -> list[ShardReport]:
        lost = set(self.router.lost)

        async def one(k: int, link: _RayLink) -> ShardReport | None:
            if k in lost:
                return None
            try:
                async with asyncio.timeout(self.plan.timeout):
                    report = await link.actor.finish.remote(link.run)
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
            "lost_shards": len(self.router.lost),
            "replaced_actors": list(self.replaced),
            "shard_peak_rss_bytes": list(self.shard_peak_rss),
            "problems": list(self.problems),
        }


_RUNS = itertools.count()
"""Run numbers of this driver process: a shard actor tells one run's calls from the next's."""


def _init_ray(ray: Any, address: str | None) -> bool:
    """Start (or connect to) Ray unless it runs in this process; whether it was started here."""
    if ray.is_initialized():
        return False
    ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             configure_logging=False)
    return True


def _cluster_shards(ray: Any, num_cpus: float) -> int:
    """One shard actor per ``num_cpus`` of the cluster's CPUs, at least one."""
    return max(1, int(ray.cluster_resources().get("CPU", 1) // num_cpus))


class RayPool:
    """Shard actors that serve run after run: the owner of their lifetimes.

    The pool creates its actors once; each run (:meth:`runtime`, then
    :func:`~parties.simulate.simulate`) uses the first ``shards`` of them and hands each a fresh
    :class:`~parties.shard.ShardSetup` through :meth:`ShardActor.start`, so a run costs its
    protocol and not the start of Python processes, and no state of one run reaches the next.
    :meth:`close` (or leaving the ``with`` block) kills every actor, and shuts down the local Ray
    if the pool started it.  An actor found dead when a run starts is replaced by a fresh one
    (named in the run's ``wire["replaced_actors"]``); if the fresh one fails too, the run fails
    with :class:`~mprr.errors.RuntimeFailure` naming the shard.

    Parameters
    ----------
    shards
        Number of shard actors (default: the cluster's CPUs divided by ``num_cpus``, at least 1).
    address, num_cpus, start_timeout
        As :class:`RayRuntime`.
    actor
        The actor class: :class:`ShardActor` or a subclass (e.g. one that instruments it).

    Examples
    --------
    >>> with RayPool(shards=2, num_cpus=0.5) as pool:  # doctest: +SKIP
    ...     one = simulate(data, "RR-Independent", seed=1, p=0.6, runtime=pool.runtime())
    ...     two = simulate(data, "RR-Clusters", seed=2, p=0.7, runtime=pool.runtime(shards=1))
    """

    def __init__(self, shards: int | None = None, *, address: str | None = None, num_cpus: float = 1.0,
                 start_timeout: float = 120.0, actor: type[ShardActor] = ShardActor) -> None:
        if shards is not None:
            check_int("shards", shards, 1)
        check_real("num_cpus", num_cpus, strict=True)
        self.address, self.num_cpus, self.start_timeout = address, num_cpus, start_timeout
        self._ray = import_ray()
        self._owns_ray = _init_ray(self._ray, address)
        self._actors: list[Any] = []
        self._closed = self._busy = False
        self._replaced: list[str] = []
        try:
            self.size = shards or _cluster_shards(self._ray, num_cpus)
            self._remote = self._ray.remote(num_cpus=num_cpus, max_restarts=0)(actor)
            self._actors = [self._remote.remote() for _ in range(self.size)]
        except BaseException:
            self.close()
            raise

    @property
    def actors(self) -> list[Any]:
        """The pool's actor handles, shard by shard (a copy)."""
        return list(self._actors)

    def runtime(self, shards: int | None = None) -> RayRuntime:
        """A runtime whose runs use the first ``shards`` actors of this pool (default: all)."""
        if shards is not None and not 1 <= shards <= self.size:
            raise ConfigurationError(f"shards must be an integer >= 1 and <= the pool's {self.size} actors, "
                                     f"got {shards}")
        return RayRuntime(address=self.address, shards=shards, num_cpus=self.num_cpus,
                          start_timeout=self.start_timeout, pool=self)

    def close(self, timeout: float = 10.0) -> None:
        """Kill every actor of the pool and return once they are gone (and shut down the local
        Ray, if the pool started it); :class:`~mprr.errors.RuntimeFailure` names the shards whose
        actors still answer after ``timeout`` seconds."""
        if self._closed:
            return
        self._closed = True
        try:
            for a in self._actors:
                with suppress(Exception):
                    self._ray.kill(a)
            alive = [k for k, a in enumerate(self._actors) if not self._gone(a, time.monotonic() + timeout)]
            if alive:
                raise RuntimeFailure(f"ray runtime: the actors of shards {alive} still answer {timeout} s "
                                     "after the pool killed them")
        finally:
            if self._owns_ray:
                self._ray.shutdown()

    def _gone(self, actor: Any, deadline: float) -> bool:
        """Whether ``actor`` is dead by ``deadline`` (``ray.kill`` is asynchronous: a call sent
        just after it may still be answered)."""
        ray = self._ray
        while True:
            try:
                ray.get(actor.peak_rss.remote(), timeout=max(0.0, deadline - time.monotonic()))
            except ray.exceptions.RayActorError:
                return True
            except ray.exceptions.GetTimeoutError:
                return False
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _start(self, k: int, run: int, setup: ShardSetup) -> bytes:
        """Start run ``run`` in actor ``k``, replacing it once if it is dead."""
        ray = self._ray
        shard = f"shard {k} (parties {setup.parties.start}-{setup.parties.stop - 1})"
        which = "its actor"
        try:
            keys: bytes = await self._actors[k].start.remote(run, setup)
            return keys
        except ray.exceptions.RayActorError as exc:
            with suppress(Exception):
                ray.kill(self._actors[k])
            self._actors[k] = self._remote.remote()
            self._replaced.append(f"{shard}: its actor died since the last run ({type(exc).__name__}), replaced")
            which = "its replacement actor"
        except ray.exceptions.RayError as exc:
            raise RuntimeFailure(f"ray runtime: {shard}: {which} failed to start: {exc}") from None
        try:
            keys = await self._actors[k].start.remote(run, setup)
            return keys
        except ray.exceptions.RayError as exc:
            raise RuntimeFailure(f"ray runtime: {shard}: {which} failed to start: {exc}") from None

    @asynccontextmanager
    async def serve(self, plan: HostingPlan, shards: int | None = None) -> AsyncIterator[Hosting]:
        """Host one run on the first ``shards`` actors (default: all; at most one per party)."""
        if self._closed:
            raise RuntimeFailure("ray runtime: the pool is closed; open a new RayPool")
        if self._busy:
            raise RuntimeFailure("ray runtime: the pool is serving another run; a pool serves one run at a time")
        if shards is not None and shards > self.size:
            raise ConfigurationError(f"shards must be an integer >= 1 and <= the pool's {self.size} actors, "
                                     f"got {shards}")
        ranges = split(plan.n, min(shards or self.size, plan.n))
        run, self._replaced = next(_RUNS), []
        self._busy = True
        try:
            actors = self._actors[:len(ranges)]
            try:
                async with asyncio.timeout(self.start_timeout):
                    keys = await asyncio.gather(*(self._start(k, run, plan.setup(r)) for k, r in enumerate(ranges)))
                    actors = self._actors[:len(ranges)]  # (replacements included)
                    if plan.signs:  # the driver is the run's PKI: every shard gets the directory
                        table = directory(list(zip(ranges, keys)), plan.n)
                        await asyncio.gather(*(a.register.remote(run, table) for a in actors))
            except TimeoutError:
                raise RuntimeFailure(f"ray runtime: {len(actors)} shard actors not ready after "
                                     f"{self.start_timeout} s") from None
            except self._ray.exceptions.RayError as exc:
                raise RuntimeFailure(f"ray runtime: a shard actor failed to start: {exc}") from None
            hosting = RayHosting(plan, [_RayLink(r, a, run) for r, a in zip(ranges, actors)], self._replaced)
            async with task_group() as tg:
                pulls = [tg.create_task(hosting.pull_loop(link)) for link in hosting.links]
                try:
                    yield hosting
                finally:
                    for t in pulls:
                        t.cancel()
        finally:
            self._busy = False


@dataclass(frozen=True)
class RayRuntime(Runtime):
    """Party shards as Ray async actors (module docstring).

    Parameters
    ----------
    address
        ``None``: start a local Ray for the run; ``"auto"`` or ``"HOST:PORT"``: connect to a
        running cluster.
    shards
        Number of shard actors (default: the cluster's CPUs, at least 1; on a pool, all its actors).
    num_cpus
        CPUs reserved by each shard actor (default 1; fractions allowed).
    start_timeout
        Seconds to wait for every shard to be ready.
    pool
        ``None`` (the default): each run starts its own shard actors and kills them at its end;
        a :class:`RayPool` (made by :meth:`RayPool.runtime`): runs use its actors, which serve
        run after run until the pool closes.
    """

    address: str | None = None
    shards: int | None = None
    num_cpus: float = 1.0
    start_timeout: float = 120.0
    pool: RayPool | None = field(default=None, compare=False, repr=False)
    name: str = field(default="ray", init=False)

    def __post_init__(self) -> None:
        if self.shards is not None:
            check_int("shards", self.shards, 1)
        check_real("num_cpus", self.num_cpus, strict=True)

    def options(self) -> dict[str, Any]:
        return {"runtime": "ray", "address": self.address or "local", "shards": self.shards}

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        if self.pool is not None:
            async with self.pool.serve(plan, self.shards) as hosting:
                yield hosting
            return
        ray = import_ray()
        started_here = _init_ray(ray, self.address)
        try:
            shards = min(self.shards or _cluster_shards(ray, self.num_cpus), plan.n)
            with RayPool(shards, address=self.address, num_cpus=self.num_cpus,
                         start_timeout=self.start_timeout) as pool:  # this run's actors: killed at its end
                async with pool.serve(plan) as hosting:
                    yield hosting
        finally:
            if started_here:
                ray.shutdown()
