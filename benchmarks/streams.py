"""Benchmark: per-party random streams for every UCI Adult record (n = 32,561).

Prints the CPU and wall seconds of ``PartyStreams(seed, n)`` plus one ``uniforms(5)`` draw,
beside the same draws from 32,561 spawned ``Generator(PCG64(child))`` objects (what the class
built before it was vectorized) and from one Generator (``rng.random((n, 5))``), and checks
that the vectorized streams draw the very same numbers as the spawned Generators.
Target: PartyStreams within a small factor of one Generator (<= 0.1 s; one Generator ~0.05 s).

Run: ``.venv/bin/python benchmarks/streams.py [--n N] [--seed S]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mprr.streams import PartyStreams  # noqa: E402

TARGET_S = 0.1


def timed(fn: Callable[[], np.ndarray]) -> tuple[np.ndarray, float, float]:
    """(result, wall s, CPU s) of ``fn()``."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32_561)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n, seed = args.n, args.seed

    def spawned() -> np.ndarray:
        children = np.random.SeedSequence(seed).spawn(n + 1)[:n]
        return np.stack([np.random.Generator(np.random.PCG64(c)).random(5) for c in children])

    fast, w_fast, c_fast = timed(lambda: PartyStreams(seed, n).uniforms(5))
    slow, w_slow, c_slow = timed(spawned)
    _, w_one, c_one = timed(lambda: np.random.default_rng(seed).random((n, 5)))
    print(f"n = {n:,} parties, 5 uniforms each (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'':34s} {'wall s':>8s} {'CPU s':>8s}")
    print(f"{'PartyStreams (vectorized)':34s} {w_fast:8.3f} {c_fast:8.3f}   target <= {TARGET_S} s: "
          f"{'met' if w_fast <= TARGET_S else 'NOT met'}")
    print(f"{'spawned Generators (per party)':34s} {w_slow:8.3f} {c_slow:8.3f}")
    print(f"{'one Generator':34s} {w_one:8.3f} {c_one:8.3f}")
    same = bool(np.array_equal(fast, slow))
    print(f"identical draws: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
