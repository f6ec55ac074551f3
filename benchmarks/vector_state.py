"""Benchmark: what ChaCha20-Poly1305 leaves behind, and what :func:`settle_vector_state` gives back.

On CPUs with AVX-512, ``cryptography``'s ChaCha20-Poly1305 returns with the upper halves of the
vector registers in use.  Until other code clears them (``vzeroupper``, which compiled AVX code
such as a numpy ufunc runs on its way out), every SSE instruction pays a transition penalty.  A
Python program pays it in small copies (``bytes`` concatenation and slicing: ``memcpy``), in
OpenSSL's SHA-256 and HMAC, i.e. in most of what runs between two AEAD calls of the masked
secure sum.  This times those operations in three states: clean (before any AEAD call), after
one AEAD call, and after an AEAD call followed by
:func:`parties.secure.crypto.settle_vector_state` (what the engine's AEAD functions do).  A CPU
without wide vector registers shows no difference.  Target: "settled" within 10 % of "clean".

Run: ``.venv/bin/python benchmarks/vector_state.py [--repeat 7]``
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305  # noqa: E402

from parties.secure.crypto import settle_vector_state  # noqa: E402

KEYS = [os.urandom(16) for _ in range(56)]  # (a party's 56 handed view keys, as in its round 2)
HEAD = b"mprr/view-key\x00\x00\x00\x07"
AEAD_KEY, NONCE, PLAIN = os.urandom(32), os.urandom(12), bytes(250)  # (a sealed share's size)


def concat() -> None:
    for key in KEYS:
        (HEAD + key)[:16]


def sha256() -> None:
    f = hashlib.sha256
    for key in KEYS:
        f(HEAD + key).digest()


def hmac_sha256() -> None:
    for key in KEYS:
        hmac.digest(key, HEAD, "sha256")


OPERATIONS: dict[str, Callable[[], None]] = {
    "bytes concatenated and sliced": concat,
    "SHA-256 (hashlib, OpenSSL)": sha256,
    "HMAC-SHA256 (hmac.digest)": hmac_sha256,
}


def aead() -> None:
    ChaCha20Poly1305(AEAD_KEY).encrypt(NONCE, PLAIN, b"ad")


def _per_key(op: Callable[[], None], before: Callable[[], None], repeat: int) -> float:
    """ns per key of ``op`` run 200 times after ``before``, best of ``repeat``."""
    best = float("inf")
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        for _ in range(200):
            op()
        best = min(best, (time.perf_counter() - start) / 200 / len(KEYS))
    return best * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    settle_vector_state()
    states: dict[str, Callable[[], None]] = {
        "clean": settle_vector_state,
        "after an AEAD call": aead,
        "after it, settled": lambda: (aead(), settle_vector_state()),
    }
    print(f"ns per key (56 keys per call, 200 calls, best of {args.repeat}); target: settled within 10 % of clean")
    print(f"  {'operation':32s}" + "".join(f"{name:>20s}" for name in states) + f"{'settled / clean':>17s}")
    for name, op in OPERATIONS.items():
        row = {state: _per_key(op, before, args.repeat) for state, before in states.items()}
        ratio = row["after it, settled"] / row["clean"]
        print(f"  {name:32s}" + "".join(f"{value:20.1f}" for value in row.values())
              + f"{ratio:16.2f}x {'met' if ratio <= 1.1 else 'NOT met'}")
    start = time.perf_counter()
    for _ in range(100_000):
        settle_vector_state()
    print(f"settle_vector_state: {(time.perf_counter() - start) / 100_000 * 1e9:.0f} ns per call")


if __name__ == "__main__":
    main()
