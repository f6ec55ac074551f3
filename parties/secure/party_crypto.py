"""A masked-sum party's cryptography (:mod:`parties.secure.masked_party` calls it):
:class:`PartyCryptography`, the real primitives with the party's PKI key or right-sized
stand-ins for the counting driver, and the masking of an input (:func:`masked_input`,
:func:`input_seeds`, :func:`add_input_masks`; Bonawitz et al. 2017, Practical Secure
Aggregation, round MaskedInputCollection), and the consistency checks of a batch of parties
(:func:`check_each`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from secrets import token_bytes

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from mprr.errors import ConfigurationError, SecureSumAborted
from parties.secure.context import SecureSumContext
from parties.secure.crypto import (
    AEAD_OVERHEAD,
    NONCE_BYTES,
    KeyPair,
    ParsedKeys,
    agree_each,
    derive_keys_each,
    exchange_each,
    open_each,
    seal_each,
)
from parties.secure.messages import TAG_BYTES
from parties.secure.pki import KeyRegistry, Signer
from parties.secure.prg import fresh_seed
from parties.secure.ring import ZMod
from parties.secure.shamir import SHARE_BYTES, share_values
from parties.secure.topology import Neighbourhoods
from parties.secure.unmasking import add_masks
from parties.secure.values import into_ring
from parties.secure.views import (VIEW_KEY_BYTES, ConsistencyCall, check_consistency_each, combined_keys, pair_keys,
                                  view_tags)

__all__ = ["HandedKeys", "PartyCryptography", "add_input_masks", "check_each", "input_seeds", "masked_input",
           "zeros"]

_PAIR_PURPOSES = ("channel", "view")  # the keys a neighbour pair derives from its static agreement
HandedKeys = tuple[int, tuple[int, ...], tuple[bytes, ...]]
"""The view keys one owner handed a party: (owner, 2-hop peers, their keys)."""


def masked_input(ring: ZMod, x: np.ndarray, self_mask: bytes, s_sk: X25519PrivateKey,
                  peers: dict[int, bytes], session: str, me: int, parsed: ParsedKeys | None = None) -> np.ndarray:
    """Round 2: y = x + PRG(b) + sum_{j > me} PRG(s_{me,j}) - sum_{j < me} PRG(s_{me,j}) (mod M)
    over the ``peers`` (id -> s_pk) whose shares this party holds: :func:`add_input_masks` of
    :func:`input_seeds` (a batch of parties runs their steps one pass each: the agreements, their
    HKDF, the masks: :func:`mask_inputs`)."""
    return add_input_masks(ring, x, self_mask, input_seeds(s_sk, peers, session, me, parsed), peers, me)


def input_seeds(s_sk: X25519PrivateKey, peers: dict[int, bytes], session: str, me: int,
                parsed: ParsedKeys | None = None) -> list[bytes]:
    """The pairwise mask seeds s_{me,j} of ``me`` with each of ``peers`` (id -> s_pk), in their
    order: one X25519 agreement and its HKDF each (``parsed``: the session's memo of parsed
    keys, :attr:`~parties.secure.context.SecureSumContext.public_keys`)."""
    return agree_each(s_sk, list(peers.values()), purpose="mask", session=session, me=me, peers=list(peers),
                      parsed=parsed)


def add_input_masks(ring: ZMod, x: np.ndarray, self_mask: bytes, seeds: list[bytes], peers: dict[int, bytes],
                    me: int) -> np.ndarray:
    """:func:`masked_input` from the seeds of :func:`input_seeds`.  ``x`` is the party's own copy
    (:func:`~parties.secure.values.into_ring`): in the ring's dtype, it is masked in place."""
    if ring.modulus != 1 << (8 * ring.element_bytes):  # pragma: no cover - ring_modulus gives 2^32 or 2^64
        raise ConfigurationError(f"the masked engine computes in Z_(2^32) or Z_(2^64), got {ring}")
    # M = 2^(bits of the dtype): the dtype's wrap-around is the reduction, so add in place
    acc = x if x.dtype == ring.dtype else x.astype(ring.dtype)
    add_masks(acc, [self_mask, *seeds], [False, *[me > j for j in peers]])
    return acc


class PartyCryptography:
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

    def static_secrets(self, live: tuple[int, ...]) -> list[bytes]:
        """The X25519 agreements of this party's registered static key with those of its
        neighbours ``live``, in order (none for the counting driver's placeholders); MessageError
        for a neighbour without a registered key, or one the agreement refuses
        (:meth:`~parties.secure.pki.Signer.exchange_each`)."""
        if self.signer is None or self.registry is None:
            return []
        return self.signer.exchange_each(self.registry, live)

    def pair_keys(self, me: int, live: tuple[int, ...], session: str, shared: list[bytes]
                  ) -> tuple[dict[int, bytes], dict[int, bytes]]:
        """The AEAD channel keys and the consistency round's MAC keys of ``me`` and each of its
        neighbours ``live``, derived from their static agreements ``shared`` (:meth:`static_secrets`)."""
        if self.signer is None or self.registry is None:
            return dict.fromkeys(live, bytes(32)), dict.fromkeys(live, bytes(VIEW_KEY_BYTES))
        derived = derive_keys_each(shared, purposes=_PAIR_PURPOSES, session=session, a=me, peers=live)
        return ({j: keys[0] for j, keys in zip(live, derived)},
                {j: keys[1][:VIEW_KEY_BYTES] for j, keys in zip(live, derived)})

    def fresh_seed(self) -> bytes:
        return fresh_seed() if self.real else bytes(32)

    def share(self, values: tuple[bytes, bytes], xs: list[int], t: int) -> tuple[list[bytes], list[bytes]]:
        if not self.real:
            return [bytes(SHARE_BYTES)] * len(xs), [bytes(SHARE_BYTES)] * len(xs)
        sk_values, b_values = share_values(values, xs, t)
        return sk_values, b_values

    def handed_keys(self, live: tuple[int, ...], neighbours: Neighbourhoods) -> list[tuple[int | bytes, ...]]:
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

    def combined_keys(self, handed: list[HandedKeys], out: dict[int, bytes]) -> dict[int, bytes]:
        if not self.real:
            out.update(dict.fromkeys([h for _, peers, _ in handed for h in peers], bytes(VIEW_KEY_BYTES)))
            return out
        return combined_keys(handed, out)

    def mask_secrets(self, s_sk: KeyPair | None, peers: dict[int, bytes], ctx: SecureSumContext) -> list[bytes]:
        """The X25519 agreements of :func:`input_seeds` (none without a masking key: the counting
        driver's placeholders)."""
        return [] if s_sk is None else exchange_each(s_sk.private, list(peers.values()), peers=list(peers),
                                                     parsed=ctx.public_keys)

    def mask_seeds(self, s_sk: KeyPair | None, peers: dict[int, bytes], shared: list[bytes], ctx: SecureSumContext,
                   me: int) -> list[bytes]:
        """:func:`input_seeds` from its agreements ``shared`` (:meth:`mask_secrets`): their HKDF
        (none without a masking key: the counting driver's placeholders)."""
        if s_sk is None:
            return []
        return [keys[0] for keys in derive_keys_each(shared, purposes=("mask",), session=ctx.session, a=me,
                                                     peers=list(peers))]

    def masked(self, ring: ZMod, vector: np.ndarray, ctx: SecureSumContext, self_mask: bytes, seeds: list[bytes],
               peers: dict[int, bytes], me: int) -> np.ndarray:
        """:func:`add_input_masks` of the party's input in the ring, from the seeds of :meth:`mask_seeds`."""
        if not self.real:  # one read-only vector of the ring's zeros shared by every party's message
            return zeros(ring.dtype.str, ctx.length)
        return add_input_masks(ring, into_ring(vector, ctx, ring), self_mask, seeds, peers, me)

    def view_tags(self, keys: dict[int, bytes], prefix: bytes, me: int, targets: list[int], view: bytes) -> bytes:
        return view_tags(keys, prefix, me, targets, view) if self.real else bytes(TAG_BYTES * len(targets))


def check_each(cryptos: Sequence[PartyCryptography], calls: list[ConsistencyCall], ctx: SecureSumContext,
               prefix: bytes) -> list[SecureSumAborted | None]:
    """The consistency checks of parties of one session, ``calls[k]`` of the party whose
    cryptography is ``cryptos[k]``: :func:`~parties.secure.views.check_consistency_each` of those
    with real keys (None, no check, for the counting driver's placeholders)."""
    out: list[SecureSumAborted | None] = [None] * len(calls)
    real = [k for k, crypto in enumerate(cryptos) if crypto.real]
    for k, error in zip(real, check_consistency_each([calls[k] for k in real], ctx, prefix)):
        out[k] = error
    return out


@lru_cache(maxsize=4)
def zeros(dtype: str, length: int) -> np.ndarray:
    zeros = np.zeros(length, dtype=dtype)
    zeros.flags.writeable = False
    return zeros
