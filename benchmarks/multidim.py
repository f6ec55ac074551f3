"""SPL, SMP and RS+FD (GRR) on the fast path beside multi-freq-ldpy's implementations of the same jobs.

For each method: CPU seconds per respondent of mprr's vectorized fast path (perturbation of
every respondent from its uniforms, aggregation, estimation of the m marginals) and of
multi-freq-ldpy's clients (one call per respondent) plus its aggregator, on the same records
at the same ε (multi-freq-ldpy's RS+FD takes its published per-attribute ε; it is given the ε
whose record-level value is mprr's: ``rsfd_oracle_epsilon``).  The two estimates of every
marginal are compared: the mean absolute difference of the marginals beside the expected
difference of two independent estimates (sqrt(2) × the closed-form standard error).
multi-freq-ldpy clips and renormalises its estimates; mprr's are Norm-Sub'ed here, so a small
difference at cells near 0 is expected.  multi-freq-ldpy's oracles are numba-jitted: each timed
peer run starts after one untimed call has compiled them.

Then the goal of issue 28: RR-Independent (main paper Protocol 1, the fast path, the budget ε
per respondent, ``keep_or_uniform`` matrices) at least 20 times faster than multi-freq-ldpy's SPL
measured in the same run (CPU, with a ``numpy.random.Generator`` as in the table), CPU
(process_time) and wall seconds, median over ``--repeat`` runs; also with per-party streams
(:class:`mprr.streams.PartyStreams`, built inside the timed call, as the actor path draws).  The
first RR-Independent call of a fresh process (its ``mprr.protocols`` import included) is
measured in a subprocess and printed beside them.  The machine's load (``/proc/loadavg``) is
printed before and after.

Run: ``python benchmarks/multidim.py [ADULT_PATH] [--epsilon 2] [--runs 3] [--repeat 15]``
(``pip install 'mprr[bench]'`` for the peer; without it only mprr's rows are printed).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mprr.protocols import rr_independent, rsfd, smp, spl  # noqa: E402
from mprr.streams import PartyStreams  # noqa: E402
from mprr.protocols.oracle_reports import ReportedData, rsfd_oracle_epsilon  # noqa: E402
from _adult import DEFAULT_ADULT  # noqa: E402


def load(path: str | None) -> tuple[Any, str, Path | None]:
    """The data set, its description and its path (``None`` for the synthetic stand-in)."""
    from scenarios.datasets import load_adult

    candidate = Path(path) if path else DEFAULT_ADULT
    if candidate is not None and Path(candidate).exists():
        return load_adult(candidate), f"UCI Adult ({candidate})", Path(candidate)
    from mprr.synthetic import planted_clusters

    return (planted_clusters(32_561, rng=np.random.default_rng(0)).dataset, "planted-cluster data (Adult not found)",
            None)


def mprr_run(name: str, ds: Any, eps: float, seed: int) -> tuple[float, list[np.ndarray], float]:
    f = {"SPL": spl, "SMP": smp, "RS+FD": rsfd}[name]
    kwargs: dict[str, Any] = {} if name == "RS+FD" else {"oracle": "grr"}
    t0 = time.process_time()
    r = f(ds, epsilon=eps, rng=np.random.default_rng(seed), **kwargs)
    cpu = time.process_time() - t0
    data = r.releases[0]
    assert isinstance(data, ReportedData)
    est = [np.asarray(r.estimate.marginal((j,))) for j in range(ds.m)]
    se = float(np.mean([np.sqrt(data.variance(j)).mean() for j in range(ds.m)]))
    return cpu, est, se


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages of ``/proc/loadavg`` ("?" where it is absent)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def timed(f: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median CPU (process_time) and wall (perf_counter) seconds of ``repeat`` calls of ``f``."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        f()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


_COLD = """
import sys, time
sys.path[:0] = {paths!r}
import numpy as np
from scenarios.datasets import load_adult
ds = load_adult({adult!r})
c0, w0 = time.process_time(), time.perf_counter()
from mprr.protocols import rr_independent
rr_independent(ds, epsilon={eps!r}, rng=np.random.default_rng(0))
print(time.process_time() - c0, time.perf_counter() - w0)
"""


def cold_run(adult: str, eps: float) -> tuple[float, float]:
    """CPU and wall seconds of the first RR-Independent call in a fresh process, the import of
    ``mprr.protocols`` included (numpy and the data set loaded before the clock starts)."""
    root = Path(__file__).resolve().parents[1]
    code = _COLD.format(paths=[str(root), str(root / "benchmarks")], adult=adult, eps=eps)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    cpu, wall = (float(x) for x in out.split())
    return cpu, wall


def independent_goal(ds: Any, adult: Path | None, eps: float, repeat: int, runs: int, have_peer: bool) -> None:
    """RR-Independent beside multi-freq-ldpy's SPL (GRR) in the same run (issue 28's goal: >= 20x)."""
    print(f"\nRR-Independent (fast path, ε = {eps:g} per respondent) beside multi-freq-ldpy's SPL; "
          f"median of {repeat} runs (peer: {runs}); load {load_average()}")
    rows = {
        "Generator": timed(lambda: rr_independent(ds, epsilon=eps, rng=np.random.default_rng(1)), repeat),
        "PartyStreams": timed(lambda: rr_independent(ds, epsilon=eps, rng=PartyStreams(1, ds.n)), repeat),
    }
    if adult is not None:
        colds = [cold_run(str(adult), eps) for _ in range(3)]
        rows["first call, new process"] = (statistics.median(c for c, _ in colds),
                                              statistics.median(w for _, w in colds))
    peer_cpu = peer_wall = math.nan
    if have_peer:
        peer = []
        for s in range(runs):
            w0 = time.perf_counter()
            cpu, _ = peer_run("SPL", ds, eps, 200 + s)
            peer.append((cpu, time.perf_counter() - w0))
        peer_cpu, peer_wall = statistics.median(c for c, _ in peer), statistics.median(w for _, w in peer)
        print(f"{'multi-freq-ldpy SPL':42s} CPU {peer_cpu * 1e3:8.1f} ms ({peer_cpu / ds.n * 1e6:6.3f} µs/resp)  "
              f"wall {peer_wall * 1e3:8.1f} ms")
    for label, (cpu, wall) in rows.items():
        ratio = f"  ratio CPU {peer_cpu / cpu:6.1f}x, wall {peer_wall / wall:6.1f}x" if have_peer else ""
        print(f"{'RR-Independent, ' + label:42s} CPU {cpu * 1e3:8.1f} ms ({cpu / ds.n * 1e6:6.3f} µs/resp)  "
              f"wall {wall * 1e3:8.1f} ms{ratio}")
    if have_peer:
        ratio = peer_cpu / rows["Generator"][0]
        print(f"target >= 20x (CPU, Generator, as the table above runs mprr): {'met' if ratio >= 20 else 'NOT met'} "
              f"({ratio:.1f}x); load {load_average()}")


def peer_run(name: str, ds: Any, eps: float, seed: int) -> tuple[float, list[np.ndarray]]:
    from multi_freq_ldpy.mdim_freq_est import RSpFD_solution, SMP_solution, SPL_solution

    np.random.seed(seed)
    sizes = list(ds.sizes)
    d = ds.m
    rows = ds.codes.tolist()
    client: Callable[..., Any]
    if name == "SPL":
        client, agg, e = SPL_solution.SPL_GRR_Client, SPL_solution.SPL_GRR_Aggregator_MI, eps
    elif name == "SMP":
        client, agg, e = SMP_solution.SMP_GRR_Client, SMP_solution.SMP_GRR_Aggregator_MI, eps
    else:
        client, agg, e = RSpFD_solution.RSpFD_GRR_Client, RSpFD_solution.RSpFD_GRR_Aggregator_MI, rsfd_oracle_epsilon(eps, d)
    client(rows[0], sizes, d, e)  # multi-freq-ldpy's oracles are numba-jitted: compile before the clock
    np.random.seed(seed)
    t0 = time.process_time()
    reports = [client(row, sizes, d, e) for row in rows]
    est = agg(reports, sizes, d, e)
    cpu = time.process_time() - t0
    return cpu, [np.asarray(x, dtype=float) for x in est]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adult", nargs="?", default=None)
    parser.add_argument("--epsilon", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=15, help="RR-Independent runs (median)")
    args = parser.parse_args()
    ds, source, adult = load(args.adult)
    have_peer = importlib.util.find_spec("multi_freq_ldpy") is not None
    print(f"{source}: n = {ds.n:,}, m = {ds.m}, ε = {args.epsilon:g} per respondent (record level), "
          f"{args.runs} runs, CPU seconds (process_time), median over runs")
    if not have_peer:
        print("NOTE: multi-freq-ldpy is not installed (pip install 'mprr[bench]'): its rows are skipped")
    print(f"{'method':8s} {'mprr µs/resp':>13s} {'peer µs/resp':>13s} {'ratio':>7s} {'mean |Δ|':>9s} {'expected':>9s}")
    for name in ("SPL", "SMP", "RS+FD"):
        mine = [mprr_run(name, ds, args.epsilon, s) for s in range(args.runs)]
        cpu = float(np.median([c for c, _, _ in mine])) / ds.n * 1e6
        if not have_peer:
            print(f"{name:8s} {cpu:13.3f}")
            continue
        peer = [peer_run(name, ds, args.epsilon, 100 + s) for s in range(args.runs)]
        pcpu = float(np.median([c for c, _ in peer])) / ds.n * 1e6
        diff = float(np.mean([np.abs(a - b).mean() for (_, ea, _), (_, eb) in zip(mine, peer) for a, b in zip(ea, eb)]))
        expected = math.sqrt(2.0) * float(np.mean([se for _, _, se in mine])) * math.sqrt(2.0 / math.pi)
        print(f"{name:8s} {cpu:13.3f} {pcpu:13.3f} {pcpu / cpu:7.1f} {diff:9.4f} {expected:9.4f}")
    independent_goal(ds, adult, args.epsilon, args.repeat, args.runs, have_peer)


if __name__ == "__main__":
    main()
