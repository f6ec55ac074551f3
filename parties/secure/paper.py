"""The modular secure sum of the main paper, Section 4.2 (engine ``paper``).

For one value combination (a, a') and n parties, with modulus n + 1:

1. party i draws r_i1, ..., r_in uniform with sum_j r_ij = 0 (mod n + 1);
2. party i sends r_ij to party j for every j != i (it keeps r_ii);
3. party j broadcasts r_j = sum_i r_ij + [party j holds (a, a')]  (mod n + 1);
4. everybody computes the count sum_j r_j (mod n + 1)  — exact, since the count is <= n.

Here the controller is one more recipient of the broadcasts of step 3 (it is the party that
wants the bivariate tables); the parties also compute the total and :func:`run_secure_sum`
checks that everyone agrees.  Each role is a sans-I/O program (:mod:`parties.secure.program`);
the traffic of a fault-free run is that of the programs under the counting driver
(:meth:`~parties.secure.engine.SecureSumEngine.cost`).

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

import numpy as np

from mprr.domain import check_int
from mprr.errors import ConfigurationError, PartyDropped
from parties.topology import CONTROLLER
from parties.transport import Transport
from parties.secure.context import SecureSumContext
from parties.secure.engine import SecureSumEngine, SumOutcome
from parties.secure.values import as_ring_vector, to_counts
from parties.secure.messages import PartialSum, ShareVector
from parties.secure.pki import Signer
from parties.secure.prg import Keystream
from parties.secure.program import Broadcast, Expect, Poll, Program, SendEach, receive
from parties.secure.receive import VectorSum, checked_vector, combination
from parties.secure.ring import ZMod
from parties.secure.topology import CompleteNeighbourhoods

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
        A party takes the shares that have arrived after this many sends (a
        :class:`~parties.secure.program.Poll`: its peers run meanwhile), so that receivers
        consume shares while they arrive (keeps memory O(n * L) instead of O(n^2 * L) at large n).
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

    def symmetric(self, ctx: SecureSumContext) -> bool:
        """True: on the complete graph every party sends n - 1 shares and one broadcast of the
        same shapes, and receives alike (:meth:`SecureSumEngine.symmetric`)."""
        return True

    # ------------------------------------------------------------------ party
    def party_program(self, me: int, vector: np.ndarray, ctx: SecureSumContext, *,
                      signer: Signer | None = None, min_contributors: int = 2) -> Program[np.ndarray]:
        """Steps 1-4 of main paper 4.2 for party ``me``; returns the total it computes
        (``signer`` unused: no key is relayed)."""
        ring = ctx.ring
        x = as_ring_vector(vector, ctx, ring)
        peers = tuple(p for p in ctx.parties if p != me)
        stream = ctx.suite.stream()  # fresh secret seed from the OS CSPRNG
        if self.batched:
            return to_counts((yield from self._one_sum(me, x, -1, peers, ctx, ring, stream)))
        out = np.empty(ctx.length, dtype=np.int64)
        for c in range(ctx.length):
            out[c] = to_counts((yield from self._one_sum(me, x[c : c + 1], c, peers, ctx, ring, stream)))[0]
        return out

    def _one_sum(self, me: int, x: np.ndarray, tag: int, peers: tuple[int, ...], ctx: SecureSumContext,
                 ring: ZMod, stream: Keystream) -> Program[np.ndarray]:
        phase_shares, phase_broadcast = _phases(tag)
        session, timeout, length = ctx.session, self.round_timeout, x.shape[0]
        # steps 1 and 2, while the peers' shares are received (polled every ``yield_every`` sends)
        shares = VectorSum(me, Expect(ShareVector, session, peers, phase_shares, timeout, stream=True,
                                      where=combination(tag)), "shares", tag, ctx, ring)
        sent = np.zeros(length, dtype=np.uint64)  # unreduced sum of the shares sent
        chunk = min(self.yield_every, 32)  # rows drawn at once (memory O(chunk * L))
        wide = np.uint32 if (ring.modulus - 1) * chunk < 1 << 32 else np.uint64  # a block's exact sum
        done = 0
        for start in range(0, len(peers), chunk):
            block = ring.random(stream, (min(chunk, len(peers) - start), length))
            ring.accumulate(sent, block.sum(axis=0, dtype=wide))
            yield SendEach(peers[start : start + chunk], tuple(ShareVector(session, tag, r) for r in block),
                           phase_shares)  # one message per peer
            before, done = done, done + len(block)
            if done // self.yield_every > before // self.yield_every and not shares.done:
                got = yield Poll(shares.expect)
                assert got is not None
                yield from shares.fold(got)
                del got  # (not kept while sending)
        received = yield from shares.finish()
        own = ring.neg(ring.reduce(sent))  # r_ii: all n shares sum to 0 (mod n + 1)
        r_j = ring.add(ring.add(own, received), x)  # step 3
        yield Broadcast((*peers, CONTROLLER), PartialSum(session, tag, r_j), phase_broadcast)
        values = VectorSum(me, Expect(PartialSum, session, peers, phase_broadcast, timeout, stream=True,
                                      where=combination(tag)), "values", tag, ctx, ring, broadcast=True)
        others = yield from values.finish()
        return ring.add(others, r_j)  # step 4

    # ------------------------------------------------------------------ controller
    def controller_program(self, ctx: SecureSumContext) -> Program[SumOutcome]:
        """Collect every broadcast r_j and add them mod n + 1 (step 4)."""
        ring = ctx.ring
        tags = [-1] if self.batched else list(range(ctx.length))
        timeout = 2 * self.round_timeout
        parts = []
        for tag in tags:
            _, phase_broadcast = _phases(tag)
            got = yield from receive(Expect(PartialSum, ctx.session, ctx.parties, phase_broadcast, timeout,
                                            where=combination(tag)))
            if got.timed_out:
                missing = got.missing
                raise PartyDropped(
                    f"paper secure sum: no broadcast r_j from {len(missing)} "
                    f"part{'y' if len(missing) == 1 else 'ies'} {list(missing)[:10]} within "
                    f"{timeout} s (crashed or stalled); the sum needs every party, "
                    "no count is returned",
                    parties=missing,
                )
            rows = np.stack([checked_vector(m.values, ring, ctx, tag, src) for src, m in got.messages.items()])
            parts.append(ring.sum(rows, axis=0))
        return SumOutcome(to_counts(np.concatenate(parts)), ctx.parties)


def _phases(tag: int) -> tuple[str, str]:
    if tag < 0:
        return "paper/shares", "paper/broadcast"
    return f"paper/shares/{tag}", f"paper/broadcast/{tag}"
