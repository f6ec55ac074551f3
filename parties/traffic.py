"""Traffic accounting of a network: messages, bytes and rounds, plus simulated time.

Every message is counted at the sender when it is sent (a message later dropped by a fault
still counts as sent) and at the receiver when it is delivered.  Sizes are the real encoded
sizes, ``len(parties.wire.codec.encode(msg))`` (transport framing such as src/dst/phase is not
counted).  Rounds are marked by the runtime with ``network.begin_round(phase)`` /
``with network.round(phase):``; a send outside any marked round joins the *implicit* round of its
phase: one implicit round per phase between two marks, whatever the interleaving of concurrent
senders (so round counts do not depend on task scheduling).

Simulated time (no sleeping): a :class:`LatencyModel` gives each message the time
``latency + size / bandwidth``; a round lasts as long as its slowest message and the run's
simulated time is the sum over rounds (rounds are sequential, messages within a round travel
in parallel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from collections.abc import Callable, ItemsView, Iterator, Sequence
from typing import Any, Mapping, NamedTuple

import numpy as np

from mprr.errors import ConfigurationError
from parties.wire.codec import message_class

__all__ = [
    "FAULTS",
    "ActorCounts",
    "ActorStatistics",
    "Counts",
    "LatencyModel",
    "PhaseCounts",
    "RoundRecord",
    "TrafficCounter",
    "TrafficStatistics",
]


FAULTS = ("dropped", "duplicated", "delayed", "reordered", "lost_to_crash", "rejected")
"""The fault counters of a network (:class:`TrafficStatistics`)."""


@dataclass(frozen=True)
class LatencyModel:
    """Per-message simulated transfer time ``latency + size / bandwidth`` (seconds).

    Parameters
    ----------
    latency
        Fixed one-way latency in seconds (finite, >= 0).
    bandwidth
        Link bandwidth in bytes per second (> 0; ``inf`` = size costs nothing).
    """

    latency: float = 0.0
    bandwidth: float = math.inf

    def __post_init__(self) -> None:
        if not (math.isfinite(self.latency) and self.latency >= 0):
            raise ConfigurationError(f"latency must be finite and >= 0 seconds, got {self.latency!r}")
        if not (self.bandwidth > 0):  # also rejects NaN
            raise ConfigurationError(f"bandwidth must be > 0 bytes/s (inf allowed), got {self.bandwidth!r}")

    def transfer_time(self, size: int) -> float:
        """Simulated seconds for one message of ``size`` bytes."""
        return self.latency + size / self.bandwidth


class Counts(NamedTuple):
    """Number of messages and bytes."""

    messages: int
    bytes: int


class PhaseCounts(NamedTuple):
    """Messages, bytes and rounds of one protocol phase."""

    messages: int
    bytes: int
    rounds: int


class RoundRecord(NamedTuple):
    """One round: index (0-based), phase, whether it was marked explicitly, traffic, time."""

    index: int  # type: ignore[assignment]  # a field named like tuple.index (kept: public name)
    phase: str
    explicit: bool
    messages: int
    bytes: int
    simulated_time: float


class ActorStatistics(NamedTuple):
    """Traffic of one actor: what it sent, what was delivered to it, and how many of the frames
    it sent its receivers rejected (undecodable or of a kind they do not accept)."""

    actor: int
    sent: Counts
    received: Counts
    rejected: int = 0


class ActorCounts(Mapping[int, Counts]):
    """Read-only ``{actor: Counts}`` of the actors with traffic, held as columns (the ids, message
    and byte counts as arrays): a run of a million parties keeps three arrays, not a million
    entries; a :class:`Counts` is built when an entry is read.  Equal to a mapping with the
    same items."""

    __slots__ = ("_actors", "_messages", "_bytes")

    def __init__(self, messages: Sequence[int] | np.ndarray, nbytes: Sequence[int] | np.ndarray) -> None:
        """From per-actor counts indexed ``actor + 1`` (only actors with messages are kept)."""
        m = np.asarray(messages, dtype=np.int64)
        nonzero = np.flatnonzero(m)
        self._actors = nonzero - 1
        self._messages = m[nonzero]
        self._bytes = np.asarray(nbytes, dtype=np.int64)[nonzero]

    def __getitem__(self, actor: int) -> Counts:
        if not isinstance(actor, (int, np.integer)):
            raise KeyError(actor)
        k = int(np.searchsorted(self._actors, actor))
        if k >= self._actors.shape[0] or self._actors[k] != actor:
            raise KeyError(actor)
        return Counts(int(self._messages[k]), int(self._bytes[k]))

    def __iter__(self) -> Iterator[int]:
        return iter(self._actors.tolist())

    def __len__(self) -> int:
        return int(self._actors.shape[0])

    def items(self) -> ItemsView[int, Counts]:  # (one pass over the columns, not a lookup per key)
        return _Items(self, self._rows)

    def _rows(self) -> Iterator[tuple[int, Counts]]:
        for a, m, b in zip(self._actors.tolist(), self._messages.tolist(), self._bytes.tolist()):
            yield a, Counts(m, b)

    def __repr__(self) -> str:
        return f"ActorCounts({dict(self.items())!r})"


class _Items(ItemsView[int, Counts]):
    def __init__(self, counts: ActorCounts, rows: Callable[[], Iterator[tuple[int, Counts]]]) -> None:
        super().__init__(counts)
        self._rows = rows  # (the counts' own pass over their columns)

    def __iter__(self) -> Iterator[tuple[int, Counts]]:
        return self._rows()


@dataclass(frozen=True)
class TrafficStatistics:
    """Immutable snapshot of a network's traffic (see :meth:`to_dict` for a JSON form).

    ``by_sender`` / ``by_receiver`` are keyed by actor id (only actors with traffic),
    ``by_kind`` by message name, ``by_phase`` by phase.  Fault counters: ``dropped`` (lost by
    the drop fault), ``duplicated`` (extra copies delivered), ``delayed``, ``reordered``,
    ``lost_to_crash`` (sends attempted by a crashed actor, which vanish, plus messages
    addressed to a crashed actor), ``rejected`` (frames the receiver rejected: failed decoding,
    a kind it does not accept, or a message its protocol could not use), with
    ``rejected_by_sender`` attributing them to their senders.  ``crashed`` lists crashed actors.
    """

    messages: int
    bytes: int
    delivered: int
    rounds: int
    simulated_time: float
    by_sender: Mapping[int, Counts]
    by_receiver: Mapping[int, Counts]
    by_kind: Mapping[str, Counts]
    by_phase: Mapping[str, PhaseCounts]
    round_log: tuple[RoundRecord, ...]
    dropped: int = 0
    duplicated: int = 0
    delayed: int = 0
    reordered: int = 0
    lost_to_crash: int = 0
    rejected: int = 0
    crashed: tuple[int, ...] = ()
    rejected_by_sender: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))

    def sent_by(self, actor: int) -> Counts:
        """Messages and bytes sent by ``actor`` (zero if none)."""
        return self.by_sender.get(actor, Counts(0, 0))

    def received_by(self, actor: int) -> Counts:
        """Messages and bytes delivered to ``actor`` (zero if none)."""
        return self.by_receiver.get(actor, Counts(0, 0))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serializable dict (actor ids become string keys)."""
        return {
            "messages": self.messages,
            "bytes": self.bytes,
            "delivered": self.delivered,
            "rounds": self.rounds,
            "simulated_time": self.simulated_time,
            "by_sender": {str(a): c._asdict() for a, c in self.by_sender.items()},
            "by_receiver": {str(a): c._asdict() for a, c in self.by_receiver.items()},
            "by_kind": {k: c._asdict() for k, c in self.by_kind.items()},
            "by_phase": {p: c._asdict() for p, c in self.by_phase.items()},
            "round_log": [r._asdict() for r in self.round_log],
            "faults": {
                **{name: getattr(self, name) for name in FAULTS},
                "rejected_by_sender": {str(a): c for a, c in self.rejected_by_sender.items()},
            },
            "crashed": list(self.crashed),
        }


@dataclass
class _Round:
    phase: str
    explicit: bool
    messages: int = 0
    bytes: int = 0
    time: float = 0.0


@dataclass
class TrafficCounter:
    """Mutable counters behind :class:`TrafficStatistics` (one per network).

    Actor ``a`` (``-1`` = controller, ``0..n-1`` parties) is counted at index ``a + 1`` of
    int64 arrays (8 bytes per actor and counter, not a Python int object each); rejected frames,
    rare, per sender in a dict.
    """

    n: int
    latency: LatencyModel = field(default_factory=LatencyModel)

    def __post_init__(self) -> None:
        size = self.n + 1
        self.sent_messages = np.zeros(size, dtype=np.int64)
        self.sent_bytes = np.zeros(size, dtype=np.int64)
        self.recv_messages = np.zeros(size, dtype=np.int64)
        self.recv_bytes = np.zeros(size, dtype=np.int64)
        self.rejected_from: dict[int, int] = {}
        self.kinds: dict[int, list[int]] = {}
        self.phases: dict[str, list[int]] = {}
        self.rounds: list[_Round] = []
        self.current: _Round | None = None
        self._implicit: dict[str, _Round] = {}
        self.messages = 0
        self.bytes = 0
        self.delivered = 0
        self.faults = dict.fromkeys(FAULTS, 0)
        self._free = self.latency.latency == 0.0 and self.latency.bandwidth == math.inf

    # -- rounds
    def begin_round(self, phase: str) -> None:
        """Start a new explicit round of ``phase``."""
        self.current = _Round(phase, True)
        self.rounds.append(self.current)
        self._implicit = {}

    def end_round(self) -> None:
        """Close the current round; later sends open implicit rounds until the next mark."""
        self.current = None
        self._implicit = {}

    # -- events
    def _implicit_round(self, phase: str) -> _Round:
        """The round of ``phase`` outside any explicit one (opened on its first message), made current."""
        r = self._implicit.get(phase)
        if r is None:
            r = self._implicit[phase] = _Round(phase, False)
            self.rounds.append(r)
        self.current = r
        return r

    def record_send(self, src: int, phase: str, kind: int, size: int) -> None:
        """Count one message sent by ``src``: :meth:`record_sends` of one message (written out:
        once per message a router admits)."""
        self.messages += 1
        self.bytes += size
        i = src + 1
        self.sent_messages[i] += 1
        self.sent_bytes[i] += size
        k = self.kinds.get(kind)
        if k is None:
            self.kinds[kind] = [1, size]
        else:
            k[0] += 1
            k[1] += size
        p = self.phases.get(phase)
        if p is None:
            self.phases[phase] = [1, size]
        else:
            p[0] += 1
            p[1] += size
        r = self.current
        if r is None or not r.explicit:
            r = self._implicit_round(phase)
        r.messages += 1
        r.bytes += size
        if not self._free:
            t = self.latency.transfer_time(size)
            if t > r.time:
                r.time = t

    def record_sends(self, src: int, phase: str, kind: int, count: int, size: int, largest: int) -> None:
        """Count ``count`` messages of one kind sent by ``src`` in ``phase``: ``size`` bytes in
        all, the largest one ``largest`` bytes (its transfer time bounds the round's)."""
        self.messages += count
        self.bytes += size
        i = src + 1
        self.sent_messages[i] += count
        self.sent_bytes[i] += size
        k = self.kinds.get(kind)
        if k is None:
            self.kinds[kind] = [count, size]
        else:
            k[0] += count
            k[1] += size
        p = self.phases.get(phase)
        if p is None:
            self.phases[phase] = [count, size]
        else:
            p[0] += count
            p[1] += size
        r = self.current
        if r is None or not r.explicit:
            r = self._implicit_round(phase)
        r.messages += count
        r.bytes += size
        if not self._free:
            t = self.latency.transfer_time(largest)
            if t > r.time:
                r.time = t

    def record_columns(self, srcs: np.ndarray, phase: str, kind: int, sizes: np.ndarray) -> None:
        """Count one message of ``kind`` in ``phase`` from each of ``srcs`` (distinct actors),
        ``sizes[k]`` bytes from ``srcs[k]``: as many :meth:`record_send` calls, at once."""
        count = int(srcs.shape[0])
        if not count:
            return
        self.record_sends(int(srcs[0]), phase, kind, count, int(sizes.sum()), int(sizes.max()))
        first = int(srcs[0]) + 1
        self.sent_messages[first] -= count  # (record_sends counted them all for the first sender)
        self.sent_bytes[first] -= int(sizes.sum())
        self.sent_messages[srcs + 1] += 1  # (distinct senders: one update each)
        self.sent_bytes[srcs + 1] += sizes

    def record_deliveries_to(self, dsts: np.ndarray, size: int) -> None:
        """Count one message of ``size`` bytes delivered to each of ``dsts`` (distinct actors)."""
        self.delivered += int(dsts.shape[0])
        self.recv_messages[dsts + 1] += 1  # (distinct receivers: one update each)
        self.recv_bytes[dsts + 1] += size

    def record_deliveries_each(self, dsts: Sequence[int], sizes: Sequence[int]) -> None:
        """Count one message delivered to each of ``dsts`` (an actor may repeat), of ``sizes[k]``
        bytes the k-th."""
        at = np.asarray(dsts, dtype=np.int64) + 1
        self.delivered += int(at.shape[0])
        np.add.at(self.recv_messages, at, 1)
        np.add.at(self.recv_bytes, at, np.asarray(sizes, dtype=np.int64))

    def record_deliveries(self, dst: int, count: int, size: int) -> None:
        """Count ``count`` messages of ``size`` bytes in all delivered to ``dst``."""
        self.delivered += count
        self.recv_messages[dst + 1] += count
        self.recv_bytes[dst + 1] += size

    def record_delivery(self, dst: int, size: int) -> None:
        """Count one message delivered to ``dst``."""
        self.delivered += 1
        self.recv_messages[dst + 1] += 1
        self.recv_bytes[dst + 1] += size

    def record_rejection(self, src: int) -> None:
        """Count one frame from ``src`` rejected by its receiver."""
        self.faults["rejected"] += 1
        if -1 <= src < self.n:
            self.rejected_from[src] = self.rejected_from.get(src, 0) + 1

    def record_fault(self, name: str, count: int = 1) -> None:
        """Count a fault event (``dropped``, ``duplicated``, ...)."""
        self.faults[name] += count

    # -- snapshots
    def actor(self, actor: int) -> ActorStatistics:
        """Traffic of one actor."""
        i = actor + 1
        return ActorStatistics(
            actor,
            Counts(int(self.sent_messages[i]), int(self.sent_bytes[i])),
            Counts(int(self.recv_messages[i]), int(self.recv_bytes[i])),
            self.rejected_from.get(actor, 0),
        )

    def snapshot(self, crashed: tuple[int, ...] = ()) -> TrafficStatistics:
        """Freeze the counters into a :class:`TrafficStatistics`."""
        per_actor = ActorCounts

        rounds_per_phase: dict[str, int] = {}
        for r in self.rounds:
            rounds_per_phase[r.phase] = rounds_per_phase.get(r.phase, 0) + 1
        phases = {p: PhaseCounts(m, b, rounds_per_phase.get(p, 0)) for p, (m, b) in self.phases.items()}
        for p, count in rounds_per_phase.items():
            phases.setdefault(p, PhaseCounts(0, 0, count))
        return TrafficStatistics(
            messages=self.messages,
            bytes=self.bytes,
            delivered=self.delivered,
            rounds=len(self.rounds),
            simulated_time=float(sum(r.time for r in self.rounds)),
            by_sender=per_actor(self.sent_messages, self.sent_bytes),
            by_receiver=per_actor(self.recv_messages, self.recv_bytes),
            by_kind=MappingProxyType(
                {message_class(k).NAME: Counts(m, b) for k, (m, b) in sorted(self.kinds.items())}
            ),
            by_phase=MappingProxyType(phases),
            round_log=tuple(
                RoundRecord(i, r.phase, r.explicit, r.messages, r.bytes, r.time)
                for i, r in enumerate(self.rounds)
            ),
            crashed=tuple(sorted(crashed)),
            rejected_by_sender=MappingProxyType(dict(sorted(self.rejected_from.items()))),
            **self.faults,
        )
