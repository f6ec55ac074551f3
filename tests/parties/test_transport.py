"""parties.transport: endpoints, send / send_each / broadcast, rejected frames, crashes, a second transport."""

from __future__ import annotations

import asyncio

import networkx as nx
import pytest

from mprr.errors import ConfigurationError, MessageError, PartyDropped, ProtocolError, RoundTimeout
from parties.wire.codec import encode
from parties.wire.messages import Abort, Ack, RandomizedValues
from parties.faults import FaultPlan
from parties.router import Router
from parties.transport import CONTROLLER, Frame
from tests.parties.transport_helpers import ChaosTransport, Probe, answer_requests, identity_matrix

T = 0.05  # tiny timeouts keep the failure tests fast


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_invalid_party_count(n: object) -> None:
    with pytest.raises(ConfigurationError, match="n \\(number of parties\\) must be an integer >= 1"):
        Router(n)  # type: ignore[arg-type]


def test_endpoints_are_cached_and_checked() -> None:
    net = Router(2)
    assert net.endpoint(1) is net.endpoint(1)
    with pytest.raises(ProtocolError, match="actor must be CONTROLLER"):
        net.endpoint(2)


# ------------------------------------------------------------------ send, rejected frames


async def test_request_reply_inside_a_task_group() -> None:
    net = Router(2)
    ctrl = net.endpoint(CONTROLLER)
    req = Probe(7, (0,), identity_matrix(3))

    async def controller() -> RandomizedValues:
        await ctrl.send(1, req, phase="collect")
        env = await ctrl.recv(kinds=RandomizedValues, sources=[1], phase="collect", timeout=1.0)
        assert env.src == 1 and env.dst == CONTROLLER and env.phase == "collect"
        assert env.size == len(encode(env.message)) == 35
        assert env.kind == "RandomizedValues"
        return env.message

    async with asyncio.TaskGroup() as tg:
        tg.create_task(answer_requests(net.endpoint(1), 1))
        reply = tg.create_task(controller())
    assert reply.result() == RandomizedValues(7, [1])


async def test_phase_must_be_a_non_empty_string() -> None:
    net = Router(1)
    with pytest.raises(ConfigurationError, match="phase must be a non-empty string, got ''"):
        await net.endpoint(0).send(CONTROLLER, Ack(1), phase="")
    with pytest.raises(ConfigurationError, match="phase must be a non-empty string"):
        net.begin_round("")


async def test_rejected_frames_are_counted_against_their_sender_and_fail_no_receive() -> None:
    # Before: a rejected frame failed whichever recv was waiting, whatever its filter.
    net = Router(2)
    party = net.endpoint(0, accept=[Probe, Abort])
    ctrl = net.endpoint(CONTROLLER)
    await ctrl.send(0, Ack(1), phase="p")  # a kind party 0 does not accept
    net._transmit(Frame(1, 0, "p", 99, b"\xff garbage"))  # undecodable, from party 1
    assert party.buffered == 0
    with pytest.raises(RoundTimeout):
        await party.recv(timeout=T)
    stats = net.statistics()
    assert stats.rejected == 2 and dict(stats.rejected_by_sender) == {CONTROLLER: 1, 1: 1}
    assert stats.to_dict()["faults"]["rejected_by_sender"] == {"-1": 1, "1": 1}
    assert ctrl.statistics().rejected == 1 and net.endpoint(1).statistics().rejected == 1
    [first, second] = party.rejections()
    assert (first.src, first.phase, first.kind) == (CONTROLLER, "p", Ack.KIND)
    assert first.describe().startswith("party 0 rejected a frame from controller in phase 'p': unexpected message kind Ack (6)")
    assert second.src == 1
    # a receive that is already waiting is neither woken nor failed by a rejected frame
    waiting = asyncio.create_task(party.recv(kinds=Abort, timeout=1.0))
    await asyncio.sleep(0)
    await ctrl.send(0, Ack(2), phase="p")
    await ctrl.send(0, Abort("ok"), phase="p")
    assert (await waiting).message == Abort("ok")
    taken = party.take_rejections([1])
    assert taken == {1: second}
    assert [r.src for r in party.rejections()] == [CONTROLLER, CONTROLLER]
    assert list(party.take_rejections()) == [CONTROLLER] and party.rejections() == ()


async def test_reject_attributes_a_well_formed_but_unusable_message() -> None:
    net = Router(2)
    ctrl = net.endpoint(CONTROLLER)
    await net.endpoint(1).send(CONTROLLER, Ack(5), phase="p")
    env = await ctrl.recv(timeout=T)
    ctrl.reject(env, "request 5 was never sent")
    assert dict(net.statistics().rejected_by_sender) == {1: 1}
    assert ctrl.take_rejections()[1].reason == "request 5 was never sent"


# ------------------------------------------------------------------ crash


async def test_crash_wakes_the_receiver_and_silences_the_actor() -> None:
    net = Router(2)
    ep = net.endpoint(1)
    waiting = asyncio.create_task(ep.recv(timeout=1.0))
    await asyncio.sleep(0)
    net.crash(1)
    with pytest.raises(PartyDropped, match="party 1 has crashed") as info:
        await waiting
    assert info.value.parties == (1,)
    assert ep.crashed and net.crashed == frozenset({1})
    await ep.send(CONTROLLER, Ack(1), phase="p")  # vanishes
    await net.endpoint(CONTROLLER).send(1, Ack(1), phase="p")  # lost
    stats = net.statistics()
    assert stats.messages == 1 and stats.delivered == 0 and stats.lost_to_crash == 2
    assert stats.crashed == (1,)
    with pytest.raises(PartyDropped):
        await ep.recv(timeout=T)
    net.crash(1)  # idempotent


# ------------------------------------------------------------------ send_each


async def _send_to_all(net: Router, bulk: bool) -> None:
    """Party 0 sends Ack(k) to party k + 1, k = 0..3, one call each or in one send_each."""
    dsts, msgs = [1, 2, 3, 4], [Ack(k) for k in range(4)]
    if bulk:
        await net.endpoint(0).send_each(dsts, msgs, phase="p")
    else:
        for dst, msg in zip(dsts, msgs):
            await net.endpoint(0).send(dst, msg, phase="p")


@pytest.mark.parametrize("faults", [None, FaultPlan(crash={0: 3}), FaultPlan(crash={0: 1}), FaultPlan(duplicate=0.5)])
async def test_send_each_delivers_and_counts_exactly_as_one_send_per_message(faults: FaultPlan | None) -> None:
    runs = []
    for bulk in (False, True):
        net = Router(5, topology=nx.complete_graph(5), faults=faults, seed=3)
        await _send_to_all(net, bulk)
        got = [[e.message for e in net.endpoint(k).pending()] for k in range(1, 5)]
        runs.append((got, net.statistics().to_dict(), net.crashed))
    assert runs[0] == runs[1]
    if faults is not None and faults.crash:  # the crash at the k-th send: the first k - 1 arrive
        k = faults.crash[0]
        assert runs[1][0] == [[Ack(j)] if j < k - 1 else [] for j in range(4)]
        assert runs[1][1]["faults"]["lost_to_crash"] == 4 - (k - 1)


async def test_send_each_refuses_everything_or_sends_everything() -> None:
    net = Router(3)  # star: party 0 reaches only the controller
    ep = net.endpoint(0)
    with pytest.raises(ProtocolError, match="party 0 cannot send to party 1: no link in the topology"):
        await ep.send_each([CONTROLLER, 1], [Ack(1), Ack(2)], phase="p")
    with pytest.raises(ConfigurationError, match="one message per destination, got 1 messages for 2 destinations"):
        await ep.send_each([CONTROLLER, CONTROLLER], [Ack(1)], phase="p")
    with pytest.raises(MessageError, match=r"messages of one kind, got \['Abort', 'Ack'\]"):
        await ep.send_each([CONTROLLER, CONTROLLER], [Ack(1), Abort("x")], phase="p")
    with pytest.raises(ConfigurationError, match="phase must be a non-empty string"):
        await ep.send_each([CONTROLLER], [Ack(1)], phase="")
    assert net.statistics().messages == 0 and net.endpoint(CONTROLLER).buffered == 0
    await ep.send_each([], [], phase="p")
    await ep.send_each([CONTROLLER, CONTROLLER], [Ack(1), Ack(2)], phase="p")
    assert [e.message for e in net.endpoint(CONTROLLER).pending()] == [Ack(1), Ack(2)]
    assert net.statistics().by_kind["Ack"].messages == 2


# ------------------------------------------------------------------ a second transport


async def _run_round(net: ChaosTransport, n: int, timeout: float, party_timeout: float = 1.0) -> dict[int, int]:
    ctrl = net.endpoint(CONTROLLER)

    async def controller() -> dict[int, int]:
        for i in range(n):
            await ctrl.send(i, Probe(100 + i, (0,), identity_matrix(2)), phase="collect")
        got = await ctrl.gather(range(n), kinds=RandomizedValues, phase="collect", timeout=timeout)
        return {src: env.message.request_id for src, env in got.items()}

    async with asyncio.TaskGroup() as tg:
        for i in range(n):
            tg.create_task(answer_requests(net.endpoint(i), 1, timeout=party_timeout))
        result = tg.create_task(controller())
    return result.result()


async def test_chaos_transport_shuffles_and_delays_but_the_round_completes() -> None:
    net = ChaosTransport(20, seed=3, delay=0.3)
    assert await _run_round(net, 20, 1.0) == {i: 100 + i for i in range(20)}
    requests = [dst for src, dst, kind in net.log if src == CONTROLLER]
    assert sorted(requests) == list(range(20)) and requests != list(range(20))


async def test_chaos_transport_is_reproducible_from_its_seed() -> None:
    logs = []
    for seed in (5, 5, 6):
        net = ChaosTransport(12, seed=seed)
        await _run_round(net, 12, 1.0)
        logs.append(net.log)
    assert logs[0] == logs[1] and logs[0] != logs[2]


async def test_chaos_transport_drop_ends_in_a_clear_timeout() -> None:
    net = ChaosTransport(10, seed=1, drop=0.2)
    with pytest.raises(ExceptionGroup) as info:
        await _run_round(net, 10, 0.05)  # the controller's deadline ends the round; parties wait 1 s
    (error,) = info.value.exceptions  # the TaskGroup cancelled the waiting parties
    assert isinstance(error, RoundTimeout) and error.phase == "collect"
    assert str(error).startswith("phase 'collect': controller timed out after 0.05 s waiting for RandomizedValues")
    # a party is missing exactly when its request or its reply was lost
    lost_parties = {dst if src == CONTROLLER else src for src, dst, _ in net.lost}
    assert lost_parties and set(error.missing) == lost_parties
