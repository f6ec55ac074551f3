"""Pairwise-mask secure aggregation with dropout recovery (engine ``masked``).

Bonawitz et al. 2017 ("Practical Secure Aggregation for Privacy-Preserving Machine Learning",
Section 4 / Figure 4, with the active-adversary additions of Section 6: authenticated keys and
the consistency check; the keys authenticated by static Diffie-Hellman and the views by MACs
rather than signatures, see below), optionally restricted to a sparse neighbour graph as in
Bell et al. 2020.
Party i, neighbours N(i), Shamir holders H(i) = N(i) + {i}; every party has long-term keys
registered at set-up in a PKI the controller cannot change (:mod:`parties.secure.pki`): an
Ed25519 signing key and an X25519 static key::

    Round 0, advertise keys   i -> controller: s_pk_i (masking, X25519, fresh per session).
                              controller -> i: the s_pk of i's live neighbours.
    Round 1, share keys       i draws a self-mask seed b_i, Shamir-shares b_i and s_sk_i t-of-|H|
                              among its live holders, seals each neighbour's pair of shares and its
                              own s_pk_i with ChaCha20-Poly1305 under HKDF(X25519(static_i,
                              static_j)) (the registered static keys: only i and j can compute it)
                              and sends the ciphertexts to the controller, which relays them.
                              j checks that the s_pk_i sealed for it is the one relayed in round 0,
                              so a substituted key (a man in the middle on the masks) is detected.
    Round 2, masked input     y_i = x_i + PRG(b_i) + sum_{j in U2, j > i} PRG(s_ij)
                                                - sum_{j in U2, j < i} PRG(s_ij)   (mod M),
                              s_ij = HKDF(X25519(s_sk_i, s_pk_j)), PRG = ChaCha20 keystream over
                              Z_M (M = 2^32 or 2^64: rejection-free).
    Round 3, consistency      the controller tells each survivor v in U3 its view: the survivors
                              among H(v); v states the view it was told (once per session), MAC'd
                              for every party of its 2-hop neighbourhood (see below).
    Round 4, unmasking        the controller forwards to each party the stated views it needs;
                              before revealing anything about an owner o it holds shares of, the
                              party checks that a strict majority of H(o) stated views that agree
                              with its own on whether o survived (every MAC checked).  It then
                              returns its shares of b_o for the survivors and of s_sk_o for the
                              dropped (never both for one owner).  The controller reconstructs them
                              (any t shares) and removes PRG(b_v) and the masks the survivors
                              share with dropped parties.

Why the check: if the controller could tell some holders of o "o survived" and others "o
dropped", it could collect t shares of b_o and t of s_sk_o and unmask o's input alone.  Two
strict majorities of H(o) share a party, and an honest party states one view per session, so
all honest holders of o act on the same bit; and since t > |H(o)| / 2 (the party's policy,
never the controller's choice), the shares of both secrets of one owner never reach t.

How the views are authenticated: Bonawitz et al. have every survivor *sign* its view and every
party verify the signatures it relies on, i.e. the views of its 2-hop neighbourhood (about
k + k(k - 1) Ed25519 verifications per party on a k-regular graph, the bulk of the engine's
CPU); they also sign the round-0 keys (k more verifications per party).  Here the PKI holds a
static X25519 key per party beside its signing key, so neighbours agree on their channel key
directly from the registry and the masking key travels inside that authenticated channel: no
round-0 signature to check.  What the consistency check needs is only that the controller
cannot forge or alter an honest party's
statement to another party, so here each statement is MAC'd (keyed BLAKE2b, RFC 7693, 128-bit
keys and tags: a standard keyed MAC, about three times cheaper than HMAC-SHA256 on these short
statements) for its reader under a key the two share: neighbours derive it from their static X25519 agreement
(HKDF purpose "view"); two holders of an owner o that are not neighbours get
a fresh key from o, sealed with their shares, and combine the keys of all their common owners
(SHA-256), so a statement can be forged only by a coalition of *all* the common owners of its
author and its reader, i.e. never about an honest owner.  The guarantee (one view per honest
party per session, unforgeable by the controller) is the same; the cost is one MAC per 2-hop
neighbour to write and at most one to check, instead of one signature to check.

The pairwise masks of two survivors cancel in the sum, so the result is exactly
sum_{v in U3} x_v.  With fewer than max(t, 2) survivors, fewer than t shares for a secret
that must be reconstructed, or too few agreeing views, the run aborts
(:class:`~mprr.errors.SecureSumAborted` at the controller).  The controller sees only public
masking keys, ciphertexts, MAC tags, masked vectors, the Shamir shares the protocol
reveals, and the aggregate.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_left
from collections.abc import Callable
from types import MappingProxyType
from typing import TypeVar

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from mprr.errors import ConfigurationError, MessageError, SecureSumAborted
from parties.topology import CONTROLLER
from parties.transport import Endpoint, Transport
from parties.secure.crypto import AEAD_OVERHEAD, KeyPair, agree, derive_keys, open_sealed, seal_each
from parties.secure.engine import (
    SecureSumContext,
    SecureSumEngine,
    SumOutcome,
    TrafficCost,
    as_ring_vector,
    collect,
    recv_session,
    encoded_size,
    to_counts,
)
from parties.secure.receive import checked_vector
from parties.secure.graph import controller_phase, ring_modulus
from parties.secure.messages import (
    SECRET_MASK_KEY,
    SECRET_SELF_MASK,
    KeyDirectory,
    MaskedInput,
    PublicKeys,
    RelayedShares,
    SealedShares,
    TAG_BYTES,
    SurvivorSet,
    SurvivorTags,
    UnmaskRequest,
    UnmaskShares,
    blobs,
    bundle,
    id_vector,
)
from parties.secure.pki import KeyRegistry, Signer
from parties.secure.prg import fresh_seed
from parties.secure.ring import ZMod
from parties.secure.shamir import SHARE_BYTES, share_values
from parties.secure.topology import TOPOLOGIES, CompleteNeighbourhoods, Neighbourhoods, build_neighbourhoods
from parties.secure.unmasking import Unmasking, abscissa, mask_vector
from parties.secure.views import (
    KEY_ENTRY,
    VIEW_KEY_BYTES,
    check_consistency,
    combined_keys,
    pack_ids,
    pair_keys,
    statement_prefix,
    survivor_view,
    unmask_requests,
    view_tags,
)
from parties.traffic import Counts

__all__ = ["MaskedEngine"]

_PLAIN = struct.Struct(f"<III{SHARE_BYTES}s{SHARE_BYTES}s32s")  # owner, holder, x, s_sk share, b share, s_pk
_PAIR_PURPOSES = ("channel", "view")  # the keys a neighbour pair derives from its static agreement
_M = TypeVar("_M")
PHASES = ("masked/advertise", "masked/share-keys", "masked/input", "masked/consistency", "masked/unmask")


def _masked_input(ring: ZMod, x: np.ndarray, self_mask: bytes, s_sk: X25519PrivateKey,
                  peers: dict[int, bytes], session: str, me: int) -> np.ndarray:
    """Round 2: y = x + PRG(b) + sum_{j > me} PRG(s_{me,j}) - sum_{j < me} PRG(s_{me,j}) (mod M)
    over the ``peers`` (id -> s_pk) whose shares this party holds.  ``x`` is the party's own copy
    (:func:`~parties.secure.engine.as_ring_vector`): in the ring's dtype, it is masked in place."""
    length = x.shape[0]
    if ring.modulus != 1 << (8 * ring.element_bytes):  # pragma: no cover - ring_modulus gives 2^32 or 2^64
        raise ConfigurationError(f"the masked engine computes in Z_(2^32) or Z_(2^64), got {ring}")
    # M = 2^(bits of the dtype): the dtype's wrap-around is the reduction, so add in place
    acc = x if x.dtype == ring.dtype else x.astype(ring.dtype)
    np.add(acc, mask_vector(ring, self_mask, length), out=acc)
    for j, s_pk in peers.items():
        seed = agree(s_sk, s_pk, purpose="mask", session=session, me=me, peer=j)
        (np.add if me < j else np.subtract)(acc, mask_vector(ring, seed, length), out=acc)
    return acc


def _sealed_shares(me: int, session: str, live: tuple[int, ...], xs: list[int], sk_values: list[bytes],
                   b_values: list[bytes], s_pk: bytes, channel: dict[int, bytes],
                   handed: dict[int, dict[int, bytes]]) -> SealedShares:
    """Round 1's message: for each live holder j, (me, j, x_j, j's share of s_sk, j's share of b,
    s_pk) followed by the view keys ``handed[j]`` this party gives j for its other holders that
    are not j's neighbours, sealed under the pair's channel key."""
    entry, pack = KEY_ENTRY.pack, _PLAIN.pack
    plain = [pack(me, j, xj, sk, b, s_pk) + b"".join([entry(h, key) for h, key in handed[j].items()])
             for j, xj, sk, b in zip(live, xs, sk_values, b_values)]
    return SealedShares(session, *bundle(zip(live, seal_each([channel[j] for j in live], plain, session=session,
                                                            sender=me, receivers=live))))


def _open_shares(relayed: RelayedShares, senders: list[int], channel: dict[int, bytes],
                 relayed_keys: dict[int, bytes], neighbours: Neighbourhoods, me: int, near: set[int], session: str
                 ) -> tuple[dict[int, tuple[int, bytes, bytes]], dict[int, bytes], dict[int, bytes]]:
    """Round 2: open the shares relayed to party ``me`` (``senders``: ``relayed.senders`` as a
    list; ``near``: the party's neighbours) and check each against what its sender must have
    sealed (addressing, abscissa, the masking key relayed in round 0, the view keys for its other
    holders only).  Returns the shares held per sender (x, s_sk share, b share), the senders'
    masking keys s_pk, and the MAC keys this party shares with its 2-hop peers that are not
    neighbours (:func:`~parties.secure.views.combined_keys`)."""
    held: dict[int, tuple[int, bytes, bytes]] = {}
    peer_masks: dict[int, bytes] = {}  # s_pk of the senders, authenticated by their AEAD channel
    given: dict[int, list[tuple[int, bytes]]] = {}  # 2-hop peer -> [(owner, key it handed us)]
    size, entry_size, unpack, entries = _PLAIN.size, KEY_ENTRY.size, _PLAIN.unpack_from, KEY_ENTRY.iter_unpack
    for j, blob in zip(senders, blobs(relayed.ends, relayed.ciphertexts)):
        plain_j = open_sealed(channel[j], blob, session=session, sender=j, receiver=me)
        extra = len(plain_j) - size
        if extra < 0 or extra % entry_size:
            raise MessageError(f"party {me}: sealed share from party {j} has {len(plain_j)} bytes")
        owner, holder, xj, sk_y, b_y, s_pk = unpack(plain_j)
        if owner != j or holder != me or xj != abscissa(neighbours, j, me):
            raise MessageError(f"party {me}: sealed share from party {j} is addressed inconsistently")
        if s_pk != relayed_keys[j]:
            raise MessageError(
                f"party {me}: the masking key relayed for party {j} is not the one party {j} sealed: "
                "key substitution detected")
        peer_masks[j] = s_pk
        held[j] = (xj, sk_y, b_y)
        if not extra:
            continue
        handed_j = list(entries(plain_j[size:]))
        others = neighbours[j]
        hs = [h for h, _ in handed_j]
        if (len(set(hs)) != len(hs) or me in hs or not near.isdisjoint(hs)
                or any([others[bisect_left(others, h)] != h if h <= others[-1] else True for h in hs])):
            raise MessageError(f"party {me}: the view keys sealed by party {j} are not for its other holders")
        for h, key in handed_j:
            keys_h = given.get(h)
            if keys_h is None:
                given[h] = [(j, key)]
            else:
                keys_h.append((j, key))
    return held, peer_masks, combined_keys(given)


class MaskedEngine(SecureSumEngine):
    """Bonawitz et al. 2017 secure aggregation (pairwise masks, Shamir recovery, AEAD relay under
    the PKI's static keys, MAC'd survivor views).

    Parameters
    ----------
    topology, degree, seed
        Neighbour graph (see :mod:`parties.secure.topology`); default ``"complete"``
        (Bonawitz).  ``"regular"`` / ``"harary"`` with ``degree = k`` give the sparse variant
        (Bell et al. 2020) that scales to tens of thousands of parties.
    threshold
        Shamir threshold t: a strict majority of the smallest holder set,
        (min deg + 1) / 2 < t <= min deg + 1 (on the complete graph: t > n / 2 of the roster);
        default floor((min deg + 1) / 2) + 1.  It is the party's policy: each party builds its
        own context from its own engine, whatever the controller runs.
    round_timeout, max_value
        See :class:`SecureSumEngine`.  The controller waits ``round_timeout`` per round and
        treats the parties still missing as dropouts; parties wait twice as long for the
        controller (which may itself be waiting for stragglers).
    """

    name = "masked"
    signs = True

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
        if 2 * t <= smallest:
            raise ConfigurationError(
                f"threshold must be a strict majority of the smallest Shamir holder set "
                f"(t > {smallest} / 2, i.e. t >= {smallest // 2 + 1}), got {t}: with fewer, a controller "
                "that shows holders different survivor sets can collect both secrets of one party"
            )
        if network is not None:
            for p in parties:
                if not (network.topology.allowed(p, CONTROLLER) and network.topology.allowed(CONTROLLER, p)):
                    raise ConfigurationError(f"the masked engine needs a link between party {p} and the controller")
        return SecureSumContext(session, parties, length, self.max_value,
                                ring_modulus(n, self.max_value), neighbours, relay=True, threshold=t)

    # ------------------------------------------------------------------ party
    async def party(self, ep: Endpoint, vector: np.ndarray, ctx: SecureSumContext, *,
                    signer: Signer | None = None, min_contributors: int = 2) -> None:
        """Rounds 0-4 of Bonawitz et al. for party ``ep.actor`` (``signer``: its PKI key)."""
        # a party waits up to two rounds: the controller itself may wait a full round_timeout
        # for stragglers before it answers
        ring, me, s, timeout = ctx.ring, ep.actor, ctx.session, 2 * self.round_timeout
        registry = ctx.registry
        if signer is None or not isinstance(registry, KeyRegistry) or signer.party != me:
            raise ConfigurationError(
                f"party {me}: the masked engine needs the party's PKI signer and the key registry "
                "(parties.secure.pki.setup_pki at set-up)")
        x = as_ring_vector(vector, ctx, ring)
        nbrs = ctx.neighbours[me]
        if len(nbrs) + 1 < min_contributors:
            raise SecureSumAborted(
                f"party {me}: its neighbourhood holds {len(nbrs) + 1} parties, below its min_roster = "
                f"{min_contributors}: it could never check that enough parties contribute",
                survivors=len(nbrs) + 1, threshold=min_contributors)
        s_keys = KeyPair.generate()
        await ep.send(CONTROLLER, PublicKeys(s, (s_keys.public,)), phase=PHASES[0])

        # round 1: share b_i and s_sk_i among the live holders, sealed under keys agreed with
        # their registered static keys (authenticated by the PKI, nothing relayed to check)
        directory = await recv_session(ep, KeyDirectory, session=s, phase=PHASES[0], timeout=timeout)
        live = tuple(directory.parties.tolist())
        if directory.session != s or not set(live) <= set(nbrs):
            raise MessageError(f"party {me}: key directory lists parties that are not its neighbours")
        if directory.signatures:
            raise MessageError(f"party {me}: key directory entries must hold one 32-byte masking key s_pk")
        if len(live) + 1 < min_contributors:  # the party's own policy, from what it knows
            raise SecureSumAborted(
                f"party {me}: only {len(live) + 1} parties of its neighbourhood advertised keys, below "
                f"its min_roster = {min_contributors}: it shares nothing",
                survivors=len(live) + 1, threshold=min_contributors)
        relayed_keys = {j: directory.key(k) for k, j in enumerate(live)}
        self_mask = fresh_seed()
        neighbours = ctx.neighbours
        xs = [abscissa(neighbours, me, h) for h in live]
        if len(xs) + 1 < ctx.threshold:
            raise SecureSumAborted(
                f"party {me}: only {len(xs) + 1} live Shamir holders, threshold is {ctx.threshold}",
                survivors=len(xs) + 1, threshold=ctx.threshold)
        own_x = abscissa(neighbours, me, me)
        sk_values, b_values = share_values((s_keys.private_bytes(), self_mask), [*xs, own_x], ctx.threshold)
        own_b = b_values[-1]
        # one X25519 agreement per neighbour gives the AEAD channel key and the consistency
        # round's MAC key of the pair; my holders that are not neighbours of each other get a
        # key from me (sealed with their shares) for the same purpose
        channel: dict[int, bytes] = {}
        view_keys: dict[int, bytes] = {}
        for j in live:
            channel[j], view_key = derive_keys(signer.exchange(registry, j), purposes=_PAIR_PURPOSES,
                                               session=s, a=me, b=j)
            view_keys[j] = view_key[:VIEW_KEY_BYTES]
        await ep.send(CONTROLLER, _sealed_shares(me, s, live, xs, sk_values, b_values, s_keys.public, channel,
                                                 pair_keys(live, neighbours)), phase=PHASES[1])
        # (what only round 1 needed is dropped here, and round 2's plaintexts and handed keys
        # die inside _open_shares: a party keeps what the later rounds use while it waits, not
        # its messages)
        del directory, sk_values, b_values, xs

        # round 2: open the shares relayed to us; mask with exactly their senders
        relayed = await recv_session(ep, RelayedShares, session=s, phase=PHASES[1], timeout=timeout)
        senders = relayed.senders.tolist()
        if relayed.session != s or not set(senders) <= set(live):
            raise MessageError(f"party {me}: relayed shares come from parties outside its live neighbours")
        held, peer_masks, combined = _open_shares(relayed, senders, channel, relayed_keys, neighbours, me, set(nbrs), s)
        del relayed, relayed_keys, channel
        view_keys.update(combined)
        # (the vectors are dropped once sent: a party keeps O(k) bytes, not O(L), while it waits)
        y = _masked_input(ring, x, self_mask, s_keys.private, {j: peer_masks[j] for j in held}, s, me)
        del x
        await ep.send(CONTROLLER, MaskedInput(s, y), phase=PHASES[2])
        del y

        # round 3: state the survivor set we are told (one view per session), MAC'd for every
        # party that may need it: the other holders of every owner we hold shares of
        told = await recv_session(ep, SurvivorSet, session=s, phase=PHASES[3], timeout=timeout)
        told_ids = tuple(told.survivors.tolist())
        view = frozenset(told_ids)
        holders = set(nbrs) | {me}
        if told.session != s or me not in view or not view <= holders:
            raise MessageError(f"party {me}: survivor set must contain the party and only its Shamir holders")
        # the contributors the party can vouch for: itself and the survivors that sealed it their
        # shares (a survivor the controller invents sealed nothing; one that dropped after sharing
        # leaves masks only its s_sk removes, which no honest holder told "survived" reveals)
        known = len(view & (held.keys() | {me}))
        if known < min_contributors:
            raise SecureSumAborted(
                f"party {me}: the survivor set it is told holds {known} parties that shared with it "
                f"({len(view)} claimed), below its min_roster = {min_contributors}: it states no view "
                "and reveals no share",
                survivors=known, threshold=min_contributors)
        prefix = statement_prefix(s)
        targets = sorted(view_keys)
        tags = view_tags(view_keys, prefix, me, targets, pack_ids(told_ids))
        await ep.send(CONTROLLER, SurvivorTags(s, id_vector(targets), tags), phase=PHASES[3])

        # round 4: check the stated views, then reveal b-shares of survivors, s_sk-shares of the dropped
        request = await recv_session(ep, UnmaskRequest, session=s, phase=PHASES[4], timeout=timeout)
        if request.session != s:
            raise MessageError(f"party {me}: unmask request of another session")
        check_consistency(request, view_keys, ctx, me, view, [me, *held], prefix)
        owners = sorted([me, *held])
        which, absc, values = bytearray(), [], []
        for o in owners:
            if o in view:  # survived: its self mask is removed
                which.append(SECRET_SELF_MASK)
                x_o, y_o = (own_x, own_b) if o == me else (held[o][0], held[o][2])
            else:  # dropped after sharing: its pairwise masks are removed
                which.append(SECRET_MASK_KEY)
                x_o, y_o = held[o][0], held[o][1]
            absc.append(x_o)
            values.append(y_o)
        await ep.send(CONTROLLER, UnmaskShares(s, id_vector(owners), bytes(which), id_vector(absc), b"".join(values)),
                      phase=PHASES[4])

    # ------------------------------------------------------------------ controller
    async def controller(self, ep: Endpoint, ctx: SecureSumContext) -> SumOutcome:
        """Relay keys and shares, collect masked inputs, run the consistency round, unmask the sum."""
        net, s, timeout, ring, t = ep.network, ctx.session, self.round_timeout, ctx.ring, ctx.threshold
        minimum = max(t, 2)

        rejected: set[int] = set()  # parties whose message of a round was rejected (not silent)

        def noting(check: Callable[[int, _M], str | None]) -> Callable[[int, _M], str | None]:
            def checked(src: int, msg: _M) -> str | None:
                reason = check(src, msg)
                if reason is not None:
                    rejected.add(src)
                return reason
            return checked

        def abort(stage: str, alive: set[int]) -> SecureSumAborted:
            message = (f"masked secure sum aborted at {stage}: {len(alive)} of {ctx.n} parties left, the "
                       f"threshold needs at least {minimum} (t = {t}, and never a sum of one party)")
            # crashed (known to the network) or rejected parties (by a round's check, or at delivery:
            # a frame that does not decode) are genuine dropouts; the others missed a round's
            # deadline: silent, or late (a busy machine, a slow secure sum)
            undelivered = {r.src for r in ep.rejections() if r.phase in PHASES}
            late = set(ctx.parties) - alive - set(net.crashed) - rejected - undelivered
            if late:
                missing = ctx.n - len(alive)
                helps = ("a larger round_timeout or fewer parties" if self.topology != "complete"  # sparse already
                         else "a larger round_timeout, the sparse engine (masked-sparse) or fewer parties")
                message += (f"; {len(late)} of the {missing} missing parties did not answer within the "
                            f"round timeout (round_timeout = {timeout:g} s per round: they dropped or were "
                            f"late); if they were late, {helps} help")
            return SecureSumAborted(message, survivors=len(alive), threshold=minimum)

        await controller_phase(net, PHASES[0])
        # a well-formed message a party cannot have sent honestly is rejected (counted against
        # its sender) and the party is treated as a dropout of that round: the sum goes on
        # over the others, exactly as when it fell silent
        keys = await collect(ep, ctx.parties, kind=PublicKeys, session=s, phase=PHASES[0],
                             timeout=timeout, partial=True, invalid=noting(_bad_keys))
        u1 = set(keys)
        if len(u1) < minimum:
            raise abort("key advertisement", u1)
        directory = {}
        for p in sorted(u1):
            live = tuple(j for j in ctx.neighbours[p] if j in u1)
            if len(live) + 1 < t:
                raise SecureSumAborted(
                    f"masked secure sum aborted: party {p} has {len(live) + 1} live Shamir "
                    f"holders, threshold t = {t}", survivors=len(live) + 1, threshold=t)
            directory[p] = live
        order = spread(sorted(u1))
        await ep.send_each(order, [KeyDirectory(s, id_vector(live), b"".join([keys[j].keys[0] for j in live]))
                                   for live in map(directory.__getitem__, order)], phase=PHASES[0])

        await controller_phase(net, PHASES[1])
        def bad_recipients(src: int, msg: SealedShares) -> str | None:
            if tuple(msg.recipients.tolist()) != directory[src]:
                return f"party {src} sealed shares for other parties than its live neighbours"
            return None

        inbox: dict[int, list[tuple[int, bytes]]] = {p: [] for p in u1}

        def relay(src: int, msg: SealedShares) -> None:  # relayed as bytes: sliced, never opened
            for dst, blob in zip(msg.recipients.tolist(), blobs(msg.ends, msg.ciphertexts)):
                inbox[dst].append((src, blob))

        sealed = await collect(ep, sorted(u1), kind=SealedShares, session=s, phase=PHASES[1],
                               timeout=timeout, partial=True, invalid=noting(bad_recipients), accept=relay)
        u2 = set(sealed)
        if len(u2) < minimum:
            raise abort("key sharing", u2)
        relayed: dict[int, tuple[int, ...]] = {}
        bundles = []
        order = spread(sorted(u2))
        for p in order:
            entries = inbox[p]
            entries.sort()  # by sender (a sender seals once for each recipient)
            relayed[p] = tuple([src for src, _ in entries])
            bundles.append(RelayedShares(s, *bundle(entries)))
        inbox.clear()  # (the ciphertexts travel in the bundles now)
        await ep.send_each(order, bundles, phase=PHASES[1])
        bundles.clear()

        await controller_phase(net, PHASES[2])
        if ring.modulus != 1 << (8 * ring.element_bytes):  # pragma: no cover - ring_modulus gives 2^32 or 2^64
            raise ConfigurationError(f"the masked engine computes in Z_(2^32) or Z_(2^64), got {ring}")
        # M = 2^(bits of the dtype): the dtype's wrap-around is the reduction, so add in place
        total = np.zeros(ctx.length, dtype=ring.dtype)

        def bad_vector(src: int, msg: MaskedInput) -> str | None:
            try:
                checked_vector(msg.values, ring, ctx, -1, src)
            except MessageError as exc:
                return str(exc)
            return None

        def add(src: int, msg: MaskedInput) -> None:  # (checked by bad_vector)
            np.add(total, msg.values, out=total)

        masked = await collect(ep, sorted(u2), kind=MaskedInput, session=s, phase=PHASES[2],
                               timeout=timeout, partial=True, invalid=noting(bad_vector), accept=add)
        u3 = set(masked)
        if len(u3) < minimum:
            raise abort("masked input collection", u3)
        dropped = u2 - u3

        await controller_phase(net, PHASES[3])
        order = spread(sorted(u3))
        views = {v: survivor_view(ctx, v, u3) for v in order}
        await ep.send_each(order, [SurvivorSet(s, id_vector(views[v])) for v in order], phase=PHASES[3])
        complete = isinstance(ctx.neighbours, CompleteNeighbourhoods)

        def expected(w: int) -> set[int]:
            """Whom w MACs its view for: its live neighbours, and the holders of the owners it
            holds that are not its neighbours (they got a key from the owner)."""
            if complete:
                return set(directory[w])
            far = set().union(*map(directory.__getitem__, relayed[w]))
            far.difference_update(ctx.neighbours[w])
            far.discard(w)
            far.update(directory[w])
            return far

        def bad_tags(src: int, msg: SurvivorTags) -> str | None:  # (targets: increasing, by validation)
            if set(msg.targets.tolist()) != expected(src):
                return f"party {src} sent view tags for other parties than those it shares keys with"
            return None

        tagged = await collect(ep, sorted(u3), kind=SurvivorTags, session=s, phase=PHASES[3],
                               timeout=timeout, partial=True, invalid=noting(bad_tags))
        u4 = set(tagged)
        if len(u4) < minimum:
            raise abort("consistency check", u4)

        await controller_phase(net, PHASES[4])
        for block in unmask_requests(ctx.session, views, tagged, order=spread):
            await ep.send_each([v for v, _ in block], [request for _, request in block], phase=PHASES[4])
        unmasking = Unmasking(ctx, total, set(u3), relayed, keys, dropped, u4)  # (the answers wait in the mailbox)
        await collect(ep, sorted(u4), kind=UnmaskShares, session=s, phase=PHASES[4],
                      timeout=timeout, partial=True, accept=unmasking.take)
        return SumOutcome(to_counts(unmasking.finish(masked)), tuple(sorted(u3)))

    # ------------------------------------------------------------------ cost
    def cost(self, ctx: SecureSumContext) -> TrafficCost:
        """Fault-free: 5 messages per party (masking key, sealed shares, masked input, survivor
        tags, unmask shares), 4 per party from the controller (key directory, relayed shares,
        survivor set, unmask request with the views of the party's 2-hop neighbourhood, MAC'd
        for it); 5 rounds.  Rounds 3-4 are the consistency check."""
        s, L = ctx.session, ctx.length
        key, share = bytes(32), bytes(SHARE_BYTES)
        masked = encoded_size(MaskedInput(s, np.zeros(L, dtype=ctx.ring.dtype)))
        advertise = encoded_size(PublicKeys(s, (key,)))
        blob = _PLAIN.size + AEAD_OVERHEAD  # + one key entry per other holder that is no neighbour

        def ids(k: int) -> np.ndarray:
            return np.arange(1, k + 1, dtype=np.uint32)

        def affine(size: Callable[[int], int]) -> tuple[int, int]:  # encoded sizes are affine in the count
            base = size(0)
            return base, size(1) - base

        sealed = affine(lambda k: encoded_size(SealedShares(s, *bundle((i, b"") for i in range(k)))))
        relayed_msg = affine(lambda k: encoded_size(RelayedShares(s, *bundle((i, b"") for i in range(k)))))
        directory = affine(lambda k: encoded_size(KeyDirectory(s, ids(k), key * k)))
        survivor_set = affine(lambda k: encoded_size(SurvivorSet(s, ids(k))))
        unmask = affine(lambda k: encoded_size(UnmaskShares(s, ids(k), bytes(k), ids(k), share * k)))
        tags = affine(lambda k: encoded_size(SurvivorTags(s, ids(k), bytes(TAG_BYTES * k))))
        one = np.ones(1, dtype=np.uint32)  # one view of one cell: request sizes grow by a uint32 per cell
        request = affine(lambda k: encoded_size(UnmaskRequest(s, ids(1), one, ids(k), np.zeros(k, dtype=np.uint32),
                                                              bytes(TAG_BYTES * k))))
        cell = encoded_size(UnmaskRequest(s, ids(2), one * 2, ids(0), ids(0), b"")) - request[0]

        complete = isinstance(ctx.neighbours, CompleteNeighbourhoods)
        near = {} if complete else {p: frozenset(ctx.neighbours[p]) for p in ctx.parties}
        # H(p), numbered once per distinct set (equal views are sent once): view[p] -> its number
        numbers: dict[frozenset[int], int] = {}
        view = {p: numbers.setdefault(nb | {p}, len(numbers)) for p, nb in near.items()}
        view_size = [len(h) for h in numbers]
        sent: dict[int, Counts] = {}
        ctrl = [0, 0]
        for p in ctx.parties:
            nb = ctx.neighbours[p]
            k = len(nb)
            if complete:  # every holder pair is adjacent: no keys handed on; one shared view of all n
                handed_out = handed_in = 0
                targets, views = k, [k + 1]
            else:
                mine = near[p]
                around = [near[j] for j in nb]
                common = sum([len(mine & n_j) for n_j in around])
                handed_out = k * (k - 1) - common  # per j: my other holders that are not j's neighbours
                handed_in = sum([len(n_j) for n_j in around]) - k - common  # per j: j's other holders not mine
                second = set().union(*around)
                second -= mine
                second.discard(p)
                targets = k + len(second)
                views = [view_size[v] for v in {view[w] for w in (*nb, *second)}]
            entry = KEY_ENTRY.size
            party_bytes = (advertise + sealed[0] + k * (sealed[1] + blob) + entry * handed_out + masked
                           + tags[0] + targets * tags[1] + unmask[0] + (k + 1) * unmask[1])
            sent[p] = Counts(5, party_bytes)
            ctrl[0] += 4
            ctrl[1] += (directory[0] + k * directory[1] + relayed_msg[0] + k * (relayed_msg[1] + blob)
                        + entry * handed_in + survivor_set[0] + (k + 1) * survivor_set[1]
                        + request[0] + targets * request[1] + (sum(views) - 1 + len(views) - 1) * cell)
        sent[CONTROLLER] = Counts(*ctrl)
        degrees = sorted({len(ctx.neighbours[p]) for p in ctx.parties})
        return TrafficCost(
            sent=MappingProxyType(sent), rounds=5,
            formula=(f"per party 5 messages: 1 masking key, deg(i) = {degrees} sealed share pairs "
                     "(with the pairwise view keys of the owner's other holders that are no neighbours), "
                     f"L = {L} masked cells, one {TAG_BYTES}-byte view tag per party of its 2-hop "
                     "neighbourhood, deg(i) + 1 Shamir shares; controller 4 per party, the last carrying "
                     "the tagged views of the party's 2-hop neighbourhood; O(L + k^2) per party, "
                     "O(n (L + k^2)) total (complete graph: O(n) tags per party)"),
        )


def spread(ids: list[int]) -> list[int]:
    """``ids`` in stride order (every ⌊√n⌋-th id, then the next stride, ...): the order in which
    the controller sends a round's messages, so that each contiguous range of the roster (the
    parties of one worker process) gets its share from the start of the loop instead of
    waiting for the ranges before it.  Any order gives the same messages and the same sum."""
    step = max(1, math.isqrt(len(ids)))
    return [ids[i] for first in range(step) for i in range(first, len(ids), step)]


def _bad_keys(src: int, msg: PublicKeys) -> str | None:
    """Why an advertisement of keys is unusable (None: it is usable)."""
    if len(msg.keys) != 1 or msg.signature:
        return f"party {src} must advertise its masking key s_pk alone"
    return None
