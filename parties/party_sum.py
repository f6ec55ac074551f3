"""The secure sums of a host's parties, driven together: :class:`PartySums`.

The party is a pure handler (:mod:`parties.party`): on a
:class:`~parties.wire.requests.SecureSumStart` it hands its host a sans-I/O program
(:meth:`~parties.party.Party.secure_program`, :mod:`parties.secure.program`), or refuses.  The
host owns the time and the I/O.  A :class:`PartySums` steps the programs of all the parties
of one host (:class:`~parties.shard.PartyShard`) from the frames the host delivers, with no
task, endpoint or pending receive per party:

- a frame for a party is decoded (unless it carries its message), its kind checked against
  what the host accepts (else it is rejected, counted against its sender), counted, and given
  to the round the party's program has open for its kind and phase (dropped there if it is of
  another session or combination: a late delivery), else buffered in arrival order (at a
  reorder fault's position) for a later round (:meth:`PartySums.take`: the same for a message of
  this process, counted by the host);
- when a round is ready (every source answered; a streamed round: anything new), the program
  is stepped on the loop's next turn, for every ready party at once; its sends, rejections and
  marks are performed on the spot, up to its next round or its end;
- every round has its deadline, ``expect.timeout`` seconds after it opened on the running
  loop's clock, rounded up to a multiple of :data:`DEADLINE_GRAIN`-ths of the timeout (one
  timer per distinct deadline, however many parties opened a round then);
  at the deadline the program is told what arrived and that the round timed out;
- an :class:`~parties.secure.program.Answer` with a batch waits for the end of the turn: then
  each batch runs once for every answer of it the turn's programs gave (their parties' rounds
  one pass per kind of work), each reply is sent (its error raised in its program) and each
  program stepped on; an answer without a batch is computed and sent on the spot;
- a :class:`~parties.secure.responder.Responder` (a program of a first reply and rounds that
  each answer one message from the controller) is never resumed: the host runs its rounds from
  their parts, with no round state or delivery built (a round waits for the controller's one
  message of it, as the program's expectation would); on the next turn each round's message is
  handed to the round's batch with the turn's others, its reply sent and the next round opened
  (a buffered message taken at once), with the same sends, errors and ends as the program stepped;
- a :class:`~parties.secure.program.Poll` is answered on the loop's next turn with what has
  arrived by then (the peers run first); each wake-up is for one resumption of the program
  (one queued before the program was last resumed is stale, and skipped);
- a round without deadline (``timeout`` infinite) waits for its sources only;
- given a ``columns`` uplink (a host in the router's process), what the programs send the
  controller on one turn of the loop (checked, admitted and sized by the codec on the spot)
  leaves together on the loop's next turn, one :class:`~parties.columns.MessageColumns` per
  phase and kind, in the order sent (a party's second message of a phase and kind on the same
  turn starts another): the router counts and delivers each member as its own message.  Other
  sends leave on the spot.

These are the semantics of :func:`parties.secure.drive.drive`, which runs the controller's program over
its endpoint.  When a program ends the host tells the party (:meth:`~parties.party.Party.end_secure_sum`):
returned, closed; raised a :class:`~mprr.errors.ProtocolError` (a peer or the controller failed), aborted
with it (the controller decides what a failed sum means); crashed, aborted with
:class:`~mprr.errors.PartyDropped`; the host stopped first, left as it stands.  Any other exception is a
bug: it ends the party's session and is handed to ``fail`` (the host re-raises it from its serving task).
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from mprr.errors import ConfigurationError, MessageError, PartyDropped, ProtocolError
from parties.columns import MessageColumns, MessageOutbox
from parties.secure.program import (Answer, Broadcast, Delivery, Expect, Mark, Operation, Poll, Program, Reject,
                                    Send, SendEach, round_timeout)
from parties.secure.responder import Reply, Responder
from parties.secure.rounds import Finished, RoundState, answer, step, throw
from parties.topology import CONTROLLER, actor_name
from parties.wire.codec import Message, decode, encode, encoded_size
from parties.wire.requests import SecureSumStart

if TYPE_CHECKING:
    from parties.transport import Frame, Transport

__all__ = ["DEADLINE_GRAIN", "PartySums", "SumMember", "SumParty"]


class SumMember(Protocol):
    """A running program's party to :class:`PartySums` (:meth:`PartySums.run`): its id, whom to tell how it ended."""

    @property
    def index(self) -> int: ...

    def end_secure_sum(self, session: str, error: ProtocolError | None, *, ran: bool = True) -> None: ...


class SumParty(SumMember, Protocol):
    """What :class:`PartySums` asks of a party that makes its own program (:class:`~parties.party.Party`)."""

    @property
    def errors(self) -> list[str]: ...

    def secure_program(self, start: SecureSumStart, network: Any = None) -> Program[Any] | None: ...


DEADLINE_GRAIN = 64
"""A round's deadline is rounded up to a multiple of 1/64 of its timeout, so that the rounds
parties open during one turn of the loop share a timer (the turn itself takes time)."""

_Batch = Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]]
"""An :class:`~parties.secure.program.Answer`'s batch: its computation for many calls at once."""

_Parked = tuple["_Run", "Answer | Reply", tuple[Any, ...]]
"""An answer waiting for its batch: (its program's run, the answer or a responder's reply, its call's arguments)."""

_Buffered = tuple[int, str, Message]
"""A delivered message no round has taken yet: (sender, phase, message)."""


class _Run:
    """One party's program of one session and the round it has open."""

    __slots__ = ("party", "session", "program", "responder", "at", "got", "expect", "state", "deadline", "ready",
                 "active", "crashed", "resumed", "ended")

    def __init__(self, party: SumMember, session: str, program: Program[Any]) -> None:
        self.party, self.session, self.program = party, session, program
        self.responder = program if isinstance(program, Responder) else None  # (its rounds run by the host)
        self.at = 0  # a responder's round open or next
        self.got: Message | None = None  # the controller's message of a responder's round, to answer on the next turn
        self.expect: Expect[Any] | None = None  # the open (or last) round
        self.state: RoundState | None = None
        self.deadline: float | None = None  # of the open round, while it is timed
        self.ready = False  # its open round is queued to be stepped on the next turn
        self.active = False  # its program is being stepped
        self.crashed = False  # the party crashed while its program was being stepped
        self.resumed = 0  # deliveries handed to its program: a wake-up queued before the last one is stale
        self.ended = False  # its program ended (the party was told)


class PartySums:
    """The secure-sum programs of one host's parties (module docstring).

    Parameters
    ----------
    network
        The host's transport: its sends, crash set, counters and topology (what a party's
        engine context may ask of its links).
    accept
        The message kinds the host's parties accept (another kind is rejected on delivery).
    fail
        Called with an exception a program raised that is not a protocol error (a bug).
    columns
        Carries the programs' messages to the controller of one turn as columns (module
        docstring); ``None``: each leaves on its own, on the spot.
    """

    def __init__(self, network: Transport, accept: frozenset[int], fail: Callable[[BaseException], None], *,
                 columns: Callable[[MessageColumns], None] | None = None) -> None:
        self._network = network
        self._accept = accept
        self._fail = fail
        self._columns = columns
        self._outbox = MessageOutbox()  # this turn's messages to the controller (with a columns uplink)
        self._runs: dict[int, list[_Run]] = {}  # party -> its running programs (one per session)
        self._buffers: dict[int, deque[_Buffered]] = {}
        # rounds to step on the next turn, in order (no state: a responder's)
        self._ready: list[tuple[_Run, RoundState | None, int]] = []
        self._polls: list[tuple[_Run, RoundState, int]] = []
        self._answers: dict[_Batch, list[_Parked]] = {}  # parked answers, by batch, in order
        self._scheduled = False
        self._deadlines: dict[float, tuple[asyncio.TimerHandle, set[_Run]]] = {}
        self._last_payload: bytes | None = None  # decode cache for broadcasts (same bytes object)
        self._last_message: Message | None = None
        self.serving = False

    # ------------------------------------------------------------------ sessions
    def start(self, party: SumParty, start: SecureSumStart) -> None:
        """Run ``party``'s side of ``start`` (its program, or nothing if the party refuses)."""
        if not self.serving:  # stopped (or not serving yet): the session cannot run
            party.errors.append(f"secure sum {start.session!r} refused: the host is not serving")
            return
        program = party.secure_program(start, self._network)
        if program is not None:
            self.run(party, start.session, program)

    def run(self, party: SumMember, session: str, program: Program[Any]) -> None:
        """Run ``program``, ``party``'s side of secure sum ``session`` (made by the party, or by its host)."""
        run = _Run(party, session, program)
        self._runs.setdefault(party.index, []).append(run)
        if run.responder is None:
            self._advance(run, None)
            return
        run.active = True
        try:
            first = (run.responder.begin(),)
        except ProtocolError as exc:
            self._end(run, exc)
        except Exception as exc:  # a bug in a program: its session ends, the host fails
            self._end(run, None, ran=False)
            self._fail(exc)
        else:
            self._reply(run, run.responder.first, first)
        finally:
            run.active = False
            if run.ended:  # (closed here, once: the frames it ran inside close nothing)
                program.close()

    def running(self) -> int:
        """Programs running now."""
        return sum(len(runs) for runs in self._runs.values())

    def buffered(self, party: int) -> int:
        """Messages delivered to ``party`` that no round has taken yet."""
        buf = self._buffers.get(party)
        return 0 if buf is None else len(buf)

    def crash(self, party: int) -> None:
        """``party`` crashed: what was buffered for it is lost and its programs end with
        :class:`~mprr.errors.PartyDropped`."""
        self._buffers.pop(party, None)
        for run in list(self._runs.get(party, ())):
            if run.active:  # (crashed by a fault on one of its own sends: it ends when the send returns)
                run.crashed = True
            else:
                self._end(run, _dropped(party))

    def stop(self) -> None:
        """End every program where it stands (the host stops): the sessions are left as they are
        (what their programs sent has left)."""
        self.serving = False
        self._send_columns()
        self._answers.clear()
        for runs in list(self._runs.values()):
            for run in list(runs):
                self._end(run, None, ran=False)
        self._buffers.clear()

    # ------------------------------------------------------------------ delivery
    def deliver(self, frame: Frame, position: int | None = None) -> None:
        """A frame of secure-sum traffic for a hosted party (not crashed): decoded, checked,
        counted, then taken by the party's open round or buffered (module docstring)."""
        msg = frame.message
        payload = frame.payload
        if msg is None or frame.kind not in self._accept:
            try:
                if payload is self._last_payload and self._last_message is not None and frame.kind in self._accept:
                    msg = self._last_message  # same bytes object (a broadcast): same immutable message
                else:
                    msg = decode(payload, expected=self._accept)
                    self._last_payload, self._last_message = payload, msg
            except MessageError:  # a bad frame is its sender's fault: counted against it
                self._network.counter.record_rejection(frame.src)
                return
        self._network.counter.record_delivery(frame.dst, len(payload))
        self.take(frame.src, frame.dst, frame.phase, msg, position)

    def take(self, src: int, dst: int, phase: str, msg: Message, position: int | None = None) -> None:
        """``msg`` from ``src`` for hosted party ``dst`` (not crashed), of a kind the host
        accepts, its delivery counted: taken by the party's open round or buffered
        (:meth:`deliver` without the frame: a message of this process, e.g. a controller's
        :meth:`~parties.transport.Transport.send_many` through a
        :class:`~parties.runtime.LocalLink`)."""
        kind = type(msg)
        taken = False  # an open round of its kind and phase receives it (drive: taken, then skipped)
        for run in self._runs.get(dst, ()):
            expect, state = run.expect, run.state  # (run.waiting, inlined: once per message)
            if expect is None or expect.kind is not kind or expect.phase != phase:
                continue
            if state is None:  # a responder's round: open until it is answered
                if run.got is None and src == CONTROLLER and expect.accepts(msg):
                    run.got = msg
                    self._ready.append((run, None, run.resumed))
                    self._schedule()
                    return
                taken = True  # (another session's, not the controller's, or a second one: not taken)
                continue
            if state.over:
                continue
            taken = True
            if expect.accepts(msg):
                state.add(src, msg)
                if not run.ready and (expect.stream or not state.pending):
                    run.ready = True
                    self._ready.append((run, state, run.resumed))
                    self._schedule()
                return
        if taken:
            return  # another session's (or combination's) message: not this round's, dropped
        buf = self._buffers.get(dst)
        if buf is None:
            buf = self._buffers[dst] = deque()
        if position is None or position >= len(buf):
            buf.append((src, phase, msg))
        else:
            buf.insert(position, (src, phase, msg))

    # ------------------------------------------------------------------ stepping
    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        """The loop's turn: step every program whose round is ready, then answer the polls."""
        self._scheduled = False
        ready, self._ready = self._ready, []
        polls, self._polls = self._polls, []
        for run, state, token in ready:
            if state is None:  # a responder's round whose message came
                if run.resumed == token and run.got is not None:
                    self._respond(run)
            elif run.state is state and run.resumed == token and not state.over:
                self._advance(run, self._delivery(run))
        for run, state, token in polls:  # (a round that timed out meanwhile was told so)
            if run.state is state and run.resumed == token and not state.over:
                self._advance(run, self._delivery(run))
        while self._answers:  # the answers parked meanwhile, each batch at once (their programs may park more)
            answers, self._answers = self._answers, {}
            for batch, parked in answers.items():
                self._answer(batch, parked)

    def _answer(self, batch: _Batch, parked: list[_Parked]) -> None:
        """Run ``batch`` for the parked answers of programs still running, then send each reply
        (or raise its error in its program) and step each program on (a responder: on to its
        next round)."""
        parked = [item for item in parked if not item[0].ended]
        try:
            replies = batch([args for _, _, args in parked])
            if len(replies) != len(parked):
                raise ConfigurationError(f"an answer batch returned {len(replies)} replies for {len(parked)} calls")
        except Exception as exc:  # a bug in the computation: the sessions end, the host fails
            for run, _, _ in parked:
                self._end(run, None, ran=False)
            self._fail(exc)
            return
        for (run, op, _), reply in zip(parked, replies):
            if not run.ended:  # (a send before it may have crashed its party: ended)
                if isinstance(op, Answer):
                    self._advance(run, None, answered=(op, reply))
                else:
                    self._replied(run, op, reply)

    # ------------------------------------------------------------------ a responder's rounds
    def _reply(self, run: _Run, reply: Reply, args: tuple[Any, ...]) -> None:
        """``run``'s responder sends ``reply`` computed from ``args``: parked for the end of the
        turn with its batch's other calls, or computed and sent on the spot."""
        if reply.batch is not None:
            self._answers.setdefault(reply.batch, []).append((run, reply, args))
            self._schedule()
            return
        try:
            message: Message | ProtocolError = reply.compute(*args)
        except ProtocolError as exc:
            message = exc
        except Exception as exc:  # a bug in the computation: its session ends, the host fails
            self._end(run, None, ran=False)
            self._fail(exc)
            return
        self._replied(run, reply, message)

    def _replied(self, run: _Run, reply: Reply, message: Message | ProtocolError) -> None:
        """``run``'s responder's ``message`` (its error ends the program) sent, then its next round
        opened (a buffered message of it taken at once), or the program ended after its last."""
        if isinstance(message, ProtocolError):
            self._end(run, message)
            return
        responder = run.responder
        assert responder is not None
        outermost, run.active = not run.active, True  # (inside start or another reply: that frame closes it)
        try:
            self._send(run.party.index, CONTROLLER, message, reply.phase)
            if run.crashed:
                raise _dropped(run.party.index)
            if run.ended:  # (the host stopped during the send: the session is left as it stands)
                return
            if run.at == len(responder.rounds):
                self._end(run, None)
                return
            expect = responder.rounds[run.at].expect
            assert expect is not None  # (a responder's rounds have one)
            run.at += 1
            if self._await(run, expect):
                self._respond(run)
        except ProtocolError as exc:
            self._end(run, exc)
        except Exception as exc:  # a bug: its session ends, the host fails
            self._end(run, None, ran=False)
            self._fail(exc)
        finally:
            if outermost:
                run.active = False
                if run.ended:
                    responder.close()

    def _await(self, run: _Run, expect: Expect[Any]) -> bool:
        """Open ``run``'s responder's round ``expect`` (no :class:`RoundState`: one message from
        the controller): the buffered messages of its kind and phase leave the buffer, the first
        that is the round's is taken (True: answer it now), and its deadline starts now."""
        run.expect, run.got = expect, None
        for src, msg in self._buffered_for(run.party.index, expect):
            if src == CONTROLLER and expect.accepts(msg):
                run.got = msg
                self._untime(run)
                return True
        self._time(run, expect.timeout)
        return False

    def _respond(self, run: _Run) -> None:
        """``run``'s responder's open round is over (its message came, or its deadline passed):
        the controller's message answered, or the program ended with the round's timeout."""
        responder, message = run.responder, run.got
        assert responder is not None
        run.got, run.expect, run.ready = None, None, False
        run.resumed += 1  # (any wake-up queued before is stale)
        self._untime(run)
        reply = responder.rounds[run.at - 1]
        if message is None:
            assert reply.expect is not None
            self._end(run, round_timeout(run.party.index, reply.expect))
            return
        self._reply(run, reply, (responder.state, message))

    def _delivery(self, run: _Run, *, timed_out: bool = False) -> Delivery[Any]:
        """What arrived for ``run``'s open round since its last delivery; its timer ends with the round."""
        state = run.state
        assert state is not None
        got = state.delivery(timed_out=timed_out)
        run.ready = False
        run.resumed += 1  # (any wake-up queued before this delivery is stale)
        if got.done:
            self._untime(run)
        return got

    def _advance(self, run: _Run, value: Delivery[Any] | None, *,
                 answered: tuple[Answer, Message | ProtocolError] | None = None) -> None:
        """Resume ``run``'s program with ``value`` (``answered``: an answer it asked for and its
        reply, sent, or its error, raised in the program) and perform what it asks, up to a
        round that must wait, an answer of a batch (parked until the end of the turn) or its end."""
        program = run.program
        run.active = True
        try:
            op = step(program, value) if answered is None else self._after(run, *answered)
            while True:
                if run.crashed:
                    raise _dropped(run.party.index)
                if isinstance(op, Finished):
                    self._end(run, None)
                    return
                if isinstance(op, (Expect, Poll)):
                    expect = op if isinstance(op, Expect) else op.expect
                    state = run.state
                    if expect is not run.expect:
                        state = self._open(run, expect)
                    elif state is None or state.over:
                        raise ConfigurationError(
                            f"the round of phase {expect.phase!r} is over: a program expects it anew")
                    if isinstance(op, Poll):
                        self._polls.append((run, state, run.resumed))
                        self._schedule()
                        return
                    if state.pending and not (expect.stream and (state.first or state.others)):
                        return  # it waits: a delivery or its deadline resumes it
                    op = step(program, self._delivery(run))
                    continue
                if isinstance(op, Answer):
                    if op.batch is not None:  # run with the turn's other answers of its batch (_turn)
                        self._answers.setdefault(op.batch, []).append((run, op, op.args))
                        self._schedule()
                        return
                    op = self._after(run, op, answer(op))
                    continue
                self._perform(run.party.index, op)
                op = step(program, None)
        except ProtocolError as exc:
            self._end(run, exc)
        except Exception as exc:  # a bug in a program: its session ends, the host fails
            self._end(run, None, ran=False)
            self._fail(exc)
        finally:
            run.active = False
            if run.ended:  # (it ended while being stepped, e.g. crashed by its own send)
                program.close()

    def _open(self, run: _Run, expect: Expect[Any]) -> RoundState:
        """Open ``run``'s round ``expect``: the buffered messages of its kind and phase join it
        (oldest first), and its deadline starts now."""
        state = run.state = RoundState(expect)
        run.expect, run.ready = expect, False
        taken = self._buffered_for(run.party.index, expect)
        if taken:
            state.sort(taken)
        self._time(run, expect.timeout)
        return state

    def _buffered_for(self, party: int, expect: Expect[Any]) -> list[tuple[int, Message]]:
        """The messages buffered for ``party`` of ``expect``'s kind and phase, oldest first (as
        (sender, message)): they leave the buffer, whichever session they are of."""
        buf = self._buffers.get(party)
        if not buf:
            return []
        kind, phase = expect.kind, expect.phase
        taken = [(src, msg) for src, ph, msg in buf if type(msg) is kind and ph == phase]
        if taken:
            kept = [item for item in buf if not (type(item[2]) is kind and item[1] == phase)]
            buf.clear()
            buf.extend(kept)
            if not buf:
                del self._buffers[party]
        return taken

    def _time(self, run: _Run, timeout: float) -> None:
        """``run``'s round opened now: its deadline is ``timeout`` seconds away (module docstring)."""
        self._untime(run)
        if math.isinf(timeout):  # (round_timeout=inf is allowed: no deadline, as asyncio.timeout(inf))
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if timeout > 0:
            grain = timeout / DEADLINE_GRAIN
            deadline = math.ceil(deadline / grain) * grain
        timed = self._deadlines.get(deadline)
        if timed is None:
            timed = self._deadlines[deadline] = (loop.call_at(deadline, self._expire, deadline), set())
        timed[1].add(run)
        run.deadline = deadline

    def _untime(self, run: _Run) -> None:
        """``run``'s round no longer waits for its deadline (its timer goes with its last round)."""
        deadline = run.deadline
        if deadline is None:
            return
        run.deadline = None
        timed = self._deadlines.get(deadline)
        if timed is not None:
            timed[1].discard(run)
            if not timed[1]:
                timed[0].cancel()
                del self._deadlines[deadline]

    def _expire(self, deadline: float) -> None:
        """The deadline of rounds opened ``deadline - timeout`` ago passed: each is told it timed out."""
        timed = self._deadlines.pop(deadline, None)
        if timed is None:
            return
        for run in sorted(timed[1], key=lambda r: (r.party.index, r.session)):
            run.deadline = None
            state = run.state
            if run.responder is not None:
                if run.expect is not None or run.got is not None:  # (its message came: answered, as it is due)
                    self._respond(run)
            elif state is not None and not state.over:
                self._advance(run, self._delivery(run, timed_out=True))

    def _after(self, run: _Run, op: Answer, reply: Message | ProtocolError) -> Operation | Finished:
        """``run``'s program after its answer ``op``: ``reply`` sent (or, an error, raised in it)."""
        if isinstance(reply, ProtocolError):
            return throw(run.program, reply)
        self._send(run.party.index, op.to, reply, op.phase)
        return step(run.program, None)

    def _send(self, me: int, to: int, message: Message, phase: str) -> None:
        """Party ``me`` sends ``message`` to ``to`` (to the controller through the columns uplink,
        if any: module docstring)."""
        net = self._network
        if to == CONTROLLER and self._columns is not None:
            net.check_send(me, CONTROLLER, phase)
            if net.admit(me) and self._outbox.add(me, phase, message, encoded_size(message)):
                asyncio.get_running_loop().call_soon(self._send_columns)
            return
        net.send(me, to, message, phase, encode(message))

    def _perform(self, me: int, op: Operation) -> None:
        """One non-receiving operation of party ``me``'s program."""
        net = self._network
        if isinstance(op, Send):
            self._send(me, op.to, op.message, op.phase)
        elif isinstance(op, SendEach):
            net.send_many(me, op.to, op.messages, op.phase)
        elif isinstance(op, Broadcast):
            net.broadcast_from(me, op.to, op.message, op.phase)
        elif isinstance(op, Reject):
            net.counter.record_rejection(op.source)
        elif isinstance(op, Mark):
            net.begin_round(op.phase)
        else:
            raise ConfigurationError(f"a secure-sum program must yield an Operation, got {op!r}")

    def _end(self, run: _Run, error: ProtocolError | None, *, ran: bool = True) -> None:
        """``run``'s program ended: the party is told how, and the program is forgotten."""
        self._untime(run)
        runs = self._runs.get(run.party.index)
        if runs is None or run not in runs:
            return
        runs.remove(run)
        if not runs:
            del self._runs[run.party.index]
        run.state, run.expect, run.got, run.ended = None, None, None, True
        run.party.end_secure_sum(run.session, error, ran=ran)
        if not run.active:
            run.program.close()

    def _send_columns(self) -> None:
        """What the programs sent the controller since the last call leaves, as columns."""
        columns = self._columns
        for block in self._outbox.take():
            assert columns is not None  # (only a columns uplink fills the outbox)
            columns(block)


def _dropped(party: int) -> PartyDropped:
    return PartyDropped(f"{actor_name(party)} has crashed", parties=(party,))
