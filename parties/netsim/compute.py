"""Compute time of the cryptography a party performs, charged per message it sends.

The virtual-time runtime does not measure the CPU a run spends (that depends on the machine's
load and would break "same seed, same timeline"); it charges each message a *modelled* compute
time: the cryptographic operations that produced it, each at a cost calibrated on this machine
(:func:`calibrate`, :data:`DEFAULT_COSTS`), times the sending party's device-speed factor
(:class:`parties.netsim.profiles.LinkProfile`).

What a message costs (:meth:`CryptoCosts.message_cost`), from the engines' rounds (Bonawitz et
al. 2017, "Practical Secure Aggregation for Privacy-Preserving Machine Learning", Section 4, as
implemented in :mod:`parties.secure.masked`), with k the number of the party's live neighbours
(the recipients of its ``SealedShares``) and L the masked vector's bytes:

=================  ====================================================================
``PublicKeys``     one X25519 key generation per key (+ one Ed25519 signature if signed)
``SealedShares``   k x (X25519 agreement + 2 HKDF) + Shamir shares of 2 secrets at k + 1
                   abscissae + k AEAD seals of one blob each
``MaskedInput``    k AEAD opens of the relayed shares (each the size of the blobs the
                   party sealed itself) + k x (X25519 agreement + HKDF) + (k + 1) ChaCha20
                   keystreams of L bytes (pairwise and self masks)
``SurvivorTags``   one keyed-BLAKE2b MAC per target
``UnmaskShares``   one MAC check per owner
``ShareVector``    CSPRNG bytes for the shares (ChaCha20 keystream of the vector's bytes)
anything else      0 (randomized response, partial sums and relays are negligible here)
=================  ====================================================================

The controller's own cryptography (unmasking) is not charged; its relaying is the runtime's processing
(:mod:`parties.netsim.processing`, charged when the model asks for it).

:data:`DEFAULT_COSTS` were measured by :func:`calibrate` on the project's build machine
(2 shared cores, Linux, Python 3.11, ``cryptography`` with OpenSSL); run :func:`calibrate` on
yours (``python -m parties.netsim.compute`` prints them) and pass the result as
``NetworkModel.costs``.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

from mprr.domain import check_real

__all__ = ["DEFAULT_COSTS", "CryptoCosts", "calibrate", "cpu_per_call"]


@dataclass(frozen=True)
class CryptoCosts:
    """Seconds of one cryptographic operation on the reference machine (module docstring).

    Attributes
    ----------
    x25519_keygen, x25519_agree
        One X25519 key generation; one X25519 exchange (RFC 7748).
    hkdf
        One HKDF-SHA256 derivation of a 32-byte key (RFC 5869).
    chacha20_fixed, chacha20_per_byte
        A ChaCha20 keystream (RFC 8439): set-up, and per byte.
    aead_fixed, aead_per_byte
        A ChaCha20-Poly1305 seal or open: set-up, and per byte.
    shamir_share
        One Shamir share of one 32-byte secret (one polynomial evaluation mod p).
    mac
        One keyed BLAKE2b 16-byte tag over a short statement (RFC 7693).
    ed25519_sign
        One Ed25519 signature.
    """

    x25519_keygen: float
    x25519_agree: float
    hkdf: float
    chacha20_fixed: float
    chacha20_per_byte: float
    aead_fixed: float
    aead_per_byte: float
    shamir_share: float
    mac: float
    ed25519_sign: float

    def __post_init__(self) -> None:
        for f in fields(self):
            check_real(f"CryptoCosts.{f.name}", getattr(self, f.name))

    def chacha20(self, nbytes: int) -> float:
        """Seconds of a ChaCha20 keystream of ``nbytes`` bytes."""
        return self.chacha20_fixed + nbytes * self.chacha20_per_byte

    def aead(self, nbytes: int) -> float:
        """Seconds of one AEAD seal or open of ``nbytes`` bytes."""
        return self.aead_fixed + nbytes * self.aead_per_byte

    def message_cost(self, message: Any, *, degree: int = 0, blob: int = 0) -> float:
        """Seconds (at device speed 1) of the cryptography behind ``message`` (table of the
        module docstring); for ``MaskedInput``, ``degree`` is the sender's live neighbours and
        ``blob`` the bytes of one sealed share (both from the sender's ``SealedShares``)."""
        name = type(message).__name__
        if name == "PublicKeys":
            return len(message.keys) * self.x25519_keygen + (self.ed25519_sign if message.signature else 0.0)
        if name == "SealedShares":
            k = len(message.recipients)
            blob = len(message.ciphertexts) // k if k else 0
            return k * (self.x25519_agree + 2 * self.hkdf + self.aead(blob)) + 2 * (k + 1) * self.shamir_share
        if name == "MaskedInput":
            nbytes = int(message.values.nbytes)
            return degree * (self.aead(blob) + self.x25519_agree + self.hkdf) + (degree + 1) * self.chacha20(nbytes)
        if name == "SurvivorTags":
            return len(message.targets) * self.mac
        if name == "UnmaskShares":
            return len(message.owners) * self.mac
        if name == "ShareVector":
            return self.chacha20(int(message.shares.nbytes))
        return 0.0

    def to_dict(self) -> dict[str, float]:
        """The costs by name (JSON-friendly)."""
        return asdict(self)


def cpu_per_call(run: Callable[[], object], repeat: int) -> float:
    """CPU seconds per call of ``run``: the best of 5 timings of ``repeat`` calls
    (:func:`time.process_time`, so other processes' load does not count)."""
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeat):
            run()
        best = min(best, (time.process_time() - start) / repeat)
    return best


def calibrate(*, repeat: int = 200) -> CryptoCosts:
    """Measure :class:`CryptoCosts` on this machine with the engines' own primitives
    (:mod:`parties.secure.crypto`, :mod:`parties.secure.prg`, :mod:`parties.secure.shamir`,
    :mod:`parties.secure.pki`); about a second of CPU at the default ``repeat``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from parties.secure.crypto import KeyPair, ParsedKeys, derive_key, exchange, seal
    from parties.secure.prg import keystream
    from parties.secure.shamir import share_values

    a, b, parsed = KeyPair.generate(), KeyPair.generate(), ParsedKeys()  # (a session parses each key once)
    shared = exchange(a.private, b.public, peer=1)
    key, seed = secrets.token_bytes(32), secrets.token_bytes(32)
    small, large = 64, 1 << 16
    chacha_small = cpu_per_call(lambda: keystream(seed, small), repeat)
    chacha_large = cpu_per_call(lambda: keystream(seed, large), max(1, repeat // 10))
    aead_small = cpu_per_call(lambda: seal(key, bytes(small), session="s", sender=0, receiver=1), repeat)
    aead_large = cpu_per_call(lambda: seal(key, bytes(large), session="s", sender=0, receiver=1), max(1, repeat // 10))
    xs = list(range(1, 17))
    secret = secrets.token_bytes(32)
    signer = Ed25519PrivateKey.generate()
    chacha_per_byte = max(0.0, (chacha_large - chacha_small) / (large - small))
    aead_per_byte = max(0.0, (aead_large - aead_small) / (large - small))
    return CryptoCosts(
        x25519_keygen=cpu_per_call(KeyPair.generate, repeat),
        x25519_agree=cpu_per_call(lambda: exchange(a.private, b.public, peer=1, parsed=parsed), repeat),
        hkdf=cpu_per_call(lambda: derive_key(shared, purpose="mask", session="s", a=0, b=1), repeat),
        chacha20_fixed=max(0.0, chacha_small - small * chacha_per_byte),
        chacha20_per_byte=chacha_per_byte,
        aead_fixed=max(0.0, aead_small - small * aead_per_byte),
        aead_per_byte=aead_per_byte,
        shamir_share=cpu_per_call(lambda: share_values([secret], xs, 9), max(1, repeat // 4)) / len(xs),
        mac=cpu_per_call(lambda: hashlib.blake2b(bytes(48), key=key[:16], digest_size=16).digest(), repeat),
        ed25519_sign=cpu_per_call(lambda: signer.sign(bytes(64)), repeat),
    )


DEFAULT_COSTS = CryptoCosts(
    x25519_keygen=34.4e-6, x25519_agree=30.7e-6, hkdf=2.11e-6, chacha20_fixed=3.55e-6, chacha20_per_byte=0.20e-9,
    aead_fixed=2.93e-6, aead_per_byte=0.32e-9, shamir_share=2.33e-6, mac=0.707e-6, ed25519_sign=31.5e-6,
)
"""The costs :func:`calibrate` measured on the build machine (module docstring), 2026-11-27,
two calibrations agreeing within 4 %: about 34 us per X25519 key, 31 us per agreement, 2 us per
HKDF, 0.2 ns per ChaCha20 byte."""


if __name__ == "__main__":  # pragma: no cover - prints this machine's calibration
    print(repr(calibrate()))
