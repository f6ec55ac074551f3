"""Tests of ``parties.party_sum``'s own path for a :class:`~parties.secure.responder.Responder`:
the host runs its rounds from their parts, with the sends, ends, buffers, batches and failures
of the same program stepped as a generator (written out), and closes it once.

Runs on the virtual clock (``tests/virtual_clock.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mprr.errors import MessageError, ProtocolError
from parties.party_sum import PartySums
from parties.secure.messages import SurvivorSet, id_vector
from parties.secure.program import Expect, each
from parties.secure.responder import Reply, Responder
from parties.topology import CONTROLLER
from parties.transport import Frame
from parties.wire.codec import encode
from tests.parties.party_sum_helpers import START, Net, Program, StubParty, host
from tests.virtual_clock import run_virtual


def _echo(state: list[int], message: SurvivorSet) -> SurvivorSet:
    if state[0] == 4 and message.survivors.tolist() == [9]:
        raise MessageError(f"party {state[0]}: survivor 9 is not its neighbour")
    if message.survivors.tolist() == [666]:
        raise ValueError("a bug in the round")
    state.extend(message.survivors.tolist())
    return SurvivorSet("s", id_vector(sorted(set(state))))


def _hello(state: list[int]) -> SurvivorSet:
    return SurvivorSet("s", id_vector(state))


def _responder(me: int, echo_all: Any) -> Responder:
    """Party ``me``: its id to the controller, then two rounds of the controller's survivor set
    echoed with what it holds (the first by the batch ``echo_all``)."""
    def begin() -> list[int]:
        if me == 5:
            raise ProtocolError("party 5 refuses to begin")
        return [me]

    return Responder(me, begin, Reply("graph/partial", _hello, each(_hello)),
                     (Reply("graph/echo", _echo, echo_all, Expect(SurvivorSet, "s", (CONTROLLER,), "graph/told", 5.0)),
                      Reply("graph/again", _echo, None, Expect(SurvivorSet, "s", (CONTROLLER,), "graph/asked", 5.0))))


def _written_out(responder: Responder) -> Program:
    """The same responder as a plain generator: the host steps it as any program."""
    return (yield from responder)


def _frame(dst: int, phase: str, *ids: int) -> Frame:
    msg = SurvivorSet("s", id_vector(ids))
    return Frame(CONTROLLER, dst, phase, msg.KIND, encode(msg))


def _run_responders(native: bool, script: Any) -> tuple[list[Any], dict[int, list[Any]], list[int], list[str]]:
    """``script(sums, net)`` run with parties 0, 2, 4 and 5 as responders (``native``) or as the same
    responders written out; what was sent, how each party's session ended (and what is left in
    its buffer), the batch sizes, the host's failures."""
    failures: list[BaseException] = []
    batches: list[int] = []

    def echo_all(calls: list[tuple[Any, ...]]) -> list[Any]:
        batches.append(len(calls))
        return each(_echo)(calls)

    async def main() -> tuple[list[Any], dict[int, list[Any]]]:
        net = Net(6)
        sums = host(net, failures)
        parties = {p: StubParty(p, _responder(p, echo_all)) for p in (0, 2, 4, 5)}
        ended: dict[int, list[Any]] = {}
        for p, party in parties.items():
            if not native:
                party.program = _written_out(party.program)  # type: ignore[arg-type]
            sums.start(party, START)
        await script(sums, net)
        loop = asyncio.get_running_loop()
        for p, party in parties.items():
            ended[p] = [(s, type(e).__name__, str(e), ran, sums.buffered(p)) for s, e, ran in party.ended]
        assert sums.running() == 0, loop.time()
        return [(f.src, f.dst, f.phase, f.kind, f.payload) for f in net.sent], ended

    sent, ended = run_virtual(main())
    return sent, ended, batches, [repr(f) for f in failures]


async def _answered(sums: PartySums, net: Net) -> None:
    """Party 0's second message arrives before its round opens, and its first twice (the second
    is not the round's); party 2's in order; party 4's first round fails its check; then party 2
    crashes before its second round."""
    sums.deliver(_frame(0, "graph/asked", 7))
    await asyncio.sleep(0.5)
    for p in (0, 2):
        sums.deliver(_frame(p, "graph/told", *sorted({1, p})))
    sums.deliver(_frame(0, "graph/told", 3))
    sums.deliver(_frame(4, "graph/told", 9))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    net.crash(2)
    sums.crash(2)
    await asyncio.sleep(1.0)


async def _timed_out(sums: PartySums, net: Net) -> None:
    """Party 0 is told, then never asked: its second round ends at its deadline; the others are
    never told; party 4's message of another session is not its round's."""
    sums.deliver(_frame(0, "graph/told", 3))
    sums.deliver(Frame(CONTROLLER, 4, "graph/told", SurvivorSet.KIND, encode(SurvivorSet("other", id_vector((1,))))))
    await asyncio.sleep(20.0)


async def _buggy(sums: PartySums, net: Net) -> None:
    """A bug (not a protocol error) in party 0's unbatched round, then in party 2's batched one:
    each fails the host and ends its session where it stands; then the host stops."""
    sums.deliver(_frame(0, "graph/told", 1))
    await asyncio.sleep(0)
    sums.deliver(_frame(0, "graph/asked", 666))
    await asyncio.sleep(0)
    sums.deliver(_frame(2, "graph/told", 666))
    await asyncio.sleep(0)
    sums.stop()


@pytest.mark.parametrize("script", [_answered, _timed_out, _buggy])
def test_a_responders_rounds_run_by_the_host_are_those_of_the_same_program_written_out(script: Any) -> None:
    # The host runs a Responder's rounds itself (no generator resumed, no delivery built): what
    # is sent, how and when each session ends, the batches and the host's failures are those of
    # the same program stepped as a generator.
    native = _run_responders(True, script)
    assert native == _run_responders(False, script)
    sent, ended, batches, failures = native
    if script is _answered:
        assert [(src, phase) for src, _, phase, _, _ in sent] == [  # (0's buffered round answered at once)
            (0, "graph/partial"), (2, "graph/partial"), (4, "graph/partial"), (0, "graph/echo"), (0, "graph/again"),
            (2, "graph/echo")]
        assert batches == [3]  # (one batch of the turn's three calls: 0, 2 and 4)
        assert ended[0] == [("s", "NoneType", "None", True, 0)] and ended[2][0][1] == "PartyDropped"
        assert ended[4] == [("s", "MessageError", "party 4: survivor 9 is not its neighbour", True, 0)]
        assert ended[5] == [("s", "ProtocolError", "party 5 refuses to begin", True, 0)]
    elif script is _timed_out:
        assert [e[0][1] for e in ended.values()] == ["RoundTimeout"] * 3 + ["ProtocolError"]
        assert "phase 'graph/asked': party 0 timed out after 5 s" in ended[0][0][2]
    else:
        assert failures == ["ValueError('a bug in the round')"] * 2 and sent[-1][:3] == (0, CONTROLLER, "graph/echo")
        assert [ended[p] for p in (0, 2, 4)] == [[("s", "NoneType", "None", False, 0)]] * 3


class _Counted(Responder):
    """A responder that counts its closes."""

    closes: list[int] = []

    def close(self) -> None:
        _Counted.closes.append(self.me)
        super().close()


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("batched", [True, False])
def test_a_responder_that_ends_inside_the_hosts_own_frames_is_closed_once(native: bool, batched: bool) -> None:
    # party 0 ends at its first reply (no rounds); party 2's one round is answered from its buffer
    # when it opens, inside the send of its first reply: the host closes each program exactly
    # once (written out, the generator that ran the responder to its end is what the host closes)
    first = Reply("graph/partial", _hello, each(_hello) if batched else None)
    told = Expect(SurvivorSet, "s", (CONTROLLER,), "graph/told", 5.0)

    async def main() -> list[StubParty]:
        _Counted.closes = []
        sums = host(Net(3))
        parties = [StubParty(0, _Counted(0, lambda: [0], first, ())),
                   StubParty(2, _Counted(2, lambda: [2], first, (Reply("graph/echo", _echo, None, told),)))]
        sums.deliver(_frame(2, "graph/told", 1))  # (before party 2 starts: buffered)
        for party in parties:
            if not native:
                party.program = _written_out(party.program)  # type: ignore[arg-type]
            sums.start(party, START)
        await asyncio.sleep(0)
        assert sums.running() == 0
        return parties

    parties = run_virtual(main())
    assert sorted(_Counted.closes) == ([0, 2] if native else [])
    assert [p.ended for p in parties] == [[("s", None, True)]] * 2


def test_a_host_stopped_by_a_responders_own_send_opens_no_round_after_it() -> None:
    class _Stopping(Net):
        sums: PartySums | None = None

        def _transmit(self, frame: Frame) -> None:
            super()._transmit(frame)
            assert self.sums is not None
            self.sums.stop()

    async def main() -> tuple[StubParty, PartySums]:
        net = _Stopping(3)
        sums = net.sums = host(net)
        party = StubParty(0, _responder(0, each(_echo)))
        sums.start(party, START)
        await asyncio.sleep(0)
        return party, sums

    party, sums = run_virtual(main())
    assert party.ended == [("s", None, False)] and sums.running() == 0
    assert not sums._deadlines  # (no timer left for a round the stopped host opened)
