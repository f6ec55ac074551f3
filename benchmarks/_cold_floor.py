"""The cold floor of the masked secure sum's party cryptography (``benchmarks/masked_floor.py --cold``)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from parties.secure import shamir, views
from parties.secure.topology import build_neighbourhoods

T = TypeVar("T")


def cold_floor(n: int, *, degree: int, threshold: int, cells: int, session: str
               ) -> tuple[float, dict[str, float]]:
    """The floor's cryptography for ``n`` parties at once, each with its own keys and data:
    CPU seconds per party, in all and per round.

    The same library calls as ``masked_floor.items``' floor column, as many per party (17 X25519, 40
    HMACs, 8 seals and 8 opens, 9 masks, Shamir, 56 SHA-256, 64 + 32 BLAKE2b tags), inputs
    prepared in advance, but on ``n`` parties' distinct keys, ciphertexts, statements and
    input vectors on a k = 8 regular graph, one round after another over all the parties (the
    run's order: a party's state of one round is used again only after every other party's).
    ``degree``, ``threshold``, ``cells``: the graph's degree, the Shamir threshold and L.
    It is what an ideal program would pay for the cryptography with no Python around it: the
    gap to ``masked_floor.items``' floor (one key, hot in the cache) is the cost of the data being
    cold, which no code layout removes while each party keeps its own keys.  Slightly warmer
    than a run still: the plaintexts and the Shamir secret are one for all parties, and a
    party's HMAC key blocks one pair for all its neighbours."""
    sha256, blake, token, aead = hashlib.sha256, hashlib.blake2b, secrets.token_bytes, ChaCha20Poly1305
    graph = build_neighbourhoods(tuple(range(n)), "regular", degree, seed=1)
    nbrs = [graph[i] for i in range(n)]
    static = [X25519PrivateKey.generate() for _ in range(n)]
    static_pub = [k.public_key() for k in static]
    blocks = [(secrets.token_bytes(64), secrets.token_bytes(64)) for _ in range(n)]  # a party's padded HMAC keys
    infos = [[b"mprr/secure-sum/v1|channel|s|%d|%d\x01" % (i, j) for j in nbrs[i]] for i in range(n)]
    aead_keys = [[secrets.token_bytes(32) for _ in range(degree)] for _ in range(n)]
    plains = [bytes(110 + 7 * views.KEY_ENTRY.size)] * degree
    ads = [[b"mprr/secure-sum/v1|aead|s|%d|%d" % (i, j) for j in nbrs[i]] for i in range(n)]
    heads = [b"mprr/view-key" + struct_i(i) for i in range(n)]
    view_keys = [[secrets.token_bytes(views.VIEW_KEY_BYTES) for _ in range(64)] for _ in range(n)]
    statements = [views.statement_prefix(session) + struct_i(i) + views.pack_ids(tuple(range(9))) for i in range(n)]
    accs = [np.zeros(cells, dtype=np.uint32) for _ in range(n)]
    zero, nonce16 = bytes(cells * 4), bytes(16)
    seeds = [[secrets.token_bytes(32) for _ in range(degree + 1)] for _ in range(n)]
    prime, t = shamir.PRIME, threshold
    xs = list(range(1, degree + 2))
    secret = secrets.randbelow(prime)
    rounds: dict[str, float] = {}

    def timed(name: str, work: Callable[[], T]) -> T:
        start = time.process_time()
        out = work()
        rounds[name] = rounds.get(name, 0.0) + time.process_time() - start
        return out

    def round0() -> list[tuple[X25519PrivateKey, bytes]]:
        out = []
        for _ in range(n):
            key = X25519PrivateKey.generate()
            out.append((key, key.public_key().public_bytes_raw()))
        return out

    masking = timed("0: masking key pair", round0)

    def round1() -> list[list[bytes]]:
        sealed = []
        for i in range(n):
            mine = static[i]
            for j in nbrs[i]:
                mine.exchange(static_pub[j])
            inner, outer = blocks[i]
            for info in infos[i]:  # one extract and two expands per neighbour (channel and view keys)
                sha256(outer + sha256(inner + info).digest()).digest()
                sha256(outer + sha256(inner + info).digest()).digest()
                sha256(outer + sha256(inner + info).digest()).digest()
            for _ in range(2):  # Shamir: 2 secrets, t-of-(k + 1)
                cs = [secret] + [secrets.randbelow(prime) for _ in range(t - 1)]
                for xk in xs:
                    y = 0
                    for c in reversed(cs):
                        y = (y * xk + c) % prime
            token(32)
            token(32)
            sealed.append([(nonce := token(12)) + aead(key).encrypt(nonce, plain, ad)
                           for key, plain, ad in zip(aead_keys[i], plains, ads[i])])
        return sealed

    sealed = timed("1: static agreements, HKDF, Shamir, seals", round1)
    parsed = timed("2: masking agreements, HKDF, opens, masks, combined keys",
                   lambda: [X25519PublicKey.from_public_bytes(raw) for _, raw in masking])

    def round2() -> None:
        for i in range(n):
            for key, blob, ad in zip(aead_keys[i], sealed[i], ads[i]):
                aead(key).decrypt(blob[:12], blob[12:], ad)
            mine = masking[i][0]
            for j in nbrs[i]:
                mine.exchange(parsed[j])
            inner, outer = blocks[i]
            for info in infos[i]:  # one extract and one expand per masking seed
                sha256(outer + sha256(inner + info).digest()).digest()
                sha256(outer + sha256(inner + info).digest()).digest()
            acc = accs[i]
            for seed in seeds[i]:
                np.add(acc, np.frombuffer(Cipher(algorithms.ChaCha20(seed, nonce16), mode=None).encryptor()
                                          .update(zero), dtype=np.uint32), out=acc)
            head = heads[i]
            for key in view_keys[i][:56]:
                sha256(head + key).digest()

    timed("2: masking agreements, HKDF, opens, masks, combined keys", round2)

    def round3() -> list[list[bytes]]:
        return [[blake(statements[i], key=key, digest_size=16).digest() for key in view_keys[i]] for i in range(n)]

    tags = timed("3: view tags written", round3)

    def round4() -> None:
        same = hmac.compare_digest
        for i in range(n):
            statement, mine = statements[i], tags[i]
            for k, key in enumerate(view_keys[i][:32]):
                same(blake(statement, key=key, digest_size=16).digest(), mine[k])

    timed("4: view tags checked", round4)
    return sum(rounds.values()) / n, {name: s / n for name, s in rounds.items()}


def struct_i(i: int) -> bytes:
    """A party id as the 4 little-endian bytes of the statements."""
    return i.to_bytes(4, "little")
