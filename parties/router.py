"""The router of a run, in the controller's process: one for every runtime.

``Router(n)`` routes frames between the actors it hosts — the controller
(:data:`parties.transport.CONTROLLER` = -1), and parties ``0..n-1`` that no host holds, each
with its :class:`~parties.transport.Endpoint` in this process — and the
:class:`~parties.link.Link` of every party host (:class:`~parties.shard.PartyShard`) attached
with :meth:`Router.attach`.  It is a :class:`~parties.transport.Transport` (the messaging
layer's ``Transport``, ``Endpoint``, ``Frame`` and ``CONTROLLER`` live in
:mod:`parties.transport`).  Messages travel as bytes: encoded on send, decoded on delivery, so
every message and byte counted is real (a broadcast is encoded once and, the message being
immutable, decoded once).  Delivery is immediate (no sleeping) unless the fault plan delays a
message; a :class:`LatencyModel` computes *simulated* time per round instead.

Every frame of the run passes here — the controller's sends, and every party's send, which
arrives up its host's link through :meth:`Router.ingress` (reply columns through
:meth:`Router.ingress_columns`) — and the router reaches a host only through its link
(``push``, ``push_many``, ``crash``, ``buffered``), so

- message counts, payload bytes and rounds are counted by the same code on every runtime (a
  send is counted when the router admits it; deliveries to parties are counted by the shards,
  and a remote shard's are added at the end with :meth:`Router.merge`);
- the seeded fault plan (drop, delay, duplicate, reorder, crash) is applied in one place, in
  the order frames arrive.  A reorder towards a party carries its buffer position on the wire;
  a crash decided here is forwarded to the party's shard;
- a frame a shard sends for a party it does not host, over a link the topology forbids, or
  whose header disagrees with its payload is rejected here (counted as ``rejected``): a bad
  frame is the sender's fault, never the run's end;
- a party-to-party frame (a secure-sum share over a direct link) goes up from its sender's
  shard and down to its receiver's, even within one shard: the topology is checked here, and
  its payload crosses the channel twice (:attr:`Router.party_to_party` counts it, so
  a runtime's wire payload is the traffic's bytes plus these);
- frames travel as columns where no fault plan acts on single messages: a broadcast goes to
  each shard link once (``push_many``), and every shard sends its cohorts' replies as
  :class:`~parties.columns.ReplyColumns` (from another process, one ``COLUMNS`` record,
  :mod:`parties.channel`; :meth:`Router.ingress_columns` rejects columns naming a
  party the link does not host), counted per sender at each message's codec size and handed to
  the controller's columnar gather, and a shard in this process its secure-sum programs'
  messages of one turn as :class:`~parties.columns.MessageColumns` (delivered as envelopes); the
  controller's ``send_each`` reaches a host in this process as the messages themselves, one
  :meth:`Link.push_each <parties.link.Link.push_each>` per run of its parties, counted at each
  message's codec size (:func:`~parties.wire.codec.encoded_size`), none encoded; with a fault
  plan, or a subclass that routes each frame itself (a timed network), one frame each;
- a lost shard (worker died, actor died) crashes all its parties at once
  (:meth:`Router.lose`): the controller's next gather ends with ``PartyDropped`` or a
  degraded result within the round timeout, never a hang.

Endpoint API (see :class:`parties.transport.Endpoint`)::

    await ep.send(dst, msg, *, phase)
    await ep.broadcast(dsts, msg, *, phase)
    env = await ep.recv(*, kinds=None, sources=None, phase=None, timeout)   # -> Envelope
    got = await ep.gather(sources, *, kinds=None, phase=None, timeout, partial=False)
    ep.statistics(); ep.buffered; ep.pending(); ep.crashed
    ep.rejections(); ep.take_rejections(sources=None); ep.reject(env, reason)   # bad frames

Router API: ``endpoint(actor, *, accept=None)``, ``begin_round(phase)`` / ``end_round()`` /
``with round(phase):``, ``statistics()``, ``crash(actor)``, ``crashed``, ``path(src, dst)``, ``close()``;
links: ``attach(link)``, ``covered()``, ``owner(party)``, ``ingress(link, frame)``,
``lose(link, reason)``, ``merge(reports)``.

Usage::

    net = Router(3, seed=1)
    ctrl, p0 = net.endpoint(CONTROLLER), net.endpoint(0)

    async def party():
        env = await p0.recv(kinds=ReleaseRequest, timeout=1.0)
        await p0.send(CONTROLLER, RandomizedValues(env.message.request_id, [2]), phase="collect")

    async def controller():
        with net.round("collect"):
            await ctrl.send(0, request, phase="collect")  # a ReleaseRequest with request_id 7
            return await ctrl.recv(kinds=RandomizedValues, sources=[0], timeout=1.0)

    async with asyncio.TaskGroup() as tg:
        tg.create_task(party())
        reply = tg.create_task(controller())
    net.statistics().to_dict()   # messages, bytes, rounds per sender/receiver/kind/phase
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mprr.errors import ConfigurationError, MessageError
from parties.faults import FaultInjector, FaultPlan
from parties.link import Link
from parties.traffic import LatencyModel, TrafficStatistics
from parties.transport import CONTROLLER, Endpoint, Envelope, Frame, Topology, Transport, actor_name
from parties.wire.codec import HEADER_SIZE, Message, encode, encoded_size, peek_kind

if TYPE_CHECKING:  # annotations only: party workers never import networkx
    import networkx as nx

    from parties.columns import Columns
    from parties.shard_report import ShardReport

__all__ = ["Router"]

class Router(Transport):
    """One buffered mailbox per actor in this process, shard links for the others (module
    docstring).

    Parameters
    ----------
    n
        Number of parties (>= 1).
    topology
        networkx graph of allowed party-to-party links (default: star, parties reach only the
        controller; see :class:`parties.transport.Topology`).
    faults
        Optional :class:`FaultPlan` (drop / delay / duplicate / reorder / crash).
    latency
        Optional :class:`LatencyModel` for simulated time (default: zero).
    seed
        Seed of the fault decisions (non-negative integer).
    """

    def __init__(
        self,
        n: int,
        *,
        topology: nx.Graph[int] | None = None,
        faults: FaultPlan | None = None,
        latency: LatencyModel | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(n, topology=topology, latency=latency)
        self.faults = faults
        self._injector = FaultInjector(faults, seed) if faults is not None else None
        self._probabilistic = faults is not None and faults.probabilistic
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._next_token = 0
        self._links: list[Link] = []
        self._starts: list[int] = []
        self.lost: dict[int, str] = {}  # link index -> why
        self.party_to_party = [0, 0]  # messages, payload bytes routed from a party to a party
        self._headers: dict[int, bytes] = {}  # kind -> the codec header of a payload of that kind
        self._carried = False  # a link carries messages as they are (Link.carries_messages)

    def _admit(self, src: int) -> bool:
        inj = self._injector
        if inj is not None and src not in self._crashed and inj.crashes_now(src):
            self.crash(src)
        return super()._admit(src)

    def _columnar(self) -> bool:
        """Whether frames may travel as columns here: no fault plan acts on single messages,
        and frames are routed by this class (a subclass that routes each frame itself, such as
        a timed network, gets every frame on its own)."""
        return self._injector is None and type(self)._route is Router._route

    def broadcast(self, src: int, dsts: Sequence[int], msg: Message, phase: str, payload: bytes) -> None:
        """A broadcast goes to each shard link once (:meth:`Link.push_many
        <parties.link.Link.push_many>`), counted as one message per receiver; to parties in this
        process, and wherever a fault plan acts per message, as one frame each."""
        count = len(dsts)
        targets = np.asarray(dsts, dtype=np.int64)
        if (count < 2 or not self._links or not self._columnar() or src in self._crashed
                or CONTROLLER in dsts or np.any(np.diff(targets) <= 0)):
            super().broadcast(src, dsts, msg, phase, payload)
            return
        size = len(payload)
        self._traffic.record_sends(src, phase, msg.KIND, count, size * count, size)
        if self._crashed:
            lost = np.isin(targets, np.fromiter(self._crashed, dtype=np.int64, count=len(self._crashed)))
            if lost.any():
                self._traffic.record_fault("lost_to_crash", int(lost.sum()))
                targets = targets[~lost]
        frame = Frame(src, int(targets[0]) if targets.size else 0, phase, msg.KIND, payload, msg)
        starts = np.fromiter((link.parties.start for link in self._links), dtype=np.int64, count=len(self._links))
        which = np.searchsorted(starts, targets, side="right") - 1
        at = 0
        while at < targets.shape[0]:  # runs of receivers behind one link, or in this process
            k = int(which[at])
            link = self._links[k] if k >= 0 else None
            stop = at + 1
            if link is not None:
                stop = int(np.searchsorted(targets, link.parties.stop))
            if link is None or int(targets[at]) not in link.parties:
                super()._deliver(frame._replace(dst=int(targets[at])))
                at += 1
                continue
            link.push_many(frame, targets[at:stop])
            at = stop

    def ingress_columns(self, link: Link, block: Columns, *, checked: bool = False) -> None:
        """Columns sent by parties of ``link`` (:mod:`parties.columns`: reply columns, or a host's
        secure-sum messages of one turn, :class:`~parties.columns.MessageColumns`): counted per sender
        as its own message (:meth:`TrafficCounter.record_columns
        <parties.traffic.TrafficCounter.record_columns>`) and delivered to the controller's
        endpoint as columns; where a fault plan acts per message, as one frame each
        (:meth:`ingress`).

        ``checked``: the columns come from the shard that shares this network (its parties are
        the ones it hosts).  Otherwise columns that name a party ``link`` does not host, or one
        the topology does not link with the controller, are rejected whole (counted
        ``rejected``, one per member): a shard speaks for its own parties only.
        """
        if not checked:
            srcs, hosted = block.srcs, link.parties
            if not (len(block) and int(srcs.min()) >= hosted.start and int(srcs.max()) < hosted.stop
                    and self.topology.controller_links(srcs)):
                self._traffic.record_fault("rejected", max(len(block), 1))
                return
        if not self._columnar():
            for k in range(len(block)):
                self.ingress(link, Frame(int(block.srcs[k]), CONTROLLER, block.phase, block.kind,
                                         block.payload(k), block.message(k)), checked=True)
            return
        if self._crashed:
            lost = np.isin(block.srcs, np.fromiter(self._crashed, dtype=np.int64, count=len(self._crashed)))
            if lost.any():
                self._traffic.record_fault("lost_to_crash", int(lost.sum()))
                block = block.subset(~lost)
        if not len(block):
            return
        self._traffic.record_columns(block.srcs, block.phase, block.kind, block.sizes)
        if CONTROLLER in self._crashed:
            self._traffic.record_fault("lost_to_crash", len(block))
            return
        ep = self.endpoint(CONTROLLER)
        if ep.accept is not None and block.kind not in ep.accept:  # rejected, each on its own
            for k in range(len(block)):
                super()._deliver(Frame(int(block.srcs[k]), CONTROLLER, block.phase, block.kind, block.payload(k)))
            return
        self._traffic.record_deliveries(CONTROLLER, len(block), int(block.sizes.sum()))
        ep.deliver_columns(block)

    def _send_messages(self, src: int, dsts: list[int], msgs: Sequence[Message], phase: str, kind: int) -> None:
        """The checked sends of :meth:`~parties.transport.Transport.send_many`, counted at each
        message's codec size: the runs of receivers behind a link that carries messages as they
        are (a host in this process, :attr:`Link.carries_messages
        <parties.link.Link.carries_messages>`) go to it in one :meth:`Link.push_each
        <parties.link.Link.push_each>`, unencoded; the others, and all where a fault plan acts
        per message, as one encoded frame each."""
        if not self._carried or not self._columnar():
            super()._send_messages(src, dsts, msgs, phase, kind)
            return
        count = self._admit_many(src, len(dsts))
        if not count:
            return
        sizes = [encoded_size(m) for m in msgs[:count]]
        self._traffic.record_sends(src, phase, kind, count, sum(sizes), max(sizes))
        crashed, at = self._crashed, 0
        while at < count:
            dst = dsts[at]
            link = self.owner(dst) if dst != CONTROLLER else None
            if link is None or not link.carries_messages:
                self._transmit(Frame(src, dst, phase, kind, encode(msgs[at]), msgs[at]))
                at += 1
                continue
            hosted, stop = link.parties, at + 1
            while stop < count and dsts[stop] in hosted:
                stop += 1
            run, messages, run_sizes = dsts[at:stop], msgs[at:stop], sizes[at:stop]
            if crashed and not crashed.isdisjoint(run):  # (as :meth:`_deliver`: lost at the router)
                live = [k for k, d in enumerate(run) if d not in crashed]
                self._traffic.record_fault("lost_to_crash", len(run) - len(live))
                run, messages, run_sizes = [run[k] for k in live], [messages[k] for k in live], [run_sizes[k] for k in live]
            if run:
                link.push_each(src, phase, kind, run, messages, run_sizes)
            at = stop

    def _admit_many(self, src: int, count: int) -> int:
        inj = self._injector
        if inj is None or src not in inj.plan.crash:
            return super()._admit_many(src, count)
        return sum(self._admit(src) for _ in range(count))  # (each admitted send counts towards the crash)

    def _transmit(self, frame: Frame) -> None:
        self._route(frame)

    def _route(self, frame: Frame) -> None:
        """Apply the fault plan to ``frame`` and deliver what survives (now or after a delay)."""
        if not self._probabilistic:
            self._deliver(frame)
            return
        inj = self._injector
        if inj is None:  # pragma: no cover - _probabilistic implies an injector
            return
        d = inj.decide(frame.src, frame.dst, frame.phase)
        if d.drop:
            self._traffic.record_fault("dropped")
            return
        copies = 2 if d.duplicate else 1
        if d.duplicate:
            self._traffic.record_fault("duplicated")
        if d.delay > 0:
            self._traffic.record_fault("delayed")
            loop = asyncio.get_running_loop()
            for _ in range(copies):
                token = self._next_token
                self._next_token += 1
                self._timers[token] = loop.call_later(d.delay, self._fire, token, frame)
            return
        for _ in range(copies):
            position = None
            if d.reorder:
                position = d.position(self._buffered(frame.dst))
                self._traffic.record_fault("reordered")
            self._deliver(frame, position)

    def _buffered(self, actor: int) -> int:
        """Messages delivered to ``actor`` and not yet taken."""
        link = self.owner(actor)
        if link is not None:
            return link.buffered(actor)
        ep = self._endpoints.get(actor)
        return 0 if ep is None else ep.buffered

    def _fire(self, token: int, frame: Frame) -> None:
        self._timers.pop(token, None)
        self._deliver(frame)

    def close(self) -> None:
        """Cancel delayed deliveries still pending (call when a run ends early)."""
        for h in self._timers.values():
            h.cancel()
        self._timers.clear()

    # ------------------------------------------------------------------ shard links
    def attach(self, link: Link) -> int:
        """Attach a shard link (its parties must not overlap another's); returns its index."""
        r = link.parties
        if r.step != 1 or len(r) == 0 or r.start < 0 or r.stop > self.n:
            raise ConfigurationError(f"a shard must host a non-empty contiguous range of 0..{self.n - 1}, got {r}")
        for other in self._links:
            if r.start < other.parties.stop and other.parties.start < r.stop:
                raise ConfigurationError(f"shard parties {r.start}-{r.stop - 1} overlap "
                                         f"{other.parties.start}-{other.parties.stop - 1}")
        k = bisect_right(self._starts, r.start)
        self._starts.insert(k, r.start)
        self._links.insert(k, link)
        self._carried = self._carried or link.carries_messages
        return k

    def covered(self) -> bool:
        """True when the attached shards host every party ``0..n-1``."""
        return sum(len(link.parties) for link in self._links) == self.n

    def owner(self, party: int) -> Link | None:
        """The link hosting ``party`` (``None``: its endpoint is in this process)."""
        k = bisect_right(self._starts, party) - 1
        if k < 0:
            return None
        link = self._links[k]
        return link if party in link.parties else None

    def ingress(self, link: Link, frame: Frame, *, checked: bool = False) -> None:
        """A frame sent by a party of ``link``: validate, count, apply faults, route.

        ``checked``: the frame comes from a shard in this process, whose network built it from
        the message and checked the topology; only a remote shard's frames are validated here.
        """
        src, dst, payload = frame.src, frame.dst, frame.payload
        if not checked and not (src in link.parties and (dst == CONTROLLER or 0 <= dst < self.n)
                                and self.topology.allowed(src, dst) and self._kind_ok(payload, frame.kind)):
            self._traffic.record_fault("rejected")
            return
        if not self._admit(src):
            return
        self._traffic.record_send(src, frame.phase, frame.kind, len(payload))
        if dst != CONTROLLER:
            self.party_to_party[0] += 1
            self.party_to_party[1] += len(payload)
        self._route(frame)

    def _kind_ok(self, payload: bytes, kind: int) -> bool:
        """Whether ``payload`` is a codec encoding whose header says ``kind`` (its header is
        :func:`~parties.wire.codec.peek_kind`'s, which reads the header only: a payload that
        starts with the header of one that passed has the same kind)."""
        header = self._headers.get(kind)
        if header is not None and payload.startswith(header):
            return True
        try:
            ok = peek_kind(payload) == kind
        except MessageError:
            return False
        if ok and len(self._headers) < 1024:
            self._headers[kind] = bytes(payload[:HEADER_SIZE])
        return ok

    def _deliver(self, frame: Frame, position: int | None = None) -> None:
        link = self.owner(frame.dst) if self._links and frame.dst != CONTROLLER else None
        if link is None:
            super()._deliver(frame, position)
        elif frame.dst in self._crashed:
            self._traffic.record_fault("lost_to_crash")
        else:
            link.push(frame, position)

    def crash(self, actor: int) -> None:
        fresh = actor not in self._crashed
        super().crash(actor)
        link = self.owner(actor) if fresh and self._links else None
        if link is not None:
            link.crash((actor,))

    def lose(self, link: Link, reason: str) -> None:
        """The shard behind ``link`` is gone: all its parties crash (no notice is sent)."""
        k = self._links.index(link)
        if k in self.lost:
            return
        self.lost[k] = reason
        self._crashed.update(link.parties)

    def merge(self, reports: Sequence[ShardReport]) -> None:
        """Add the remote shards' delivery counters to this network's."""
        t = self._traffic
        for r in reports:
            base = r.parties.start + 1
            messages, nbytes = r.received_messages.tolist(), r.received_bytes.tolist()
            for j in np.flatnonzero(r.received_messages).tolist():
                t.recv_messages[base + j] += messages[j]
                t.recv_bytes[base + j] += nbytes[j]
            t.delivered += r.delivered
            for name, count in r.faults.items():
                t.record_fault(name, count)
