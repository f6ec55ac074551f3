"""The consistency round of the masked engine: survivor views stated once and MAC'd.

Bonawitz et al. 2017 (Section 6, ConsistencyCheck) have every survivor sign the survivor set it
was told and every party verify the signatures of the other holders of the owners it holds
shares of before it reveals anything.  Here each statement is MAC'd (HMAC-SHA256, 128-bit
tags) for each reader under a key the two share (:mod:`parties.secure.masked` explains why
this gives the same guarantee): neighbours derive it from their static X25519 agreement, two
holders of an owner that are not neighbours combine the keys their common owners sealed for
them (:func:`pair_keys`, :func:`combined_key`).

- party: :func:`view_tag` over :func:`statement_prefix` and the packed view
  (:func:`pack_ids`); :func:`check_consistency` before revealing any share;
- controller: :func:`survivor_view` (what a survivor is told) and :func:`unmask_request`
  (the round-4 message carrying the views a party needs, MAC'd for it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
from collections.abc import Iterable

import numpy as np

from mprr.errors import SecureSumAborted
from parties.secure.engine import SecureSumContext
from parties.secure.messages import TAG_BYTES, UnmaskRequest, id_vector
from parties.secure.topology import CompleteNeighbourhoods, Neighbourhoods

__all__ = [
    "KEY_ENTRY",
    "VIEW_KEY_BYTES",
    "check_consistency",
    "combined_key",
    "pack_ids",
    "pair_keys",
    "statement_prefix",
    "survivor_view",
    "unmask_request",
    "view_tag",
]

_VIEW = "masked/survivors"  # what the consistency round's MACs are for


def survivor_view(ctx: SecureSumContext, party: int, survivors: set[int]) -> tuple[int, ...]:
    """What ``party`` is told in round 3: the survivors among its Shamir holders, sorted."""
    return tuple(sorted(w for w in (*ctx.neighbours[party], party) if w in survivors))


def unmask_request(session: str, party: int, wanted: Iterable[int],
                   statements: dict[int, tuple[bytes, dict[int, int], bytes]]) -> UnmaskRequest:
    """The round-4 message to ``party``: the views, MAC'd for it, of every other holder w of
    every owner it holds shares of (``wanted``: its 2-hop neighbourhood; on the complete graph,
    everybody), from ``statements[w] = (w's view as packed uint32 ids, target -> index of the
    tag w wrote for it, w's tags)``; equal views are sent once."""
    signers: list[int] = []
    view_of: list[int] = []
    chosen: list[bytes] = []
    parts: list[bytes] = []
    ends: list[int] = []
    index: dict[bytes, int] = {}
    cells = 0
    for w in sorted(wanted):
        stated = statements.get(w)
        if w == party or stated is None:
            continue
        packed, positions, tags = stated
        i = positions.get(party)
        if i is None:
            continue
        k = index.get(packed)
        if k is None:
            k = index[packed] = len(parts)
            parts.append(packed)
            cells += len(packed) // 4
            ends.append(cells)
        signers.append(w)
        view_of.append(k)
        chosen.append(tags[TAG_BYTES * i: TAG_BYTES * (i + 1)])
    return UnmaskRequest(session, np.frombuffer(b"".join(parts), dtype=np.uint32), id_vector(ends),
                         id_vector(signers), id_vector(view_of), b"".join(chosen))


def pack_ids(ids: tuple[int, ...]) -> bytes:
    return struct.pack(f"<{len(ids)}I", *ids)


VIEW_KEY_BYTES = 16
"""Length of the pairwise MAC keys of the consistency round (HMAC-SHA256 keys, 128 bits)."""
KEY_ENTRY = struct.Struct(f"<I{VIEW_KEY_BYTES}s")  # other holder, pairwise view key (sealed by the owner)
_PAIR = struct.Struct("<II")  # signer, target
_OWNER = struct.Struct("<I")


def pair_keys(live: tuple[int, ...], neighbours: Neighbourhoods) -> dict[int, dict[int, bytes]]:
    """Fresh MAC keys for the pairs of ``live`` holders that are not neighbours of each other
    (``keys[w][h] == keys[h][w]``), from :func:`secrets.token_bytes`: the owner seals
    ``keys[w]`` for holder w.  Neighbours already share a key from their own X25519 agreement."""
    keys: dict[int, dict[int, bytes]] = {w: {} for w in live}
    if isinstance(neighbours, CompleteNeighbourhoods):  # all adjacent
        return keys
    adjacent = {w: frozenset(neighbours[w]) for w in live}
    pairs = [(w, h) for i, w in enumerate(live) for h in live[i + 1:] if h not in adjacent[w]]
    raw = secrets.token_bytes(VIEW_KEY_BYTES * len(pairs))
    for k, (w, h) in enumerate(pairs):
        keys[w][h] = keys[h][w] = raw[VIEW_KEY_BYTES * k: VIEW_KEY_BYTES * (k + 1)]
    return keys


def combined_key(handed: list[tuple[int, bytes]]) -> bytes:
    """The MAC key of two holders that are not neighbours: SHA-256 of the keys every common owner
    handed them (in owner order), so that only a coalition of all their common owners knows it."""
    if len(handed) > 1:
        handed = sorted(handed)
    return hashlib.sha256(b"mprr/view-key" + b"".join([_OWNER.pack(o) + key for o, key in handed])
                          ).digest()[:VIEW_KEY_BYTES]


def statement_prefix(session: str) -> bytes:
    tag = _VIEW.encode()
    sess = session.encode()
    return b"mprr/" + struct.pack("<I", len(tag)) + tag + struct.pack("<I", len(sess)) + sess


def view_tag(key: bytes, prefix: bytes, signer: int, target: int, view: bytes) -> bytes:
    """HMAC-SHA256 (truncated to 128 bits) of ``signer``'s statement to ``target`` that ``view``
    (packed ids) is the survivor set it was told."""
    return hmac.digest(key, prefix + _PAIR.pack(signer, target) + view, "sha256")[:TAG_BYTES]


def check_consistency(request: UnmaskRequest, view_keys: dict[int, bytes], ctx: SecureSumContext, me: int,
                       view: frozenset[int], owners: list[int], prefix: bytes) -> None:
    """Raise unless, for every owner o, a strict majority of H(o) (this party included) stated
    views that agree with ``view`` on whether o survived, each statement authenticated by its MAC
    under the key this party shares with its author (checked lazily, once per author)."""
    ends = request.view_ends.tolist()
    starts = [0, *ends[:-1]]
    packed = request.view_cells.astype("<u4", copy=False).tobytes()  # each view as its author packed it
    cells = request.view_cells.tolist()
    statements = {w: i for i, w in enumerate(request.signers.tolist())}
    view_of = request.view_of.tolist()
    tags = request.tags
    head = prefix  # + signer, target, view: the statement view_tag MACs
    pair, digest, same = _PAIR.pack, hmac.digest, hmac.compare_digest
    checked: dict[int, frozenset[int] | None] = {}  # author -> its authenticated view (None: bad MAC)

    def stated(w: int) -> frozenset[int] | None:
        i, key = statements.get(w), view_keys.get(w)
        got: frozenset[int] | None = None
        if i is not None and key is not None:
            v = view_of[i]
            mac = digest(key, head + pair(w, me) + packed[4 * starts[v]: 4 * ends[v]], "sha256")[:TAG_BYTES]
            if same(mac, tags[TAG_BYTES * i: TAG_BYTES * (i + 1)]):
                got = frozenset(cells[starts[v]: ends[v]])
        checked[w] = got
        return got

    for o in owners:
        holders = (*ctx.neighbours[o], o)
        need = len(holders) // 2 + 1
        alive = o in view
        agree_ = 1  # this party
        for w in holders:  # the authors already authenticated first
            got = checked.get(w)
            if got is not None and w != me and (o in got) == alive:
                agree_ += 1
        for w in holders:  # then check new ones until a majority agrees
            if agree_ >= need:
                break
            if w == me or w in checked or w not in statements:
                continue
            got = stated(w)
            if got is not None and (o in got) == alive:
                agree_ += 1
        if agree_ < need:
            raise SecureSumAborted(
                f"party {me}: only {agree_} of the {len(holders)} Shamir holders of party {o} stated a "
                f"survivor set that agrees with the party's on party {o} ({need} needed): the controller "
                "told different parties different survivor sets, or too many dropped; nothing revealed",
                survivors=agree_, threshold=need)
