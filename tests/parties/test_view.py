"""Tests for parties.view: the controller's view log."""

from __future__ import annotations

import numpy as np

from parties.wire.messages import RandomizedValues, Refusal
from parties.transport import Envelope
from parties.view import ViewLog


def env(src: int, msg, phase: str = "p", size: int = 10) -> Envelope:
    return Envelope(src, -1, phase, msg, size)


def test_log_keeps_every_received_message_in_order() -> None:
    log = ViewLog()
    msgs = [RandomizedValues(1, np.array([1, 2])), Refusal(1, "budget-exceeded: no", 1.0, 0.5),
            RandomizedValues(2, np.array([0]))]
    log.record(env(3, msgs[0], "a", 30))
    log.record(env(4, msgs[1], "a", 40))
    log.record(env(3, msgs[2], "b", 25))
    assert len(log) == 3
    entries = list(log)
    assert [e.index for e in entries] == [0, 1, 2]
    assert [e.src for e in entries] == [3, 4, 3]
    assert entries[1].message is msgs[1] and entries[1].kind == "Refusal"
    assert [e.message for e in log if e.src == 3] == [msgs[0], msgs[2]]
    assert [e.src for e in log.of_kind(Refusal)] == [4]
    assert [e.src for e in log.of_kind("RandomizedValues")] == [3, 3]
    assert log.kinds() == frozenset({"RandomizedValues", "Refusal"})


def test_summary_counts_kinds_phases_senders_bytes_and_derived_values() -> None:
    log = ViewLog()
    log.record(env(0, RandomizedValues(1, np.array([1])), "a", 30))
    log.record(env(1, RandomizedValues(1, np.array([0])), "a", 30))
    log.record(env(1, Refusal(2, "plan-violation: x", 0.0, 1.0), "b", 50))
    log.note("clusters", ((0, 1),))
    summary = log.summary()
    assert summary.messages == 3 and summary.bytes == 110 and summary.senders == 2
    assert dict(summary.by_kind) == {"RandomizedValues": 2, "Refusal": 1}
    assert dict(summary.by_phase) == {"a": 2, "b": 1}
    assert summary.kinds == ("RandomizedValues", "Refusal")
    assert summary.derived == ("clusters",)
    assert log.derived["clusters"] == ((0, 1),)
    assert summary.to_dict()["by_kind"] == {"RandomizedValues": 2, "Refusal": 1}


def test_empty_view() -> None:
    summary = ViewLog().summary()
    assert summary.messages == 0 and summary.senders == 0 and summary.kinds == ()


def test_entries_read_back_equal_to_the_messages_received_whatever_their_form() -> None:
    log = ViewLog()
    msgs = [RandomizedValues(7, np.array([5, 0, 3])), RandomizedValues(7, np.array([], dtype=np.int64)),
            RandomizedValues(8, np.array([2]), ids=(4,)), Refusal(9, "plan-violation: x", 0.0, 1.0),
            RandomizedValues(9, np.array([1, 1]))]
    for k, msg in enumerate(msgs):
        log.record(env(10 + k, msg, ("a", "b")[k % 2], 20 + k))
    assert [e.message for e in log] == msgs
    assert [(e.index, e.src, e.phase, e.size) for e in log] == [
        (k, 10 + k, ("a", "b")[k % 2], 20 + k) for k in range(5)]
    assert log.entry(2).message.ids == (4,) and log.entry(1).message.codes.dtype == np.int64
    assert [e.src for e in log.of_kind(RandomizedValues)] == [10, 11, 12, 14]
    assert dict(log.summary().by_kind) == {"RandomizedValues": 4, "Refusal": 1}


def test_reply_columns_are_kept_as_they_came_between_single_messages() -> None:
    from parties.cohort import ReplyLayout

    codes = np.array([[1, 2], [0, 3], [2, 2]], dtype=np.int64)
    codes.flags.writeable = False
    consecutive = ReplyLayout.of(5, codes).columns(np.array([10, 11, 12]), "b", slice(0, 3))
    scattered = ReplyLayout.of(5, codes[:2]).columns(np.array([30, 20]), "b", slice(0, 2))
    log = ViewLog()
    log.record(env(1, Refusal(5, "plan-violation: x", 0.0, 1.0), "a", 50))
    log.record_columns(consecutive)
    log.record(env(2, RandomizedValues(5, np.array([1, 1])), "b", 40))
    log.record_columns(scattered)
    assert log._segments[1].codes is consecutive.codes  # the release's own codes: no copy
    assert log._segments[1].src == range(10, 13) and log._segments[3].src.tolist() == [30, 20]
    assert [(e.index, e.src, e.phase) for e in log] == [(0, 1, "a"), (1, 10, "b"), (2, 11, "b"), (3, 12, "b"),
                                                       (4, 2, "b"), (5, 30, "b"), (6, 20, "b")]
    assert log.entry(3).message == RandomizedValues(5, np.array([2, 2])) and log.entry(6).size == consecutive.sizes[0]
    assert [e.index for e in log.of_kind(RandomizedValues)] == [1, 2, 3, 4, 5, 6]
    summary = log.summary()
    assert summary.messages == 7 and summary.senders == 7
    assert summary.bytes == 50 + 40 + 5 * int(consecutive.sizes[0])
    assert dict(summary.by_phase) == {"a": 1, "b": 6} and dict(summary.by_kind) == {"Refusal": 1, "RandomizedValues": 6}


def test_envelopes_recorded_at_once_are_the_log_of_each_recorded_in_turn() -> None:
    # record_all: one extension of the current run where no envelope is a RandomizedValues (a
    # secure sum's messages), else each recorded in turn; either way the log each record gives
    def batches() -> list[list[Envelope]]:
        refusal = [env(10 + k, Refusal(k, "plan-violation: x", 0.0, 1.0), ("c", "a", "c")[k % 3], 40 + k)
                   for k in range(7)]
        return [refusal[:5], [env(1, RandomizedValues(3, np.array([2, 0])), "a", 31)] + refusal[5:],
                refusal[:2], [], refusal[2:6]]

    at_once, in_turn = ViewLog(), ViewLog()
    in_turn.record(env(0, RandomizedValues(1, np.array([1])), "b", 30))
    at_once.record(env(0, RandomizedValues(1, np.array([1])), "b", 30))
    for batch in batches():
        at_once.record_all(batch)
        for e in batch:
            in_turn.record(e)
    assert len(at_once) == len(in_turn) == 15
    assert [(e.index, e.src, e.phase, e.message, e.size) for e in at_once] == [
        (e.index, e.src, e.phase, e.message, e.size) for e in in_turn]
    assert at_once.summary() == in_turn.summary() and [e.src for e in at_once.of_kind(Refusal)][:3] == [10, 11, 12]
