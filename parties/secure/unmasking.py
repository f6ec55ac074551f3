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
from collections.abc import Sequence

import numpy as np

from mprr.errors import ConfigurationError, MessageError, ProtocolError, SecureSumAborted
from parties.secure.crypto import KeyPair, agree
from parties.secure.context import SecureSumContext
from parties.secure.messages import SECRET_MASK_KEY, SECRET_SELF_MASK, PublicKeys, UnmaskShares
from parties.secure.prg import keystream, keystream_into
from parties.secure.ring import ZMod
from parties.secure.shamir import PRIME, SHARE_BYTES, reconstruct_bytes
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
    """

    def __init__(self, ctx: SecureSumContext, total: np.ndarray, survivors: set[int],
                 relayed: dict[int, tuple[int, ...]], keys: dict[int, PublicKeys], dropped: set[int],
                 answering: set[int]) -> None:
        self.ctx, self.total, self.survivors, self.relayed, self.keys = ctx, total, survivors, relayed, keys
        self.dropped = dropped
        # the shares of each owner's secret, {abscissa: value}: a holder has its own abscissa for
        # an owner and answers once, so an abscissa never comes twice (no conflict to check)
        self.b_shares: dict[int, dict[int, int]] = {v: {} for v in survivors}
        self.sk_shares: dict[int, dict[int, int]] = {u: {} for u in dropped}
        self.waiting: dict[int, int] = {}  # owner -> holders in ``answering`` that have not answered
        for h in answering:
            for o in (*relayed[h], h):
                self.waiting[o] = self.waiting.get(o, 0) + 1
        self.removed: set[int] = set()  # survivors whose self mask is out of the total
        self.error: MessageError | None = None

    def take(self, holder: int, msg: UnmaskShares) -> None:
        """One holder's answer (collect's ``accept``)."""
        if self.error is not None:
            return
        ctx, neighbours, survivors = self.ctx, self.ctx.neighbours, self.survivors
        owners = set(self.relayed[holder])
        owners.add(holder)
        values, from_bytes, b_shares, sk_shares = msg.values, int.from_bytes, self.b_shares, self.sk_shares
        sparse = type(neighbours) is not CompleteNeighbourhoods
        shares: list[tuple[dict[int, int], int, int]] = []
        start = 0
        for owner, kind, x in zip(msg.owners.tolist(), msg.which, msg.abscissae.tolist()):
            alive = owner in survivors
            if owner not in owners or kind != (SECRET_SELF_MASK if alive else SECRET_MASK_KEY) or x != (
                    bisect_left(neighbours[owner], holder) + 1 + (owner < holder) if sparse  # (abscissa, inlined)
                    else abscissa(neighbours, owner, holder)):
                self.error = MessageError(f"party {holder} returned a share that was not requested")
                return
            y = from_bytes(values[start: start + SHARE_BYTES], "big")  # (33 bytes: the message's check)
            start += SHARE_BYTES
            if y >= PRIME:
                self.error = MessageError(f"party {holder} returned a share value outside GF(p) for party {owner} "
                                          "(share values must be < p = 2^256 + 297)")
                return
            shares.append(((b_shares if alive else sk_shares)[owner], x, y))  # (checked as a Share would be)
        for held, x, y in shares:
            held[x] = y
        waiting, threshold = self.waiting, ctx.threshold
        for o in owners:
            left = waiting[o] = waiting[o] - 1
            if left == 0 and o in survivors and len(b_shares[o]) >= threshold:
                try:
                    self._remove_self_mask(o)
                except (SecureSumAborted, ConfigurationError):
                    pass  # (inconsistent shares) raised again, in its turn, by finish

    def _remove_self_mask(self, v: int) -> None:
        b_v = reconstruct_secret(self.b_shares[v], self.ctx.threshold, f"the self mask of surviving party {v}")
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
                self._remove_self_mask(v)
        for u in sorted(self.dropped):
            raw = reconstruct_secret(self.sk_shares[u], ctx.threshold, f"the mask key of dropped party {u}")
            s_u = KeyPair.from_private_bytes(raw)
            if s_u.public != keys[u].keys[0]:
                raise ProtocolError(f"reconstructed mask key of party {u} does not match its public key")
            for v in self.relayed[u]:
                if v not in self.survivors:
                    continue
                seed = agree(s_u.private, keys[v].keys[0], purpose="mask", session=ctx.session, me=u, peer=v)
                # survivor v added +PRG(s_uv) if v < u and -PRG(s_uv) if v > u: take it out
                add_mask(total, seed, subtract=v < u)
        return total


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
