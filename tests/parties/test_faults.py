"""parties.faults: seeded drop / duplicate / delay / reorder / crash on the in-memory network."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mprr.errors import ConfigurationError, PartyDropped, RoundTimeout
from parties.faults import FaultDecision, FaultInjector, FaultPlan
from parties.wire.messages import Ack, RandomizedValues
from parties.router import Router
from parties.transport import CONTROLLER
from tests.parties.transport_helpers import Probe, answer_requests, identity_matrix

T = 0.05


async def _flood(net: Router, n: int, per: int) -> list[tuple[int, int]]:
    """Every party sends ``per`` Acks to the controller; return (src, id) in buffer order."""
    for k in range(per):
        for i in range(n):
            await net.endpoint(i).send(CONTROLLER, Ack(k, (i,)), phase="flood")
    return [(e.src, e.message.request_id) for e in net.endpoint(CONTROLLER).pending()]


# ------------------------------------------------------------------ plan validation


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"drop": 1.5}, r"FaultPlan\.drop must be a real number in \[0, 1\] \(a probability\), got 1\.5"),
        ({"duplicate": -0.1}, r"FaultPlan\.duplicate must be a real number in \[0, 1\]"),
        ({"delay": True}, r"FaultPlan\.delay must be a real number in \[0, 1\] \(a probability\), got True"),
        ({"reorder": "0.5"}, r"FaultPlan\.reorder must be a real number in \[0, 1\]"),
        ({"drop": float("nan")}, r"FaultPlan\.drop must be a real number in \[0, 1\] \(a probability\), got nan"),
        ({"max_delay": 0}, r"FaultPlan\.max_delay must be a finite number > 0, got 0"),
        ({"max_delay": float("inf")}, r"FaultPlan\.max_delay must be a finite number > 0, got inf"),
        ({"max_delay": True}, r"FaultPlan\.max_delay must be a finite number > 0, got True"),
        ({"crash": {3: 0}}, r"FaultPlan\.crash\[3\] must be the send number \(>= 1\) at which it crashes, got 0"),
        ({"crash": {-2: 1}}, r"FaultPlan\.crash keys must be actor ids >= -1, got -2"),
    ],
)
def test_invalid_plans_are_rejected(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ConfigurationError, match=pattern):
        FaultPlan(**kwargs)


def test_plan_is_frozen_and_normalised() -> None:
    plan = FaultPlan(drop=1, crash={2: 3}, phases=["collect"], senders=[1, 2])
    assert plan.drop == 1.0 and isinstance(plan.drop, float)
    assert plan.phases == frozenset({"collect"}) and plan.senders == frozenset({1, 2})
    with pytest.raises(TypeError):
        plan.crash[5] = 1  # type: ignore[index]
    assert not FaultPlan(crash={1: 1}).probabilistic and plan.probabilistic


def test_injector_seed_is_checked() -> None:
    with pytest.raises(ConfigurationError, match="seed must be an integer >= 0, got -1"):
        FaultInjector(FaultPlan(), -1)


def test_injector_decisions_depend_only_on_seed_and_link_order() -> None:
    plan = FaultPlan(drop=0.3, duplicate=0.3, delay=0.3, reorder=0.3)
    a, b = FaultInjector(plan, 9), FaultInjector(plan, 9)
    assert [a.decide(i % 3, -1, "p") for i in range(200)] == [b.decide(i % 3, -1, "p") for i in range(200)]
    c = FaultInjector(plan, 10)
    assert [c.decide(0, -1, "p") for _ in range(200)] != [FaultInjector(plan, 9).decide(0, -1, "p") for _ in range(200)]
    delays = [d.delay for d in (a.decide(0, -1, "p") for _ in range(300)) if d.delay]
    assert delays and all(0 < x <= plan.max_delay for x in delays)


def test_decisions_do_not_depend_on_how_links_interleave() -> None:
    # the k-th message of a link gets the same decision whatever came in between on other
    # links: what tcp/ray need, where workers' frames reach the router in their own order
    plan = FaultPlan(drop=0.3, duplicate=0.3, delay=0.3, reorder=0.3)
    links = [(s, d) for s in range(-1, 4) for d in range(-1, 4) if s != d]
    order = [link for _ in range(20) for link in links]
    shuffled = list(order)
    np.random.default_rng(1).shuffle(shuffled)

    def per_link(sequence: list[tuple[int, int]]) -> dict[tuple[int, int], list[FaultDecision]]:
        inj = FaultInjector(plan, 4)
        out: dict[tuple[int, int], list[FaultDecision]] = {}
        for s, d in sequence:
            out.setdefault((s, d), []).append(inj.decide(s, d, "p"))
        return out

    assert per_link(order) == per_link(shuffled)
    assert per_link(order)[(0, 1)] != per_link(order)[(1, 0)]  # links draw different streams


def test_fault_rates_match_the_plan() -> None:
    # 4,000 messages at p = 0.2: the drop count is Binomial(4000, 0.2), sd ~ 25.3; 5 sd bounds
    inj = FaultInjector(FaultPlan(drop=0.2, reorder=0.5), 3)
    ds = [inj.decide(i % 40, -1, "p") for i in range(4000)]
    assert abs(sum(d.drop for d in ds) - 800) < 5 * (4000 * 0.2 * 0.8) ** 0.5
    assert abs(sum(d.reorder for d in ds) - 2000) < 5 * (4000 * 0.25) ** 0.5
    assert all(0 <= d.position(7) <= 7 for d in ds) and {d.position(3) for d in ds} == {0, 1, 2, 3}


# ------------------------------------------------------------------ each fault


async def test_drop_everything_counts_sent_but_delivers_nothing() -> None:
    net = Router(3, faults=FaultPlan(drop=1.0))
    assert await _flood(net, 3, 2) == []
    s = net.statistics()
    assert s.messages == 6 and s.delivered == 0 and s.dropped == 6
    with pytest.raises(RoundTimeout, match="waiting for Ack from party 0"):
        await net.endpoint(CONTROLLER).recv(kinds=Ack, sources=[0], timeout=T)


async def test_duplicate_delivers_every_message_twice() -> None:
    net = Router(2, faults=FaultPlan(duplicate=1.0))
    assert await _flood(net, 2, 1) == [(0, 0), (0, 0), (1, 0), (1, 0)]
    s = net.statistics()
    assert s.messages == 2 and s.delivered == 4 and s.duplicated == 2
    assert s.received_by(CONTROLLER).messages == 4


async def test_reorder_permutes_the_buffer_reproducibly() -> None:
    orders = []
    for seed in (4, 4, 5):
        net = Router(6, faults=FaultPlan(reorder=1.0), seed=seed)
        orders.append(await _flood(net, 6, 3))
    in_send_order = [(i, k) for k in range(3) for i in range(6)]
    assert sorted(orders[0]) == sorted(in_send_order) and orders[0] != in_send_order
    assert orders[0] == orders[1] and orders[0] != orders[2]
    assert net.statistics().reordered == 18


async def test_delay_holds_messages_for_a_few_milliseconds() -> None:
    net = Router(3, faults=FaultPlan(delay=1.0, max_delay=0.004), seed=2)
    assert await _flood(net, 3, 1) == []
    ctrl = net.endpoint(CONTROLLER)
    env = await ctrl.recv(sources=[1], timeout=1.0)  # waits for the delayed one
    assert env.src == 1
    assert {(await ctrl.recv(timeout=1.0)).src for _ in range(2)} == {0, 2}
    assert ctrl.buffered == 0 and net.statistics().delayed == 3


async def test_delayed_duplicates_and_close() -> None:
    net = Router(1, faults=FaultPlan(delay=1.0, duplicate=1.0, max_delay=0.005), seed=1)
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="p")
    assert net.endpoint(CONTROLLER).buffered == 0
    net.close()  # a run that ends early cancels pending deliveries
    await asyncio.sleep(0.05)  # 10x the longest delay: without close both copies would be here
    assert net.endpoint(CONTROLLER).buffered == 0


async def test_faults_can_be_limited_to_phases_and_senders() -> None:
    net = Router(3, faults=FaultPlan(drop=1.0, phases={"noisy"}, senders={1}))
    ctrl = net.endpoint(CONTROLLER)
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="noisy")
    await net.endpoint(1).send(CONTROLLER, Ack(2), phase="quiet")
    await net.endpoint(1).send(CONTROLLER, Ack(3), phase="noisy")  # the only one dropped
    assert [e.message.request_id for e in ctrl.pending()] == [1, 2]
    assert net.statistics().dropped == 1


async def test_mixed_faults_are_reproducible_from_the_seed() -> None:
    plan = FaultPlan(drop=0.2, duplicate=0.2, reorder=0.3)
    results = []
    for seed in (11, 11, 12):
        net = Router(8, faults=plan, seed=seed)
        order = await _flood(net, 8, 4)
        s = net.statistics()
        results.append((order, s.dropped, s.duplicated, s.reordered))
    assert results[0] == results[1]
    assert results[0] != results[2]
    order, dropped, duplicated, _ = results[0]
    assert len(order) == 32 - dropped + duplicated and dropped > 0 and duplicated > 0


# ------------------------------------------------------------------ crash


async def test_crash_at_the_kth_send() -> None:
    net = Router(3, faults=FaultPlan(crash={2: 2}))
    ctrl = net.endpoint(CONTROLLER)
    p2 = net.endpoint(2)
    for k in range(3):
        await p2.send(CONTROLLER, Ack(k), phase="p")  # 1st delivered; 2nd and 3rd vanish
    assert [e.message.request_id for e in ctrl.pending()] == [0]
    assert net.crashed == frozenset({2}) and p2.crashed
    with pytest.raises(PartyDropped, match="party 2 has crashed"):
        await p2.recv(timeout=T)
    await ctrl.send(2, Ack(9), phase="p")  # lost: the party is gone
    s = net.statistics()
    assert s.messages == 2 and s.sent_by(2).messages == 1 and s.lost_to_crash == 3
    assert s.crashed == (2,) and s.received_by(2).messages == 0


async def test_a_crashed_party_makes_the_round_time_out_naming_it() -> None:
    n = 5
    net = Router(n, faults=FaultPlan(crash={3: 1}))  # party 3 dies at its first send
    ctrl = net.endpoint(CONTROLLER)

    async def party(i: int) -> None:
        try:
            await answer_requests(net.endpoint(i), 1, timeout=1.0)
        except PartyDropped:
            return  # the crashed actor's task ends quietly: it is dead

    async def controller() -> None:
        with net.round("collect"):
            await ctrl.broadcast(range(n), Probe(1, (0,), identity_matrix(2)), phase="collect")
            await ctrl.gather(range(n), kinds=RandomizedValues, phase="collect", timeout=T)

    with pytest.raises(ExceptionGroup) as info:
        async with asyncio.TaskGroup() as tg:
            for i in range(n):
                tg.create_task(party(i))
            tg.create_task(controller())
    (error,) = info.value.exceptions
    assert isinstance(error, RoundTimeout) and error.missing == (3,)
    assert "from party 3 (4 of 5 arrived)" in str(error)
    assert net.crashed == frozenset({3})
