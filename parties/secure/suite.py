"""The cryptography a secure-sum program calls, real or sized: :data:`REAL` and :data:`SIZING`.

A program (:mod:`parties.secure.program`) takes its keystreams, key pairs, signatures, key
agreements and AEAD seals from the :class:`CryptoSuite` of its context
(:attr:`parties.secure.context.SecureSumContext.suite`).  Every real run uses :data:`REAL`
(:mod:`parties.secure.prg`, :mod:`parties.secure.crypto`, :mod:`parties.secure.pki`).  The
counting driver runs the programs with :data:`SIZING`: every output has the length the real
operation gives (a zero keystream, a fixed key pair, zero signatures that verify, a "sealed"
blob of zeros AEAD_OVERHEAD bytes longer than its plaintext), so every message has its real
size and the count is the traffic of a real run, without the cryptography's CPU (the tests
compare counts with both suites and with measured runs).  Nothing a peer or the controller
sends can select the suite: it is the context's, built by each participant for itself, and
only :func:`parties.secure.engine.counted_cost` builds one with :data:`SIZING`.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from mprr.errors import ConfigurationError
from parties.secure.crypto import AEAD_OVERHEAD, KEY_BYTES, KeyPair, ParsedKeys, agree, open_sealed, seal
from parties.secure.pki import SIGNATURE_BYTES, KeyRegistry, Signer
from parties.secure.prg import Keystream

__all__ = ["REAL", "SIZING", "CryptoSuite", "SizingSuite"]


class CryptoSuite:
    """The real operations (module docstring)."""

    sizing = False
    """True for :class:`SizingSuite`: outputs of the right length, no secrecy at all."""

    def stream(self) -> Keystream:
        """A keystream from a fresh secret seed (:class:`~parties.secure.prg.Keystream`)."""
        return Keystream()

    def keypair(self) -> KeyPair:
        """A fresh X25519 key pair."""
        return KeyPair.generate()

    def sign(self, signer: Signer | None, purpose: str, session: str, content: bytes) -> bytes:
        """``signer``'s PKI signature of (purpose, session, content)."""
        if signer is None:
            raise ConfigurationError("sign needs the party's PKI signer, got None")
        return signer.sign(purpose, session, content)

    def verify(self, registry: KeyRegistry | None, party: int, purpose: str, session: str, content: bytes,
               signature: bytes) -> bool:
        """Whether ``signature`` is ``party``'s registered signature of (purpose, session, content)."""
        if registry is None:
            raise ConfigurationError("verify needs the PKI's key registry, got None")
        return registry.verify(party, purpose, session, content, signature)

    def agree(self, keys: KeyPair, peer_public: bytes, *, purpose: str, session: str, me: int, peer: int,
              parsed: ParsedKeys | None = None) -> bytes:
        """X25519 with ``peer_public``, then HKDF (:func:`~parties.secure.crypto.agree`; ``parsed``:
        the session's memo of parsed keys)."""
        return agree(keys.private, peer_public, purpose=purpose, session=session, me=me, peer=peer, parsed=parsed)

    def seal(self, key: bytes, plaintext: bytes, *, session: str, sender: int, receiver: int) -> bytes:
        """ChaCha20-Poly1305 (:func:`~parties.secure.crypto.seal`)."""
        return seal(key, plaintext, session=session, sender=sender, receiver=receiver)

    def open(self, key: bytes, blob: bytes, *, session: str, sender: int, receiver: int) -> bytes:
        """Decrypt and authenticate (:func:`~parties.secure.crypto.open_sealed`)."""
        return open_sealed(key, blob, session=session, sender=sender, receiver=receiver)


class _ZeroStream(Keystream):
    """A keystream of zero bytes (sizing only)."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def read(self, nbytes: int) -> bytes:
        if nbytes < 0:
            raise ConfigurationError(f"nbytes must be >= 0, got {nbytes}")
        return bytes(nbytes)

    def words(self, count: int, dtype: np.dtype | type) -> np.ndarray:
        return np.zeros(int(count), dtype=np.dtype(dtype))


class SizingSuite(CryptoSuite):
    """Outputs of the real lengths and no secrecy: for counting traffic only (module docstring)."""

    sizing = True

    @cached_property
    def _keys(self) -> KeyPair:
        return KeyPair.generate()

    def stream(self) -> Keystream:
        return _ZeroStream()

    def keypair(self) -> KeyPair:
        return self._keys

    def sign(self, signer: Signer | None, purpose: str, session: str, content: bytes) -> bytes:
        return bytes(SIGNATURE_BYTES)

    def verify(self, registry: KeyRegistry | None, party: int, purpose: str, session: str, content: bytes,
               signature: bytes) -> bool:
        return len(signature) == SIGNATURE_BYTES

    def agree(self, keys: KeyPair, peer_public: bytes, *, purpose: str, session: str, me: int, peer: int,
              parsed: ParsedKeys | None = None) -> bytes:
        return bytes(KEY_BYTES)

    def seal(self, key: bytes, plaintext: bytes, *, session: str, sender: int, receiver: int) -> bytes:
        return bytes(len(plaintext) + AEAD_OVERHEAD)

    def open(self, key: bytes, blob: bytes, *, session: str, sender: int, receiver: int) -> bytes:
        return bytes(max(len(blob) - AEAD_OVERHEAD, 0))


REAL = CryptoSuite()
"""The real cryptography (every run)."""

SIZING = SizingSuite()
"""Right-sized stand-ins (the counting driver only)."""
