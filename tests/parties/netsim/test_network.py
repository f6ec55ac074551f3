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


def test_the_senders_compute_is_charged_at_its_device_speed() -> None:
    from parties.netsim.compute import CryptoCosts
    from parties.secure.messages import SealedShares, bundle

    costs = CryptoCosts(x25519_keygen=0.0, x25519_agree=0.01, hkdf=0.0, chacha20_fixed=0.0, chacha20_per_byte=0.0,
                        aead_fixed=0.0, aead_per_byte=0.0, shamir_share=0.0, mac=0.0, ed25519_sign=0.0)
    model = NetworkModel(LinkProfile("slow", Spread(1000.0), Spread(1e9), Spread(0.0), device_speed=2.0),
                         ControllerLink(1e9, 1e9, 0.0), Framing.none(), costs)
    msg = SealedShares("s", *bundle((j, bytes(8)) for j in (1, 2, 3, 4)))

    async def run() -> TimedNetwork:
        net = TimedNetwork(5, model=model, rng=np.random.default_rng(0))
        await net.endpoint(0).send(CONTROLLER, msg, phase="masked/share-keys")
        await net.endpoint(CONTROLLER).recv(kinds=SealedShares, timeout=10.0)
        return net

    net = run_virtual(run())
    # 4 agreements of 10 ms at device speed 2, then the bytes over the 1000 B/s uplink
    assert net.timeline.ready[0] == pytest.approx(0.08)
    assert net.timeline.arrival[0] == pytest.approx(0.08 + len(encode(msg)) / 1000.0)
