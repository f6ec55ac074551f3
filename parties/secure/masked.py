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

from collections.abc import Callable
from functools import lru_cache, partial
from itertools import chain
from typing import Any, NamedTuple

import numpy as np

from mprr.errors import ConfigurationError, ProtocolError, SecureSumAborted
from parties.topology import CONTROLLER
from parties.traffic import Counts
from parties.transport import Endpoint, Transport
from parties.secure.crypto import AEAD_OVERHEAD
from parties.secure.context import SecureSumContext
from parties.secure.cost import TrafficCost, encoded_size
from parties.secure.drive import drive
from parties.secure.engine import SecureSumEngine, SumOutcome
from parties.secure.graph import ring_modulus
from parties.secure.messages import (
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
    id_vector,
)
from parties.secure.pki import KeyRegistry, Signer
from parties.secure.program import Expect, Program
from parties.secure.responder import Reply, Responder
from parties.secure.shamir import SHARE_BYTES
from parties.secure.topology import TOPOLOGIES, CompleteNeighbourhoods, Neighbourhoods, build_neighbourhoods
from parties.secure.values import checked_input
from parties.secure.masked_party import (PLAIN, MaskedParty, advertise_all, mask_inputs, share_keys_all, state_views,
                                         unmask_all)
from parties.secure.party_crypto import PartyCryptography, zeros
from parties.secure.masked_server import PHASES, ControllerProgram, Shortfall, spread
from parties.secure.views import KEY_ENTRY
from parties.wire.codec import Message

__all__ = ["PHASES", "MaskedEngine", "spread"]


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
    blob = AEAD_OVERHEAD + PLAIN.size + KEY_ENTRY.size * entries
    ends = id_vector(range(blob, blob * d + 1, blob))
    cells = d + 1  # parties in a view: a holder set
    party = (encoded_size(PublicKeys(s, (bytes(32),))) + encoded_size(SealedShares(s, id_vector(range(d)), ends,
                                                                                   bytes(blob * d)))
             + encoded_size(MaskedInput(s, zeros(ctx.ring.dtype.str, ctx.length)))
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


def _rounds(session: str, timeout: float) -> tuple[Reply, tuple[Reply, ...]]:
    """The party's first reply (round 0: its masking key) and its rounds of ``session`` after it:
    each one message from the controller (the keys, the shares, the survivors, the unmasking
    request) within ``timeout``, answered by the round's method of :class:`MaskedParty`, many
    parties at once by its batch (the methods and batches as they are when the session starts)."""
    party = MaskedParty
    return _replies(session, timeout, (party.advertise, advertise_all), (party.share_keys, share_keys_all),
                    (party.mask_input, mask_inputs), (party.state_view, state_views), (party.unmask, unmask_all))


_Batch = Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]]


@lru_cache(maxsize=16)
def _replies(session: str, timeout: float, *rounds: tuple[Callable[..., Message], _Batch]
             ) -> tuple[Reply, tuple[Reply, ...]]:
    """:func:`_rounds` from each round's (method, batch), made once per session, timeout and
    methods, and shared by every party's program of the session (a :class:`Reply` and its
    :class:`~parties.secure.program.Expect` are immutable)."""
    first, *answered = rounds
    kinds = (KeyDirectory, RelayedShares, SurvivorSet, UnmaskRequest)
    phases = (PHASES[0], PHASES[1], PHASES[3], PHASES[4])  # (the phases the controller's messages come in)
    return (Reply(PHASES[0], *first),
            tuple(Reply(PHASES[k + 1], compute, batch, Expect(kind, session, (CONTROLLER,), phase, timeout))
                  for k, ((compute, batch), kind, phase) in enumerate(zip(answered, kinds, phases))))


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
            return self._party(me, vector, ctx, PartyCryptography(None, None), min_contributors)
        registry = ctx.registry
        if signer is None or not isinstance(registry, KeyRegistry) or signer.party != me:
            raise ConfigurationError(
                f"party {me}: the masked engine needs the party's PKI signer and the key registry "
                "(parties.secure.pki.setup_pki at set-up)")
        vector = checked_input(vector, ctx)  # (checked before anything is sent; into the ring in round 2)
        return self._party(me, vector, ctx, PartyCryptography(signer, registry), min_contributors)

    def _party(self, me: int, vector: np.ndarray, ctx: SecureSumContext, crypto: PartyCryptography,
               min_contributors: int) -> Program[None]:
        """The rounds' I/O of party ``me`` (:class:`MaskedParty` computes each round): a first
        reply, then every round one message from the controller answered by one message (a
        :class:`~parties.secure.responder.Responder`, whose rounds a host runs for many parties
        at once)."""
        # a party waits up to two rounds: the controller itself may wait a full round_timeout
        # for stragglers before it answers
        return Responder(me, partial(MaskedParty, me, vector, ctx, crypto, min_contributors),
                         *_rounds(ctx.session, 2 * self.round_timeout))

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
