"""Reply columns: one shard's replies to a release request carried as columns (parties.columns),
on every link: in this process, and between processes as one ``COLUMNS`` record (its wire form,
the codec's ReplyBlock) — a malformed record or one speaking for parties its link does not host
is rejected, never the run's end (fuzzed and attacked below).  Message columns: a host's
secure-sum messages of one turn, counted and delivered as each member's own frame would be."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mprr.data import Attribute, Schema
from mprr.errors import MessageError
from mprr.synthetic import planted_clusters
from parties.channel import COLUMNS, MIN_COLUMNS, RecordBatcher, column_frames, columns_record, read_columns
from parties.cohort import ReplyLayout
from parties.columns import MessageColumns, MessageOutbox, ReplyColumns
from parties.controller import CONTROLLER_KINDS
from parties.faults import FaultPlan
from parties.router import Router
from parties.runtime import HostingPlan, MemoryRuntime
from parties.tcp import TcpHosting
from parties.simulate import simulate
from parties.traffic import ActorCounts, Counts
from parties.secure.messages import SurvivorSet, id_vector
from parties.transport import CONTROLLER, Frame
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

    async def run() -> tuple[dict[int, RandomizedValues], Router]:
        net = Router(3)
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
def test_one_shard_and_three_give_the_same_view_and_traffic(faults: FaultPlan | None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    data = planted_clusters(40, rng=np.random.default_rng(5), strength=0.8).dataset
    checked: list[tuple[bool, int]] = []  # (checked, members) of every ingress_columns
    ingress = Router.ingress_columns

    def spy(self: Router, link: object, block: ReplyColumns, *, checked_: bool = False,
            **kwargs: bool) -> None:
        checked.append((kwargs.get("checked", checked_), len(block)))
        ingress(self, link, block, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Router, "ingress_columns", spy)
    runs = []
    for shards in (1, 3):
        checked.clear()
        runs.append(simulate(data, "RR-Clusters", seed=4, timeout=3.0, p=0.7, Tv=60, Td=0.1, dependence="4.1",
                             runtime=MemoryRuntime(shards=shards), faults=faults))
        # every reply of the run came as columns: from the shared shard, or checked at ingress
        assert {c for c, _ in checked} == {shards == 1} and sum(k for _, k in checked) == runs[-1].traffic.by_kind[
            "RandomizedValues"].messages
    one, three = runs
    if faults is None:
        from tests.parties.equivalence import assert_same_runs as _same

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


# ------------------------------------------------------------------ between processes: one COLUMNS record


def _block(srcs: list[int], rid: int = 3, phase: str = "collect") -> ReplyColumns:
    codes = (np.arange(len(srcs) * 2, dtype=np.int64).reshape(len(srcs), 2) * 7) % 11
    codes.flags.writeable = False
    return ReplyLayout.of(rid, codes).columns(np.array(srcs, dtype=np.int64), phase, slice(0, len(srcs)))


def test_a_columns_record_carries_every_members_message_and_size() -> None:
    block = _block(list(range(10, 20)))
    record = columns_record(block)
    assert record is not None and record[0] == COLUMNS
    back = read_columns(record)
    assert back.srcs.tolist() == block.srcs.tolist() and back.phase == "collect" and back.request_id == 3
    assert back.sizes.tolist() == block.sizes.tolist()
    assert [back.payload(k) for k in range(10)] == [encode(RandomizedValues(3, block.codes[k])) for k in range(10)]
    # the members' shared layout crosses once: the record is smaller than their messages
    assert len(record) < int(block.sizes.sum())
    few = _block(list(range(MIN_COLUMNS - 1)))
    assert columns_record(few) is None  # (fewer: one DATA record each)
    assert [(f.src, f.payload) for f in column_frames(few)] == [(k, few.payload(k)) for k in range(MIN_COLUMNS - 1)]


class _Link(RecordBatcher):
    """A shard link hosting ``parties`` (what TcpHosting counts on a worker's link)."""

    prefix = 4

    def __init__(self, parties: range) -> None:
        super().__init__()
        self.parties = parties
        self.pushed: list[object] = []

    def _write(self, records: list[bytes]) -> None:
        raise AssertionError("nothing is sent down this link")

    def push(self, frame: object, position: int | None) -> None:
        self.pushed.append(frame)

    def crash(self, parties: object) -> None:
        pass

    def buffered(self, party: int) -> int:
        return 0


def _hosting(n: int = 32) -> tuple[TcpHosting, _Link]:
    """A controller process's hosting of ``n`` parties, a worker link hosting parties 8-15."""
    schema = Schema((Attribute("a", ("x", "y"), "nominal"),))
    plan = HostingPlan(n=n, schema=schema, records=np.zeros((n, 1), dtype=int), seed=1,
                       budgets=(float("inf"),) * n, policy="sequential", accept=(RandomizedValues.KIND,))
    hosting = TcpHosting(plan, tls=False, expected=None)
    link = _Link(range(8, 16))
    hosting.router.attach(link)  # type: ignore[arg-type]
    hosting.router.endpoint(CONTROLLER, accept=CONTROLLER_KINDS)
    return hosting, link


@pytest.mark.parametrize("srcs", [[16, 17, 18, 19, 20, 21, 22, 23], [8, 9, 10, 11, 12, 13, 14, 16],
                                  [0, 9, 10, 11, 12, 13, 14, 15]], ids=["foreign", "one-past", "one-before"])
def test_a_worker_cannot_speak_for_parties_it_does_not_host(srcs: list[int]) -> None:
    hosting, link = _hosting()
    record = columns_record(_block(srcs))
    assert record is not None
    hosting.columns_in(link, record)
    ctrl = hosting.router.endpoint(CONTROLLER)
    assert ctrl.buffered == 0  # nothing reached the controller, nothing was counted as sent
    stats = hosting.router.statistics()
    assert stats.messages == 0 and stats.rejected == len(srcs)
    honest = columns_record(_block(list(range(8, 16))))
    assert honest is not None
    hosting.columns_in(link, honest)  # the same link's own parties still get through
    assert sorted(env.src for env in ctrl.pending()) == list(range(8, 16))


def test_columns_only_of_parties_the_topology_links_with_the_controller() -> None:
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(32))
    graph.add_edges_from((CONTROLLER, p) for p in range(32) if p != 12)  # party 12: no link to the controller
    net = Router(32, topology=graph)
    link = _Link(range(8, 16))
    net.attach(link)  # type: ignore[arg-type]
    net.endpoint(CONTROLLER)
    net.ingress_columns(link, _block(list(range(8, 16))))  # type: ignore[arg-type]
    assert net.statistics().rejected == 8 and net.endpoint(CONTROLLER).buffered == 0


def test_fuzzed_columns_records_are_rejected_or_carry_only_the_links_own_parties() -> None:
    """Thousands of malformed COLUMNS records from one worker (bit flips, truncations, padding,
    random bytes, forged headers): none raises; each is dropped (counted ``rejected``, noted in the
    problems) or decodes into columns of the link's own parties whose every member is its own
    valid message; the honest record after them still arrives."""
    rng = np.random.default_rng(2028)
    hosting, link = _hosting()
    honest = columns_record(_block(list(range(8, 16)), rid=9))
    assert honest is not None
    forged = [columns_record(_block(srcs, rid=9)) for srcs in ([16 + k for k in range(8)], list(range(4, 12)))]
    tries, decoded = 3000, 0
    for t in range(tries):
        how = t % 5
        if how == 0:
            record = bytes((COLUMNS,)) + rng.bytes(int(rng.integers(0, 200)))
        elif how == 1:
            record = honest[: int(rng.integers(0, len(honest)))]
        elif how == 2:
            buf = bytearray(honest)
            for _ in range(int(rng.integers(1, 4))):
                buf[int(rng.integers(1, len(buf)))] ^= 1 << int(rng.integers(8))
            record = bytes(buf)
        elif how == 3:
            record = honest + rng.bytes(int(rng.integers(1, 16)))
        else:
            record = forged[t % 2] or b""
        try:
            read_columns(record)
            decoded += 1
        except MessageError:
            pass
        hosting.columns_in(link, record)
    ctrl = hosting.router.endpoint(CONTROLLER)
    got = ctrl.pending()
    assert all(8 <= env.src < 16 for env in got)  # never a party another link hosts
    for env in got:  # each member is a valid message of its own, at the codec size of its bytes
        assert isinstance(env.message, RandomizedValues) and env.size == len(encode(env.message))
    stats = hosting.router.statistics()
    assert stats.messages == len(got) and stats.rejected >= tries - decoded
    assert len(hosting.problems) == tries - decoded  # each undecodable record noted once
    assert all("reply columns rejected" in line for line in hosting.problems)
    before = len(got)
    hosting.columns_in(link, honest)
    assert ctrl.buffered == before + 8


def test_a_shard_forging_the_replies_of_another_shards_parties_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory, 3 shards: before each of its reply columns, a shard sends the same codes as the
    replies of the next shard's parties (they would reach the controller's gather first).  The
    router rejects every forged member; the run ends with the honest run's releases, clusters
    and view."""
    from parties import runtime as runtime_module

    data = planted_clusters(60, rng=np.random.default_rng(5), strength=0.8).dataset
    kwargs = dict(seed=4, timeout=3.0, p=0.7, Tv=60, Td=0.1, dependence="4.1")
    honest = simulate(data, "RR-Clusters", runtime=MemoryRuntime(shards=3), **kwargs)  # type: ignore[arg-type]
    forged_members = []
    uplink = runtime_module.LocalLink.uplink_columns

    def forging(self: runtime_module.LocalLink, block: ReplyColumns) -> None:
        wire = block.wire()
        assert wire is not None
        others = (block.srcs + len(self.parties)) % 60  # the next shard's parties
        self.router.ingress_columns(self, ReplyColumns(others, wire.phase, wire.request_id, wire.codes,  # type: ignore[arg-type]
                                                        wire.prefix, wire.suffix))
        forged_members.append(len(block))
        uplink(self, block)

    monkeypatch.setattr(runtime_module.LocalLink, "uplink_columns", forging)
    attacked = simulate(data, "RR-Clusters", runtime=MemoryRuntime(shards=3), **kwargs)  # type: ignore[arg-type]
    assert forged_members and attacked.traffic.rejected == sum(forged_members)
    assert attacked.traffic.messages == honest.traffic.messages and attacked.view == honest.view
    assert attacked.result.clusters == honest.result.clusters
    assert all(np.array_equal(a.codes, b.codes) for a, b in zip(attacked.result.releases, honest.result.releases))
    assert [(e.src, e.phase, e.size) for e in attacked.view_log] == [(e.src, e.phase, e.size) for e in honest.view_log]


# ------------------------------------------------------------------ a host's secure-sum messages of one turn


def _survivors(srcs: list[int]) -> tuple[list[SurvivorSet], list[bytes]]:
    msgs = [SurvivorSet("s", id_vector(tuple(range(p + 1)))) for p in srcs]  # (of different sizes)
    return msgs, [encode(m) for m in msgs]


def _sizes(payloads: list[bytes]) -> list[int]:
    return [len(p) for p in payloads]


def test_message_columns_keep_each_members_message_and_size_and_give_back_its_bytes() -> None:
    msgs, payloads = _survivors([4, 1, 7])
    block = MessageColumns([4, 1, 7], "told", SurvivorSet.KIND, msgs, _sizes(payloads))
    assert len(block) == 3 and block.srcs.tolist() == [4, 1, 7]
    assert [block.message(k) for k in range(3)] == msgs and [block.payload(k) for k in range(3)] == payloads
    assert block.sizes.tolist() == [len(p) for p in payloads]
    part = block.subset(np.array([True, False, True]))
    assert part.srcs.tolist() == [4, 7] and part.message(1) == msgs[2] and part.sizes.tolist() == [len(payloads[0]),
                                                                                                   len(payloads[2])]
    assert len(block.subset(np.zeros(3, dtype=bool))) == 0


def test_message_columns_refuse_ragged_columns_repeated_senders_and_mixed_kinds() -> None:
    msgs, payloads = _survivors([1, 2])
    with pytest.raises(ValueError, match="one message and one size per sender, got 3 senders, 2 messages"):
        MessageColumns([1, 2, 3], "told", SurvivorSet.KIND, msgs, _sizes(payloads))
    with pytest.raises(ValueError, match=r"distinct senders, got \[2, 2\]"):
        MessageColumns([2, 2], "told", SurvivorSet.KIND, msgs, _sizes(payloads))
    with pytest.raises(ValueError, match=f"kind {RandomizedValues.KIND} only, got kinds \\[{SurvivorSet.KIND}\\]"):
        MessageColumns([1, 2], "told", RandomizedValues.KIND, msgs, _sizes(payloads))


def _one_by_one(srcs: list[int], msgs: list[SurvivorSet], payloads: list[bytes]) -> Router:
    async def run() -> Router:
        net = Router(9)
        for p, m, b in zip(srcs, msgs, payloads):
            net.ingress(None, Frame(p, CONTROLLER, "told", m.KIND, b, m), checked=True)  # type: ignore[arg-type]
        return net

    return asyncio.run(run())


def test_message_columns_are_counted_and_delivered_as_each_members_own_frame_would_be() -> None:
    srcs = [5, 0, 3]
    msgs, payloads = _survivors(srcs)

    async def run() -> tuple[list[tuple[int, object, int]], Router]:
        net = Router(9)
        ctrl = net.endpoint(CONTROLLER)
        waiting = asyncio.ensure_future(ctrl.gather_columns(srcs, kinds=SurvivorSet, timeout=1.0))
        await asyncio.sleep(0)  # (a columnar gather waits: message columns still arrive as envelopes)
        net.ingress_columns(None, MessageColumns(srcs, "told", SurvivorSet.KIND, msgs, _sizes(payloads)),  # type: ignore[arg-type]
                            checked=True)
        got, blocks = await waiting
        assert blocks == []
        return [(p, env.message, env.size) for p, env in got.items()], net

    got, net = asyncio.run(run())
    assert got == [(p, m, len(b)) for p, m, b in zip(srcs, msgs, payloads)]
    assert net.counter.snapshot() == _one_by_one(srcs, msgs, payloads).counter.snapshot()


def test_message_columns_from_a_shard_not_sharing_the_network_are_checked_at_ingress() -> None:
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(9))
    graph.add_edges_from((CONTROLLER, p) for p in range(9) if p != 2)  # party 2: no link to the controller
    msgs, payloads = _survivors([1, 2])

    async def run() -> Router:
        net = Router(9, topology=graph)
        link = _Link(range(0, 9))
        net.attach(link)  # type: ignore[arg-type]
        net.ingress_columns(link, MessageColumns([1, 2], "told", SurvivorSet.KIND, msgs, _sizes(payloads)))  # type: ignore[arg-type]
        assert net.endpoint(CONTROLLER).buffered == 0
        net.ingress_columns(link, MessageColumns([1, 3], "told", SurvivorSet.KIND, msgs, _sizes(payloads)))  # type: ignore[arg-type]
        assert net.endpoint(CONTROLLER).buffered == 2
        return net

    net = asyncio.run(run())
    assert net.counter.faults["rejected"] == 2 and net.counter.messages == 2


def test_a_masked_sum_sent_up_as_columns_equals_one_sent_frame_by_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    from parties.party_sum import PartySums
    from tests.parties.equivalence import assert_same_runs

    data = planted_clusters(24, rng=np.random.default_rng(8), strength=0.8).dataset
    blocks: list[int] = []
    ingress = Router.ingress_columns

    def spy(self: Router, link: object, block: object, **kwargs: bool) -> None:
        if isinstance(block, MessageColumns):
            blocks.append(len(block))
        ingress(self, link, block, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Router, "ingress_columns", spy)

    def run() -> object:
        return simulate(data, "RR-Clusters", seed=2, timeout=30.0, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                        secure_sum="masked-sparse", runtime=MemoryRuntime())

    columns = run()
    assert sum(blocks) == 5 * data.n and max(blocks) == data.n  # (every party's five messages, a round at a time)
    init = PartySums.__init__

    def frame_by_frame(self: PartySums, *args: object, **kwargs: object) -> None:
        init(self, *args, **{**kwargs, "columns": None})  # type: ignore[arg-type]

    monkeypatch.setattr(PartySums, "__init__", frame_by_frame)
    blocks.clear()
    frames = run()
    assert blocks == []
    assert_same_runs(columns, frames)


def test_an_outbox_keeps_one_block_per_phase_and_kind_in_order_and_a_senders_second_message_starts_another() -> None:
    from parties.secure.messages import SurvivorSet, id_vector

    def told(*ids: int) -> SurvivorSet:
        return SurvivorSet("s", id_vector(ids))

    outbox = MessageOutbox()
    assert outbox.add(3, "a", told(3), 10)  # (the first message: the outbox was empty)
    assert not outbox.add(1, "b", told(1), 11)
    assert not outbox.add(1, "a", told(1), 12)
    assert not outbox.add(3, "a", told(3, 4), 13)  # 3's second message of phase "a": a new block
    blocks = outbox.take()
    assert [(b.srcs.tolist(), b.phase, b.sizes.tolist()) for b in blocks] == [
        ([3, 1], "a", [10, 12]), ([1], "b", [11]), ([3], "a", [13])]
    assert blocks[2].message(0) == told(3, 4) and outbox.take() == []
