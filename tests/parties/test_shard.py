"""Party shard host, router and wire format, in one process (no worker processes)."""

from __future__ import annotations

import asyncio
from array import array
import os
from dataclasses import replace
import pickle

import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError, SecureSumAborted
from mprr.privacy import Ask
from mprr.synthetic import planted_clusters
from parties.link import Link
from parties.wire.codec import decode, encode
from parties.wire.messages import RandomizedValues
from parties.router import Router
from parties.runtime import HostingPlan, MemoryRuntime
from parties.secure.pki import PUBLIC_KEY_BYTES, KeyRegistry
from parties.shard import PartyShard, split
from parties.shard_setup import directory
from parties.shard_report import PartySummaries, ShardReport
from parties.simulate import PARTY_KINDS
from parties.transport import CONTROLLER, Frame
from parties.channel import CONTROL, DATA, StreamDecoder, dumps, frame_record, loads, pack_stream, read_record


def test_split_covers_every_party_once() -> None:
    ranges = split(10, 3)
    assert [list(r) for r in ranges] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]
    with pytest.raises(ConfigurationError, match="at most one per party"):
        split(2, 3)
    with pytest.raises(ConfigurationError, match="must be an integer >= 1, got 0"):
        split(5, 0)


def test_frame_records_round_trip_through_a_byte_stream() -> None:
    frames = [Frame(3, CONTROLLER, "collect", RandomizedValues.KIND, encode(RandomizedValues(1, np.array([2])))),
              Frame(CONTROLLER, 4, "phase-ü", 7, b"xyz")]
    data = pack_stream([frame_record(frames[0]), frame_record(frames[1], 5), dumps("hello", {"worker": 1})])
    decoder = StreamDecoder()
    records = decoder.feed(data[:10]) + decoder.feed(data[10:])
    assert [read_record(r) for r in records[:2]] == [(frames[0], None), (frames[1], 5)]
    assert loads(records[2]) == ("hello", {"worker": 1})


def test_control_records_reject_anything_but_mprr_types() -> None:
    class Evil:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (os.system, ("true",))

    record = bytes((CONTROL,)) + pickle.dumps(("setup", Evil()))
    with pytest.raises(MessageError, match="posix.system|os.system"):
        loads(record)
    with pytest.raises(MessageError, match="malformed control record"):
        loads(bytes((CONTROL,)) + b"not a pickle")


def test_a_shard_setup_carries_its_parties_stream_keys_never_the_run_seed() -> None:
    """Issue 25, attack 7.  Before: every ShardSetup carried the run seed, so one worker (with
    the codes the controller received) knew other workers' parties' noise, hence their values."""
    from dataclasses import fields

    from mprr.streams import PartyStreams, StreamTable
    from parties.shard import ShardSetup

    data = planted_clusters(6, rng=np.random.default_rng(1)).dataset
    plan = HostingPlan(n=6, schema=data.schema, records=np.asarray(data.codes), seed=3,
                       budgets=(float("inf"),) * 6, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS))
    setup = plan.setup(range(3, 6))
    assert "seed" not in {f.name for f in fields(ShardSetup)}
    assert isinstance(setup.streams, StreamTable) and setup.streams.parties == range(3, 6)
    sent = loads(dumps("setup", setup))[1]  # what a tcp worker receives
    reference = PartyStreams(3, 6)
    for i in range(3, 6):  # the party's own stream, as the fast path draws it
        expected = np.random.Generator(np.random.PCG64(reference.seed_sequence(i))).random(3)
        stream = sent.streams.stream(i)
        assert [stream.random() for _ in range(3)] == expected.tolist()
    with pytest.raises(ConfigurationError, match=r"streams must be the StreamTable of the hosted parties range\(0, 3\)"):
        PartyShard(replace(plan.setup(range(0, 3)), streams=setup.streams), lambda f: None)


class _Link(Link):
    def __init__(self, parties: range, shard: PartyShard | None = None) -> None:
        self.parties = parties
        self.shard = shard
        self.crashed: list[int] = []

    def push(self, frame: Frame, position: int | None) -> None:
        assert self.shard is not None
        self.shard.deliver(frame, position)

    def crash(self, parties: tuple[int, ...]) -> None:
        self.crashed.extend(parties)

    def buffered(self, party: int) -> int:
        return 0


async def test_router_rejects_frames_a_shard_forges_for_parties_it_does_not_host() -> None:
    net = Router(4)
    link = _Link(range(0, 2))
    net.attach(link)
    payload = encode(RandomizedValues(1, np.array([0])))
    net.ingress(link, Frame(3, CONTROLLER, "collect", RandomizedValues.KIND, payload))  # not its party
    net.ingress(link, Frame(0, CONTROLLER, "collect", RandomizedValues.KIND + 1, payload))  # lying kind
    net.ingress(link, Frame(0, 1, "collect", RandomizedValues.KIND, payload))  # no party link in a star
    assert net.statistics().rejected == 3 and net.statistics().messages == 0
    net.ingress(link, Frame(0, CONTROLLER, "collect", RandomizedValues.KIND, payload))
    env = await net.endpoint(CONTROLLER).recv(timeout=1.0)
    assert env.src == 0 and net.statistics().messages == 1
    with pytest.raises(ConfigurationError, match="overlap"):
        net.attach(_Link(range(1, 3)))


async def test_a_shard_answers_through_the_router_like_parties_in_memory() -> None:
    from parties.runtime import HostingPlan

    data = planted_clusters(6, rng=np.random.default_rng(1)).dataset
    plan = HostingPlan(n=6, schema=data.schema, records=np.asarray(data.codes), seed=3,
                       budgets=(float("inf"),) * 6, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS), fault_seed=3, timeout=5.0)
    net = plan.router()
    links = []
    for r in split(6, 2):
        link = _Link(r)
        shard = PartyShard(plan.setup(r), lambda f, link=link: net.ingress(link, f))
        link.shard = shard
        links.append(link)
        net.attach(link)
    assert net.covered()
    from parties.wire.requests import ReleaseRequest

    request = ReleaseRequest(1, "collect", ((0,),), ((0,),), ("keep-or-uniform",), ((0.7,),))
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(link.shard.serve()) for link in links]
        ctrl = net.endpoint(CONTROLLER)
        await ctrl.broadcast(range(6), request, phase="collect")
        got = await ctrl.gather(range(6), phase="collect", timeout=5.0)
        for link in links:
            link.shard.stop()
    assert sorted(got) == list(range(6)) and all(t.done() for t in tasks)
    reports = [ShardReport.of(link.shard) for link in links]
    net.merge(reports)
    stats = net.statistics()
    assert stats.messages == 12 and stats.delivered == 12
    summaries = PartySummaries(reports, 6)
    assert [s.index for s in summaries] == list(range(6)) and summaries[-1].index == 5
    assert all(len(s.ledger) == 1 and s.accountant.party == s.index for s in summaries)
    # the parties of a shard answered the same request: one shared accountant per shard report
    assert [len(r.accountants) for r in reports] == [1, 1]
    assert [a.ledger for a in summaries.accountants()] == [s.ledger for s in summaries]
    assert [s.released_values for s in summaries] == [tuple(got[i].message.codes.tolist()) for i in range(6)]


# ---------------------------------------------------------------------- secure sums across shards
def _simulate(data, **options):  # type: ignore[no-untyped-def]
    from parties.simulate import simulate_async
    from tests.virtual_clock import run_virtual

    return run_virtual(simulate_async(data, "RR-Clusters", seed=6, timeout=3.0, p=0.7, Tv=60, Td=0.1, **options))


SECURE = [(dependence, engine) for engine in ("paper", "graph", "graph-direct", "masked", "masked-sparse")
          for dependence in ("4.2", "4.3")]


@pytest.mark.parametrize("dependence,engine", SECURE, ids=[f"{d}-{e}" for d, e in SECURE])
def test_secure_sums_across_shards_give_the_memory_result(dependence, engine) -> None:  # type: ignore[no-untyped-def]
    from tests.parties.equivalence import assert_same_runs as _same

    data = planted_clusters(14, rng=np.random.default_rng(2), strength=0.8).dataset
    memory = _simulate(data, dependence=dependence, secure_sum=engine)
    sharded = _simulate(data, dependence=dependence, secure_sum=engine, runtime=MemoryRuntime(shards=3))
    _same(memory, sharded)
    assert sharded.result.details["secure_sum"] == memory.result.details["secure_sum"]
    assert not any(p.errors for p in sharded.parties)
    stats = memory.traffic
    direct = stats.bytes - stats.by_sender[CONTROLLER].bytes - stats.by_receiver[CONTROLLER].bytes
    assert sharded.wire is not None and sharded.wire["party_to_party_bytes"] == direct
    assert (direct > 0) == (engine in ("paper", "graph-direct"))  # shares over direct links, via the router


def test_the_session_rules_hold_for_parties_in_shards() -> None:
    data = planted_clusters(10, rng=np.random.default_rng(2), strength=0.8).dataset
    sim = _simulate(data, dependence="4.2", secure_sum="masked", runtime=MemoryRuntime(shards=2),
                    attacks=["difference-secure-sum"])
    (report,) = sim.attacks  # one session per exact input: every other party refuses the second sum
    assert report.difference is None and report.refused == report.asked == 9
    with pytest.raises(ConfigurationError, match="min_roster must be an integer >= 2, got 1"):
        _simulate(data, dependence="4.3", secure_sum="masked", runtime=MemoryRuntime(shards=2), min_roster=1)
    # a roster below each party's minimum: no party runs the sum, and the controller learns nothing
    with pytest.raises(SecureSumAborted, match="at key advertisement: 0 of 10 parties left"):
        _simulate(data, dependence="4.3", secure_sum="masked", runtime=MemoryRuntime(shards=2), min_roster=11)


def test_signing_keys_are_born_in_the_shard_and_only_public_keys_leave() -> None:
    from parties.runtime import HostingPlan
    from parties.secure.masked import MaskedEngine

    data = planted_clusters(6, rng=np.random.default_rng(1)).dataset
    plan = HostingPlan(n=6, schema=data.schema, records=np.asarray(data.codes), seed=3,
                       budgets=(float("inf"),) * 6, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS), engine=MaskedEngine(),
                       fault_seed=3, timeout=5.0)
    assert plan.signs and b"PRIVATE" not in pickle.dumps(plan.setup(range(0, 3)))  # no key in the setup
    a, b = (PartyShard(plan.setup(r), lambda f: None) for r in split(6, 2))
    keys = directory([(range(3, 6), b.public_keys()), (range(0, 3), a.public_keys())], 6)
    assert len(keys) == 6 * PUBLIC_KEY_BYTES and keys[:3 * PUBLIC_KEY_BYTES] == a.public_keys()
    forged = bytearray(keys)
    forged[0] ^= 1  # the directory substitutes party 0's key: its own shard refuses it
    with pytest.raises(ConfigurationError, match=r"does not hold the own verification keys of parties \[0\]"):
        a.register(bytes(forged))
    a.register(keys)  # all or nothing: the refused directory was installed in no party
    b.register(keys)
    with pytest.raises(ConfigurationError, match="the key directory is installed once"):
        b.register(keys)
    with pytest.raises(ConfigurationError, match="already holds its PKI directory"):
        b.parties[0].register(KeyRegistry.from_keys(range(6), keys))
    with pytest.raises(ConfigurationError, match="no keys registered for parties 0-2"):
        directory([(range(3, 6), b.public_keys())], 6)
    with pytest.raises(ConfigurationError, match="registered 5 bytes, expected 64 per party"):
        directory([(range(0, 3), b"short"), (range(3, 6), b.public_keys())], 6)


def _shard_after_two_requests(budgets: tuple[float, ...]) -> PartyShard:
    """A shard of 4 parties that answered two requests (phase 1 twice: the second is a replay)."""
    from parties.runtime import HostingPlan
    from parties.wire.requests import ReleaseRequest

    data = planted_clusters(4, rng=np.random.default_rng(2)).dataset
    plan = HostingPlan(n=4, schema=data.schema, records=np.asarray(data.codes), seed=5, budgets=budgets,
                       policy="sequential", accept=tuple(k.KIND for k in PARTY_KINDS), fault_seed=5,
                       timeout=5.0)
    shard = PartyShard(plan.setup(range(4)), lambda frame: None)
    request = encode(ReleaseRequest(1, "collect", ((0,), (1,)), ((0,), (1,)), ("keep-or-uniform",) * 2,
                                    ((0.7,),) * 2))
    for _ in range(2):
        for i in range(4):
            shard.deliver(Frame(CONTROLLER, i, "collect", ReleaseRequest.KIND, request))
    return shard


async def test_a_shard_report_shares_one_accountant_between_parties_of_the_same_history() -> None:
    from parties.shard_report import PartySummary

    shard = _shard_after_two_requests((float("inf"), float("inf"), 0.1, float("inf")))  # party 2 refuses
    report = pickle.loads(pickle.dumps(ShardReport.of(shard)))
    assert len(report.accountants) == 2  # parties 0, 1, 3 share one; party 2 refused
    summaries = PartySummaries([report], 4)
    for party, got in zip(shard.parties, summaries):
        want = PartySummary(party.index, party.accountant, party.released_values, party.draws, party.status,
                            tuple(party.errors))
        assert (got.index, got.refusals, got.released_values, got.draws, got.status, got.errors) == (
            want.index, want.refusals, want.released_values, want.draws, want.status, want.errors)
        acc, ref = got.accountant, want.accountant
        assert acc.party == party.index and acc.ledger == ref.ledger and acc.budget == ref.budget
        assert [(r.name, k) for r, k in acc.replays] == [(r.name, k) for r, k in ref.replays]
        assert [r.message for r in acc.refusals] == [r.message for r in ref.refusals]
        assert acc.plans == ref.plans
    assert summaries[2].refusals and summaries[2].accountant.spent() == 0 and len(summaries[0].ledger) == 2
    # each rebuilt accountant is its own: spending through one leaves the others alone
    mine = summaries[0].accountant
    mine.answer(Ask((mine.ledger[0],), mine.ledger[0].phase))
    assert len(mine.replays) == 3 and len(summaries[0].accountant.replays) == len(summaries[1].accountant.replays) == 2


def test_shard_reports_must_cover_the_run_and_be_well_formed() -> None:
    from parties.shard_report import ShardReport

    lost = ShardReport.lost(range(3, 6), (1.0, 2.0, 1.0), "sequential")
    assert len(lost.accountants) == 2
    with pytest.raises(ConfigurationError, match=r"no shard reported parties \[0, 1, 2\]"):
        PartySummaries([lost], 6)
    summaries = PartySummaries([ShardReport.lost(range(0, 3), (1.0,) * 3, "sequential"), lost], 6)
    assert [s.status for s in summaries] == ["lost"] * 6 and summaries[4].accountant.budget == 2.0
    with pytest.raises(MessageError, match=r"draws must be 3 integers, got shape \(2,\)"):
        replace(lost, draws=np.zeros(2, dtype=np.int64))
    with pytest.raises(MessageError, match="indices out of range"):
        replace(lost, accountant_of=np.array([0, 1, 2]))


async def test_a_multicast_link_sends_a_broadcast_as_one_record() -> None:
    from parties.channel import MULTI, RecordBatcher, read_multi

    class Link(RecordBatcher):
        multicast = True

        def __init__(self) -> None:
            super().__init__()
            self.records: list[bytes] = []

        def _write(self, records: list[bytes]) -> None:
            self.records.extend(records)

    link = Link()
    request, other = b"x" * 40, b"y" * 7
    for dst in (4, 9, 2):
        link.send_frame(Frame(CONTROLLER, dst, "collect", 11, request), None)
    link.send_frame(Frame(CONTROLLER, 5, "collect", 11, other), None)
    link.send_control("crash", (3,))
    link.send_frame(Frame(CONTROLLER, 6, "collect", 11, request), 0)  # a reorder position: its own record
    await asyncio.sleep(0)
    assert [r[0] for r in link.records] == [MULTI, DATA, CONTROL, DATA]
    frame, dsts = read_multi(link.records[0])
    assert dsts.tolist() == [4, 9, 2] and frame == Frame(CONTROLLER, 4, "collect", 11, request)
    assert read_record(link.records[1]) == (Frame(CONTROLLER, 5, "collect", 11, other), None)
    assert read_record(link.records[3]) == (Frame(CONTROLLER, 6, "collect", 11, request), 0)
    assert link.sent["payload"] == 4 * 40 + 7 and link.sent["multicast_saved"] == 2 * 40
    wire = sum(len(r) for r in link.records)
    assert wire == link.sent["payload"] + link.sent["framing"] + link.sent["control"] - link.sent["multicast_saved"]
    with pytest.raises(MessageError, match="multi record shorter"):
        read_multi(link.records[0][:-45])


async def test_a_shard_takes_a_multi_record_for_all_its_receivers_at_once() -> None:
    """A request in one MULTI record: decoded once, answered for every receiver as the same
    request in one DATA record each would be; bytes that do not decode are rejected per receiver."""
    from parties.channel import frame_record, multi_record
    from parties.runtime import HostingPlan
    from parties.wire.requests import ReleaseRequest

    data = planted_clusters(6, rng=np.random.default_rng(2)).dataset
    plan = HostingPlan(n=6, schema=data.schema, records=np.asarray(data.codes), seed=5, budgets=(9.0,) * 6,
                       policy="sequential", accept=tuple(k.KIND for k in PARTY_KINDS))
    request = encode(ReleaseRequest(1, "collect", ((0,), (1,)), ((0,), (1,)), ("keep-or-uniform",) * 2,
                                    ((0.7,),) * 2))
    frame = Frame(CONTROLLER, 1, "collect", ReleaseRequest.KIND, request)
    replies: list[list[Frame]] = [[], []]
    shards = [PartyShard(plan.setup(range(6)), replies[k].append) for k in range(2)]
    shards[0].take(multi_record(frame, array("i", [1, 2, 4, 5])))
    for dst in (1, 2, 4, 5):
        shards[1].take(frame_record(frame._replace(dst=dst)))
    await asyncio.sleep(0)
    assert [(f.src, f.payload) for f in replies[0]] == [(f.src, f.payload) for f in replies[1]]
    assert [f.src for f in replies[0]] == [1, 2, 4, 5]
    assert shards[0].network.counter.snapshot() == shards[1].network.counter.snapshot()
    bad = PartyShard(plan.setup(range(6)), replies[0].append)
    bad.take(multi_record(frame._replace(payload=request[:-3]), array("i", [0, 3])))
    assert bad.network.counter.faults["rejected"] == 2


def _graph_plan(n: int) -> HostingPlan:
    """The hosting plan of ``n`` planted parties that run the graph engine."""
    from parties.secure.graph import GraphEngine

    data = planted_clusters(n, rng=np.random.default_rng(2)).dataset
    return HostingPlan(n=n, schema=data.schema, records=np.asarray(data.codes), seed=5,
                       budgets=(float("inf"),) * n, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS), engine=GraphEngine(),
                       fault_seed=5, timeout=5.0)


async def test_a_shard_keeps_secure_sum_traffic_for_the_engine_and_crashes_parties() -> None:
    from parties.secure.messages import SurvivorSet, id_vector
    from parties.wire.messages import Ack
    from parties.wire.requests import SecureRelease

    plan = _graph_plan(4)
    sent: list[Frame] = []
    shard = PartyShard(plan.setup(range(4)), sent.append)
    commit = encode(SecureRelease(1, "dependence", "s1", ((0, 1),), ((0, 1),), True))
    for _ in range(2):  # a re-sent commitment is acknowledged again, and booked once
        shard.deliver(Frame(CONTROLLER, 0, "dependence", SecureRelease.KIND, commit))
    await asyncio.sleep(0)  # replies leave on the next turn of the loop
    assert [f.kind for f in sent] == [Ack.KIND, Ack.KIND]
    party = shard.parties[0]
    assert len(party.ledger) == 1 and party.ledger[0].exact and not party.ledger[0].linkable
    # the engine's traffic (here a controller's survivor set) waits for the party's program
    told = SurvivorSet("s1", id_vector((0, 1)))
    shard.deliver(Frame(CONTROLLER, 0, "dependence", SurvivorSet.KIND, encode(told)))
    assert shard.buffered(0) == 1
    assert party.errors == []
    shard.crash([1])
    assert shard.parties[1].status == "crashed"
    shard.deliver(Frame(CONTROLLER, 1, "dependence", SecureRelease.KIND, commit))
    assert len(shard.parties[1].ledger) == 0 and shard.network._traffic.faults["lost_to_crash"] == 1


async def test_a_shard_takes_messages_of_its_process_for_its_parties_programs_as_frames_would_be() -> None:
    from parties.secure.messages import SurvivorSet, id_vector
    from parties.wire.messages import Ack
    from parties.wire.requests import SecureRelease

    plan = _graph_plan(6)
    told = [SurvivorSet("s1", id_vector(tuple(range(k + 1)))) for k in range(5)]
    sizes = [len(encode(m)) for m in told]
    each, frames = (PartyShard(plan.setup(range(4)), [].append) for _ in range(2))
    framed: list[int] = []  # the receivers whose message reached their program as a frame
    deliver = each._sums.deliver

    def spy(frame: Frame, position: int | None = None) -> None:
        framed.append(frame.dst)
        deliver(frame, position)

    each._sums.deliver = spy  # type: ignore[method-assign]

    def both(dsts: list[int]) -> None:
        each.deliver_each(CONTROLLER, "dependence", SurvivorSet.KIND, dsts, told[:len(dsts)], sizes[:len(dsts)])
        for dst, msg in zip(dsts, told):
            frames.deliver(Frame(CONTROLLER, dst, "dependence", SurvivorSet.KIND, encode(msg)))
        assert [each.buffered(p) for p in range(4)] == [frames.buffered(p) for p in range(4)]
        assert each.network.counter.snapshot() == frames.network.counter.snapshot()

    both([3, 0, 1])  # every receiver hosted and running: the messages go to their programs as they are
    assert framed == [] and [each.buffered(p) for p in range(4)] == [1, 1, 0, 1]
    assert each.network.counter.recv_bytes[1:5].tolist() == [sizes[1], sizes[2], 0, sizes[0]]
    for shard in (each, frames):
        shard.crash([2])
    both([1, 0, 5, 2, 3])  # party 5 is not hosted (rejected), party 2 crashed (lost): frame by frame
    assert framed == [1, 0, 3] and [each.buffered(p) for p in range(4)] == [2, 2, 0, 2]
    assert each.network.counter.faults["rejected"] == 1 and each.network.counter.faults["lost_to_crash"] == 1
    sent: list[Frame] = []  # a request of the controller is the party's to answer, frame by frame
    shard = PartyShard(plan.setup(range(4)), sent.append)
    commit = SecureRelease(1, "dependence", "s1", ((0, 1),), ((0, 1),), True)
    shard.deliver_each(CONTROLLER, "dependence", SecureRelease.KIND, [0, 1], [commit, commit], [0, 0])
    await asyncio.sleep(0)
    assert [(f.src, f.kind) for f in sent] == [(0, Ack.KIND), (1, Ack.KIND)]


async def test_a_host_told_to_accept_a_kind_it_does_not_know_serves_the_kinds_it_does() -> None:
    """A set-up may name a kind this process has no class for (an engine registered at the
    controller only, or a lie): the host drops it from its accept set and decodes the frames it
    can (before, decoding failed for every frame that crossed as bytes: no party answered and
    the run timed out)."""
    from parties.channel import frame_record
    from parties.runtime import HostingPlan
    from parties.wire.requests import ReleaseRequest

    data = planted_clusters(4, rng=np.random.default_rng(1)).dataset
    plan = HostingPlan(n=4, schema=data.schema, records=np.asarray(data.codes), seed=3,
                       budgets=(float("inf"),) * 4, policy="sequential",
                       accept=(*(k.KIND for k in PARTY_KINDS), 65_000), fault_seed=3, timeout=5.0)
    up: list[Frame] = []
    shard = PartyShard(plan.setup(range(4)), up.append)
    request = ReleaseRequest(1, "collect", ((0,),), ((0,),), ("keep-or-uniform",), ((0.7,),))
    async with asyncio.TaskGroup() as tg:
        serving = tg.create_task(shard.serve())
        for dst in range(4):  # as bytes, as from another process
            assert shard.take(frame_record(Frame(CONTROLLER, dst, "collect", ReleaseRequest.KIND,
                                                 encode(request)))) is None
        for _ in range(100):
            await asyncio.sleep(0)
            if len(up) == 4:
                break
        shard.stop()
    assert serving.done() and sorted(f.src for f in up) == [0, 1, 2, 3]
    assert all(decode(f.payload).KIND == RandomizedValues.KIND for f in up)
