"""parties.secure.rounds: a driver's state of one round (who is awaited, what arrived) and one step."""

from __future__ import annotations

from parties.secure.messages import SurvivorSet, id_vector
from parties.secure.program import Expect
from parties.secure.rounds import Finished, RoundState, step


def _told(session: str = "s") -> SurvivorSet:
    return SurvivorSet(session, id_vector((0,)))


def test_a_round_keeps_first_messages_of_its_sources_and_the_others_and_skips_another_sessions() -> None:
    state = RoundState(Expect(SurvivorSet, "s", (1, 2), "told", 1.0))
    assert not state.sort([(1, _told("other"))])  # another session: not this round's
    assert state.sort([(1, _told()), (7, _told())])
    state.add(1, _told())  # (accepted by the caller: no checks)
    got = state.delivery()
    assert dict(got.messages) == {1: _told()} and got.others == ((7, _told()), (1, _told()))
    assert got.missing == (2,) and not got.done and not state.over
    state.add(2, _told())
    got = state.delivery()
    assert dict(got.messages) == {2: _told()} and got.others == () and got.done and state.over


def test_a_step_returns_the_next_operation_or_the_programs_result() -> None:
    def program():  # type: ignore[no-untyped-def]
        yield "op"
        return 5

    gen = program()
    assert step(gen, None) == "op"
    done = step(gen, None)
    assert isinstance(done, Finished) and done.value == 5
