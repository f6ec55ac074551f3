"""A :class:`~parties.secure.responder.Responder` is the program its docstring writes as a
generator: the same operations, errors and end, driven by hand."""

from __future__ import annotations

from typing import Any

import pytest

from mprr.errors import ConfigurationError, MessageError, ProtocolError, RoundTimeout
from parties.secure.messages import SurvivorSet, id_vector
from parties.secure.program import Answer, Delivery, Expect, Program, controller_message, each
from parties.secure.responder import Reply, Responder
from parties.topology import CONTROLLER

TOLD = Expect(SurvivorSet, "s", (CONTROLLER,), "told", 5.0)
ASKED = Expect(SurvivorSet, "s", (CONTROLLER,), "asked", 5.0)


def _hello(state: list[int]) -> SurvivorSet:
    state.append(0)
    return SurvivorSet("s", id_vector(state))


def _echo(state: list[int], message: SurvivorSet) -> SurvivorSet:
    state.extend(message.survivors.tolist())
    return SurvivorSet("s", id_vector(sorted(set(state))))


FIRST = Reply("hello", _hello, each(_hello))
ROUNDS = (Reply("echo", _echo, each(_echo), TOLD), Reply("again", _echo, None, ASKED))


def _written_out(me: int) -> Program[None]:
    """The generator the module docstring says a responder equals."""
    state: list[int] = []
    yield Answer(CONTROLLER, FIRST.phase, FIRST.compute, (state,), FIRST.batch)
    for r in ROUNDS:
        assert r.expect is not None
        message = controller_message(me, (yield r.expect), r.expect)
        yield Answer(CONTROLLER, r.phase, r.compute, (state, message), r.batch)


def _told(*ids: int) -> Delivery[Any]:
    return Delivery({CONTROLLER: SurvivorSet("s", id_vector(ids))})


def _ops(program: Program[None], deliveries: list[Delivery[Any]]) -> list[Any]:
    """The operations of ``program`` driven to its end, each Answer computed (as a driver would),
    each Expect sent the next of ``deliveries``."""
    out: list[Any] = []
    op = program.send(None)
    while True:
        if isinstance(op, Answer):
            out.append((op.to, op.phase, op.batch, op.compute(*op.args)))
            value = None
        else:
            out.append(op)
            value = deliveries.pop(0)
        try:
            op = program.send(value)
        except StopIteration as stop:
            out.append(("returned", stop.value))
            return out


def test_a_responder_yields_what_the_written_out_generator_yields() -> None:
    responder = Responder(3, list, FIRST, ROUNDS)
    ours = _ops(responder, [_told(1, 2), _told(5)])
    assert ours == _ops(_written_out(3), [_told(1, 2), _told(5)])
    assert [op for op in ours if isinstance(op, Expect)] == [TOLD, ASKED]
    assert ours[-1] == ("returned", None) and responder.state == [0, 1, 2, 5]
    with pytest.raises(StopIteration):  # (over: as a finished generator)
        responder.send(None)


def test_a_round_that_timed_out_ends_the_responder_with_the_controller_messages_error() -> None:
    responder = Responder(3, list, FIRST, ROUNDS)
    responder.send(None)
    assert responder.send(None) is TOLD
    with pytest.raises(RoundTimeout, match=r"phase 'told': party 3 timed out after 5 s waiting for") as ours:
        responder.send(Delivery({}, missing=(CONTROLLER,), timed_out=True))
    with pytest.raises(RoundTimeout) as written:
        program = _written_out(3)
        program.send(None)
        program.send(None)
        program.send(Delivery({}, missing=(CONTROLLER,), timed_out=True))
    assert str(ours.value) == str(written.value)
    with pytest.raises(StopIteration):
        responder.send(None)


def test_an_error_raised_at_a_reply_ends_the_responder_with_it_and_close_ends_it_quietly() -> None:
    responder = Responder(3, list, FIRST, ROUNDS)
    responder.send(None)
    with pytest.raises(MessageError, match="bad reply"):
        responder.throw(MessageError("bad reply"))
    with pytest.raises(StopIteration):
        responder.send(None)
    other = Responder(3, list, FIRST, ROUNDS)
    other.send(None)
    other.close()
    with pytest.raises(StopIteration):
        other.send(None)


def test_a_state_that_cannot_begin_ends_the_responder_at_its_first_step() -> None:
    def refuse() -> list[int]:
        raise ProtocolError("too few neighbours")

    responder = Responder(3, refuse, FIRST, ROUNDS)  # (nothing runs before the first step)
    with pytest.raises(ProtocolError, match="too few neighbours"):
        responder.send(None)


def test_a_responder_is_built_of_a_first_reply_without_expectation_and_rounds_with_one() -> None:
    with pytest.raises(ConfigurationError, match="first reply answers no message"):
        Responder(3, list, ROUNDS[0], ROUNDS)
    with pytest.raises(ConfigurationError, match="round of phase 'hello' needs the expectation it answers"):
        Responder(3, list, FIRST, (FIRST,))
    with pytest.raises(ConfigurationError, match=r"from the controller, got an expectation of sources \(1, 2\)"):
        Reply("x", _echo, None, Expect(SurvivorSet, "s", (1, 2), "told", 5.0))


def test_a_responders_rounds_are_each_one_unstreamed_message_from_the_controller_of_its_own() -> None:
    # (a host runs them without a round state: a streamed round, or a round expected twice in a
    # row, which every driver refuses of a program, is refused when the responder is built)
    with pytest.raises(ConfigurationError, match="got a streamed expectation"):
        Reply("x", _echo, None, Expect(SurvivorSet, "s", (CONTROLLER,), "told", 5.0, stream=True))
    with pytest.raises(ConfigurationError, match="round 1 expects what round 0 did"):
        Responder(3, list, FIRST, (ROUNDS[0], ROUNDS[0]))
    Responder(3, list, FIRST, (ROUNDS[0], ROUNDS[1], ROUNDS[0]))  # (not in a row: a new round)


def test_a_responder_answers_the_generator_protocol_as_a_generator_does() -> None:
    def each_way(act: Any) -> tuple[type[BaseException], str]:
        outcomes = []
        for program in (Responder(3, list, FIRST, ROUNDS), _written_out(3)):
            with pytest.raises(BaseException) as raised:
                act(program)
            outcomes.append((type(raised.value), str(raised.value)))
        assert outcomes[0] == outcomes[1]
        return outcomes[0]

    assert each_way(lambda p: p.send(1)) == (TypeError, "can't send non-None value to a just-started generator")
    assert each_way(lambda p: (p.send(None), p.throw(StopIteration()))) == (RuntimeError,
                                                                           "generator raised StopIteration")
    assert each_way(lambda p: (p.send(None), p.throw(ValueError, "x"))) == (ValueError, "x")
    assert each_way(lambda p: (p.send(None), p.throw(ValueError("y")))) == (ValueError, "y")


@pytest.mark.parametrize("end", ["close", "throw"])
def test_a_responder_ended_by_close_or_an_error_is_freed_without_the_garbage_collector(end: str) -> None:
    # (an ended responder must not sit in a reference cycle: a host's parties' states would stay
    # alive until a full collection, which a long run may never make)
    import gc
    import weakref

    class State(list[int]):
        pass

    responder = Responder(3, State, FIRST, ROUNDS)
    responder.send(None)
    state = weakref.ref(responder.state)
    gc.disable()
    try:
        if end == "close":
            responder.close()
        else:
            with pytest.raises(MessageError):
                responder.throw(MessageError("bad reply"))
        del responder
        assert state() is None
    finally:
        gc.enable()
