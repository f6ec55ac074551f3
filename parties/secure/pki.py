"""A simulated PKI: Ed25519 signing keys and X25519 static keys registered at set-up, before the
controller acts.

Bonawitz et al. 2017 (Section 6, active adversary) assume that every party has a long-term
signing key whose verification key all parties know from a PKI, so that a server that relays
public keys cannot substitute its own (a man in the middle on every pairwise channel) and
cannot show different parties different survivor sets unnoticed.  Each party also registers a
long-term X25519 key, so that two parties agree on an authenticated pairwise key without
relaying and checking a signed key first (static Diffie-Hellman: the key agreement itself
authenticates, as in the Noise KK pattern).  Here:

:func:`setup_pki`
    Generates one :class:`Signer` per party (``cryptography``'s Ed25519 and X25519, keys from
    the OS CSPRNG) and the :class:`KeyRegistry` of their public keys.  ``signing=False`` for
    an engine whose parties sign nothing (``masked``: its parties only agree on keys with the
    static X25519 keys): no Ed25519 key is generated, its 32 bytes in the registry are zero
    and no signature of such a party verifies.  It runs at set-up, by
    whoever builds the parties (the in-memory simulator), never by the controller.
:func:`generate_signers`
    The same keys for the parties of one place only: a multi-process runtime generates them
    inside each party shard host (worker process, Ray actor), so a private key never leaves
    the place its party lives; the hosts register the verification keys and the run's
    directory (:meth:`KeyRegistry.from_keys`) is sent back to every host before the protocol
    (:mod:`parties.shard`).
:class:`KeyRegistry`
    An immutable directory party → its Ed25519 verification key and X25519 static key (32 bytes
    each, :data:`PUBLIC_KEY_BYTES` together).  Each party holds it from set-up; nothing the
    controller sends can change it.
:func:`statement`
    The byte string a party signs: a domain tag, the session, the signer and the content, so
    a signature can never be replayed in another session, by another party or for another
    purpose.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from mprr.errors import ConfigurationError, MessageError

__all__ = ["PUBLIC_KEY_BYTES", "SIGNATURE_BYTES", "KeyRegistry", "Signer", "generate_signers", "setup_pki", "statement"]

SIGNATURE_BYTES = 64
"""Length of an Ed25519 signature."""
PUBLIC_KEY_BYTES = 64
"""Length of a party's registered public keys: raw Ed25519 verification key || raw X25519 static key."""


def statement(purpose: str, session: str, signer: int, content: bytes) -> bytes:
    """The bytes signed for ``purpose`` in ``session`` by party ``signer`` (length-prefixed fields)."""
    tag, sess = purpose.encode(), session.encode()
    return (b"mprr/" + struct.pack("<I", len(tag)) + tag + struct.pack("<I", len(sess)) + sess
            + struct.pack("<I", signer) + content)


_NO_SIGNING_KEY = bytes(32)
"""The registry's Ed25519 half of a party set up without a signing key (:func:`setup_pki`'s
``signing=False``): no signature verifies under it."""


class Signer:
    """One party's long-term keys (private to the party): an Ed25519 signing key (``None``: the
    party signs nothing, see :func:`setup_pki`) and an X25519 static key; :attr:`public` is what
    the registry holds for it."""

    __slots__ = ("party", "_key", "_static", "public")

    def __init__(self, party: int, key: Ed25519PrivateKey | None, static: X25519PrivateKey) -> None:
        self.party = party
        self._key = key
        self._static = static
        self.public = ((_NO_SIGNING_KEY if key is None else key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
                       + static.public_key().public_bytes_raw())

    def __repr__(self) -> str:
        return f"Signer(party={self.party})"

    def sign(self, purpose: str, session: str, content: bytes) -> bytes:
        """Signature of :func:`statement` (purpose, session, this party, content).

        Raises
        ------
        ConfigurationError
            The party was set up without a signing key (``signing=False``).
        """
        if self._key is None:
            raise ConfigurationError(f"party {self.party} has no signing key: it was set up with signing=False "
                                     "(an engine that signs nothing); set up its PKI with signing=True")
        return self._key.sign(statement(purpose, session, self.party, content))

    def exchange(self, registry: KeyRegistry, peer: int) -> bytes:
        """X25519 of this party's static key and ``peer``'s registered one: a 32-byte secret only
        the two parties can compute (derive keys from it with
        :func:`parties.secure.crypto.derive_key`).

        Raises
        ------
        MessageError
            If ``peer`` has no registered key, or X25519 refuses the one it has (a low-order point).
        """
        return self.exchange_each(registry, (peer,))[0]

    def exchange_each(self, registry: KeyRegistry, peers: Sequence[int]) -> list[bytes]:
        """:meth:`exchange` with each of ``peers``, in order (a party's static agreements with all
        its neighbours at once; :meth:`exchange` is this of one peer): MessageError for the first
        peer without a registered key, else for the first whose key X25519 refuses."""
        try:
            keys = registry.static_keys(peers)
        except KeyError as exc:
            raise MessageError(f"party {exc.args[0]} has no key in the PKI registry") from None
        try:
            return list(map(self._static.exchange, keys))
        except ValueError:  # (which key: the agreements again, one by one, up to the refused one)
            for peer, key in zip(peers, keys):
                try:
                    self._static.exchange(key)
                except ValueError as exc:
                    raise self._refused(registry, peer, exc) from exc
            raise

    def _refused(self, registry: KeyRegistry, peer: int, exc: ValueError) -> MessageError:
        """The error of an agreement that X25519 refuses with ``peer``'s registered static key."""
        return MessageError(
            f"party {self.party}: the X25519 static key registered for party {peer} "
            f"({registry.key(peer)[32:].hex()}) is refused by the agreement ({exc}); a static key must not be a "
            f"low-order point: no channel with party {peer}")


class KeyRegistry:
    """Immutable directory of the parties' verification keys, fixed at set-up.

    Parameters
    ----------
    keys
        ``{party: Ed25519 verification key || X25519 static key}`` (:data:`PUBLIC_KEY_BYTES`).
    """

    __slots__ = ("_keys", "_parsed", "_static")

    def __init__(self, keys: Mapping[int, bytes]) -> None:
        for party, key in keys.items():
            if not isinstance(key, bytes) or len(key) != PUBLIC_KEY_BYTES:
                raise ConfigurationError(
                    f"keys[{party}] must be {PUBLIC_KEY_BYTES} bytes (Ed25519 || X25519 public keys), got {key!r}")
        self._keys = MappingProxyType(dict(keys))
        self._parsed: dict[int, Ed25519PublicKey] = {}
        self._static: dict[int, X25519PublicKey] = {}

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
        """The registered public keys of ``party`` (KeyError if it has none)."""
        return self._keys[party]

    def static_key(self, party: int) -> X25519PublicKey:
        """The registered X25519 static key of ``party`` (KeyError if it has none)."""
        return self.static_keys((party,))[0]

    def static_keys(self, parties: Iterable[int]) -> list[X25519PublicKey]:
        """:meth:`static_key` of each of ``parties``, in order (KeyError naming the first that has
        none): a party's neighbours' keys at once, each parsed on its first use in this process."""
        parsed, out = self._static, []
        for party in parties:
            key = parsed.get(party)
            if key is None:
                key = parsed[party] = X25519PublicKey.from_public_bytes(self._keys[party][32:])
            out.append(key)
        return out

    def verify(self, party: int, purpose: str, session: str, content: bytes, signature: bytes) -> bool:
        """Whether ``signature`` is ``party``'s signature of (purpose, session, content)."""
        key = self._parsed.get(party)
        if key is None:
            raw = self._keys.get(party)
            if raw is None or raw[:32] == _NO_SIGNING_KEY:  # (no key, or set up without a signing key)
                return False
            key = self._parsed[party] = Ed25519PublicKey.from_public_bytes(raw[:32])
        try:
            key.verify(signature, statement(purpose, session, party, content))
        except InvalidSignature:
            return False
        return True


def generate_signers(parties: Iterable[int], *, signing: bool = True) -> dict[int, Signer]:
    """Fresh long-term keys (Ed25519, unless ``signing`` is False, and X25519) per party, from the
    OS CSPRNG, where the parties live.

    A multi-process runtime calls this inside the shard host of the parties (their worker
    process or Ray actor): the private keys never leave it; only the verification keys
    (:attr:`Signer.public`) are registered (:meth:`KeyRegistry.from_keys`).
    """
    sign = Ed25519PrivateKey.generate if signing else _no_key
    return {int(p): Signer(int(p), sign(), X25519PrivateKey.generate()) for p in parties}


def _no_key() -> None:
    return None


def setup_pki(parties: Iterable[int], *, signing: bool = True) -> tuple[dict[int, Signer], KeyRegistry]:
    """Fresh long-term keys per party (:func:`generate_signers`; ``signing=False``: the X25519
    static keys only, for an engine whose parties sign nothing) and the registry of their
    public keys."""
    signers = generate_signers(parties, signing=signing)
    return signers, KeyRegistry({p: s.public for p, s in signers.items()})
