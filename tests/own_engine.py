"""A user's secure-sum engine: its module, its messages and one registration, nothing else.

``ring-mask``: the parties stand on a ring (sorted ids); party v draws a mask m_v uniform in
Z_M^L (M = n · max_value + 1, so the count is exact), sends it to its successor over a direct
link, and sends the controller y_v = x_v + m_v − m_{v−1} (mod M), the mask of its predecessor
taken off.  Every mask enters one y with + and one with −, so Σ_v y_v = Σ_v x_v (mod M); the
controller sees each x_v hidden by two masks it never learns (an honest-but-curious controller
that colludes with no party).  A party that drops out stalls the sum (its successor's
``y`` cannot be completed, and its own is missing): the controller raises
:class:`~mprr.errors.PartyDropped`, never a wrong count.

Two rounds, two messages per party (one ``RingMask`` to a peer, one ``RingMasked`` to the
controller), each ``5 + (4 + S) + 10 + b·L`` bytes (header, session of S characters, 1-D array
of L elements of b bytes); the network needs a full mesh (direct party links).

Everything the rest of the code needs to run it by name — its message kinds, its needs, how it
meets a dropout, how the figures draw it — is on its :class:`~parties.secure.registry.EngineEntry`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from mprr.errors import ConfigurationError, PartyDropped, ProtocolError
from parties.secure.context import SecureSumContext
from parties.secure.engine import SecureSumEngine, SumOutcome
from parties.secure.values import as_ring_vector, to_counts
from parties.secure.pki import Signer
from parties.secure.program import Expect, Program, Send, receive
from parties.secure.registry import MESH, EngineEntry, register_engine
from parties.secure.topology import CompleteNeighbourhoods
from parties.topology import CONTROLLER
from parties.transport import Transport
from parties.wire.codec import ArraySpec, Message, message, require

__all__ = ["RingMask", "RingMaskEngine", "RingMasked"]

Vector = Annotated[np.ndarray, ArraySpec(("uint8", "uint16", "uint32", "uint64"), ndim=1)]


@message(kind=61000)
class RingMask(Message):
    """Party -> its successor: the mask m_v it adds (Z_M elements)."""

    session: str
    values: Vector

    def validate(self) -> None:
        require(bool(self.session), "RingMask.session must be a non-empty string")


@message(kind=61001)
class RingMasked(Message):
    """Party -> controller: y_v = x_v + m_v − m_{v−1} (mod M)."""

    session: str
    values: Vector

    def validate(self) -> None:
        require(bool(self.session), "RingMasked.session must be a non-empty string")


class RingMaskEngine(SecureSumEngine):
    """The ring-mask secure sum (module docstring)."""

    name = "ring-mask"
    controller_kinds = (RingMasked,)  # what the controller's endpoint accepts (its registry entry reads it)

    def _context(self, parties: tuple[int, ...], length: int, session: str,
                 network: Transport | None) -> SecureSumContext:
        if network is not None:
            for v, succ in zip(parties, parties[1:] + parties[:1]):
                if not network.topology.allowed(v, succ):
                    raise ConfigurationError(f"the ring-mask engine needs direct party links, but party {v} "
                                             f"cannot send to party {succ}; build the network with a full mesh")
        return SecureSumContext(session, parties, length, self.max_value, len(parties) * self.max_value + 1,
                                CompleteNeighbourhoods(parties))

    def party_program(self, me: int, vector: np.ndarray, ctx: SecureSumContext, *,
                      signer: Signer | None = None, min_contributors: int = 2) -> Program[np.ndarray | None]:
        """Send m_v to the successor, take the predecessor's mask off, send y_v to the controller."""
        ring = ctx.ring
        x = as_ring_vector(vector, ctx, ring)
        k = ctx.parties.index(me)
        succ, pred = ctx.parties[(k + 1) % ctx.n], ctx.parties[k - 1]
        mask = ring.random(ctx.suite.stream(), ctx.length)
        yield Send(succ, RingMask(ctx.session, mask), "ring-mask/masks")
        got = yield from receive(Expect(RingMask, ctx.session, (pred,), "ring-mask/masks", self.round_timeout))
        if got.timed_out:
            raise PartyDropped(f"ring-mask secure sum: no mask from party {pred} within {self.round_timeout} s",
                               parties=(pred,))
        theirs = ring.check(got.messages[pred].values, "RingMask.values")
        if theirs.shape != (ctx.length,):
            raise ProtocolError(f"RingMask.values of party {pred} must hold {ctx.length} elements, got {theirs.shape}")
        yield Send(CONTROLLER, RingMasked(ctx.session, ring.sub(ring.add(x, mask), theirs)), "ring-mask/masked")
        return None

    def controller_program(self, ctx: SecureSumContext) -> Program[SumOutcome]:
        """Add every y_v mod M: the masks cancel around the ring."""
        ring = ctx.ring
        timeout = 2 * self.round_timeout
        got = yield from receive(Expect(RingMasked, ctx.session, ctx.parties, "ring-mask/masked", timeout))
        if got.timed_out:
            raise PartyDropped(f"ring-mask secure sum: no masked input from parties {list(got.missing)[:10]} within "
                               f"{timeout} s; the sum needs every party, no count is returned", parties=got.missing)
        rows = np.stack([ring.check(m.values, "RingMasked.values") for m in got.messages.values()])
        if rows.shape[1] != ctx.length:
            raise ProtocolError(f"RingMasked.values must hold {ctx.length} elements, got {rows.shape[1]}")
        return SumOutcome(to_counts(ring.sum(rows, axis=0)), ctx.parties)


ENTRY = register_engine(EngineEntry(
    "ring-mask", RingMaskEngine, needs=frozenset({MESH}), messages=(RingMask, RingMasked),
    dropouts="stall", crash_send=2, input_send=2, colour="C6", line="-.d",
), replace=True)
