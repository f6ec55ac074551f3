"""Benchmark: µs per message to build (validate), encode and decode the common wire kinds.

The memory runtime of 32,561 Adult parties encodes and decodes every release request and reply
(:mod:`parties.wire`), and the secure sums every engine message, so the codec is on the hot
path.  For each kind this prints the encoded size and the best-of-``--repeat`` µs per message of
construction (coercion + validation), :func:`~parties.wire.codec.encode` and
:func:`~parties.wire.codec.decode` (with the ``expected`` filter the runtime passes), and the
sha256 of all encodings (equal before/after a codec change means the bytes on the wire are
identical).  Target: no slowdown (encode + decode within 10% of the previous codec).

Run: ``.venv/bin/python benchmarks/wire_codec.py [--repeat 7] [--json out.json]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from parties.secure import messages as sm  # noqa: E402
from parties.wire.codec import decode, encode  # noqa: E402
from parties.wire.messages import Ack, RandomizedValues, Refusal  # noqa: E402
from parties.wire.requests import ReleaseRequest, SecureRelease, SecureSumStart  # noqa: E402

CELLS = 1582  # the joint cells of the Adult dependence phase's secure sum
UNITS = ((0, 3), (1,), (2, 5, 7), (4,), (6, 8), (9,), (10, 11), (12,), (13, 14))


def kinds() -> dict[str, Callable[[], Any]]:
    """A constructor per benchmarked kind, with the sizes of a 32,561-party Adult run."""
    ring = np.arange(CELLS, dtype=np.uint32) * np.uint32(2654435761)
    ids = np.arange(8, dtype=np.uint32) * 3
    sealed = sm.bundle((3 * k, b"c" * 110) for k in range(8))
    return {
        "ReleaseRequest": lambda: ReleaseRequest(
            41, "clusters", UNITS, UNITS, ("keep-or-uniform",) * len(UNITS), ((0.7,),) * len(UNITS)),
        "RandomizedValues": lambda: RandomizedValues(41, np.arange(len(UNITS), dtype=np.int64)),
        "Refusal": lambda: Refusal(41, "budget: the release would exceed the budget", 1.5, 0.25),
        "Ack": lambda: Ack(41),
        "SecureRelease": lambda: SecureRelease(42, "dependence", "s-1", UNITS, UNITS, False,
                                               ("keep-or-uniform",) * len(UNITS), ((0.7,),) * len(UNITS)),
        "SecureSumStart": lambda: SecureSumStart(42, "s-1", "masked", ((0, 120), (121, 32561))),
        "ShareVector": lambda: sm.ShareVector("s-1", -1, ring),
        "PartialSum": lambda: sm.PartialSum("s-1", -1, ring),
        "MaskedInput": lambda: sm.MaskedInput("s-1", ring),
        "PublicKeys": lambda: sm.PublicKeys("s-1", (b"k" * 32, b"s" * 32), b"g" * 64),
        "KeyDirectory": lambda: sm.KeyDirectory("s-1", ids, b"k" * 32 * len(ids)),
        "SealedShares": lambda: sm.SealedShares("s-1", *sealed),
        "UnmaskShares": lambda: sm.UnmaskShares("s-1", ids, bytes(len(ids)), ids + 1, b"v" * 33 * len(ids)),
        "SurvivorSet": lambda: sm.SurvivorSet("s-1", ids),
        "SurvivorTags": lambda: sm.SurvivorTags("s-1", ids, b"t" * 16 * len(ids)),
    }


def best_us(fn: Callable[[], object], repeat: int) -> float:
    """Best-of-``repeat`` µs per call (each repeat runs for about 0.05 s)."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(1, number // 4)
    return min(timer.repeat(repeat, number)) / number * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    digest = hashlib.sha256()
    rows: dict[str, dict[str, float]] = {}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; best of {args.repeat}, µs per message")
    print(f"{'kind':18s} {'bytes':>7s} {'build':>8s} {'encode':>8s} {'decode':>8s} {'enc+dec':>8s}")
    for name, make in kinds().items():
        msg = make()
        data = encode(msg)
        expected = frozenset({type(msg).KIND})
        assert decode(data, expected=expected) == msg
        digest.update(data)
        row = {
            "bytes": len(data),
            "build": best_us(make, args.repeat),
            "encode": best_us(lambda: encode(msg), args.repeat),
            "decode": best_us(lambda: decode(data, expected=expected), args.repeat),
        }
        row["enc+dec"] = row["encode"] + row["decode"]
        rows[name] = row
        print(f"{name:18s} {len(data):7d} {row['build']:8.2f} {row['encode']:8.2f} {row['decode']:8.2f} "
              f"{row['enc+dec']:8.2f}")
    print(f"sha256 of all encodings: {digest.hexdigest()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"sha256": digest.hexdigest(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
