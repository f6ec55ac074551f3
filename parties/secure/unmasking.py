"""The masked engine's unmasking (Bonawitz et al. 2017, Figure 4, round 4 at the server).

Each holder's answer is checked as it arrives: only the shares that were requested, i.e. for
each owner it holds shares of, the secret that owner's fate calls for (the self-mask seed b_o of
a survivor, the masking key s_sk_o of a dropped party) at the holder's public Shamir abscissa.
A survivor's self mask PRG(b_v) is reconstructed from any t shares and subtracted from the sum of
the masked inputs as soon as its holders have answered; at the end, each dropped party's masking
key is reconstructed, checked against the public key it advertised, and the pairwise masks
PRG(s_uv) it shares with the survivors are taken out:

    sum_{v in U3} x_v = sum_{v in U3} y_v - sum_{v in U3} PRG(b_v)
                        + sum_{u dropped} sum_{v in U3 ∩ N(u)} ±PRG(s_uv)    (mod M).

Also here, because the party side uses them too: :func:`abscissa` (the public abscissa of a
holder's share of an owner's secrets), :func:`mask_vector` (PRG(seed) as a vector of Z_M) and
:func:`add_mask` (a vector of Z_M plus or minus PRG(seed), in place).
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np

from mprr.errors import ConfigurationError, MessageError, ProtocolError, SecureSumAborted
from parties.secure.crypto import KeyPair, agree
from parties.secure.context import SecureSumContext
from parties.secure.messages import SECRET_MASK_KEY, SECRET_SELF_MASK, PublicKeys, UnmaskShares
from parties.secure.prg import keystream, keystream_into
from parties.secure.ring import ZMod
from parties.secure.shamir import PRIME, SHARE_BYTES, interpolate_rows, reconstruct_bytes
from parties.secure.topology import CompleteNeighbourhoods, Neighbourhoods

__all__ = ["Unmasking", "abscissa", "add_mask", "add_masks", "mask_vector", "reconstruct_secret"]


def abscissa(neighbours: Neighbourhoods, owner: int, holder: int) -> int:
    """Shamir abscissa of ``holder``'s share of ``owner``'s secrets: 1 + rank of ``holder``
    in the sorted holder set N(owner) + {owner} (public, so every actor can check it)."""
    if type(neighbours) is CompleteNeighbourhoods:
        return neighbours.rank(owner, holder) + 1 + (owner < holder)
    return bisect_left(neighbours[owner], holder) + 1 + (owner < holder)


def mask_vector(ring: ZMod, seed: bytes, length: int) -> np.ndarray:
    """PRG(seed) as a vector of Z_M (ChaCha20 keystream, little-endian words)."""
    return np.frombuffer(keystream(seed, length * ring.element_bytes), dtype=_LITTLE[ring.element_bytes])


_LITTLE = {size: np.dtype(f"<u{size}") for size in (1, 2, 4, 8)}


class _Scratch(threading.local):
    """A thread's buffer for one keystream and its little-endian words, by length in bytes."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[int, int], tuple[bytearray, np.ndarray]] = {}


_SCRATCH = _Scratch()


def add_mask(acc: np.ndarray, seed: bytes, *, subtract: bool = False) -> None:
    """``acc += PRG(seed)`` (``subtract``: ``-=``) in place, in Z_M for M = 2^(bits of
    ``acc``'s unsigned dtype): the dtype's wrap-around is the reduction.  The same words as
    :func:`mask_vector`, expanded into a buffer this thread reuses (no new bytes per mask)."""
    add_masks(acc, (seed,), (subtract,))


def add_masks(acc: np.ndarray, seeds: Sequence[bytes], subtract: Sequence[bool]) -> None:
    """:func:`add_mask` of each of ``seeds`` (``subtract[k]``: minus PRG(seeds[k])), in order:
    the vector checked and the thread's buffer found once (a party's self mask and pairwise
    masks at once)."""
    size = acc.dtype.itemsize
    if acc.dtype.kind != "u" or acc.ndim != 1:
        raise ConfigurationError(f"add_mask needs a 1-D unsigned vector, got {acc.dtype} of shape {acc.shape}")
    if len(seeds) != len(subtract):
        raise ConfigurationError(f"add_masks needs one subtract flag per seed, got {len(seeds)} seeds "
                                 f"and {len(subtract)} flags")
    key = (acc.shape[0], size)
    scratch = _SCRATCH.buffers.get(key)
    if scratch is None:
        raw = bytearray(acc.shape[0] * size)
        scratch = _SCRATCH.buffers[key] = (raw, np.frombuffer(raw, dtype=_LITTLE[size]))
    raw, words = scratch
    plus, minus = np.add, np.subtract
    for seed, sub in zip(seeds, subtract):
        keystream_into(seed, raw)
        (minus if sub else plus)(acc, words, out=acc)


class Unmasking:
    """Round 4 at the controller, as the answers arrive: the shares each holder returns are
    checked (only what was requested: for each owner it holds, the secret that owner's fate
    calls for, at its abscissa), and a survivor's self mask is reconstructed and removed from
    ``total`` (the sum of the masked inputs) as soon as every holder of it in ``answering``
    has answered, i.e. from exactly the shares the end of the round would give it.  So the
    work overlaps the other holders' and what :meth:`finish` does, and the errors it raises
    (the first bad answer, then the first survivor or dropped party that cannot be
    reconstructed), are those of doing it all at the end.

    The shares are kept as columns, one row per party (its secret's shares by abscissa, 33
    bytes each, and which of them arrived), and counted per owner in an array: a delivery of
    many answers (:meth:`take_all`) is checked and filed by array operations, each answer
    alone (:meth:`take`) by the same rules one share at a time.
    """

    def __init__(self, ctx: SecureSumContext, total: np.ndarray, survivors: set[int],
                 relayed: dict[int, tuple[int, ...]], keys: dict[int, PublicKeys], dropped: set[int],
                 answering: set[int]) -> None:
        self.ctx, self.total, self.survivors, self.relayed, self.keys = ctx, total, survivors, relayed, keys
        self.dropped = dropped
        neighbours = ctx.neighbours
        self._ids = ids = np.asarray(ctx.parties, dtype=np.int64)  # (sorted: row of a party = its rank)
        n = ids.shape[0]
        complete = type(neighbours) is CompleteNeighbourhoods
        degrees = np.full(n, n - 1, dtype=np.int64) if complete else np.fromiter(
            map(len, map(neighbours.__getitem__, ctx.parties)), dtype=np.int64, count=n)
        width = int(degrees.max()) + 1  # the largest holder set: abscissae 1..width
        # the share of party row r's secret at abscissa x is shares[r, x - 1] (present: it arrived)
        self._shares = np.zeros((n, width, SHARE_BYTES), dtype=np.uint8)
        self._present = np.zeros((n, width), dtype=bool)
        self._alive = np.zeros(n, dtype=bool)
        self._alive[self._rows(sorted(survivors))] = True
        self._neighbours: np.ndarray | None = None  # sorted neighbour ids, padded (None: the complete graph)
        if not complete:
            self._neighbours = np.full((n, width - 1), np.iinfo(np.int64).max, dtype=np.int64)
            flat = np.fromiter(chain.from_iterable(map(neighbours.__getitem__, ctx.parties)), dtype=np.int64,
                               count=int(degrees.sum()))
            self._neighbours[np.arange(width - 1) < degrees[:, None]] = flat
        # each answering holder's owners (itself and those that relayed it shares), as rows, by holder
        holders = sorted(answering)
        owned = [(*relayed[h], h) for h in holders]
        counts = np.fromiter(map(len, owned), dtype=np.int64, count=len(owned))
        owner_rows = self._rows(np.fromiter(chain.from_iterable(owned), dtype=np.int64, count=int(counts.sum())))
        holder_rows = np.repeat(self._rows(holders), counts)
        self._pairs = np.sort(holder_rows * n + owner_rows)  # (holder, owner) pairs a holder may answer for
        self._waiting = np.bincount(owner_rows, minlength=n)  # holders in ``answering`` not answered yet
        self.removed: set[int] = set()  # survivors whose self mask is out of the total
        self.error: MessageError | None = None

    def _rows(self, parties: Sequence[int] | np.ndarray) -> np.ndarray:
        """The rows of ``parties`` (ids of the sum)."""
        return np.searchsorted(self._ids, np.asarray(parties, dtype=np.int64))

    def take(self, holder: int, msg: UnmaskShares) -> None:
        """One holder's answer (collect's ``accept``)."""
        if self.error is not None:
            return
        neighbours, survivors = self.ctx.neighbours, self.survivors
        owners = set(self.relayed[holder])
        owners.add(holder)
        values, from_bytes = msg.values, int.from_bytes
        sparse = self._neighbours is not None
        start = 0
        for owner, kind, x in zip(msg.owners.tolist(), msg.which, msg.abscissae.tolist()):
            alive = owner in survivors
            if owner not in owners or kind != (SECRET_SELF_MASK if alive else SECRET_MASK_KEY) or x != (
                    bisect_left(neighbours[owner], holder) + 1 + (owner < holder) if sparse  # (abscissa, inlined)
                    else abscissa(neighbours, owner, holder)):
                self.error = MessageError(f"party {holder} returned a share that was not requested")
                return
            if from_bytes(values[start: start + SHARE_BYTES], "big") >= PRIME:  # (33 bytes: the message's check)
                self.error = MessageError(f"party {holder} returned a share value outside GF(p) for party {owner} "
                                          "(share values must be < p = 2^256 + 297)")
                return
            start += SHARE_BYTES
        self._file(self._rows(msg.owners), msg.abscissae, values, self._rows(sorted(owners)))

    def take_all(self, answers: Mapping[int, UnmaskShares]) -> None:
        """The answers of one delivery, holder by holder in their order (collect's ``accept``
        of each): checked and filed together by array operations; if any is not what its holder
        was asked for (or a value needs the exact check against p), each is taken in turn
        (:meth:`take`), so that the first bad one is the error."""
        if self.error is not None or not answers:
            return
        if len(answers) < _COLUMNS_FROM or not self._pairs.shape[0]:
            for holder, msg in answers.items():
                self.take(holder, msg)
            return
        msgs = list(answers.values())
        counts = np.fromiter([msg.owners.shape[0] for msg in msgs], dtype=np.int64, count=len(msgs))
        holder_ids = np.repeat(np.fromiter(answers, dtype=np.int64, count=len(msgs)), counts)
        owner_ids = np.concatenate([msg.owners for msg in msgs]).astype(np.int64)
        xs = np.concatenate([msg.abscissae for msg in msgs]).astype(np.int64)
        which = np.frombuffer(b"".join([msg.which for msg in msgs]), dtype=np.uint8)
        values = np.frombuffer(b"".join([msg.values for msg in msgs]), dtype=np.uint8).reshape(-1, SHARE_BYTES)
        ids = self._ids
        n = ids.shape[0]
        owner_rows = np.minimum(self._rows(owner_ids), n - 1)  # (an id outside the roster: caught below)
        holder_rows = np.minimum(self._rows(holder_ids), n - 1)
        pairs = holder_rows * n + owner_rows
        at = np.minimum(np.searchsorted(self._pairs, pairs), self._pairs.shape[0] - 1)
        if self._neighbours is None:  # the complete graph: a holder's abscissa is 1 + its rank in the roster
            expected = holder_rows + 1
        else:  # (abscissa: 1 + the holder's rank among the owner's sorted neighbours, + 1 past the owner)
            expected = (self._neighbours[owner_rows] < holder_ids[:, None]).sum(axis=1) + 1 + (owner_ids < holder_ids)
        if not (bool((ids[owner_rows] == owner_ids).all()) and bool((ids[holder_rows] == holder_ids).all())
                and bool((self._pairs[at] == pairs).all()) and bool((which == np.where(self._alive[owner_rows],
                                                                                    SECRET_SELF_MASK,
                                                                                    SECRET_MASK_KEY)).all())
                and bool((xs == expected).all()) and not values[:, 0].any()):  # (a first byte 0: below 2^256 < p)
            for holder, msg in answers.items():
                self.take(holder, msg)
            return
        self._shares[owner_rows, xs - 1] = values
        self._present[owner_rows, xs - 1] = True
        asked = [(*self.relayed[h], h) for h in answers]
        asked_rows = self._rows(np.fromiter(chain.from_iterable(asked), dtype=np.int64,
                                            count=sum(map(len, asked))))
        self._settle(asked_rows)

    def _file(self, owner_rows: np.ndarray, xs: np.ndarray, values: bytes, asked_rows: np.ndarray) -> None:
        """File one answer's checked shares; its holder has answered for the owners ``asked_rows``."""
        column = xs.astype(np.int64) - 1
        self._shares[owner_rows, column] = np.frombuffer(values, dtype=np.uint8).reshape(-1, SHARE_BYTES)
        self._present[owner_rows, column] = True
        self._settle(asked_rows)

    def _settle(self, asked_rows: np.ndarray) -> None:
        """Count the answers for the owners ``asked_rows`` (a row once per answer); remove the self
        mask of each survivor whose last answering holder this was, if enough shares arrived."""
        waiting = self._waiting
        np.subtract.at(waiting, asked_rows, 1)
        done = np.unique(asked_rows[waiting[asked_rows] == 0])
        t = self.ctx.threshold
        done = done[self._alive[done] & (self._present[done].sum(axis=1) >= t)]
        first = self._present[done, :t].all(axis=1) if t >= 1 else np.zeros(done.shape[0], dtype=bool)
        if first.any():  # the shares at abscissae 1..t arrived (the t smallest): reconstructed together
            self._remove_self_masks_together(done[first], t)
        rest = done[~first].tolist()
        for v, row in zip(self._ids[rest].tolist(), rest):
            try:
                self._remove_self_mask(v, row)
            except (SecureSumAborted, ConfigurationError):
                pass  # (inconsistent shares) raised again, in its turn, by finish

    def _remove_self_masks_together(self, rows: np.ndarray, t: int) -> None:
        """:meth:`_remove_self_mask` of the survivors at ``rows``, whose shares at abscissae 1..t
        (the t smallest, as :func:`~parties.secure.shamir.interpolate` takes) all arrived: their
        self masks reconstructed together and taken out of the total in one pass.  A survivor
        whose shares reconstruct no 32-byte seed (inconsistent) is left in place: :meth:`finish`
        raises for it, in its turn."""
        seeds = interpolate_rows(self._shares[rows, :t].tobytes(), tuple(range(1, t + 1)))
        fits = [b_v >> 256 == 0 for b_v in seeds]
        add_masks(self.total, [b_v.to_bytes(32, "big") for b_v, ok in zip(seeds, fits) if ok],
                  [True] * sum(fits))
        self.removed.update(self._ids[rows[fits]].tolist())

    def _points(self, row: int) -> dict[int, int]:
        """The shares of the secret of the party at ``row`` that arrived, {abscissa: value}."""
        data, from_bytes = self._shares[row].tobytes(), int.from_bytes
        return {x + 1: from_bytes(data[SHARE_BYTES * x: SHARE_BYTES * x + SHARE_BYTES], "big")
                for x, arrived in enumerate(self._present[row].tolist()) if arrived}

    def _remove_self_mask(self, v: int, row: int) -> None:
        """Reconstruct survivor ``v``'s self mask (its shares at ``row``) and take it out of the total."""
        b_v = reconstruct_secret(self._points(row), self.ctx.threshold, f"the self mask of surviving party {v}")
        add_mask(self.total, b_v, subtract=True)
        self.removed.add(v)

    def finish(self, order: list[int]) -> np.ndarray:
        """The sum, once the round is over: the self masks not removed yet (survivors in
        ``order``), then the masks the survivors share with the dropped parties."""
        if self.error is not None:
            raise self.error
        ctx, total, keys = self.ctx, self.total, self.keys
        for v in order:
            if v not in self.removed:
                self._remove_self_mask(v, int(self._rows([v])[0]))
        for u in sorted(self.dropped):
            raw = reconstruct_secret(self._points(int(self._rows([u])[0])), ctx.threshold,
                                     f"the mask key of dropped party {u}")
            s_u = KeyPair.from_private_bytes(raw)
            if s_u.public != keys[u].keys[0]:
                raise ProtocolError(f"reconstructed mask key of party {u} does not match its public key")
            for v in self.relayed[u]:
                if v not in self.survivors:
                    continue
                seed = agree(s_u.private, keys[v].keys[0], purpose="mask", session=ctx.session, me=u, peer=v,
                             parsed=ctx.public_keys)
                # survivor v added +PRG(s_uv) if v < u and -PRG(s_uv) if v > u: take it out
                add_mask(total, seed, subtract=v < u)
        return total


_COLUMNS_FROM = 16
"""The fewest answers :meth:`Unmasking.take_all` files by array operations (fewer: one by one)."""


def reconstruct_secret(shares: dict[int, int], threshold: int, what: str) -> bytes:
    """The 32-byte secret of ``shares`` ({abscissa: value}, :func:`~parties.secure.shamir.interpolate`);
    too few of them abort the sum, naming ``what``."""
    try:
        return reconstruct_bytes(shares, threshold)
    except SecureSumAborted as exc:
        raise SecureSumAborted(
            f"masked secure sum aborted: cannot reconstruct {what}: {len(shares)} share(s) "
            f"arrived, threshold t = {threshold}",
            survivors=len(shares), threshold=threshold,
        ) from exc
