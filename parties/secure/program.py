"""Sans-I/O secure-sum programs: one generator per role, and the drivers that run them.

A role's *program* (a party's side of an engine, or the controller's) does no I/O, reads no
clock and never touches asyncio, in the style of h11's protocol objects: it is a generator that
yields :data:`Operation` objects and is sent back what came:

- :class:`Send` one message to one actor, :class:`SendEach` different messages of one kind to
  many (a party's shares), :class:`Broadcast` one message to many;
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

Drivers own time and I/O:

- :func:`drive` runs one program over an :class:`~parties.transport.Endpoint` (every runtime:
  memory, tcp, ray) with one deadline per round, enforced by ``asyncio.timeout``;
- :func:`count` runs every role of a sum in one process with a direct in-process router (no
  network, no event loop), sizes every message with the codec (:func:`parties.wire.codec.encode`)
  and counts it exactly as a network does (:class:`parties.traffic.TrafficCounter`): its
  :class:`Count` is the closed-form traffic of a fault-free run.

Example (a party that sends ``x`` to the controller and waits for its acknowledgement)::

    def party(x):
        yield Send(CONTROLLER, PartialSum("s", -1, x), phase="p")
        got = yield Expect(PartialSum, "s", (CONTROLLER,), "p/ack", timeout=5.0)
        return got.messages[CONTROLLER].values
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from mprr.errors import ConfigurationError, ProtocolError
from parties.mailbox import Envelope
from parties.topology import CONTROLLER
from parties.traffic import Counts, LatencyModel, TrafficCounter, TrafficStatistics
from parties.wire.codec import Message, encode

if TYPE_CHECKING:
    from parties.transport import Endpoint

__all__ = [
    "Broadcast",
    "Count",
    "Delivery",
    "Expect",
    "Mark",
    "Operation",
    "Poll",
    "Program",
    "Reject",
    "Send",
    "SendEach",
    "SizeByShape",
    "count",
    "drive",
    "receive",
]

M = TypeVar("M", bound=Message)
R = TypeVar("R")


# --------------------------------------------------------------------------- operations


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


Operation = Send | SendEach | Broadcast | Expect[Any] | Poll[Any] | Reject | Mark
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


def receive(expect: Expect[M]) -> Generator[Operation, Delivery[Any] | None, Delivery[M]]:
    """``got = yield from receive(expect)``: the round's one :class:`Delivery` (a non-streamed
    expectation is answered once, at the end of its round)."""
    got = yield expect
    if got is None:  # pragma: no cover - a driver always answers an Expect
        raise ProtocolError(f"the driver did not answer the expectation of phase {expect.phase!r}")
    return got


class _Round:
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

    def delivery(self, *, timed_out: bool = False) -> Delivery[Any]:
        """What arrived since the last delivery (taken), and who is missing."""
        missing = tuple(self.pending)
        got: Delivery[Any] = Delivery(MappingProxyType(self.first), tuple(self.others), missing,
                                      timed_out or not missing, timed_out and bool(missing))
        self.first, self.others = {}, []
        self.over = got.done
        return got


# --------------------------------------------------------------------------- asyncio driver


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
    op = _step(program, None)
    over: Expect[Any] | None = None  # the last round that ended
    while not isinstance(op, _Finished):
        if isinstance(op, (Expect, Poll)):
            expect = op if isinstance(op, Expect) else op.expect
            if expect is over:
                raise ConfigurationError(f"the round of phase {expect.phase!r} is over: a program expects it anew")
            over = expect
            op = await _round(ep, program, op)
        else:
            await _perform(ep, op)
            op = _step(program, None)
    return op.value  # type: ignore[no-any-return]


class _Finished:
    """A program's return value (a driver's marker)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _columns(envs: list[Envelope[Any]]) -> tuple[Iterable[int], Iterable[Message]]:
    """The senders and the messages of ``envs``."""
    return (e.src for e in envs), (e.message for e in envs)


def _step(program: Program[Any], value: Delivery[Any] | None) -> Operation | _Finished:
    try:
        return program.send(value)
    except StopIteration as stop:
        return _Finished(stop.value)


async def _perform(ep: Endpoint, op: Operation) -> None:
    """One non-receiving operation on the endpoint."""
    if isinstance(op, SendEach):
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


async def _round(ep: Endpoint, program: Program[Any], op: Expect[Any] | Poll[Any]) -> Operation | _Finished:
    """Run the round opened by ``op`` until it is over (every source answered, or its deadline
    passed, and the program was told), or until the program moves on to another round or
    returns; return the program's next operation (or :class:`_Finished`)."""
    expect = op if isinstance(op, Expect) else op.expect
    state = _Round(expect)
    kind, phase = expect.kind, expect.phase
    current: Operation | _Finished = op
    performing = False  # an operation was under way when the deadline passed

    def ours(o: Operation | _Finished) -> bool:
        return o is expect or (isinstance(o, Poll) and o.expect is expect)

    try:
        async with asyncio.timeout(expect.timeout):
            while not isinstance(current, _Finished):
                if not ours(current):
                    if isinstance(current, (Expect, Poll)):
                        return current  # the program moved on to another round
                    performing = True
                    await _perform(ep, current)
                    performing = False
                    current = _step(program, None)
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
                current = _step(program, got)
                got = None  # (a batch of vectors is not kept while the next one is awaited)
                if over:
                    break
    except TimeoutError:
        if performing:  # (a Mark's yield to the loop: the mark itself was made)
            current = _step(program, None)
        # the round ends now: the program is told at its next operation in this round
        while not isinstance(current, _Finished):
            if ours(current):
                return _step(program, state.delivery(timed_out=True))
            if isinstance(current, (Expect, Poll)):
                return current
            await _perform(ep, current)
            current = _step(program, None)
        return current
    if ours(current):
        raise ConfigurationError(f"the round of phase {phase!r} is over: a program expects it anew")
    return current


# --------------------------------------------------------------------------- counting driver


@dataclass(frozen=True)
class Count:
    """What :func:`count` returns: each role's result and the traffic, counted as a network
    counts it (:class:`parties.traffic.TrafficStatistics`)."""

    results: Mapping[int, Any]
    statistics: TrafficStatistics
    complete: bool = True
    """False when the count stopped at its ``limit``: the statistics are then a lower bound."""

    def sent(self) -> Mapping[int, Counts]:
        """Messages and bytes sent per actor (every role, zero for a silent one)."""
        by = self.statistics.by_sender
        return MappingProxyType({a: by.get(a, Counts(0, 0)) for a in self.results})


@dataclass
class _Actor:
    """The counting driver's state of one role."""

    program: Program[Any]
    inbox: dict[tuple[str, type[Message]], list[tuple[int, Message]]] = field(default_factory=dict)
    round: _Round | None = None  # its open round
    waiting: bool = False  # blocked in its open round
    op: Operation | _Finished | None = None


def count(programs: Mapping[int, Program[Any]], *, size: Callable[[Message], int] | None = None,
          limit: int | None = None, threshold: Counts | None = None,
          mirror: tuple[int, ...] | None = None,
          counterpart: Callable[[Message, int], Message] | None = None) -> Count:
    """Run every role's program in this process with a direct router; count the traffic.

    Parameters
    ----------
    programs
        ``{actor: program}``: the controller (:data:`~parties.topology.CONTROLLER`) and the
        parties of one sum, every one started (not yet stepped); with ``mirror``, the
        controller and one party of the roster only (the *representative*).
    size
        Bytes of a message on the wire (default: ``len(encode(message))``, the codec's size,
        which is what every network counts; :class:`SizeByShape` sizes one message per shape).
    limit
        Stop once more than ``limit`` messages were routed (the work: in a full count, the
        messages counted; in a mirrored one, those of the representative and the controller).
    threshold
        Stop once the traffic counted exceeds ``threshold.messages`` messages or
        ``threshold.bytes`` bytes (e.g. a warning's threshold: the lower bound already crosses it).
        After either stop, the :class:`Count` is marked incomplete, its statistics a lower bound.
    mirror
        The roster of a *role-symmetric* sum, run from one representative party r (the one
        party of ``programs``): every party's traffic is r's traffic relabelled.  Then a
        message r sends to a peer d is counted once for each of the n parties (the peers send
        alike) and delivered back to r as sent by d (the peer's own message to r, by symmetry);
        a message r sends to the controller is delivered to it once as sent by each party of
        the roster; a message the controller sends to another party is counted, not delivered.
        Exact when every party's program, run on all-zero inputs, sends and receives messages
        of the same kinds, phases and sizes, and a party sends to a peer exactly when that
        peer sends to it (each engine says when, :meth:`parties.secure.engine.SecureSumEngine.symmetric`;
        ``tests/parties/secure/test_program.py`` compares it with the full count).
    counterpart
        With ``mirror``: ``counterpart(message, p)`` is party p's message of the same size in
        place of the representative's ``message`` to the controller (e.g. with p's neighbours
        where the message lists the representative's; default: the message itself).

    Returns
    -------
    Count
        Each program's result (with ``mirror``: every party's is the representative's) and the
        :class:`~parties.traffic.TrafficStatistics`.

    Notes
    -----
    The controller runs first, then the parties in the order given; each runs until it waits
    for messages that have not been sent yet, then the next one runs.  Messages are delivered
    in the order they were sent, at once (no clock); when every program waits, the rounds
    still open end as timed out (each program raises its error, which propagates: a fault-free
    sum never gets there).  Rounds are counted as by a network: :class:`Mark` starts an
    explicit round, other sends join one implicit round per phase
    (:class:`parties.traffic.TrafficCounter`).  Each send operation is counted in one step
    (its messages' sizes, then one :meth:`~parties.traffic.TrafficCounter.record_sends`).
    """
    sizer = size if size is not None else _encoded_size
    order = sorted(programs, key=lambda a: a != CONTROLLER)
    actors = {a: _Actor(programs[a]) for a in order}
    rep = -2  # the representative party (mirror), none otherwise
    if mirror is not None:
        reps = [a for a in actors if a != CONTROLLER]
        if len(reps) != 1 or reps[0] not in mirror or CONTROLLER not in actors:
            raise ConfigurationError(f"a mirrored count runs the controller and one party of the roster, "
                                     f"got programs for actors {sorted(actors)[:10]}")
        rep = reps[0]
        scale = len(mirror)
        n_actors = max(mirror) + 1
    else:
        n_actors = max((a for a in actors if a != CONTROLLER), default=-1) + 1
    counter = TrafficCounter(n_actors, LatencyModel())
    ready: deque[int] = deque(order)
    queued = set(order)
    rep_sent = [0, 0]
    routed = [0]

    def put(dst: int, src: int, phase: str, msg: Message) -> None:
        target = actors.get(dst)
        if target is None:
            raise ProtocolError(f"actor {src} sent to actor {dst}, which runs no program in this count")
        box = target.inbox.get((phase, type(msg)))
        if box is None:
            target.inbox[(phase, type(msg))] = [(src, msg)]
        else:
            box.append((src, msg))
        if target.waiting and dst not in queued:
            ready.append(dst)
            queued.add(dst)

    def deliver(src: int, dsts: tuple[int, ...], msgs: tuple[Message, ...], phase: str) -> None:
        if not dsts:
            return
        sizes = [sizer(m) for m in msgs]
        total, largest, kind = sum(sizes), max(sizes), msgs[0].KIND
        routed[0] += len(dsts)
        if src == rep:  # mirrored: every party sends alike
            rep_sent[0] += len(dsts)
            rep_sent[1] += total
            counter.record_sends(src, phase, kind, scale * len(dsts), scale * total, largest)
            for dst, msg, nbytes in zip(dsts, msgs, sizes):
                if dst == CONTROLLER:
                    for p in mirror:  # type: ignore[union-attr]
                        counter.record_delivery(CONTROLLER, nbytes)
                        put(CONTROLLER, p, phase, msg if counterpart is None or p == rep else counterpart(msg, p))
                else:  # peer dst's message to the representative
                    counter.record_delivery(rep, nbytes)
                    put(rep, dst, phase, msg)
            return
        counter.record_sends(src, phase, kind, len(dsts), total, largest)
        for dst, msg, nbytes in zip(dsts, msgs, sizes):
            if mirror is not None and dst != rep and dst != CONTROLLER:
                continue  # (another party: its traffic is the representative's)
            counter.record_delivery(dst, nbytes)
            put(dst, src, phase, msg)

    def take(actor: _Actor, state: _Round) -> bool:
        mine = actor.inbox.pop((state.expect.phase, state.expect.kind), None)
        return state.sort(mine) if mine else False

    def over() -> bool:
        return ((limit is not None and routed[0] > limit)
                or (threshold is not None and (counter.messages > threshold.messages
                                               or counter.bytes > threshold.bytes)))

    stopped = False
    while ready:
        if over():
            stopped = True
            break
        a = ready.popleft()
        queued.discard(a)
        actor = actors[a]
        if actor.op is None:
            actor.op = _step(actor.program, None)
        while not isinstance(actor.op, _Finished):
            op = actor.op
            if isinstance(op, (Expect, Poll)):
                expect = op if isinstance(op, Expect) else op.expect
                if actor.round is None or actor.round.expect is not expect:
                    actor.round = _Round(expect)
                elif actor.round.over:
                    raise ConfigurationError(f"the round of phase {expect.phase!r} is over: a program expects it anew")
                state = actor.round
                kept = take(actor, state) if state.pending else False
                if isinstance(op, Expect) and state.pending and not (op.stream and kept):
                    actor.waiting = True
                    break  # wait for the others
                actor.waiting = False
                actor.op = _step(actor.program, state.delivery())
                continue
            if isinstance(op, SendEach):
                deliver(a, op.to, op.messages, op.phase)
            elif isinstance(op, Broadcast):
                deliver(a, op.to, (op.message,) * len(op.to), op.phase)
            elif isinstance(op, Send):
                deliver(a, (op.to,), (op.message,), op.phase)
            elif isinstance(op, Reject):
                counter.record_rejection(op.source)
            elif isinstance(op, Mark):
                counter.begin_round(op.phase)
            else:
                raise ConfigurationError(f"a secure-sum program must yield an Operation, got {op!r}")
            if over():
                break
            actor.op = _step(actor.program, None)
        if over():
            stopped = True
            break
        if not ready:  # everybody waits: the rounds still open end at their timeout
            for b, other in actors.items():
                if other.waiting and other.round is not None:
                    other.waiting = False
                    take(other, other.round)
                    other.op = _step(other.program, other.round.delivery(timed_out=True))
                    ready.append(b)
                    queued.add(b)
    results = {a: actor.op.value for a, actor in actors.items() if isinstance(actor.op, _Finished)}
    if stopped:
        for actor in actors.values():
            actor.program.close()
        results = dict.fromkeys(actors)  # (no role finished its part)
    stats = counter.snapshot()
    if mirror is not None:
        results = {CONTROLLER: results.get(CONTROLLER), **dict.fromkeys(mirror, results.get(rep))}
        stats = _mirrored(stats, mirror, rep, Counts(*rep_sent))
    return Count(MappingProxyType(results), stats, not stopped)


def _mirrored(stats: TrafficStatistics, roster: tuple[int, ...], rep: int, sent: Counts) -> TrafficStatistics:
    """``stats`` of a mirrored count with every party's own traffic: the representative's."""
    ctrl_sent = stats.by_sender.get(CONTROLLER)
    received = stats.by_receiver.get(rep, Counts(0, 0))
    ctrl_received = stats.by_receiver.get(CONTROLLER)
    by_sender = {**({CONTROLLER: ctrl_sent} if ctrl_sent else {}),
                 **({p: sent for p in roster} if sent.messages else {})}
    by_receiver = {**({CONTROLLER: ctrl_received} if ctrl_received else {}),
                   **({p: received for p in roster} if received.messages else {})}
    delivered = (ctrl_received.messages if ctrl_received else 0) + len(roster) * received.messages
    return replace(stats, delivered=delivered, by_sender=MappingProxyType(dict(sorted(by_sender.items()))),
                   by_receiver=MappingProxyType(dict(sorted(by_receiver.items()))))


def _encoded_size(message: Message) -> int:
    return len(encode(message))


class SizeByShape:
    """Encoded sizes, one encoding per *shape*: messages of one kind whose fields have the same
    shapes (an array's dtype and shape, a string's UTF-8 length, a byte string's length, a
    tuple's items' shapes; numbers are fixed-size) have the same encoded size, because the
    codec's layout (:mod:`parties.wire.codec`: fixed-size numbers, length-prefixed strings,
    bytes and tuples, arrays as a fixed head and their data) depends on nothing else.  So a
    count sizes one message per shape and multiplies (``tests/parties/secure/test_program.py``
    checks it against the codec on every message of real sums).
    """

    def __init__(self) -> None:
        self._sizes: dict[tuple[Any, ...], int] = {}

    def __call__(self, message: Message) -> int:
        key = (type(message), *(_shape(getattr(message, name)) for name, _ in message.FIELDS))
        size = self._sizes.get(key)
        if size is None:
            size = self._sizes[key] = len(encode(message))
        return size


def _shape(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape)
    if isinstance(value, str):
        return ("s", len(value.encode()))
    if isinstance(value, bytes):
        return ("b", len(value))
    if isinstance(value, tuple):
        return ("t", *(_shape(v) for v in value))
    return type(value)
