"""Pairwise-mask secure aggregation with dropout recovery (engine ``masked``).

Bonawitz et al. 2017 ("Practical Secure Aggregation for Privacy-Preserving Machine Learning",
Section 4 / Figure 4, with the active-adversary additions of Section 6: authenticated keys and
the consistency check; the keys authenticated by static Diffie-Hellman and the views by MACs
rather than signatures, see below), optionally restricted to a sparse neighbour graph as in
Bell et al. 2020.
Party i, neighbours N(i), Shamir holders H(i) = N(i) + {i}; every party has long-term keys
registered at set-up in a PKI the controller cannot change (:mod:`parties.secure.pki`): an
X25519 static key (no Ed25519 signing key: nothing here is signed, ``pki_signing`` False)::

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

import struct
from bisect import bisect_left
from functools import lru_cache
from itertools import chain
from secrets import token_bytes
from typing import Any, NamedTuple

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from mprr.errors import ConfigurationError, MessageError, SecureSumAborted
from parties.topology import CONTROLLER
from parties.traffic import Counts
from parties.transport import Endpoint, Transport
from parties.secure.crypto import AEAD_OVERHEAD, NONCE_BYTES, KeyPair, agree_each, derive_keys_each, open_each, seal_each
from parties.secure.context import SecureSumContext
from parties.secure.cost import TrafficCost, encoded_size
from parties.secure.drive import drive
from parties.secure.engine import SecureSumEngine, SumOutcome
from parties.secure.graph import ring_modulus
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
from parties.secure.program import Expect, Program, Send, controller_message
from parties.secure.ring import ZMod
from parties.secure.shamir import SHARE_BYTES, share_values
from parties.secure.topology import TOPOLOGIES, CompleteNeighbourhoods, Neighbourhoods, build_neighbourhoods
from parties.secure.unmasking import abscissa, add_masks
from parties.secure.values import as_ring_vector
from parties.secure.masked_server import PHASES, ControllerProgram, Shortfall, spread
from parties.secure.views import (
    KEY_ENTRY,
    VIEW_KEY_BYTES,
    check_consistency,
    combined_keys,
    pack_ids,
    pair_keys,
    statement_prefix,
    view_tags,
)

__all__ = ["PHASES", "MaskedEngine", "spread"]

_PLAIN = struct.Struct(f"<III{SHARE_BYTES}s{SHARE_BYTES}s32s")  # owner, holder, x, s_sk share, b share, s_pk
_PAIR_PURPOSES = ("channel", "view")  # the keys a neighbour pair derives from its static agreement


def _masked_input(ring: ZMod, x: np.ndarray, self_mask: bytes, s_sk: X25519PrivateKey,
                  peers: dict[int, bytes], session: str, me: int) -> np.ndarray:
    """Round 2: y = x + PRG(b) + sum_{j > me} PRG(s_{me,j}) - sum_{j < me} PRG(s_{me,j}) (mod M)
    over the ``peers`` (id -> s_pk) whose shares this party holds.  ``x`` is the party's own copy
    (:func:`~parties.secure.values.as_ring_vector`): in the ring's dtype, it is masked in place."""
    if ring.modulus != 1 << (8 * ring.element_bytes):  # pragma: no cover - ring_modulus gives 2^32 or 2^64
        raise ConfigurationError(f"the masked engine computes in Z_(2^32) or Z_(2^64), got {ring}")
    # M = 2^(bits of the dtype): the dtype's wrap-around is the reduction, so add in place
    acc = x if x.dtype == ring.dtype else x.astype(ring.dtype)
    ids = list(peers)
    seeds = agree_each(s_sk, list(peers.values()), purpose="mask", session=session, me=me, peers=ids)
    add_masks(acc, [self_mask, *seeds], [False, *[me > j for j in ids]])
    return acc


def _open_shares(relayed: RelayedShares, senders: list[int], channel: dict[int, bytes],
                 relayed_keys: dict[int, bytes], neighbours: Neighbourhoods, me: int, near: set[int], session: str,
                 crypto: _Cryptography
                 ) -> tuple[dict[int, tuple[int, bytes, bytes]], dict[int, bytes], list[_Handed]]:
    """Round 2: open the shares relayed to party ``me`` (``senders``: ``relayed.senders`` as a
    list; ``near``: the party's neighbours) and check each against what its sender must have
    sealed (addressing, abscissa, the masking key relayed in round 0, the view keys for its other
    holders only).  Returns the shares held per sender (x, s_sk share, b share), the senders'
    masking keys s_pk, and the keys each sender handed this party for 2-hop peers that are not
    neighbours, as (sender, peers, keys) (:func:`~parties.secure.views.combined_keys` makes their
    MAC keys)."""
    held: dict[int, tuple[int, bytes, bytes]] = {}
    peer_masks: dict[int, bytes] = {}  # s_pk of the senders, authenticated by their AEAD channel
    handed: list[_Handed] = []
    size, entry_size, unpack = _PLAIN.size, KEY_ENTRY.size, _PLAIN.unpack_from
    complete = type(neighbours) is CompleteNeighbourhoods
    opened = crypto.open_each([channel[j] for j in senders], blobs(relayed.ends, relayed.ciphertexts), session,
                              senders, me)
    for j, plain_j in zip(senders, opened):
        extra = len(plain_j) - size
        if extra < 0 or extra % entry_size:
            raise MessageError(f"party {me}: sealed share from party {j} has {len(plain_j)} bytes")
        owner, holder, xj, sk_y, b_y, s_pk = unpack(plain_j)
        holders_j = neighbours[j] if extra or not complete else ()
        expected = (abscissa(neighbours, j, me) if complete  # (abscissa, inlined on a sparse graph)
                    else bisect_left(holders_j, me) + 1 + (j < me))
        if owner != j or holder != me or xj != expected:
            raise MessageError(f"party {me}: sealed share from party {j} is addressed inconsistently")
        if s_pk != relayed_keys[j]:
            raise MessageError(
                f"party {me}: the masking key relayed for party {j} is not the one party {j} sealed: "
                "key substitution detected")
        peer_masks[j] = s_pk
        held[j] = (xj, sk_y, b_y)
        if not extra:
            continue
        flat = _key_entries(extra // entry_size).unpack_from(plain_j, size)  # (h, key, h, key, ...)
        peers = flat[0::2]
        distinct = set(peers)
        if (len(distinct) != len(peers) or me in distinct or not near.isdisjoint(distinct)
                or not distinct.issubset(holders_j)):
            raise MessageError(f"party {me}: the view keys sealed by party {j} are not for its other holders")
        handed.append((j, peers, flat[1::2]))
    return held, peer_masks, handed


_Handed = tuple[int, tuple[int, ...], tuple[bytes, ...]]
"""The view keys one owner handed a party: (owner, 2-hop peers, their keys)."""


@lru_cache(maxsize=64)
def _key_entries(count: int) -> struct.Struct:
    """``count`` :data:`~parties.secure.views.KEY_ENTRY` entries in a row, unpacked by one call."""
    return struct.Struct("<" + KEY_ENTRY.format.lstrip("<") * count)


@lru_cache(maxsize=64)
def _plain_with(count: int) -> struct.Struct:
    """A sealed plaintext: :data:`_PLAIN` then ``count`` key entries (:func:`_key_entries`),
    packed by one call."""
    return struct.Struct(_PLAIN.format + KEY_ENTRY.format.lstrip("<") * count)


class _Extent(NamedTuple):
    """How far a sparse graph's neighbourhoods reach, as the masked messages see it: the
    smallest and largest degree d_p, 2-hop neighbourhood |T_p| (T_p: the parties that share a
    Shamir owner with p, p excluded), and number of view keys sealed with one share (the
    holders of its sender that its reader is not adjacent to), and whether every party's
    holder set N(w) + {w} is its own (then every author's view differs)."""

    degree: tuple[int, int]
    two_hop: tuple[int, int]
    sealed_keys: tuple[int, int]
    distinct_holders: bool


_EXTENTS: dict[int, tuple[Neighbourhoods, _Extent]] = {}  # id(graph) -> (graph, extent): the graphs are memoized


def _extent(parties: tuple[int, ...], neighbours: Neighbourhoods) -> _Extent:
    """:class:`_Extent` of a sparse graph, by array operations over its adjacency padded to the
    largest degree (memoized per graph object: the warning's bounds read it twice)."""
    known = _EXTENTS.get(id(neighbours))
    if known is not None and known[0] is neighbours:
        return known[1]
    ids = np.asarray(sorted(parties), dtype=np.int64)
    n = ids.shape[0]
    degrees = np.fromiter((len(neighbours[p]) for p in ids.tolist()), dtype=np.int64, count=n)
    width = int(degrees.max())
    flat = np.searchsorted(ids, np.fromiter(chain.from_iterable(neighbours[p] for p in ids.tolist()),
                                            dtype=np.int64, count=int(degrees.sum())))
    adjacency = np.full((n + 1, width), n, dtype=np.int64)  # row n, and value n: no party (padding)
    rows = np.repeat(np.arange(n), degrees)
    adjacency[rows, np.arange(flat.shape[0]) - np.repeat(np.cumsum(degrees) - degrees, degrees)] = flat
    own = adjacency[:n]
    second = adjacency[own]  # (n, width, width): the neighbours of each neighbour
    ball = np.sort(np.concatenate([own, second.reshape(n, -1)], axis=1), axis=1)
    fresh = np.ones(ball.shape, dtype=bool)
    fresh[:, 1:] = ball[:, 1:] != ball[:, :-1]
    two_hop = (fresh & (ball != n) & (ball != np.arange(n)[:, None])).sum(axis=1)
    # the view keys p seals for neighbour j: its neighbours x != j that j is not adjacent to
    adjacent = (own[:, None, :, None] == second[:, :, None, :]).any(axis=3) | (own[:, None, :] == own[:, :, None])
    sealed = ((own[:, None, :] != n) & ~adjacent).sum(axis=2)[own != n]
    holders = np.sort(np.concatenate([own, np.arange(n)[:, None]], axis=1), axis=1)
    distinct = np.unique(holders, axis=0).shape[0] == n
    extent = _Extent((int(degrees.min()), width), (int(two_hop.min()), int(two_hop.max())),
                     (int(sealed.min()), int(sealed.max())), bool(distinct))
    if len(_EXTENTS) >= 4:
        _EXTENTS.clear()
    _EXTENTS[id(neighbours)] = (neighbours, extent)
    return extent


def _bounds(ctx: SecureSumContext, *, largest: bool) -> TrafficCost:
    """Bounds of the traffic of a fault-free run, every message sized by the codec, no program run.

    In a fault-free run every party sends 5 messages (:class:`PublicKeys`,
    :class:`SealedShares`, :class:`MaskedInput`, :class:`SurvivorTags`, :class:`UnmaskShares`)
    and the controller 4 to each (:class:`KeyDirectory`, :class:`RelayedShares`,
    :class:`SurvivorSet`, :class:`UnmaskRequest`): the message counts are exact.  Their sizes
    grow with party p's degree d_p (its keys, ciphertexts, survivors and shares), with the view
    keys each ciphertext carries (none on the complete graph), and with p's 2-hop neighbourhood
    T_p (its tags, and the views it is sent: one per author in T_p, equal views once, each of
    d_w + 1 parties; one view on the complete graph) (:class:`_Extent`).  Every party sized
    with the smallest of each (``largest`` False) bounds the run from below, with the largest
    from above."""
    s, n, neighbours = ctx.session, ctx.n, ctx.neighbours
    if isinstance(neighbours, CompleteNeighbourhoods):  # every party alike: the bounds are the cost
        d, entries, targets, views = n - 1, 0, n - 1, 1
    else:
        extent = _extent(ctx.parties, neighbours)
        pick = max if largest else min
        d, entries, targets = pick(extent.degree), pick(extent.sealed_keys), pick(extent.two_hop)
        views = targets if extent.distinct_holders or largest else 1
    blob = AEAD_OVERHEAD + _PLAIN.size + KEY_ENTRY.size * entries
    ends = id_vector(range(blob, blob * d + 1, blob))
    cells = d + 1  # parties in a view: a holder set
    party = (encoded_size(PublicKeys(s, (bytes(32),))) + encoded_size(SealedShares(s, id_vector(range(d)), ends,
                                                                                   bytes(blob * d)))
             + encoded_size(MaskedInput(s, _zeros(ctx.ring.dtype.str, ctx.length)))
             + encoded_size(SurvivorTags(s, id_vector(range(targets)), bytes(TAG_BYTES * targets)))
             + encoded_size(UnmaskShares(s, id_vector(range(d + 1)), bytes(d + 1), id_vector(range(1, d + 2)),
                                         bytes(SHARE_BYTES * (d + 1)))))
    controller = (encoded_size(KeyDirectory(s, id_vector(range(d)), bytes(32 * d)))
                  + encoded_size(RelayedShares(s, id_vector(range(d)), ends, bytes(blob * d)))
                  + encoded_size(SurvivorSet(s, id_vector(range(d + 1))))
                  + encoded_size(UnmaskRequest(s, id_vector([0] * (views * cells)),
                                               id_vector(range(cells, views * cells + 1, cells)),
                                               id_vector(range(targets)), id_vector([0] * targets),
                                               bytes(TAG_BYTES * targets))))
    sent = dict.fromkeys(ctx.parties, Counts(len(PHASES), party))
    sent[CONTROLLER] = Counts((len(PHASES) - 1) * n, n * controller)
    which, degree = ("at most (upper bound", "largest") if largest else ("at least (lower bound", "smallest")
    return TrafficCost(sent=sent, rounds=len(PHASES), exact=False,  # (the controller marks each)
                       formula=f"{which}: {len(PHASES) * n:,} party and {(len(PHASES) - 1) * n:,} controller "
                               f"messages, every party at the {degree} degree {d}, 2-hop neighbourhood "
                               f"{targets}; masked, n = {n}, L = {ctx.length})")


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
    pki_signing = False  # (the static X25519 keys authenticate: nothing is signed)

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

    # ------------------------------------------------------------------ cost model
    def least_cost(self, ctx: SecureSumContext) -> TrafficCost:
        """A lower bound of :meth:`cost` (:meth:`SecureSumEngine.least_cost`): :func:`_bounds`
        with every party at the smallest degree."""
        return _bounds(ctx, largest=False)

    def most_cost(self, ctx: SecureSumContext) -> TrafficCost:
        """An upper bound of :meth:`cost` (:meth:`SecureSumEngine.most_cost`): :func:`_bounds`
        with every party at the largest degree."""
        return _bounds(ctx, largest=True)

    # ------------------------------------------------------------------ party
    def party_program(self, me: int, vector: np.ndarray, ctx: SecureSumContext, *,
                      signer: Signer | None = None, min_contributors: int = 2) -> Program[None]:
        """Rounds 0-4 of Bonawitz et al. for party ``me`` (``signer``: its PKI key), as a
        sans-I/O program (:mod:`parties.secure.program`).  With the context's sizing suite (the
        counting driver's, :func:`~parties.secure.engine.counted_cost`) the cryptography is
        right-sized placeholders and no PKI is needed."""
        if ctx.suite.sizing:
            return self._party(me, vector, ctx, _Cryptography(None, None), min_contributors)
        registry = ctx.registry
        if signer is None or not isinstance(registry, KeyRegistry) or signer.party != me:
            raise ConfigurationError(
                f"party {me}: the masked engine needs the party's PKI signer and the key registry "
                "(parties.secure.pki.setup_pki at set-up)")
        as_ring_vector(vector, ctx, ctx.ring)  # (checked before anything is sent; masked in round 2)
        return self._party(me, vector, ctx, _Cryptography(signer, registry), min_contributors)

    def _party(self, me: int, vector: np.ndarray, ctx: SecureSumContext, crypto: _Cryptography,
               min_contributors: int) -> Program[None]:
        """The rounds' I/O of party ``me`` (:class:`_Party` computes each round): every round
        one message from the controller, answered by one message."""
        party = _Party(me, vector, ctx, crypto, min_contributors)
        # a party waits up to two rounds: the controller itself may wait a full round_timeout
        # for stragglers before it answers
        s, timeout = ctx.session, 2 * self.round_timeout
        yield Send(CONTROLLER, party.advertise(), PHASES[0])
        expect: Expect[Any] = Expect(KeyDirectory, s, (CONTROLLER,), PHASES[0], timeout)
        yield Send(CONTROLLER, party.share_keys(controller_message(me, (yield expect), expect)), PHASES[1])
        expect = Expect(RelayedShares, s, (CONTROLLER,), PHASES[1], timeout)
        yield Send(CONTROLLER, party.mask_input(controller_message(me, (yield expect), expect)), PHASES[2])
        expect = Expect(SurvivorSet, s, (CONTROLLER,), PHASES[3], timeout)
        yield Send(CONTROLLER, party.state_view(controller_message(me, (yield expect), expect)), PHASES[3])
        expect = Expect(UnmaskRequest, s, (CONTROLLER,), PHASES[4], timeout)
        yield Send(CONTROLLER, party.unmask(controller_message(me, (yield expect), expect)), PHASES[4])

    # ------------------------------------------------------------------ controller
    def controller_program(self, ctx: SecureSumContext) -> Program[SumOutcome]:
        """Relay keys and shares, collect masked inputs, run the consistency round, unmask the
        sum (a sans-I/O program).  Too few parties left at a round raises
        :class:`~mprr.errors.SecureSumAborted`; :meth:`controller` adds what its network knows
        of the missing parties (crashed, rejected at delivery, or late)."""
        return ControllerProgram(ctx, self.round_timeout, real=not ctx.suite.sizing).run()

    async def controller(self, ep: Endpoint, ctx: SecureSumContext) -> SumOutcome:
        """:meth:`controller_program` over the controller's endpoint; an abort for too few
        parties names how many of the missing ones were only silent (neither crashed nor
        rejected), i.e. may have been late, and what helps then."""
        try:
            return await drive(ep, self.controller_program(ctx))
        except Shortfall as short:
            undelivered = {r.src for r in ep.rejections() if r.phase in PHASES}
            late = short.silent - set(ep.network.crashed) - undelivered
            if not late:
                raise SecureSumAborted(str(short), survivors=short.survivors, threshold=short.threshold) from None
            helps = ("a larger round_timeout or fewer parties" if self.topology != "complete"  # sparse already
                     else "a larger round_timeout, the sparse engine (masked-sparse) or fewer parties")
            raise SecureSumAborted(
                f"{short}; {len(late)} of the {short.missing} missing parties did not answer within the "
                f"round timeout (round_timeout = {self.round_timeout:g} s per round: they dropped or were "
                f"late); if they were late, {helps} help",
                survivors=short.survivors, threshold=short.threshold) from None


class _Cryptography:
    """A party's cryptography in the masked programs: the real primitives with its PKI key
    (``signer``), or, without one, placeholders of the same sizes where the context's suite is
    the counting driver's (:data:`~parties.secure.suite.SIZING`: no message's size depends on a
    key, a ciphertext, a tag or a share's value, only on their lengths)."""

    __slots__ = ("signer", "registry", "real")

    def __init__(self, signer: Signer | None, registry: KeyRegistry | None) -> None:
        self.signer, self.registry, self.real = signer, registry, signer is not None

    def masking_keys(self) -> tuple[KeyPair | None, bytes, bytes]:
        """A fresh masking key pair: (pair, s_pk, s_sk's raw bytes)."""
        if not self.real:
            return None, bytes(32), bytes(32)
        pair = KeyPair.generate()
        return pair, pair.public, pair.private_bytes()

    def pair_keys(self, me: int, live: tuple[int, ...], session: str) -> tuple[dict[int, bytes], dict[int, bytes]]:
        """The AEAD channel keys and the consistency round's MAC keys of ``me`` and each of its
        neighbours ``live``: one X25519 agreement of their registered static keys per pair."""
        if self.signer is None or self.registry is None:
            return dict.fromkeys(live, bytes(32)), dict.fromkeys(live, bytes(VIEW_KEY_BYTES))
        derived = derive_keys_each(self.signer.exchange_each(self.registry, live), purposes=_PAIR_PURPOSES,
                                   session=session, a=me, peers=live)
        return ({j: keys[0] for j, keys in zip(live, derived)},
                {j: keys[1][:VIEW_KEY_BYTES] for j, keys in zip(live, derived)})

    def fresh_seed(self) -> bytes:
        return fresh_seed() if self.real else bytes(32)

    def share(self, values: tuple[bytes, bytes], xs: list[int], t: int) -> tuple[list[bytes], list[bytes]]:
        if not self.real:
            return [bytes(SHARE_BYTES)] * len(xs), [bytes(SHARE_BYTES)] * len(xs)
        sk_values, b_values = share_values(values, xs, t)
        return sk_values, b_values

    def handed_keys(self, live: tuple[int, ...], neighbours: Neighbourhoods) -> dict[int, dict[int, bytes]]:
        return pair_keys(live, neighbours, draw=token_bytes if self.real else bytes)

    def seal_each(self, keys: list[bytes], plain: list[bytes], session: str, me: int,
                  live: tuple[int, ...]) -> list[bytes]:
        if not self.real:
            return [bytes(NONCE_BYTES) + p + bytes(AEAD_OVERHEAD - NONCE_BYTES) for p in plain]
        return seal_each(keys, plain, session=session, sender=me, receivers=live)

    def open_each(self, keys: list[bytes], sealed: list[bytes], session: str, senders: list[int],
                  me: int) -> list[bytes]:
        if not self.real:
            return [blob[NONCE_BYTES:len(blob) - (AEAD_OVERHEAD - NONCE_BYTES)] for blob in sealed]
        return open_each(keys, sealed, session=session, senders=senders, receiver=me)

    def combined_keys(self, handed: list[_Handed], out: dict[int, bytes]) -> dict[int, bytes]:
        if not self.real:
            out.update(dict.fromkeys([h for _, peers, _ in handed for h in peers], bytes(VIEW_KEY_BYTES)))
            return out
        return combined_keys(handed, out)

    def masked_input(self, ring: ZMod, vector: np.ndarray, ctx: SecureSumContext, self_mask: bytes,
                     s_sk: KeyPair | None, peers: dict[int, bytes], me: int) -> np.ndarray:
        if s_sk is None:  # one read-only vector of the ring's zeros shared by every party's message
            return _zeros(ring.dtype.str, ctx.length)
        return _masked_input(ring, as_ring_vector(vector, ctx, ring), self_mask, s_sk.private, peers, ctx.session, me)

    def view_tags(self, keys: dict[int, bytes], prefix: bytes, me: int, targets: list[int], view: bytes) -> bytes:
        return view_tags(keys, prefix, me, targets, view) if self.real else bytes(TAG_BYTES * len(targets))

    def check(self, request: UnmaskRequest, keys: dict[int, bytes], ctx: SecureSumContext, me: int,
              view: frozenset[int], owners: list[int], prefix: bytes) -> None:
        if self.real:
            check_consistency(request, keys, ctx, me, view, owners, prefix)


@lru_cache(maxsize=4)
def _zeros(dtype: str, length: int) -> np.ndarray:
    zeros = np.zeros(length, dtype=dtype)
    zeros.flags.writeable = False
    return zeros


class _Party:
    """One party's side of the masked sum as a state machine (sans-I/O, in the manner of h11's
    protocol objects): each round is a method that takes the controller's message of that round
    and returns the party's reply, raising the :class:`~mprr.errors.ProtocolError` it decides
    on; the party keeps only what its later rounds use (a round's plaintexts, ciphertexts and
    masked vector leave with its reply).  :meth:`MaskedEngine._party` does the rounds' I/O."""

    __slots__ = ("me", "ctx", "crypto", "min_contributors", "vector", "s_keys", "s_pk", "s_sk_raw", "live",
                 "relayed_keys", "channel", "view_keys", "self_mask", "own_x", "own_b", "held", "told_ids")

    def __init__(self, me: int, vector: np.ndarray, ctx: SecureSumContext, crypto: _Cryptography,
                 min_contributors: int) -> None:
        nbrs = ctx.neighbours[me]
        if len(nbrs) + 1 < min_contributors:
            raise SecureSumAborted(
                f"party {me}: its neighbourhood holds {len(nbrs) + 1} parties, below its min_roster = "
                f"{min_contributors}: it could never check that enough parties contribute",
                survivors=len(nbrs) + 1, threshold=min_contributors)
        self.me, self.ctx, self.crypto, self.min_contributors, self.vector = me, ctx, crypto, min_contributors, vector
        self.s_keys: KeyPair | None = None
        self.s_pk = self.s_sk_raw = b""
        self.live: tuple[int, ...] = ()
        self.relayed_keys: dict[int, bytes] = {}
        self.channel: dict[int, bytes] = {}
        self.view_keys: dict[int, bytes] = {}  # every MAC key of the consistency round (round 2 completes it)
        self.self_mask, self.own_x, self.own_b = b"", 0, b""
        self.held: dict[int, tuple[int, bytes, bytes]] = {}  # shares held per sender: (x, s_sk share, b share)
        self.told_ids: tuple[int, ...] = ()

    def advertise(self) -> PublicKeys:
        """Round 0: a fresh masking key s_pk (its private half kept for the masks)."""
        self.s_keys, self.s_pk, self.s_sk_raw = self.crypto.masking_keys()
        return PublicKeys(self.ctx.session, (self.s_pk,))

    def share_keys(self, directory: KeyDirectory) -> SealedShares:
        """Round 1: share b_i and s_sk_i among the live holders the directory lists, sealed under
        keys agreed with their registered static keys (authenticated by the PKI, nothing
        relayed to check)."""
        me, ctx, crypto, min_contributors = self.me, self.ctx, self.crypto, self.min_contributors
        s, neighbours = ctx.session, ctx.neighbours
        live = tuple(directory.parties.tolist())
        if not set(live) <= set(neighbours[me]):
            raise MessageError(f"party {me}: key directory lists parties that are not its neighbours")
        if directory.signatures:
            raise MessageError(f"party {me}: key directory entries must hold one 32-byte masking key s_pk")
        if len(live) + 1 < min_contributors:  # the party's own policy, from what it knows
            raise SecureSumAborted(
                f"party {me}: only {len(live) + 1} parties of its neighbourhood advertised keys, below "
                f"its min_roster = {min_contributors}: it shares nothing",
                survivors=len(live) + 1, threshold=min_contributors)
        if len(live) + 1 < ctx.threshold:
            raise SecureSumAborted(
                f"party {me}: only {len(live) + 1} live Shamir holders, threshold is {ctx.threshold}",
                survivors=len(live) + 1, threshold=ctx.threshold)
        keys = directory.keys
        self.relayed_keys = {j: keys[32 * k: 32 * k + 32] for k, j in enumerate(live)}  # (KeyDirectory.key)
        self.self_mask = self_mask = crypto.fresh_seed()
        if type(neighbours) is CompleteNeighbourhoods:
            xs = [abscissa(neighbours, me, h) for h in live]
        else:  # (abscissa, inlined: the ranks among the party's sorted neighbours)
            mine = neighbours[me]
            xs = [bisect_left(mine, h) + 1 + (me < h) for h in live]
        self.own_x = abscissa(neighbours, me, me)
        sk_values, b_values = crypto.share((self.s_sk_raw, self_mask), [*xs, self.own_x], ctx.threshold)
        self.own_b = b_values[-1]
        # one X25519 agreement per neighbour gives the AEAD channel key and the consistency
        # round's MAC key of the pair; my holders that are not neighbours of each other get a
        # key from me (sealed with their shares) for the same purpose
        self.channel, self.view_keys = channel, _ = crypto.pair_keys(me, live, s)
        handed = crypto.handed_keys(live, neighbours)
        layout, flat, s_pk = _plain_with, chain.from_iterable, self.s_pk
        plain = [layout(len(handed_j)).pack(me, j, xj, sk, b, s_pk, *flat(handed_j.items()))
                 for j, xj, sk, b, handed_j in zip(live, xs, sk_values, b_values, map(handed.__getitem__, live))]
        sealed = crypto.seal_each([channel[j] for j in live], plain, s, me, live)
        self.live = live
        return SealedShares(s, *bundle(zip(live, sealed)))

    def mask_input(self, relayed: RelayedShares) -> MaskedInput:
        """Round 2: open the shares relayed to us; mask the input with exactly their senders."""
        me, ctx, crypto = self.me, self.ctx, self.crypto
        senders = relayed.senders.tolist()
        if not set(senders) <= set(self.live):
            raise MessageError(f"party {me}: relayed shares come from parties outside its live neighbours")
        self.held, peer_masks, handed = _open_shares(relayed, senders, self.channel, self.relayed_keys,
                                                     ctx.neighbours, me, set(ctx.neighbours[me]), ctx.session, crypto)
        self.view_keys = crypto.combined_keys(handed, dict(self.view_keys))  # (handed peers are no neighbours)
        y = crypto.masked_input(ctx.ring, self.vector, ctx, self.self_mask, self.s_keys, peer_masks, me)
        y.flags.writeable = False  # (the party's own copy, handed to the message as it is: no copy)
        return MaskedInput(ctx.session, y)

    def state_view(self, told: SurvivorSet) -> SurvivorTags:
        """Round 3: state the survivor set we are told (one view per session), MAC'd for every
        party that may need it: the other holders of every owner we hold shares of."""
        me, ctx, held, min_contributors = self.me, self.ctx, self.held, self.min_contributors
        s = ctx.session
        told_ids = tuple(told.survivors.tolist())
        view = frozenset(told_ids)
        if me not in view or not view <= {me, *ctx.neighbours[me]}:
            raise MessageError(f"party {me}: survivor set must contain the party and only its Shamir holders")
        # the contributors the party can vouch for: itself and the survivors that sealed it their
        # shares (a survivor the controller invents sealed nothing; one that dropped after sharing
        # leaves masks only its s_sk removes, which no honest holder told "survived" reveals)
        known = 1 + sum([1 for w in told_ids if w in held])
        if known < min_contributors:
            raise SecureSumAborted(
                f"party {me}: the survivor set it is told holds {known} parties that shared with it "
                f"({len(view)} claimed), below its min_roster = {min_contributors}: it states no view "
                "and reveals no share",
                survivors=known, threshold=min_contributors)
        self.told_ids = told_ids
        targets = sorted(self.view_keys)
        tags = self.crypto.view_tags(self.view_keys, statement_prefix(s), me, targets, pack_ids(told_ids))
        return SurvivorTags(s, id_vector(targets), tags)

    def unmask(self, request: UnmaskRequest) -> UnmaskShares:
        """Round 4: check the stated views, then reveal b-shares of survivors, s_sk-shares of the dropped."""
        me, ctx, held = self.me, self.ctx, self.held
        view = frozenset(self.told_ids)
        owners = sorted([me, *held])
        self.crypto.check(request, self.view_keys, ctx, me, view, owners, statement_prefix(ctx.session))
        which, absc, values = bytearray(), [], []
        for o in owners:
            if o in view:  # survived: its self mask is removed
                which.append(SECRET_SELF_MASK)
                x_o, y_o = (self.own_x, self.own_b) if o == me else (held[o][0], held[o][2])
            else:  # dropped after sharing: its pairwise masks are removed
                which.append(SECRET_MASK_KEY)
                x_o, y_o = held[o][0], held[o][1]
            absc.append(x_o)
            values.append(y_o)
        return UnmaskShares(ctx.session, id_vector(owners), bytes(which), id_vector(absc), b"".join(values))
