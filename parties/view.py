"""The controller's view: everything the (untrusted) controller received, and what it derived.

The controller appends every envelope it receives to a :class:`ViewLog` *before* looking at
it, so the log is exactly what it learned from the network; it also notes the values it
derived from them (dependences, clusters, estimates), which are functions of the log.  Tests
and reports inspect the log to check what the controller could know — e.g. that it only ever
received randomized values, refusals and secure-sum aggregates, never a raw record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from parties.wire.messages import Message
from parties.transport import Envelope

__all__ = ["ViewEntry", "ViewLog", "ViewSummary"]


@dataclass(frozen=True, slots=True)
class ViewEntry:
    """One message the controller received: position, sender, phase, message, encoded size."""

    index: int
    src: int
    phase: str
    message: Message
    size: int

    @property
    def kind(self) -> str:
        """Name of the message kind."""
        return self.message.NAME


@dataclass(frozen=True)
class ViewSummary:
    """What the controller's view holds, in counts (JSON-friendly via :meth:`to_dict`).

    Attributes
    ----------
    messages, bytes
        Messages received and their encoded bytes.
    by_kind
        Messages per kind name.
    by_phase
        Messages per phase.
    senders
        Number of distinct senders.
    kinds
        Kind names seen, sorted.
    derived
        Names of the values the controller derived (in the order it noted them).
    """

    messages: int
    bytes: int
    by_kind: Mapping[str, int]
    by_phase: Mapping[str, int]
    senders: int
    kinds: tuple[str, ...]
    derived: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict."""
        return {
            "messages": self.messages,
            "bytes": self.bytes,
            "by_kind": dict(self.by_kind),
            "by_phase": dict(self.by_phase),
            "senders": self.senders,
            "kinds": list(self.kinds),
            "derived": list(self.derived),
        }


@dataclass
class ViewLog:
    """Append-only log of the controller's view (see the module docstring)."""

    _envelopes: list[Envelope[Message]] = field(default_factory=list)
    _derived: dict[str, Any] = field(default_factory=dict)

    def record(self, env: Envelope[Message]) -> None:
        """Append a received envelope (kept as is: envelopes are immutable)."""
        self._envelopes.append(env)

    def note(self, name: str, value: Any) -> None:
        """Record a value the controller derived from what it received (e.g. ``"clusters"``)."""
        self._derived[name] = value

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self._envelopes)

    def __iter__(self) -> Iterator[ViewEntry]:
        for index, env in enumerate(self._envelopes):
            yield ViewEntry(index, env.src, env.phase, env.message, env.size)

    @property
    def entries(self) -> tuple[ViewEntry, ...]:
        """Every received message, in arrival order."""
        return tuple(self)

    @property
    def derived(self) -> Mapping[str, Any]:
        """Values the controller derived, by name."""
        return MappingProxyType(self._derived)

    def kinds(self) -> frozenset[str]:
        """Names of the message kinds the controller received."""
        return frozenset(e.message.NAME for e in self._envelopes)

    def of_kind(self, *kinds: type[Message] | str) -> list[ViewEntry]:
        """Entries whose message is one of ``kinds`` (classes or names)."""
        names = {k if isinstance(k, str) else k.NAME for k in kinds}
        return [e for e in self if e.message.NAME in names]

    def from_party(self, party: int) -> list[ViewEntry]:
        """Entries sent by ``party``."""
        return [e for e in self if e.src == party]

    def summary(self) -> ViewSummary:
        """Counts of the view (see :class:`ViewSummary`)."""
        by_kind: dict[str, int] = {}
        by_phase: dict[str, int] = {}
        total = 0
        senders = set()
        for e in self._envelopes:
            name = e.message.NAME
            by_kind[name] = by_kind.get(name, 0) + 1
            by_phase[e.phase] = by_phase.get(e.phase, 0) + 1
            total += e.size
            senders.add(e.src)
        return ViewSummary(
            messages=len(self._envelopes),
            bytes=total,
            by_kind=MappingProxyType(by_kind),
            by_phase=MappingProxyType(by_phase),
            senders=len(senders),
            kinds=tuple(sorted(by_kind)),
            derived=tuple(self._derived),
        )
