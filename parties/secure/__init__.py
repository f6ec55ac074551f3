"""parties.secure — secure-sum engines: exact count vectors without revealing any input.

Modules, in dependency order:

- ``prg``       — ChaCha20 keystream PRG, fresh seeds from :mod:`secrets`
- ``ring``      — Z_M arithmetic (numpy, smallest unsigned dtype) and exact uniform sampling
- ``sharing``   — additive shares over Z_M (main paper 4.2: n shares summing to 0 mod n + 1)
- ``shamir``    — Shamir t-of-k sharing over GF(2^256 + 297) for 32-byte seeds and keys
- ``crypto``    — X25519 key agreement, HKDF-SHA256, ChaCha20-Poly1305 AEAD channels
"""
