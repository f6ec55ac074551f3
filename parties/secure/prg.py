"""ChaCha20 keystream as a cryptographic pseudo-random generator.

Every secret number of the secure-sum engines (additive shares, masks, Shamir coefficients)
comes from here or from :mod:`secrets`; numpy is used only for arithmetic on the bytes.

The PRG is the ChaCha20 stream cipher (RFC 8439 block function, via ``cryptography``)
applied to zero bytes: the keystream of a 32-byte seed.  Expanding the same seed twice gives
the same stream, which is how two parties that agreed on a pairwise seed derive the same mask
(Bonawitz et al. 2017, "PRG(s_uv)").
"""

from __future__ import annotations

import secrets
from functools import lru_cache

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from mprr.errors import ConfigurationError

__all__ = ["SEED_BYTES", "Keystream", "fresh_seed", "keystream", "keystream_into"]

SEED_BYTES = 32
_NONCE = bytes(16)  # 32-bit block counter 0 + 96-bit nonce 0: each seed is used for one stream


def fresh_seed() -> bytes:
    """Return 32 bytes from the operating system CSPRNG (:func:`secrets.token_bytes`)."""
    return secrets.token_bytes(SEED_BYTES)


def keystream(seed: bytes, nbytes: int) -> bytes:
    """The first ``nbytes`` bytes of ChaCha20(seed): ``Keystream(seed).read(nbytes)`` in one
    call (a pairwise or self mask is expanded once)."""
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise ConfigurationError(f"seed must be {SEED_BYTES} bytes, got {len(seed) if isinstance(seed, bytes) else seed!r}")
    return Cipher(algorithms.ChaCha20(seed, _NONCE), mode=None).encryptor().update(_zeros(nbytes))


def keystream_into(seed: bytes, out: bytearray) -> None:
    """Write the first ``len(out)`` bytes of ChaCha20(seed) into ``out``: :func:`keystream`'s
    bytes without a new bytes object per stream (a mask expanded into a buffer that is reused)."""
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise ConfigurationError(f"seed must be {SEED_BYTES} bytes, got {len(seed) if isinstance(seed, bytes) else seed!r}")
    Cipher(algorithms.ChaCha20(seed, _NONCE), mode=None).encryptor().update_into(_zeros(len(out)), out)


@lru_cache(maxsize=8)
def _zeros(nbytes: int) -> bytes:
    """``nbytes`` zero bytes, one immutable object per length (the masks of a session all have
    the same length)."""
    return bytes(nbytes)


class Keystream:
    """Deterministic byte stream ChaCha20(seed) — a PRG expanding a 32-byte seed.

    Parameters
    ----------
    seed
        Exactly 32 bytes.  ``None`` draws a fresh seed from :func:`secrets.token_bytes`
        (a private CSPRNG for one party).

    Notes
    -----
    Consecutive calls continue the same stream, so ``read(a) + read(b) == read(a + b)``.
    The stream is limited to 2^32 blocks of 64 bytes (256 GiB), far beyond any use here.
    """

    __slots__ = ("_encryptor",)

    def __init__(self, seed: bytes | None = None) -> None:
        if seed is None:
            seed = fresh_seed()
        if not isinstance(seed, (bytes, bytearray)) or len(seed) != SEED_BYTES:
            got = len(seed) if isinstance(seed, (bytes, bytearray)) else type(seed).__name__
            raise ConfigurationError(f"seed must be {SEED_BYTES} bytes, got {got}")
        cipher = Cipher(algorithms.ChaCha20(bytes(seed), _NONCE), mode=None)
        self._encryptor = cipher.encryptor()

    def read(self, nbytes: int) -> bytes:
        """Return the next ``nbytes`` bytes of the keystream."""
        if nbytes < 0:
            raise ConfigurationError(f"nbytes must be >= 0, got {nbytes}")
        return self._encryptor.update(bytes(nbytes))

    def words(self, count: int, dtype: np.dtype | type) -> np.ndarray:
        """Return ``count`` uniformly distributed unsigned integers of ``dtype`` (little endian)."""
        dt = np.dtype(dtype).newbyteorder("<")
        if dt.kind != "u":
            raise ConfigurationError(f"dtype must be an unsigned integer type, got {dt}")
        raw = self.read(int(count) * dt.itemsize)
        return np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("="), copy=True)
