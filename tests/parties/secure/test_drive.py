"""The asyncio driver (parties.secure.drive): the fake two-role sum over an in-memory network,
one timeout per round, polls, foreign yields and rounds that are over (the counting driver
alike)."""

from __future__ import annotations

import asyncio
from typing import Any

import networkx as nx
import pytest

from mprr.errors import ConfigurationError, RoundTimeout
from parties.router import Router
from parties.secure.messages import PartialSum
from parties.secure.program import Delivery, Expect, Poll, Program, Send
from parties.secure.counting import count
from parties.secure.drive import drive
from parties.topology import CONTROLLER
from tests.parties.secure.programs import S, answering_party, sum_programs, run_all, with_parties, controller, vec


async def test_asyncio_driver_runs_the_sum() -> None:
    xs = [vec(1, 2), vec(3, 0), vec(0, 1)]
    net = Router(3)
    results = await run_all(net, sum_programs(xs))
    assert results == {CONTROLLER: 7, 0: 7, 1: 7, 2: 7}


async def test_both_drivers_send_an_answers_reply_and_raise_its_error_in_the_program() -> None:
    xs = [vec(1, 2), vec(9, 0), vec(0, 1)]  # party 1's computation refuses its vector: it sends zeros
    programs = lambda: {CONTROLLER: controller((0, 1, 2)),  # noqa: E731
                        **{i: answering_party(i, x) for i, x in enumerate(xs)}}
    assert await run_all(Router(3), programs()) == {CONTROLLER: 4, 0: 4, 1: 4, 2: 4}
    counted = count(programs())
    assert dict(counted.results) == {CONTROLLER: 4, 0: 4, 1: 4, 2: 4}
    assert counted.statistics.messages == 6  # (three up, three down: a refused answer sends nothing)


async def test_asyncio_driver_one_timeout_per_round() -> None:
    """Party 2 never sends: the controller's round ends at its timeout (virtual clock), naming it."""
    xs = [vec(1, 2), vec(3, 0)]
    net = Router(3)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(RoundTimeout, match="missing") as err:
        await drive(net.endpoint(CONTROLLER), with_parties(net, xs, controller((0, 1, 2), timeout=0.5)))
    assert err.value.missing == (2,)
    assert loop.time() - start == pytest.approx(0.5)


async def test_asyncio_driver_poll_does_not_wait() -> None:
    def poller() -> Program[Delivery[Any]]:
        ex = Expect(PartialSum, S, (0,), "up", 0.2, stream=True)
        got = yield Poll(ex)
        assert got is not None and not got.messages and got.missing == (0,) and not got.done
        last = yield ex
        assert last is not None
        return last

    net = Router(1)
    got = await drive(net.endpoint(CONTROLLER), poller())
    assert got.timed_out and got.missing == (0,)


def test_drivers_refuse_a_foreign_yield() -> None:
    def bad() -> Program[None]:
        yield "send"  # type: ignore[misc]

    with pytest.raises(ConfigurationError, match="must yield an Operation, got 'send'"):
        count({0: bad()})
    net = Router(1, topology=nx.complete_graph(1))
    with pytest.raises(ConfigurationError, match="must yield an Operation"):
        asyncio.run(drive(net.endpoint(0), bad()))


def test_a_round_that_is_over_cannot_be_expected_again() -> None:
    """Both drivers refuse a program that yields the expectation of a round already over (it
    would wait for sources that already answered)."""
    def twice() -> Program[None]:
        ex = Expect(PartialSum, S, (0,), "up", 0.5, stream=True)
        got = yield ex
        assert got is not None and got.done
        yield Poll(ex)

    def sender() -> Program[None]:
        yield Send(CONTROLLER, PartialSum(S, -1, vec(1)), phase="up")

    with pytest.raises(ConfigurationError, match="the round of phase 'up' is over"):
        count({CONTROLLER: twice(), 0: sender()})

    async def run() -> None:
        net = Router(1)
        await drive(net.endpoint(0), sender())
        await drive(net.endpoint(CONTROLLER), twice())

    with pytest.raises(ConfigurationError, match="the round of phase 'up' is over"):
        asyncio.run(run())
