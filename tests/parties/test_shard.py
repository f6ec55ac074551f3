"""Party shard host, router and wire format, in one process (no worker processes)."""

from __future__ import annotations

import asyncio
import os
import pickle

import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.wire.codec import encode
from parties.wire.messages import RandomizedValues
from parties.router import RouterNetwork
from parties.shard import PartyShard, party_seed, split
from parties.simulate import PARTY_KINDS
from parties.transport import CONTROLLER, Frame
from parties.channel import CONTROL, StreamDecoder, dumps, frame_record, loads, pack_stream, read_record


def test_party_seed_is_the_party_stream_of_the_run() -> None:
    streams = PartyStreams(7, 50)
    for i in (0, 13, 49):
        a = np.random.Generator(np.random.PCG64(party_seed(7, i))).random(3)
        b = np.random.Generator(np.random.PCG64(streams.seed_sequence(i))).random(3)
        assert np.array_equal(a, b)


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


class _Link:
    def __init__(self, parties: range, shard: PartyShard | None = None) -> None:
        self.parties = parties
        self.shard = shard
        self.crashed: list[int] = []

    def push(self, frame: Frame, position: int | None) -> None:
        assert self.shard is not None
        self.shard.deliver(frame, position)

    def crash(self, parties: tuple[int, ...]) -> None:
        self.crashed.extend(parties)


async def test_router_rejects_frames_a_shard_forges_for_parties_it_does_not_host() -> None:
    net = RouterNetwork(4)
    link = _Link(range(0, 2))
    net.attach(link)
    payload = encode(RandomizedValues(1, np.array([0])))
    await net.ingress(link, Frame(3, CONTROLLER, "collect", RandomizedValues.KIND, payload))  # not its party
    await net.ingress(link, Frame(0, CONTROLLER, "collect", RandomizedValues.KIND + 1, payload))  # lying kind
    await net.ingress(link, Frame(0, 1, "collect", RandomizedValues.KIND, payload))  # no party link in a star
    assert net.statistics().rejected == 3 and net.statistics().messages == 0
    await net.ingress(link, Frame(0, CONTROLLER, "collect", RandomizedValues.KIND, payload))
    env = await net.endpoint(CONTROLLER).recv(timeout=1.0)
    assert env.src == 0 and net.statistics().messages == 1
    with pytest.raises(ConfigurationError, match="overlap"):
        net.attach(_Link(range(1, 3)))


async def test_a_shard_answers_through_the_router_like_parties_in_memory() -> None:
    from parties.runtime import HostingPlan

    data = planted_clusters(6, rng=np.random.default_rng(1)).dataset
    plan = HostingPlan(6, data.schema, np.asarray(data.codes), 3, (float("inf"),) * 6, "sequential",
                       tuple(k.KIND for k in PARTY_KINDS), None, None, 3, 5.0)
    net = plan.network()
    links = []
    for r in split(6, 2):
        link = _Link(r)
        shard = PartyShard(plan.setup(r), lambda f, link=link: asyncio.get_running_loop().create_task(
            net.ingress(link, f)))
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
    reports = [link.shard.report() for link in links]
    net.merge(reports)
    stats = net.statistics()
    assert stats.messages == 12 and stats.delivered == 12
    assert [s.index for r in reports for s in r.summaries] == list(range(6))
    assert all(len(s.ledger) == 1 for r in reports for s in r.summaries)
