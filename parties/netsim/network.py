"""The router of a virtual-time run: every frame is delivered when the network model says it
arrives.

:class:`TimedNetwork` is the memory runtime's router (:class:`parties.router.Router`:
it routes, counts and applies the fault plan to every frame of the run) with one change: a frame
is not handed on when it is sent but at its modelled arrival time, on the event loop's clock
(a :class:`~parties.netsim.clock.VirtualClockLoop`, so waiting costs no real time).  For each
frame, at the virtual time ``now`` its sender sends it:

1. the round is the frame's phase (numbered in order of first appearance); on a new round the
   availability model draws who is away for it (:meth:`Availability.away
   <parties.netsim.availability.Availability.away>`);
2. a sender that is away loses the frame (it missed the round);
3. the sender's compute for the message (:meth:`CryptoCosts.message_cost
   <parties.netsim.compute.CryptoCosts.message_cost>`, plus the runtime's
   :meth:`ProcessingCosts.endpoint <parties.netsim.processing.ProcessingCosts.endpoint>` when
   the model charges processing, x its device-speed factor) runs on its FIFO CPU (its host's,
   shared, with ``hosts``); then the frame's wire size (payload + :class:`~parties.netsim.framing.Framing`)
   crosses the sender's uplink and the receiver's downlink (:class:`~parties.netsim.links.LinkScheduler`:
   FIFO links, the controller's shared by everything crossing it) and the two latencies;
   with processing charged, a relayed party-to-party frame is stored and forwarded: it crosses
   to the controller, waits for the controller's CPU to route it
   (:meth:`~parties.netsim.processing.ProcessingCosts.route`), crosses on to its receiver, and
   there waits for the receiver's CPU to open and decode it (``endpoint`` again; the
   controller's CPU also does this for the frames it sends and receives itself).  These CPUs
   are charged when the frame reaches them, so each serves its work in the order it arrives;
4. at the arrival time the frame is delivered — unless the receiver is away then (it missed
   the round) — through the router's usual path (faults, then the receiver's mailbox).

Every frame is recorded in the :class:`~parties.netsim.timeline.Timeline` (``network.timeline``).
Arrivals wait in a heap ordered by (arrival, send order), so frames arriving at the same instant
are delivered in the order they were sent: the same seed gives the same timeline.
"""

from __future__ import annotations

import asyncio
import heapq
from typing import TYPE_CHECKING, Any

import numpy as np

from parties.netsim.links import LinkScheduler
from parties.netsim.model import NetworkModel
from parties.netsim.timeline import LOST_RECEIVER, LOST_SENDER, UNDELIVERED, Timeline
from parties.router import Router
from parties.transport import CONTROLLER, Frame
from parties.wire.codec import decode

if TYPE_CHECKING:
    import networkx as nx

    from parties.faults import FaultPlan
    from parties.traffic import LatencyModel

__all__ = ["TimedNetwork"]

_DELIVER, _RECEIVE, _ROUTE = 0, 1, 2
"""What happens to a pending frame at its time: delivery, the receiver's processing, the
controller's routing (the last two only when the model charges processing)."""


class TimedNetwork(Router):
    """:class:`~parties.router.Router` delivering frames at modelled times (module
    docstring).

    Parameters
    ----------
    n, topology, faults, latency, seed
        As :class:`~parties.router.Router`.
    model
        The :class:`~parties.netsim.model.NetworkModel`.
    rng
        The run's generator for the model's draws (links first, then one draw per round for
        dropouts).
    """

    def __init__(self, n: int, *, model: NetworkModel, rng: np.random.Generator,
                 topology: nx.Graph[int] | None = None, faults: FaultPlan | None = None,
                 latency: LatencyModel | None = None, seed: int = 0) -> None:
        super().__init__(n, topology=topology, faults=faults, latency=latency, seed=seed)
        self.model = model
        self._rng = rng
        self.links = model.draw(n, rng=rng)
        self.timeline = Timeline(n)
        self._scheduler = LinkScheduler(self.links.uplink, self.links.downlink, self.links.latency,
                                        None if model.hosts is None else model.cpus(n))
        self._processing = model.processing
        self.timeline.cpu_busy = self._scheduler.busy
        self._speed = self.links.device_speed.tolist()
        self._round_of: dict[str, int] = {}
        self._away: list[np.ndarray] = []
        self._phase_bytes: dict[str, int] = {}
        self._degree = [0] * (n + 1)  # per sender: live neighbours and sealed-share bytes (SealedShares)
        self._blob = [0] * (n + 1)
        self._pending: list[tuple[float, int, int, Frame]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._availability = model.availability
        self._traces = model.availability.traces
        self._relay = model.relay

    def _round(self, phase: str) -> int:
        r = self._round_of.get(phase)
        if r is None:
            r = self._round_of[phase] = len(self.timeline.rounds)
            self.timeline.rounds.append(phase)
            self._away.append(self._availability.away(self.n, rng=self._rng))
            self._phase_bytes[phase] = len(phase.encode())
        return r

    def _is_away(self, actor: int, r: int, t: float) -> bool:
        if actor == CONTROLLER:
            return False
        if self._away[r][actor]:
            return True
        return self._traces is not None and not self._traces.online(actor, t)

    def _compute(self, frame: Frame) -> float:
        """Modelled seconds of the sender's cryptography for this frame (device speed 1)."""
        if frame.src == CONTROLLER or frame.kind < 64:  # (the secure-sum kinds are 64 and up)
            return 0.0
        msg: Any = frame.message if frame.message is not None else decode(frame.payload)
        i = frame.src + 1
        if type(msg).__name__ == "SealedShares":  # what its later MaskedInput costs depends on
            k = len(msg.recipients)
            self._degree[i], self._blob[i] = k, len(msg.ciphertexts) // k if k else 0
        return self.model.costs.message_cost(msg, degree=self._degree[i], blob=self._blob[i])

    def _route(self, frame: Frame) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        r = self._round(frame.phase)
        size = len(frame.payload)
        wire = self.model.framing.wire_size(size, self._phase_bytes[frame.phase])
        src, dst = frame.src, frame.dst
        if self._is_away(src, r, now):
            self.timeline.add(src, dst, r, frame.kind, size, wire, LOST_SENDER, now, now, now, 0.0, 0.0)
            return
        proc = self._processing
        seconds = self._compute(frame)
        if proc is not None:
            seconds += proc.endpoint(size)
        seconds *= self._speed[src + 1]
        ready = self._scheduler.compute(src, now, seconds) if seconds else now
        if proc is None:
            t = self._scheduler.transfer(src, dst, wire, ready, relay=self._relay)
            stage = _DELIVER
        elif self._relay and src != CONTROLLER and dst != CONTROLLER:
            t = self._scheduler.transfer(src, CONTROLLER, wire, ready)  # to the controller's router
            stage = _ROUTE
        else:
            t = self._scheduler.transfer(src, dst, wire, ready)
            stage = _RECEIVE
        index = self.timeline.add(src, dst, r, frame.kind, size, wire, 0, now, ready, t.arrival, t.transmission,
                                  t.latency)
        self._push(t.arrival, index, stage, frame)

    def _push(self, at: float, index: int, stage: int, frame: Frame) -> None:
        heapq.heappush(self._pending, (at, index, stage, frame))
        if at < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = at
            self._timer = asyncio.get_running_loop().call_at(at, self._arrive)

    def _processed(self, at: float, index: int, stage: int, frame: Frame) -> None:
        """A frame reached the controller's router (``_ROUTE``) or its receiver (``_RECEIVE``)
        at ``at``: charge that CPU now, in the order frames reach it (step 3 of the module
        docstring), and move the frame on."""
        proc, scheduler, timeline = self._processing, self._scheduler, self.timeline
        assert proc is not None
        size = len(frame.payload)
        if stage == _ROUTE:
            cost = proc.route(size)
            t = scheduler.transfer(CONTROLLER, frame.dst, timeline.wire[index], scheduler.compute(CONTROLLER, at, cost))
            timeline.transmission[index] = max(timeline.transmission[index], t.transmission)
            timeline.latency[index] += t.latency
            timeline.processing[index] += cost
            timeline.arrival[index] = t.arrival
            self._push(t.arrival, index, _RECEIVE, frame)
            return
        cost = proc.endpoint(size) * self._speed[frame.dst + 1]
        done = scheduler.compute(frame.dst, at, cost)
        timeline.processing[index] += cost
        timeline.arrival[index] = done
        self._push(done, index, _DELIVER, frame)

    def _arrive(self) -> None:
        """Move on every frame whose time has come (deliver it, or charge its processing), then
        wait for the next one."""
        loop = asyncio.get_running_loop()
        now = loop.time() + 1e-9  # (the loop's clock reached the timer, up to rounding)
        pending, timeline = self._pending, self.timeline
        self._timer, self._timer_at = None, -float("inf")  # (no timer from _push while this runs)
        while pending and pending[0][0] <= now:
            arrival, index, stage, frame = heapq.heappop(pending)
            if stage != _DELIVER:
                self._processed(arrival, index, stage, frame)
                continue
            if self._is_away(frame.dst, timeline.round[index], arrival):
                timeline.lost[index] = LOST_RECEIVER
                continue
            Router._route(self, frame)
        self._timer_at = float("inf")
        if pending:
            self._timer_at = pending[0][0]
            self._timer = loop.call_at(self._timer_at, self._arrive)

    def close(self) -> None:
        """Cancel the pending arrivals (and the fault plan's delayed deliveries)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for _, index, _, _ in self._pending:
            self.timeline.lost[index] = UNDELIVERED
        self._pending.clear()
        super().close()
