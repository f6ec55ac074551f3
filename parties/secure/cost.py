"""The traffic of a fault-free secure sum (the closed form): :class:`TrafficCost`, what
:func:`parties.secure.engine.counted_cost` counts (every role's program run by the counting
driver, :func:`parties.secure.counting.count`), and :data:`COUNT_LIMIT`, its default bound."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from parties.topology import CONTROLLER
from parties.traffic import Counts
from parties.wire.codec import Message, encode

__all__ = ["COUNT_LIMIT", "TrafficCost", "encoded_size"]


@dataclass(frozen=True)
class TrafficCost:
    """Traffic of a fault-free run (the closed-form cost).

    ``sent`` maps every actor (CONTROLLER included) to the messages and bytes it sends;
    ``rounds`` counts communication rounds; ``formula`` states how it was obtained.
    """

    sent: Mapping[int, Counts]
    rounds: int
    formula: str
    exact: bool = True
    """False when the count stopped at its limit (:data:`COUNT_LIMIT`): a lower bound."""

    @property
    def messages(self) -> int:
        """Total messages."""
        return sum(c.messages for c in self.sent.values())

    @property
    def bytes(self) -> int:
        """Total bytes."""
        return sum(c.bytes for c in self.sent.values())

    def party_max(self) -> Counts:
        """Largest per-party load (messages, bytes) — the controller excluded."""
        loads = [c for a, c in self.sent.items() if a != CONTROLLER]
        return Counts(max(c.messages for c in loads), max(c.bytes for c in loads))


def encoded_size(msg: Message) -> int:
    """Bytes of ``msg`` on the wire (what the network counts)."""
    return len(encode(msg))


COUNT_LIMIT = 1_000_000
"""Messages :meth:`SecureSumEngine.cost` routes at most (beyond: a lower bound, ``exact`` False);
a role-symmetric sum (paper, graph on a regular graph) routes O(n), one party's and the controller's."""
