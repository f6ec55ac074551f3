"""The masked engine's party side (:mod:`parties.secure.masked`): :class:`MaskedParty`, one
party's rounds as a sans-I/O state machine, and the batches that run a round for many parties
one pass per kind of work; the primitives it calls are its
:class:`~parties.secure.party_crypto.PartyCryptography`.

Each round is a method that takes the controller's message of that round and returns the
party's reply; :meth:`parties.secure.masked.MaskedEngine.party_program` does the rounds' I/O.
The protocol, the checks and why they suffice are in :mod:`parties.secure.masked`.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar, cast

import numpy as np

from mprr.errors import MessageError, ProtocolError, SecureSumAborted
from parties.secure.crypto import KeyPair
from parties.secure.context import SecureSumContext
from parties.secure.messages import (
    SECRET_MASK_KEY,
    SECRET_SELF_MASK,
    KeyDirectory,
    MaskedInput,
    PublicKeys,
    RelayedShares,
    SealedShares,
    SurvivorSet,
    SurvivorTags,
    UnmaskRequest,
    UnmaskShares,
    blobs,
    bundle,
    id_vector,
)
from parties.secure.party_crypto import HandedKeys, PartyCryptography, check_each
from parties.secure.program import each
from parties.secure.shamir import SHARE_BYTES
from parties.secure.topology import CompleteNeighbourhoods, Neighbourhoods
from parties.secure.unmasking import abscissa
from parties.wire.codec import Message
from parties.secure.views import KEY_ENTRY, pack_ids, statement_prefix

__all__ = ["BATCH_CHUNK", "PLAIN", "MaskedParty", "advertise_all", "in_turn", "mask_inputs", "share_keys_all",
           "state_views", "unmask_all"]

PLAIN = struct.Struct(f"<III{SHARE_BYTES}s{SHARE_BYTES}s32s")  # owner, holder, x, s_sk share, b share, s_pk


def _open_shares(opened: list[bytes], senders: list[int], relayed_keys: dict[int, bytes], neighbours: Neighbourhoods,
                 me: int, near: set[int]
                 ) -> tuple[dict[int, tuple[int, bytes, bytes]], dict[int, bytes], list[HandedKeys]]:
    """Round 2: check each share opened by party ``me`` (``opened[k]`` from ``senders[k]``;
    ``near``: the party's neighbours) against what its sender must have sealed (addressing,
    abscissa, the masking key relayed in round 0, the view keys for its other holders only).
    Returns the shares held per sender (x, s_sk share, b share), the senders' masking keys
    s_pk, and the keys each sender handed this party for 2-hop peers that are not neighbours,
    as (sender, peers, keys) (:func:`~parties.secure.views.combined_keys` makes their MAC keys)."""
    held: dict[int, tuple[int, bytes, bytes]] = {}
    peer_masks: dict[int, bytes] = {}  # s_pk of the senders, authenticated by their AEAD channel
    handed: list[HandedKeys] = []
    size, entry_size, layout = PLAIN.size, KEY_ENTRY.size, _plain_with
    complete = type(neighbours) is CompleteNeighbourhoods
    outside = {me, *near}  # (no handed key is for this party or one of its neighbours)
    counted: int | None = None  # the extra length whose layout ``unpack`` is (the senders' are mostly alike)
    unpack = PLAIN.unpack
    for j, plain_j in zip(senders, opened):
        extra = len(plain_j) - size
        if extra != counted:
            if extra < 0 or extra % entry_size:
                raise MessageError(f"party {me}: sealed share from party {j} has {len(plain_j)} bytes")
            counted, unpack = extra, layout(extra // entry_size).unpack
        fields = unpack(plain_j)  # owner, holder, x, shares, s_pk, (h, key) ...
        owner, holder, xj, sk_y, b_y, s_pk = fields[:6]
        if complete:
            holders_j, rank = (neighbours[j] if extra else ()), None
            expected = abscissa(neighbours, j, me)
        else:  # (abscissa, inlined: this party's rank among j's sorted neighbours)
            holders_j = neighbours[j]
            rank = bisect_left(holders_j, me)
            expected = rank + 1 + (j < me)
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
        peers = fields[6::2]
        # what an honest j hands when every holder is live and none is adjacent to this party: its
        # other holders, in order (distinct, j's holders, not this party); else checked as a set
        if rank is None or peers != holders_j[:rank] + holders_j[rank + 1:] or not outside.isdisjoint(peers):
            distinct = set(peers)  # (distinct, none outside, all among j's holders: intersected without a set of them)
            if (len(distinct) != len(peers) or not outside.isdisjoint(distinct)
                    or len(distinct.intersection(holders_j)) != len(peers)):
                raise MessageError(f"party {me}: the view keys sealed by party {j} are not for its other holders")
        handed.append((j, peers, fields[7::2]))
    return held, peer_masks, handed


@lru_cache(maxsize=64)
def _plain_with(count: int) -> struct.Struct:
    """A sealed plaintext: :data:`PLAIN` then ``count`` :data:`~parties.secure.views.KEY_ENTRY`
    entries, packed (and unpacked) by one call."""
    return struct.Struct(PLAIN.format + KEY_ENTRY.format.lstrip("<") * count)


def in_turn(round_method: str) -> Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]]:
    """The batch of a round that is one kind of work: ``party.<round_method>(*args)`` for each
    ``(party, *args)`` in turn (:func:`~parties.secure.program.each`)."""
    return each(lambda party, *args: getattr(party, round_method)(*args))


advertise_all = in_turn("advertise")
"""Round 0 of many parties: :meth:`MaskedParty.advertise` of each (their key pairs in a row)."""


BATCH_CHUNK = 64
"""The parties a batch steps together, one pass per kind of work (:func:`share_keys_all`,
:func:`mask_inputs`, :func:`state_views`, :func:`unmask_all`): enough for each kind of call to
run many times back to back, few enough that what the parties hold between the passes (shares,
handed view keys, seeds) stays small, and that few of those objects outlive a collection of the
garbage collector's young generation (each costs a scan there, and another in the next).  With
512 the young generations cost the masked-sparse sum of Adult 22 µs per party, with 64 16
(``benchmarks/_in_run.py``'s runs, 8,000 and 32,561 parties)."""


def _in_chunks(rounds: Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]]
               ) -> Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]]:
    """``rounds`` of the calls, :data:`BATCH_CHUNK` of them at a time, in order."""

    @wraps(rounds)
    def batch(calls: list[tuple[Any, ...]]) -> list[Message | ProtocolError]:
        return [reply for start in range(0, len(calls), BATCH_CHUNK)
                for reply in rounds(calls[start:start + BATCH_CHUNK])]

    return batch


_Row = tuple[int, "MaskedParty", Any]
"""A call of a batch between its passes: (its index, its party, what the last pass gave it)."""


def _rows(calls: list[tuple[Any, ...]]) -> list[_Row]:
    """The rows of a batch's ``(party, message)`` calls, before its first pass."""
    return [(k, party, msg) for k, (party, msg) in enumerate(calls)]


def _pass(out: list[Message | ProtocolError | None], rows: list[_Row], step: Callable[[MaskedParty, Any], Any]
          ) -> list[_Row]:
    """One pass of a batch: ``step(party, value)`` of each row ``(k, party, value)``, back to back;
    the rows of the calls it answered, ``(k, party, result)``, in order.  A ProtocolError the
    step raises for call k is that call's reply (``out[k]``); its row leaves the batch."""
    done: list[_Row] = []
    for k, party, value in rows:
        try:
            done.append((k, party, step(party, value)))
        except ProtocolError as exc:
            out[k] = exc
    return done


def _replies(out: list[Message | ProtocolError | None], rows: list[_Row],
             reply: Callable[[MaskedParty, Any], Message]) -> list[Message | ProtocolError]:
    """A batch's last pass: ``reply(party, value)`` of each row that is still in it, as its call's
    reply; every call then has its reply or its error."""
    for k, party, value in rows:
        out[k] = reply(party, value)
    return cast(list[Message | ProtocolError], out)


@_in_chunks
def share_keys_all(calls: list[tuple[Any, ...]]) -> list[Message | ProtocolError]:
    """Round 1 (:meth:`MaskedParty.share_keys`) of each ``(party, directory)`` of ``calls``, one
    pass per kind of work across the parties: every party's directory checked and its secrets
    shared, then every party's static agreements, their HKDF (after all the agreements: each kind
    of call runs faster after its own kind than after another), its plaintexts, its ciphertexts,
    and its reply.  For each call, its :class:`~parties.secure.messages.SealedShares`
    or the ProtocolError it raised, and each party left in the state that call alone leaves it
    in (as :func:`mask_inputs`)."""
    out: list[Message | ProtocolError | None] = [None] * len(calls)
    # (each pass's rows replace the last's: what a pass consumed is freed before the next runs,
    # so the young generation of the garbage collector holds less at each of its collections)
    rows = _pass(out, _rows(calls), MaskedParty.share_secrets)
    # (all the agreements, then all their HKDF; a registered key X25519 refuses is its reader's error)
    rows = _pass(out, rows, lambda party, shares: (shares, party.static_secrets()))
    for _, party, (_, secrets) in rows:
        party.derive_pair_keys(secrets)
    rows = [(k, party, shares) for k, party, (shares, _) in rows]
    rows = [(k, party, party.plaintexts(*shares)) for k, party, shares in rows]
    rows = [(k, party, party.seal(texts)) for k, party, texts in rows]
    return _replies(out, rows, MaskedParty.sealed_shares)


@_in_chunks
def mask_inputs(calls: list[tuple[Any, ...]]) -> list[Message | ProtocolError]:
    """Round 2 (:meth:`MaskedParty.mask_input`) of each ``(party, relayed)`` of ``calls``, one pass
    per kind of work across the parties: every party's relayed shares opened, then checked, then
    every party's combined view keys, masking agreements, their HKDF, and masked input.  For
    each call, its :class:`~parties.secure.messages.MaskedInput` or the ProtocolError it raised, and
    each party left in the state that call alone leaves it in.

    A host stepping many parties' programs runs it once for all those that reach round 2 on one
    turn of its loop (the masked programs' :class:`~parties.secure.program.Answer`): the same
    library calls and the same Python back to back, their code and data kept hot."""
    out: list[Message | ProtocolError | None] = [None] * len(calls)
    rows = _pass(out, _rows(calls), MaskedParty.open_relayed)  # (each pass's rows replace the last's)
    rows = _pass(out, rows, lambda party, senders_texts: party.take_shares(*senders_texts))
    for _, party, (_, handed) in rows:  # (handed peers are no neighbours)
        party.view_keys = party.crypto.combined_keys(handed, dict(party.view_keys))
    rows = _pass(out, [(k, party, masks) for k, party, (masks, _) in rows],
                 lambda party, masks: (masks, party.mask_secrets(masks)))
    rows = [(k, party, (masks, party.mask_seeds(masks, shared))) for k, party, (masks, shared) in rows]
    return _replies(out, rows, lambda party, masks_seeds: party.mask(*masks_seeds))


@_in_chunks
def state_views(calls: list[tuple[Any, ...]]) -> list[Message | ProtocolError]:
    """Round 3 (:meth:`MaskedParty.state_view`) of each ``(party, told)`` of ``calls``, one pass
    per kind of work: every party's survivor set checked, then every party's view tags, then
    every reply (as :func:`share_keys_all`)."""
    out: list[Message | ProtocolError | None] = [None] * len(calls)
    stated = _pass(out, _rows(calls), MaskedParty.view_statement)
    tagged = [(k, party, (targets, party.tag_view(targets, view))) for k, party, (targets, view) in stated]
    return _replies(out, tagged, lambda party, targets_tags: party.survivor_tags(*targets_tags))


@_in_chunks
def unmask_all(calls: list[tuple[Any, ...]]) -> list[Message | ProtocolError]:
    """Round 4 (:meth:`MaskedParty.unmask`) of each ``(party, request)`` of ``calls``, one pass
    per kind of work: every party's consistency check (those of one session together,
    :meth:`MaskedParty.check_views_each`), then the reply of each that passed it (as
    :func:`share_keys_all`)."""
    out: list[Message | ProtocolError | None] = [None] * len(calls)
    rows: list[_Row] = []
    for k, ((party, _), checked) in enumerate(zip(calls, MaskedParty.check_views_each(calls))):
        if isinstance(checked, ProtocolError):
            out[k] = checked
        else:
            rows.append((k, party, checked))
    return _replies(out, rows, MaskedParty.reveal)


_Reply = TypeVar("_Reply", bound=Message)


def _alone(batch: Callable[[list[tuple[Any, ...]]], list[Message | ProtocolError]], party: MaskedParty,
           message: Message, kind: type[_Reply]) -> _Reply:
    """A round of one party: ``batch`` of its one call, the ProtocolError it decided on raised."""
    reply, = batch([(party, message)])
    if isinstance(reply, ProtocolError):
        raise reply
    assert isinstance(reply, kind)
    return reply


class MaskedParty:
    """One party's side of the masked sum as a state machine (sans-I/O, in the manner of h11's
    protocol objects): each round is a method that takes the controller's message of that round
    and returns the party's reply, raising the :class:`~mprr.errors.ProtocolError` it decides
    on; the party keeps only what its later rounds use (a round's plaintexts, ciphertexts and
    masked vector leave with its reply).  :meth:`parties.secure.masked.MaskedEngine.party_program`
    does the rounds' I/O.  Rounds 1 and 2 are also their steps (:meth:`share_secrets`,
    :meth:`static_secrets`, :meth:`derive_pair_keys`, :meth:`plaintexts`, :meth:`seal`, :meth:`sealed_shares`;
    :meth:`open_relayed`, :meth:`take_shares`, :meth:`mask_secrets`, :meth:`mask_seeds`, :meth:`mask`), and so
    are rounds 3 and 4 (:meth:`view_statement`, :meth:`tag_view`, :meth:`survivor_tags`; :meth:`check_views_each`,
    :meth:`reveal`): :func:`share_keys_all`, :func:`mask_inputs`, :func:`state_views` and
    :func:`unmask_all` run them for many parties, one pass per kind of work."""

    __slots__ = ("me", "ctx", "crypto", "min_contributors", "vector", "s_keys", "s_pk", "s_sk_raw", "live",
                 "relayed_keys", "channel", "view_keys", "self_mask", "own_x", "own_b", "held", "told")

    def __init__(self, me: int, vector: np.ndarray, ctx: SecureSumContext, crypto: PartyCryptography,
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
        self.told: frozenset[int] = frozenset()  # the survivor set the party was told (round 3)

    def advertise(self) -> PublicKeys:
        """Round 0: a fresh masking key s_pk (its private half kept for the masks)."""
        self.s_keys, self.s_pk, self.s_sk_raw = self.crypto.masking_keys()
        return PublicKeys(self.ctx.session, (self.s_pk,))

    def share_keys(self, directory: KeyDirectory) -> SealedShares:
        """Round 1: share b_i and s_sk_i among the live holders the directory lists, sealed under
        keys agreed with their registered static keys (authenticated by the PKI, nothing
        relayed to check) (:func:`share_keys_all` of this one party)."""
        return _alone(share_keys_all, self, directory, SealedShares)

    def share_secrets(self, directory: KeyDirectory) -> tuple[list[int], list[bytes], list[bytes]]:
        """Round 1's first step: the directory checked, the relayed masking keys kept, the self
        mask's seed drawn and both secrets shared; the live holders' abscissae and the shares."""
        me, ctx, crypto, min_contributors = self.me, self.ctx, self.crypto, self.min_contributors
        neighbours = ctx.neighbours
        live = tuple(directory.parties.tolist())
        mine = neighbours[me]  # (built on each access on the complete graph: once)
        if live != mine and not set(mine).issuperset(live):  # (all of them, in order: at once)
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
            xs = [bisect_left(mine, h) + 1 + (me < h) for h in live]
        self.own_x = abscissa(neighbours, me, me)
        sk_values, b_values = crypto.share((self.s_sk_raw, self_mask), [*xs, self.own_x], ctx.threshold)
        self.s_sk_raw = b""  # (shared: the raw private key is not kept; the key object masks in round 2)
        self.own_b = b_values[-1]
        self.live = live
        return xs, sk_values, b_values

    def static_secrets(self) -> list[bytes]:
        """Round 1's second step: one X25519 agreement of the static keys per live neighbour
        (MessageError for a neighbour without a registered key, or one the agreement refuses)."""
        return self.crypto.static_secrets(self.live)

    def derive_pair_keys(self, shared: list[bytes]) -> None:
        """Round 1's third step: each agreement of :meth:`static_secrets` gives the AEAD channel key
        and the consistency round's MAC key of the pair."""
        self.channel, self.view_keys = self.crypto.pair_keys(self.me, self.live, self.ctx.session, shared)

    def plaintexts(self, xs: list[int], sk_values: list[bytes], b_values: list[bytes]) -> list[bytes]:
        """Round 1's fourth step: what this party seals for each live holder (in their order): its
        shares, and the view keys this party hands it for its holders that are not neighbours of
        each other."""
        me, live, s_pk = self.me, self.live, self.s_pk
        layout = _plain_with
        return [layout(len(entries) >> 1).pack(me, j, xj, sk, b, s_pk, *entries)
                for j, xj, sk, b, entries in zip(live, xs, sk_values, b_values,
                                                 self.crypto.handed_keys(live, self.ctx.neighbours))]

    def seal(self, plain: list[bytes]) -> list[bytes]:
        """Round 1's fifth step: :meth:`plaintexts` sealed, each under its holder's channel key."""
        live, channel = self.live, self.channel
        return self.crypto.seal_each([channel[j] for j in live], plain, self.ctx.session, self.me, live)

    def sealed_shares(self, sealed: list[bytes]) -> SealedShares:
        """Round 1's last step: the reply carrying the ciphertexts of :meth:`seal`."""
        return SealedShares(self.ctx.session, *bundle(zip(self.live, sealed)))

    def mask_input(self, relayed: RelayedShares) -> MaskedInput:
        """Round 2: open the shares relayed to us; mask the input with exactly their senders
        (:func:`mask_inputs` of this one party)."""
        return _alone(mask_inputs, self, relayed, MaskedInput)

    def open_relayed(self, relayed: RelayedShares) -> tuple[list[int], list[bytes]]:
        """Round 2's first step: the shares relayed to us opened (their senders, their plaintexts)."""
        me = self.me
        senders = relayed.senders.tolist()
        if tuple(senders) != self.live and not set(self.live).issuperset(senders):  # (all of them: at once)
            raise MessageError(f"party {me}: relayed shares come from parties outside its live neighbours")
        channel = self.channel
        return senders, self.crypto.open_each([channel[j] for j in senders], blobs(relayed.ends, relayed.ciphertexts),
                                              self.ctx.session, senders, me)

    def take_shares(self, senders: list[int], opened: list[bytes]) -> tuple[dict[int, bytes], list[HandedKeys]]:
        """Round 2's second step: the shares :meth:`open_relayed` opened checked, and kept; the
        senders' masking keys and the view keys they handed us returned."""
        neighbours = self.ctx.neighbours
        self.held, peer_masks, handed = _open_shares(opened, senders, self.relayed_keys, neighbours, self.me,
                                                     set(neighbours[self.me]))
        return peer_masks, handed

    def mask_secrets(self, peer_masks: dict[int, bytes]) -> list[bytes]:
        """Round 2's fourth step: the X25519 agreements of the masking keys with the senders'
        (``peer_masks``: their s_pk, from :meth:`take_shares`)."""
        return self.crypto.mask_secrets(self.s_keys, peer_masks, self.ctx)

    def mask_seeds(self, peer_masks: dict[int, bytes], shared: list[bytes]) -> list[bytes]:
        """Round 2's fifth step: the pairwise mask seeds with the senders, derived from the
        agreements ``shared`` of :meth:`mask_secrets`."""
        return self.crypto.mask_seeds(self.s_keys, peer_masks, shared, self.ctx, self.me)

    def mask(self, peer_masks: dict[int, bytes], seeds: list[bytes]) -> MaskedInput:
        """Round 2's last step: the input masked with the self mask and the senders' masks
        (``seeds``: :meth:`mask_seeds`, derived from the agreements of :meth:`mask_secrets` with ``peer_masks``)."""
        ctx = self.ctx
        y = self.crypto.masked(ctx.ring, self.vector, ctx, self.self_mask, seeds, peer_masks, self.me)
        self.self_mask, self.s_keys = b"", None  # (masked: the seed b and the masking key are not kept)
        y.flags.writeable = False  # (the party's own copy, handed to the message as it is: no copy)
        return MaskedInput(ctx.session, y)

    def state_view(self, told: SurvivorSet) -> SurvivorTags:
        """Round 3: state the survivor set we are told (one view per session), MAC'd for every
        party that may need it: the other holders of every owner we hold shares of
        (:func:`state_views` of this one party)."""
        return _alone(state_views, self, told, SurvivorTags)

    def view_statement(self, told: SurvivorSet) -> tuple[list[int], bytes]:
        """Round 3's first step: the survivor set we are told checked and kept (one view per
        session); the parties to tag it for (every key of :attr:`view_keys`, in order) and the
        view as the statement packs it."""
        me, ctx, held, min_contributors = self.me, self.ctx, self.held, self.min_contributors
        told_ids = tuple(told.survivors.tolist())
        view = frozenset(told_ids)
        if me not in view or not view <= {me, *ctx.neighbours[me]}:
            raise MessageError(f"party {me}: survivor set must contain the party and only its Shamir holders")
        # the contributors the party can vouch for: itself and the survivors that sealed it their
        # shares (a survivor the controller invents sealed nothing; one that dropped after sharing
        # leaves masks only its s_sk removes, which no honest holder told "survived" reveals)
        known = 1 + len(view.intersection(held))
        if known < min_contributors:
            raise SecureSumAborted(
                f"party {me}: the survivor set it is told holds {known} parties that shared with it "
                f"({len(view)} claimed), below its min_roster = {min_contributors}: it states no view "
                "and reveals no share",
                survivors=known, threshold=min_contributors)
        self.told = view
        return sorted(self.view_keys), pack_ids(told_ids)

    def tag_view(self, targets: list[int], view: bytes) -> bytes:
        """Round 3's second step: the statement of ``view`` MAC'd for each of ``targets``."""
        return self.crypto.view_tags(self.view_keys, statement_prefix(self.ctx.session), self.me, targets, view)

    def survivor_tags(self, targets: list[int], tags: bytes) -> SurvivorTags:
        """Round 3's last step: the reply carrying the tags of :meth:`tag_view`."""
        return SurvivorTags(self.ctx.session, id_vector(targets), tags)

    def unmask(self, request: UnmaskRequest) -> UnmaskShares:
        """Round 4: check the stated views, then reveal b-shares of survivors, s_sk-shares of the
        dropped (:func:`unmask_all` of this one party)."""
        return _alone(unmask_all, self, request, UnmaskShares)

    @staticmethod
    def check_views_each(calls: list[tuple[Any, ...]]) -> list[list[int] | ProtocolError]:
        """Round 4's first step of each ``(party, request)``: the views stated for the party
        checked; for each, the owners of the shares it holds, itself included, in order, or the
        SecureSumAborted it decided on.  The checks of the parties of one session run together
        (:func:`~parties.secure.party_crypto.check_each`), each party's decided from its
        own request and state."""
        owners = [sorted([party.me, *party.held]) for party, _ in calls]
        out: list[list[int] | ProtocolError] = list(owners)
        sessions: dict[int, list[int]] = {}  # id(context) -> the calls of its parties
        for k, (party, _) in enumerate(calls):
            sessions.setdefault(id(party.ctx), []).append(k)
        for ks in sessions.values():
            ctx = calls[ks[0]][0].ctx
            parties = [calls[k][0] for k in ks]
            checks = [(calls[k][1], party.view_keys, party.me, party.told, owners[k]) for k, party in zip(ks, parties)]
            errors = check_each([party.crypto for party in parties], checks, ctx, statement_prefix(ctx.session))
            for k, error in zip(ks, errors):
                if error is not None:
                    out[k] = error
        return out

    def reveal(self, owners: list[int]) -> UnmaskShares:
        """Round 4's last step, once :meth:`check_views_each` passed: b-shares of survivors,
        s_sk-shares of the dropped."""
        me, held, view = self.me, self.held, self.told
        which, absc, values = bytearray(), [], []
        for o in owners:
            if o in view:  # survived: its self mask is removed
                which.append(SECRET_SELF_MASK)
                x_o, _, y_o = (self.own_x, b"", self.own_b) if o == me else held[o]
            else:  # dropped after sharing: its pairwise masks are removed
                which.append(SECRET_MASK_KEY)
                x_o, y_o, _ = held[o]
            absc.append(x_o)
            values.append(y_o)
        return UnmaskShares(self.ctx.session, id_vector(owners), bytes(which), id_vector(absc), b"".join(values))
