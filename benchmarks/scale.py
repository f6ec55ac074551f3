"""Scale benchmark on Ray: n synthetic planted-cluster parties, RR-Independent and RR-Clusters 4.1.

Starts a local Ray (or uses ``--address``), hosts the parties in ``--shards`` shard actors and
runs each protocol once; prints wall time (Ray start-up apart), time per party, peak memory of
the driver and of every shard actor (``ru_maxrss``) and memory per party, checks the release
against the in-memory actor run when ``--check`` is given, then extrapolates to 1,000,000
parties and to a cluster: the shards' work divides by the number of shards, the driver (the
controller and the router, which see every message) does not.

Usage::

    .venv/bin/python benchmarks/scale.py [--n 100000] [--shards 2] [--address auto] [--check]
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

from mprr.synthetic import planted_clusters  # noqa: E402
from parties.ray_runtime import RayRuntime, import_ray  # noqa: E402
from parties.simulate import simulate  # noqa: E402

TARGET_PARTIES = 1_000_000
TARGET_MEMORY_GIB = 8.0
PROTOCOLS = {"RR-Independent": dict(p=0.7), "RR-Clusters": dict(p=0.7, Tv=100, Td=0.2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="20000,60000",
                        help="comma-separated party counts (default 20000,60000); two or more give the "
                             "per-party slope used to extrapolate (fixed process memory apart)")
    parser.add_argument("--shards", type=int, default=2, help="shard actors (default 2)")
    parser.add_argument("--address", default=None, help="Ray cluster (default: start a local one)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", action="store_true", help="also run in memory and compare the releases")
    args = parser.parse_args(argv)
    ray = import_ray()
    t0 = time.perf_counter()
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             configure_logging=False)
    print(f"Ray started in {time.perf_counter() - t0:.1f} s; {ray.cluster_resources().get('CPU', 0):.0f} CPUs "
          "(machine: 2 cores, shared with other sessions)")
    sizes = [int(x) for x in str(args.n).split(",")]
    points: dict[str, list[tuple[int, float, float]]] = {p: [] for p in PROTOCOLS}
    try:
        for n in sizes:
            run_size(n, args, points)
    finally:
        ray.shutdown()
    if len(sizes) >= 2:
        for protocol, pts in points.items():
            (n1, t1, m1), (n2, t2, m2) = pts[0], pts[-1]
            dt, dm = (t2 - t1) / (n2 - n1), (m2 - m1) / (n2 - n1)
            est_t = t2 + dt * (TARGET_PARTIES - n2)
            est_m = m2 + dm * (TARGET_PARTIES - n2)
            print(f"{protocol}: marginal {dt * 1e6:.0f} µs and {dm / 1024:.1f} KiB per party (from n = {n1:,} "
                  f"and {n2:,}); {TARGET_PARTIES:,} parties on this machine: ~{est_t / 60:.0f} min of protocol, "
                  f"~{est_m / 2**30:.1f} GiB across processes (target <= {TARGET_MEMORY_GIB:.0f} GiB: "
                  f"{'within' if est_m / 2**30 <= TARGET_MEMORY_GIB else 'over'}); on a cluster the shards' "
                  f"share divides by the number of shards, the driver's (controller + router) does not")
    return 0


def run_size(n: int, args: argparse.Namespace, points: dict[str, list[tuple[int, float, float]]]) -> None:
    """One run of each protocol with ``n`` parties; appends (n, protocol seconds, total peak bytes)."""
    data = planted_clusters(n, rng=np.random.default_rng(args.seed)).dataset
    print(f"n = {n:,} planted-cluster parties, m = {data.m}, {args.shards} shard actors")
    for protocol, params in PROTOCOLS.items():
        runtime = RayRuntime(shards=args.shards, num_cpus=0.5, address=args.address)
        started = time.perf_counter()
        sim = simulate(data, protocol, seed=args.seed, timeout=600.0, runtime=runtime, **params)
        wall = time.perf_counter() - started
        w = sim.wire or {}
        driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        shards = list(w.get("shard_peak_rss_bytes", []))
        total = driver + sum(shards)
        proto = float(w.get("protocol_seconds", wall))
        msgs = sim.traffic.messages
        print(f"{protocol}: wall {wall:.1f} s (shard start {w.get('startup_seconds', 0):.1f} s, protocol "
              f"{proto:.1f} s = {proto / n * 1e6:.0f} µs/party), {msgs:,} messages "
              f"({proto / max(msgs, 1) * 1e6:.0f} µs/message)")
        print(f"    peak memory: driver {driver / 2**20:,.0f} MiB, shards "
              f"{', '.join(f'{s / 2**20:,.0f}' for s in shards)} MiB; total {total / 2**30:.2f} GiB "
              f"(includes each process's fixed Python/numpy/Ray footprint)")
        points[protocol].append((n, proto, float(total)))
        if args.check:
            mem = simulate(data, protocol, seed=args.seed, timeout=600.0, **params)
            same = all(np.array_equal(a.codes, b.codes) for a, b in zip(mem.result.releases, sim.result.releases))
            print(f"    same release as memory: {same and mem.result.clusters == sim.result.clusters}")


if __name__ == "__main__":
    sys.exit(main())
