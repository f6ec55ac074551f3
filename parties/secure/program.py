"""Sans-I/O secure-sum programs: one generator per role, yielding what it wants done.

A role's *program* (a party's side of an engine, or the controller's) does no I/O, reads no
clock and never touches asyncio, in the style of h11's protocol objects: it is a generator that
yields :data:`Operation` objects and is sent back what came:

- :class:`Send` one message to one actor, :class:`SendEach` different messages of one kind to
  many (a party's shares), :class:`Broadcast` one message to many, :class:`Answer` the message a
  computation of the program's returns (which a host may run for many parties together);
- :class:`Expect` one message of ``kind`` in ``session`` and ``phase`` from each of
  ``sources``: a round, which ends when every source answered or after ``timeout`` seconds.
  The driver answers with a :class:`Delivery` (messages by source, the other matching messages,
  who is still missing, whether the round is over).  With ``stream=True`` it answers in
  batches as they arrive (the program yields the same expectation again for the next batch),
  so a round of n vectors is folded, never held; :class:`Poll` asks for what has arrived for
  an open expectation without waiting (a party receives its peers' shares while it sends its own);
- :class:`Reject` a well-formed message the program cannot use (counted against its sender);
- :class:`Mark` the start of a communication round (the controller drives the rounds).

The program's return value is its role's result.  It raises the :class:`mprr.errors.ProtocolError`
it decides on (a missing party, a bad message): a driver never interprets messages.
:func:`each` is the plainest batch of an :class:`Answer`.  :func:`receive` and
:func:`from_controller` are the rounds programs write most
(:func:`controller_message` checks a round of :func:`from_controller`'s for a program that
yields its expectation itself, :func:`round_timeout` is its error).  A program of a first reply and
rounds that each answer one message from the controller is best written as a
:class:`parties.secure.responder.Responder`, whose parts a host reads.

Drivers own time and I/O: :func:`parties.secure.drive.drive` runs one program over an
endpoint (every runtime), :func:`parties.secure.counting.count` runs every role of a sum in one
process and counts the traffic (the closed form); both keep a round's state in
:class:`parties.secure.rounds.RoundState`.

Example (a party that sends ``x`` to the controller and waits for its acknowledgement)::

    def party(x):
        yield Send(CONTROLLER, PartialSum("s", -1, x), phase="p")
        got = yield Expect(PartialSum, "s", (CONTROLLER,), "p/ack", timeout=5.0)
        return got.messages[CONTROLLER].values
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mprr.errors import ConfigurationError, ProtocolError, RoundTimeout
from parties.topology import CONTROLLER, actor_name
from parties.wire.codec import Message

__all__ = [
    "Answer",
    "Broadcast",
    "Delivery",
    "Expect",
    "Mark",
    "Operation",
    "Poll",
    "Program",
    "Reject",
    "Send",
    "SendEach",
    "controller_message",
    "each",
    "from_controller",
    "receive",
    "round_timeout",
]

M = TypeVar("M", bound=Message)
R = TypeVar("R")



@dataclass(frozen=True, slots=True)
class Send:
    """Send ``message`` to actor ``to`` in ``phase``."""

    to: int
    message: Message
    phase: str


@dataclass(frozen=True, slots=True)
class SendEach:
    """Send ``messages[k]`` to ``to[k]`` for every k (one kind; e.g. a party's share vectors)."""

    to: tuple[int, ...]
    messages: tuple[Message, ...]
    phase: str

    def __post_init__(self) -> None:
        if len(self.to) != len(self.messages):
            raise ConfigurationError(f"SendEach needs one message per destination, got "
                                     f"{len(self.messages)} messages for {len(self.to)} destinations")


@dataclass(frozen=True, slots=True)
class Broadcast:
    """Send the same ``message`` to every actor of ``to`` (one message each)."""

    to: tuple[int, ...]
    message: Message
    phase: str


@dataclass(frozen=True, eq=False, slots=True)
class Expect(Generic[M]):
    """A round: one ``kind`` message of ``session`` in ``phase`` from each of ``sources``.

    A message of another session, or one ``where`` refuses (e.g. another combination of the
    same session), is not this round's: it is skipped (a late delivery of an earlier sum).
    The round ends when every source answered, or ``timeout`` seconds after the program first
    yielded this expectation (then :attr:`Delivery.timed_out`).  ``stream``: answered in
    batches as messages arrive; the program yields this same object again for the next batch
    until :attr:`Delivery.done`.  Identity matters: a new ``Expect`` object is a new round.
    """

    kind: type[M]
    session: str
    sources: tuple[int, ...]
    phase: str
    timeout: float
    stream: bool = False
    where: Callable[[M], bool] | None = None

    def accepts(self, message: Message) -> bool:
        """Whether ``message`` belongs to this round (kind, session and ``where``)."""
        return (type(message) is self.kind and getattr(message, "session", None) == self.session
                and (self.where is None or self.where(message)))


@dataclass(frozen=True, slots=True)
class Poll(Generic[M]):
    """What has arrived for the open streamed ``expect`` so far, without waiting (a
    :class:`Delivery`, possibly empty; opens the round if it is not open yet)."""

    expect: Expect[M]


@dataclass(frozen=True, slots=True)
class Reject:
    """Reject ``message`` of ``source`` received in ``phase``: the program cannot use it
    (counted against its sender, :meth:`parties.transport.Endpoint.reject`)."""

    source: int
    message: Message
    phase: str
    reason: str


@dataclass(frozen=True, slots=True)
class Mark:
    """The start of a communication round of ``phase`` (:meth:`parties.transport.Transport.begin_round`)."""

    phase: str


@dataclass(frozen=True, slots=True)
class Answer:
    """Send actor ``to`` in ``phase`` the message ``compute(*args)`` returns: a round's pure
    computation of the program's own reply, from its own state, that a driver runs for it.

    A driver stepping many programs at once (a host of many parties,
    :class:`parties.party_sum.PartySums`) may run the answers of one ``batch`` together:
    ``batch(calls)`` of their ``args`` in order, one pass per kind of work across them, returns
    for each call its message or the :class:`~mprr.errors.ProtocolError` it raised, exactly as
    each ``compute(*args)`` in turn would.  A ProtocolError of the computation is raised in the
    program at its ``yield``; the program is sent ``None`` after the send, as after a :class:`Send`.
    """

    to: int
    phase: str
    compute: Callable[..., Message]
    args: tuple[Any, ...]
    batch: Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]] | None = None


Operation = Send | SendEach | Broadcast | Answer | Expect[Any] | Poll[Any] | Reject | Mark
"""What a program yields."""


@dataclass(frozen=True, slots=True)
class Delivery(Generic[M]):
    """What a driver sends back for an :class:`Expect` or :class:`Poll`.

    Attributes
    ----------
    messages
        The first message of each source that answered (in this batch, when streamed).
    others
        Messages of the round from an actor that is not a source, or from a source that had
        already answered (a duplicate, or a second different message): the program decides.
    missing
        Sources that have not answered yet.
    done
        The round is over: every source answered, or the timeout passed.
    timed_out
        The round ended at its timeout with sources missing.
    """

    messages: Mapping[int, M]
    others: tuple[tuple[int, M], ...] = ()
    missing: tuple[int, ...] = ()
    done: bool = True
    timed_out: bool = False


Program = Generator[Operation, "Delivery[Any] | None", R]
"""A role's program: yields operations, is sent a :class:`Delivery` after an Expect or Poll
(None after any other operation), returns the role's result."""


def each(compute: Callable[..., Message]) -> Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]]:
    """The plainest batch of an :class:`Answer`: ``compute(*args)`` of each call in turn (back to
    back, no other work between them), its ProtocolError returned, not raised."""

    def batch(calls: list[tuple[Any, ...]]) -> list[Message | ProtocolError]:
        out: list[Message | ProtocolError] = []
        for args in calls:
            try:
                out.append(compute(*args))
            except ProtocolError as exc:
                out.append(exc)
        return out

    return batch


def receive(expect: Expect[M]) -> Generator[Operation, Delivery[Any] | None, Delivery[M]]:
    """``got = yield from receive(expect)``: the round's one :class:`Delivery` (a non-streamed
    expectation is answered once, at the end of its round)."""
    got = yield expect
    if got is None:  # pragma: no cover - a driver always answers an Expect
        raise ProtocolError(f"the driver did not answer the expectation of phase {expect.phase!r}")
    return got


def from_controller(me: int, kind: type[M], session: str, phase: str, timeout: float
                    ) -> Generator[Operation, Delivery[Any] | None, M]:
    """A program's round of one ``kind`` message of ``session`` from the controller within
    ``timeout`` s (``msg = yield from from_controller(...)``; a message of another session is
    not this round's, and its sender stays awaited).

    Raises
    ------
    RoundTimeout
        No ``kind`` message of this session arrived in time.
    """
    expect = Expect(kind, session, (CONTROLLER,), phase, timeout)
    got: Delivery[M] | None = yield expect
    return controller_message(me, got, expect)


def controller_message(me: int, got: Delivery[M] | None, expect: Expect[M]) -> M:
    """The controller's message in ``got``, the delivery of ``expect`` (a round of one message
    from the controller) to actor ``me``: :func:`from_controller` for a program that yields
    its expectation itself (``msg = controller_message(me, (yield expect), expect)``).

    Raises
    ------
    RoundTimeout
        No message of the round arrived in time.
    """
    if got is None:  # pragma: no cover - a driver always answers an Expect
        raise ProtocolError(f"the driver did not answer the expectation of phase {expect.phase!r}")
    if got.timed_out:
        raise round_timeout(me, expect)
    return got.messages[CONTROLLER]


def round_timeout(me: int, expect: Expect[Any]) -> RoundTimeout:
    """The error of actor ``me``'s round ``expect`` of one message from the controller that timed
    out (:func:`controller_message` raises it)."""
    return RoundTimeout(
        f"phase {expect.phase!r}: {actor_name(me)} timed out after {expect.timeout:g} s waiting for "
        f"{expect.kind.NAME} of session {expect.session!r} from the controller",
        phase=expect.phase, timeout=expect.timeout, missing=(CONTROLLER,),
    )
