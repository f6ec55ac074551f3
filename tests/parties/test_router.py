"""parties.router: the public messaging API end to end, and Adult-scale actor counts."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import parties.router as router_module
from mprr.errors import ConfigurationError, RoundTimeout
from parties.wire.codec import encode
from parties.wire.messages import RandomizedValues
from parties.faults import FaultPlan
from parties.router import Router
from parties.traffic import LatencyModel
from parties.transport import CONTROLLER, Transport
from tests.parties.transport_helpers import Probe, answer_requests

ADULT_N = 32_561


def test_public_names_are_its_own_only() -> None:
    # the messaging layer's names are imported from their homes (parties.transport, faults, traffic)
    assert router_module.__all__ == ["Router"]
    assert Router.__module__ == "parties.router"
    assert CONTROLLER == -1
    assert issubclass(Router, Transport)
    with pytest.raises(TypeError, match="abstract"):
        Transport(2)  # type: ignore[abstract]


def test_seed_is_checked() -> None:
    with pytest.raises(ConfigurationError, match="seed must be an integer >= 0"):
        Router(2, faults=FaultPlan(drop=0.1), seed=-5)


async def test_two_actors_exchange_a_request_and_a_reply() -> None:
    """The usage example of the module docstring, checked."""
    net = Router(3, seed=1)
    ctrl, p0 = net.endpoint(CONTROLLER), net.endpoint(0)
    P = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])

    async def party() -> None:
        env = await p0.recv(kinds=Probe, timeout=1.0)
        await p0.send(CONTROLLER, RandomizedValues(env.message.request_id, [2]), phase="collect")

    async def controller() -> RandomizedValues:
        with net.round("collect"):
            await ctrl.send(0, Probe(7, (0,), P), phase="collect")
            env = await ctrl.recv(kinds=RandomizedValues, sources=[0], timeout=1.0)
        return env.message

    async with asyncio.TaskGroup() as tg:
        tg.create_task(party())
        reply = tg.create_task(controller())
    assert reply.result() == RandomizedValues(7, [2])
    s = net.statistics()
    assert s.rounds == 1 and s.messages == 2
    assert s.bytes == len(encode(Probe(7, (0,), P))) + len(encode(RandomizedValues(7, [2])))


async def test_broadcast_counts_one_message_per_receiver_and_shares_the_decoded_message() -> None:
    net = Router(4)
    ann = Probe(3, (0, 1), np.eye(2))
    await net.endpoint(CONTROLLER).broadcast(range(4), ann, phase="announce")
    envs = [await net.endpoint(i).recv(timeout=0.1) for i in range(4)]
    assert all(e.message == ann for e in envs)
    assert envs[0].message is envs[3].message  # one immutable decode per broadcast
    s = net.statistics()
    assert s.by_kind["Probe"].messages == 4 and s.bytes == 4 * len(encode(ann))


@pytest.mark.slow
async def test_adult_scale_round_trip_with_latency() -> None:
    """32,561 party actors: a broadcast request and one reply each, gathered by the controller.

    How long this takes is measured by ``benchmarks/actors.py``, not asserted here.
    """
    net = Router(ADULT_N, latency=LatencyModel(latency=0.02, bandwidth=1e6))
    ctrl = net.endpoint(CONTROLLER)
    req = Probe(1, (0,), np.full((4, 4), 0.25))

    async def controller() -> dict:
        with net.round("request"):
            await ctrl.broadcast(range(ADULT_N), req, phase="request")
        with net.round("collect"):
            return await ctrl.gather(range(ADULT_N), kinds=RandomizedValues, phase="request", timeout=30.0)

    async with asyncio.TaskGroup() as tg:
        for i in range(ADULT_N):
            tg.create_task(answer_requests(net.endpoint(i), 1, timeout=30.0))
        got = tg.create_task(controller())
    replies = got.result()
    assert len(replies) == ADULT_N
    assert all(env.message.codes[0] == src % 4 for src, env in replies.items())
    s = net.statistics()
    req_size, reply_size = len(encode(req)), len(encode(RandomizedValues(1, [0])))
    assert s.messages == 2 * ADULT_N and s.bytes == ADULT_N * (req_size + reply_size)
    assert s.by_sender[CONTROLLER].messages == ADULT_N and s.sent_by(123).messages == 1
    assert s.simulated_time == pytest.approx(0.02 + req_size / 1e6 + 0.02 + reply_size / 1e6)


async def test_round_timeout_never_hangs_at_scale() -> None:
    n = 2_000
    net = Router(n, faults=FaultPlan(drop=0.01), seed=3)
    ctrl = net.endpoint(CONTROLLER)
    req = Probe(1, (0,), np.eye(2))
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(ExceptionGroup) as info:
        async with asyncio.TaskGroup() as tg:
            for i in range(n):
                tg.create_task(answer_requests(net.endpoint(i), 1, timeout=5.0))
            await ctrl.broadcast(range(n), req, phase="collect")
            await ctrl.gather(range(n), kinds=RandomizedValues, timeout=0.2)
    (error,) = info.value.exceptions
    assert isinstance(error, RoundTimeout)
    # every missing party lost its request or its reply: at least one drop each
    assert 0 < len(error.missing) <= net.statistics().dropped
    # the round ends at its deadline (virtual clock: exactly 0.2 s of loop time), not later
    assert loop.time() - start == pytest.approx(0.2, abs=1e-6)
