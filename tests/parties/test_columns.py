"""Reply columns: one shard's replies to a release request carried as columns (parties.columns)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mprr.synthetic import planted_clusters
from parties.cohort import ReplyLayout
from parties.columns import ReplyColumns
from parties.faults import FaultPlan
from parties.network import InMemoryNetwork
from parties.runtime import MemoryRuntime
from parties.simulate import simulate
from parties.traffic import ActorCounts, Counts
from parties.transport import CONTROLLER
from parties.view import ViewLog
from parties.wire.codec import encode
from parties.wire.messages import RandomizedValues


def _codes() -> np.ndarray:
    return np.array([[1, 2, 3], [0, 0, 7], [4, 5, 0]], dtype=np.int64)


def test_each_member_is_its_own_message_with_the_codecs_bytes() -> None:
    codes = _codes()
    block = ReplyLayout.of(9, codes).columns(np.array([4, 5, 6]), "collect", slice(0, 3))
    plain = ReplyColumns(np.array([4, 5, 6]), "collect", 9, codes, None, b"")  # (each encoded by the codec)
    for k in range(3):
        expected = encode(RandomizedValues(9, codes[k]))
        assert block.payload(k) == plain.payload(k) == expected
        assert block.message(k) == RandomizedValues(9, codes[k])
    assert block.sizes.tolist() == plain.sizes.tolist() == [len(encode(RandomizedValues(9, codes[0])))] * 3
    part = block.subset(np.array([False, True, True]))
    assert part.srcs.tolist() == [5, 6] and part.payload(0) == block.payload(1) and part.request_id == 9


def test_the_view_keeps_columns_as_the_messages_they_carry() -> None:
    codes = _codes()
    block = ReplyLayout.of(3, codes).columns(np.array([0, 2, 1]), "collect", slice(0, 3))
    view = ViewLog()
    view.record_columns(block)
    assert [(e.src, e.phase, e.size) for e in view] == [(0, "collect", block.payload(0).__len__()),
                                                          (2, "collect", len(block.payload(1))),
                                                          (1, "collect", len(block.payload(2)))]
    assert [e.message for e in view] == [RandomizedValues(3, codes[k]) for k in range(3)]
    assert view.summary().bytes == int(block.sizes.sum()) and view.summary().by_kind == {"RandomizedValues": 3}


def test_columns_counted_per_sender_and_delivered_to_a_plain_gather_as_envelopes() -> None:
    codes = _codes()
    block = ReplyLayout.of(2, codes).columns(np.array([0, 1, 2]), "collect", slice(0, 3))

    async def run() -> tuple[dict[int, RandomizedValues], InMemoryNetwork]:
        net = InMemoryNetwork(3)
        ctrl = net.endpoint(CONTROLLER)
        net.ingress_columns(None, block, checked=True)  # type: ignore[arg-type]  # (checked, no fault plan: the link is not used)
        got = await ctrl.gather([0, 1, 2], kinds=RandomizedValues, timeout=1.0)
        return {p: env.message for p, env in got.items()}, net

    got, net = asyncio.run(run())
    assert got == {k: RandomizedValues(2, codes[k]) for k in range(3)}
    stats = net.statistics()
    size = len(encode(RandomizedValues(2, codes[0])))
    assert dict(stats.by_sender) == {k: Counts(1, size) for k in range(3)}
    assert stats.by_receiver[CONTROLLER] == Counts(3, 3 * size) and stats.messages == 3


def test_actor_counts_is_a_mapping_of_the_actors_with_traffic() -> None:
    counts = ActorCounts([2, 0, 1, 0], [40, 0, 9, 0])  # indexed actor + 1
    assert counts == {-1: Counts(2, 40), 1: Counts(1, 9)} and len(counts) == 2 and list(counts) == [-1, 1]
    assert counts.get(0) is None and counts[np.int64(1)] == Counts(1, 9)
    with pytest.raises(KeyError):
        counts[5]


@pytest.mark.parametrize("faults", [None, FaultPlan(duplicate=0.2)], ids=["columns", "per-message"])
def test_one_shard_and_three_give_the_same_view_and_traffic(faults: FaultPlan | None) -> None:
    data = planted_clusters(40, rng=np.random.default_rng(5), strength=0.8).dataset
    runs = [simulate(data, "RR-Clusters", seed=4, timeout=3.0, p=0.7, Tv=60, Td=0.1, dependence="4.1",
                     runtime=MemoryRuntime(shards=shards), faults=faults) for shards in (1, 3)]
    one, three = runs
    if faults is None:
        from tests.parties.test_tcp import _same

        _same(one, three)  # (releases, ledgers, every traffic count)
    for name in ("messages", "bytes", "by_sender", "by_kind", "by_phase", "duplicated"):
        assert getattr(one.traffic, name) == getattr(three.traffic, name), name
    assert sorted((e.src, e.phase, e.size) for e in one.view_log) == sorted((e.src, e.phase, e.size) for e in three.view_log)


@pytest.mark.parametrize("srcs", [[5, 3, 4], [90, 3]], ids=["dense", "sparse"])
def test_record_columns_counts_as_one_send_per_sender(srcs: list[int]) -> None:
    from parties.traffic import TrafficCounter

    sizes = np.array([30 + k for k in range(len(srcs))], dtype=np.int64)
    columns, one_by_one = TrafficCounter(100), TrafficCounter(100)
    columns.record_columns(np.array(srcs, dtype=np.int64), "collect", RandomizedValues.KIND, sizes)
    columns.record_deliveries_to(np.array(srcs, dtype=np.int64), 7)
    for src, size in zip(srcs, sizes.tolist()):
        one_by_one.record_send(src, "collect", RandomizedValues.KIND, size)
        one_by_one.record_delivery(src, 7)
    assert columns.snapshot() == one_by_one.snapshot()
