"""Tests of ``parties.party_sum``: a host steps its parties' secure-sum programs from the frames
it delivers (rounds, buffering, deadlines, polls, crashes, stops) and tells each party how its
program ended; the party itself never touches time or I/O.

Runs on the virtual clock (``tests/virtual_clock.py``)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from mprr.errors import ConfigurationError, PartyDropped, ProtocolError
from parties.columns import MessageColumns
from parties.party_sum import DEADLINE_GRAIN, PartySums
from parties.secure.messages import ShareVector, SurvivorSet, id_vector
from parties.secure.program import Delivery, Expect, Poll, Reject, Send
from parties.topology import CONTROLLER
from parties.topology import Topology
from parties.transport import Frame, Transport
from parties.wire.codec import encode
from tests.parties.party_sum_helpers import KINDS, START, TOLD, Net, Program, StubParty, host, vector
from tests.virtual_clock import run_virtual


def test_a_refused_start_drives_nothing_and_ends_nothing() -> None:
    async def main() -> None:
        party = StubParty(0, None)
        net = Net(3)
        host(net).start(party, START)
        assert party.asked == [(START, net)] and party.ended == [] and net.sent == []

    run_virtual(main())


def test_a_host_not_serving_refuses_the_session() -> None:
    party = StubParty(0, iter(()))  # type: ignore[arg-type]
    sums = PartySums(Net(3), KINDS, list[BaseException]().append)
    sums.start(party, START)
    assert party.asked == [] and party.errors == ["secure sum 's' refused: the host is not serving"]


def test_a_program_receives_its_round_on_the_next_turn_sends_and_closes_its_session() -> None:
    seen: list[tuple[float, dict[int, Any]]] = []

    def program() -> Program:
        got = yield Expect(ShareVector, "s", (1, 2), "graph/shares", 5.0)
        seen.append((asyncio.get_running_loop().time(), dict(got.messages)))
        yield Send(CONTROLLER, SurvivorSet("s", id_vector((0,))), "graph/partial")

    async def main() -> None:
        party, net = StubParty(0, program()), Net(3)
        sums = host(net)
        sums.start(party, START)
        sums.deliver(vector(1))
        await asyncio.sleep(1.0)
        assert seen == [] and party.ended == []  # the round waits for party 2
        sums.deliver(vector(2))
        assert seen == []  # stepped on the loop's next turn, not inside the delivery
        await asyncio.sleep(0)
        [(when, got)] = seen
        assert when == pytest.approx(1.0) and sorted(got) == [1, 2]
        assert [(f.src, f.dst, f.kind) for f in net.sent] == [(0, CONTROLLER, SurvivorSet.KIND)]
        assert party.ended == [("s", None, True)] and sums.running() == 0
        assert net.counter.delivered == 2

    run_virtual(main())


def test_messages_before_their_round_are_buffered_and_taken_when_it_opens() -> None:
    got_first: list[Delivery[Any]] = []

    def program() -> Program:
        told = yield Expect(SurvivorSet, "s", (CONTROLLER,), "graph/told", 5.0)
        assert told.messages[CONTROLLER].survivors.tolist() == [0, 1]
        got_first.append((yield Expect(ShareVector, "s", (1,), "graph/shares", 5.0)))

    async def main() -> None:
        party = StubParty(0, program())
        sums = host(Net(3))
        sums.start(party, START)
        sums.deliver(vector(1))  # early: its round is not open yet
        sums.deliver(vector(1, session="another"))  # another session's: never this round's
        assert sums.buffered(0) == 2
        told = SurvivorSet("s", id_vector((0, 1)))
        sums.deliver(Frame(CONTROLLER, 0, "graph/told", told.KIND, encode(told)))
        await asyncio.sleep(0)
        [delivery] = got_first
        assert list(delivery.messages) == [1] and delivery.done and not delivery.timed_out
        assert sums.buffered(0) == 0 and party.ended == [("s", None, True)]

    run_virtual(main())


def test_a_round_ends_at_its_deadline_and_the_program_decides() -> None:
    def program() -> Program:
        got = yield Expect(ShareVector, "s", (1, 2), "graph/shares", 0.5)
        assert got.timed_out and got.missing == (2,) and list(got.messages) == [1]
        assert asyncio.get_running_loop().time() == pytest.approx(0.5)
        raise ProtocolError("no share from party 2")

    async def main() -> list[tuple[str, ProtocolError | None, bool]]:
        party = StubParty(0, program())
        sums = host(Net(3))
        sums.start(party, START)
        sums.deliver(vector(1))
        await asyncio.sleep(0.4)
        assert party.ended == []
        await asyncio.sleep(0.2)
        return party.ended

    [(session, error, ran)] = run_virtual(main())  # the error is the party's to log, not the host's to raise
    assert session == "s" and ran and isinstance(error, ProtocolError) and str(error) == "no share from party 2"


def test_parties_opening_rounds_in_one_grain_share_one_timer_and_each_is_told_after_its_timeout() -> None:
    told: dict[int, tuple[float, float]] = {}  # party -> (opened, told)

    def program(i: int) -> Program:
        opened = asyncio.get_running_loop().time()
        got = yield Expect(ShareVector, "s", (CONTROLLER,), "graph/shares", 2.0)
        assert got.timed_out
        told[i] = (opened, asyncio.get_running_loop().time())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        parties = [StubParty(i, program(i)) for i in range(50)]
        sums = host(Net(50))
        timers = len(loop._scheduled)  # type: ignore[attr-defined]
        for party in parties:  # a turn that takes time: each opens its round 0.5 ms after the last
            await asyncio.sleep(0.0005)
            sums.start(party, START)
        assert len(loop._scheduled) == timers + 1  # type: ignore[attr-defined]  # (all in one grain of 2 / 64 s)
        await asyncio.sleep(2.5)
        assert all(p.ended == [("s", None, True)] for p in parties)

    run_virtual(main())
    assert len(told) == 50 and len({when for _, when in told.values()}) == 1
    assert all(2.0 <= when - opened <= 2.0 * (1 + 1 / DEADLINE_GRAIN) for opened, when in told.values())


def test_a_streamed_round_is_answered_by_batch_and_a_poll_on_the_next_turn() -> None:
    batches: list[tuple[bool, list[int]]] = []

    def program() -> Program:
        expect = Expect(ShareVector, "s", (1, 2), "graph/shares", 5.0, stream=True)
        got = yield Poll(expect)  # nothing has arrived yet
        batches.append((got.done, sorted(got.messages)))
        while not got.done:
            got = yield expect
            batches.append((got.done, sorted(got.messages)))

    async def main() -> None:
        party = StubParty(0, program())
        sums = host(Net(3))
        sums.start(party, START)
        await asyncio.sleep(0)
        sums.deliver(vector(2))
        await asyncio.sleep(0)
        sums.deliver(vector(1))
        await asyncio.sleep(0)

    run_virtual(main())
    assert batches == [(False, []), (False, [2]), (True, [1])]


def test_a_crashed_party_ends_its_session_with_party_dropped() -> None:
    def program() -> Program:
        yield Expect(ShareVector, "s", (1,), "graph/shares", 60.0)

    async def main() -> list[tuple[str, ProtocolError | None, bool]]:
        party = StubParty(0, program())
        sums = host(Net(3))
        sums.start(party, START)
        sums.deliver(TOLD)
        sums.crash(0)
        assert sums.buffered(0) == 0 and sums.running() == 0
        return party.ended

    [(session, error, ran)] = run_virtual(main())
    assert session == "s" and ran and isinstance(error, PartyDropped)
    with pytest.raises(PartyDropped, match="party 0 has crashed"):
        raise error


def test_a_host_that_stops_leaves_the_session_as_it_stands() -> None:
    def program() -> Program:
        yield Expect(ShareVector, "s", (1,), "graph/shares", 60.0)

    async def main() -> list[tuple[str, ProtocolError | None, bool]]:
        party = StubParty(0, program())
        sums = host(Net(3))
        sums.start(party, START)
        await asyncio.sleep(1.0)
        sums.stop()
        await asyncio.sleep(100.0)  # (its deadline's timer went with it)
        return party.ended

    assert run_virtual(main()) == [("s", None, False)]


def test_a_bad_frame_is_rejected_against_its_sender_and_a_rejection_is_counted() -> None:
    def program() -> Program:
        got = yield Expect(ShareVector, "s", (1,), "graph/shares", 5.0)
        yield Reject(1, got.messages[1], "graph/shares", "not a share this party can use")

    async def main() -> Transport:
        party, net = StubParty(0, program()), Net(3)
        sums = host(net)
        sums.start(party, START)
        sums.deliver(Frame(2, 0, "graph/shares", ShareVector.KIND, b"\x00garbage"))
        sums.deliver(vector(1))
        await asyncio.sleep(0)
        return net

    net = run_virtual(main())
    assert net.counter.rejected_from == {2: 1, 1: 1} and net.counter.delivered == 1


def test_a_program_bug_ends_its_session_and_fails_the_host() -> None:
    def program() -> Program:
        expect = Expect(ShareVector, "s", (1,), "graph/shares", 5.0)
        yield expect
        yield expect  # the round is over: expecting it anew is a bug

    async def main() -> tuple[StubParty, list[BaseException]]:
        party, failures = StubParty(0, program()), list[BaseException]()
        sums = host(Net(3), failures)
        sums.start(party, START)
        sums.deliver(vector(1))
        await asyncio.sleep(0)
        return party, failures

    party, failures = run_virtual(main())
    [failure] = failures
    assert party.ended == [("s", None, False)]
    with pytest.raises(ConfigurationError, match="the round of phase 'graph/shares' is over"):
        raise failure


def test_a_round_without_time_ends_on_the_next_turn() -> None:
    told: list[float] = []

    def program() -> Program:
        got = yield Expect(ShareVector, "s", (1,), "graph/shares", 0.0)
        assert got.timed_out and got.missing == (1,)
        told.append(asyncio.get_running_loop().time())

    async def main() -> None:
        await asyncio.sleep(0.3)
        host(Net(3)).start(StubParty(0, program()), START)
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    run_virtual(main())
    assert told == [pytest.approx(0.3)]


def test_a_round_of_infinite_timeout_has_no_deadline() -> None:
    def program() -> Program:
        got = yield Expect(ShareVector, "s", (1,), "graph/shares", math.inf)
        assert list(got.messages) == [1] and not got.timed_out

    async def main() -> tuple[list[tuple[str, ProtocolError | None, bool]], list[BaseException]]:
        failures: list[BaseException] = []
        party = StubParty(0, program())
        sums = host(Net(3), failures)
        sums.start(party, START)
        await asyncio.sleep(1e6)
        sums.deliver(vector(1))
        await asyncio.sleep(0)
        return party.ended, failures

    assert run_virtual(main()) == ([("s", None, True)], [])


def test_a_poll_and_a_delivery_in_one_turn_resume_the_program_once() -> None:
    batches: list[tuple[str, bool, list[int]]] = []

    def program() -> Program:
        expect = Expect(ShareVector, "s", (1, 2), "graph/shares", 5.0, stream=True)
        got = yield Poll(expect)
        batches.append(("poll", got.done, sorted(got.messages)))
        while not got.done:
            got = yield expect
            batches.append(("expect", got.done, sorted(got.messages)))

    async def main() -> None:
        sums = host(Net(3))
        sums.start(StubParty(0, program()), START)
        sums.deliver(vector(1))  # in the poll's turn (a peer stepped in this turn)
        for _ in range(3):
            await asyncio.sleep(0)
        sums.deliver(vector(2))
        await asyncio.sleep(0)

    run_virtual(main())
    assert batches == [("poll", False, [1]), ("expect", True, [2])]  # no empty batch in between


def test_each_poll_is_answered_on_the_next_turn() -> None:
    turns: list[int] = []
    turn = [0]

    def program() -> Program:
        expect = Expect(ShareVector, "s", (1, 2), "graph/shares", 5.0, stream=True)
        yield Poll(expect)
        turns.append(turn[0])
        yield Poll(expect)  # the peers run first again
        turns.append(turn[0])

    async def main() -> None:
        sums = host(Net(3))
        sums.start(StubParty(0, program()), START)
        sums.deliver(vector(1))
        for k in range(1, 4):
            turn[0] = k
            await asyncio.sleep(0)

    run_virtual(main())
    assert turns == [1, 2]


def test_another_sessions_message_for_an_open_round_is_dropped_not_held() -> None:
    def program() -> Program:
        yield Expect(ShareVector, "s", (1, 2), "graph/shares", 5.0)

    async def main() -> int:
        party = StubParty(0, program())
        sums = host(Net(3))
        sums.start(party, START)
        for _ in range(100):
            sums.deliver(vector(1, session="old"))  # late traffic of an earlier sum
        sums.deliver(vector(1))
        sums.deliver(vector(2))
        await asyncio.sleep(0)
        assert party.ended == [("s", None, True)]
        return sums.buffered(0)

    assert run_virtual(main()) == 0


def test_a_party_crashed_by_its_own_send_ends_its_session_and_its_program_is_closed() -> None:
    closed: list[bool] = []

    def program() -> Program:
        try:
            yield Send(CONTROLLER, ShareVector("s", -1, id_vector((0,))), "graph/partial")
            yield Expect(ShareVector, "s", (1,), "graph/shares", 5.0)
        finally:
            closed.append(True)

    class _Crashing(Net):
        """A transport whose fault plan crashes the sender on its send."""

        sums: PartySums | None = None

        def _transmit(self, frame: Frame) -> None:
            super()._transmit(frame)
            assert self.sums is not None
            self.sums.crash(frame.src)

    async def main() -> tuple[StubParty, PartySums]:
        net = _Crashing(3)
        party = StubParty(0, program())
        sums = net.sums = host(net)
        sums.start(party, START)
        return party, sums

    party, sums = run_virtual(main())
    assert [type(error).__name__ for _, error, _ in party.ended] == ["PartyDropped"]
    assert sums.running() == 0 and closed == [True]


# ------------------------------------------------------------------ sends to the controller as columns


def _columns_host(net: Transport) -> tuple[PartySums, list[MessageColumns]]:
    blocks: list[MessageColumns] = []
    sums = PartySums(net, KINDS, list[BaseException]().append, columns=blocks.append)
    sums.serving = True
    return sums, blocks


def _replying(me: int, sends: int = 1) -> Program:
    """One message to the controller, the controller's round, then ``sends`` messages to it."""
    yield Send(CONTROLLER, SurvivorSet("s", id_vector((me,))), "graph/partial")
    yield Expect(SurvivorSet, "s", (CONTROLLER,), "graph/told", 5.0)
    for k in range(sends):
        yield Send(CONTROLLER, SurvivorSet("s", id_vector((me, me + 1 + k))), "graph/partial")


def test_a_turns_sends_to_the_controller_leave_together_on_the_next_turn_one_block_per_phase_and_kind() -> None:
    async def main() -> None:
        net = Net(4)
        sums, blocks = _columns_host(net)
        parties = [StubParty(p, _replying(p)) for p in (2, 0, 3)]
        for party in parties:
            sums.start(party, START)
        assert blocks == [] and net.sent == []  # (checked and admitted, not sent yet)
        await asyncio.sleep(0)
        [block] = blocks
        assert block.srcs.tolist() == [2, 0, 3] and block.phase == "graph/partial" and block.kind == SurvivorSet.KIND
        assert [block.message(k) for k in range(3)] == [SurvivorSet("s", id_vector((p,))) for p in (2, 0, 3)]
        assert block.sizes.tolist() == [len(encode(block.message(k))) for k in range(3)] and net.sent == []
        for p in (2, 0, 3):
            sums.deliver(TOLD._replace(dst=p))
        await asyncio.sleep(0)  # the rounds are stepped: their sends wait for the next turn
        assert len(blocks) == 1
        await asyncio.sleep(0)
        assert len(blocks) == 2 and blocks[1].srcs.tolist() == [2, 0, 3]
        assert [ended for party in parties for ended in party.ended] == [("s", None, True)] * 3

    run_virtual(main())


def test_a_second_message_of_one_sender_in_one_turn_starts_another_block_in_order() -> None:
    async def main() -> None:
        sums, blocks = _columns_host(Net(3))
        party = StubParty(1, _replying(1, sends=2))
        sums.start(party, START)
        await asyncio.sleep(0)
        sums.deliver(TOLD._replace(dst=1))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert [(b.srcs.tolist(), b.message(0)) for b in blocks] == [
            ([1], SurvivorSet("s", id_vector((1,)))), ([1], SurvivorSet("s", id_vector((1, 2)))),
            ([1], SurvivorSet("s", id_vector((1, 3))))]

    run_virtual(main())


def test_with_columns_sends_to_peers_leave_on_the_spot_and_a_crashed_partys_are_lost() -> None:
    def program() -> Program:
        yield Send(1, ShareVector("s", -1, id_vector((0,))), "graph/shares")
        yield Send(CONTROLLER, SurvivorSet("s", id_vector((0,))), "graph/partial")

    async def main() -> None:
        import networkx as nx

        net = Net(3)
        net.topology = Topology(3, nx.complete_graph([CONTROLLER, 0, 1, 2]))
        sums, blocks = _columns_host(net)
        sums.start(StubParty(0, program()), START)
        assert [(f.src, f.dst) for f in net.sent] == [(0, 1)]
        net.crash(2)
        sums.start(StubParty(2, _replying(2)), START)
        await asyncio.sleep(0)
        assert [b.srcs.tolist() for b in blocks] == [[0]] and net.counter.faults["lost_to_crash"] == 1

    run_virtual(main())


def test_a_stopping_host_sends_what_its_programs_sent_before_it_stopped() -> None:
    async def main() -> None:
        sums, blocks = _columns_host(Net(3))
        party = StubParty(0, _replying(0))
        sums.start(party, START)
        sums.stop()
        assert [b.srcs.tolist() for b in blocks] == [[0]] and party.ended == [("s", None, False)]
        await asyncio.sleep(0)
        assert len(blocks) == 1

    run_virtual(main())


def test_a_send_to_the_controller_without_a_link_ends_the_session_as_without_columns() -> None:
    import networkx as nx

    async def main() -> tuple[list[MessageColumns], StubParty]:
        graph = nx.Graph()
        graph.add_nodes_from([CONTROLLER, 0, 1])
        graph.add_edge(CONTROLLER, 1)
        net = Net(2)
        net.topology = Topology(2, graph)
        sums, blocks = _columns_host(net)
        party = StubParty(0, _replying(0))
        sums.start(party, START)
        await asyncio.sleep(0)
        return blocks, party

    blocks, party = run_virtual(main())
    [(session, error, ran)] = party.ended
    assert blocks == [] and session == "s" and ran
    with pytest.raises(ProtocolError, match="party 0 cannot send to controller: no link in the topology"):
        raise error  # type: ignore[misc]
