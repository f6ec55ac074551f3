"""The traffic of a fault-free secure sum (the closed form): :class:`TrafficCost`, counted by
:func:`counted_cost`, every role's program run by the counting driver
(:func:`parties.secure.counting.count`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from parties.topology import CONTROLLER
from parties.traffic import Counts
from parties.wire.codec import Message, encode
from parties.secure.context import SecureSumContext
from parties.secure.counting import count
from parties.secure.pki import Signer, setup_pki
from parties.secure.program import Program
from parties.secure.sizing import SizeByShape
from parties.secure.suite import SIZING, CryptoSuite

if TYPE_CHECKING:
    from parties.secure.engine import SecureSumEngine

__all__ = ["COUNT_LIMIT", "TrafficCost", "counted_cost", "encoded_size"]


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


def counted_cost(engine: SecureSumEngine, ctx: SecureSumContext, *, limit: int | None = None,
                 threshold: Counts | None = None, suite: CryptoSuite = SIZING, mirror: bool = True) -> TrafficCost:
    """Traffic of a fault-free run of ``engine`` on ``ctx``: the controller's and every party's
    program (:meth:`SecureSumEngine.party_program`, inputs all zero) run by the counting driver
    :func:`~parties.secure.counting.count`, every message sized by the codec (one encoding per
    message shape, :class:`~parties.secure.sizing.SizeByShape`).  No message's size depends on
    the inputs or on the cryptography's outputs, only on their lengths: the programs run with
    the right-sized stand-ins of :data:`~parties.secure.suite.SIZING` (``suite=REAL``: the real
    cryptography, with a fresh PKI where the engine signs).  ``mirror`` (default), where the
    parties are role-symmetric (:meth:`SecureSumEngine.symmetric`) and the suite :data:`SIZING`:
    the controller's and the first party's programs run, the first party's traffic counts for
    all (equal to the full count, ``mirror=False``).  ``limit``: stop after that many messages
    routed (the work); ``threshold``: once the traffic exceeds its messages or bytes.  Then the
    cost is a lower bound (``exact`` False, its formula says "at least")."""
    ctx = replace(ctx, suite=suite)
    signers: dict[int, Signer] = {}
    if engine.signs and not suite.sizing:
        signers, registry = setup_pki(ctx.parties, signing=engine.pki_signing)
        ctx = replace(ctx, registry=registry)
    zero = np.zeros(ctx.length, dtype=np.uint8)
    mirrored = mirror and suite.sizing and engine.symmetric(ctx)  # (real keys: signed by their own party)
    programs: dict[int, Program[Any]] = {CONTROLLER: engine.controller_program(ctx)}
    for p in ctx.parties[:1] if mirrored else ctx.parties:
        programs[p] = engine.party_program(p, zero, ctx, signer=signers.get(p))
    counted = count(programs, size=SizeByShape(), limit=limit, threshold=threshold,
                    mirror=ctx.parties if mirrored else None,
                    counterpart=lambda message, party: engine.counterpart(message, party, ctx))
    stats = counted.statistics
    kinds = ", ".join(f"{c.messages:,} {k} ({c.bytes:,} B)" for k, c in stats.by_kind.items())
    limits = [f"{limit:,} messages routed"] if limit is not None else []
    if threshold is not None:
        limits.append(f"{threshold.messages:,} messages or {threshold.bytes:,} bytes counted")
    bound = "" if counted.complete else f"at least (stopped after {' or '.join(limits)}) "
    return TrafficCost(sent=counted.sent(), rounds=stats.rounds, exact=counted.complete,
                       formula=f"{bound}counted ({engine.name}, n = {ctx.n}, L = {ctx.length}): {kinds}")
