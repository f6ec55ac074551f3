"""Pairwise-mask secure aggregation with dropout recovery (engine ``masked``).

Bonawitz et al. 2017 ("Practical Secure Aggregation for Privacy-Preserving Machine Learning",
semi-honest protocol of Section 4 / Figure 4), optionally restricted to a sparse neighbour
graph as in Bell et al. 2020.  Party i, neighbours N(i), Shamir holders H(i) = N(i) + {i}:

Round 0, advertise keys   i -> controller: c_pk_i (encryption), s_pk_i (masking), X25519.
                          controller -> i: the keys of i's live neighbours.
Round 1, share keys       i draws a self-mask seed b_i, Shamir-shares b_i and s_sk_i t-of-|H|
                          among its live holders, seals each neighbour's pair of shares with
                          ChaCha20-Poly1305 under HKDF(X25519(c_sk_i, c_pk_j)) and sends the
                          ciphertexts to the controller, which relays them.
Round 2, masked input     y_i = x_i + PRG(b_i) + sum_{j in U2, j > i} PRG(s_ij)
                                            - sum_{j in U2, j < i} PRG(s_ij)   (mod M),
                          s_ij = HKDF(X25519(s_sk_i, s_pk_j)), PRG = ChaCha20 keystream over
                          Z_M (M = 2^32 or 2^64: rejection-free).
Round 3, unmasking        the controller names the dropped parties D (shared keys, sent no y)
                          and the survivors U3; each survivor returns its shares of b_v for
                          v in U3 and of s_sk_u for u in D (never both for one party).  The
                          controller reconstructs them (any t shares) and removes PRG(b_v) and
                          the masks the survivors share with dropped parties.

The pairwise masks of two survivors cancel in the sum, so the result is exactly
sum_{v in U3} x_v.  With fewer than max(t, 2) survivors, or fewer than t shares for a secret
that must be reconstructed, the controller raises :class:`~mprr.errors.SecureSumAborted`.
The controller sees only public keys, ciphertexts, masked vectors, the Shamir shares the
protocol reveals, and the aggregate.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from types import MappingProxyType

import numpy as np

from mprr.errors import ConfigurationError, MessageError, ProtocolError, SecureSumAborted
from parties.network import CONTROLLER, Endpoint, Transport
from parties.secure.crypto import AEAD_OVERHEAD, KeyPair, agree, open_sealed, seal
from parties.secure.engine import (
    SecureSumContext,
    SecureSumEngine,
    SumOutcome,
    TrafficCost,
    as_ring_vector,
    checked_vector,
    collect,
    encoded_size,
    to_counts,
)
from parties.secure.graph import controller_phase, ring_modulus
from parties.secure.messages import (
    SECRET_MASK_KEY,
    SECRET_SELF_MASK,
    KeyDirectory,
    MaskedInput,
    PublicKeys,
    RelayedShares,
    SealedShares,
    UnmaskRequest,
    UnmaskShares,
)
from parties.secure.prg import Keystream, fresh_seed
from parties.secure.ring import ZMod
from parties.secure.shamir import SHARE_BYTES, Share, reconstruct_bytes, share_bytes
from parties.secure.topology import TOPOLOGIES, Neighbourhoods, build_neighbourhoods
from parties.traffic import Counts

__all__ = ["MaskedEngine", "abscissa"]

_PLAIN = struct.Struct(f"<III{SHARE_BYTES}s{SHARE_BYTES}s")  # owner, holder, x, s_sk share, b share
PHASES = ("masked/advertise", "masked/share-keys", "masked/input", "masked/unmask")


def abscissa(neighbours: Neighbourhoods, owner: int, holder: int) -> int:
    """Shamir abscissa of ``holder``'s share of ``owner``'s secrets: 1 + rank of ``holder``
    in the sorted holder set N(owner) + {owner} (public, so every actor can check it)."""
    rank = bisect_left(neighbours[owner], holder)  # position among the sorted neighbours
    return rank + 1 + (1 if owner < holder else 0)


def _mask(ring: ZMod, seed: bytes, length: int) -> np.ndarray:
    """PRG(seed) as a vector of Z_M (ChaCha20 keystream)."""
    return ring.random(Keystream(seed), length)


class MaskedEngine(SecureSumEngine):
    """Bonawitz et al. 2017 secure aggregation (pairwise masks, Shamir recovery, AEAD relay).

    Parameters
    ----------
    topology, degree, seed
        Neighbour graph (see :mod:`parties.secure.topology`); default ``"complete"``
        (Bonawitz).  ``"regular"`` / ``"harary"`` with ``degree = k`` give the sparse variant
        (Bell et al. 2020) that scales to tens of thousands of parties.
    threshold
        Shamir threshold t (1 <= t <= smallest holder set deg + 1); default: a strict
        majority of the smallest holder set, floor((min deg + 1) / 2) + 1.
    round_timeout, max_value
        See :class:`SecureSumEngine`.  The controller waits ``round_timeout`` per round and
        treats the parties still missing as dropouts; parties wait twice as long for the
        controller (which may itself be waiting for stragglers).
    """

    name = "masked"

    def __init__(self, *, topology: str = "complete", degree: int | None = None,
                 threshold: int | None = None, seed: int = 0, round_timeout: float = 30.0,
                 max_value: int = 1) -> None:
        super().__init__(round_timeout=round_timeout, max_value=max_value)
        if topology not in TOPOLOGIES:
            raise ConfigurationError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int)
                                      or threshold < 1):
            raise ConfigurationError(f"threshold must be an integer >= 1 or None, got {threshold!r}")
        self.topology, self.degree, self.threshold, self.seed = topology, degree, threshold, seed

    def _context(self, parties: tuple[int, ...], length: int, session: str,
                 network: Transport | None) -> SecureSumContext:
        n = len(parties)
        degree = None if self.degree is None else min(self.degree, n - 1)
        topology = "complete" if degree is None or degree >= n - 1 else self.topology
        neighbours = build_neighbourhoods(parties, topology, degree, seed=self.seed)
        smallest = min(len(neighbours[p]) for p in parties) + 1
        t = smallest // 2 + 1 if self.threshold is None else self.threshold
        if t > smallest:
            raise ConfigurationError(
                f"threshold must be <= the smallest Shamir holder set (degree + 1 = {smallest}), got {t}"
            )
        if network is not None:
            for p in parties:
                if not (network.topology.allowed(p, CONTROLLER) and network.topology.allowed(CONTROLLER, p)):
                    raise ConfigurationError(f"the masked engine needs a link between party {p} and the controller")
        return SecureSumContext(session, parties, length, self.max_value,
                                ring_modulus(n, self.max_value), neighbours, relay=True, threshold=t)

    # ------------------------------------------------------------------ party
    async def party(self, ep: Endpoint, vector: np.ndarray, ctx: SecureSumContext) -> None:
        """Rounds 0-3 of Bonawitz et al. for party ``ep.actor``."""
        # a party waits up to two rounds: the controller itself may wait a full round_timeout
        # for stragglers before it answers
        ring, me, s, timeout = ctx.ring, ep.actor, ctx.session, 2 * self.round_timeout
        x = as_ring_vector(vector, ctx, ring)
        nbrs = ctx.neighbours[me]
        c_keys, s_keys = KeyPair.generate(), KeyPair.generate()
        await ep.send(CONTROLLER, PublicKeys(s, (c_keys.public, s_keys.public)), phase=PHASES[0])

        # round 1: share b_i and s_sk_i among the live holders, sealed per neighbour
        directory = (await ep.recv(kinds=KeyDirectory, sources=CONTROLLER, phase=PHASES[0],
                                   timeout=timeout)).message
        live = directory.parties
        if directory.session != s or not set(live) <= set(nbrs):
            raise MessageError(f"party {me}: key directory lists parties that are not its neighbours")
        if any(len(k) != 64 for k in directory.keys):
            raise MessageError(f"party {me}: key directory entries must hold c_pk || s_pk")
        peer_keys = {j: (k[:32], k[32:]) for j, k in zip(live, directory.keys)}
        self_mask = fresh_seed()
        xs = [abscissa(ctx.neighbours, me, h) for h in live]
        own_x = abscissa(ctx.neighbours, me, me)
        sk_shares = share_bytes(s_keys.private_bytes(), [*xs, own_x], ctx.threshold) \
            if len(xs) + 1 >= ctx.threshold else None
        if sk_shares is None:
            raise SecureSumAborted(
                f"party {me}: only {len(xs) + 1} live Shamir holders, threshold is {ctx.threshold}",
                survivors=len(xs) + 1, threshold=ctx.threshold)
        b_shares = share_bytes(self_mask, [*xs, own_x], ctx.threshold)
        own_b_share = b_shares[-1]
        channel = {j: agree(c_keys.private, peer_keys[j][0], purpose="channel", session=s, me=me, peer=j)
                   for j in live}
        sealed = tuple(
            seal(channel[j], _PLAIN.pack(me, j, xj, sk.value_bytes(), b.value_bytes()),
                 session=s, sender=me, receiver=j)
            for j, xj, sk, b in zip(live, xs, sk_shares, b_shares)
        )
        await ep.send(CONTROLLER, SealedShares(s, live, sealed), phase=PHASES[1])

        # round 2: open the shares relayed to us; mask with exactly their senders
        relayed = (await ep.recv(kinds=RelayedShares, sources=CONTROLLER, phase=PHASES[1],
                                 timeout=timeout)).message
        if relayed.session != s or not set(relayed.senders) <= set(live):
            raise MessageError(f"party {me}: relayed shares come from parties outside its live neighbours")
        held: dict[int, tuple[int, bytes, bytes]] = {}
        for j, blob in zip(relayed.senders, relayed.ciphertexts):
            plain = open_sealed(channel[j], blob, session=s, sender=j, receiver=me)
            if len(plain) != _PLAIN.size:
                raise MessageError(f"party {me}: sealed share from party {j} has {len(plain)} bytes")
            owner, holder, xj, sk_y, b_y = _PLAIN.unpack(plain)
            if owner != j or holder != me or xj != abscissa(ctx.neighbours, j, me):
                raise MessageError(f"party {me}: sealed share from party {j} is addressed inconsistently")
            held[j] = (xj, sk_y, b_y)
        acc = ring.add(x, _mask(ring, self_mask, ctx.length))
        plus = np.zeros(ctx.length, dtype=np.uint64)
        minus = np.zeros(ctx.length, dtype=np.uint64)
        for j in held:
            seed = agree(s_keys.private, peer_keys[j][1], purpose="mask", session=s, me=me, peer=j)
            if me < j:
                plus = ring.add(plus, _mask(ring, seed, ctx.length))
            else:
                minus = ring.add(minus, _mask(ring, seed, ctx.length))
        y = ring.sub(ring.add(acc, plus), minus)
        await ep.send(CONTROLLER, MaskedInput(s, y), phase=PHASES[2])

        # round 3: reveal b-shares of survivors and s_sk-shares of dropped parties
        request = (await ep.recv(kinds=UnmaskRequest, sources=CONTROLLER, phase=PHASES[3],
                                 timeout=timeout)).message
        if request.session != s or me in request.dropped:
            raise MessageError(f"party {me}: invalid unmask request")
        owners, which, absc, values = [], [], [], []
        for v in request.survivors:
            if v == me:
                owners.append(me)
                which.append(SECRET_SELF_MASK)
                absc.append(own_b_share.x)
                values.append(own_b_share.value_bytes())
            elif v in held:
                owners.append(v)
                which.append(SECRET_SELF_MASK)
                absc.append(held[v][0])
                values.append(held[v][2])
            else:
                raise MessageError(f"party {me}: asked for a share of party {v}, which it does not hold")
        for u in request.dropped:
            if u not in held:
                raise MessageError(f"party {me}: asked for a share of party {u}, which it does not hold")
            owners.append(u)
            which.append(SECRET_MASK_KEY)
            absc.append(held[u][0])
            values.append(held[u][1])
        await ep.send(CONTROLLER, UnmaskShares(s, tuple(owners), tuple(which), tuple(absc), tuple(values)),
                      phase=PHASES[3])

    # ------------------------------------------------------------------ controller
    async def controller(self, ep: Endpoint, ctx: SecureSumContext) -> SumOutcome:
        """Relay keys and shares, collect masked inputs, detect dropouts, unmask the sum."""
        net, s, timeout, ring, t = ep.network, ctx.session, self.round_timeout, ctx.ring, ctx.threshold
        minimum = max(t, 2)

        def abort(stage: str, alive: int) -> SecureSumAborted:
            return SecureSumAborted(
                f"masked secure sum aborted at {stage}: {alive} of {ctx.n} parties left, the "
                f"threshold needs at least {minimum} (t = {t}, and never a sum of one party)",
                survivors=alive, threshold=minimum)

        await controller_phase(net, PHASES[0])
        keys = await collect(ep, ctx.parties, kind=PublicKeys, session=s, phase=PHASES[0],
                             timeout=timeout, partial=True)
        if any(len(m.keys) != 2 for m in keys.values()):
            raise MessageError("masked engine: every party must advertise (c_pk, s_pk)")
        u1 = set(keys)
        if len(u1) < minimum:
            raise abort("key advertisement", len(u1))
        directory = {}
        for p in sorted(u1):
            live = tuple(j for j in ctx.neighbours[p] if j in u1)
            if len(live) + 1 < t:
                raise SecureSumAborted(
                    f"masked secure sum aborted: party {p} has {len(live) + 1} live Shamir "
                    f"holders, threshold t = {t}", survivors=len(live) + 1, threshold=t)
            directory[p] = live
            await ep.send(p, KeyDirectory(s, live, tuple(b"".join(keys[j].keys) for j in live)), phase=PHASES[0])

        await controller_phase(net, PHASES[1])
        sealed = await collect(ep, sorted(u1), kind=SealedShares, session=s, phase=PHASES[1],
                               timeout=timeout, partial=True)
        u2 = set(sealed)
        if len(u2) < minimum:
            raise abort("key sharing", len(u2))
        inbox: dict[int, list[tuple[int, bytes]]] = {p: [] for p in u2}
        for src in sorted(u2):
            msg = sealed[src]
            if msg.recipients != directory[src]:
                raise MessageError(f"party {src} sealed shares for other parties than its live neighbours")
            for dst, blob in zip(msg.recipients, msg.ciphertexts):
                if dst in u2:
                    inbox[dst].append((src, blob))
        relayed = {p: tuple(src for src, _ in inbox[p]) for p in u2}
        for p in sorted(u2):
            await ep.send(p, RelayedShares(s, relayed[p], tuple(b for _, b in inbox[p])), phase=PHASES[1])

        await controller_phase(net, PHASES[2])
        masked = await collect(ep, sorted(u2), kind=MaskedInput, session=s, phase=PHASES[2],
                               timeout=timeout, partial=True)
        u3 = set(masked)
        if len(u3) < minimum:
            raise abort("masked input collection", len(u3))
        dropped = u2 - u3

        await controller_phase(net, PHASES[3])
        requests: dict[int, UnmaskRequest] = {}
        for v in sorted(u3):
            request = UnmaskRequest(s, tuple(u for u in relayed[v] if u in dropped),
                                    tuple(sorted({v, *(w for w in relayed[v] if w in u3)})))
            requests[v] = request
            await ep.send(v, request, phase=PHASES[3])
        answers = await collect(ep, sorted(u3), kind=UnmaskShares, session=s, phase=PHASES[3],
                                timeout=timeout, partial=True)
        total = self._unmask(ctx, masked, answers, requests, relayed, keys, dropped)
        return SumOutcome(to_counts(total), tuple(sorted(u3)))

    def _unmask(self, ctx: SecureSumContext, masked: dict[int, MaskedInput], answers: dict[int, UnmaskShares],
                requests: dict[int, UnmaskRequest], relayed: dict[int, tuple[int, ...]],
                keys: dict[int, PublicKeys], dropped: set[int]) -> np.ndarray:
        ring, t, L = ctx.ring, ctx.threshold, ctx.length
        b_shares: dict[int, list[Share]] = {v: [] for v in masked}
        sk_shares: dict[int, list[Share]] = {u: [] for u in dropped}
        for holder, msg in answers.items():
            request = requests[holder]
            allowed = {**{v: SECRET_SELF_MASK for v in request.survivors},
                       **{u: SECRET_MASK_KEY for u in request.dropped}}
            for owner, kind, x, value in zip(msg.owners, msg.which, msg.abscissae, msg.values):
                if allowed.get(owner) != kind or x != abscissa(ctx.neighbours, owner, holder):
                    raise MessageError(f"party {holder} returned a share that was not requested")
                (b_shares if kind == SECRET_SELF_MASK else sk_shares)[owner].append(Share.from_bytes(x, value))
        total = np.zeros(L, dtype=np.uint64)
        for v, masked_input in masked.items():
            total = ring.add(total, checked_vector(masked_input.values, ring, ctx, -1, v))
        for v in masked:
            b_v = _reconstruct(b_shares[v], t, f"the self mask of surviving party {v}")
            total = ring.sub(total, _mask(ring, b_v, L))
        for u in sorted(dropped):
            raw = _reconstruct(sk_shares[u], t, f"the mask key of dropped party {u}")
            s_u = KeyPair.from_private_bytes(raw)
            if s_u.public != keys[u].keys[1]:
                raise ProtocolError(f"reconstructed mask key of party {u} does not match its public key")
            for v in relayed[u]:
                if v not in masked:
                    continue
                seed = agree(s_u.private, keys[v].keys[1], purpose="mask", session=ctx.session, me=u, peer=v)
                m = _mask(ring, seed, L)
                # survivor v added +PRG(s_uv) if v < u and -PRG(s_uv) if v > u: take it out
                total = ring.sub(total, m) if v < u else ring.add(total, m)
        return total

    # ------------------------------------------------------------------ cost
    def cost(self, ctx: SecureSumContext) -> TrafficCost:
        """Fault-free: 4 messages per party (keys, sealed shares, masked input, unmask shares),
        3 per party from the controller (key directory, relayed shares, unmask request); 4 rounds."""
        s, L = ctx.session, ctx.length
        key = bytes(32)
        blob = bytes(_PLAIN.size + AEAD_OVERHEAD)
        share = bytes(SHARE_BYTES)
        masked = encoded_size(MaskedInput(s, np.zeros(L, dtype=ctx.ring.dtype)))
        advertise = encoded_size(PublicKeys(s, (key, key)))
        sent: dict[int, Counts] = {}
        ctrl = [0, 0]
        by_degree: dict[int, tuple[Counts, int]] = {}  # sizes depend on the degree only
        for p in ctx.parties:
            k = len(ctx.neighbours[p])
            if k not in by_degree:
                nbrs, holders = tuple(range(k)), tuple(range(k + 1))
                unmask = UnmaskShares(s, holders, (0,) * (k + 1), (1,) * (k + 1), (share,) * (k + 1))
                party = Counts(4, advertise + encoded_size(SealedShares(s, nbrs, (blob,) * k))
                               + masked + encoded_size(unmask))
                controller = (encoded_size(KeyDirectory(s, nbrs, (key + key,) * k))
                              + encoded_size(RelayedShares(s, nbrs, (blob,) * k))
                              + encoded_size(UnmaskRequest(s, (), holders)))
                by_degree[k] = (party, controller)
            sent[p], controller_bytes = by_degree[k]
            ctrl[0] += 3
            ctrl[1] += controller_bytes
        sent[CONTROLLER] = Counts(*ctrl)
        degrees = sorted({len(ctx.neighbours[p]) for p in ctx.parties})
        return TrafficCost(
            sent=MappingProxyType(sent), rounds=4,
            formula=(f"per party 4 messages: 2 keys, deg(i) = {degrees} sealed share pairs, "
                     f"L = {L} masked cells, deg(i) + 1 Shamir shares; controller 3 per party; "
                     "O(L + k) per party, O(n (L + k)) total"),
        )


def _reconstruct(shares: list[Share], threshold: int, what: str) -> bytes:
    try:
        return reconstruct_bytes(shares, threshold)
    except SecureSumAborted as exc:
        raise SecureSumAborted(
            f"masked secure sum aborted: cannot reconstruct {what}: {len(shares)} share(s) "
            f"arrived, threshold t = {threshold}",
            survivors=len(shares), threshold=threshold,
        ) from exc
