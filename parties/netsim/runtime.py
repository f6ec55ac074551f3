"""The ``virtual`` runtime: the real protocol on a virtual clock, timed by a network model.

:class:`VirtualRuntime` hosts the parties exactly as the memory runtime does (party shards on the
controller's event loop, :class:`~parties.runtime.MemoryHosting`), on a
:class:`~parties.netsim.network.TimedNetwork` router: every message is the one codec's real
bytes, counted as everywhere, and is delivered when the :class:`~parties.netsim.model.NetworkModel`
says it arrives.  The event loop must be a :class:`~parties.netsim.clock.VirtualClockLoop`
(:func:`parties.simulate.simulate` picks it from the runtime's ``loop_factory``; under
:func:`~parties.netsim.clock.run_virtual` any ``simulate_async`` call works), so the controller's
round timeouts run in virtual time and a run of a day of network time takes the CPU the
protocol needs, no more.

The model's draws (links, dropouts) come from ``numpy.random.default_rng([model.seed, run seed])``:
the same model and run seed give the same timeline.  After each run the runtime keeps its
:class:`~parties.netsim.timeline.Timeline` (:attr:`VirtualRuntime.timelines`, the last one
:attr:`VirtualRuntime.timeline`) and the run's :meth:`Hosting.wire
<parties.runtime.Hosting.wire>` reports its summary (``traffic["wire"]`` of
:meth:`SimulationResult.to_dict <parties.simulate.SimulationResult.to_dict>`).

Usage::

    runtime = VirtualRuntime(model=NetworkModel("mobile", availability=Availability(dropout=0.02)))
    sim = simulate(data, "RR-Clusters", seed=1, runtime=runtime, dependence="4.3",
                   secure_sum="masked-sparse", on_dropout="exclude", timeout=60.0)
    runtime.timeline.report()["completion"]     # virtual seconds
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from mprr.errors import ConfigurationError
from parties.netsim.clock import VirtualClockLoop
from parties.netsim.model import NetworkModel
from parties.netsim.network import TimedNetwork
from parties.netsim.profiles import profile
from parties.netsim.timeline import Timeline
from parties.runtime import Hosting, HostingPlan, MemoryHosting, MemoryRuntime, task_group

if TYPE_CHECKING:
    from parties.party import Party

__all__ = ["TimedPlan", "VirtualHosting", "VirtualRuntime"]


@dataclass(frozen=True, eq=False)
class TimedPlan(HostingPlan):
    """A :class:`~parties.runtime.HostingPlan` whose router is a :class:`TimedNetwork`."""

    model: NetworkModel | None = None

    @classmethod
    def of(cls, plan: HostingPlan, model: NetworkModel) -> TimedPlan:
        """``plan`` with ``model``."""
        return cls(**{f.name: getattr(plan, f.name) for f in fields(HostingPlan) if f.init}, model=model)

    def router(self) -> TimedNetwork:
        model = self.model
        if model is None:  # pragma: no cover - of() always sets it
            raise ConfigurationError("a TimedPlan needs a network model")
        return TimedNetwork(self.n, model=model, rng=np.random.default_rng([model.seed, self.seed]),
                            faults=self.faults, latency=self.latency, seed=self.fault_seed, topology=self.graph())


class VirtualHosting(MemoryHosting):
    """:class:`~parties.runtime.MemoryHosting` on a :class:`TimedNetwork`; notes the virtual time
    at which the controller finished."""

    router: TimedNetwork

    async def parties(self) -> Sequence[Party]:
        self.router.timeline.finished = asyncio.get_running_loop().time()
        return await super().parties()

    async def finish(self) -> list[Any]:
        timeline = self.router.timeline
        if not timeline.finished:
            timeline.finished = asyncio.get_running_loop().time()
        return await super().finish()

    def wire(self) -> dict[str, Any]:
        report = self.router.timeline.report()
        return {"runtime": "virtual", "model": self.router.model.describe(), "completion": report["completion"],
                "rounds": report["rounds"], "links": report["links"], "breakdown": {
                    k: v for k, v in report["breakdown"].items() if k != "per_round"},
                "missed": {r: len(p) for r, p in report["missed"].items()}}


@dataclass(frozen=True, eq=False, kw_only=True)
class VirtualRuntime(MemoryRuntime):
    """Parties in this process on a virtual clock, timed by ``model`` (module docstring).

    Parameters
    ----------
    model
        The network model (default: the ``broadband`` profile with the default controller).
    shards
        Party shard hosts, as :class:`~parties.runtime.MemoryRuntime`.
    """

    model: NetworkModel = field(default_factory=lambda: NetworkModel(profile("broadband")))
    timelines: list[Timeline] = field(default_factory=list, repr=False)
    name: str = field(default="virtual", init=False)

    loop_factory = VirtualClockLoop
    """The event loop this runtime needs (:func:`parties.simulate.simulate` runs on it)."""

    @property
    def timeline(self) -> Timeline:
        """The last run's timeline."""
        if not self.timelines:
            raise ConfigurationError("the virtual runtime has run nothing yet: no timeline")
        return self.timelines[-1]

    def options(self) -> dict[str, Any]:
        return {"runtime": "virtual", "shards": self.shards, "model": self.model.describe()}

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        if not isinstance(asyncio.get_running_loop(), VirtualClockLoop):
            raise ConfigurationError(
                "runtime 'virtual' needs an event loop on a virtual clock: call simulate(), or run "
                "simulate_async under parties.netsim.clock.run_virtual, got a "
                f"{type(asyncio.get_running_loop()).__name__}")
        hosting = VirtualHosting(TimedPlan.of(plan, self.model), self.shards)
        self.timelines.append(hosting.router.timeline)
        async with task_group() as tg:
            hosting.serving = [tg.create_task(link.shard.serve()) for link in hosting.links]
            await asyncio.sleep(0)
            try:
                yield hosting
            finally:
                for link in hosting.links:
                    link.shard.stop()
