"""The controller process's side of the multi-process runtimes: route, count, inject faults.

:class:`RouterNetwork` is an :class:`~parties.network.InMemoryNetwork` whose parties live in
party shard hosts (:mod:`parties.shard`) behind :class:`ShardLink` objects.  The controller's
endpoint is local.  Every frame of the run passes here — the controller's sends, and every
party's send, which arrives from its shard through :meth:`RouterNetwork.ingress` — so

- message counts, payload bytes and rounds are counted exactly as in memory (a send is counted
  when the router admits it; deliveries to parties are counted by the shards and added at the
  end with :meth:`RouterNetwork.merge`);
- the seeded fault plan (drop, delay, duplicate, reorder, crash) is applied by the same code as
  in memory, in the order frames reach the router.  A reorder towards a party carries its
  buffer position on the wire; a crash decided here is forwarded to the party's shard;
- a frame a shard sends for a party it does not host, over a link the topology forbids, or
  whose header disagrees with its payload is rejected here (counted as ``rejected``): a bad
  frame is the sender's fault, never the run's end;
- a party-to-party frame (a secure-sum share over a direct link) goes up from its sender's
  shard and down to its receiver's, even within one shard: the topology is checked here, and
  its payload crosses the channel twice (:attr:`RouterNetwork.party_to_party` counts it, so a
  runtime's wire payload is the traffic's bytes plus these);
- a lost shard (worker died, actor died) crashes all its parties at once
  (:meth:`RouterNetwork.lose`): the controller's next gather ends with ``PartyDropped`` or a
  degraded result within the round timeout, never a hang.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from mprr.errors import ConfigurationError, MessageError
from parties.wire.codec import peek_kind
from parties.faults import FaultPlan
from parties.network import CONTROLLER, InMemoryNetwork
from parties.shard_report import ShardReport
from parties.traffic import LatencyModel
from parties.transport import Frame

if TYPE_CHECKING:  # annotations only: party workers never import networkx
    import networkx as nx

__all__ = ["RouterNetwork", "ShardLink"]

class ShardLink(Protocol):
    """The controller process's handle on one shard host (a runtime's frame channel)."""

    parties: range

    def push(self, frame: Frame, position: int | None) -> None:
        """Queue ``frame`` for delivery in the shard (must not block)."""

    def crash(self, parties: Sequence[int]) -> None:
        """Tell the shard that these of its parties crashed."""

    def buffered(self, party: int) -> int:
        """Messages buffered at ``party``'s endpoint (where a reorder fault inserts the next
        one); a remote shard's buffers are not visible here: 0."""


class RouterNetwork(InMemoryNetwork):
    """In-memory network whose parties are hosted by shard links (module docstring).

    Parameters
    ----------
    n
        Number of parties.
    faults, latency, seed, topology
        As :class:`~parties.network.InMemoryNetwork`.
    """

    def __init__(self, n: int, *, faults: FaultPlan | None = None, latency: LatencyModel | None = None,
                 seed: int = 0, topology: nx.Graph[int] | None = None) -> None:
        super().__init__(n, topology=topology, faults=faults, latency=latency, seed=seed)
        self._links: list[ShardLink] = []
        self._starts: list[int] = []
        self.lost: dict[int, str] = {}  # link index -> why
        self.party_to_party = [0, 0]  # messages, payload bytes routed from a party to a party

    @property
    def links(self) -> tuple[ShardLink, ...]:
        """The attached shard links, by first party."""
        return tuple(self._links)

    def attach(self, link: ShardLink) -> int:
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
        return k

    def covered(self) -> bool:
        """True when the attached shards host every party ``0..n-1``."""
        return sum(len(link.parties) for link in self._links) == self.n

    def owner(self, party: int) -> ShardLink | None:
        """The link hosting ``party`` (``None`` if none)."""
        k = bisect_right(self._starts, party) - 1
        if k < 0:
            return None
        link = self._links[k]
        return link if party in link.parties else None

    def ingress(self, link: ShardLink, frame: Frame, *, checked: bool = False) -> None:
        """A frame sent by a party of ``link``: validate, count, apply faults, route.

        ``checked``: the frame comes from a shard in this process, whose network built it from
        the message and checked the topology; only a remote shard's frames are validated here.
        """
        src, dst = frame.src, frame.dst
        if not checked:
            try:
                ok = (src in link.parties and (dst == CONTROLLER or 0 <= dst < self.n)
                      and self.topology.allowed(src, dst) and peek_kind(frame.payload) == frame.kind)
            except MessageError:
                ok = False
            if not ok:
                self._traffic.record_fault("rejected")
                return
        if not self._admit(src):
            return
        self._traffic.record_send(src, frame.phase, frame.kind, len(frame.payload))
        if dst != CONTROLLER:
            self.party_to_party[0] += 1
            self.party_to_party[1] += len(frame.payload)
        self._route(frame)

    def _buffered(self, actor: int) -> int:
        if actor == CONTROLLER:
            return super()._buffered(actor)
        link = self.owner(actor)
        return 0 if link is None else link.buffered(actor)

    def _deliver(self, frame: Frame, position: int | None = None) -> None:
        dst = frame.dst
        if dst == CONTROLLER:
            super()._deliver(frame, position)
            return
        if dst in self._crashed:
            self._traffic.record_fault("lost_to_crash")
            return
        link = self.owner(dst)
        if link is None:  # pragma: no cover - covered() is checked before a run starts
            self._traffic.record_fault("lost_to_crash")
            return
        link.push(frame, position)

    def crash(self, actor: int) -> None:
        fresh = actor not in self._crashed
        super().crash(actor)
        if fresh and actor != CONTROLLER:
            link = self.owner(actor)
            if link is not None:
                link.crash((actor,))

    def lose(self, link: ShardLink, reason: str) -> None:
        """The shard behind ``link`` is gone: all its parties crash (no notice is sent)."""
        k = self._links.index(link)
        if k in self.lost:
            return
        self.lost[k] = reason
        self._crashed.update(link.parties)

    def merge(self, reports: Sequence[ShardReport]) -> None:
        """Add the shards' delivery counters to this network's."""
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
