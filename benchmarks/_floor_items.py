"""The floor's items of the masked secure sum (``benchmarks/masked_floor.py``): each library call
one party's cryptography needs, and the engine's function for it, timed together round after
round (:class:`Timings`): the best round is the floor, the rounds' mean a second reference."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from parties.secure import crypto, prg, shamir, views
from parties.secure.party_crypto import masked_input
from parties.secure.pki import setup_pki
from parties.secure.ring import ZMod
from parties.secure.topology import build_neighbourhoods
from parties.secure.unmasking import add_mask

DEGREE, THRESHOLD, CELLS = 8, 5, 1_582
"""The masked-sparse sum of Adult: a k = 8 regular graph, Shamir threshold t = 5, L = 1,582 cells."""
SESSION = "bench-session"


class Timings:
    """Callables timed together: every round times each of them once (over enough calls for
    about 20 ms), so a burst of load on the shared machine hits all items alike.  Each item
    keeps its best round (:meth:`best`: the floor, the least disturbed moment) and the mean
    of its rounds (:meth:`mean`: a second reference, an average as a run's CPU is), CPU
    seconds per call."""

    def __init__(self) -> None:
        self._fns: list[tuple[Callable[[], object], int]] = []
        self._best: list[float] = []
        self._total: list[float] = []
        self._rounds = 0

    def add(self, fn: Callable[[], object]) -> int:
        number = 1
        while True:
            start = time.process_time()
            for _ in range(number):
                fn()
            if time.process_time() - start >= 0.02:
                break
            number *= 2
        self._fns.append((fn, number))
        self._best.append(float("inf"))
        self._total.append(0.0)
        return len(self._fns) - 1

    def run(self, rounds: int) -> None:
        for _ in range(rounds):
            for k, (fn, number) in enumerate(self._fns):
                start = time.process_time()
                for _ in range(number):
                    fn()
                per_call = (time.process_time() - start) / number
                self._best[k] = min(self._best[k], per_call)
                self._total[k] += per_call
            self._rounds += 1

    @property
    def rounds(self) -> int:
        """The rounds timed so far."""
        return self._rounds

    def best(self, k: int) -> float:
        return self._best[k]

    def mean(self, k: int) -> float:
        return self._total[k] / self._rounds


class Item(NamedTuple):
    """One row of :func:`items`: a kind of call, how many a party makes, and CPU seconds per call."""

    name: str
    calls: int
    """Calls per party (0: an engine-only row, a whole function's cost)."""
    floor: float
    """The library call alone, best round (0.0 on an engine-only row)."""
    engine: float | None
    """The engine's function for the same call, best round (None: no engine column)."""
    floor_mean: float
    """The library call alone, mean of the rounds (0.0 on an engine-only row)."""


def per_party(rows: list[Item]) -> tuple[float, float]:
    """One party's cryptography from ``rows``: every row's calls at their floor, and at the mean of
    their rounds, added up (seconds; engine-only rows count none)."""
    return (sum(calls * floor for _, calls, floor, _, _ in rows), sum(calls * mean for _, calls, _, _, mean in rows))


def items(repeat: int) -> list[Item]:
    """The floor's items (:class:`Item`), each timed ``repeat`` rounds."""
    floor = Floor()
    floor.run(repeat)
    return floor.items()


class Floor:
    """The floor's items, timed round after round whenever :meth:`run` is called: a benchmark
    can time more rounds between its runs and after them, so that the best round of each item
    (:meth:`items`) is taken over the whole benchmark, not only over the minute before the runs
    (the shared machine's speed drifts by 5-20 % within minutes; a floor timed in a slow spell
    alone would be too high)."""

    def __init__(self) -> None:
        self._timings, self._rows = _timed_rows()

    @property
    def rounds(self) -> int:
        """The rounds timed so far."""
        return self._timings.rounds

    def run(self, rounds: int) -> None:
        """Time ``rounds`` more rounds of every item."""
        self._timings.run(rounds)

    def items(self) -> list[Item]:
        """Each item's best round and mean of the rounds so far (:class:`Item`)."""
        timings = self._timings

        def value(ids: list[int] | None, scale: int, of: Callable[[int], float] = timings.best) -> float | None:
            return None if ids is None else sum(of(k) for k in ids) / scale

        return [Item(row[0], row[1], value(row[2], 1) or 0.0, value(row[3], row[4] if len(row) > 4 else 1),
                     value(row[2], 1, timings.mean) or 0.0)
                for row in self._rows]


def _timed_rows() -> tuple[Timings, list[tuple[Any, ...]]]:
    """The items' callables added to one :class:`Timings` (each calibrated, no round timed yet),
    and the rows of :meth:`Floor.items`: (name, calls per party, the floor's timing ids, the
    engine's timing ids or None, and the engine's calls per party where not 1)."""
    ring = ZMod(1 << 32)
    signers, registry = setup_pki(range(2), signing=False)  # (the masked engine signs nothing)
    me, peer = signers[0], 1
    priv = X25519PrivateKey.generate()
    pub_raw = X25519PrivateKey.generate().public_key().public_bytes_raw()
    pub = X25519PublicKey.from_public_bytes(pub_raw)
    static_peer = registry.static_key(peer)
    key32 = secrets.token_bytes(32)
    shared = priv.exchange(pub)
    info = b"mprr/secure-sum/v1|mask|bench-session|3|17\x01"
    # HMAC-SHA256 (RFC 2104) as two SHA-256 over the key's padded blocks, prepared in advance: the
    # cheapest stdlib form here (hmac.digest's one-shot OpenSSL call looks up HMAC and SHA-256 per call)
    sha256 = hashlib.sha256
    inner_block = bytes(b ^ 0x36 for b in key32) + b"\x36" * 32
    outer_block = bytes(b ^ 0x5C for b in key32) + b"\x5c" * 32
    assert sha256(outer_block + sha256(inner_block + info).digest()).digest() == hmac.digest(key32, info, "sha256")
    # a sealed share: owner, holder, x, two 33-byte shares, s_pk, and about 7 handed view keys
    plain = bytes(110 + 7 * views.KEY_ENTRY.size)
    ad = b"mprr/secure-sum/v1|aead|bench-session|3|17"
    blob = crypto.seal(key32, plain, session=SESSION, sender=3, receiver=17)
    zero = bytes(CELLS * 4)
    acc = np.zeros(CELLS, dtype=np.uint32)
    x = np.zeros(CELLS, dtype=np.uint32)
    coefficients = [secrets.randbelow(shamir.PRIME) for _ in range(THRESHOLD)]
    xs = list(range(1, DEGREE + 2))
    prefix = views.statement_prefix(SESSION)
    view = views.pack_ids(tuple(range(9)))
    statement = prefix + b"\x03\x00\x00\x00\x11\x00\x00\x00" + view
    tag_key = secrets.token_bytes(views.VIEW_KEY_BYTES)
    targets = list(range(64))
    tag_keys = {h: tag_key for h in targets}
    tag = hashlib.blake2b(statement, key=tag_key, digest_size=16).digest()
    handed = [(5, tag_key)]
    neighbours = build_neighbourhoods(tuple(range(2_000)), "regular", DEGREE, seed=1)
    live = tuple(neighbours[0])
    peers = {j: pub_raw for j in range(1, DEGREE + 1)}
    parsed = crypto.ParsedKeys()  # (the session's memo of parsed keys, as the engine's)

    def floor_shamir() -> None:
        for _ in range(2):
            cs = [coefficients[0]] + [secrets.randbelow(shamir.PRIME) for _ in range(THRESHOLD - 1)]
            for xk in xs:
                y = 0
                for c in reversed(cs):
                    y = (y * xk + c) % shamir.PRIME

    def engine_shamir() -> None:
        shamir.share_values((key32, key32), xs, THRESHOLD)

    def floor_mask() -> None:
        words = np.frombuffer(Cipher(algorithms.ChaCha20(key32, bytes(16)), mode=None).encryptor().update(zero),
                              dtype=np.uint32)
        np.add(acc, words, out=acc)

    def engine_mask() -> None:
        add_mask(acc, key32)

    def engine_masked_input() -> None:  # the self mask and 8 pairwise masks, each with its agreement
        masked_input(ring, x, key32, priv, peers, SESSION, 0, parsed)

    neighbours8 = list(range(1, DEGREE + 1))
    shared8 = [shared] * DEGREE

    def engine_agreements() -> None:  # the agreements and HKDF the engine does for its neighbours, in one call each
        crypto.derive_keys_each(me.exchange_each(registry, [peer] * DEGREE), purposes=("channel", "view"),
                                session=SESSION, a=0, peers=neighbours8)

    timings = Timings()
    t = timings.add
    rows: list[tuple[Any, ...]] = [
        ("X25519 key pair (generate, raw public key)", 1,
         [t(lambda: X25519PrivateKey.generate().public_key().public_bytes_raw())], [t(crypto.KeyPair.generate)]),
        ("X25519 static agreement (channel and view keys)", DEGREE,
         [t(lambda: priv.exchange(static_peer))], [t(lambda: me.exchange_each(registry, [peer] * DEGREE))], DEGREE),
        ("X25519 masking agreement", DEGREE,
         [t(lambda: priv.exchange(pub))], [t(lambda: crypto.exchange(priv, pub_raw, peer=1, parsed=parsed))]),
        ("X25519 public key parse (one masking key per party)", 1,
         [t(lambda: X25519PublicKey.from_public_bytes(pub_raw))], None),
        ("HMAC-SHA256 in HKDF (40; engine: 1/40 of derive_keys_each x2 + x1 for 8 peers)", 40,
         [t(lambda: sha256(outer_block + sha256(inner_block + info).digest()).digest())],
         [t(lambda: crypto.derive_keys_each(shared8, purposes=("channel", "view"), session=SESSION, a=3,
                                            peers=neighbours8)),
          t(lambda: crypto.derive_keys_each(shared8, purposes=("mask",), session=SESSION, a=3, peers=neighbours8))],
         40),
        ("ChaCha20-Poly1305 seal (~250 B, random nonce; engine: 1/8 of seal_each)", DEGREE,
         [t(lambda: ChaCha20Poly1305(key32).encrypt(secrets.token_bytes(12), plain, ad))],
         [t(lambda: crypto.seal_each([key32] * DEGREE, [plain] * DEGREE, session=SESSION, sender=3,
                                     receivers=tuple(range(DEGREE))))], DEGREE),
        ("ChaCha20-Poly1305 open", DEGREE,
         [t(lambda: ChaCha20Poly1305(key32).decrypt(blob[:12], blob[12:], ad))],
         [t(lambda: crypto.open_sealed(key32, blob, session=SESSION, sender=3, receiver=17))]),
        (f"ChaCha20 mask of {CELLS} cells, added in place", DEGREE + 1, [t(floor_mask)], [t(engine_mask)]),
        ("Shamir: 2 secrets 5-of-9 (all 18 shares)", 1, [t(floor_shamir)], [t(engine_shamir)]),
        ("CSPRNG: self-mask seed, handed view keys (engine: 1/2 of both)", 2,
         [t(lambda: secrets.token_bytes(32))], [t(lambda: (prg.fresh_seed(), views.pair_keys(live, neighbours)))], 2),
        ("combined view key (SHA-256)", 56,
         [t(lambda: hashlib.sha256(b"mprr/view-key" + statement[:20]).digest())],
         [t(lambda: views.combined_key(handed))]),
        ("view tag written (keyed BLAKE2b-128; engine: 1/64 of view_tags)", 64,
         [t(lambda: hashlib.blake2b(statement, key=tag_key, digest_size=16).digest())],
         [t(lambda: views.view_tags(tag_keys, prefix, 3, targets, view))], 64),
        ("view tag checked (keyed BLAKE2b-128, compare)", 32,
         [t(lambda: hmac.compare_digest(hashlib.blake2b(statement, key=tag_key, digest_size=16).digest(), tag))],
         None),
        ("[engine] 8 static agreements with their HKDF", 0, None, [t(engine_agreements)]),
        ("[engine] masked input: 8 agreements + HKDF + 9 masks", 0, None, [t(engine_masked_input)]),
    ]
    return timings, rows
