"""Message kinds of the secure-sum engines (frozen, typed dataclasses of :mod:`parties.wire.codec`).

Every message carries the ``session`` it belongs to, so two secure sums running over the same
network never mix; receivers check it.  Arrays are 1-D unsigned vectors of ring elements
(:class:`parties.secure.ring.ZMod` chooses the dtype); lists of party ids are sorted uint32
vectors.  Keys are raw 32-byte X25519 public keys; ciphertexts are ChaCha20-Poly1305 blobs
(:func:`parties.secure.crypto.seal`).  A list of blobs travels as one buffer and the ends of its
entries (:func:`bundle`), never as one field per blob, so that the controller relays a bundle by
slicing bytes: decoding and re-encoding a tuple of blobs per party was a fifth of its CPU.

=====  ==================  =========================================================  ===================
kind   class               meaning                                                    engines
=====  ==================  =========================================================  ===================
64     ShareVector         additive share(s) r_ij of one party for another            paper, graph
65     PartialSum          r_j = sum of received shares (+ own indicator)             paper, graph
66     PublicKeys          a party's X25519 public key (graph-relay: signed)          masked, graph-relay
67     KeyDirectory        controller -> party: public keys of its live neighbours    masked, graph-relay
68     SealedShares        party -> controller: AEAD ciphertexts, one per neighbour   masked, graph-relay
69     RelayedShares       controller -> party: ciphertexts addressed to it           masked, graph-relay
70     MaskedInput         y_i = x_i + masks (mod M)                                  masked
71     UnmaskRequest       controller -> survivor: the MAC'd survivor statements      masked
72     UnmaskShares        survivor -> controller: Shamir shares for unmasking        masked
73     SurvivorSet         controller -> survivor: the survivors among its holders    masked
74     SurvivorTags        survivor -> controller: its view, MAC'd for each reader    masked
=====  ==================  =========================================================  ===================

Signatures are Ed25519 (64 bytes) under the keys of the PKI (:mod:`parties.secure.pki`); the
consistency round's statements are keyed BLAKE2b tags (16 bytes) under pairwise keys each owner
seals for its Shamir holders (:mod:`parties.secure.masked`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from itertools import accumulate
from typing import Annotated

import numpy as np

from mprr.errors import MessageError
from parties.wire.codec import ArraySpec, Message, message

__all__ = [
    "ShareVector",
    "PartialSum",
    "PublicKeys",
    "KeyDirectory",
    "SealedShares",
    "RelayedShares",
    "MaskedInput",
    "UnmaskRequest",
    "UnmaskShares",
    "SurvivorSet",
    "SurvivorTags",
    "TAG_BYTES",
    "TO_CONTROLLER",
    "blobs",
    "bundle",
    "id_vector",
    "SECRET_SELF_MASK",
    "SECRET_MASK_KEY",
]

RingVector = Annotated[np.ndarray, ArraySpec(("uint8", "uint16", "uint32", "uint64"), ndim=1)]
IdVector = Annotated[np.ndarray, ArraySpec(("uint32",), ndim=1)]

TAG_BYTES = 16
"""Length of the keyed BLAKE2b tags (RFC 7693, 128-bit digest) of the consistency round."""

SECRET_SELF_MASK = 0
"""UnmaskShares.which: share of the self-mask seed b_u of a surviving party u."""
SECRET_MASK_KEY = 1
"""UnmaskShares.which: share of the mask private key s_sk_u of a dropped party u."""
_SECRETS = bytes((SECRET_SELF_MASK, SECRET_MASK_KEY))


def _session(name: str, session: str) -> None:
    if not session:
        raise MessageError(f"{name}.session must not be empty")


def id_vector(ids: Iterable[int]) -> np.ndarray:
    """Party ids as the read-only uint32 vector the id fields carry (OverflowError for an id
    outside 0..2^32 - 1)."""
    return np.frombuffer(array(_U32, ids).tobytes(), dtype=np.uint32)  # (read-only: over bytes)


_U32 = "I" if array("I").itemsize == 4 else "L"


def bundle(entries: Iterable[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray, bytes]:
    """``(ids, ends, data)`` of a list of ``(party id, blob)``: blob k is
    ``data[ends[k - 1]:ends[k]]`` (``ends[-1] == len(data)``), see :func:`blobs`."""
    pairs = list(entries)
    parts = [blob for _, blob in pairs]
    return id_vector([pid for pid, _ in pairs]), id_vector(accumulate(map(len, parts))), b"".join(parts)


def blobs(ends: np.ndarray, data: bytes) -> list[bytes]:
    """The blobs of a :func:`bundle` (slices of ``data``)."""
    out, start = [], 0
    for end in ends.tolist():
        out.append(data[start:end])
        start = end
    return out


def _ascending(values: list[int]) -> bool:
    """Strictly increasing, i.e. sorted and distinct (a Python check: cheaper than numpy on the
    short vectors here; sorting a sorted list is one pass)."""
    return values == sorted(values) and len(set(values)) == len(values)


def _ascending_vector(values: np.ndarray) -> bool:
    """:func:`_ascending` of a 1-D vector: through a list when short, numpy's comparison of
    neighbours when long (none out of order: counted, which costs less than ``all``'s reduction;
    the list and its sort cost more than the two slices from about 20 entries on)."""
    if values.shape[0] > _NUMPY_FROM:
        return not _count(values[1:] <= values[:-1])
    return _ascending(values.tolist())


_NUMPY_FROM = 20
_count = np.count_nonzero


def _increasing(where: str, ids: np.ndarray) -> None:
    if not _ascending_vector(ids):
        raise MessageError(f"{where} must be distinct party ids in increasing order, got {ids[:10].tolist()}")


def _bundle(name: str, ids: str, values: np.ndarray, ends: np.ndarray, data: bytes) -> None:
    if not _ascending_vector(values):
        _increasing(f"{name}.{ids}", values)
    stops = ends.tolist()
    if len(stops) != len(values):
        raise MessageError(f"{name}.ends must have one entry per {ids[:-1]}, got {len(stops)}")
    if not (stops == sorted(stops) and (stops[-1] if stops else 0) == len(data)):  # (uint32: none below 0)
        raise MessageError(f"{name}.ends must not decrease and must end at the {len(data)} bytes of the bundle")


@message(kind=64)
class ShareVector(Message):
    """Party i -> party j: the additive share vector r_ij.

    ``combination`` is the index of the value combination (per-combination paper engine) or
    -1 when the vector carries all combinations at once (batched).
    """

    session: str
    combination: int
    shares: RingVector

    def validate(self) -> None:
        _session("ShareVector", self.session)
        if self.combination < -1:
            raise MessageError(f"ShareVector.combination must be >= -1, got {self.combination}")


@message(kind=65)
class PartialSum(Message):
    """Party j -> all (paper) or controller (graph): its partial sum r_j (main paper 4.2 step 3)."""

    session: str
    combination: int
    values: RingVector

    def validate(self) -> None:
        _session("PartialSum", self.session)
        if self.combination < -1:
            raise MessageError(f"PartialSum.combination must be >= -1, got {self.combination}")


@message(kind=66)
class PublicKeys(Message):
    """Party -> controller: its public keys (masked: (c_pk, s_pk); graph-relay: (c_pk,)) and,
    for the masked engine, its PKI signature of them (empty otherwise)."""

    session: str
    keys: tuple[bytes, ...]
    signature: bytes = b""

    def validate(self) -> None:
        _session("PublicKeys", self.session)
        if not 1 <= len(self.keys) <= 2:
            raise MessageError(f"PublicKeys.keys must hold 1 or 2 keys, got {len(self.keys)}")
        if not all(len(k) == 32 for k in self.keys):
            raise MessageError("PublicKeys.keys must be 32-byte X25519 keys")
        if len(self.signature) not in (0, 64):
            raise MessageError(f"PublicKeys.signature must be empty or a 64-byte signature, "
                               f"got {len(self.signature)} bytes")


@message(kind=67)
class KeyDirectory(Message):
    """Controller -> party: ``keys[32k : 32k + 32]`` is the public key of neighbour
    ``parties[k]`` and (graph-relay) ``signatures[64k : 64k + 64]`` that neighbour's PKI
    signature of it (empty for masked)."""

    session: str
    parties: IdVector
    keys: bytes
    signatures: bytes = b""

    def validate(self) -> None:
        _session("KeyDirectory", self.session)
        _increasing("KeyDirectory.parties", self.parties)
        k = self.parties.shape[0]
        if len(self.keys) != 32 * k:
            raise MessageError(f"KeyDirectory.keys must hold one 32-byte X25519 key per party ({32 * k} bytes), "
                               f"got {len(self.keys)}")
        if len(self.signatures) not in (0, 64 * k):
            raise MessageError(f"KeyDirectory.signatures must be empty or one 64-byte signature per party "
                               f"({64 * k} bytes), "
                               f"got {len(self.signatures)}")

    def key(self, k: int) -> bytes:
        """The key of ``parties[k]``."""
        return self.keys[32 * k: 32 * k + 32]


@message(kind=68)
class SealedShares(Message):
    """Party -> controller: the ciphertext sealed for party ``recipients[k]`` is
    ``ciphertexts[ends[k - 1]:ends[k]]`` (a :func:`bundle`)."""

    session: str
    recipients: IdVector
    ends: IdVector
    ciphertexts: bytes

    def validate(self) -> None:
        _session("SealedShares", self.session)
        _bundle("SealedShares", "recipients", self.recipients, self.ends, self.ciphertexts)


@message(kind=69)
class RelayedShares(Message):
    """Controller -> party: ``ciphertexts[ends[k - 1]:ends[k]]`` was sealed for it by party
    ``senders[k]`` (a :func:`bundle`)."""

    session: str
    senders: IdVector
    ends: IdVector
    ciphertexts: bytes

    def validate(self) -> None:
        _session("RelayedShares", self.session)
        _bundle("RelayedShares", "senders", self.senders, self.ends, self.ciphertexts)


@message(kind=70)
class MaskedInput(Message):
    """Party -> controller: masked vector y_i (Bonawitz et al. 2017, round MaskedInputCollection)."""

    session: str
    values: RingVector

    def validate(self) -> None:
        _session("MaskedInput", self.session)


@message(kind=71)
class UnmaskRequest(Message):
    """Controller -> survivor: the survivor views of the other holders it needs before unmasking
    (round Unmasking), each MAC'd for it by its author (:class:`SurvivorTags`).

    View ``v`` is ``view_cells[view_ends[v - 1] : view_ends[v]]`` (sorted party ids; equal views
    are sent once); party ``signers[k]`` stated view ``view_of[k]`` with the tag
    ``tags[16k : 16k + 16]``.
    """

    session: str
    view_cells: IdVector
    view_ends: IdVector
    signers: IdVector
    view_of: IdVector
    tags: bytes

    def validate(self) -> None:
        _session("UnmaskRequest", self.session)
        ends, k = self.view_ends, self.signers.shape[0]
        if not (self.view_of.shape[0] == k and len(self.tags) == TAG_BYTES * k):
            raise MessageError(f"UnmaskRequest needs one view index and one {TAG_BYTES}-byte tag per signer")
        if ends.shape[0] and not (_ascending_vector(ends) and ends[0] > 0 and ends[-1] == self.view_cells.shape[0]):
            raise MessageError("UnmaskRequest.view_ends must increase and end at the number of view cells")
        if ends.size == 0 and self.view_cells.shape[0]:
            raise MessageError("UnmaskRequest.view_cells without view_ends")
        if k and max(self.view_of.tolist()) >= ends.size:
            raise MessageError(f"UnmaskRequest.view_of must index views (0..{ends.size - 1})")
        if not _ascending_vector(self.signers):
            raise MessageError("UnmaskRequest.signers must be distinct and sorted")


@message(kind=72)
class UnmaskShares(Message):
    """Survivor -> controller: for owner ``owners[k]`` the Shamir share
    ``values[33k : 33k + 33]`` at abscissa ``abscissae[k]`` of the secret ``which[k]``
    (SECRET_SELF_MASK for a survivor, SECRET_MASK_KEY for a dropped party — never both for the
    same owner)."""

    session: str
    owners: IdVector
    which: bytes
    abscissae: IdVector
    values: bytes

    def validate(self) -> None:
        _session("UnmaskShares", self.session)
        _increasing("UnmaskShares.owners", self.owners)
        k = self.owners.shape[0]
        if not (len(self.which) == k and self.abscissae.shape[0] == k and len(self.values) == 33 * k):
            raise MessageError("UnmaskShares fields must all have one entry per owner (values: 33-byte shares)")
        if self.which.translate(None, _SECRETS):
            raise MessageError(f"UnmaskShares.which entries must be 0 (self mask) or 1 (mask key), "
                               f"got {list(self.which)[:10]}")
        if k and min(self.abscissae.tolist()) < 1:
            raise MessageError("UnmaskShares.abscissae must be >= 1")


@message(kind=73)
class SurvivorSet(Message):
    """Controller -> survivor: the parties among its Shamir holders (its neighbours and itself)
    whose masked input is in the sum (Bonawitz et al. 2017, round ConsistencyCheck)."""

    session: str
    survivors: IdVector

    def validate(self) -> None:
        _session("SurvivorSet", self.session)
        _increasing("SurvivorSet.survivors", self.survivors)


@message(kind=74)
class SurvivorTags(Message):
    """Survivor -> controller: its statement of the :class:`SurvivorSet` it was told, MAC'd for
    each party that may need it (round ConsistencyCheck): ``tags[16k : 16k + 16]`` for party
    ``targets[k]``, under the key the two share."""

    session: str
    targets: IdVector
    tags: bytes

    def validate(self) -> None:
        _session("SurvivorTags", self.session)
        k = self.targets.shape[0]
        if len(self.tags) != TAG_BYTES * k:
            raise MessageError(f"SurvivorTags.tags must hold {TAG_BYTES} bytes per target ({TAG_BYTES * k}), "
                               f"got {len(self.tags)}")
        if not _ascending_vector(self.targets):
            raise MessageError("SurvivorTags.targets must be distinct and sorted")


TO_CONTROLLER: tuple[type[Message], ...] = (
    PartialSum, PublicKeys, SealedShares, MaskedInput, UnmaskShares, SurvivorTags,
)
"""Kinds a party sends the controller in some engine (the "party -> controller" rows of the
table above, and ``PartialSum`` of the paper and graph engines).  ``ShareVector`` travels
party -> party; ``KeyDirectory``, ``RelayedShares``, ``UnmaskRequest`` and ``SurvivorSet``
controller -> party only."""
