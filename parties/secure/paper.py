"""The modular secure sum of the main paper, Section 4.2 (engine ``paper``).

For one value combination (a, a') and n parties, with modulus n + 1:

1. party i draws r_i1, ..., r_in uniform with sum_j r_ij = 0 (mod n + 1);
2. party i sends r_ij to party j for every j != i (it keeps r_ii);
3. party j broadcasts r_j = sum_i r_ij + [party j holds (a, a')]  (mod n + 1);
4. everybody computes the count sum_j r_j (mod n + 1)  — exact, since the count is <= n.

Here the controller is one more recipient of the broadcasts of step 3 (it is the party that
wants the bivariate tables); the parties also compute the total and :func:`run_secure_sum`
checks that everyone agrees.

``batched=False`` runs the protocol once per value combination, as written in the paper
(2 rounds and 2n - 1 messages per party per combination); ``batched=True`` (default) carries
the vector of all L combinations in each message (2 rounds, 2n - 1 messages per party of L
cells each).  Either way a party sends O(L * n) cells — the paper's
O(sum_{i<j} |A_i||A_j| * n) — and the whole run O(L * n^2).

Needs a full mesh: every party must be able to send to every other one directly.  A party
that crashes stalls the sum: the others time out and the controller raises
:class:`~mprr.errors.PartyDropped` (never a wrong count).
"""

from __future__ import annotations

import asyncio
from types import MappingProxyType

import numpy as np

from mprr.domain import check_int
from mprr.errors import ConfigurationError, PartyDropped, RoundTimeout
from parties.topology import CONTROLLER
from parties.transport import Endpoint, Transport
from parties.secure.engine import (
    SecureSumContext,
    SecureSumEngine,
    SumOutcome,
    TrafficCost,
    as_ring_vector,
    collect,
    encoded_size,
    to_counts,
)
from parties.secure.receive import checked_vector, receive_sum, run_both
from parties.secure.messages import PartialSum, ShareVector
from parties.secure.pki import Signer
from parties.secure.prg import Keystream
from parties.secure.ring import ZMod
from parties.secure.topology import CompleteNeighbourhoods
from parties.traffic import Counts

__all__ = ["PaperEngine"]


class PaperEngine(SecureSumEngine):
    """Main paper 4.2 secure sum: modulus n * max_value + 1 (= n + 1 for indicators).

    Parameters
    ----------
    batched
        True: one protocol run carrying all L combinations; False: one run per combination.
    round_timeout, max_value
        See :class:`SecureSumEngine`.
    yield_every
        A party yields to the event loop after this many sends, so that receivers consume
        shares while they arrive (keeps memory O(n * L) instead of O(n^2 * L) at large n).
    """

    name = "paper"

    def __init__(self, *, batched: bool = True, round_timeout: float = 30.0, max_value: int = 1,
                 yield_every: int = 64) -> None:
        super().__init__(round_timeout=round_timeout, max_value=max_value)
        check_int("yield_every", yield_every, 1)
        self.batched = bool(batched)
        self.yield_every = yield_every

    def _context(self, parties: tuple[int, ...], length: int, session: str,
                 network: Transport | None) -> SecureSumContext:
        n = len(parties)
        modulus = n * self.max_value + 1
        if modulus > 1 << 32:
            raise ConfigurationError(
                f"n * max_value + 1 must be <= 2**32 for the paper engine, got {modulus}"
            )
        if network is not None:
            allowed = network.topology.allowed
            for i in parties:
                for j in parties:
                    if i != j and not allowed(i, j):
                        raise ConfigurationError(
                            f"the paper engine needs a full mesh, but party {i} cannot send to "
                            f"party {j} directly; build the network with "
                            "topology=networkx.complete_graph(n)"
                        )
        neighbours = CompleteNeighbourhoods(parties)
        return SecureSumContext(session, parties, length, self.max_value, modulus, neighbours)

    # ------------------------------------------------------------------ party
    async def party(self, ep: Endpoint, vector: np.ndarray, ctx: SecureSumContext, *,
                    signer: Signer | None = None, min_contributors: int = 2) -> np.ndarray:
        """Steps 1-4 of main paper 4.2 for party ``ep.actor``; returns the total it computes
        (``signer`` unused: no key is relayed)."""
        ring = ctx.ring
        x = as_ring_vector(vector, ctx, ring)
        me = ep.actor
        peers = tuple(p for p in ctx.parties if p != me)
        stream = Keystream()  # fresh secret seed from the OS CSPRNG
        if self.batched:
            return to_counts(await self._one_sum(ep, x, -1, peers, ctx, ring, stream))
        out = np.empty(ctx.length, dtype=np.int64)
        for c in range(ctx.length):
            out[c] = to_counts(await self._one_sum(ep, x[c : c + 1], c, peers, ctx, ring, stream))[0]
        return out

    async def _one_sum(self, ep: Endpoint, x: np.ndarray, tag: int, peers: tuple[int, ...],
                       ctx: SecureSumContext, ring: ZMod, stream: Keystream) -> np.ndarray:
        phase_shares, phase_broadcast = _phases(tag)
        length = x.shape[0]
        sent = np.zeros(length, dtype=np.uint64)  # unreduced sum of the shares sent
        peers_sent = [0]

        async def send_shares() -> None:  # steps 1 and 2
            chunk = min(self.yield_every, 32)  # rows drawn at once (memory O(chunk * L))
            wide = np.uint32 if (ring.modulus - 1) * chunk < 1 << 32 else np.uint64  # a block's exact sum
            session = ctx.session
            for start in range(0, len(peers), chunk):
                block = ring.random(stream, (min(chunk, len(peers) - start), length))
                ring.accumulate(sent, block.sum(axis=0, dtype=wide))
                await ep.send_each(peers[start : start + chunk], [ShareVector(session, tag, r) for r in block],
                                   phase=phase_shares)  # one message per peer
                before = peers_sent[0]
                peers_sent[0] += len(block)
                if peers_sent[0] // self.yield_every > before // self.yield_every:
                    await asyncio.sleep(0)

        received = await run_both(
            send_shares(),
            receive_sum(ep, peers, ShareVector, "shares", tag, ctx, ring, phase_shares,
                         self.round_timeout),
        )
        own = ring.neg(ring.reduce(sent))  # r_ii: all n shares sum to 0 (mod n + 1)
        r_j = ring.add(ring.add(own, received[1]), x)  # step 3
        await ep.broadcast((*peers, CONTROLLER), PartialSum(ctx.session, tag, r_j),
                           phase=phase_broadcast)
        others = await receive_sum(ep, peers, PartialSum, "values", tag, ctx, ring,
                                    phase_broadcast, self.round_timeout, broadcast=True)
        return ring.add(others, r_j)  # step 4

    # ------------------------------------------------------------------ controller
    async def controller(self, ep: Endpoint, ctx: SecureSumContext) -> SumOutcome:
        """Collect every broadcast r_j and add them mod n + 1 (step 4)."""
        ring = ctx.ring
        tags = [-1] if self.batched else list(range(ctx.length))
        parts = []
        for tag in tags:
            _, phase_broadcast = _phases(tag)
            try:
                got = await collect(ep, ctx.parties, kind=PartialSum, session=ctx.session,
                                    phase=phase_broadcast, timeout=2 * self.round_timeout)
            except RoundTimeout as exc:
                raise PartyDropped(
                    f"paper secure sum: no broadcast r_j from {len(exc.missing)} "
                    f"part{'y' if len(exc.missing) == 1 else 'ies'} {list(exc.missing)[:10]} within "
                    f"{2 * self.round_timeout} s (crashed or stalled); the sum needs every party, "
                    "no count is returned",
                    parties=exc.missing,
                ) from exc
            rows = np.stack([checked_vector(m.values, ring, ctx, tag, src) for src, m in got.items()])
            parts.append(ring.sum(rows, axis=0))
        return SumOutcome(to_counts(np.concatenate(parts)), ctx.parties)

    # ------------------------------------------------------------------ cost
    def cost(self, ctx: SecureSumContext) -> TrafficCost:
        """Per party (n - 1) ShareVector + n PartialSum per run; L runs unless batched."""
        n, L = ctx.n, ctx.length
        runs, cells = (1, L) if self.batched else (L, 1)
        vec = np.zeros(cells, dtype=ctx.ring.dtype)
        share = encoded_size(ShareVector(ctx.session, -1 if self.batched else 0, vec))
        partial = encoded_size(PartialSum(ctx.session, -1 if self.batched else 0, vec))
        per_party = Counts(runs * (2 * n - 1), runs * ((n - 1) * share + n * partial))
        sent = {p: per_party for p in ctx.parties}
        sent[CONTROLLER] = Counts(0, 0)
        return TrafficCost(
            sent=MappingProxyType(sent),
            rounds=2 * runs,
            formula=(
                f"per party {runs} x [(n-1) shares + n broadcasts] of {cells} cell(s): "
                f"{per_party.messages} messages, O(L*n) = O(sum_(i<j)|A_i||A_j| * n) cells "
                "(main paper 4.2); total O(L*n^2)"
            ),
        )


def _phases(tag: int) -> tuple[str, str]:
    if tag < 0:
        return "paper/shares", "paper/broadcast"
    return f"paper/shares/{tag}", f"paper/broadcast/{tag}"
