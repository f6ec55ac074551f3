"""Seeded fault injection for the in-memory network: drop, delay, duplicate, reorder, crash.

A :class:`FaultPlan` says what can go wrong; a :class:`FaultInjector` (one per network, seeded)
decides for each message what does.  A message is named by its link and its number on that
link, ``(src, dst, k)``: the k-th message ``src`` sent to ``dst``.  Each decision is drawn from
a counter-based generator keyed by the seed and that name (BLAKE2b of the seed, src, dst and k:
statistical simulation choices, not cryptographic material), so it does not depend on how
messages of *different* links interleave.  Given the same plan and seed, the same messages are
dropped, duplicated, delayed and reordered and the same parties crash, on every runtime: in
memory (send order) and on ``tcp``/``ray`` (where frames of different workers reach the router
in an order of their own, but each link keeps its order).  Wall-clock delays may interleave
with other traffic differently; the decisions do not change.

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

import hashlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from mprr.domain import check_int, check_real, check_unit
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
            object.__setattr__(self, name, check_unit(f"FaultPlan.{name}", getattr(self, name), why=" (a probability)"))
        check_real("FaultPlan.max_delay", self.max_delay, strict=True)
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
    """What happens to one message.

    ``slot`` is the uniform in [0, 1) that places a reordered message in the receiver's
    buffer (:meth:`position`).
    """

    drop: bool = False
    duplicate: bool = False
    delay: float = 0.0
    reorder: bool = False
    slot: float = 0.0

    def position(self, length: int) -> int:
        """Insertion position of a reordered message in a buffer of ``length`` messages."""
        return min(int(self.slot * (length + 1)), length)


_CLEAN = FaultDecision()


_LINK = struct.Struct("<qqQ")
_UNIFORMS = 6
_SCALE = 2.0**-53


class FaultInjector:
    """Seeded decisions for one network (see the module docstring).

    Every message that falls under the plan gets six uniforms (drop, duplicate, delay,
    reorder, delay length, reorder position) from a counter-based generator keyed by the seed
    and the message's name ``(src, dst, k)``, so decisions depend only on the seed and each
    link's own order of messages.
    """

    def __init__(self, plan: FaultPlan, seed: int) -> None:
        seed = check_int("seed", seed, 0)
        self.plan = plan
        self._key = hashlib.blake2b(b"mprr.faults" + seed.to_bytes(16, "little"), digest_size=32).digest()
        self._sends: dict[int, int] = {}
        self._links: dict[tuple[int, int], int] = {}

    def crashes_now(self, src: int) -> bool:
        """Count a send by ``src``; True if this is the send at which it crashes."""
        k = self.plan.crash.get(src)
        if k is None:
            return False
        count = self._sends.get(src, 0) + 1
        self._sends[src] = count
        return count >= k

    def uniforms(self, src: int, dst: int, k: int) -> np.ndarray:
        """The six uniforms in [0, 1) of message ``(src, dst, k)`` (53-bit resolution)."""
        digest = hashlib.blake2b(_LINK.pack(src, dst, k), key=self._key, digest_size=8 * _UNIFORMS).digest()
        return (np.frombuffer(digest, dtype="<u8") >> np.uint64(11)).astype(np.float64) * _SCALE

    def decide(self, src: int, dst: int, phase: str) -> FaultDecision:
        """Fault decision for the next message from ``src`` to ``dst`` in ``phase``."""
        plan = self.plan
        if not plan.probabilistic:
            return _CLEAN
        if plan.phases is not None and phase not in plan.phases:
            return _CLEAN
        if plan.senders is not None and src not in plan.senders:
            return _CLEAN
        link = (src, dst)
        k = self._links.get(link, 0)
        self._links[link] = k + 1
        u = self.uniforms(src, dst, k)
        return FaultDecision(
            drop=bool(u[0] < plan.drop),
            duplicate=bool(u[1] < plan.duplicate),
            delay=(float(u[4] * plan.max_delay) or plan.max_delay) if u[2] < plan.delay else 0.0,
            reorder=bool(u[3] < plan.reorder),
            slot=float(u[5]),
        )
