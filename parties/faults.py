"""Seeded fault injection for the in-memory network: drop, delay, duplicate, reorder, crash.

A :class:`FaultPlan` says what can go wrong; a :class:`FaultInjector` (one per network, seeded)
decides for each send, in send order, what does.  The decisions use a ``numpy`` Generator:
they are statistical simulation choices, not cryptographic material.  Given the same plan,
seed and order of sends, the same messages are dropped, duplicated, delayed and reordered and
the same parties crash (wall-clock delays may interleave with other traffic differently, the
decisions do not).

Fault semantics:

- **drop**: the message counts as sent but is never delivered.
- **duplicate**: a second copy is delivered right after the first.
- **delay**: delivery happens after a real ``asyncio`` delay uniform in ``(0, max_delay]``
  seconds (a few ms by default), so later messages can overtake it.
- **reorder**: the message is inserted at a random position of the receiver's buffer of
  not-yet-received messages instead of at its end (a waiting recv still gets it at once).
  A delayed message is not also reordered: its delay already lets later messages overtake it.
- **crash**: ``crash={party: k}`` crashes ``party`` at its ``k``-th send (k >= 1); that send and
  every later one vanish, messages to it are lost and its ``recv`` raises ``PartyDropped``.

``phases`` / ``senders`` restrict the probabilistic faults to some phases / senders.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from mprr.errors import ConfigurationError

__all__ = ["FaultDecision", "FaultInjector", "FaultPlan"]


@dataclass(frozen=True)
class FaultPlan:
    """What may go wrong (probabilities per message, crash schedule).

    Parameters
    ----------
    drop, duplicate, delay, reorder
        Per-message probabilities in [0, 1].
    max_delay
        Largest real delay in seconds for a delayed message (finite, > 0).
    crash
        ``{actor: k}``: crash the actor at its k-th send (k >= 1).
    phases
        If given, probabilistic faults only hit messages of these phases.
    senders
        If given, probabilistic faults only hit messages from these actors.
    """

    drop: float = 0.0
    duplicate: float = 0.0
    delay: float = 0.0
    reorder: float = 0.0
    max_delay: float = 0.005
    crash: Mapping[int, int] = field(default_factory=dict)
    phases: frozenset[str] | None = None
    senders: frozenset[int] | None = None

    def __post_init__(self) -> None:
        for name in ("drop", "duplicate", "delay", "reorder"):
            p = getattr(self, name)
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
                raise ConfigurationError(f"FaultPlan.{name} must be a probability in [0, 1], got {p!r}")
            object.__setattr__(self, name, float(p))
        if isinstance(self.max_delay, bool) or not (isinstance(self.max_delay, (int, float)) and math.isfinite(self.max_delay) and self.max_delay > 0):
            raise ConfigurationError(f"FaultPlan.max_delay must be finite and > 0 seconds, got {self.max_delay!r}")
        crash = {}
        for actor, k in dict(self.crash).items():
            if isinstance(actor, bool) or not isinstance(actor, int) or actor < -1:
                raise ConfigurationError(f"FaultPlan.crash keys must be actor ids >= -1, got {actor!r}")
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ConfigurationError(
                    f"FaultPlan.crash[{actor}] must be the send number (>= 1) at which it crashes, got {k!r}"
                )
            crash[actor] = k
        object.__setattr__(self, "crash", MappingProxyType(crash))
        if self.phases is not None:
            object.__setattr__(self, "phases", frozenset(self.phases))
        if self.senders is not None:
            object.__setattr__(self, "senders", frozenset(self.senders))

    @property
    def probabilistic(self) -> bool:
        """True when any per-message fault has a non-zero probability."""
        return (self.drop + self.duplicate + self.delay + self.reorder) > 0


@dataclass(frozen=True, slots=True)
class FaultDecision:
    """What happens to one message."""

    drop: bool = False
    duplicate: bool = False
    delay: float = 0.0
    reorder: bool = False


_CLEAN = FaultDecision()


class FaultInjector:
    """Seeded decisions for one network (see the module docstring).

    Every message that falls under the plan consumes exactly four uniforms (drop, duplicate,
    delay, reorder) plus one for the delay length, so decisions depend only on the seed and the
    order of sends.
    """

    def __init__(self, plan: FaultPlan, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ConfigurationError(f"seed must be a non-negative integer, got {seed!r}")
        self.plan = plan
        self.rng = np.random.default_rng(seed)
        self._sends: dict[int, int] = {}

    def crashes_now(self, src: int) -> bool:
        """Count a send by ``src``; True if this is the send at which it crashes."""
        k = self.plan.crash.get(src)
        if k is None:
            return False
        count = self._sends.get(src, 0) + 1
        self._sends[src] = count
        return count >= k

    def decide(self, src: int, phase: str) -> FaultDecision:
        """Fault decision for one message from ``src`` in ``phase``."""
        plan = self.plan
        if not plan.probabilistic:
            return _CLEAN
        if plan.phases is not None and phase not in plan.phases:
            return _CLEAN
        if plan.senders is not None and src not in plan.senders:
            return _CLEAN
        u = self.rng.random(5)
        return FaultDecision(
            drop=bool(u[0] < plan.drop),
            duplicate=bool(u[1] < plan.duplicate),
            delay=(float(u[4] * plan.max_delay) or plan.max_delay) if u[2] < plan.delay else 0.0,
            reorder=bool(u[3] < plan.reorder),
        )

    def position(self, length: int) -> int:
        """Random insertion position in a buffer of ``length`` messages (for reorder)."""
        return int(self.rng.integers(0, length + 1))
