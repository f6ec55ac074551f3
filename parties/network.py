"""The in-memory network of the actor simulator (and the public face of the messaging layer).

``InMemoryNetwork(n)`` gives the controller (:data:`CONTROLLER` = -1) and parties ``0..n-1``
one :class:`Endpoint` each.  Messages travel as bytes: encoded on send, decoded on delivery, so
every message and byte counted is real (a broadcast is encoded once and, the message being
immutable, decoded once).  Delivery is immediate (no sleeping) unless the fault plan delays a
message; a :class:`LatencyModel` computes *simulated* time per round instead.

Endpoint API (see :class:`parties.transport.Endpoint`)::

    await ep.send(dst, msg, *, phase)
    await ep.broadcast(dsts, msg, *, phase)
    env = await ep.recv(*, kinds=None, sources=None, phase=None, timeout)   # -> Envelope
    got = await ep.gather(sources, *, kinds=None, phase=None, timeout, partial=False)
    ep.statistics(); ep.buffered; ep.pending(); ep.crashed
    ep.rejections(); ep.take_rejections(sources=None); ep.reject(env, reason)   # bad frames

Network API: ``endpoint(actor, *, accept=None)``, ``begin_round(phase)`` / ``end_round()`` /
``with round(phase):``, ``statistics()``, ``crash(actor)``, ``crashed``, ``path(src, dst)``, ``close()``.

Usage::

    net = InMemoryNetwork(3, seed=1)
    ctrl, p0 = net.endpoint(CONTROLLER), net.endpoint(0)

    async def party():
        env = await p0.recv(kinds=ReleaseRequest, timeout=1.0)
        await p0.send(CONTROLLER, RandomizedValues(env.message.request_id, [2]), phase="collect")

    async def controller():
        with net.round("collect"):
            await ctrl.send(0, request, phase="collect")  # a ReleaseRequest with request_id 7
            return await ctrl.recv(kinds=RandomizedValues, sources=[0], timeout=1.0)

    async with asyncio.TaskGroup() as tg:
        tg.create_task(party())
        reply = tg.create_task(controller())
    net.statistics().to_dict()   # messages, bytes, rounds per sender/receiver/kind/phase
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from parties.faults import FaultDecision, FaultInjector, FaultPlan
from parties.traffic import (
    ActorStatistics,
    Counts,
    LatencyModel,
    PhaseCounts,
    RoundRecord,
    TrafficStatistics,
)
from parties.transport import CONTROLLER, Endpoint, Envelope, Frame, Topology, Transport, actor_name

if TYPE_CHECKING:  # annotations only: party workers never import networkx
    import networkx as nx

__all__ = [
    "CONTROLLER",
    "ActorStatistics",
    "Counts",
    "Endpoint",
    "Envelope",
    "FaultDecision",
    "FaultPlan",
    "Frame",
    "InMemoryNetwork",
    "LatencyModel",
    "PhaseCounts",
    "RoundRecord",
    "Topology",
    "TrafficStatistics",
    "Transport",
    "actor_name",
]

class InMemoryNetwork(Transport):
    """All actors in one process; one buffered mailbox per actor.

    Parameters
    ----------
    n
        Number of parties (>= 1).
    topology
        networkx graph of allowed party-to-party links (default: star, parties reach only the
        controller; see :class:`parties.transport.Topology`).
    faults
        Optional :class:`FaultPlan` (drop / delay / duplicate / reorder / crash).
    latency
        Optional :class:`LatencyModel` for simulated time (default: zero).
    seed
        Seed of the fault decisions (non-negative integer).
    """

    def __init__(
        self,
        n: int,
        *,
        topology: nx.Graph[int] | None = None,
        faults: FaultPlan | None = None,
        latency: LatencyModel | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(n, topology=topology, latency=latency)
        self.faults = faults
        self._injector = FaultInjector(faults, seed) if faults is not None else None
        self._probabilistic = faults is not None and faults.probabilistic
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._next_token = 0

    def _admit(self, src: int) -> bool:
        inj = self._injector
        if inj is not None and src not in self._crashed and inj.crashes_now(src):
            self.crash(src)
        return super()._admit(src)

    def _transmit(self, frame: Frame) -> None:
        self._route(frame)

    def _route(self, frame: Frame) -> None:
        """Apply the fault plan to ``frame`` and deliver what survives (now or after a delay)."""
        if not self._probabilistic:
            self._deliver(frame)
            return
        inj = self._injector
        if inj is None:  # pragma: no cover - _probabilistic implies an injector
            return
        d = inj.decide(frame.src, frame.dst, frame.phase)
        if d.drop:
            self._traffic.record_fault("dropped")
            return
        copies = 2 if d.duplicate else 1
        if d.duplicate:
            self._traffic.record_fault("duplicated")
        if d.delay > 0:
            self._traffic.record_fault("delayed")
            loop = asyncio.get_running_loop()
            for _ in range(copies):
                token = self._next_token
                self._next_token += 1
                self._timers[token] = loop.call_later(d.delay, self._fire, token, frame)
            return
        for _ in range(copies):
            position = None
            if d.reorder:
                position = d.position(self._buffered(frame.dst))
                self._traffic.record_fault("reordered")
            self._deliver(frame, position)

    def _buffered(self, actor: int) -> int:
        """Messages delivered to ``actor`` and not yet taken."""
        ep = self._endpoints.get(actor)
        return 0 if ep is None else ep.buffered

    def _fire(self, token: int, frame: Frame) -> None:
        self._timers.pop(token, None)
        self._deliver(frame)

    def close(self) -> None:
        """Cancel delayed deliveries still pending (call when a run ends early)."""
        for h in self._timers.values():
            h.cancel()
        self._timers.clear()
