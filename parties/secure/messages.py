"""Message kinds of the secure-sum engines (wire kinds 64..79 of :mod:`parties.wire.messages`).

Every message carries the ``session`` it belongs to, so two secure sums running over the same
network never mix; receivers check it.  Arrays are 1-D unsigned vectors of ring elements
(:class:`parties.secure.ring.ZMod` chooses the dtype).  Keys are raw 32-byte X25519 public
keys; ciphertexts are ChaCha20-Poly1305 blobs (:func:`parties.secure.crypto.seal`).

=====  ==================  =========================================================  ===================
kind   class               meaning                                                    engines
=====  ==================  =========================================================  ===================
64     ShareVector         additive share(s) r_ij of one party for another            paper, graph
65     PartialSum          r_j = sum of received shares (+ own indicator)             paper, graph
66     PublicKeys          a party's X25519 public key(s) (masked: signed)            masked, graph-relay
67     KeyDirectory        controller -> party: public keys of its live neighbours    masked, graph-relay
68     SealedShares        party -> controller: AEAD ciphertexts, one per neighbour   masked, graph-relay
69     RelayedShares       controller -> party: ciphertexts addressed to it           masked, graph-relay
70     MaskedInput         y_i = x_i + masks (mod M)                                  masked
71     UnmaskRequest       controller -> survivor: the signed survivor views          masked
72     UnmaskShares        survivor -> controller: Shamir shares for unmasking        masked
73     SurvivorSet         controller -> survivor: the survivors among its holders    masked
74     SurvivorSignature   survivor -> controller: its signature of that set          masked
=====  ==================  =========================================================  ===================

Signatures are Ed25519 (64 bytes) under the keys of the PKI (:mod:`parties.secure.pki`).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from parties.wire.messages import ArraySpec, Message, message, require

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
    "SurvivorSignature",
    "TO_CONTROLLER",
    "SECRET_SELF_MASK",
    "SECRET_MASK_KEY",
]

RingVector = Annotated[np.ndarray, ArraySpec(("uint8", "uint16", "uint32", "uint64"), ndim=1)]

SECRET_SELF_MASK = 0
"""UnmaskShares.which: share of the self-mask seed b_u of a surviving party u."""
SECRET_MASK_KEY = 1
"""UnmaskShares.which: share of the mask private key s_sk_u of a dropped party u."""


def _session(name: str, session: str) -> None:
    require(bool(session), f"{name}.session must not be empty")


def _ids(where: str, values: tuple[int, ...]) -> None:
    if values:
        require(min(values) >= 0, f"{where} must contain party ids >= 0, got {values[:10]}")
        require(len(set(values)) == len(values), f"{where} must be distinct, got {values[:10]}")


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
        require(self.combination >= -1, f"ShareVector.combination must be >= -1, got {self.combination}")


@message(kind=65)
class PartialSum(Message):
    """Party j -> all (paper) or controller (graph): its partial sum r_j (main paper 4.2 step 3)."""

    session: str
    combination: int
    values: RingVector

    def validate(self) -> None:
        _session("PartialSum", self.session)
        require(self.combination >= -1, f"PartialSum.combination must be >= -1, got {self.combination}")


@message(kind=66)
class PublicKeys(Message):
    """Party -> controller: its public keys (masked: (c_pk, s_pk); graph-relay: (c_pk,)) and,
    for the masked engine, its PKI signature of them (empty otherwise)."""

    session: str
    keys: tuple[bytes, ...]
    signature: bytes = b""

    def validate(self) -> None:
        _session("PublicKeys", self.session)
        require(1 <= len(self.keys) <= 2, f"PublicKeys.keys must hold 1 or 2 keys, got {len(self.keys)}")
        require(all(len(k) == 32 for k in self.keys), "PublicKeys.keys must be 32-byte X25519 keys")
        require(len(self.signature) in (0, 64),
                 f"PublicKeys.signature must be empty or a 64-byte signature, got {len(self.signature)} bytes")


@message(kind=67)
class KeyDirectory(Message):
    """Controller -> party: ``keys[k]`` are the public keys of neighbour ``parties[k]``,
    concatenated (32 bytes for graph-relay: c_pk; 64 bytes for masked: c_pk || s_pk), and
    (masked) ``signatures[k]`` that neighbour's PKI signature of them."""

    session: str
    parties: tuple[int, ...]
    keys: tuple[bytes, ...]
    signatures: tuple[bytes, ...] = ()

    def validate(self) -> None:
        _session("KeyDirectory", self.session)
        _ids("KeyDirectory.parties", self.parties)
        require(len(self.keys) == len(self.parties),
                 f"KeyDirectory.keys must have one entry per party ({len(self.parties)}), got {len(self.keys)}")
        require(all(len(k) in (32, 64) for k in self.keys),
                 "KeyDirectory.keys entries must be 1 or 2 concatenated 32-byte X25519 keys")
        require(len(self.signatures) in (0, len(self.parties)) and all(len(s) == 64 for s in self.signatures),
                 "KeyDirectory.signatures must be empty or one 64-byte signature per party")


@message(kind=68)
class SealedShares(Message):
    """Party -> controller: ``ciphertexts[k]`` is sealed for party ``recipients[k]``."""

    session: str
    recipients: tuple[int, ...]
    ciphertexts: tuple[bytes, ...]

    def validate(self) -> None:
        _session("SealedShares", self.session)
        _ids("SealedShares.recipients", self.recipients)
        require(len(self.ciphertexts) == len(self.recipients),
                 "SealedShares.ciphertexts must have one entry per recipient")


@message(kind=69)
class RelayedShares(Message):
    """Controller -> party: ``ciphertexts[k]`` was sealed for it by party ``senders[k]``."""

    session: str
    senders: tuple[int, ...]
    ciphertexts: tuple[bytes, ...]

    def validate(self) -> None:
        _session("RelayedShares", self.session)
        _ids("RelayedShares.senders", self.senders)
        require(len(self.ciphertexts) == len(self.senders),
                 "RelayedShares.ciphertexts must have one entry per sender")


@message(kind=70)
class MaskedInput(Message):
    """Party -> controller: masked vector y_i (Bonawitz et al. 2017, round MaskedInputCollection)."""

    session: str
    values: RingVector

    def validate(self) -> None:
        _session("MaskedInput", self.session)


@message(kind=71)
class UnmaskRequest(Message):
    """Controller -> survivor: the signed survivor views it needs before unmasking (round Unmasking).

    ``signatures[k]`` is party ``signers[k]``'s signature of its view
    ``views[view_of[k]]`` (the survivors among its Shamir holders, as it was told them in
    :class:`SurvivorSet`); equal views are sent once.
    """

    session: str
    views: tuple[tuple[int, ...], ...]
    signers: tuple[int, ...]
    view_of: tuple[int, ...]
    signatures: tuple[bytes, ...]

    def validate(self) -> None:
        _session("UnmaskRequest", self.session)
        _ids("UnmaskRequest.signers", self.signers)
        for view in self.views:
            _ids("UnmaskRequest.views entries", view)
        k = len(self.signers)
        require(len(self.view_of) == k and len(self.signatures) == k,
                 "UnmaskRequest needs one view index and one signature per signer")
        require(all(0 <= i < len(self.views) for i in self.view_of),
                 f"UnmaskRequest.view_of must index views (0..{len(self.views) - 1})")
        require(all(len(s) == 64 for s in self.signatures), "UnmaskRequest.signatures must be 64 bytes each")


@message(kind=72)
class UnmaskShares(Message):
    """Survivor -> controller: for owner ``owners[k]`` the Shamir share ``values[k]`` (33 bytes)
    at abscissa ``abscissae[k]`` of the secret ``which[k]`` (SECRET_SELF_MASK for a survivor,
    SECRET_MASK_KEY for a dropped party — never both for the same owner)."""

    session: str
    owners: tuple[int, ...]
    which: tuple[int, ...]
    abscissae: tuple[int, ...]
    values: tuple[bytes, ...]

    def validate(self) -> None:
        _session("UnmaskShares", self.session)
        _ids("UnmaskShares.owners", self.owners)
        k = len(self.owners)
        require(len(self.which) == k and len(self.abscissae) == k and len(self.values) == k,
                 "UnmaskShares fields must all have one entry per owner")
        require(all(w in (SECRET_SELF_MASK, SECRET_MASK_KEY) for w in self.which),
                 f"UnmaskShares.which entries must be 0 (self mask) or 1 (mask key), got {self.which}")
        require(not self.abscissae or min(self.abscissae) >= 1, "UnmaskShares.abscissae must be >= 1")
        require(all(len(v) == 33 for v in self.values), "UnmaskShares.values must be 33-byte shares")


@message(kind=73)
class SurvivorSet(Message):
    """Controller -> survivor: the parties among its Shamir holders (its neighbours and itself)
    whose masked input is in the sum (Bonawitz et al. 2017, round ConsistencyCheck)."""

    session: str
    survivors: tuple[int, ...]

    def validate(self) -> None:
        _session("SurvivorSet", self.session)
        _ids("SurvivorSet.survivors", self.survivors)
        require(list(self.survivors) == sorted(self.survivors), "SurvivorSet.survivors must be sorted")


@message(kind=74)
class SurvivorSignature(Message):
    """Survivor -> controller: its PKI signature of the :class:`SurvivorSet` it was told."""

    session: str
    signature: bytes

    def validate(self) -> None:
        _session("SurvivorSignature", self.session)
        require(len(self.signature) == 64, "SurvivorSignature.signature must be 64 bytes")


TO_CONTROLLER: tuple[type[Message], ...] = (
    PartialSum, PublicKeys, SealedShares, MaskedInput, UnmaskShares, SurvivorSignature,
)
"""Kinds a party sends the controller in some engine (the "party -> controller" rows of the
table above, and ``PartialSum`` of the paper and graph engines).  ``ShareVector`` travels
party -> party; ``KeyDirectory``, ``RelayedShares``, ``UnmaskRequest`` and ``SurvivorSet``
controller -> party only."""
