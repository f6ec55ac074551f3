"""The consistency round of the masked engine: survivor views stated once and MAC'd.

Bonawitz et al. 2017 (Section 6, ConsistencyCheck) have every survivor sign the survivor set it
was told and every party verify the signatures of the other holders of the owners it holds
shares of before it reveals anything.  Here each statement is MAC'd (keyed BLAKE2b, RFC 7693,
128-bit keys and tags) for each reader under a key the two share (:mod:`parties.secure.masked`
explains why this gives the same guarantee): neighbours derive it from their static X25519 agreement, two
holders of an owner that are not neighbours combine the keys their common owners sealed for
them (:func:`pair_keys`, :func:`combined_key`).

- party: :func:`view_tags` over :func:`statement_prefix` and the packed view
  (:func:`pack_ids`); :func:`check_consistency` before revealing any share, or
  :func:`check_consistency_each` for the parties of a batch (an honest run's rule checked for
  all of them at once as columns, the rest party by party);
- controller: :func:`survivor_view` (what a survivor is told) and :func:`unmask_requests`
  (the round-4 message carrying the views a party needs, MAC'd for it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import cast

import numpy as np

from mprr.errors import SecureSumAborted
from parties.secure.context import SecureSumContext
from parties.secure.crypto import settle_vector_state
from parties.secure.messages import TAG_BYTES, SurvivorTags, UnmaskRequest
from parties.secure.topology import CompleteNeighbourhoods, Neighbourhoods

__all__ = [
    "KEY_ENTRY",
    "VIEW_KEY_BYTES",
    "ConsistencyCall",
    "check_consistency",
    "check_consistency_each",
    "combined_key",
    "combined_keys",
    "pack_ids",
    "pair_keys",
    "statement_prefix",
    "survivor_view",
    "unmask_requests",
    "view_tags",
]

_VIEW = "masked/survivors"  # what the consistency round's MACs are for


def survivor_view(ctx: SecureSumContext, party: int, survivors: set[int]) -> tuple[int, ...]:
    """What ``party`` is told in round 3: the survivors among its Shamir holders, sorted."""
    return tuple(sorted([w for w in (*ctx.neighbours[party], party) if w in survivors]))


_BLOCK = 1024
"""Readers whose round-4 requests :func:`unmask_requests` builds together."""


def unmask_requests(session: str, views: dict[int, tuple[int, ...]], tagged: dict[int, SurvivorTags], *,
                    order: Callable[[list[int]], list[int]] | None = None
                    ) -> Iterator[list[tuple[int, UnmaskRequest]]]:
    """The round-4 message to each author v of ``tagged``: the views of the other authors that
    MAC'd theirs for v (``views[w]``, what w was told; ``tagged[w]``, its tags), in author order,
    equal views sent once (numbered in the order of their first signer).  The requests come in
    the order ``order(sorted authors)`` (default: sorted), in lists of up to :data:`_BLOCK`
    ``(reader, request)`` pairs (the controller sends a list at once).

    w MACs its view for exactly the parties that hold shares of an owner w holds shares of
    (the controller checked each author's targets against that), so this is the 2-hop
    neighbourhood of v, every party on the complete graph.  Built by array operations: one row
    per (author, target), grouped by reader with a stable sort (authors in order within); then,
    for each block of :data:`_BLOCK` readers in the requested order, each reader's distinct
    views numbered by first signer and every field of every request a slice of one array.
    """
    authors = sorted(tagged)
    if not authors:
        return
    targets = [tagged[w].targets for w in authors]
    counts = np.fromiter((t.shape[0] for t in targets), dtype=np.int64, count=len(authors))
    to = np.concatenate(targets)
    by = np.repeat(np.asarray(authors, dtype=np.uint32), counts)
    tags = np.frombuffer(b"".join([tagged[w].tags for w in authors]), dtype=f"V{TAG_BYTES}")  # (a tag an item)
    known: dict[tuple[int, ...], int] = {}
    distinct: list[tuple[int, ...]] = []
    author_view = np.empty(len(authors), dtype=np.int64)
    for k, w in enumerate(authors):  # distinct views, numbered
        view = views[w]
        number = known.get(view)
        if number is None:
            number = known[view] = len(distinct)
            distinct.append(view)
        author_view[k] = number
    sizes = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
    width = int(sizes.max(initial=0))
    uniform = int(sizes.min()) == width
    padded = np.zeros((len(distinct), width), dtype=np.uint32)  # view g is padded[g, :sizes[g]]
    padded[np.arange(width) < sizes[:, None]] = np.fromiter(chain.from_iterable(distinct), dtype=np.uint32,
                                                            count=int(sizes.sum()))
    reader = np.zeros(max(int(to.max(initial=0)), authors[-1]) + 1, dtype=bool)
    reader[authors] = True
    rows = np.flatnonzero(reader[to])
    readers = to[rows]
    if readers.shape[0] and int(readers.max()) < 1 << 16:  # (numpy's stable sort of 16-bit keys is a radix sort)
        readers = readers.astype(np.uint16)
    rows = rows[np.argsort(readers, kind="stable")]  # by reader, authors in order within
    grouped = to[rows]
    row_view = np.repeat(author_view, counts)[rows]
    ids = np.asarray(authors, dtype=np.int64)
    lows = np.searchsorted(grouped, ids, "left")
    highs = np.searchsorted(grouped, ids, "right")
    slot = {w: k for k, w in enumerate(authors)}
    sequence = authors if order is None else order(authors)
    all_distinct = len(distinct) == len(authors)
    for first in range(0, len(sequence), _BLOCK):
        block = sequence[first:first + _BLOCK]
        at = np.fromiter(map(slot.__getitem__, block), dtype=np.int64, count=len(block))
        lo, n_rows = lows[at], highs[at] - lows[at]
        ends = np.cumsum(n_rows)
        picked = np.repeat(lo - (ends - n_rows), n_rows) + np.arange(int(ends[-1]))  # the block's rows
        g = row_view[picked]
        if all_distinct:  # (a sparse graph: no two authors were told the same view) every row its own view
            chosen, n_views, view_stops = g, n_rows, ends
            view_of = (np.arange(len(g)) - np.repeat(ends - n_rows, n_rows)).astype(np.uint32)
        else:
            key = np.repeat(np.arange(len(block)), n_rows) * len(distinct) + g  # (reader, view)
            _, first_row, inverse = np.unique(key, return_index=True, return_inverse=True)
            by_first = np.argsort(first_row, kind="stable")  # each reader's views, in first-signer order
            chosen = g[first_row[by_first]]
            n_views = np.bincount(key[first_row] // len(distinct), minlength=len(block))
            view_stops = np.cumsum(n_views)
            local = np.empty(len(by_first), dtype=np.int64)  # number of a view within its reader's
            local[by_first] = np.arange(len(by_first)) - np.repeat(view_stops - n_views, n_views)
            view_of = local[inverse].astype(np.uint32)
        lengths = sizes[chosen]
        cell_stops = np.cumsum(lengths)
        rows_of_views = np.take(padded, chosen, axis=0)  # (take: a faster gather of rows than indexing)
        cells = (rows_of_views.reshape(-1) if uniform  # (every view of the same size: nothing padded)
                 else rows_of_views[np.arange(width) < lengths[:, None]])
        cell_base = np.concatenate(([0], cell_stops))[view_stops - n_views]
        view_ends = (cell_stops - np.repeat(cell_base, n_views)).astype(np.uint32)
        signers, sent = by[rows[picked]], tags[rows[picked]].tobytes()
        for arr in (cells, view_ends, signers, view_of):
            arr.flags.writeable = False
        row_stops, row_starts = ends.tolist(), (ends - n_rows).tolist()
        cell_starts, cell_ends = cell_base.tolist(), np.concatenate(([0], cell_stops))[view_stops].tolist()
        v_stops, v_starts = view_stops.tolist(), (view_stops - n_views).tolist()
        yield [(v, UnmaskRequest(session, cells[cell_starts[j]:cell_ends[j]], view_ends[v_starts[j]:v_stops[j]],
                                 signers[row_starts[j]:row_stops[j]], view_of[row_starts[j]:row_stops[j]],
                                 sent[TAG_BYTES * row_starts[j]:TAG_BYTES * row_stops[j]]))
               for j, v in enumerate(block)]


def pack_ids(ids: tuple[int, ...]) -> bytes:
    return struct.pack(f"<{len(ids)}I", *ids)


VIEW_KEY_BYTES = 16
"""Length of the pairwise MAC keys of the consistency round (keyed BLAKE2b keys, 128 bits)."""
KEY_ENTRY = struct.Struct(f"<I{VIEW_KEY_BYTES}s")  # other holder, pairwise view key (sealed by the owner)
_blake2b, _sha256 = hashlib.blake2b, hashlib.sha256
_OWNER = struct.Struct("<I")
_PAIR = struct.Struct("<II")  # (a statement's signer and target)


def pair_keys(live: tuple[int, ...], neighbours: Neighbourhoods, *,
              draw: Callable[[int], bytes] = secrets.token_bytes) -> list[tuple[int | bytes, ...]]:
    """Fresh MAC keys for the pairs of ``live`` holders that are not neighbours of each other,
    from :func:`secrets.token_bytes` (``draw``: where the bytes come from; the counting driver's
    placeholders are zeros), as the owner seals them: for each holder w of ``live`` (in order),
    ``(h, key, h, key, ...)``, one entry per other holder h not adjacent to w, in ``live``
    order, the key of a pair the same in both holders' entries.  The pairs, in ``live`` order
    (w before h), take the draw's keys in turn.  Neighbours already share a key from their own
    X25519 agreement.

    Where no two holders are adjacent (nearly every party of a random sparse graph) every pair
    has a key, and each holder's entries are picked from the holders and the keys by one call
    (an ``itemgetter`` per holder, made once per number of holders)."""
    if type(neighbours) is CompleteNeighbourhoods or len(live) < 2:  # all adjacent, or no pair
        return [()] * len(live)
    members = set(live)
    if all([members.isdisjoint(neighbours[w]) for w in live]):  # no two holders adjacent
        count = len(live) * (len(live) - 1) // 2
        row = (*live, *_view_keys(count).unpack(draw(VIEW_KEY_BYTES * count)))
        return [pick(row) for pick in _entries(len(live))]
    keys: dict[int, dict[int, bytes]] = {w: {} for w in live}
    # (a neighbourhood is a short sorted tuple: scanning it beats building a set per holder)
    pairs = [(w, h) for i, (w, adjacent) in enumerate(zip(live, [neighbours[w] for w in live]))
             for h in live[i + 1:] if h not in adjacent]
    for (w, h), key in zip(pairs, _view_keys(len(pairs)).unpack(draw(VIEW_KEY_BYTES * len(pairs)))):
        keys[w][h] = keys[h][w] = key
    return [tuple(chain.from_iterable(keys[w].items())) for w in live]


@lru_cache(maxsize=64)
def _view_keys(count: int) -> struct.Struct:
    """``count`` view keys in a row: one draw cut into :data:`VIEW_KEY_BYTES`-byte keys by one call."""
    return struct.Struct(f"{VIEW_KEY_BYTES}s" * count)


@lru_cache(maxsize=64)
def _entries(d: int) -> list[Callable[[tuple[int | bytes, ...]], tuple[int | bytes, ...]]]:
    """For ``d >= 2`` holders none adjacent to another, holder a's entries of :func:`pair_keys`
    picked from the row ``(*live, *keys)`` (key k of the pairs in order): one getter per holder."""
    pair: dict[tuple[int, int], int] = {}
    for w in range(d):
        for h in range(w + 1, d):
            pair[w, h] = pair[h, w] = d + len(pair) // 2
    return [itemgetter(*chain.from_iterable((h, pair[w, h]) for h in range(d) if h != w)) for w in range(d)]


def combined_key(handed: list[tuple[int, bytes]]) -> bytes:
    """The MAC key of two holders that are not neighbours: SHA-256 of the keys every common owner
    handed them (in owner order), so that only a coalition of all their common owners knows it."""
    if len(handed) == 1:  # most pairs of a sparse graph have one common owner
        (owner, key), = handed
        return _sha256(b"mprr/view-key" + _OWNER.pack(owner) + key).digest()[:VIEW_KEY_BYTES]
    return _sha256(b"mprr/view-key" + b"".join([_OWNER.pack(o) + key for o, key in sorted(handed)])
                   ).digest()[:VIEW_KEY_BYTES]


def combined_keys(handed: Sequence[tuple[int, Sequence[int], Sequence[bytes]]],
                  out: dict[int, bytes] | None = None) -> dict[int, bytes]:
    """:func:`combined_key` of this party and each 2-hop peer h its owners handed it a key for:
    ``handed`` holds, per owner, ``(owner, peers, keys)`` (``keys[k]`` handed for ``peers[k]``).
    The MAC keys are added to ``out`` (default: a new dict; it must hold none of these peers)
    and returned.  A peer handed keys by one owner (nearly every one on a sparse graph) costs one
    SHA-256; one with several common owners is combined from all their keys at the end."""
    out = {} if out is None else out
    sha256, size = _sha256, VIEW_KEY_BYTES
    shared: list[int] = []  # peers with more than one common owner
    for owner, peers, keys in handed:
        head = b"mprr/view-key" + _OWNER.pack(owner)  # (combined_key's common case, inline)
        for h, key in zip(peers, keys):
            if h in out:
                shared.append(h)
            else:
                out[h] = sha256(head + key).digest()[:size]
    for h in set(shared):
        out[h] = combined_key([(owner, keys[list(peers).index(h)]) for owner, peers, keys in handed if h in peers])
    return out


@lru_cache(maxsize=64)
def statement_prefix(session: str) -> bytes:
    """The head of every statement of the consistency round of ``session`` (built once per session)."""
    tag = _VIEW.encode()
    sess = session.encode()
    return b"mprr/" + struct.pack("<I", len(tag)) + tag + struct.pack("<I", len(sess)) + sess


def view_tags(keys: dict[int, bytes], prefix: bytes, signer: int, targets: list[int], view: bytes) -> bytes:
    """``signer``'s statements that ``view`` (packed ids) is the survivor set it was told, one
    per party of ``targets`` (in order), each MAC'd under the key ``keys[target]``: keyed
    BLAKE2b (RFC 7693 MAC mode, 128-bit tags), concatenated.

    BLAKE2b's keyed mode is a MAC by design (the key fills the first block; no HMAC
    construction needed) and about three times cheaper than HMAC-SHA256 on these short
    statements; a party writes one tag per party of its 2-hop neighbourhood.
    """
    head, blake, target = prefix + _OWNER.pack(signer), _blake2b, _OWNER.pack  # (prefix, signer, target, view)
    out: list[bytes] = []
    tag = out.append
    for h in targets:  # (the statement fed in parts: cheaper than joining it per target)
        mac = blake(key=keys[h], digest_size=TAG_BYTES)
        mac.update(head)
        mac.update(target(h))
        mac.update(view)
        tag(mac.digest())
    return b"".join(out)


_NATIVE_IDS = sys.byteorder == "little" and array("I").itemsize == 4


def _ids(packed: bytes, request: UnmaskRequest) -> Sequence[int]:
    """The view cells of ``request`` (``packed``: as little-endian uint32) as a sequence of ints
    to slice and search: an ``array`` over the bytes (one copy, no int object per cell), or
    the list of the cells where the platform's ``array("I")`` is not little-endian 32-bit."""
    return array("I", packed) if _NATIVE_IDS else request.view_cells.tolist()


def check_consistency(request: UnmaskRequest, view_keys: dict[int, bytes], ctx: SecureSumContext, me: int,
                       view: frozenset[int], owners: list[int], prefix: bytes) -> None:
    """Raise unless, for every owner o, a strict majority of H(o) (this party included) stated
    views that agree with ``view`` on whether o survived, each statement authenticated by its MAC
    under the key this party shares with its author (checked lazily, once per author, until a
    majority agrees; on the complete graph, where H(o) is the roster for every o, each author's
    statement is checked once and the authors are counted per distinct view).

    On a sparse graph the statements are first checked as an honest run needs them: for each
    owner o, o's own (o is a neighbour of this party, so its statement counts for this party's
    own secrets too), then its other holders' in order, m - 1 of them, m = (k + 1) // 2 + 1 the
    majority of a holder set, each author's once; if they all agree, every owner has its
    majority.  An honest run on a k-regular graph checks at most k (m - 1) statements (32 for
    k = 8: the 8 owners' and 3 more per owner), fewer where holders share owners.  Otherwise
    the rule is decided owner by owner: the statements already authenticated are counted first,
    the others checked only while those are too few.  Which statements are checked first does
    not change the outcome: an owner short of a majority among those checked has every
    remaining statement of its holders checked before the party aborts."""
    signers = request.signers.tolist()
    statements = dict(zip(signers, range(len(signers))))
    ends = request.view_ends.tolist()
    starts = [0, *ends]  # view v is cells[starts[v]:ends[v]]
    packed = request.view_cells.astype("<u4", copy=False).tobytes()  # each view as its author packed it
    cells = _ids(packed, request)  # (the views checked are sliced from it: about half of them)
    view_of: list[int] = request.view_of.tolist()
    tags = request.tags
    # the statement view_tags MACs is prefix + signer + target + view (signer and target packed by one call)
    signed, blake, same, statement_of, key_of = _PAIR.pack, _blake2b, hmac.compare_digest, statements.get, view_keys.get

    def stated(w: int) -> int | None:
        """The index of the view ``w`` stated for this party, if its MAC verifies (None otherwise)."""
        i, key = statement_of(w), key_of(w)
        if i is None or key is None:
            return None
        v = view_of[i]
        mac = blake(key=key, digest_size=TAG_BYTES)  # (fed in parts: cheaper than joining the statement)
        mac.update(prefix)
        mac.update(signed(w, me))
        mac.update(packed[4 * starts[v]: 4 * ends[v]])
        if same(mac.digest(), tags[TAG_BYTES * i: TAG_BYTES * i + TAG_BYTES]):
            return v
        return None

    def abort(o: int, agree_: int, holders: int, need: int) -> SecureSumAborted:
        return SecureSumAborted(
            f"party {me}: only {agree_} of the {holders} Shamir holders of party {o} stated a "
            f"survivor set that agrees with the party's on party {o} ({need} needed): the controller "
            "told different parties different survivor sets, or too many dropped; nothing revealed",
            survivors=agree_, threshold=need)

    if type(ctx.neighbours) is CompleteNeighbourhoods:
        # H(o) is the whole roster for every owner o: authenticate each author once and count the
        # authors of each distinct view (honest runs have one), then each owner costs O(views)
        roster = ctx.neighbours.parties
        need = len(roster) // 2 + 1
        authors: dict[int, int] = {}  # view index -> authenticated authors who stated it
        for w in roster:
            if w != me:
                v = stated(w)
                if v is not None:
                    authors[v] = authors.get(v, 0) + 1
        views = [(frozenset(cells[starts[v]:ends[v]]), count) for v, count in authors.items()]
        for o in owners:
            alive = o in view
            agree_ = 1 + sum([count for ids, count in views if (o in ids) == alive])  # + this party
            if agree_ < need:
                raise abort(o, agree_, len(roster), need)
        return

    neighbours = ctx.neighbours
    checked: dict[int, Sequence[int] | None] = {}  # author -> its authenticated view (None: none, or a bad MAC)
    known = checked.get
    # an honest run first: each owner's first m - 1 holders besides this party (o itself first),
    # each statement authenticated once, must all agree; then every owner has its majority
    for o in owners:
        holders = neighbours[o]  # H(o): o and its neighbours
        want = (len(holders) + 1) // 2  # the other holders a strict majority of H(o) needs
        alive = o in view
        for w in (holders if o == me else (o, *holders)):
            if w == me:
                continue
            got = known(w, checked)  # (``checked`` itself: not authenticated yet)
            if got is checked:
                got = None
                i, key = statement_of(w), key_of(w)  # (stated, inlined)
                if i is not None and key is not None:
                    v = view_of[i]
                    a, b = starts[v], ends[v]
                    mac = blake(key=key, digest_size=TAG_BYTES)
                    mac.update(prefix)
                    mac.update(signed(w, me))
                    mac.update(packed[4 * a: 4 * b])
                    if same(mac.digest(), tags[TAG_BYTES * i: TAG_BYTES * i + TAG_BYTES]):
                        got = cells[a:b]
                checked[w] = got
            if got is None or (o in got) != alive:
                break  # (this owner is decided below, with every statement of its holders)
            want -= 1
            if not want:
                break
        if want:
            break
    else:
        return

    def authenticated(w: int) -> Sequence[int] | None:
        v = stated(w)
        return None if v is None else cells[starts[v]:ends[v]]

    for o in owners:  # the statements authenticated above kept: each author is checked once
        holders = neighbours[o]
        need = (len(holders) + 1) // 2 + 1
        alive = o in view
        agree_ = 1  # this party
        fresh = []  # authors not authenticated yet (or silent), checked only if those already are too few
        for w in (holders if o == me else (o, *holders)):
            got = known(w, checked)
            if got is checked:
                if w != me:
                    fresh.append(w)
            elif got is not None and (o in got) == alive:
                agree_ += 1
        if agree_ < need:
            for w in fresh:  # authenticated only while those already checked are too few
                got = checked[w] = authenticated(w)
                if got is not None and (o in got) == alive:
                    agree_ += 1
                    if agree_ >= need:
                        break
            if agree_ < need:
                raise abort(o, agree_, len(holders) + 1, need)


ConsistencyCall = tuple[UnmaskRequest, dict[int, bytes], int, frozenset[int], list[int]]
"""A party's consistency check: (its round-4 request, its MAC keys, its id, the survivor set it
was told, the owners of the shares it holds, itself included, in order)."""


def check_consistency_each(calls: Sequence[ConsistencyCall], ctx: SecureSumContext, prefix: bytes
                           ) -> list[SecureSumAborted | None]:
    """:func:`check_consistency` of each call, parties of one session: for each, None where it
    accepts, the SecureSumAborted it raises otherwise; the same outcome, party by party.

    The parties' first rule, an honest run's (each owner's first m - 1 other holders, o's own
    statement first, all authenticated and agreeing), is checked for all of them at once as
    columns (:func:`_honest_runs`): one MAC per distinct (party, author), back to back, and
    every view compared by array operations.  A party that it does not accept is decided by
    :func:`check_consistency` alone, which checks that rule again and then every statement it
    needs: the rule accepts only where :func:`check_consistency`'s own first pass returns."""
    fast = _honest_runs(calls, ctx.neighbours, prefix)
    out: list[SecureSumAborted | None] = []
    for accepted, (request, keys, me, view, owners) in zip(fast, calls):
        error = None
        if not accepted:
            try:
                check_consistency(request, keys, ctx, me, view, owners, prefix)
            except SecureSumAborted as exc:
                error = exc
        out.append(error)
    return out


_HIGH = np.int64(32)  # (a party's id shifted above a 32-bit id: one sortable key per (party, id))


def _honest_runs(calls: Sequence[ConsistencyCall], neighbours: Neighbourhoods, prefix: bytes) -> list[bool]:
    """For each call, whether :func:`check_consistency`'s first pass accepts it: for every owner
    o, the first (|N(o)| + 1) // 2 parties of (o, *N(o)) other than the party itself stated,
    under a MAC that verifies with the party's key, a view that agrees with the party's on
    whether o survived.  False for every call (each is then decided alone) on the complete
    graph, where the batch's owners are not all of one degree d, and where no request has a
    statement; False for a call where anything is missing or disagrees, or where a view it
    needs is longer than an honest one (d + 1 ids: no honest survivor is told more, and the
    arrays stay as small as the honest run's).  The requests are as their message's validation
    leaves them (signers increasing, each view index in range, views ending at the cells' end)."""
    declined = [False] * len(calls)
    if not calls or type(neighbours) is CompleteNeighbourhoods:
        return declined
    firsts = _first_holders(calls, neighbours)
    if firsts is None:
        return declined
    row_call, owner, alive, short, rows, authors, degree, me = firsts
    trip_call = row_call[rows]
    pairs, trip_pair = np.unique((trip_call << _HIGH) | authors, return_inverse=True)  # distinct (party, author)
    stated = _statements(calls, pairs, degree + 1)
    if stated is None:
        return declined
    verified = _verified(calls, prefix, pairs, me, stated)
    views = stated[3]
    # every (party, owner, author): a verified statement agreeing on the owner's fate
    agrees = (views[trip_pair] == owner[rows][:, None]).any(axis=1) == alive[rows]
    failed = np.bincount(trip_call[~(verified[trip_pair] & agrees)], minlength=len(calls))
    failed += np.bincount(row_call[short], minlength=len(calls))
    accepted: list[bool] = (failed == 0).tolist()
    return accepted


def _first_holders(calls: Sequence[ConsistencyCall], neighbours: Neighbourhoods
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int,
                              np.ndarray] | None:
    """The statements :func:`_honest_runs` checks, one row per (call, owner o): the row's call,
    o, whether o survived in the party's view, whether o has too few other holders; then per
    statement checked, its row and its author (the first (|N(o)| + 1) // 2 of (o, *N(o)), the
    party skipped); the owners' degree and each call's party.  None where there is no owner, or the owners'
    degrees differ, or are 0."""
    counts = np.fromiter(map(len, [owners for *_, owners in calls]), dtype=np.int64, count=len(calls))
    owner = np.fromiter(chain.from_iterable([owners for *_, owners in calls]), dtype=np.int64, count=int(counts.sum()))
    holders = list(map(neighbours.__getitem__, owner.tolist()))
    degree = len(holders[0]) if holders else 0
    if degree < 1 or any([len(h) != degree for h in holders]):
        return None
    row_call = np.repeat(np.arange(len(calls)), counts)
    me = np.fromiter([c[2] for c in calls], dtype=np.int64, count=len(calls))
    alive = np.fromiter(chain.from_iterable([[o in view for o in owners] for _, _, _, view, owners in calls]),
                        dtype=bool, count=owner.shape[0])
    candidates = np.empty((owner.shape[0], degree + 1), dtype=np.int64)  # (o, *N(o)) per row
    candidates[:, 0] = owner
    candidates[:, 1:] = np.fromiter(chain.from_iterable(holders), dtype=np.int64, count=owner.shape[0] * degree
                                    ).reshape(-1, degree)
    other = candidates != me[row_call][:, None]
    rank = np.cumsum(other, axis=1)
    want = (degree + 1) // 2
    rows, columns = np.nonzero(other & (rank <= want))
    return row_call, owner, alive, rank[:, -1] < want, rows, candidates[rows, columns], degree, me


def _statements(calls: Sequence[ConsistencyCall], pairs: np.ndarray, longest: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Where each (party, author) key of ``pairs`` stated its view in its party's request: its
    row among all the requests' signers, whether it is there with a view of at most ``longest``
    ids, that view's length, and the views as rows (padded with -1; a pair not found: none).
    None where no request has a signer, or the signers are not in increasing order."""
    requests = [c[0] for c in calls]
    n_signers = np.fromiter([r.signers.shape[0] for r in requests], dtype=np.int64, count=len(calls))
    signer_key = (np.repeat(np.arange(len(calls)), n_signers) << _HIGH) | np.concatenate(
        [r.signers for r in requests]).astype(np.int64)
    if signer_key.shape[0] == 0 or not (signer_key[1:] > signer_key[:-1]).all():
        return None
    at = np.minimum(np.searchsorted(signer_key, pairs), signer_key.shape[0] - 1)
    found = signer_key[at] == pairs
    n_views = np.fromiter([r.view_ends.shape[0] for r in requests], dtype=np.int64, count=len(calls))
    n_cells = np.fromiter([r.view_cells.shape[0] for r in requests], dtype=np.int64, count=len(calls))
    view_base, cell_base = np.cumsum(n_views) - n_views, np.cumsum(n_cells) - n_cells
    ends = np.concatenate([r.view_ends for r in requests]).astype(np.int64) + np.repeat(cell_base, n_views)
    starts = np.concatenate(([0], ends[:-1]))  # (a request's views end at its cells' end: the next one's start)
    view_of = np.concatenate([r.view_of for r in requests]).astype(np.int64)
    view = np.where(found, view_of[at] + view_base[pairs >> _HIGH], 0)  # (a pair not found: view 0, which exists)
    length = ends[view] - starts[view]
    found &= length <= longest
    first, length = np.where(found, starts[view], 0), np.where(found, length, 0)
    cells = np.concatenate([r.view_cells for r in requests]).astype(np.int64)
    widest = int(length.max(initial=0))
    views = np.full((pairs.shape[0], widest), -1, dtype=np.int64)
    within = np.arange(widest) < length[:, None]
    views[within] = cells[(first[:, None] + np.arange(widest))[within]]
    return at, found, length, views


def _verified(calls: Sequence[ConsistencyCall], prefix: bytes, pairs: np.ndarray, me: np.ndarray,
              stated: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Whether each (party, author) of ``pairs`` stated a view (``stated``: :func:`_statements`)
    under a tag that verifies with the party's key for the author: each statement written as its
    author wrote it (:func:`view_tags`: prefix, author, reader, view), MAC'd, back to back, and
    the tags compared as arrays (every byte of every tag, with no early exit: as
    :func:`hmac.compare_digest`, the time does not depend on where a tag differs); ``me``: each
    call's party."""
    at, found, length, views = stated
    pair_call, pair_author = pairs >> _HIGH, pairs & 0xFFFFFFFF
    bounds = np.searchsorted(pair_call, np.arange(len(calls) + 1)).tolist()  # (a party's pairs are consecutive)
    authors = pair_author.tolist()
    found_keys: list[bytes | None] = []
    for c, (_, view_keys, *_) in enumerate(calls):
        found_keys.extend(map(view_keys.get, authors[bounds[c]:bounds[c + 1]]))
    if None in found_keys:  # (a missing key's statement is not authenticated)
        found = found & np.fromiter([key is not None for key in found_keys], dtype=bool, count=len(found_keys))
    keys = cast(list[bytes], found_keys)
    sent = np.frombuffer(b"".join([c[0].tags for c in calls]), dtype="<u8").reshape(-1, 2)
    head = np.frombuffer(prefix, dtype=np.uint8)
    verified = np.zeros(pairs.shape[0], dtype=bool)
    spans = length[found]
    blake, size = _blake2b, TAG_BYTES
    for span in ([int(spans[0])] if spans.shape[0] and (spans == spans[0]).all() else np.unique(spans).tolist()):
        group = np.flatnonzero(found & (length == span))
        width = head.shape[0] + 4 * (2 + span)
        statements = np.empty((group.shape[0], width), dtype=np.uint8)
        statements[:, :head.shape[0]] = head
        body = statements[:, head.shape[0]:].view("<u4")  # author, reader, view
        body[:, 0], body[:, 1] = pair_author[group], me[pair_call[group]]
        body[:, 2:] = views[group, :span]
        blob = statements.tobytes()
        settle_vector_state()  # (the array operations above may leave the wide registers in use: vector_state.py)
        tags = b"".join([blake(blob[s:s + width], key=key, digest_size=size).digest()
                         for s, key in zip(range(0, len(blob), width), [keys[g] for g in group.tolist()])])
        verified[group] = (np.frombuffer(tags, dtype="<u8").reshape(-1, 2) == sent[at[group]]).all(axis=1)
    return verified
