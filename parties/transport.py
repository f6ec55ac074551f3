"""Transport interface and per-actor endpoints.

A :class:`Transport` moves encoded frames between actors.  Everything protocol code touches
is the :class:`Endpoint` of its actor: ``send`` / ``send_each`` / ``broadcast`` encode each
message once with :mod:`parties.wire.codec`, check the topology and count the traffic; the
transport delivers the bytes; on delivery the receiving endpoint decodes them and hands the
:class:`~parties.mailbox.Envelope` to its :class:`~parties.mailbox.Mailbox` (``recv`` /
``recv_many`` / ``gather``: filtered receive from the messages buffered in arrival order).

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

Actor ids: :data:`CONTROLLER` (= -1) and parties ``0 .. n-1``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple

from mprr.domain import check_int
from mprr.errors import ConfigurationError, MessageError, ProtocolError
from parties.mailbox import Envelope, Mailbox, Rejection
from parties.wire.codec import Message, decode, encode, resolve_kinds
from parties.topology import CONTROLLER, Topology, actor_name
from parties.traffic import ActorStatistics, LatencyModel, TrafficCounter, TrafficStatistics

if TYPE_CHECKING:  # annotations only: party workers never import networkx
    import networkx as nx

__all__ = ["CONTROLLER", "Endpoint", "Envelope", "Frame", "Rejection", "Topology", "Transport", "actor_name"]


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


def _check_phase(phase: str) -> None:
    if type(phase) is not str or not phase:
        raise ConfigurationError(f"phase must be a non-empty string, got {phase!r}")


class Endpoint(Mailbox):
    """One actor's handle on the network: send, broadcast, and its mailbox's filtered receive.

    Obtain it with ``network.endpoint(actor_id)``; do not construct it directly.
    """

    __slots__ = ("_net", "_accept")

    def __init__(self, network: Transport, actor: int) -> None:
        super().__init__(actor)
        self._net = network
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
        return self._net.is_crashed(self.actor)

    @property
    def accept(self) -> frozenset[int] | None:
        """The message kinds this endpoint accepts (``None``: every kind); a frame of another
        kind is rejected on delivery.  Set by :meth:`Transport.endpoint`."""
        return self._accept

    @accept.setter
    def accept(self, kinds: frozenset[int] | None) -> None:
        self._accept = kinds

    def _check_source(self, src: int) -> None:
        self._net.check_actor(src, "gather source")

    def _check_sources(self, sources: set[int]) -> None:
        if sources and min(sources) >= CONTROLLER and max(sources) < self._net.n:
            return  # (ints, from the mailbox's source set: every one an actor of the run)
        for src in sources:
            self._check_source(src)

    def statistics(self) -> ActorStatistics:
        """What this actor sent and received so far (and how many of its frames were rejected)."""
        return self._net.counter.actor(self.actor)

    def reject(self, env: Envelope[Message], reason: str) -> None:
        """Reject a delivered, well-formed message that the protocol cannot use.

        Counted and noted exactly like a frame that failed decoding (attributed to ``env.src``).
        """
        self._net.reject(Frame(env.src, env.dst, env.phase, env.message.KIND, b""), self, reason)

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
        self._net.send(self.actor, dst, msg, phase, encode(msg))

    async def broadcast(self, dsts: Iterable[int], msg: Message, *, phase: str) -> None:
        """Send the same ``msg`` to every actor in ``dsts`` (encoded once; one message each)."""
        self._net.broadcast_from(self.actor, dsts, msg, phase)

    async def send_each(self, dsts: Iterable[int], msgs: Sequence[Message], *, phase: str) -> None:
        """Send ``msgs[k]`` to the k-th actor of ``dsts``, for every k: one message each, exactly
        as that many :meth:`send` calls, but checked, encoded and counted in one pass (e.g. a
        party's share vectors to all its peers).  The messages must be of one kind; errors as
        :meth:`Transport.send_many`, which sends them."""
        self._net.send_many(self.actor, dsts, msgs, phase)


class Transport(ABC):
    """Moves encoded messages between the controller and ``n`` parties.

    Subclasses implement :meth:`_transmit`.  The base class owns the endpoints, the topology
    check, the traffic counters and the set of crashed actors.

    What an :class:`Endpoint` calls (and nothing else of it): :meth:`send`, :meth:`send_many`,
    :meth:`broadcast_from` (its sends, checked there; a host's party programs send through the
    same methods, :mod:`parties.party_sum`), :meth:`check_link`,
    :meth:`check_actor`, :meth:`is_crashed`, :meth:`reject` and :attr:`counter`; the transport
    calls the endpoint's delivery side in turn (:meth:`Endpoint.deliver
    <parties.inbox.Inbox.deliver>`, ``deliver_columns``, ``note_rejection``, ``crash``).

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
    """Whether :meth:`send` counts the send (a shard's network does not: its router does)."""

    def __init__(self, n: int, *, topology: nx.Graph[int] | None = None, latency: LatencyModel | None = None) -> None:
        self.n = check_int("n (number of parties)", n, 1)
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

    def is_crashed(self, actor: int) -> bool:
        """Whether ``actor`` has crashed."""
        return actor in self._crashed

    def check_actor(self, actor: int, what: str) -> None:
        """ProtocolError unless ``actor`` is the controller or a party of the run (``what`` names
        it in the message)."""
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
        self.check_actor(actor, "actor")
        ep = self._endpoints.get(actor)
        if ep is None:
            ep = self._endpoints[actor] = Endpoint(self, actor)
        if accept is not None:
            ep.accept = resolve_kinds(accept)
        return ep

    def crash(self, actor: int) -> None:
        """Crash ``actor`` now: its later sends vanish, messages to it are lost, its recv raises."""
        self.check_actor(actor, "actor")
        if actor in self._crashed:
            return
        self._crashed.add(actor)
        ep = self._endpoints.get(actor)
        if ep is not None:
            ep.crash()

    def path(self, src: int, dst: int) -> list[int]:
        """Shortest relay path in the topology, e.g. ``[3, CONTROLLER, 5]`` in a star."""
        self.check_actor(src, "src")
        self.check_actor(dst, "dst")
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

    @property
    def counter(self) -> TrafficCounter:
        """The live traffic counters (a shard in the router's process counts into the router's)."""
        return self._traffic

    def totals(self) -> tuple[int, int]:
        """Messages and payload bytes sent so far: a progress report's figures, without the
        per-actor snapshot of :meth:`statistics` (O(n))."""
        return self._traffic.messages, self._traffic.bytes

    # ------------------------------------------------------------------ the endpoints' sends
    def check_link(self, src: int, dst: int) -> None:
        """ProtocolError unless ``dst`` is a valid actor that ``src`` may send to directly."""
        if not (dst == CONTROLLER or (type(dst) is int and 0 <= dst < self.n)):
            self.check_actor(dst, "dst")
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

    def check_send(self, src: int, dst: int, phase: str) -> None:
        """:meth:`check_link`, then ConfigurationError unless ``phase`` is a non-empty string."""
        self.check_link(src, dst)
        _check_phase(phase)

    def admit(self, src: int) -> bool:
        """Whether a send of ``src`` leaves (not crashed; else counted as lost, or as the fault
        plan says)."""
        return self._admit(src)

    def send(self, src: int, dst: int, msg: Message, phase: str, payload: bytes) -> None:
        """``src`` sends ``msg`` (encoded as ``payload``) to ``dst`` in ``phase``: the link and
        the phase checked (:meth:`check_send`: :class:`~mprr.errors.ProtocolError`,
        ConfigurationError), then admitted, counted and transmitted (:meth:`Endpoint.send`)."""
        self.check_send(src, dst, phase)
        self._emit(src, dst, msg, phase, payload)

    def send_many(self, src: int, dsts: Iterable[int], msgs: Sequence[Message], phase: str) -> None:
        """``src`` sends ``msgs[k]`` to the k-th actor of ``dsts``, for every k, all of one kind:
        every link and the phase checked first (refused all or none), then encoded, admitted,
        counted and transmitted at once (:meth:`Endpoint.send_each`).

        Raises
        ------
        ProtocolError
            As :meth:`send`, for any destination; nothing is sent then.
        MessageError
            If a message cannot be encoded, or the messages are not all of one kind (nothing
            is sent).
        """
        targets = self._checked(src, dsts, phase)
        if len(targets) != len(msgs):
            raise ConfigurationError(f"send_each needs one message per destination, got "
                                     f"{len(msgs)} messages for {len(targets)} destinations")
        if not targets:
            return
        kind = type(msgs[0])
        if any(type(m) is not kind for m in msgs):
            raise MessageError(f"send_each sends messages of one kind, got {sorted({m.NAME for m in msgs})}")
        self._send_messages(src, targets, msgs, phase, kind.KIND)

    def _send_messages(self, src: int, dsts: list[int], msgs: Sequence[Message], phase: str, kind: int) -> None:
        """:meth:`send_many`'s checked sends: each message encoded, then :meth:`send_each`."""
        self.send_each(src, dsts, msgs, phase, [encode(m) for m in msgs], kind)

    def broadcast_from(self, src: int, dsts: Iterable[int], msg: Message, phase: str) -> None:
        """``src`` sends the same ``msg`` to every actor of ``dsts``: the links and the phase
        checked first (all or none), encoded once, one message each (:meth:`Endpoint.broadcast`)."""
        self.broadcast(src, self._checked(src, dsts, phase), msg, phase, encode(msg))

    def _checked(self, src: int, dsts: Iterable[int], phase: str) -> list[int]:
        """``dsts`` as a list, once every link of ``src`` and the phase are checked (refuse all or none)."""
        targets = list(dsts)
        if not self.topology.reaches(src, targets):  # find the first bad one, for its message
            for dst in targets:
                self.check_link(src, dst)
        _check_phase(phase)
        return targets

    def send_each(self, src: int, dsts: Sequence[int], msgs: Sequence[Message], phase: str,
                  payloads: Sequence[bytes], kind: int) -> None:
        """Checked sends of one ``kind`` (:meth:`Endpoint.send_each` checked the links and the
        phase): ``msgs[k]`` (encoded as ``payloads[k]``) to ``dsts[k]``; as many single sends,
        admitted, counted and transmitted at once."""
        count = self._admit_many(src, len(dsts))
        if not count:
            return
        if self.counts_sends:
            sizes = [len(p) for p in payloads[:count]]
            self._traffic.record_sends(src, phase, kind, count, sum(sizes), max(sizes))
        transmit = self._transmit
        for k in range(count):
            transmit(Frame(src, dsts[k], phase, kind, payloads[k], msgs[k]))

    def broadcast(self, src: int, dsts: Sequence[int], msg: Message, phase: str, payload: bytes) -> None:
        """The checked sends of one message ``msg`` (encoded as ``payload``) to every actor of
        ``dsts`` (:meth:`Endpoint.broadcast` checked them): :meth:`send_each` of as many copies."""
        count = len(dsts)
        self.send_each(src, dsts, (msg,) * count, phase, (payload,) * count, msg.KIND)

    def reject(self, frame: Frame, endpoint: Endpoint, reason: str) -> None:
        """Count a rejected frame against its sender and note it on the receiving ``endpoint``."""
        self._traffic.record_rejection(frame.src)
        endpoint.note_rejection(Rejection(frame.src, frame.dst, frame.phase, frame.kind, reason))

    # ------------------------------------------------------------------ internals
    def _admit(self, src: int) -> bool:
        """Hook before a send is counted; False makes it vanish (e.g. crash fault)."""
        if src in self._crashed:
            self._traffic.record_fault("lost_to_crash")
            return False
        return True

    def _emit(self, src: int, dst: int, msg: Message, phase: str, payload: bytes) -> None:
        """Admit, count and transmit one checked send."""
        if not self._admit(src):
            return
        kind = msg.KIND
        if self.counts_sends:
            self._traffic.record_send(src, phase, kind, len(payload))
        self._transmit(Frame(src, dst, phase, kind, payload, msg))

    def _admit_many(self, src: int, count: int) -> int:
        """:meth:`_admit` for ``count`` sends of ``src`` in a row: how many of them are admitted
        (the first ones; the others vanish)."""
        if src in self._crashed:
            self._traffic.record_fault("lost_to_crash", count)
            return 0
        return count

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
        rejected (:meth:`reject`).  A frame for a crashed actor is lost.
        """
        src, dst, phase, kind, payload, msg = frame
        if dst in self._crashed:
            self._traffic.record_fault("lost_to_crash")
            return
        ep = self._endpoints.get(dst)
        if ep is None:
            ep = self._endpoints[dst] = Endpoint(self, dst)
        accept = ep.accept
        if msg is None or (accept is not None and kind not in accept):
            try:
                if payload is self._last_payload and self._last_message is not None and (accept is None or kind in accept):
                    msg = self._last_message  # same bytes object (a broadcast): same immutable message
                else:
                    msg = decode(payload, expected=accept)
                    self._last_payload, self._last_message = payload, msg
            except MessageError as exc:
                self.reject(frame, ep, str(exc))
                return
        size = len(payload)
        traffic = self._traffic  # (TrafficCounter.record_delivery, inlined: once per message)
        traffic.delivered += 1
        traffic.recv_messages[dst + 1] += 1
        traffic.recv_bytes[dst + 1] += size
        ep.deliver(Envelope(src, dst, phase, msg, size), position)
