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

Not dropout tolerant: a party that crashes takes its shares with it, the controller raises
:class:`~mprr.errors.PartyDropped` (never a wrong count).  Use the ``masked`` engine to
survive dropouts.
"""

from __future__ import annotations

import asyncio
from types import MappingProxyType

import numpy as np

from mprr.errors import ConfigurationError, MessageError, PartyDropped, RoundTimeout
from parties.topology import CONTROLLER
from parties.transport import Endpoint, Transport
from parties.secure.crypto import AEAD_OVERHEAD, KeyPair, agree, open_sealed, seal
from parties.secure.engine import (
    SecureSumContext,
    SecureSumEngine,
    SumOutcome,
    TrafficCost,
    as_ring_vector,
    check_total,
    collect,
    recv_session,
    encoded_size,
    to_counts,
)
from parties.secure.receive import checked_vector, receive_sum
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
from parties.secure.prg import Keystream
from parties.secure.sharing import split
from parties.secure.topology import TOPOLOGIES, Neighbourhoods, build_neighbourhoods
from parties.traffic import Counts

__all__ = ["GraphEngine", "ring_modulus"]

_KEYS = "graph/keys"  # what the PKI signature of a relayed key is for


def ring_modulus(n: int, max_value: int) -> int:
    """2^32 if a sum of n entries <= max_value fits below it, else 2^64.

    The total comes back as int64 counts, so ``n * max_value`` must not exceed
    :data:`~parties.secure.engine.MAX_TOTAL` (2^63 − 1): a larger bound could wrap into a
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


async def controller_phase(net: Transport, phase: str) -> None:
    """Mark a communication round on the network (the controller drives the rounds)."""
    net.begin_round(phase)
    await asyncio.sleep(0)


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

    # ------------------------------------------------------------------ party
    async def party(self, ep: Endpoint, vector: np.ndarray, ctx: SecureSumContext, *,
                    signer: Signer | None = None, min_contributors: int = 2) -> None:
        """Share x_i among the neighbours, then send the partial sum to the controller
        (``signer``: the party's PKI key, which signs its relayed public key)."""
        ring = ctx.ring
        x = as_ring_vector(vector, ctx, ring)
        me = ep.actor
        nbrs = ctx.neighbours[me]
        if ctx.relay:
            own, received = await self._relay_shares(ep, x, nbrs, ctx, signer)
        else:
            own = await self._send_shares(ep, x, nbrs, ctx)
            del x  # hold O(L), not O(k L), while waiting (n parties wait at once)
            await asyncio.sleep(0)  # let every party send its shares first: synchronous rounds
            received = await receive_sum(ep, nbrs, ShareVector, "shares", -1, ctx, ring,
                                         "graph/shares", self.round_timeout)
        partial = ring.add(own, received)
        await ep.send(CONTROLLER, PartialSum(ctx.session, -1, partial), phase="graph/partial")

    async def _send_shares(self, ep: Endpoint, x: np.ndarray, nbrs: tuple[int, ...],
                           ctx: SecureSumContext) -> np.ndarray:
        """Split x into deg + 1 additive shares, send one to each neighbour, return our own."""
        shares = split(x, len(nbrs) + 1, ctx.ring, Keystream())
        for j, row in zip(nbrs, shares[1:]):
            await ep.send(j, ShareVector(ctx.session, -1, row), phase="graph/shares")
        own: np.ndarray = shares[0].copy()
        return own

    async def _relay_shares(self, ep: Endpoint, x: np.ndarray, nbrs: tuple[int, ...],
                            ctx: SecureSumContext, signer: Signer | None) -> tuple[np.ndarray, np.ndarray]:
        """Exchange shares through the controller, sealed with pairwise X25519/HKDF keys whose
        public halves are PKI-signed; returns (own share, sum of the shares received)."""
        me, ring, timeout = ep.actor, ctx.ring, self.round_timeout
        registry = ctx.registry
        if signer is None or not isinstance(registry, KeyRegistry) or signer.party != me:
            raise ConfigurationError(
                f"party {me}: relayed graph shares need the party's PKI signer and the key registry "
                "(parties.secure.pki.setup_pki at set-up)")
        keys = KeyPair.generate()
        await ep.send(CONTROLLER, PublicKeys(ctx.session, (keys.public,), signer.sign(_KEYS, ctx.session, keys.public)),
                      phase="graph/keys")
        directory = await recv_session(ep, KeyDirectory, session=ctx.session, phase="graph/keys", timeout=timeout)
        if directory.session != ctx.session or tuple(directory.parties.tolist()) != nbrs:
            raise MessageError(
                f"party {me}: key directory does not list exactly its neighbours {list(nbrs)[:10]}"
            )
        if len(directory.signatures) != SIGNATURE_BYTES * len(nbrs):
            raise MessageError(f"party {me}: key directory entries must hold c_pk and its signature")
        sigs = directory.signatures
        peer_keys = {j: directory.key(k) for k, j in enumerate(nbrs)}
        for k, j in enumerate(nbrs):
            if not registry.verify(j, _KEYS, ctx.session, peer_keys[j],
                                   sigs[SIGNATURE_BYTES * k: SIGNATURE_BYTES * (k + 1)]):
                raise MessageError(
                    f"party {me}: the key relayed for party {j} is not signed by party {j}'s registered "
                    "key: key substitution detected")
        channel = {
            j: agree(keys.private, ks, purpose="channel", session=ctx.session, me=me, peer=j)
            for j, ks in peer_keys.items()
        }
        shares = split(x, len(nbrs) + 1, ring, Keystream())
        sealed = bundle(
            (j, seal(channel[j], row.tobytes(), session=ctx.session, sender=me, receiver=j))
            for j, row in zip(nbrs, shares[1:])
        )
        own = shares[0].copy()
        del shares, x
        await ep.send(CONTROLLER, SealedShares(ctx.session, *sealed), phase="graph/relay")
        relayed = await recv_session(ep, RelayedShares, session=ctx.session, phase="graph/relay", timeout=timeout)
        senders = relayed.senders.tolist()
        if relayed.session != ctx.session or senders != list(nbrs):
            raise MessageError(f"party {me}: relayed shares do not come from exactly its neighbours")
        acc = np.zeros(ctx.length, dtype=np.uint64)
        for j, blob in zip(senders, blobs(relayed.ends, relayed.ciphertexts)):
            plain = open_sealed(channel[j], blob, session=ctx.session, sender=j, receiver=me)
            if len(plain) != ctx.length * ring.element_bytes:
                raise MessageError(f"party {me}: share from party {j} has {len(plain)} bytes")
            acc = ring.add(acc, checked_vector(np.frombuffer(plain, dtype=ring.dtype), ring, ctx, -1, j))
        return own, acc

    # ------------------------------------------------------------------ controller
    async def controller(self, ep: Endpoint, ctx: SecureSumContext) -> SumOutcome:
        """(Relay the sealed shares, then) add the partial sums of all parties."""
        ring, net = ctx.ring, ep.network
        if ctx.relay:
            await self._relay(ep, ctx)
            await controller_phase(net, "graph/partial")
        try:
            got = await collect(ep, ctx.parties, kind=PartialSum, session=ctx.session,
                                phase="graph/partial", timeout=2 * self.round_timeout)
        except RoundTimeout as exc:
            raise _dropped("partial sums", exc) from exc
        rows = np.stack([checked_vector(m.values, ring, ctx, -1, src) for src, m in got.items()])
        return SumOutcome(to_counts(ring.sum(rows, axis=0)), ctx.parties)

    async def _relay(self, ep: Endpoint, ctx: SecureSumContext) -> None:
        net, timeout = ep.network, self.round_timeout
        await controller_phase(net, "graph/keys")
        try:
            keys = await collect(ep, ctx.parties, kind=PublicKeys, session=ctx.session,
                                 phase="graph/keys", timeout=timeout)
        except RoundTimeout as exc:
            raise _dropped("public keys", exc) from exc
        for p in ctx.parties:
            nbrs = ctx.neighbours[p]
            await ep.send(p, KeyDirectory(ctx.session, id_vector(nbrs), b"".join([keys[j].keys[0] for j in nbrs]),
                                          b"".join([keys[j].signature for j in nbrs])), phase="graph/keys")
        await controller_phase(net, "graph/relay")
        try:
            sealed = await collect(ep, ctx.parties, kind=SealedShares, session=ctx.session,
                                   phase="graph/relay", timeout=timeout)
        except RoundTimeout as exc:
            raise _dropped("sealed shares", exc) from exc
        inbox: dict[int, list[tuple[int, bytes]]] = {p: [] for p in ctx.parties}
        for src in ctx.parties:
            msg = sealed[src]
            if tuple(msg.recipients.tolist()) != ctx.neighbours[src]:
                raise MessageError(f"party {src} sealed shares for {list(msg.recipients)[:10]}, "
                                   "not for exactly its neighbours")
            for dst, blob in zip(msg.recipients.tolist(), blobs(msg.ends, msg.ciphertexts)):
                inbox[dst].append((src, blob))
        for p in ctx.parties:  # relayed as bytes: sliced, never opened
            await ep.send(p, RelayedShares(ctx.session, *bundle(inbox[p])), phase="graph/relay")

    # ------------------------------------------------------------------ cost
    def cost(self, ctx: SecureSumContext) -> TrafficCost:
        """Direct: party i sends deg(i) ShareVector + 1 PartialSum.  Relay: 3 messages per party
        (key, sealed shares, partial), 2 per party from the controller (directory, relay)."""
        vec = np.zeros(ctx.length, dtype=ctx.ring.dtype)
        partial = encoded_size(PartialSum(ctx.session, -1, vec))
        share = encoded_size(ShareVector(ctx.session, -1, vec))
        cell_bytes = ctx.length * ctx.ring.element_bytes + AEAD_OVERHEAD
        sent: dict[int, Counts] = {}
        ctrl_msgs = ctrl_bytes = 0
        key, sig = bytes(32), bytes(SIGNATURE_BYTES)
        relay_sizes: dict[int, tuple[int, int]] = {}  # sizes depend on the degree only
        for p in ctx.parties:
            k = len(ctx.neighbours[p])
            if not ctx.relay:
                sent[p] = Counts(k + 1, k * share + partial)
                continue
            if k not in relay_sizes:
                entries = bundle((i, bytes(cell_bytes)) for i in range(k))
                relay_sizes[k] = (
                    encoded_size(PublicKeys(ctx.session, (key,), sig))
                    + encoded_size(SealedShares(ctx.session, *entries)) + partial,
                    encoded_size(KeyDirectory(ctx.session, entries[0], key * k, sig * k))
                    + encoded_size(RelayedShares(ctx.session, *entries)),
                )
            party_bytes, controller_bytes = relay_sizes[k]
            sent[p] = Counts(3, party_bytes)
            ctrl_msgs += 2
            ctrl_bytes += controller_bytes
        sent[CONTROLLER] = Counts(ctrl_msgs, ctrl_bytes)
        degrees = sorted({len(ctx.neighbours[p]) for p in ctx.parties})
        formula = (
            f"per party deg(i) = {degrees} share vectors of L = {ctx.length} cells + 1 partial "
            "sum: O(k L) per party, O(n k L) total, 2 rounds"
            if not ctx.relay else
            "relay through the controller: per party 1 key + 1 sealed bundle of deg(i) shares "
            "+ 1 partial; controller 1 key directory + 1 relayed bundle per party; 3 rounds"
        )
        return TrafficCost(sent=MappingProxyType(sent), rounds=3 if ctx.relay else 2, formula=formula)


def _dropped(what: str, exc: RoundTimeout) -> PartyDropped:
    missing = exc.missing
    return PartyDropped(
        f"graph secure sum: {what} missing from {len(missing)} part"
        f"{'y' if len(missing) == 1 else 'ies'} {list(missing)[:10]} (crashed or stalled); their "
        "shares are lost with them, so no count is returned",
        parties=missing,
    )
