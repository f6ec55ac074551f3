"""Benchmark: the order in which the masked sum's controller sends a round's messages.

The controller (:class:`parties.secure.masked_server.ControllerProgram`) sends each round's
messages in :func:`~parties.secure.masked_server.spread` order: blocks of up to
:data:`~parties.secure.masked_server.SPREAD_BLOCK` consecutive parties (1,024 for Adult's 32,561),
the blocks in bit-reversed order.  Until e471316 it sent every ⌊√n⌋-th party in turn (:func:`stride`, kept
here as the reference).  Any order gives the same messages and the same sum; what differs is
how soon each worker's parties get work, and which parties one process steps one after
another.

This runs the masked-sparse sum of RR-Clusters 4.2 over the Adult parties (as
``benchmarks/masked_floor.py --runs`` does) with each order, the orders alternated (ABBA: use
an even ``--runs``; the process grows from run to run), ``--runs`` times each, on ``memory`` (the secure sum's CPU, no timers per party) and on ``tcp`` (2 workers,
TLS: the sum's wall time and the CPU of the workers and of the controller's process).

Run: ``.venv/bin/python benchmarks/send_order.py [--runs R] [--limit N] [--runtimes memory,tcp] [adult.data]``
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _adult import DEFAULT_ADULT  # noqa: E402  (benchmarks/_adult.py)
from masked_floor import Run, one_run  # noqa: E402  (benchmarks/masked_floor.py)

from parties.secure import masked_server  # noqa: E402

PARAMS: dict[str, Any] = dict(p=0.7, Tv=50, Td=0.1, dependence="4.2", secure_sum="masked-sparse")


def stride(ids: list[int]) -> list[int]:
    """The order before e471316: every ⌊√n⌋-th id, then the next stride, ..."""
    step = max(1, math.isqrt(len(ids)))
    return [ids[i] for first in range(step) for i in range(first, len(ids), step)]


ORDERS: dict[str, Callable[[list[int]], list[int]]] = {"blocks": masked_server.spread, "stride": stride}


def measure(data: Any, runs: int, runtimes: tuple[str, ...]) -> dict[tuple[str, str], list[Run]]:
    """``runs`` runs per order and runtime: each round of runs takes every runtime with each
    order, the orders' turn alternating from one round to the next."""
    out: dict[tuple[str, str], list[Run]] = {}
    kept = masked_server.spread
    try:
        for k in range(runs):
            for runtime in runtimes:
                for order in (("blocks", "stride") if k % 2 == 0 else ("stride", "blocks")):
                    setattr(masked_server, "spread", ORDERS[order])  # (the controller's program reads it each round)
                    out.setdefault((runtime, order), []).append(
                        one_run(data, runtime, False, PARAMS, f"{k + 1}/{runs} {order:6s}", first=not out))
    finally:
        setattr(masked_server, "spread", kept)
    return out


def report(runs: dict[tuple[str, str], list[Run]]) -> dict[tuple[str, str], float]:
    """Print each runtime's orders side by side (means, and each run); return the figure each
    is read by: the sum's CPU on memory, its wall time on tcp."""
    figures: dict[tuple[str, str], float] = {}
    print("\nThe controller's send order, means of the runs (each run in brackets)")
    for (runtime, order), done in sorted(runs.items()):
        if runtime == "memory":
            values = [r.sum_cpu or 0.0 for r in done]
            what = "the secure sum's CPU"
        else:
            values = [r.sum_wall for r in done]
            what = (f"the secure sum's wall time (workers' CPU {statistics.mean(r.cpu_workers for r in done):.1f} s, "
                    f"the controller's process {statistics.mean(r.cpu_controller for r in done):.1f} s)")
        figures[(runtime, order)] = statistics.mean(values)
        print(f"  {runtime:6s} {order:6s}: {what} {figures[(runtime, order)]:.2f} s "
              f"[{', '.join(f'{v:.2f}' for v in values)}]")
    for runtime in sorted({r for r, _ in runs}):
        if (runtime, "blocks") in figures and (runtime, "stride") in figures:
            change = figures[(runtime, "blocks")] / figures[(runtime, "stride")] - 1
            print(f"  {runtime}: blocks against stride {100 * change:+.1f} %")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=2, help="runs per order and runtime (default 2)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="first N Adult parties only")
    parser.add_argument("--runtimes", default="memory,tcp", help="comma-separated, among memory and tcp")
    parser.add_argument("adult", nargs="?", type=Path, default=DEFAULT_ADULT, help="path of adult.data")
    args = parser.parse_args(argv)
    runtimes = tuple(args.runtimes.split(","))
    if not runtimes or not set(runtimes) <= {"memory", "tcp"}:
        parser.error(f"--runtimes must name memory and/or tcp, got {args.runtimes!r}")
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    if not args.adult.exists():
        parser.error(f"UCI Adult not found at {args.adult}; pass the path of adult.data")
    from mprr.data import Dataset
    from scenarios.datasets import load_adult

    data: Dataset = load_adult(args.adult)
    if args.limit:
        data = Dataset(data.schema, data.codes[:args.limit])
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    report(measure(data, args.runs, runtimes))
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
