"""parties.traffic: counts per sender/receiver/kind/phase, rounds and simulated time (exact)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.wire.codec import encode
from parties.wire.messages import Ack, RandomizedValues, Refusal
from parties.router import Router
from parties.traffic import LatencyModel
from parties.transport import CONTROLLER
from parties.traffic import ActorStatistics, Counts, PhaseCounts, RoundRecord
from tests.parties.transport_helpers import Probe, identity_matrix

REQ = Probe(1, (0,), identity_matrix(3))
REQ_SIZE = 5 + 8 + 12 + 90  # header, id, attributes (count + one int), 3x3 float64 matrix (code, ndim, shape, data)
REPLY_SIZE = 5 + 8 + 18 + 4  # header, id, one-element int64 array, ids
REFUSAL = Refusal(1, "budget", 1.0, 0.0)
REFUSAL_SIZE = 5 + 8 + (4 + 6) + 8 + 8


async def _exchange(net: Router) -> None:
    """Controller asks 3 parties; each replies; party 1 also refuses once."""
    ctrl = net.endpoint(CONTROLLER)
    with net.round("request"):
        await ctrl.broadcast(range(3), REQ, phase="request")
    with net.round("collect"):
        for i in range(3):
            await net.endpoint(i).send(CONTROLLER, RandomizedValues(1, [i]), phase="collect")
        await net.endpoint(1).send(CONTROLLER, REFUSAL, phase="collect")


def test_sizes_used_below_are_the_real_encoded_sizes() -> None:
    assert len(encode(REQ)) == REQ_SIZE == 115
    assert len(encode(RandomizedValues(1, [2]))) == REPLY_SIZE == 35
    assert len(encode(REFUSAL)) == REFUSAL_SIZE == 39


async def test_counts_match_hand_computed_bytes() -> None:
    net = Router(3)
    await _exchange(net)
    s = net.statistics()
    assert s.messages == 7 and s.delivered == 7
    assert s.bytes == 3 * REQ_SIZE + 3 * REPLY_SIZE + REFUSAL_SIZE == 489
    assert s.by_sender == {
        CONTROLLER: Counts(3, 3 * REQ_SIZE),
        0: Counts(1, REPLY_SIZE),
        1: Counts(2, REPLY_SIZE + REFUSAL_SIZE),
        2: Counts(1, REPLY_SIZE),
    }
    assert s.by_receiver == {
        CONTROLLER: Counts(4, 3 * REPLY_SIZE + REFUSAL_SIZE),
        0: Counts(1, REQ_SIZE),
        1: Counts(1, REQ_SIZE),
        2: Counts(1, REQ_SIZE),
    }
    assert s.by_kind == {
        "Probe": Counts(3, 3 * REQ_SIZE),
        "RandomizedValues": Counts(3, 3 * REPLY_SIZE),
        "Refusal": Counts(1, REFUSAL_SIZE),
    }
    assert s.by_phase == {
        "request": PhaseCounts(3, 3 * REQ_SIZE, 1),
        "collect": PhaseCounts(4, 3 * REPLY_SIZE + REFUSAL_SIZE, 1),
    }
    assert s.rounds == 2
    assert s.round_log == (
        RoundRecord(0, "request", True, 3, 3 * REQ_SIZE, 0.0),
        RoundRecord(1, "collect", True, 4, 3 * REPLY_SIZE + REFUSAL_SIZE, 0.0),
    )
    assert s.sent_by(2) == Counts(1, REPLY_SIZE) and s.received_by(2) == Counts(1, REQ_SIZE)
    assert s.sent_by(99) == Counts(0, 0)
    ep = net.endpoint(1).statistics()
    assert ep.actor == 1 and ep.sent == Counts(2, REPLY_SIZE + REFUSAL_SIZE) and ep.received == Counts(1, REQ_SIZE)


async def test_snapshot_is_immutable_json_and_detached() -> None:
    net = Router(3)
    await _exchange(net)
    s = net.statistics()
    with pytest.raises(TypeError):
        s.by_sender[0] = Counts(0, 0)  # type: ignore[index]
    with pytest.raises(AttributeError):
        s.messages = 0  # type: ignore[misc]
    d = json.loads(json.dumps(s.to_dict()))
    assert d["by_sender"]["-1"] == {"messages": 3, "bytes": 3 * REQ_SIZE}
    assert d["by_phase"]["collect"]["rounds"] == 1
    assert d["faults"]["dropped"] == 0 and d["crashed"] == []
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="late")
    assert s.messages == 7 and net.statistics().messages == 8


async def test_implicit_rounds_one_per_phase_between_marks() -> None:
    """Concurrent senders interleave phases; the count must not depend on the scheduling."""
    net = Router(2)
    p0, ctrl = net.endpoint(0), net.endpoint(CONTROLLER)
    for phase in ("a", "a", "b", "a"):
        await p0.send(CONTROLLER, Ack(1), phase=phase)
    with net.round("mixed"):  # one explicit round, whatever the phases of its messages
        await ctrl.send(0, Ack(1), phase="x")
        await ctrl.send(1, Ack(1), phase="y")
    await ctrl.send(0, Ack(1), phase="y")
    s = net.statistics()
    assert [(r.phase, r.explicit, r.messages) for r in s.round_log] == [
        ("a", False, 3), ("b", False, 1), ("mixed", True, 2), ("y", False, 1),
    ]
    assert s.rounds == 4
    assert s.by_phase["a"] == PhaseCounts(3, 3 * (5 + 8 + 4), 1)  # Ack(1): header, id, empty ids
    assert s.by_phase["mixed"] == PhaseCounts(0, 0, 1)  # a marked round with no message of its phase
    assert s.by_phase["y"].rounds == 1 and s.by_phase["y"].messages == 2


async def test_simulated_time_is_the_sum_over_rounds_of_the_slowest_message() -> None:
    latency = LatencyModel(latency=0.01, bandwidth=1000.0)
    net = Router(3, latency=latency)
    await _exchange(net)
    s = net.statistics()
    request_round = 0.01 + REQ_SIZE / 1000.0
    collect_round = 0.01 + max(REPLY_SIZE, REFUSAL_SIZE) / 1000.0
    assert s.round_log[0].simulated_time == pytest.approx(request_round, rel=1e-12)
    assert s.round_log[1].simulated_time == pytest.approx(collect_round, rel=1e-12)
    assert s.simulated_time == pytest.approx(request_round + collect_round, rel=1e-12)


def test_latency_model_transfer_time_and_validation() -> None:
    assert LatencyModel().transfer_time(10**6) == 0.0
    assert LatencyModel(0.5, 100.0).transfer_time(50) == 1.0
    with pytest.raises(ConfigurationError, match=r"latency must be finite and >= 0 seconds, got -1"):
        LatencyModel(latency=-1)
    with pytest.raises(ConfigurationError, match="latency must be finite"):
        LatencyModel(latency=math.inf)
    with pytest.raises(ConfigurationError, match=r"bandwidth must be > 0 bytes/s \(inf allowed\), got 0"):
        LatencyModel(bandwidth=0)
    with pytest.raises(ConfigurationError, match="bandwidth must be > 0"):
        LatencyModel(bandwidth=math.nan)


def test_counters_are_int64_columns_and_rejections_a_dict_per_sender() -> None:
    from parties.traffic import TrafficCounter

    t = TrafficCounter(4)
    assert t.sent_messages.dtype == np.int64 and t.recv_bytes.shape == (5,)  # (controller + 4 parties)
    t.record_columns(np.array([3, 1], dtype=np.int64), "p", Ack.KIND, np.array([20, 30], dtype=np.int64))
    t.record_deliveries_to(np.array([0, 2], dtype=np.int64), 7)
    for src in (2, -1, 2):
        t.record_rejection(src)
    t.record_rejection(9)  # (not an actor: counted, attributed to nobody)
    s = t.snapshot()
    assert dict(s.by_sender) == {1: Counts(1, 30), 3: Counts(1, 20)}
    assert dict(s.by_receiver) == {0: Counts(1, 7), 2: Counts(1, 7)}
    assert s.rejected == 4 and list(s.rejected_by_sender.items()) == [(-1, 1), (2, 2)]
    assert t.actor(2) == ActorStatistics(2, Counts(0, 0), Counts(1, 7), 2)
    t.record_delivery(2, 5)
    assert s.by_receiver[2] == Counts(1, 7)  # (the snapshot is detached from the live counters)


def test_deliveries_each_count_as_one_delivery_each_and_a_receiver_may_repeat() -> None:
    from parties.traffic import TrafficCounter

    each, one_by_one = TrafficCounter(4), TrafficCounter(4)
    dsts, sizes = [2, -1, 2, 0], [7, 11, 5, 3]
    each.record_deliveries_each(dsts, sizes)
    for dst, size in zip(dsts, sizes):
        one_by_one.record_delivery(dst, size)
    assert each.snapshot() == one_by_one.snapshot()
    assert dict(each.snapshot().by_receiver) == {-1: Counts(1, 11), 0: Counts(1, 3), 2: Counts(2, 12)}
    assert each.delivered == 4
