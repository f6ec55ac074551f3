"""The sans-I/O program model (parties.secure.program): a fake two-role sum driven by hand."""

from __future__ import annotations

from typing import Any

import pytest

from mprr.errors import ConfigurationError, RoundTimeout
from parties.secure.messages import PartialSum
from parties.secure.program import Broadcast, Delivery, Expect, Mark, Reject, Send, SendEach
from parties.topology import CONTROLLER
from tests.parties.secure.programs import S, controller, party, vec


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


def test_each_computes_every_call_in_turn_and_returns_its_protocol_error() -> None:
    from mprr.errors import MessageError, ProtocolError
    from parties.secure.program import each

    def double(x: int) -> Any:
        if x < 0:
            raise MessageError(f"{x} is negative")
        return 2 * x

    replies = each(double)([(1,), (-2,), (3,)])
    assert replies[0] == 2 and replies[2] == 6
    assert isinstance(replies[1], ProtocolError) and str(replies[1]) == "-2 is negative"
    with pytest.raises(TypeError):  # (anything but a ProtocolError is a bug: raised)
        each(double)([(None,)])
