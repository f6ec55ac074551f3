"""A driver's state of one round of a program, and one step of a program.

Both drivers (:func:`parties.secure.drive.drive`, :func:`parties.secure.counting.count`) keep
the round a program opened with an :class:`~parties.secure.program.Expect` in a
:class:`RoundState`: who is still awaited, and what arrived since the program's last
:class:`~parties.secure.program.Delivery`; :func:`step` resumes a program and turns its return
into :class:`Finished` (:func:`throw` raises an error in it; :func:`answer` runs an
:class:`~parties.secure.program.Answer`'s computation on its own).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from mprr.errors import ProtocolError
from parties.wire.codec import Message
from parties.secure.program import Answer, Delivery, Expect, Operation, Program

__all__ = ["Finished", "RoundState", "answer", "step", "throw"]


class RoundState:
    """A driver's state of one open expectation: who is still awaited, and what arrived since
    the program's last delivery."""

    __slots__ = ("expect", "pending", "first", "others", "over")

    def __init__(self, expect: Expect[Any]) -> None:
        self.expect = expect
        self.over = False  # its last delivery was made
        self.pending = dict.fromkeys(expect.sources)
        self.first: dict[int, Message] = {}
        self.others: list[tuple[int, Message]] = []

    def sort(self, arrivals: Iterable[tuple[int, Message]]) -> bool:
        """Keep the arrivals of this round (first messages of sources, others); skip the rest.
        True if any was kept."""
        expect = self.expect
        kind, session, where, pending = expect.kind, expect.session, expect.where, self.pending
        kept = False
        for src, msg in arrivals:
            if type(msg) is not kind or getattr(msg, "session", None) != session or (
                    where is not None and not where(msg)):
                continue  # another session or combination: not this round's
            kept = True
            if src in pending:
                del pending[src]
                self.first[src] = msg
            else:
                self.others.append((src, msg))
        return kept

    def add(self, src: int, msg: Message) -> None:
        """Keep an arrival of this round (:meth:`Expect.accepts
        <parties.secure.program.Expect.accepts>` it): :meth:`sort` of one, its checks done."""
        pending = self.pending
        if src in pending:
            del pending[src]
            self.first[src] = msg
        else:
            self.others.append((src, msg))

    def delivery(self, *, timed_out: bool = False) -> Delivery[Any]:
        """What arrived since the last delivery (taken), and who is missing."""
        missing = tuple(self.pending)
        got: Delivery[Any] = Delivery(MappingProxyType(self.first), tuple(self.others), missing,
                                      timed_out or not missing, timed_out and bool(missing))
        self.first, self.others = {}, []
        self.over = got.done
        return got


class Finished:
    """A program's return value (a driver's marker)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def step(program: Program[Any], value: Delivery[Any] | None) -> Operation | Finished:
    """Send ``value`` to ``program``: its next operation, or :class:`Finished` with its result."""
    try:
        return program.send(value)
    except StopIteration as stop:
        return Finished(stop.value)


def throw(program: Program[Any], error: BaseException) -> Operation | Finished:
    """Raise ``error`` in ``program`` at its ``yield`` (an :class:`~parties.secure.program.Answer`'s
    computation failed): its next operation, or :class:`Finished` with its result, if it handles
    the error; otherwise the error propagates."""
    try:
        return program.throw(error)
    except StopIteration as stop:
        return Finished(stop.value)


def answer(op: Answer) -> Message | ProtocolError:
    """The message of ``op``'s computation, or the ProtocolError it raised (what a driver that
    runs each answer on its own sends, or raises in the program with :func:`throw`)."""
    try:
        return op.compute(*op.args)
    except ProtocolError as exc:
        return exc
