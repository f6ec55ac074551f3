"""The counting driver: every role of a sum run in one process, its traffic counted.

:func:`count` runs every role's program (:mod:`parties.secure.program`) with a direct
in-process router (no network, no event loop), sizes every message with the codec
(:func:`parties.wire.codec.encode`, or one encoding per shape, :class:`~parties.secure.sizing.SizeByShape`)
and counts it exactly as a network does (:class:`parties.traffic.TrafficCounter`): its
:class:`Count` is the closed-form traffic of a fault-free run
(:func:`parties.secure.engine.counted_cost`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from mprr.errors import ConfigurationError, ProtocolError
from parties.topology import CONTROLLER
from parties.traffic import Counts, LatencyModel, TrafficCounter, TrafficStatistics
from parties.wire.codec import Message, encode
from parties.secure.program import Answer, Broadcast, Expect, Mark, Operation, Poll, Program, Reject, Send, SendEach
from parties.secure.rounds import Finished, RoundState, answer, step, throw

__all__ = ["Count", "count"]


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
    round: RoundState | None = None  # its open round
    waiting: bool = False  # blocked in its open round
    op: Operation | Finished | None = None


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
    (its messages' sizes, then one :meth:`~parties.traffic.TrafficCounter.record_sends`).  An
    :class:`~parties.secure.program.Answer` with a ``batch`` waits until no program can run; then
    each batch runs once for all the answers waiting on it, in the order they came (as a host of
    many parties runs them, :class:`parties.party_sum.PartySums`), their replies are sent, and
    their programs go on first, before the actors the replies woke.
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
    parked: dict[Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]], list[tuple[int, Answer]]] = {}

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

    def take(actor: _Actor, state: RoundState) -> bool:
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
            actor.op = step(actor.program, None)
        while not isinstance(actor.op, Finished):
            op = actor.op
            if isinstance(op, (Expect, Poll)):
                expect = op if isinstance(op, Expect) else op.expect
                if actor.round is None or actor.round.expect is not expect:
                    actor.round = RoundState(expect)
                elif actor.round.over:
                    raise ConfigurationError(f"the round of phase {expect.phase!r} is over: a program expects it anew")
                state = actor.round
                kept = take(actor, state) if state.pending else False
                if isinstance(op, Expect) and state.pending and not (op.stream and kept):
                    actor.waiting = True
                    break  # wait for the others
                actor.waiting = False
                actor.op = step(actor.program, state.delivery())
                continue
            if isinstance(op, Answer):
                if op.batch is not None:  # computed with the batch's other calls once nobody else can run
                    parked.setdefault(op.batch, []).append((a, op))
                    break
                reply = answer(op)
                if isinstance(reply, ProtocolError):  # (raised in the program, which decides)
                    actor.op = throw(actor.program, reply)
                    continue
                deliver(a, (op.to,), (reply,), op.phase)
            elif isinstance(op, SendEach):
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
            actor.op = step(actor.program, None)
        if over():
            stopped = True
            break
        if not ready and parked:  # the answers parked meanwhile, each batch at once (as a host runs them)
            answers, parked = parked, {}
            resumed: list[int] = []
            for batch, calls in answers.items():
                replies = batch([op.args for _, op in calls])
                if len(replies) != len(calls):
                    raise ConfigurationError(f"an answer batch returned {len(replies)} replies for {len(calls)} calls")
                for (b, op), reply in zip(calls, replies):
                    other = actors[b]
                    if isinstance(reply, ProtocolError):  # (raised in the program, which decides)
                        other.op = throw(other.program, reply)
                    else:
                        deliver(b, (op.to,), (reply,), op.phase)
                        if over():  # (the count stops at this send, as at an answer computed on its own)
                            stopped = True
                            break
                        other.op = step(other.program, None)
                    resumed.append(b)
                    queued.add(b)
                if stopped:
                    break
            if stopped:
                break
            ready.extendleft(reversed(resumed))  # (each goes on from its reply before the actors its reply woke)
            continue
        if not ready:  # everybody waits: the rounds still open end at their timeout
            for b, other in actors.items():
                if other.waiting and other.round is not None:
                    other.waiting = False
                    take(other, other.round)
                    other.op = step(other.program, other.round.delivery(timed_out=True))
                    ready.append(b)
                    queued.add(b)
    results = {a: actor.op.value for a, actor in actors.items() if isinstance(actor.op, Finished)}
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
