"""A program whose plan a host can read: :class:`Responder`, rounds that each answer the controller.

Most party programs of the secure-sum engines are a fixed sequence: a first message to the
controller, then rounds that each wait for one message from the controller and answer it with
a message computed from the party's state and that message.  A :class:`Responder` is such a
program, written as its parts rather than as a generator function: a state made when it starts
(``begin``), its first :class:`Reply` and its rounds (each a :class:`Reply` with the
:class:`~parties.secure.program.Expect` it answers).

It *is* a program (a :class:`~collections.abc.Generator` of the operations of
:mod:`parties.secure.program`): a driver that only knows operations (:func:`parties.secure.drive.drive`,
:func:`parties.secure.counting.count`) steps it as it steps any program, and it yields what
the equivalent generator yields::

    state = begin()
    yield Answer(CONTROLLER, first.phase, first.compute, (state,), first.batch)
    for r in rounds:
        message = controller_message(me, (yield r.expect), r.expect)
        yield Answer(CONTROLLER, r.phase, r.compute, (state, message), r.batch)

A host of many parties (:class:`parties.party_sum.PartySums`) reads its parts instead and runs
each round without resuming a generator or building a delivery: the message the round takes is
handed to the round's batch with every other party's of the same turn.  The outcome is the same:
the same messages sent in the same order, the same errors (:func:`~parties.secure.program.round_timeout`
when the controller's message did not come in time, a computation's
:class:`~mprr.errors.ProtocolError` ending the program).  The :class:`Reply` objects are
immutable and may be shared by every party's responder of one session.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from mprr.errors import ConfigurationError, ProtocolError
from parties.topology import CONTROLLER
from parties.wire.codec import Message
from parties.secure.program import Answer, Delivery, Expect, Operation, controller_message

__all__ = ["Reply", "Responder"]


@dataclass(frozen=True, slots=True)
class Reply:
    """A message to the controller in ``phase``: ``compute(state)`` for a responder's first
    reply (``expect`` None), ``compute(state, message)`` for a round, ``message`` being the
    controller's message of ``expect``.  ``batch``: the computation for many calls at once, as
    an :class:`~parties.secure.program.Answer`'s."""

    phase: str
    compute: Callable[..., Message]
    batch: Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]] | None = None
    expect: Expect[Any] | None = None

    def __post_init__(self) -> None:
        if self.expect is not None and self.expect.sources != (CONTROLLER,):
            raise ConfigurationError(f"a responder's round answers one message from the controller, got an "
                                     f"expectation of sources {self.expect.sources!r}")
        if self.expect is not None and self.expect.stream:
            raise ConfigurationError("a responder's round answers one message from the controller, got a streamed "
                                     f"expectation (phase {self.expect.phase!r})")


class Responder(Generator[Operation, "Delivery[Any] | None", None]):
    """Actor ``me``'s program of a first reply and rounds that each answer the controller (module
    docstring).

    Parameters
    ----------
    me
        The actor running it.
    begin
        Makes the program's state when it starts (a :class:`~mprr.errors.ProtocolError` it
        raises ends the program, as a generator's first step would).
    first
        The first message to the controller (its ``expect`` None), computed from the state.
    rounds
        The rounds, in order: each ``expect`` (one message from the controller) and its reply.
    """

    __slots__ = ("me", "begin_state", "first", "rounds", "state", "_next", "_over")

    def __init__(self, me: int, begin: Callable[[], Any], first: Reply, rounds: tuple[Reply, ...]) -> None:
        if first.expect is not None:
            raise ConfigurationError("a responder's first reply answers no message (its expect must be None)")
        for k, r in enumerate(rounds):
            if r.expect is None:
                raise ConfigurationError(f"a responder's round of phase {r.phase!r} needs the expectation it answers")
            if k and r.expect is rounds[k - 1].expect:  # (as a program's: a new Expect object is a new round)
                raise ConfigurationError(f"a responder's round {k} expects what round {k - 1} did (phase "
                                         f"{r.expect.phase!r}): each round needs its own expectation")
        self.me, self.begin_state, self.first, self.rounds = me, begin, first, rounds
        self.state: Any = None
        self._next = 0  # the next operation of the generator it equals: 0 its first reply, 2k + 1 round k's Expect, ...
        self._over = False

    def begin(self) -> Any:
        """Make the state (:attr:`state`); a host that runs the rounds itself calls it once, first."""
        self.state = self.begin_state()
        return self.state

    # ------------------------------------------------------------------ the generator protocol
    def send(self, value: Delivery[Any] | None) -> Operation:
        """The next operation, after ``value`` (the delivery of the round it expected, or None)."""
        k = self._next  # 0: the first reply; 2r + 1: round r's expectation; 2r + 2: its reply
        if self._over:
            raise StopIteration
        if not k and value is not None:
            raise TypeError("can't send non-None value to a just-started generator")
        self._next = k + 1
        try:
            if not k:
                first = self.first
                return Answer(CONTROLLER, first.phase, first.compute, (self.begin(),), first.batch)
            r = (k - 1) >> 1
            if r == len(self.rounds):
                raise StopIteration
            reply = self.rounds[r]
            expect = reply.expect
            assert expect is not None  # (checked at construction)
            if k & 1:
                return expect
            message = controller_message(self.me, value, expect)
            return Answer(CONTROLLER, reply.phase, reply.compute, (self.state, message), reply.batch)
        except BaseException:
            self._over = True
            raise

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Operation:
        """Raise the error at the operation it is stopped at: it handles none, so it ends with it
        (a ``StopIteration`` thrown in comes out a ``RuntimeError``, as from a generator)."""
        self._over = True
        error = _error(typ, val, tb)
        try:
            if isinstance(error, StopIteration):
                raise RuntimeError("generator raised StopIteration") from error
            raise error
        finally:  # (the error's traceback holds this frame: without these, a cycle keeps the state alive)
            del error, typ, val, tb


def _error(typ: Any, val: Any, tb: Any) -> BaseException:
    """The exception of a generator's ``throw(typ, val, tb)``."""
    if isinstance(typ, BaseException):
        error = typ
    elif isinstance(val, BaseException):
        error = val
    else:
        error = typ() if val is None else typ(val)
    return error if tb is None else error.with_traceback(tb)
