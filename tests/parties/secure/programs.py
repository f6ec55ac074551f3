"""A fake two-role sum written as sans-I/O programs (the controller adds the parties' vectors and
broadcasts the total), and the helpers that run programs: shared by the tests of the program
model and of its drivers."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from mprr.errors import MessageError, RoundTimeout
from parties.router import Router
from parties.secure.messages import PartialSum
from parties.secure.program import Answer, Broadcast, Expect, Mark, Program, Reject, Send, each, receive
from parties.secure.drive import drive
from parties.topology import CONTROLLER


S = "sess"


def vec(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint8)


def party(me: int, x: np.ndarray, timeout: float = 1.0) -> Program[int]:
    """Send x to the controller; wait for the total it broadcasts back."""
    yield Send(CONTROLLER, PartialSum(S, -1, x), phase="up")
    got = yield from receive(Expect(PartialSum, S, (CONTROLLER,), "down", timeout))
    if got.timed_out:
        raise RoundTimeout("no total", phase="down", timeout=timeout, missing=got.missing)
    return int(got.messages[CONTROLLER].values.sum())


def partial(x: np.ndarray) -> PartialSum:
    """A party's up message computed from its vector, refused (MessageError) if it holds a 9."""
    if 9 in x.tolist():
        raise MessageError("a 9 is not allowed")
    return PartialSum(S, -1, x)


partials = each(partial)
"""The batch of :func:`partial`: each call in turn."""


def answering_party(me: int, x: np.ndarray, timeout: float = 1.0) -> Program[int]:
    """:func:`party` whose up message is an Answer (:func:`partial`, batch :func:`partials`); a
    refused vector is sent as zeros instead."""
    try:
        yield Answer(CONTROLLER, "up", partial, (x,), partials)
    except MessageError:
        yield Send(CONTROLLER, PartialSum(S, -1, np.zeros_like(x)), phase="up")
    got = yield from receive(Expect(PartialSum, S, (CONTROLLER,), "down", timeout))
    return int(got.messages[CONTROLLER].values.sum())


def controller(parties: tuple[int, ...], timeout: float = 1.0) -> Program[int]:
    """Mark the round, add the parties' vectors as they arrive (streamed), broadcast the total."""
    yield Mark("up")
    expect = Expect(PartialSum, S, parties, "up", timeout, stream=True)
    total = np.zeros(2, dtype=np.uint8)
    while True:
        got = yield expect
        assert got is not None
        for src, msg in got.others:
            yield Reject(src, msg, "up", "a second message")
        for msg in got.messages.values():
            total = total + msg.values
        if got.done:
            break
    if got.timed_out:
        raise RoundTimeout("missing", phase="up", timeout=timeout, missing=got.missing)
    yield Broadcast(parties, PartialSum(S, -1, total), phase="down")
    return int(total.sum())


async def run_all(net: Router, programs: dict[int, Program[Any]]) -> dict[int, Any]:
    async with asyncio.TaskGroup() as tg:
        tasks = {a: tg.create_task(drive(net.endpoint(a), p)) for a, p in programs.items()}
    return {a: t.result() for a, t in tasks.items()}


def sum_programs(xs: list[np.ndarray]) -> dict[int, Program[Any]]:
    roster = tuple(range(len(xs)))
    return {CONTROLLER: controller(roster), **{i: party(i, x) for i, x in enumerate(xs)}}


def with_parties(net: Router, xs: list[np.ndarray], ctrl: Program[int]) -> Program[int]:
    for i, x in enumerate(xs):
        asyncio.get_running_loop().create_task(drive(net.endpoint(i), party(i, x, timeout=5.0)))
    return ctrl


def engine_programs(eng: Any, ctx: Any, parties: Any) -> dict[int, Program[Any]]:
    from parties.secure.suite import SIZING

    from dataclasses import replace
    ctx = replace(ctx, suite=SIZING)
    zero = np.zeros(ctx.length, np.uint8)
    return {CONTROLLER: eng.controller_program(ctx), **{p: eng.party_program(p, zero, ctx) for p in parties}}
