"""Transport interface, per-actor endpoints with buffered mailboxes, and topology.

A :class:`Transport` moves encoded frames between actors.  Everything protocol code touches
is the :class:`Endpoint` of its actor: ``send`` / ``broadcast`` encode the message once with
:mod:`parties.wire.codec`, check the topology and count the traffic; the transport delivers the
bytes; on delivery the receiving endpoint decodes them and either hands the :class:`Envelope`
to a waiting ``recv`` whose filter matches or buffers it.  Unmatched messages stay buffered, in
arrival order, for later ``recv`` calls.

A frame that does not decode, or whose kind the receiving endpoint does not accept, is
*rejected*: dropped, counted against its sender (``TrafficStatistics.rejected_by_sender``,
``ActorStatistics.rejected``) and noted on the receiving endpoint as a :class:`Rejection`
(:meth:`Endpoint.rejections`, :meth:`Endpoint.take_rejections`).  A rejected frame never
reaches, wakes or fails a ``recv`` / ``gather``: a bad frame is its sender's fault, and the
receiver's protocol code decides what a misbehaving sender means (the controller treats it as
a faulty party, :mod:`parties.controller`).

A new transport (e.g. parties as OS processes on sockets) implements one method that must not
block, :meth:`Transport._transmit`, which must eventually call :meth:`Transport._deliver` on
the receiving side, once per copy delivered (or never, for a lost frame).  ``_deliver`` is
synchronous, must run in the receiving side's event loop, and never raises for a bad frame:
decoding, the accepted-kinds check, rejection accounting and the hand-over to a waiting receive
all happen there, so every transport rejects the same frames in the same way (a frame that
never left its process carries its validated message, :class:`Frame`, and skips the decode of
its own encoding; its kind is still checked).  ``Frame.src``
must be the authenticated sender (the in-memory network knows it; a socket transport takes it
from the authenticated connection, never from the frame's bytes), because rejections are
attributed to it.  Protocol code does not change.

Time: ``recv`` / ``gather`` bound their wait with ``asyncio.timeout`` scopes on the running
loop's clock, so tests run them on a virtual clock (``tests/virtual_clock.py``).

Actor ids: :data:`CONTROLLER` (= -1) and parties ``0 .. n-1``.
"""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar, overload

from mprr.errors import ConfigurationError, MessageError, PartyDropped, ProtocolError, RoundTimeout
from parties.wire.codec import Message, decode, encode, message_class, resolve_kinds
from parties.topology import CONTROLLER, Topology, actor_name
from parties.traffic import ActorStatistics, LatencyModel, TrafficCounter, TrafficStatistics

if TYPE_CHECKING:  # annotations only: party workers never import networkx
    import networkx as nx

__all__ = ["CONTROLLER", "Endpoint", "Envelope", "Frame", "Rejection", "Topology", "Transport", "actor_name"]

MAX_REJECTIONS_KEPT = 1024
"""Rejections an endpoint keeps for :meth:`Endpoint.rejections` (older ones are only counted)."""

class Frame(NamedTuple):
    """What travels on the wire: addressing, phase, kind and the encoded message bytes.

    ``message`` is the (immutable, validated) message the payload encodes, while the frame has
    not left the process that encoded it: a receiver in that process takes it instead of
    decoding the sender's own encoding again.  It is never part of the wire format; a frame
    read from a channel has none and is decoded.  (A named tuple: immutable, and built in a
    third of a frozen dataclass's time, once per message.)
    """

    src: int
    dst: int
    phase: str
    kind: int
    payload: bytes
    message: Message | None = None

M = TypeVar("M", bound=Message)
M_co = TypeVar("M_co", bound=Message, covariant=True)


class Envelope(NamedTuple, Generic[M_co]):
    """A delivered message: sender, receiver, phase, the decoded message and its size in bytes.

    Generic in the message class: ``recv(kinds=KeyDirectory)`` returns an
    ``Envelope[KeyDirectory]``, so the message's fields are typed without a cast.  (A named
    tuple, as :class:`Frame`.)
    """

    src: int
    dst: int
    phase: str
    message: M_co
    size: int

    @property
    def kind(self) -> str:
        """Name of the message kind."""
        return self.message.NAME


@dataclass(frozen=True, slots=True)
class Rejection:
    """A frame the receiving endpoint rejected: who sent it, in which phase, and why.

    ``kind`` is the kind number the frame claimed (it may be meaningless for garbage).
    """

    src: int
    dst: int
    phase: str
    kind: int
    reason: str

    def describe(self) -> str:
        """One line naming the sender, the receiver, the phase and the reason."""
        return (f"{actor_name(self.dst)} rejected a frame from {actor_name(self.src)} "
                f"in phase {self.phase!r}: {self.reason}")


class _Waiter:
    """A pending recv (``want`` = None) or gather (``want`` = set of sources still missing)."""

    __slots__ = ("kinds", "sources", "phase", "future", "want", "got")

    def __init__(self, kinds: frozenset[int] | None, sources: frozenset[int] | None,
                 phase: str | None, future: asyncio.Future[Any], want: set[int] | None = None) -> None:
        self.kinds, self.sources, self.phase, self.future = kinds, sources, phase, future
        self.want = want
        self.got: dict[int, Envelope[Message]] = {}

    def matches(self, env: Envelope[Message]) -> bool:
        return (
            (self.kinds is None or env.message.KIND in self.kinds)
            and (self.phase is None or env.phase == self.phase)
            and (self.sources is None or env.src in self.sources)
            and (self.want is None or env.src in self.want)
        )


def _matches(env: Envelope[Message], kinds: frozenset[int] | None, sources: Any, phase: str | None) -> bool:
    return (
        (kinds is None or env.message.KIND in kinds)
        and (phase is None or env.phase == phase)
        and (sources is None or env.src in sources)
    )


def _check_phase(phase: str) -> None:
    if type(phase) is not str or not phase:
        raise ConfigurationError(f"phase must be a non-empty string, got {phase!r}")


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0 and not math.isnan(timeout)):
        raise ConfigurationError(f"timeout must be > 0 seconds or None, got {timeout!r}")


class Endpoint:
    """One actor's handle on the network: send, broadcast, filtered receive.

    Obtain it with ``network.endpoint(actor_id)``; do not construct it directly.
    """

    __slots__ = ("actor", "_net", "_buffer", "_waiters", "_rejections", "_accept")

    def __init__(self, network: Transport, actor: int) -> None:
        self.actor = actor
        self._net = network
        self._buffer: deque[Envelope[Message]] = deque()
        self._waiters: list[_Waiter] = []
        self._rejections: deque[Rejection] = deque(maxlen=MAX_REJECTIONS_KEPT)
        self._accept: frozenset[int] | None = None

    def __repr__(self) -> str:
        return f"Endpoint({actor_name(self.actor)}, buffered={len(self._buffer)})"

    @property
    def network(self) -> Transport:
        """The transport this endpoint belongs to."""
        return self._net

    @property
    def crashed(self) -> bool:
        """True once this actor has crashed (fault injection or ``network.crash``)."""
        return self.actor in self._net._crashed

    @property
    def buffered(self) -> int:
        """Number of delivered messages no recv has taken yet."""
        return len(self._buffer)

    def pending(self) -> tuple[Envelope[Message], ...]:
        """The buffered envelopes, oldest first (not removed)."""
        return tuple(self._buffer)

    def statistics(self) -> ActorStatistics:
        """What this actor sent and received so far (and how many of its frames were rejected)."""
        return self._net._traffic.actor(self.actor)

    # ------------------------------------------------------------------ rejected frames
    def rejections(self) -> tuple[Rejection, ...]:
        """Frames rejected at this endpoint and not yet taken, oldest first.

        At most :data:`MAX_REJECTIONS_KEPT` are kept; the traffic counters count every one.
        """
        return tuple(self._rejections)

    def take_rejections(self, sources: Iterable[int] | None = None) -> dict[int, Rejection]:
        """Remove the rejections of frames from ``sources`` (None = any sender).

        Returns ``{sender: its first rejection taken}``: the senders whose frames this endpoint
        rejected since they were last taken.
        """
        wanted = None if sources is None else set(sources)
        first: dict[int, Rejection] = {}
        keep: deque[Rejection] = deque(maxlen=MAX_REJECTIONS_KEPT)
        for r in self._rejections:
            if wanted is None or r.src in wanted:
                first.setdefault(r.src, r)
            else:
                keep.append(r)
        self._rejections = keep
        return first

    def reject(self, env: Envelope[Message], reason: str) -> None:
        """Reject a delivered, well-formed message that the protocol cannot use.

        Counted and noted exactly like a frame that failed decoding (attributed to ``env.src``).
        """
        self._net._reject(Frame(env.src, env.dst, env.phase, env.message.KIND, b""), self, reason)

    # ------------------------------------------------------------------ sending
    async def send(self, dst: int, msg: Message, *, phase: str) -> None:
        """Encode ``msg`` and send it to actor ``dst`` in protocol ``phase``.

        Raises
        ------
        ProtocolError
            If ``dst`` is unknown, is this actor, or is not a neighbour in the topology
            (relaying through the controller is the caller's job, see ``network.path``).
        MessageError
            If ``msg`` cannot be encoded.

        A crashed actor's sends vanish silently (it has crashed; it cannot know).
        """
        self._net._send(self.actor, dst, msg, phase, encode(msg))

    async def broadcast(self, dsts: Iterable[int], msg: Message, *, phase: str) -> None:
        """Send the same ``msg`` to every actor in ``dsts`` (encoded once; one message each)."""
        targets = self._checked(dsts, phase)
        count = len(targets)
        self._net._emit_all(self.actor, targets, (msg,) * count, phase, (encode(msg),) * count, msg.KIND)

    async def send_each(self, dsts: Iterable[int], msgs: Sequence[Message], *, phase: str) -> None:
        """Send ``msgs[k]`` to the k-th actor of ``dsts``, for every k: one message each, exactly
        as that many :meth:`send` calls, but checked, encoded and counted in one pass (e.g. a
        party's share vectors to all its peers).  The messages must be of one kind.

        Raises
        ------
        ProtocolError
            As :meth:`send`, for any destination; nothing is sent then.
        MessageError
            If a message cannot be encoded, or the messages are not all of one kind (nothing
            is sent).
        """
        targets = self._checked(dsts, phase)
        if len(targets) != len(msgs):
            raise ConfigurationError(f"send_each needs one message per destination, got "
                                     f"{len(msgs)} messages for {len(targets)} destinations")
        if not targets:
            return
        kind = type(msgs[0])
        if any(type(m) is not kind for m in msgs):
            raise MessageError(f"send_each sends messages of one kind, got {sorted({m.NAME for m in msgs})}")
        self._net._emit_all(self.actor, targets, msgs, phase, [encode(m) for m in msgs], kind.KIND)

    def _checked(self, dsts: Iterable[int], phase: str) -> list[int]:
        """``dsts`` as a list, once every link and the phase are checked (refuse all or none)."""
        targets = list(dsts)
        check = self._net._check_link
        src = self.actor
        for dst in targets:
            check(src, dst)
        _check_phase(phase)
        return targets

    # ------------------------------------------------------------------ receiving
    def _raise_pending(self) -> None:
        if self.actor in self._net._crashed:
            raise PartyDropped(f"{actor_name(self.actor)} has crashed", parties=(self.actor,))

    def _take(self, kinds: frozenset[int] | None, sources: Any, phase: str | None) -> Envelope[Message] | None:
        buf = self._buffer
        if not buf:
            return None
        if kinds is None and sources is None and phase is None:
            return buf.popleft()
        for i, env in enumerate(buf):
            if _matches(env, kinds, sources, phase):
                del buf[i]
                return env
        return None

    @overload
    async def recv(
        self,
        *,
        kinds: type[M],
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> Envelope[M]: ...
    @overload
    async def recv(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> Envelope[Message]: ...
    async def recv(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> Envelope[Message]:
        """Return the oldest delivered message matching every given filter.

        Parameters
        ----------
        kinds
            Message classes, names or kind numbers accepted (None = any).
        sources
            Sender id(s) accepted (None = any).
        phase
            Phase accepted (None = any).
        timeout
            Seconds to wait (wall clock; required; ``None`` = wait forever, use sparingly).

        Raises
        ------
        RoundTimeout
            Nothing matching arrived in time (names the phase and the missing sources).
        PartyDropped
            This actor has crashed.

        Frames rejected on delivery (undecodable, or of a kind this endpoint does not accept)
        never reach a ``recv``: see :meth:`rejections`.
        """
        _check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        source_set = _source_set(sources)
        self._raise_pending()
        env = self._take(kind_set, source_set, phase)
        if env is not None:
            return env
        waiter = _Waiter(kind_set, source_set, phase, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        returned = False
        try:
            if timeout is None:  # no deadline (e.g. a secure-sum engine's receive loop): no scope to enter
                delivered: Envelope[Message] = await waiter.future
            else:
                async with asyncio.timeout(timeout):
                    delivered = await waiter.future
            returned = True
            return delivered
        except TimeoutError:
            if _succeeded(waiter.future):  # delivered just as the deadline passed
                returned = True
                late: Envelope[Message] = waiter.future.result()
                return late
            missing = tuple(sorted(source_set)) if source_set is not None else ()
            raise RoundTimeout(
                f"phase {phase or '(any)'!r}: {actor_name(self.actor)} timed out after {timeout} s "
                f"waiting for {_describe(kind_set)}"
                + (f" from {_describe_actors(missing)}" if missing else ""),
                phase=phase or "", timeout=timeout, missing=missing,
            ) from None
        finally:
            self._forget(waiter, returned)

    @overload
    async def recv_many(
        self,
        *,
        kinds: type[M],
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> list[Envelope[M]]: ...
    @overload
    async def recv_many(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> list[Envelope[Message]]: ...
    async def recv_many(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> list[Envelope[Any]]:  # the overloads above give the precise type
        """Every buffered message matching the filters, oldest first, taken at once; when none
        is buffered, wait for the first (as :meth:`recv`, same filters, ``timeout`` and errors)
        and return it with any others buffered by then.  Never empty.

        The same messages, in the same order, as repeated :meth:`recv` calls would return.
        """
        _check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        source_set = _source_set(sources)
        self._raise_pending()
        got = self._take_all(kind_set, source_set, phase)
        if got:
            return got
        first = await self.recv(kinds=kinds, sources=sources, phase=phase, timeout=timeout)
        return [first, *self._take_all(kind_set, source_set, phase)]

    def _take_all(self, kinds: frozenset[int] | None, sources: Any, phase: str | None) -> list[Envelope[Message]]:
        buf = self._buffer
        if not buf:
            return []
        if kinds is None and sources is None and phase is None:
            everything = list(buf)
            buf.clear()
            return everything
        out: list[Envelope[Message]] = []
        keep: deque[Envelope[Message]] = deque()
        for env in buf:
            (out if _matches(env, kinds, sources, phase) else keep).append(env)
        if keep:
            self._buffer = keep
        else:
            buf.clear()
        return out

    @overload
    async def gather(
        self,
        sources: Iterable[int],
        *,
        kinds: type[M],
        phase: str | None = None,
        timeout: float | None,
        partial: bool = False,
    ) -> dict[int, Envelope[M]]: ...
    @overload
    async def gather(
        self,
        sources: Iterable[int],
        *,
        kinds: Iterable[int | str | type[Message]] | str | None = None,
        phase: str | None = None,
        timeout: float | None,
        partial: bool = False,
    ) -> dict[int, Envelope[Message]]: ...
    async def gather(
        self,
        sources: Iterable[int],
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        phase: str | None = None,
        timeout: float | None,
        partial: bool = False,
    ) -> dict[int, Envelope[Any]]:  # the overloads above give the precise type
        """Receive one matching message from each of ``sources``; ``{src: envelope}``.

        Extra messages (duplicates, other kinds) stay buffered.  On timeout raises
        :class:`RoundTimeout` listing the sources still missing, or with ``partial=True``
        returns what arrived (the caller decides what a missing party means).
        """
        _check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        want = set(_source_set(sources) or ())
        for src in want:
            self._net._check_actor(src, "gather source")
        self._raise_pending()
        got: dict[int, Envelope[Message]] = {}
        if want and self._buffer:
            keep: deque[Envelope[Message]] = deque()
            for env in self._buffer:
                if env.src in want and _matches(env, kind_set, None, phase):
                    want.discard(env.src)
                    got[env.src] = env
                else:
                    keep.append(env)
            self._buffer = keep
        if not want:
            return got
        waiter = _Waiter(kind_set, None, phase, asyncio.get_running_loop().create_future(), want)
        waiter.got = got
        self._waiters.append(waiter)
        returned = False
        try:
            async with asyncio.timeout(timeout):
                result: dict[int, Envelope[Any]] = await waiter.future
            returned = True
            return result
        except TimeoutError:
            if partial or _succeeded(waiter.future):
                returned = True
                return dict(waiter.got)
            missing = tuple(sorted(waiter.want or ()))
            raise RoundTimeout(
                f"phase {phase or '(any)'!r}: {actor_name(self.actor)} timed out after {timeout} s "
                f"waiting for {_describe(kind_set)} from {_describe_actors(missing)} "
                f"({len(waiter.got)} of {len(waiter.got) + len(missing)} arrived)",
                phase=phase or "", timeout=timeout, missing=missing,
            ) from None
        finally:
            self._forget(waiter, returned)

    def _forget(self, waiter: _Waiter, returned: bool) -> None:
        """Drop a finished waiter; unless its catch was returned, put the catch back."""
        try:
            self._waiters.remove(waiter)
        except ValueError:
            pass
        if returned:
            return
        fut = waiter.future
        failed = fut.done() and not fut.cancelled() and fut.exception() is not None  # (retrieved)
        if waiter.want is None:
            # delivered just as the recv was cancelled: nothing is lost
            if fut.done() and not fut.cancelled() and not failed:
                self._buffer.appendleft(fut.result())
        else:
            for env in reversed(list(waiter.got.values())):
                self._buffer.appendleft(env)

    # ------------------------------------------------------------------ delivery side
    def _put(self, env: Envelope[Message], position: int | None = None) -> None:
        if not self._waiters and position is None:
            self._buffer.append(env)
            return
        for w in self._waiters:
            if w.matches(env) and not w.future.done():
                if w.want is None:
                    self._waiters.remove(w)
                    w.future.set_result(env)
                    return
                w.want.discard(env.src)
                w.got[env.src] = env
                if not w.want:
                    self._waiters.remove(w)
                    w.future.set_result(w.got)
                return
        if position is None or position >= len(self._buffer):
            self._buffer.append(env)
        else:
            self._buffer.insert(position, env)

    def _crash(self) -> None:
        self._buffer.clear()
        err = PartyDropped(f"{actor_name(self.actor)} has crashed", parties=(self.actor,))
        for w in list(self._waiters):
            if not w.future.done():
                w.future.set_exception(err)
        self._waiters.clear()


def _succeeded(future: asyncio.Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _source_set(sources: Iterable[int] | int | None) -> frozenset[int] | None:
    if sources is None:
        return None
    if isinstance(sources, int):
        return frozenset((sources,))
    return frozenset(int(s) for s in sources)


def _describe(kinds: frozenset[int] | None) -> str:
    if kinds is None:
        return "any message"
    return "/".join(sorted(message_class(k).NAME for k in kinds))


def _describe_actors(actors: tuple[int, ...], limit: int = 10) -> str:
    names = [actor_name(a) for a in actors[:limit]]
    more = f" and {len(actors) - limit} more" if len(actors) > limit else ""
    return ", ".join(names) + more


class Transport(ABC):
    """Moves encoded messages between the controller and ``n`` parties.

    Subclasses implement :meth:`_transmit`.  The base class owns the endpoints, the topology
    check, the traffic counters and the set of crashed actors.

    Parameters
    ----------
    n
        Number of parties (>= 1).
    topology
        See :class:`Topology` (default: star).
    latency
        Simulated latency/bandwidth model (default: zero time).
    """

    counts_sends = True
    """Whether :meth:`_send` counts the send (a shard's network does not: its router does)."""

    def __init__(self, n: int, *, topology: nx.Graph[int] | None = None, latency: LatencyModel | None = None) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigurationError(f"n (number of parties) must be an integer >= 1, got {n!r}")
        self.n = n
        self.topology = Topology(n, topology)
        self._traffic = TrafficCounter(n, latency or LatencyModel())
        self._endpoints: dict[int, Endpoint] = {}
        self._crashed: set[int] = set()
        self._last_payload: bytes | None = None  # decode cache for broadcasts (same bytes object)
        self._last_message: Message | None = None

    # ------------------------------------------------------------------ actors
    @property
    def crashed(self) -> frozenset[int]:
        """Actors that have crashed."""
        return frozenset(self._crashed)

    def _check_actor(self, actor: int, what: str) -> None:
        if not (isinstance(actor, int) and (actor == CONTROLLER or 0 <= actor < self.n)):
            raise ProtocolError(
                f"{what} must be CONTROLLER ({CONTROLLER}) or a party id in 0..{self.n - 1}, got {actor!r}"
            )

    def endpoint(self, actor: int, *, accept: Iterable[int | str | type[Message]] | None = None) -> Endpoint:
        """The endpoint of ``actor`` (created on first use).

        ``accept`` (message classes / names / kinds) makes the endpoint reject every other kind
        on delivery: the offending frame is rejected (counted against its sender, noted in
        :meth:`Endpoint.rejections`) and no receive sees it.
        """
        self._check_actor(actor, "actor")
        ep = self._endpoints.get(actor)
        if ep is None:
            ep = self._endpoints[actor] = Endpoint(self, actor)
        if accept is not None:
            ep._accept = resolve_kinds(accept)
        return ep

    def crash(self, actor: int) -> None:
        """Crash ``actor`` now: its later sends vanish, messages to it are lost, its recv raises."""
        self._check_actor(actor, "actor")
        if actor in self._crashed:
            return
        self._crashed.add(actor)
        ep = self._endpoints.get(actor)
        if ep is not None:
            ep._crash()

    def path(self, src: int, dst: int) -> list[int]:
        """Shortest relay path in the topology, e.g. ``[3, CONTROLLER, 5]`` in a star."""
        self._check_actor(src, "src")
        self._check_actor(dst, "dst")
        return self.topology.path(src, dst)

    # ------------------------------------------------------------------ rounds / stats
    def begin_round(self, phase: str) -> None:
        """Mark the start of a new communication round of ``phase``."""
        if not isinstance(phase, str) or not phase:
            raise ConfigurationError(f"phase must be a non-empty string, got {phase!r}")
        self._traffic.begin_round(phase)

    def end_round(self) -> None:
        """Mark the end of the current round."""
        self._traffic.end_round()

    @contextmanager
    def round(self, phase: str) -> Iterator[None]:
        """``with network.round("collect"): ...`` marks one round."""
        self.begin_round(phase)
        try:
            yield
        finally:
            self.end_round()

    def statistics(self) -> TrafficStatistics:
        """Immutable snapshot of all traffic so far."""
        return self._traffic.snapshot(tuple(self._crashed))

    def totals(self) -> tuple[int, int]:
        """Messages and payload bytes sent so far: a progress report's figures, without the
        per-actor snapshot of :meth:`statistics` (O(n))."""
        return self._traffic.messages, self._traffic.bytes

    # ------------------------------------------------------------------ internals
    def _admit(self, src: int) -> bool:
        """Hook before a send is counted; False makes it vanish (e.g. crash fault)."""
        if src in self._crashed:
            self._traffic.record_fault("lost_to_crash")
            return False
        return True

    def _check_link(self, src: int, dst: int) -> None:
        """ProtocolError unless ``dst`` is a valid actor that ``src`` may send to directly."""
        if not (dst == CONTROLLER or (type(dst) is int and 0 <= dst < self.n)):
            self._check_actor(dst, "dst")
        if not self.topology.allowed(src, dst):
            if src == dst:
                raise ProtocolError(f"{actor_name(src)} cannot send to itself")
            try:
                route = f"relay via {self.topology.path(src, dst)}"
            except ProtocolError:
                route = "it is unreachable"
            raise ProtocolError(
                f"{actor_name(src)} cannot send to {actor_name(dst)}: no link in the topology; {route}"
            )

    def _send(self, src: int, dst: int, msg: Message, phase: str, payload: bytes) -> None:
        self._check_link(src, dst)
        _check_phase(phase)
        self._emit(src, dst, msg, phase, payload)

    def _emit(self, src: int, dst: int, msg: Message, phase: str, payload: bytes) -> None:
        """Admit, count and transmit one checked send."""
        if not self._admit(src):
            return
        kind = msg.KIND
        if self.counts_sends:
            self._traffic.record_send(src, phase, kind, len(payload))
        self._transmit(Frame(src, dst, phase, kind, payload, msg))

    def _emit_all(self, src: int, dsts: Sequence[int], msgs: Sequence[Message], phase: str,
                  payloads: Sequence[bytes], kind: int) -> None:
        """Admit, count and transmit checked sends of one ``kind``: ``msgs[k]`` (encoded as
        ``payloads[k]``) to ``dsts[k]``; as many :meth:`_emit` calls, counted at once."""
        count = self._admit_many(src, len(dsts))
        if not count:
            return
        if self.counts_sends:
            sizes = [len(p) for p in payloads[:count]]
            self._traffic.record_sends(src, phase, kind, count, sum(sizes), max(sizes))
        self._transmit_all([Frame(src, dsts[k], phase, kind, payloads[k], msgs[k]) for k in range(count)])

    def _admit_many(self, src: int, count: int) -> int:
        """:meth:`_admit` for ``count`` sends of ``src`` in a row: how many of them are admitted
        (the first ones; the others vanish)."""
        if src in self._crashed:
            self._traffic.record_fault("lost_to_crash", count)
            return 0
        return count

    def _transmit_all(self, frames: list[Frame]) -> None:
        """:meth:`_transmit` each of ``frames``, in order (a transport may do it at once)."""
        transmit = self._transmit
        for frame in frames:
            transmit(frame)

    @abstractmethod
    def _transmit(self, frame: Frame) -> None:
        """Carry ``frame`` to its destination and call :meth:`_deliver` there (or drop it).

        Called by ``send`` / ``broadcast`` after the topology check and the sender-side count,
        once per destination; it must not block.  It may return before the frame arrives (a
        socket write, a scheduled delivery); it must not decode, filter or reorder by content: the receiving
        side's :meth:`_deliver` does all of that, so every transport accepts and rejects the
        same frames.  ``frame.src`` must reach ``_deliver`` as the authenticated sender.
        """

    def _deliver(self, frame: Frame, position: int | None = None) -> None:
        """Receiving side: decode ``frame`` and hand it to the destination endpoint.

        Called by :meth:`_transmit` once per delivered copy, in the receiver's event loop.
        ``position`` (None = the end) inserts the envelope into the receiver's buffer at that
        index when no receive is waiting for it (the reorder fault).  Never raises for a bad
        frame: a frame that fails decoding or has a kind the endpoint does not accept is
        rejected (:meth:`_reject`).  A frame for a crashed actor is lost.
        """
        dst = frame.dst
        if dst in self._crashed:
            self._traffic.record_fault("lost_to_crash")
            return
        ep = self._endpoints.get(dst)
        if ep is None:
            ep = self._endpoints[dst] = Endpoint(self, dst)
        payload = frame.payload
        msg = frame.message
        accept = ep._accept
        if msg is None or (accept is not None and frame.kind not in accept):
            try:
                if payload is self._last_payload and self._last_message is not None and (accept is None or frame.kind in accept):
                    msg = self._last_message  # same bytes object (a broadcast): same immutable message
                else:
                    msg = decode(payload, expected=accept)
                    self._last_payload, self._last_message = payload, msg
            except MessageError as exc:
                self._reject(frame, ep, str(exc))
                return
        size = len(payload)
        self._traffic.record_delivery(dst, size)
        ep._put(Envelope(frame.src, dst, frame.phase, msg, size), position)

    def _reject(self, frame: Frame, ep: Endpoint, reason: str) -> None:
        """Count a rejected frame against its sender and note it on the receiving endpoint."""
        self._traffic.record_rejection(frame.src)
        ep._rejections.append(Rejection(frame.src, frame.dst, frame.phase, frame.kind, reason))
