"""The timed router: each frame arrives when the model says (closed form on idle links, the
controller's shared link queueing), parties away lose their frames."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from parties.netsim.availability import Availability, Traces
from parties.netsim.clock import run_virtual
from parties.netsim.framing import Framing
from parties.netsim.model import ControllerLink, NetworkModel
from parties.netsim.network import TimedNetwork
from parties.netsim.profiles import LinkProfile, Spread
from parties.netsim.timeline import LOST_RECEIVER, LOST_SENDER
from parties.transport import CONTROLLER
from parties.wire.codec import encode
from parties.wire.messages import RandomizedValues


def flat(up: float, down: float, latency: float, controller: ControllerLink, **kw: object) -> NetworkModel:
    """Every party on the same constant link; payload bytes only on the wire."""
    return NetworkModel(LinkProfile("flat", Spread(up), Spread(down), Spread(latency)), controller,
                        Framing.none(), **kw)  # type: ignore[arg-type]


def test_one_round_takes_latency_plus_size_over_the_bottleneck() -> None:
    model = flat(1000.0, 8000.0, 0.02, ControllerLink(1e9, 1e9, 0.005))
    msg = RandomizedValues(1, np.arange(50))
    size = len(encode(msg))

    async def run() -> tuple[float, float]:
        net = TimedNetwork(1, model=model, rng=np.random.default_rng(0))
        party, ctrl = net.endpoint(0), net.endpoint(CONTROLLER)
        loop = asyncio.get_running_loop()
        await party.send(CONTROLLER, msg, phase="collect")
        env = await ctrl.recv(kinds=RandomizedValues, timeout=60.0)
        assert env.message == msg
        return loop.time(), net.timeline.arrival[0]

    now, arrival = run_virtual(run())
    assert arrival == pytest.approx(0.025 + size / 1000.0) and now == pytest.approx(arrival)


def test_messages_crossing_the_controllers_link_queue() -> None:
    n = 8
    model = flat(1e9, 1e9, 0.0, ControllerLink(1e9, 200.0, 0.01))
    msg = RandomizedValues(1, np.arange(20))
    size = len(encode(msg))

    async def run() -> list[float]:
        net = TimedNetwork(n, model=model, rng=np.random.default_rng(0))
        ctrl = net.endpoint(CONTROLLER)
        for i in range(n):
            await net.endpoint(i).send(CONTROLLER, msg, phase="collect")
        got = await ctrl.gather(range(n), kinds=RandomizedValues, timeout=600.0)
        assert sorted(got) == list(range(n))
        return list(net.timeline.arrival)

    arrivals = run_virtual(run())
    assert arrivals == pytest.approx([0.01 + (k + 1) * size / 200.0 for k in range(n)])


def test_parties_away_lose_their_frames_and_miss_the_round() -> None:
    traces = Traces({1: ((0.0, 1.0),), 2: ((1.0, 10.0),)})
    model = flat(1e9, 1e9, 0.5, ControllerLink(1e9, 1e9, 0.0), availability=Availability(traces=traces))
    msg = RandomizedValues(1, np.arange(3))

    async def run() -> TimedNetwork:
        net = TimedNetwork(3, model=model, rng=np.random.default_rng(0))
        ctrl = net.endpoint(CONTROLLER)
        await ctrl.broadcast(range(3), msg, phase="ask")  # party 2 is away when it would arrive (0.5 s)
        await asyncio.sleep(2.0)
        for i in range(3):
            await net.endpoint(i).send(CONTROLLER, msg, phase="answer")  # party 1 is away at 2 s
        got = await ctrl.gather(range(3), kinds=RandomizedValues, timeout=5.0, partial=True)
        assert sorted(got) == [0, 2]
        return net

    net = run_virtual(run())
    assert net.timeline.missed() == {"ask": [2], "answer": [1]}
    assert list(net.timeline.lost) == [0, 0, LOST_RECEIVER, 0, LOST_SENDER, 0]
