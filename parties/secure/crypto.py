"""Key agreement, key derivation and authenticated encryption for the secure-sum engines.

- X25519 (RFC 7748) Diffie-Hellman key agreement, keys from ``cryptography``;
- HKDF-SHA256 (RFC 5869) turns a shared secret into a 32-byte key bound to its purpose
  (``"mask"`` seed for the PRG, ``"channel"`` key for AEAD), the session and the unordered pair
  of party ids, so both ends derive the same key and keys never repeat across sessions;
- ChaCha20-Poly1305 AEAD (RFC 8439) for shares relayed through the controller, with associated
  data binding session, sender and receiver: a ciphertext replayed to another party, in another
  session or in the other direction fails authentication.

This is the key layer of Bonawitz et al. 2017 (Practical Secure Aggregation), Section 4:
KA.gen / KA.agree, and AE.enc / AE.dec.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from mprr.errors import ConfigurationError, MessageError

__all__ = [
    "KEY_BYTES",
    "NONCE_BYTES",
    "KeyPair",
    "ParsedKeys",
    "derive_key",
    "derive_keys",
    "derive_keys_each",
    "hkdf_sha256",
    "agree",
    "agree_each",
    "exchange",
    "exchange_each",
    "seal",
    "seal_each",
    "open_sealed",
    "open_each",
    "settle_vector_state",
    "AEAD_OVERHEAD",
]

KEY_BYTES = 32
NONCE_BYTES = 12
AEAD_OVERHEAD = NONCE_BYTES + 16  # random nonce + Poly1305 tag
_DOMAIN = b"mprr/secure-sum/v1"


@dataclass(frozen=True, slots=True)
class KeyPair:
    """An X25519 key pair: ``private`` key object and 32-byte raw ``public`` key."""

    private: X25519PrivateKey
    public: bytes

    @classmethod
    def generate(cls) -> "KeyPair":
        """A fresh key pair (the private scalar comes from the OS CSPRNG via OpenSSL)."""
        private = X25519PrivateKey.generate()
        return cls(private, private.public_key().public_bytes_raw())

    @classmethod
    def from_private_bytes(cls, raw: bytes) -> "KeyPair":
        """Rebuild a key pair from its 32 raw private bytes (after Shamir reconstruction)."""
        if len(raw) != KEY_BYTES:
            raise ConfigurationError(f"private key must be {KEY_BYTES} bytes, got {len(raw)}")
        private = X25519PrivateKey.from_private_bytes(bytes(raw))
        return cls(private, private.public_key().public_bytes_raw())

    def private_bytes(self) -> bytes:
        """The 32 raw private bytes (what a party Shamir-shares in the masked engine)."""
        return self.private.private_bytes_raw()


@lru_cache(maxsize=64)
def _info_head(purpose: str, session: str) -> bytes:
    return b"|".join((_DOMAIN, purpose.encode(), session.encode(), b""))


def _info(purpose: str, session: str, a: int, b: int) -> bytes:
    """domain|purpose|session|min(a,b)|max(a,b) (the head built once per purpose and session)."""
    lo, hi = (a, b) if a <= b else (b, a)
    return b"%s%d|%d" % (_info_head(purpose, session), lo, hi)


_sha256 = hashlib.sha256
_IPAD = bytes(b ^ 0x36 for b in range(256))  # XOR tables of RFC 2104's inner and outer pads
_OPAD = bytes(b ^ 0x5C for b in range(256))
_PAD_IN, _PAD_OUT = b"\x36" * 32, b"\x5c" * 32  # the zero half of a 32-byte key's 64-byte block, padded
_EXTRACT_IN, _EXTRACT_OUT = _sha256(b"\x36" * 64), _sha256(b"\x5c" * 64)  # HMAC's key blocks for 0^32


def _extract(ikm: bytes) -> bytes:
    """HKDF-Extract with an empty salt: PRK = HMAC-SHA256(0^32, ikm) (RFC 5869 2.2), from the
    hash states of the zero key's padded blocks, computed once."""
    inner = _EXTRACT_IN.copy()
    inner.update(ikm)
    outer = _EXTRACT_OUT.copy()
    outer.update(inner.digest())
    return outer.digest()


def _hmac32(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256(key, data) for a 32-byte key (RFC 2104: H(K ^ opad || H(K ^ ipad || data)),
    K zero-padded to 64 bytes) with hashlib's SHA-256: the same bytes as ``hmac.digest``,
    without OpenSSL's per-call lookup of the MAC and digest (about half the time here)."""
    if len(key) != 32:
        raise ConfigurationError(f"_hmac32 key must be 32 bytes, got {len(key)}")
    return _sha256(key.translate(_OPAD) + _PAD_OUT
                   + _sha256(key.translate(_IPAD) + _PAD_IN + data).digest()).digest()


def hkdf_sha256(ikm: bytes, info: bytes, length: int = KEY_BYTES) -> bytes:
    """HKDF-SHA256 (RFC 5869) with an empty salt (the same bytes as ``cryptography``'s HKDF,
    checked in the tests).

    Extract: PRK = HMAC(0^32, ikm); expand: T(i) = HMAC(PRK, T(i-1) || info || i).
    """
    if not 1 <= length <= 255 * 32:
        raise ConfigurationError(f"HKDF length must be in [1, 8160] bytes, got {length}")
    prk = _extract(ikm)
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = _hmac32(prk, block + info + bytes((counter,)))
        out += block
        counter += 1
    return out[:length]


def derive_key(shared: bytes, *, purpose: str, session: str, a: int, b: int) -> bytes:
    """HKDF-SHA256(shared, info = domain|purpose|session|min(a,b)|max(a,b)) -> 32 bytes (one
    extract and the single expand block T(1))."""
    return _hmac32(_extract(shared), _info(purpose, session, a, b) + b"\x01")


def derive_keys(shared: bytes, *, purposes: tuple[str, ...], session: str, a: int, b: int) -> tuple[bytes, ...]:
    """:func:`derive_key` for several purposes of one shared secret: the same bytes, with one
    HKDF extract (PRK) and its padded key blocks for all of them instead of one per purpose
    (RFC 5869: the extract does not depend on ``info``; a 32-byte expand is the single block T(1))."""
    prk = _extract(shared)
    inner, outer = prk.translate(_IPAD) + _PAD_IN, prk.translate(_OPAD) + _PAD_OUT
    return tuple(_sha256(outer + _sha256(inner + _info(purpose, session, a, b) + b"\x01").digest()).digest()
                 for purpose in purposes)


def derive_keys_each(shared: Sequence[bytes], *, purposes: tuple[str, ...], session: str, a: int,
                     peers: Sequence[int]) -> list[tuple[bytes, ...]]:
    """:func:`derive_keys` of ``shared[k]`` for the pair (``a``, ``peers[k]``), for every k: the
    same bytes (one HKDF extract per secret, one expand block per purpose), in one loop with the
    purposes' info heads built once (a party derives the keys of all its neighbours at once)."""
    if len(shared) != len(peers):
        raise ConfigurationError(f"derive_keys_each needs one peer per shared secret, got {len(shared)} secrets "
                                 f"and {len(peers)} peers")
    heads = [_info_head(purpose, session) for purpose in purposes]
    first, second = (heads[0], heads[-1]) if heads else (b"", b"")  # (the one or two purposes the engines use)
    extract_in, extract_out, sha256 = _EXTRACT_IN.copy, _EXTRACT_OUT.copy, _sha256
    ipad, opad, pad_in, pad_out, count = _IPAD, _OPAD, _PAD_IN, _PAD_OUT, len(heads)
    out: list[tuple[bytes, ...]] = []
    for secret, b in zip(shared, peers):
        inner = extract_in()  # (_extract, inlined)
        inner.update(secret)
        outer = extract_out()
        outer.update(inner.digest())
        prk = outer.digest()
        key_in, key_out = prk.translate(ipad) + pad_in, prk.translate(opad) + pad_out
        pair = b"%d|%d\x01" % ((a, b) if a <= b else (b, a))  # (_info's tail and the counter of T(1))
        if count == 1:  # (written out for one and two purposes: no list per secret)
            out.append((sha256(key_out + sha256(key_in + first + pair).digest()).digest(),))
        elif count == 2:  # the hash states after the PRK's padded blocks, hashed once for both
            inner, outer = sha256(key_in), sha256(key_out)
            inner_first, outer_first = inner.copy(), outer.copy()
            inner_first.update(first + pair)
            outer_first.update(inner_first.digest())
            inner.update(second + pair)
            outer.update(inner.digest())
            out.append((outer_first.digest(), outer.digest()))
        else:
            out.append(tuple([sha256(key_out + sha256(key_in + head + pair).digest()).digest() for head in heads]))
    return out


def agree_each(private: X25519PrivateKey, peer_publics: Sequence[bytes], *, purpose: str, session: str, me: int,
               peers: Sequence[int], parsed: ParsedKeys | None = None) -> list[bytes]:
    """:func:`agree` of ``private`` with ``peer_publics[k]`` of party ``peers[k]``, for every k
    (the same checks and bytes; a party's masking seeds of all its neighbours at once);
    ``parsed``: the session's memo of parsed keys (None: each key parsed here).  Its two steps,
    :func:`exchange_each` and :func:`derive_keys_each`, are also a batch's two passes."""
    if len(peer_publics) != len(peers):
        raise ConfigurationError(f"agree_each needs one peer per public key, got {len(peer_publics)} keys "
                                 f"and {len(peers)} peers")
    shared = exchange_each(private, peer_publics, peers=peers, parsed=parsed)
    return [keys[0] for keys in derive_keys_each(shared, purposes=(purpose,), session=session, a=me, peers=peers)]


def exchange_each(private: X25519PrivateKey, peer_publics: Sequence[bytes], *, peers: Sequence[int],
                  parsed: ParsedKeys | None = None) -> list[bytes]:
    """:func:`exchange` of ``private`` with ``peer_publics[k]`` of party ``peers[k]``, for every k,
    in order (the same checks; the first bad key raises); ``parsed``: as :func:`exchange`."""
    if len(peer_publics) != len(peers):
        raise ConfigurationError(f"exchange_each needs one peer per public key, got {len(peer_publics)} keys "
                                 f"and {len(peers)} peers")
    parse, shared = X25519PublicKey.from_public_bytes if parsed is None else parsed.__getitem__, []
    for raw, peer in zip(peer_publics, peers):
        if not isinstance(raw, bytes) or len(raw) != KEY_BYTES:
            raise MessageError(f"public key of party {peer} must be {KEY_BYTES} bytes")
        try:
            shared.append(private.exchange(parse(raw)))
        except ValueError as exc:
            raise MessageError(f"invalid X25519 public key from party {peer}: {exc}") from exc
    return shared


def exchange(private: X25519PrivateKey, peer_public: bytes, *, peer: int, parsed: ParsedKeys | None = None) -> bytes:
    """X25519(private, peer_public): the raw 32-byte shared secret (Bonawitz et al. KA.agree
    before key derivation); derive keys from it with :func:`derive_key`.  ``parsed``: the
    session's memo of parsed keys (None: the key parsed here).

    Raises
    ------
    MessageError
        ``peer_public`` is not a valid 32-byte X25519 public key (or a low-order point).
    """
    if not isinstance(peer_public, bytes) or len(peer_public) != KEY_BYTES:
        raise MessageError(f"public key of party {peer} must be {KEY_BYTES} bytes")
    try:
        return private.exchange(X25519PublicKey.from_public_bytes(peer_public) if parsed is None
                                else parsed[peer_public])
    except ValueError as exc:
        raise MessageError(f"invalid X25519 public key from party {peer}: {exc}") from exc


class ParsedKeys(dict[bytes, X25519PublicKey]):
    """The X25519 public keys of one secure-sum session parsed in this process, each once (raw
    bytes -> key object; ``parsed[raw]`` parses a key not seen yet): a party's key is used by
    each of its k neighbours, mostly hosted in the same process.  One memo per session's context
    (:attr:`parties.secure.context.SecureSumContext.public_keys`), so it holds at most the
    session's keys and lives as long as that context; a copy sent to another process starts empty."""

    __slots__ = ()

    def __missing__(self, raw: bytes) -> X25519PublicKey:
        key = self[raw] = X25519PublicKey.from_public_bytes(raw)  # (ValueError: not 32 bytes)
        return key

    def __reduce__(self) -> tuple[Any, ...]:
        return ParsedKeys, ()


def agree(
    private: X25519PrivateKey, peer_public: bytes, *, purpose: str, session: str, me: int, peer: int,
    parsed: ParsedKeys | None = None,
) -> bytes:
    """X25519(private, peer_public) then :func:`derive_key` (Bonawitz et al. KA.agree);
    ``parsed``: as :func:`exchange`.

    Raises
    ------
    MessageError
        ``peer_public`` is not a valid 32-byte X25519 public key (or a low-order point).
    """
    return derive_key(exchange(private, peer_public, peer=peer, parsed=parsed), purpose=purpose, session=session,
                      a=me, b=peer)


def _associated_data(session: str, sender: int, receiver: int) -> bytes:
    """domain|aead|session|sender|receiver."""
    return b"%s%d|%d" % (_info_head("aead", session), sender, receiver)


_SETTLE = np.zeros(16, dtype=np.uint32)


def settle_vector_state() -> None:
    """Leave the CPU's vector registers clean after ChaCha20-Poly1305 calls.

    On CPUs with AVX-512, ``cryptography``'s ChaCha20-Poly1305 returns with the upper halves of
    the vector registers in use (no ``vzeroupper``), and until some code clears them, every SSE
    instruction after it pays a transition penalty: small copies (``bytes`` concatenation and
    slicing), OpenSSL's SHA-256 and HMAC run 1.3-4 x slower, measured by
    ``benchmarks/vector_state.py``, for as long as the process runs no other vector code.  A
    numpy ufunc on a few integers ends with ``vzeroupper`` (as compiled AVX code does); it costs
    well under a microsecond.  The AEAD functions below call this once after their loop.  On
    CPUs without wide vector registers it changes nothing but the time of the call.
    """
    np.add(_SETTLE, _SETTLE, out=_SETTLE)


def seal(key: bytes, plaintext: bytes, *, session: str, sender: int, receiver: int) -> bytes:
    """ChaCha20-Poly1305 encrypt; returns nonce || ciphertext || tag (random 96-bit nonce)."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = nonce + ChaCha20Poly1305(key).encrypt(nonce, plaintext, _associated_data(session, sender, receiver))
    settle_vector_state()
    return sealed


def seal_each(keys: list[bytes], plaintexts: list[bytes], *, session: str, sender: int,
              receivers: tuple[int, ...]) -> list[bytes]:
    """:func:`seal` of ``plaintexts[k]`` under ``keys[k]`` for ``receivers[k]``, the random nonces
    drawn by one :func:`secrets.token_bytes`."""
    if not len(keys) == len(plaintexts) == len(receivers):
        raise ConfigurationError(f"seal_each needs one key, plaintext and receiver each: got {len(keys)} keys, "
                                 f"{len(plaintexts)} plaintexts, {len(receivers)} receivers")
    nonces = secrets.token_bytes(NONCE_BYTES * len(keys))
    head, aead, out = b"%s%d|" % (_info_head("aead", session), sender), ChaCha20Poly1305, []
    for k, (key, plaintext, receiver) in enumerate(zip(keys, plaintexts, receivers, strict=True)):
        nonce = nonces[NONCE_BYTES * k: NONCE_BYTES * (k + 1)]
        out.append(nonce + aead(key).encrypt(nonce, plaintext, head + b"%d" % receiver))  # (_associated_data)
    settle_vector_state()
    return out


def open_each(keys: list[bytes], blobs: list[bytes], *, session: str, senders: list[int], receiver: int) -> list[bytes]:
    """:func:`open_sealed` of ``blobs[k]`` under ``keys[k]`` from ``senders[k]``, in order (the
    same checks; MessageError at the first blob that fails them)."""
    if not len(keys) == len(blobs) == len(senders):
        raise ConfigurationError(f"open_each needs one key, blob and sender each: got {len(keys)} keys, "
                                 f"{len(blobs)} blobs, {len(senders)} senders")
    head, aead, out = _info_head("aead", session), ChaCha20Poly1305, []
    for key, blob, sender in zip(keys, blobs, senders):
        if len(blob) < AEAD_OVERHEAD:
            raise MessageError(f"ciphertext from party {sender} is too short ({len(blob)} bytes)")
        try:
            out.append(aead(key).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], b"%s%d|%d" % (head, sender, receiver)))
        except InvalidTag as exc:
            raise MessageError(
                f"ciphertext from party {sender} to party {receiver} failed authentication "
                f"(session {session!r})"
            ) from exc
    settle_vector_state()
    return out


def open_sealed(key: bytes, blob: bytes, *, session: str, sender: int, receiver: int) -> bytes:
    """Decrypt :func:`seal` output; MessageError if it was tampered with or misrouted."""
    if len(blob) < AEAD_OVERHEAD:
        raise MessageError(f"ciphertext from party {sender} is too short ({len(blob)} bytes)")
    try:
        plaintext = ChaCha20Poly1305(key).decrypt(
            blob[:NONCE_BYTES], blob[NONCE_BYTES:], _associated_data(session, sender, receiver)
        )
    except InvalidTag as exc:
        raise MessageError(
            f"ciphertext from party {sender} to party {receiver} failed authentication "
            f"(session {session!r})"
        ) from exc
    settle_vector_state()
    return plaintext
