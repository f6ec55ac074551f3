"""Runtimes benchmark: all 32,561 UCI Adult parties, RR-Clusters, on ``memory`` / ``tcp`` / ``ray``.

Runs the same seed on each runtime asked for, checks that the release, clusters and payload
traffic equal the first runtime's, and prints wall time (start-up of the workers apart from the
protocol), CPU seconds (this process plus its worker processes; Ray's actors are not counted),
peak RSS of this process and of its children, and the wire figures (payload, framing, control,
the payload bytes broadcasts and reply columns did not carry, TLS overhead from the kernel's
socket counters).

Targets on this 2-core machine:

- ``--dependence 4.1`` (default): tcp with 2 workers, the protocol ≤ 15 s;
- ``--dependence 4.2 --secure-sum masked-sparse``: the dependence phase is one masked secure sum
  (Bonawitz et al. 2017, k = 8 regular neighbour graph) of all 1,582 pairwise cells of Adult
  over every party; on tcp with 2 workers (both cores) that secure sum ≤ 30 s (wall, from the
  controller's ``SecureRelease`` to the tallies, ``result.timings["secure_sum"]``).

Usage::

    .venv/bin/python benchmarks/runtimes.py [adult.data] [--runtimes memory,tcp] [--workers 2]
        [--no-tls] [--limit N] [--shards S] [--dependence 4.2 --secure-sum masked-sparse]
        [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mprr.data import Dataset  # noqa: E402
from parties.runtime_registry import make_runtime  # noqa: E402
from parties.simulate import simulate  # noqa: E402
from scenarios.datasets import load_adult  # noqa: E402
from _adult import DEFAULT_ADULT  # noqa: E402  (benchmarks/_adult.py)

TARGET = {"tcp": 15.0}
"""Protocol seconds, RR-Clusters 4.1."""
SECURE_TARGET = {"tcp": 30.0}
"""Secure-sum seconds of the 4.2 / 4.3 dependence phase (all 1,582 Adult pair cells)."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _mib(kib: float) -> float:
    return kib / 1024.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adult", nargs="?", default=str(DEFAULT_ADULT), help="path of adult.data")
    parser.add_argument("--runtimes", default="memory,tcp", help="comma-separated: memory, tcp, ray")
    parser.add_argument("--workers", type=int, default=2, help="tcp worker processes (default 2)")
    parser.add_argument("--shards", type=int, default=2, help="ray shard actors (default 2)")
    parser.add_argument("--no-tls", action="store_true", help="tcp without TLS")
    parser.add_argument("--limit", type=int, default=None, help="first N records only")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dependence", default="4.1", choices=("4.1", "4.2", "4.3"),
                        help="RR-Clusters dependence method (4.2 / 4.3: a secure sum of every pair cell)")
    parser.add_argument("--secure-sum", default="masked-sparse", help="secure-sum engine of 4.2 / 4.3")
    parser.add_argument("--timeout", type=float, default=300.0, help="round timeout, seconds")
    args = parser.parse_args(argv)
    path = Path(args.adult)
    if not path.exists():
        print(f"UCI Adult not found at {path}; pass its path", file=sys.stderr)
        return 2
    data: Dataset = load_adult(path)
    if args.limit:
        data = Dataset(data.schema, data.codes[: args.limit])
    params: dict = dict(p=0.7, Tv=50, Td=0.1, dependence=args.dependence)
    secure = args.dependence != "4.1"
    if secure:
        params["secure_sum"] = args.secure_sum
    sizes = data.sizes
    cells = sum(sizes[i] * sizes[j] for i in range(len(sizes)) for j in range(i + 1, len(sizes)))
    print(f"RR-Clusters {args.dependence}" + (f" ({args.secure_sum} secure sum of {cells:,} pair cells)" if secure else "")
          + f", n = {data.n:,} Adult parties, seed {args.seed} (machine: 2 cores, shared)")
    reference = None
    for name in args.runtimes.split(","):
        options: dict = {}
        if name == "tcp":
            options = {"workers": args.workers, "tls": not args.no_tls}
        elif name == "ray":
            options = {"shards": args.shards}
        runtime = make_runtime(name, **options)
        started, cpu, kids_cpu = time.perf_counter(), time.process_time(), _children_cpu()
        sim = simulate(data, "RR-Clusters", seed=args.seed, timeout=args.timeout, runtime=runtime, **params)
        wall = time.perf_counter() - started
        cpu, kids_cpu = time.process_time() - cpu, _children_cpu() - kids_cpu
        t = sim.traffic
        me = _mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        kids = _mib(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        line = f"{name:>6}: wall {wall:6.1f} s"
        if sim.wire:
            w = sim.wire
            proto = w["protocol_seconds"]
            target = None if secure else TARGET.get(name)
            line += (f" (start-up {w['startup_seconds']:.1f} s, protocol {proto:.1f} s"
                     + (f", target <= {target:.0f} s: {'met' if proto <= target else 'NOT met'}" if target else "")
                     + ")")
        line += f"; CPU {cpu + kids_cpu:.1f} s (this process {cpu:.1f} s"
        line += f", workers {kids_cpu:.1f} s)" if name == "tcp" else ")"
        line += f"; {t.messages:,} messages, {t.bytes:,} payload bytes; peak RSS {me:,.0f} MiB"
        if name == "tcp":
            line += f" (largest worker {kids:,.0f} MiB)"
        print(line)
        if secure:
            seconds = sim.result.timings.get("secure_sum", float("nan"))
            target = SECURE_TARGET.get(name)
            print(f"        secure sum ({args.secure_sum}, {cells:,} cells, {sim.result.n:,} parties): "
                  f"{seconds:.1f} s wall" + (f", target <= {target:.0f} s: {'met' if seconds <= target else 'NOT met'}"
                                             if target else ""))
        if sim.wire and "payload_bytes" in sim.wire:
            w = sim.wire
            extra = (f"        wire: payload {w['payload_bytes']:,} B, framing {w['framing_bytes']:,} B "
                     f"({w['framing_bytes'] / max(t.messages, 1):.0f} B/message), control {w['control_bytes']:,} B; "
                     f"not carried: broadcast copies {w.get('multicast_saved_bytes', 0):,} B, reply columns "
                     f"{w.get('columns_saved_bytes', 0):,} B")
            if "tls_overhead_bytes" in w:
                extra += (f", socket {w['socket_bytes_sent'] + w['socket_bytes_received']:,} B, "
                          f"TLS overhead {w['tls_overhead_bytes']:,} B")
            print(extra)
        if reference is None:
            reference = sim
        else:
            same = (sim.result.clusters == reference.result.clusters
                    and all(np.array_equal(a.codes, b.codes)
                            for a, b in zip(sim.result.releases, reference.result.releases))
                    and (t.messages, t.bytes) == (reference.traffic.messages, reference.traffic.bytes))
            print(f"        same release, clusters and payload traffic as {args.runtimes.split(',')[0]}: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
