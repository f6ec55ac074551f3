"""Additive secure sum over a sparse communication graph (engine ``graph``).

Party i with neighbours N(i) splits its vector x_i into |N(i)| + 1 additive shares over Z_M
(M = 2^32, or 2^64 when n * max_value >= 2^32), keeps one and sends one to each neighbour.
It then sends the controller its partial sum z_i = (kept share) + (shares received); the
controller adds the z_i: sum_i z_i = sum_i x_i (mod M), exact because n * max_value < M.

The graph (random k-regular or Harary, :mod:`parties.secure.topology`) must be connected:
the controller learns exactly the sum over each connected component.  Cost per party: k share
vectors + 1 partial, O(k L) cells, instead of the paper engine's O(n L).

Where the network topology has no direct link between two neighbours (e.g. the default star),
the shares travel through the controller, AEAD-encrypted end to end (``relay`` mode): each
party first publishes an X25519 key, signed with its PKI key (:mod:`parties.secure.pki`), the
controller hands each party its neighbours' keys and signatures, each party checks them against
the registry (a substituted key would let the controller open the shares: it is detected), the
parties seal their shares (ChaCha20-Poly1305, keys by HKDF from X25519) and the controller
relays the ciphertexts.  The traffic counts both hops.

Each role is a sans-I/O program (:mod:`parties.secure.program`); the traffic of a fault-free run
is that of the programs under the counting driver (:meth:`~parties.secure.engine.SecureSumEngine.cost`).

Not dropout tolerant: a party that crashes takes its shares with it, the controller raises
:class:`~mprr.errors.PartyDropped` (never a wrong count).  Use the ``masked`` engine to
survive dropouts.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np

from mprr.errors import ConfigurationError, MessageError, PartyDropped
from parties.topology import CONTROLLER
from parties.wire.codec import Message
from parties.transport import Transport
from parties.secure.context import SecureSumContext
from parties.secure.engine import SecureSumEngine, SumOutcome
from parties.secure.program import Expect, Mark, Poll, Program, Send, SendEach, from_controller, receive
from parties.secure.values import as_ring_vector, check_total, to_counts
from parties.secure.receive import VectorSum, checked_vector, combination
from parties.secure.messages import (
    KeyDirectory,
    PartialSum,
    PublicKeys,
    RelayedShares,
    SealedShares,
    ShareVector,
    blobs,
    bundle,
    id_vector,
)
from parties.secure.pki import SIGNATURE_BYTES, KeyRegistry, Signer
from parties.secure.sharing import split
from parties.secure.topology import TOPOLOGIES, CompleteNeighbourhoods, Neighbourhoods, build_neighbourhoods

__all__ = ["GraphEngine", "ring_modulus"]

_KEYS = "graph/keys"  # what the PKI signature of a relayed key is for


def ring_modulus(n: int, max_value: int) -> int:
    """2^32 if a sum of n entries <= max_value fits below it, else 2^64.

    The total comes back as int64 counts, so ``n * max_value`` must not exceed
    :data:`~parties.secure.values.MAX_TOTAL` (2^63 − 1): a larger bound could wrap into a
    negative count.

    Raises
    ------
    ConfigurationError
        If ``n * max_value > 2**63 - 1`` (names ``max_value``, ``n`` and the largest allowed).
    """
    bound = n * max_value
    if bound < 1 << 32:
        return 1 << 32
    check_total(n, max_value)
    return 1 << 64


def edges_allowed(network: Transport, neighbours: Neighbourhoods) -> bool:
    """True when every graph edge is a direct link of the network topology."""
    allowed = network.topology.allowed
    return all(allowed(i, j) for i, nbrs in neighbours.items() for j in nbrs)


class GraphEngine(SecureSumEngine):
    """Additive shares to the neighbours of a connected sparse graph; partials to the controller.

    Parameters
    ----------
    topology
        ``"regular"`` (random k-regular, default), ``"harary"`` or ``"complete"``.
    degree
        k (default 4); k >= n - 1 means complete.
    seed
        Public seed of the random regular graph.
    relay
        None: relay through the controller only if the network lacks the direct links;
        True / False: force it (False with missing links is a ConfigurationError).
    round_timeout, max_value
        See :class:`SecureSumEngine`.
    """

    name = "graph"

    def __init__(self, *, topology: str = "regular", degree: int = 4, seed: int = 0,
                 relay: bool | None = None, round_timeout: float = 30.0, max_value: int = 1) -> None:
        super().__init__(round_timeout=round_timeout, max_value=max_value)
        if topology not in TOPOLOGIES:
            raise ConfigurationError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
        self.topology = topology
        self.degree = degree
        self.seed = seed
        self.relay = relay

    @property
    def signs(self) -> bool:  # type: ignore[override]
        """Relayed keys are signed with the PKI (unless the engine never relays)."""
        return self.relay is not False

    def _context(self, parties: tuple[int, ...], length: int, session: str,
                 network: Transport | None) -> SecureSumContext:
        modulus = ring_modulus(len(parties), self.max_value)
        degree = min(self.degree, len(parties) - 1) if isinstance(self.degree, int) else self.degree
        neighbours = build_neighbourhoods(parties, self.topology, degree, seed=self.seed)
        relay = bool(self.relay)
        if network is not None:
            direct = edges_allowed(network, neighbours)
            if self.relay is None:
                relay = not direct
            elif self.relay is False and not direct:
                raise ConfigurationError(
                    "relay=False but the network topology lacks some links of the communication "
                    "graph; add them (topology=graph) or use relay=None/True"
                )
        return SecureSumContext(session, parties, length, self.max_value, modulus, neighbours,
                                relay=relay)

    def symmetric(self, ctx: SecureSumContext) -> bool:
        """On a regular graph: every party sends k shares (direct, or sealed in one message to
        the controller with its key) and one partial, and receives alike
        (:meth:`SecureSumEngine.symmetric`; relayed, with :meth:`counterpart`)."""
        neighbours = ctx.neighbours
        return isinstance(neighbours, CompleteNeighbourhoods) or len({len(neighbours[p]) for p in ctx.parties}) == 1

    def counterpart(self, message: Message, party: int, ctx: SecureSumContext) -> Message:
        """Relayed: ``party``'s sealed shares are for its own neighbours (same size on a regular graph)."""
        if isinstance(message, SealedShares):
            return replace(message, recipients=id_vector(ctx.neighbours[party]))
        return message

    # ------------------------------------------------------------------ party
    def party_program(self, me: int, vector: np.ndarray, ctx: SecureSumContext, *,
                      signer: Signer | None = None, min_contributors: int = 2) -> Program[None]:
        """Share x_i among the neighbours, then send the partial sum to the controller
        (``signer``: the party's PKI key, which signs its relayed public key)."""
        ring = ctx.ring
        x = as_ring_vector(vector, ctx, ring)
        nbrs = ctx.neighbours[me]
        if ctx.relay:
            own, received = yield from self._relay_shares(me, x, nbrs, ctx, signer)
        else:
            shares = split(x, len(nbrs) + 1, ring, ctx.suite.stream())
            own = shares[0].copy()
            yield SendEach(nbrs, tuple(ShareVector(ctx.session, -1, row) for row in shares[1:]), "graph/shares")
            del x, shares  # hold O(L), not O(k L), while waiting (n parties wait at once)
            expect = Expect(ShareVector, ctx.session, nbrs, "graph/shares", self.round_timeout, stream=True,
                            where=combination(-1))
            shares_in = VectorSum(me, expect, "shares", -1, ctx, ring)
            got = yield Poll(expect)  # every party sends its shares first: synchronous rounds
            assert got is not None
            yield from shares_in.fold(got)
            del got
            received = yield from shares_in.finish()
        yield Send(CONTROLLER, PartialSum(ctx.session, -1, ring.add(own, received)), "graph/partial")
        return None

    def _relay_shares(self, me: int, x: np.ndarray, nbrs: tuple[int, ...], ctx: SecureSumContext,
                      signer: Signer | None) -> Program[tuple[np.ndarray, np.ndarray]]:
        """Exchange shares through the controller, sealed with pairwise X25519/HKDF keys whose
        public halves are PKI-signed; returns (own share, sum of the shares received)."""
        ring, timeout, session, suite = ctx.ring, self.round_timeout, ctx.session, ctx.suite
        registry = ctx.registry
        if not suite.sizing and (signer is None or not isinstance(registry, KeyRegistry) or signer.party != me):
            raise ConfigurationError(
                f"party {me}: relayed graph shares need the party's PKI signer and the key registry "
                "(parties.secure.pki.setup_pki at set-up)")
        keys = suite.keypair()
        yield Send(CONTROLLER, PublicKeys(session, (keys.public,), suite.sign(signer, _KEYS, session, keys.public)),
                   "graph/keys")
        directory = yield from from_controller(me, KeyDirectory, session, "graph/keys", timeout)
        if tuple(directory.parties.tolist()) != nbrs:
            raise MessageError(
                f"party {me}: key directory does not list exactly its neighbours {list(nbrs)[:10]}"
            )
        if len(directory.signatures) != SIGNATURE_BYTES * len(nbrs):
            raise MessageError(f"party {me}: key directory entries must hold c_pk and its signature")
        sigs = directory.signatures
        peer_keys = {j: directory.key(k) for k, j in enumerate(nbrs)}
        for k, j in enumerate(nbrs):
            if not suite.verify(registry, j, _KEYS, session, peer_keys[j],
                                sigs[SIGNATURE_BYTES * k: SIGNATURE_BYTES * (k + 1)]):
                raise MessageError(
                    f"party {me}: the key relayed for party {j} is not signed by party {j}'s registered "
                    "key: key substitution detected")
        channel = {
            j: suite.agree(keys, ks, purpose="channel", session=session, me=me, peer=j, parsed=ctx.public_keys)
            for j, ks in peer_keys.items()
        }
        shares = split(x, len(nbrs) + 1, ring, suite.stream())
        sealed = bundle(
            (j, suite.seal(channel[j], row.tobytes(), session=session, sender=me, receiver=j))
            for j, row in zip(nbrs, shares[1:])
        )
        own = shares[0].copy()
        del shares, x
        yield Send(CONTROLLER, SealedShares(session, *sealed), "graph/relay")
        relayed = yield from from_controller(me, RelayedShares, session, "graph/relay", timeout)
        senders = relayed.senders.tolist()
        if senders != list(nbrs):
            raise MessageError(f"party {me}: relayed shares do not come from exactly its neighbours")
        acc = np.zeros(ctx.length, dtype=np.uint64)
        for j, blob in zip(senders, blobs(relayed.ends, relayed.ciphertexts)):
            plain = suite.open(channel[j], blob, session=session, sender=j, receiver=me)
            if len(plain) != ctx.length * ring.element_bytes:
                raise MessageError(f"party {me}: share from party {j} has {len(plain)} bytes")
            acc = ring.add(acc, checked_vector(np.frombuffer(plain, dtype=ring.dtype), ring, ctx, -1, j))
        return own, acc

    # ------------------------------------------------------------------ controller
    def controller_program(self, ctx: SecureSumContext) -> Program[SumOutcome]:
        """(Relay the sealed shares, then) add the partial sums of all parties."""
        ring = ctx.ring
        if ctx.relay:
            yield from self._relay(ctx)
            yield Mark("graph/partial")
        got = yield from receive(Expect(PartialSum, ctx.session, ctx.parties, "graph/partial",
                                        2 * self.round_timeout, where=combination(-1)))
        if got.timed_out:
            raise _dropped("partial sums", got.missing)
        rows = np.stack([checked_vector(m.values, ring, ctx, -1, src) for src, m in got.messages.items()])
        return SumOutcome(to_counts(ring.sum(rows, axis=0)), ctx.parties)

    def _relay(self, ctx: SecureSumContext) -> Program[None]:
        timeout, session, parties = self.round_timeout, ctx.session, ctx.parties
        yield Mark("graph/keys")
        got = yield from receive(Expect(PublicKeys, session, parties, "graph/keys", timeout))
        if got.timed_out:
            raise _dropped("public keys", got.missing)
        keys = got.messages
        directories = []
        for p in parties:
            nbrs = ctx.neighbours[p]
            directories.append(KeyDirectory(session, id_vector(nbrs), b"".join([keys[j].keys[0] for j in nbrs]),
                                            b"".join([keys[j].signature for j in nbrs])))
        yield SendEach(parties, tuple(directories), "graph/keys")
        del directories
        yield Mark("graph/relay")
        got_sealed = yield from receive(Expect(SealedShares, session, parties, "graph/relay", timeout))
        if got_sealed.timed_out:
            raise _dropped("sealed shares", got_sealed.missing)
        inbox: dict[int, list[tuple[int, bytes]]] = {p: [] for p in parties}
        for src in parties:
            msg = got_sealed.messages[src]
            if tuple(msg.recipients.tolist()) != ctx.neighbours[src]:
                raise MessageError(f"party {src} sealed shares for {list(msg.recipients)[:10]}, "
                                   "not for exactly its neighbours")
            for dst, blob in zip(msg.recipients.tolist(), blobs(msg.ends, msg.ciphertexts)):
                inbox[dst].append((src, blob))
        # relayed as bytes: sliced, never opened; one message at a time (each bundle is encoded
        # and delivered before the next is built)
        for p in parties:
            yield Send(p, RelayedShares(session, *bundle(inbox.pop(p))), "graph/relay")


def _dropped(what: str, missing: tuple[int, ...]) -> PartyDropped:
    return PartyDropped(
        f"graph secure sum: {what} missing from {len(missing)} part"
        f"{'y' if len(missing) == 1 else 'ies'} {list(missing)[:10]} (crashed or stalled); their "
        "shares are lost with them, so no count is returned",
        parties=missing,
    )
