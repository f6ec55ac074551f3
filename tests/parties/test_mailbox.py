"""parties.mailbox: buffering in arrival order, filtered recv / recv_many / gather, timeouts."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.errors import ConfigurationError, PartyDropped, ProtocolError, RoundTimeout
from parties.wire.messages import Abort, Ack, RandomizedValues
from parties.router import Router
from parties.transport import CONTROLLER
from tests.virtual_clock import run_virtual

T = 0.05  # tiny timeouts keep the failure tests fast
_KINDS = (Ack, Abort)


async def test_unmatched_messages_stay_buffered_in_arrival_order() -> None:
    net = Router(3)
    ctrl = net.endpoint(CONTROLLER)
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="a")
    await net.endpoint(1).send(CONTROLLER, Abort("x"), phase="b")
    await net.endpoint(2).send(CONTROLLER, Ack(2), phase="b")
    await net.endpoint(0).send(CONTROLLER, Ack(3), phase="b")
    assert ctrl.buffered == 4
    env = await ctrl.recv(kinds=Abort, timeout=T)
    assert env.src == 1
    env = await ctrl.recv(kinds=[Ack], phase="b", timeout=T)
    assert env.message == Ack(2)
    env = await ctrl.recv(sources=0, phase="b", timeout=T)
    assert env.message == Ack(3)
    assert [e.message for e in ctrl.pending()] == [Ack(1)]
    assert (await ctrl.recv(timeout=T)).message == Ack(1)
    assert ctrl.buffered == 0


async def test_a_waiting_recv_only_takes_what_matches() -> None:
    net = Router(2)
    ctrl = net.endpoint(CONTROLLER)

    async def later() -> None:
        await asyncio.sleep(0.005)
        await net.endpoint(0).send(CONTROLLER, Ack(1), phase="p")
        await net.endpoint(1).send(CONTROLLER, Abort("done"), phase="p")

    async with asyncio.TaskGroup() as tg:
        tg.create_task(later())
        got = tg.create_task(ctrl.recv(kinds="Abort", timeout=1.0))
    assert got.result().message == Abort("done")
    assert [e.message for e in ctrl.pending()] == [Ack(1)]


async def test_concurrent_receivers_on_one_endpoint_each_get_their_kind() -> None:
    net = Router(1)
    ep = net.endpoint(0)
    ctrl = net.endpoint(CONTROLLER)
    async with asyncio.TaskGroup() as tg:
        acks = tg.create_task(ep.recv(kinds=Ack, timeout=1.0))
        aborts = tg.create_task(ep.recv(kinds=Abort, timeout=1.0))
        await asyncio.sleep(0)
        await ctrl.send(0, Abort("a"), phase="p")
        await ctrl.send(0, Ack(4), phase="p")
    assert acks.result().message == Ack(4) and aborts.result().message == Abort("a")


async def test_recv_timeout_names_phase_and_missing_sources() -> None:
    net = Router(5)
    ctrl = net.endpoint(CONTROLLER)
    with pytest.raises(RoundTimeout, match=r"phase 'collect': controller timed out after 0.05 s waiting for RandomizedValues from party 3, party 4") as info:
        await ctrl.recv(kinds=RandomizedValues, sources=[4, 3], phase="collect", timeout=T)
    assert info.value.phase == "collect" and info.value.missing == (3, 4) and info.value.timeout == T
    with pytest.raises(RoundTimeout, match=r"phase '\(any\)': party 0 timed out .* waiting for any message") as info:
        await net.endpoint(0).recv(timeout=T)
    assert info.value.missing == ()


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "1"])
async def test_timeout_must_be_positive(timeout: object) -> None:
    net = Router(1)
    with pytest.raises(ConfigurationError, match="timeout must be > 0 seconds or None"):
        await net.endpoint(0).recv(timeout=timeout)  # type: ignore[arg-type]


async def test_a_cancelled_recv_loses_nothing() -> None:
    net = Router(1)
    ctrl = net.endpoint(CONTROLLER)
    task = asyncio.create_task(ctrl.recv(kinds=Ack, timeout=None))
    await asyncio.sleep(0)
    task.cancel()
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="p")  # delivered as the recv is cancelled
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e.message for e in ctrl.pending()] == [Ack(1)]


async def test_gather_collects_one_message_per_source() -> None:
    net = Router(4)
    ctrl = net.endpoint(CONTROLLER)
    await net.endpoint(2).send(CONTROLLER, Ack(2), phase="p")
    await net.endpoint(2).send(CONTROLLER, Ack(22), phase="p")  # a second one stays buffered
    await net.endpoint(1).send(CONTROLLER, Abort("other kind"), phase="p")

    async def later() -> None:
        await asyncio.sleep(0.002)
        for i in (0, 1, 3):
            await net.endpoint(i).send(CONTROLLER, Ack(i), phase="p")

    async with asyncio.TaskGroup() as tg:
        tg.create_task(later())
        got = tg.create_task(ctrl.gather(range(4), kinds=Ack, phase="p", timeout=1.0))
    result = got.result()
    assert sorted(result) == [0, 1, 2, 3]
    assert {i: e.message.request_id for i, e in result.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    assert [e.message for e in ctrl.pending()] == [Ack(22), Abort("other kind")]


async def test_gather_timeout_lists_missing_and_keeps_what_arrived() -> None:
    net = Router(4)
    ctrl = net.endpoint(CONTROLLER)
    await net.endpoint(0).send(CONTROLLER, Ack(0), phase="p")
    await net.endpoint(3).send(CONTROLLER, Ack(3), phase="p")
    with pytest.raises(RoundTimeout, match=r"waiting for Ack from party 1, party 2 \(2 of 4 arrived\)") as info:
        await ctrl.gather([0, 1, 2, 3], kinds=Ack, phase="p", timeout=T)
    assert info.value.missing == (1, 2)
    assert sorted(e.src for e in ctrl.pending()) == [0, 3]  # back in the buffer for a retry
    partial = await ctrl.gather([0, 1, 2, 3], kinds=Ack, timeout=T, partial=True)
    assert sorted(partial) == [0, 3] and ctrl.buffered == 0


async def test_gather_of_nothing_returns_at_once() -> None:
    net = Router(1)
    assert await net.endpoint(CONTROLLER).gather([], timeout=T) == {}


async def test_recv_many_waits_for_the_first_and_takes_what_else_arrived() -> None:
    net = Router(2)
    ctrl = net.endpoint(CONTROLLER)

    async def later() -> None:
        await asyncio.sleep(0.005)
        await net.endpoint(0).send_each([CONTROLLER] * 3, [Ack(1), Ack(2), Ack(3)], phase="p")

    async with asyncio.TaskGroup() as tg:
        tg.create_task(later())
        got = tg.create_task(ctrl.recv_many(kinds=Ack, phase="p", timeout=1.0))
    assert [e.message for e in got.result()] == [Ack(1), Ack(2), Ack(3)]
    with pytest.raises(RoundTimeout, match="phase 'p': controller timed out after 0.05 s waiting for Ack from party 1"):
        await ctrl.recv_many(kinds=Ack, sources=1, phase="p", timeout=T)
    net.crash(CONTROLLER)
    with pytest.raises(PartyDropped, match="controller has crashed"):
        await ctrl.recv_many(timeout=T)


async def test_gather_sources_must_be_actors() -> None:
    net = Router(2)
    with pytest.raises(ProtocolError, match="gather source must be CONTROLLER .* got 7"):
        await net.endpoint(CONTROLLER).gather([0, 7], timeout=T)


@settings(max_examples=80, deadline=None)
@given(
    sends=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(_KINDS), st.sampled_from(["a", "b"])), max_size=25),
    takes=st.lists(
        st.tuples(
            st.booleans(),
            st.none() | st.sampled_from(_KINDS),
            st.none() | st.frozensets(st.integers(0, 3), min_size=1),
            st.none() | st.sampled_from(["a", "b"]),
        ),
        max_size=25,
    ),
)
def test_recv_takes_the_oldest_match_and_recv_many_every_match(sends: list, takes: list) -> None:
    """Against a plain list model: a recv takes the oldest match, a recv_many every match in
    arrival order; nothing is lost or doubled, the rest stays buffered in order."""

    async def run() -> None:
        net = Router(4)
        ctrl = net.endpoint(CONTROLLER)
        model = []
        for seq, (src, kind, phase) in enumerate(sends):
            msg = Ack(seq) if kind is Ack else Abort(f"m{seq}")
            await net.endpoint(src).send(CONTROLLER, msg, phase=phase)
            model.append((src, kind, phase, msg))
        for many, kind, sources, phase in takes:
            matches = [m for m in model if (kind is None or m[1] is kind) and (sources is None or m[0] in sources)
                       and (phase is None or m[2] == phase)][: None if many else 1]
            receive = ctrl.recv_many if many else ctrl.recv
            if not matches:
                with pytest.raises(RoundTimeout):
                    await receive(kinds=kind, sources=sources, phase=phase, timeout=0.001)
                continue
            got = await receive(kinds=kind, sources=sources, phase=phase, timeout=0.001)
            assert [(e.src, type(e.message), e.phase, e.message) for e in (got if many else [got])] == matches
            model = [m for m in model if m not in matches]
        assert [e.message for e in ctrl.pending()] == [m[3] for m in model]

    run_virtual(run())


async def test_take_all_takes_what_matches_now_and_never_waits() -> None:
    net = Router(3)
    ctrl = net.endpoint(CONTROLLER)
    assert ctrl.take_all(kinds=Ack) == []  # nothing buffered: empty, at once
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="a")
    await net.endpoint(1).send(CONTROLLER, Abort("x"), phase="a")
    await net.endpoint(2).send(CONTROLLER, Ack(2), phase="b")
    await net.endpoint(1).send(CONTROLLER, Ack(3), phase="a")
    got = ctrl.take_all(kinds=Ack, phase="a")
    assert [(e.src, e.message.request_id) for e in got] == [(0, 1), (1, 3)]
    assert [e.src for e in ctrl.pending()] == [1, 2]  # the others stay, in arrival order
    assert [e.src for e in ctrl.take_all(sources=2)] == [2]
    net.crash(CONTROLLER)
    with pytest.raises(PartyDropped, match="has crashed"):
        ctrl.take_all()
