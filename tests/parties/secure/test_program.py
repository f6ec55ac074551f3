"""The sans-I/O program model (parties.secure.program): a fake two-role sum driven by hand, by
the asyncio driver over an in-memory network, and by the counting driver."""

from __future__ import annotations

import asyncio
from typing import Any

import networkx as nx
import numpy as np
import pytest

from mprr.errors import ConfigurationError, RoundTimeout
from parties.network import InMemoryNetwork
from parties.secure.messages import PartialSum
from parties.secure.program import (
    Broadcast,
    Delivery,
    Expect,
    Mark,
    Poll,
    Program,
    Reject,
    Send,
    SendEach,
    receive,
)
from parties.secure.counting import count
from parties.secure.drive import drive
from parties.secure.sizing import SizeByShape
from parties.secure.pki import setup_pki
from parties.topology import CONTROLLER
from parties.wire.codec import encode

S = "sess"


def vec(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint8)


def party(me: int, x: np.ndarray, timeout: float = 1.0) -> Program[int]:
    """Send x to the controller; wait for the total it broadcasts back."""
    yield Send(CONTROLLER, PartialSum(S, -1, x), phase="up")
    got = yield from receive(Expect(PartialSum, S, (CONTROLLER,), "down", timeout))
    if got.timed_out:
        raise RoundTimeout("no total", phase="down", timeout=timeout, missing=got.missing)
    return int(got.messages[CONTROLLER].values.sum())


def controller(parties: tuple[int, ...], timeout: float = 1.0) -> Program[int]:
    """Mark the round, add the parties' vectors as they arrive (streamed), broadcast the total."""
    yield Mark("up")
    expect = Expect(PartialSum, S, parties, "up", timeout, stream=True)
    total = np.zeros(2, dtype=np.uint8)
    while True:
        got = yield expect
        assert got is not None
        for src, msg in got.others:
            yield Reject(src, msg, "up", "a second message")
        for msg in got.messages.values():
            total = total + msg.values
        if got.done:
            break
    if got.timed_out:
        raise RoundTimeout("missing", phase="up", timeout=timeout, missing=got.missing)
    yield Broadcast(parties, PartialSum(S, -1, total), phase="down")
    return int(total.sum())


def test_program_driven_by_hand() -> None:
    """The model itself: operations out, deliveries in, no I/O."""
    p = party(0, vec(1, 2))
    op = next(p)
    assert isinstance(op, Send) and op.to == CONTROLLER and op.phase == "up"
    expect = p.send(None)
    assert isinstance(expect, Expect) and expect.sources == (CONTROLLER,) and expect.kind is PartialSum
    with pytest.raises(StopIteration) as stop:
        p.send(Delivery({CONTROLLER: PartialSum(S, -1, vec(4, 5))}))
    assert stop.value.value == 9

    c = controller((0, 1))
    assert next(c) == Mark("up")
    ex = c.send(None)
    assert isinstance(ex, Expect) and ex.stream
    assert c.send(Delivery({0: PartialSum(S, -1, vec(1, 2))}, missing=(1,), done=False)) is ex
    dup = PartialSum(S, -1, vec(9, 9))
    rejected = c.send(Delivery({1: PartialSum(S, -1, vec(3, 4))}, others=((0, dup),)))
    assert rejected == Reject(0, dup, "up", "a second message")
    out = c.send(None)
    assert isinstance(out, Broadcast) and out.to == (0, 1) and out.message.values.tolist() == [4, 6]


def test_program_hand_timeout() -> None:
    c = controller((0, 1))
    next(c)
    ex = c.send(None)
    with pytest.raises(RoundTimeout, match="missing"):
        c.send(Delivery({}, missing=(0, 1), done=True, timed_out=True))
    assert isinstance(ex, Expect)


def test_expect_accepts_filters_session_and_where() -> None:
    ex = Expect(PartialSum, S, (0,), "up", 1.0, where=lambda m: m.combination == 3)
    assert ex.accepts(PartialSum(S, 3, vec(1)))
    assert not ex.accepts(PartialSum(S, 2, vec(1)))
    assert not ex.accepts(PartialSum("other", 3, vec(1)))


def test_send_each_needs_one_message_per_destination() -> None:
    with pytest.raises(ConfigurationError, match="one message per destination, got 1 messages for 2"):
        SendEach((0, 1), (PartialSum(S, -1, vec(1)),), "p")


async def _run(net: InMemoryNetwork, programs: dict[int, Program[Any]]) -> dict[int, Any]:
    async with asyncio.TaskGroup() as tg:
        tasks = {a: tg.create_task(drive(net.endpoint(a), p)) for a, p in programs.items()}
    return {a: t.result() for a, t in tasks.items()}


def _programs(xs: list[np.ndarray]) -> dict[int, Program[Any]]:
    roster = tuple(range(len(xs)))
    return {CONTROLLER: controller(roster), **{i: party(i, x) for i, x in enumerate(xs)}}


async def test_asyncio_driver_runs_the_sum() -> None:
    xs = [vec(1, 2), vec(3, 0), vec(0, 1)]
    net = InMemoryNetwork(3)
    results = await _run(net, _programs(xs))
    assert results == {CONTROLLER: 7, 0: 7, 1: 7, 2: 7}


async def test_asyncio_driver_one_timeout_per_round() -> None:
    """Party 2 never sends: the controller's round ends at its timeout (virtual clock), naming it."""
    xs = [vec(1, 2), vec(3, 0)]
    net = InMemoryNetwork(3)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(RoundTimeout, match="missing") as err:
        await drive(net.endpoint(CONTROLLER), _with_parties(net, xs, controller((0, 1, 2), timeout=0.5)))
    assert err.value.missing == (2,)
    assert loop.time() - start == pytest.approx(0.5)


def _with_parties(net: InMemoryNetwork, xs: list[np.ndarray], ctrl: Program[int]) -> Program[int]:
    for i, x in enumerate(xs):
        asyncio.get_running_loop().create_task(drive(net.endpoint(i), party(i, x, timeout=5.0)))
    return ctrl


async def test_asyncio_driver_poll_does_not_wait() -> None:
    def poller() -> Program[Delivery[Any]]:
        ex = Expect(PartialSum, S, (0,), "up", 0.2, stream=True)
        got = yield Poll(ex)
        assert got is not None and not got.messages and got.missing == (0,) and not got.done
        last = yield ex
        assert last is not None
        return last

    net = InMemoryNetwork(1)
    got = await drive(net.endpoint(CONTROLLER), poller())
    assert got.timed_out and got.missing == (0,)


def test_counting_driver_equals_the_network() -> None:
    xs = [vec(1, 2), vec(3, 0), vec(0, 1)]
    counted = count(_programs(xs))
    assert dict(counted.results) == {CONTROLLER: 7, 0: 7, 1: 7, 2: 7}
    net = InMemoryNetwork(3)
    asyncio.run(_run(net, _programs(xs)))
    measured = net.statistics()
    for field in ("messages", "bytes", "rounds", "by_sender", "by_kind", "by_phase"):
        assert getattr(counted.statistics, field) == getattr(measured, field), field
    one = len(encode(PartialSum(S, -1, vec(1, 2))))
    assert counted.statistics.bytes == 6 * one  # 3 up, 3 down, all the same size
    assert counted.sent()[CONTROLLER] == (3, 3 * one)


def test_counting_driver_times_out_a_missing_party() -> None:
    programs = {CONTROLLER: controller((0, 1)), 0: party(0, vec(1, 1))}
    with pytest.raises(RoundTimeout, match="missing") as err:
        count(programs)
    assert err.value.missing == (1,)


def test_drivers_refuse_a_foreign_yield() -> None:
    def bad() -> Program[None]:
        yield "send"  # type: ignore[misc]

    with pytest.raises(ConfigurationError, match="must yield an Operation, got 'send'"):
        count({0: bad()})
    net = InMemoryNetwork(1, topology=nx.complete_graph(1))
    with pytest.raises(ConfigurationError, match="must yield an Operation"):
        asyncio.run(drive(net.endpoint(0), bad()))


@pytest.mark.parametrize(("engine", "n", "L"), [("paper", 5, 7), ("paper-per-combination", 3, 2),
                                                ("graph", 9, 5), ("graph-direct", 9, 5)])
def test_size_by_shape_is_the_codec_size_of_every_message(engine: str, n: int, L: int) -> None:
    """One encoding per message shape gives every message's codec size: checked on every
    message of real sums (the counting driver sizes each with both)."""
    from parties.secure.cost import counted_cost
    from parties.secure.registry import sized_engine

    by_shape = SizeByShape()
    checked: list[int] = []

    def both(message: Any) -> int:
        size = len(encode(message))
        assert by_shape(message) == size, message.NAME
        checked.append(size)
        return size

    eng = sized_engine(engine, degree=4, round_timeout=5.0)
    signers, registry = setup_pki(range(n))
    ctx = eng.context(range(n), L, session="s" * 16, registry=registry)
    programs = {CONTROLLER: eng.controller_program(ctx),
                **{p: eng.party_program(p, np.zeros(L, np.uint8), ctx, signer=signers[p]) for p in range(n)}}
    counted = count(programs, size=both)
    assert len(checked) == counted.statistics.messages > 0
    assert counted.statistics.bytes == sum(checked) == counted_cost(eng, ctx).bytes


def test_counting_stops_at_its_limit_with_a_lower_bound() -> None:
    from parties.secure.cost import counted_cost
    from parties.secure.paper import PaperEngine

    eng = PaperEngine()
    ctx = eng.context(range(12), 3, session="s")
    full = counted_cost(eng, ctx)
    assert full.exact and full.messages == 12 * 23
    bounded = counted_cost(eng, ctx, limit=50, mirror=False)
    assert not bounded.exact and 50 < bounded.messages < full.messages
    assert bounded.formula.startswith("at least (stopped after 50 messages routed) counted (paper, n = 12, L = 3)")
    assert counted_cost(eng, ctx, limit=50).exact  # (mirrored: 11 shares and 12 + 12 partials routed)


def test_counting_stops_as_soon_as_the_traffic_crosses_a_threshold() -> None:
    """A warning's threshold: the count stops at the first send that crosses it, with a lower
    bound above the threshold (mirrored or not)."""
    from parties.secure.cost import counted_cost
    from parties.secure.paper import PaperEngine
    from parties.traffic import Counts

    eng = PaperEngine(yield_every=1)
    ctx = eng.context(range(40), 3, session="s")
    full = counted_cost(eng, ctx)
    for mirror in (True, False):
        by_messages = counted_cost(eng, ctx, threshold=Counts(100, full.bytes), mirror=mirror)
        assert not by_messages.exact and 100 < by_messages.messages < full.messages
        assert by_messages.formula.startswith("at least (stopped after 100 messages or")
        by_bytes = counted_cost(eng, ctx, threshold=Counts(full.messages, full.bytes // 3), mirror=mirror)
        assert not by_bytes.exact and full.bytes // 3 < by_bytes.bytes < full.bytes
    assert counted_cost(eng, ctx, threshold=Counts(full.messages, full.bytes)).exact


def test_a_round_that_is_over_cannot_be_expected_again() -> None:
    """Both drivers refuse a program that yields the expectation of a round already over (it
    would wait for sources that already answered)."""
    def twice() -> Program[None]:
        ex = Expect(PartialSum, S, (0,), "up", 0.5, stream=True)
        got = yield ex
        assert got is not None and got.done
        yield Poll(ex)

    def sender() -> Program[None]:
        yield Send(CONTROLLER, PartialSum(S, -1, vec(1)), phase="up")

    with pytest.raises(ConfigurationError, match="the round of phase 'up' is over"):
        count({CONTROLLER: twice(), 0: sender()})

    async def run() -> None:
        net = InMemoryNetwork(1)
        await drive(net.endpoint(0), sender())
        await drive(net.endpoint(CONTROLLER), twice())

    with pytest.raises(ConfigurationError, match="the round of phase 'up' is over"):
        asyncio.run(run())


@pytest.mark.parametrize(("engine", "n", "L"), [("paper", 6, 5), ("paper-per-combination", 3, 2),
                                                ("graph", 9, 5), ("graph-direct", 9, 5)])
def test_counting_with_the_sizing_suite_equals_counting_with_the_real_cryptography(engine: str, n: int,
                                                                                   L: int) -> None:
    """parties.secure.suite.SIZING: right-sized stand-ins give every actor's traffic exactly."""
    from parties.secure.cost import counted_cost
    from parties.secure.registry import sized_engine
    from parties.secure.suite import REAL, SIZING

    eng = sized_engine(engine, degree=4, round_timeout=5.0)
    ctx = eng.context(range(n), L, session="s" * 45)
    sized, real = counted_cost(eng, ctx, suite=SIZING), counted_cost(eng, ctx, suite=REAL)
    assert dict(sized.sent) == dict(real.sent) and sized.rounds == real.rounds and sized.exact


def _engine_programs(eng: Any, ctx: Any, parties: Any) -> dict[int, Program[Any]]:
    from parties.secure.suite import SIZING

    from dataclasses import replace
    ctx = replace(ctx, suite=SIZING)
    zero = np.zeros(ctx.length, np.uint8)
    return {CONTROLLER: eng.controller_program(ctx), **{p: eng.party_program(p, zero, ctx) for p in parties}}


@pytest.mark.parametrize(("engine", "n", "L", "degree"), [
    ("paper", 2, 3, 4), ("paper", 7, 5, 4), ("paper", 300, 4, 4), ("paper-per-combination", 5, 3, 4),
    ("graph-direct", 10, 5, 4), ("graph-direct", 31, 3, 6), ("graph-direct", 5, 2, 8),
    ("graph-relay", 10, 5, 4), ("graph-relay", 31, 3, 6), ("graph-relay", 5, 2, 8)])
def test_a_mirrored_count_equals_the_full_count(engine: str, n: int, L: int, degree: int) -> None:
    """Role-symmetric sums (SecureSumEngine.symmetric): one party's program run against mirrored
    peers gives every actor's traffic, every kind, phase and round of the full count (n = 300:
    the paper ring's cells take 2 bytes; relayed graph shares: the controller gets each party's
    counterpart of the representative's sealed shares, SecureSumEngine.counterpart)."""
    from parties.secure.graph import GraphEngine
    from parties.secure.registry import sized_engine

    eng = (GraphEngine(degree=degree, relay=True, round_timeout=5.0) if engine == "graph-relay"
           else sized_engine(engine, degree=degree, round_timeout=5.0))
    network = None if engine == "graph-relay" else InMemoryNetwork(n, topology=nx.complete_graph(n))
    ctx = eng.context(range(n), L, session="s" * 16, network=network)
    assert eng.symmetric(ctx) and ctx.relay == (engine == "graph-relay")
    full = count(_engine_programs(eng, ctx, ctx.parties), size=SizeByShape())
    mirrored = count(_engine_programs(eng, ctx, ctx.parties[:1]), size=SizeByShape(), mirror=ctx.parties,
                     counterpart=lambda m, p: eng.counterpart(m, p, ctx))
    assert full.complete and mirrored.complete
    for name in ("messages", "bytes", "delivered", "rounds", "simulated_time", "by_sender", "by_receiver",
                 "by_kind", "by_phase", "round_log"):
        assert getattr(mirrored.statistics, name) == getattr(full.statistics, name), name
    assert dict(mirrored.sent()) == dict(full.sent())
    assert np.array_equal(mirrored.results[CONTROLLER].total, full.results[CONTROLLER].total)


def test_sums_that_are_not_role_symmetric_are_counted_in_full() -> None:
    """A Harary graph with one vertex of higher degree (odd n and k) is not symmetric:
    counted_cost runs every party's program, the mirrored count would differ."""
    from parties.secure.cost import counted_cost
    from parties.secure.graph import GraphEngine

    harary = GraphEngine(topology="harary", degree=3, relay=False)
    ctx = harary.context(range(9), 3, session="s")
    assert not harary.symmetric(ctx)
    loads = {c for a, c in counted_cost(harary, ctx).sent.items() if a != CONTROLLER}
    assert len(loads) == 2  # (the one vertex of degree 4 sends one share more)
    mirrored = count(_engine_programs(harary, ctx, ctx.parties[:1]), size=SizeByShape(), mirror=ctx.parties)
    assert mirrored.statistics.messages != counted_cost(harary, ctx).messages


def test_a_mirrored_count_needs_the_controller_and_one_party() -> None:
    with pytest.raises(ConfigurationError, match=r"one party of the roster, got programs for actors \[-1, 0, 1\]"):
        count(_programs([vec(1), vec(2)]), mirror=(0, 1))
