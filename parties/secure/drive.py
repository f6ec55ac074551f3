"""The asyncio driver of a secure-sum program: :func:`drive`.

It runs one program (:mod:`parties.secure.program`) over an
:class:`~parties.transport.Endpoint` (every runtime: memory, tcp, ray) with one deadline per
round, enforced by ``asyncio.timeout``; it owns time and I/O, the program neither.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from mprr.errors import ConfigurationError, ProtocolError
from parties.mailbox import Envelope
from parties.wire.codec import Message
from parties.secure.program import (Answer, Broadcast, Delivery, Expect, Mark, Operation, Poll, Program, Reject,
                                    Send, SendEach)
from parties.secure.rounds import Finished, RoundState, answer, step, throw

if TYPE_CHECKING:
    from parties.transport import Endpoint

__all__ = ["drive"]

R = TypeVar("R")


async def drive(ep: Endpoint, program: Program[R]) -> R:
    """Run ``program`` as actor ``ep.actor`` over its endpoint; return the program's result.

    Sends go through the endpoint (encoded, checked and counted there).  An :class:`Expect`
    or :class:`Poll` opens a round whose deadline is one ``asyncio.timeout`` of
    ``expect.timeout`` seconds on the running loop's clock (so tests run it on a virtual
    clock); a streamed expectation's batches and the program's work between them (sends,
    polls, rejections) all run inside that one scope.  A :class:`Poll` yields to the event
    loop once, so that the peers' tasks run, then takes what has arrived.  Errors the program
    raises propagate as they are.
    """
    op = step(program, None)
    over: Expect[Any] | None = None  # the last round that ended
    while not isinstance(op, Finished):
        if isinstance(op, (Expect, Poll)):
            expect = op if isinstance(op, Expect) else op.expect
            if expect is over:
                raise ConfigurationError(f"the round of phase {expect.phase!r} is over: a program expects it anew")
            over = expect
            op = await _round(ep, program, op)
        else:
            op = _resume(program, await _perform(ep, op))
    return op.value  # type: ignore[no-any-return]


def _columns(envs: list[Envelope[Any]]) -> tuple[Iterable[int], Iterable[Message]]:
    """The senders and the messages of ``envs``."""
    return (e.src for e in envs), (e.message for e in envs)


def _resume(program: Program[Any], error: ProtocolError | None) -> Operation | Finished:
    """``program``'s next operation after one it asked for: ``error`` (an :class:`Answer`'s
    computation failed) raised in it at its ``yield``, else ``None`` sent."""
    return step(program, None) if error is None else throw(program, error)


async def _perform(ep: Endpoint, op: Operation) -> ProtocolError | None:
    """One non-receiving operation on the endpoint; an :class:`Answer`'s computation is run on its
    own (the ProtocolError it raises is returned, nothing sent)."""
    if isinstance(op, Answer):
        reply = answer(op)
        if isinstance(reply, ProtocolError):
            return reply
        await ep.send(op.to, reply, phase=op.phase)
    elif isinstance(op, SendEach):
        await ep.send_each(op.to, op.messages, phase=op.phase)
    elif isinstance(op, Broadcast):
        await ep.broadcast(op.to, op.message, phase=op.phase)
    elif isinstance(op, Send):
        await ep.send(op.to, op.message, phase=op.phase)
    elif isinstance(op, Reject):
        ep.reject(Envelope(op.source, ep.actor, op.phase, op.message, 0), op.reason)
    elif isinstance(op, Mark):
        ep.network.begin_round(op.phase)
        await asyncio.sleep(0)  # the parties' tasks see the new round before the controller waits
    else:
        raise ConfigurationError(f"a secure-sum program must yield an Operation, got {op!r}")
    return None


async def _round(ep: Endpoint, program: Program[Any], op: Expect[Any] | Poll[Any]) -> Operation | Finished:
    """Run the round opened by ``op`` until it is over (every source answered, or its deadline
    passed, and the program was told), or until the program moves on to another round or
    returns; return the program's next operation (or :class:`Finished`)."""
    expect = op if isinstance(op, Expect) else op.expect
    state = RoundState(expect)
    kind, phase = expect.kind, expect.phase
    current: Operation | Finished = op
    performing = False  # an operation was under way when the deadline passed

    def ours(o: Operation | Finished) -> bool:
        return o is expect or (isinstance(o, Poll) and o.expect is expect)

    try:
        async with asyncio.timeout(expect.timeout):
            while not isinstance(current, Finished):
                if not ours(current):
                    if isinstance(current, (Expect, Poll)):
                        return current  # the program moved on to another round
                    performing = True
                    error = await _perform(ep, current)
                    performing = False
                    current = _resume(program, error)
                    continue
                if isinstance(current, Poll):
                    await asyncio.sleep(0)  # the peers' tasks run
                    if state.pending:
                        state.sort(zip(*_columns(ep.take_all(kinds=kind, phase=phase))))
                else:
                    while state.pending:
                        envs = await ep.recv_many(kinds=kind, phase=phase, timeout=None)
                        if state.sort(zip(*_columns(envs))) and expect.stream:
                            break
                got: Delivery[Any] | None = state.delivery()
                over = got is not None and got.done
                current = step(program, got)
                got = None  # (a batch of vectors is not kept while the next one is awaited)
                if over:
                    break
    except TimeoutError:
        if performing:  # (a Mark's yield to the loop: the mark itself was made)
            current = step(program, None)
        # the round ends now: the program is told at its next operation in this round
        while not isinstance(current, Finished):
            if ours(current):
                return step(program, state.delivery(timed_out=True))
            if isinstance(current, (Expect, Poll)):
                return current
            current = _resume(program, await _perform(ep, current))
        return current
    if ours(current):
        raise ConfigurationError(f"the round of phase {phase!r} is over: a program expects it anew")
    return current
