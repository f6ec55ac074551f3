"""Tests of ``parties.party_sum``: the host drives a party's secure-sum program and tells the
party how it ended; the party itself never touches time or I/O.

Runs on the virtual clock (``tests/virtual_clock.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

from mprr.errors import ProtocolError
from parties.party_sum import run_party_sum
from parties.router import Router
from parties.secure.messages import ShareVector
from parties.secure.program import Expect
from parties.wire.requests import SecureSumStart
from tests.virtual_clock import run_virtual

START = SecureSumStart(1, "s", "graph", ((0, 2),))


class _Party:
    """What the host asks of a party: its program for a start, and the end of it."""

    def __init__(self, program: Generator[Any, Any, Any] | None) -> None:
        self.program = program
        self.asked: list[tuple[SecureSumStart, object]] = []
        self.ended: list[tuple[str, ProtocolError | None, bool]] = []

    def secure_program(self, start: SecureSumStart, network: object) -> Generator[Any, Any, Any] | None:
        self.asked.append((start, network))
        return self.program

    def end_secure_sum(self, session: str, error: ProtocolError | None, *, ran: bool = True) -> None:
        self.ended.append((session, error, ran))


def _run(party: _Party) -> None:
    async def main() -> None:
        net = Router(2)
        await run_party_sum(party, net.endpoint(0), START)  # type: ignore[arg-type]

    run_virtual(main())


def test_a_refused_start_drives_nothing_and_ends_nothing() -> None:
    party = _Party(None)
    _run(party)
    assert [s for s, _ in party.asked] == [START] and party.ended == []


def test_a_finished_program_closes_the_session() -> None:
    def program() -> Generator[Any, Any, None]:
        return None
        yield  # a generator

    party = _Party(program())
    _run(party)
    assert party.ended == [("s", None, True)]


def test_a_failing_program_aborts_the_session_with_its_error_and_the_host_goes_on() -> None:
    def program() -> Generator[Any, Any, None]:
        got = yield Expect(ShareVector, "s", (1,), "graph/shares", 0.5)
        assert got.timed_out
        raise ProtocolError("no share from party 1")

    party = _Party(program())
    _run(party)  # the error is the party's to log, not the host's to raise
    [(session, error, ran)] = party.ended
    assert session == "s" and ran and isinstance(error, ProtocolError) and str(error) == "no share from party 1"


def test_a_host_that_stops_leaves_the_session_as_it_stands() -> None:
    def program() -> Generator[Any, Any, None]:
        yield Expect(ShareVector, "s", (1,), "graph/shares", 60.0)

    party = _Party(program())

    async def main() -> None:
        net = Router(2)
        task = asyncio.create_task(run_party_sum(party, net.endpoint(0), START))  # type: ignore[arg-type]
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_virtual(main())
    assert party.ended == [("s", None, False)]
