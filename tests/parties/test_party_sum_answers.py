"""Tests of ``parties.party_sum``'s answers: the replies a program asks its host to compute wait
for the end of the turn, and each batch runs once for all of them (``parties.secure.program.Answer``).

Runs on the virtual clock (``tests/virtual_clock.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

from mprr.errors import MessageError, PartyDropped, ProtocolError
from parties.secure.messages import SurvivorSet, id_vector
from parties.secure.program import Answer, Expect, Send, each
from parties.topology import CONTROLLER
from parties.transport import Frame
from parties.wire.codec import encode
from tests.parties.party_sum_helpers import START, TOLD, Net, Program, StubParty, host
from tests.virtual_clock import run_virtual


def _told_ids(msg: SurvivorSet) -> SurvivorSet:
    """A party's computation of its reply from the controller's message (a pure step)."""
    if 9 in msg.survivors.tolist():
        raise MessageError("party: survivor 9 is not a neighbour")
    return SurvivorSet("s", id_vector((*msg.survivors.tolist(), 7)))


def _answering(me: int, batch: Any, caught: list[str] | None = None) -> Program:
    """The controller's round, then its reply computed as an Answer (a refused one: raised here)."""
    got = yield Expect(SurvivorSet, "s", (CONTROLLER,), "graph/told", 5.0)
    try:
        yield Answer(CONTROLLER, "graph/partial", _told_ids, (got.messages[CONTROLLER],), batch)
    except ProtocolError as exc:
        if caught is None:
            raise
        caught.append(f"{me}: {exc}")
    yield Send(CONTROLLER, SurvivorSet("s", id_vector((me,))), "graph/after")


def test_a_turns_answers_of_one_batch_run_together_in_order_and_each_reply_is_sent() -> None:
    calls: list[list[tuple[Any, ...]]] = []

    def batch(args: list[tuple[Any, ...]]) -> list[Any]:
        calls.append(args)
        return each(_told_ids)(args)

    async def main() -> None:
        net = Net(4)
        sums = host(net)
        caught: list[str] = []
        parties = [StubParty(p, _answering(p, batch, caught)) for p in (2, 0, 3)]
        for party in parties:
            sums.start(party, START)
        told = {2: (2,), 0: (9,), 3: (3,)}  # party 0's computation refuses its message
        for p in (2, 0, 3):
            msg = SurvivorSet("s", id_vector(told[p]))
            sums.deliver(Frame(CONTROLLER, p, "graph/told", msg.KIND, encode(msg)))
        await asyncio.sleep(0)
        assert [[msg.survivors.tolist() for (msg,) in args] for args in calls] == [[[2], [9], [3]]]
        assert [(f.src, f.phase, f.message.survivors.tolist()) for f in net.sent] == [  # type: ignore[union-attr]
            (2, "graph/partial", [2, 7]), (2, "graph/after", [2]),
            (0, "graph/after", [0]),
            (3, "graph/partial", [3, 7]), (3, "graph/after", [3])]
        assert caught == ["0: party: survivor 9 is not a neighbour"]
        assert [party.ended for party in parties] == [[("s", None, True)]] * 3

    run_virtual(main())


def test_an_answer_without_a_batch_is_computed_at_once_and_its_error_ends_the_session() -> None:
    async def main() -> None:
        net = Net(2)
        sums = host(net)
        party = StubParty(0, _answering(0, None))
        sums.start(party, START)
        sums.deliver(Frame(CONTROLLER, 0, "graph/told", SurvivorSet.KIND, encode(SurvivorSet("s", id_vector((9,))))))
        await asyncio.sleep(0)
        assert net.sent == [] and len(party.ended) == 1
        session, error, ran = party.ended[0]
        assert isinstance(error, MessageError) and "survivor 9" in str(error) and ran

    run_virtual(main())


def test_a_party_crashed_while_its_answer_waits_is_left_out_of_the_batch() -> None:
    calls: list[list[int]] = []

    def batch(args: list[tuple[Any, ...]]) -> list[Any]:
        calls.append([msg.survivors.tolist()[0] for (msg,) in args])
        return [_told_ids(msg) for (msg,) in args]

    def answer_first(me: int) -> Program:  # (an answer before any round: parked by start, for the next turn)
        yield Answer(CONTROLLER, "graph/partial", _told_ids, (SurvivorSet("s", id_vector((me,))),), batch)

    async def main() -> None:
        net = Net(3)
        sums = host(net)
        parties = [StubParty(p, answer_first(p)) for p in (0, 1, 2)]
        for party in parties:
            sums.start(party, START)
        net.crash(1)
        sums.crash(1)
        await asyncio.sleep(0)
        assert calls == [[0, 2]]
        assert [f.src for f in net.sent] == [0, 2]
        assert isinstance(parties[1].ended[0][1], PartyDropped) and parties[0].ended == [("s", None, True)]

    run_virtual(main())


def test_a_bug_in_a_batch_ends_its_sessions_and_fails_the_host() -> None:
    def batch(args: list[tuple[Any, ...]]) -> list[Any]:
        raise RuntimeError("bug")

    async def main() -> None:
        net = Net(2)
        failures: list[BaseException] = []
        sums = host(net, failures)
        party = StubParty(0, _answering(0, batch))
        sums.start(party, START)
        sums.deliver(TOLD)
        await asyncio.sleep(0)
        assert [str(f) for f in failures] == ["bug"] and party.ended == [("s", None, False)]
        assert sums.running() == 0

    run_virtual(main())
