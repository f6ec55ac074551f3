"""Virtual-time runtime at scale: RR-Clusters 4.3 with a secure-sum engine, n parties, one profile.

Runs the real protocol (every message encoded, counted and timed) on the ``virtual`` runtime
(:mod:`parties.netsim.runtime`) and prints, per run: the machine's load, wall and CPU seconds
(``time.process_time``), peak RSS, the run's messages, and what the model says: virtual
completion time, per-round median / 95th percentile over the parties, and where the time went.
``--baseline`` also runs the same configuration on the memory runtime (no timing) in the same
process first, so the cost of the timing itself is measured beside it.

The goal of issue 29: 100,000 parties with the masked-sparse engine complete on this machine::

    .venv/bin/python benchmarks/network_time_scale.py --n 100000 --engine masked-sparse --profile mobile
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
from parties.netsim.model import NetworkModel  # noqa: E402
from parties.netsim.availability import Availability  # noqa: E402
from parties.netsim.runtime import VirtualRuntime  # noqa: E402
from parties.simulate import simulate  # noqa: E402

PARAMS = dict(p=0.7, Tv=100, Td=0.2, dependence="4.3")


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0]


def run(n: int, engine: str, profile: str, dropout: float, seed: int, baseline: bool, timeout: float) -> None:
    data = planted_clusters(n, rng=np.random.default_rng(seed)).dataset
    params = dict(PARAMS, secure_sum=engine, timeout=timeout, on_dropout="exclude")
    if baseline:
        wall, cpu = time.perf_counter(), time.process_time()
        sim = simulate(data, "RR-Clusters", seed=seed, runtime="memory", **params)
        print(f"memory  n={n:,} engine={engine}: wall {time.perf_counter() - wall:.1f} s, "
              f"CPU {time.process_time() - cpu:.1f} s, {sim.traffic.messages:,} messages, load {_load()}")
    runtime = VirtualRuntime(model=NetworkModel(profile, availability=Availability(dropout), seed=seed))
    wall, cpu = time.perf_counter(), time.process_time()
    sim = simulate(data, "RR-Clusters", seed=seed, runtime=runtime, **params)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    report = runtime.timeline.report()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"virtual n={n:,} engine={engine} profile={profile} dropout={dropout}: wall {wall:.1f} s, CPU {cpu:.1f} s, "
          f"peak RSS {rss:.0f} MB, {sim.traffic.messages:,} messages ({report['frames']:,} timed frames), "
          f"load {_load()}, excluded {len(sim.excluded)}")
    print(f"  completion (virtual): {report['completion']:.3f} s")
    for r in report["rounds"]:
        print(f"  {r['round']:<20} {r['duration']:8.3f} s   median {r['median']:.3f} s   p95 {r['p95']:.3f} s   "
              f"{r['parties']:,} parties   {r['wire_bytes'] / 1e6:.1f} MB")
    b = report["breakdown"]
    print("  critical path: " + ", ".join(f"{k} {b[k]:.3f} s" for k in
                                           ("compute", "queueing", "bandwidth", "latency", "waiting")))
    links = report["links"]
    print(f"  controller link: {links['controller_downlink'] / 1e6:.1f} MB in, {links['controller_uplink'] / 1e6:.1f} MB out;"
          f" party uplink median {links['party_uplink']['median']:.0f} B")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", default="100000", help="comma-separated party counts")
    parser.add_argument("--engine", default="masked-sparse")
    parser.add_argument("--profile", default="mobile")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0, help="round timeout (virtual seconds)")
    parser.add_argument("--baseline", action="store_true", help="also run the memory runtime first")
    args = parser.parse_args()
    for n in (int(x) for x in args.n.split(",")):
        run(n, args.engine, args.profile, args.dropout, args.seed, args.baseline, args.timeout)


if __name__ == "__main__":
    main()
