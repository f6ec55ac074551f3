"""A simulated PKI: Ed25519 signing keys registered at set-up, before the controller acts.

Bonawitz et al. 2017 (Section 6, active adversary) assume that every party has a long-term
signing key whose verification key all parties know from a PKI, so that a server that relays
public keys cannot substitute its own (a man in the middle on every pairwise channel) and
cannot show different parties different survivor sets unnoticed.  Here:

:func:`setup_pki`
    Generates one :class:`Signer` per party (``cryptography``'s Ed25519, keys from the OS
    CSPRNG) and the :class:`KeyRegistry` of their verification keys.  It runs at set-up, by
    whoever builds the parties (the in-memory simulator), never by the controller.
:func:`generate_signers`
    The same keys for the parties of one place only: a multi-process runtime generates them
    inside each party shard host (worker process, Ray actor), so a private key never leaves
    the place its party lives; the hosts register the verification keys and the run's
    directory (:meth:`KeyRegistry.from_keys`) is sent back to every host before the protocol
    (:mod:`parties.shard`).
:class:`KeyRegistry`
    An immutable directory party → 32-byte verification key.  Each party holds it from
    set-up; nothing the controller sends can change it.
:func:`statement`
    The byte string a party signs: a domain tag, the session, the signer and the content, so
    a signature can never be replayed in another session, by another party or for another
    purpose.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from mprr.errors import ConfigurationError

__all__ = ["PUBLIC_KEY_BYTES", "SIGNATURE_BYTES", "KeyRegistry", "Signer", "generate_signers", "setup_pki", "statement"]

SIGNATURE_BYTES = 64
"""Length of an Ed25519 signature."""
PUBLIC_KEY_BYTES = 32
"""Length of a raw Ed25519 verification key."""


def statement(purpose: str, session: str, signer: int, content: bytes) -> bytes:
    """The bytes signed for ``purpose`` in ``session`` by party ``signer`` (length-prefixed fields)."""
    tag, sess = purpose.encode(), session.encode()
    return (b"mprr/" + struct.pack("<I", len(tag)) + tag + struct.pack("<I", len(sess)) + sess
            + struct.pack("<I", signer) + content)


class Signer:
    """One party's long-term Ed25519 signing key (private to the party)."""

    __slots__ = ("party", "_key", "public")

    def __init__(self, party: int, key: Ed25519PrivateKey) -> None:
        self.party = party
        self._key = key
        self.public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def __repr__(self) -> str:
        return f"Signer(party={self.party})"

    def sign(self, purpose: str, session: str, content: bytes) -> bytes:
        """Signature of :func:`statement` (purpose, session, this party, content)."""
        return self._key.sign(statement(purpose, session, self.party, content))


class KeyRegistry:
    """Immutable directory of the parties' verification keys, fixed at set-up.

    Parameters
    ----------
    keys
        ``{party: 32-byte Ed25519 verification key}``.
    """

    __slots__ = ("_keys", "_parsed")

    def __init__(self, keys: Mapping[int, bytes]) -> None:
        for party, key in keys.items():
            if not isinstance(key, bytes) or len(key) != 32:
                raise ConfigurationError(f"keys[{party}] must be a 32-byte Ed25519 public key, got {key!r}")
        self._keys = MappingProxyType(dict(keys))
        self._parsed: dict[int, Ed25519PublicKey] = {}

    @classmethod
    def from_keys(cls, parties: range, keys: bytes) -> KeyRegistry:
        """The registry of ``parties`` from their verification keys concatenated in party order
        (:data:`PUBLIC_KEY_BYTES` each), as shard hosts register them.

        Raises
        ------
        ConfigurationError
            If ``keys`` does not hold exactly one key per party.
        """
        if not isinstance(keys, bytes) or len(keys) != PUBLIC_KEY_BYTES * len(parties):
            raise ConfigurationError(
                f"keys must be {PUBLIC_KEY_BYTES} bytes per party ({PUBLIC_KEY_BYTES} * {len(parties)} = "
                f"{PUBLIC_KEY_BYTES * len(parties)} bytes), got "
                f"{len(keys) if isinstance(keys, bytes) else type(keys).__name__}"
            )
        w = PUBLIC_KEY_BYTES
        return cls({p: keys[k * w:(k + 1) * w] for k, p in enumerate(parties)})

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, party: object) -> bool:
        return party in self._keys

    def key(self, party: int) -> bytes:
        """The registered verification key of ``party`` (KeyError if it has none)."""
        return self._keys[party]

    def verify(self, party: int, purpose: str, session: str, content: bytes, signature: bytes) -> bool:
        """Whether ``signature`` is ``party``'s signature of (purpose, session, content)."""
        key = self._parsed.get(party)
        if key is None:
            raw = self._keys.get(party)
            if raw is None:
                return False
            key = self._parsed[party] = Ed25519PublicKey.from_public_bytes(raw)
        try:
            key.verify(signature, statement(purpose, session, party, content))
        except InvalidSignature:
            return False
        return True


def generate_signers(parties: Iterable[int]) -> dict[int, Signer]:
    """One fresh Ed25519 signing key per party, from the OS CSPRNG, where the parties live.

    A multi-process runtime calls this inside the shard host of the parties (their worker
    process or Ray actor): the private keys never leave it; only the verification keys
    (:attr:`Signer.public`) are registered (:meth:`KeyRegistry.from_keys`).
    """
    return {int(p): Signer(int(p), Ed25519PrivateKey.generate()) for p in parties}


def setup_pki(parties: Iterable[int]) -> tuple[dict[int, Signer], KeyRegistry]:
    """One fresh signing key per party and the registry of their verification keys."""
    signers = generate_signers(parties)
    return signers, KeyRegistry({p: s.public for p, s in signers.items()})
