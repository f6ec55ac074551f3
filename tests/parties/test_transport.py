"""parties.transport: topology, endpoints, buffering, filtered receive, gather, timeouts."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import networkx as nx

from mprr.errors import ConfigurationError, MessageError, PartyDropped, ProtocolError, RoundTimeout
from parties.wire.codec import encode
from parties.wire.messages import Abort, Ack, RandomizedValues
from parties.network import CONTROLLER, FaultPlan, Frame, InMemoryNetwork
from tests.parties.transport_helpers import ChaosTransport, Probe, answer_requests, identity_matrix
from tests.virtual_clock import run_virtual

T = 0.05  # tiny timeouts keep the failure tests fast


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_invalid_party_count(n: object) -> None:
    with pytest.raises(ConfigurationError, match="n \\(number of parties\\) must be an integer >= 1"):
        InMemoryNetwork(n)  # type: ignore[arg-type]


def test_endpoints_are_cached_and_checked() -> None:
    net = InMemoryNetwork(2)
    assert net.endpoint(1) is net.endpoint(1)
    with pytest.raises(ProtocolError, match="actor must be CONTROLLER"):
        net.endpoint(2)


# ------------------------------------------------------------------ send / recv


async def test_request_reply_inside_a_task_group() -> None:
    net = InMemoryNetwork(2)
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


async def test_unmatched_messages_stay_buffered_in_arrival_order() -> None:
    net = InMemoryNetwork(3)
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
    net = InMemoryNetwork(2)
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
    net = InMemoryNetwork(1)
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
    net = InMemoryNetwork(5)
    ctrl = net.endpoint(CONTROLLER)
    with pytest.raises(RoundTimeout, match=r"phase 'collect': controller timed out after 0.05 s waiting for RandomizedValues from party 3, party 4") as info:
        await ctrl.recv(kinds=RandomizedValues, sources=[4, 3], phase="collect", timeout=T)
    assert info.value.phase == "collect" and info.value.missing == (3, 4) and info.value.timeout == T
    with pytest.raises(RoundTimeout, match=r"phase '\(any\)': party 0 timed out .* waiting for any message") as info:
        await net.endpoint(0).recv(timeout=T)
    assert info.value.missing == ()


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "1"])
async def test_timeout_must_be_positive(timeout: object) -> None:
    net = InMemoryNetwork(1)
    with pytest.raises(ConfigurationError, match="timeout must be > 0 seconds or None"):
        await net.endpoint(0).recv(timeout=timeout)  # type: ignore[arg-type]


async def test_phase_must_be_a_non_empty_string() -> None:
    net = InMemoryNetwork(1)
    with pytest.raises(ConfigurationError, match="phase must be a non-empty string, got ''"):
        await net.endpoint(0).send(CONTROLLER, Ack(1), phase="")
    with pytest.raises(ConfigurationError, match="phase must be a non-empty string"):
        net.begin_round("")


async def test_a_cancelled_recv_loses_nothing() -> None:
    net = InMemoryNetwork(1)
    ctrl = net.endpoint(CONTROLLER)
    task = asyncio.create_task(ctrl.recv(kinds=Ack, timeout=None))
    await asyncio.sleep(0)
    task.cancel()
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="p")  # delivered as the recv is cancelled
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e.message for e in ctrl.pending()] == [Ack(1)]


async def test_rejected_frames_are_counted_against_their_sender_and_fail_no_receive() -> None:
    # Before: a rejected frame failed whichever recv was waiting, whatever its filter.
    net = InMemoryNetwork(2)
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
    net = InMemoryNetwork(2)
    ctrl = net.endpoint(CONTROLLER)
    await net.endpoint(1).send(CONTROLLER, Ack(5), phase="p")
    env = await ctrl.recv(timeout=T)
    ctrl.reject(env, "request 5 was never sent")
    assert dict(net.statistics().rejected_by_sender) == {1: 1}
    assert ctrl.take_rejections()[1].reason == "request 5 was never sent"


# ------------------------------------------------------------------ gather


async def test_gather_collects_one_message_per_source() -> None:
    net = InMemoryNetwork(4)
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
    net = InMemoryNetwork(4)
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
    net = InMemoryNetwork(1)
    assert await net.endpoint(CONTROLLER).gather([], timeout=T) == {}


# ------------------------------------------------------------------ crash


async def test_crash_wakes_the_receiver_and_silences_the_actor() -> None:
    net = InMemoryNetwork(2)
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


# ------------------------------------------------------------------ send_each / recv_many


async def _send_to_all(net: InMemoryNetwork, bulk: bool) -> None:
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
        net = InMemoryNetwork(5, topology=nx.complete_graph(5), faults=faults, seed=3)
        await _send_to_all(net, bulk)
        got = [[e.message for e in net.endpoint(k).pending()] for k in range(1, 5)]
        runs.append((got, net.statistics().to_dict(), net.crashed))
    assert runs[0] == runs[1]
    if faults is not None and faults.crash:  # the crash at the k-th send: the first k - 1 arrive
        k = faults.crash[0]
        assert runs[1][0] == [[Ack(j)] if j < k - 1 else [] for j in range(4)]
        assert runs[1][1]["faults"]["lost_to_crash"] == 4 - (k - 1)


async def test_send_each_refuses_everything_or_sends_everything() -> None:
    net = InMemoryNetwork(3)  # star: party 0 reaches only the controller
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


async def test_recv_many_waits_for_the_first_and_takes_what_else_arrived() -> None:
    net = InMemoryNetwork(2)
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


async def test_gather_sources_must_be_actors() -> None:
    net = InMemoryNetwork(2)
    with pytest.raises(ProtocolError, match="gather source must be CONTROLLER .* got 7"):
        await net.endpoint(CONTROLLER).gather([0, 7], timeout=T)


# ------------------------------------------------------------------ model-based buffering check

_KINDS = (Ack, Abort)


@settings(max_examples=60, deadline=None)
@given(
    sends=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(_KINDS), st.sampled_from(["a", "b"])), max_size=25),
    takes=st.lists(
        st.tuples(
            st.none() | st.sampled_from(_KINDS),
            st.none() | st.frozensets(st.integers(0, 3), min_size=1),
            st.none() | st.sampled_from(["a", "b"]),
        ),
        max_size=25,
    ),
)
def test_recv_returns_the_oldest_matching_message(sends: list, takes: list) -> None:
    """Against a plain list model: every recv takes the oldest match, nothing is lost or doubled."""

    async def run() -> None:
        net = InMemoryNetwork(4)
        ctrl = net.endpoint(CONTROLLER)
        model = []
        for seq, (src, kind, phase) in enumerate(sends):
            msg = Ack(seq) if kind is Ack else Abort(f"m{seq}")
            await net.endpoint(src).send(CONTROLLER, msg, phase=phase)
            model.append((src, kind, phase, msg))
        for kind, sources, phase in takes:
            match = next(
                (m for m in model
                 if (kind is None or m[1] is kind) and (sources is None or m[0] in sources)
                 and (phase is None or m[2] == phase)),
                None,
            )
            if match is None:
                with pytest.raises(RoundTimeout):
                    await ctrl.recv(kinds=kind, sources=sources, phase=phase, timeout=0.001)
                continue
            env = await ctrl.recv(kinds=kind, sources=sources, phase=phase, timeout=0.001)
            assert (env.src, type(env.message), env.phase, env.message) == match
            model.remove(match)
        assert [e.message for e in ctrl.pending()] == [m[3] for m in model]

    run_virtual(run())


@settings(max_examples=60, deadline=None)
@given(
    sends=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(_KINDS), st.sampled_from(["a", "b"])), max_size=25),
    takes=st.lists(
        st.tuples(
            st.none() | st.sampled_from(_KINDS),
            st.none() | st.frozensets(st.integers(0, 3), min_size=1),
            st.none() | st.sampled_from(["a", "b"]),
        ),
        max_size=6,
    ),
)
def test_recv_many_returns_every_matching_message_oldest_first(sends: list, takes: list) -> None:
    """Against a plain list model: recv_many takes every match in arrival order, the rest stays."""

    async def run() -> None:
        net = InMemoryNetwork(4)
        ctrl = net.endpoint(CONTROLLER)
        model = []
        for seq, (src, kind, phase) in enumerate(sends):
            msg = Ack(seq) if kind is Ack else Abort(f"m{seq}")
            await net.endpoint(src).send(CONTROLLER, msg, phase=phase)
            model.append((src, kind, phase, msg))
        for kind, sources, phase in takes:
            matches = [m for m in model if (kind is None or m[1] is kind) and (sources is None or m[0] in sources)
                       and (phase is None or m[2] == phase)]
            if not matches:
                with pytest.raises(RoundTimeout):
                    await ctrl.recv_many(kinds=kind, sources=sources, phase=phase, timeout=0.001)
                continue
            got = await ctrl.recv_many(kinds=kind, sources=sources, phase=phase, timeout=0.001)
            assert [(e.src, type(e.message), e.phase, e.message) for e in got] == matches
            model = [m for m in model if m not in matches]
        assert [e.message for e in ctrl.pending()] == [m[3] for m in model]

    run_virtual(run())
