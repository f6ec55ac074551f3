"""Benchmark: secure sums of all pairwise bivariate tables of Adult's 8 attributes.

Every party holds one record of the 8 categorical Adult attributes (sizes 9, 16, 7, 15, 6, 5,
2, 2).  Its input is the 0/1 indicator vector of its value pair for every attribute pair:
L = sum_{i<j} |A_i||A_j| = 1,582 cells (checked), 28 ones per party.  One secure sum of these
vectors yields every bivariate table (main paper 4.2).

Configurations:

- ``paper``  (main paper 4.2, modulus n + 1, full mesh), batched: n = 100, 300, 1000;
  per combination at n = 100 on the first ``--per-combination-cells`` combinations (the
  protocol runs once per combination, sequentially, so time, messages and bytes scale
  linearly to all 1,582; the extrapolation is printed and labelled as such);
- ``graph-direct`` (additive shares to 4 neighbours of a random 4-regular graph, over direct
  links along the graph's edges only) and ``graph`` (the same shares relayed by the controller
  under AEAD, star network): n = 1,000, 10,000, 32,561;
- ``masked-sparse`` (Bonawitz et al. 2017 on a random k-regular neighbour graph, k = 8, t = 5):
  n = 1,000, 10,000, 32,561;
- ``masked`` (Bonawitz et al. 2017 as published: every pair of parties shares masks,
  t > n / 2; O(n) keys, shares and view tags per party, O(n^2) work per party):
  n = 100, 300.

Engines are named as registered (:data:`parties.secure.registry.ENGINES`); ``--only`` takes
any registered name, a user's engine too (its sizes: those of ``masked-sparse``).

Each configuration runs in its own subprocess so that the peak RSS (``ru_maxrss``) is its own.
Printed per run: wall and CPU seconds, messages, bytes (measured by the network, and the
closed-form prediction), rounds, peak RSS, and whether the sum equals the plaintext sum.
Targets (wall seconds, 2 cores; printed beside the figure with the figure before the engine
work, :data:`BEFORE`): paper, n = 1,000, all 1,582 cells <= 30 s; masked-sparse on 32,561
parties <= 30 s.  ``--targets`` runs only these two.  The
machine is shared: read the CPU seconds.

The engines run under the session id the actor path uses (``--session agreed``: the id every
party derives from the request, :mod:`parties.secure.agreement`, 45 characters in every engine
message), or ``run_secure_sum``'s random 16 hex digits (``--session random``).  The agreement
adds no message and no round; its bytes are the longer id, its CPU one digest per shard (the
per-party cost without the shard's memo is printed).

Run: ``.venv/bin/python benchmarks/secure_sum.py [--adult PATH] [--quick] [--only ENGINE]``
(``--adult`` uses the real records of adult.data — its first n — instead of random codes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from parties.router import Router  # noqa: E402
from parties.secure.run import run_secure_sum  # noqa: E402
from parties.secure.agreement import agreed_session, request_digest  # noqa: E402
from parties.secure.registry import ENGINES, MESH, sized_engine  # noqa: E402
from parties.wire.requests import SecureRelease, SecureSumStart  # noqa: E402

ADULT_SIZES = (9, 16, 7, 15, 6, 5, 2, 2)
ADULT_N = 32_561
TARGETS_S = {("paper", 1_000): 30.0, ("masked-sparse", ADULT_N): 30.0}
BEFORE = {
    ("paper", 1_000): "CPU 40.4 s, wall 50.4 s (main 839daa1, measured 2026-11-23 on the shared machine, load ~3.5)",
    ("masked-sparse", ADULT_N): "CPU 160.0 s on one core, 4.9 ms per party (main 6fb6d5f); on tcp with 2 workers "
                         "(benchmarks/runtimes.py, idle machine): 131.6 s wall, 227.6 s CPU, 7.0 ms per party",
}
"""Figures of the target configurations before the latest engine work (printed beside the
measurement; the masked target is for both cores, this benchmark runs on one process: CPU / 2
is the best wall two cores could reach, and ``benchmarks/runtimes.py --runtimes tcp --workers 2
--dependence 4.2 --secure-sum masked-sparse`` measures the sum on both)."""


def pair_layout(sizes: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(i, j, offset) of every attribute pair i < j in the concatenated vector."""
    out, offset = [], 0
    for i in range(len(sizes)):
        for j in range(i + 1, len(sizes)):
            out.append((i, j, offset))
            offset += sizes[i] * sizes[j]
    return out


def vector_length(sizes: tuple[int, ...]) -> int:
    """sum_{i<j} |A_i||A_j|."""
    return sum(sizes[i] * sizes[j] for i in range(len(sizes)) for j in range(i + 1, len(sizes)))


def indicator_vectors(codes: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """(n, L) uint8: party r has a 1 at the cell of (codes[r, i], codes[r, j]) for every pair."""
    n = codes.shape[0]
    out = np.zeros((n, vector_length(sizes)), dtype=np.uint8)
    rows = np.arange(n)
    for i, j, offset in pair_layout(sizes):
        out[rows, offset + codes[:, i] * sizes[j] + codes[:, j]] = 1
    return out


def party_codes(n: int, adult: str | None, seed: int) -> np.ndarray:
    if adult:
        from mprr.data import parse_adult

        with open(adult, encoding="utf-8") as fh:
            codes = np.asarray(parse_adult(fh).codes)
        if n > codes.shape[0]:
            raise SystemExit(f"--adult has {codes.shape[0]} records, fewer than n = {n}")
        return codes[:n]
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, s, size=n) for s in ADULT_SIZES], axis=1)


def build(engine: str, n: int, args: argparse.Namespace):  # noqa: ANN201
    """The registered engine ``engine`` sized for ``n`` parties
    (:func:`parties.secure.registry.sized_engine`: ``--graph-degree`` for the graph engines,
    ``--masked-degree`` for the others' neighbour graphs) and its network: a star where shares
    are relayed, else direct links along the engine's own neighbour graph (a complete graph for
    ``paper``)."""
    entry = ENGINES.lookup(engine)
    degree = args.graph_degree if entry.family == "graph" or entry.name == "graph" else args.masked_degree
    eng = sized_engine(entry.name, degree=degree, seed=args.seed, round_timeout=args.round_timeout)
    if MESH not in entry.needs:
        return eng, None  # shares relayed by the controller
    neighbours = eng.context(range(n), 1).neighbours
    return eng, nx.Graph((i, j) for i in neighbours for j in neighbours[i])  # direct links along its graph


def adult_request(engine: str, n: int) -> tuple[SecureRelease, SecureSumStart]:
    """The 4.2 commitment of all Adult pairs and the start of its sum over ``n`` parties, as the
    actor path's controller sends them (:meth:`parties.controller.Controller.secure_release`)."""
    pairs = tuple((i, j) for i, j, _ in pair_layout(ADULT_SIZES))
    release = SecureRelease(1, "dependence", "dependence/1", pairs, pairs, True)
    return release, SecureSumStart(1, "dependence/1", engine, ((0, n),))


def agreed_adult_session(engine: str, n: int) -> str:
    """The agreed session id of :func:`adult_request` (:mod:`parties.secure.agreement`)."""
    release, start = adult_request(engine, n)
    return agreed_session(request_digest(release), start)


def agreement_cpu(n: int, repeats: int = 2_000) -> float:
    """Seconds of CPU per party to derive the agreed session id without the shard's memo (the
    digest of the commitment, then of the start): the worst case; a shard computes it once."""
    release, start = adult_request("masked-sparse", n)
    cpu = time.process_time()
    for _ in range(repeats):
        agreed_session(request_digest(release), start)
    return (time.process_time() - cpu) / repeats


def run_one(engine: str, n: int, cells: int | None, args: argparse.Namespace) -> dict:
    codes = party_codes(n, args.adult, args.seed)
    vectors = indicator_vectors(codes, ADULT_SIZES)
    if cells is not None:
        vectors = np.ascontiguousarray(vectors[:, :cells])
    eng, topology = build(engine, n, args)
    net = Router(n, topology=topology)
    session = agreed_adult_session(eng.name, n) if args.session == "agreed" else None
    wall, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(run_secure_sum(eng, net, vectors, session=session))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = result.statistics
    return {
        "engine": engine, "n": n, "L": int(vectors.shape[1]),
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "messages": stats.messages, "bytes": stats.bytes, "rounds": stats.rounds,
        "cost_messages": result.cost.messages, "cost_bytes": result.cost.bytes,
        "cost_rounds": result.cost.rounds,
        "party_max_messages": result.cost.party_max().messages,
        "party_max_bytes": result.cost.party_max().bytes,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "exact": bool(np.array_equal(result.total, vectors.sum(axis=0, dtype=np.int64))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adult", help="path of adult.data (default: random codes)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--only", help="run only this registered engine (paper, graph, masked-sparse, ...)")
    parser.add_argument("--targets", action="store_true",
                        help="run only the two target configurations (paper n = 1,000; masked-sparse n = 32,561)")
    parser.add_argument("--graph-degree", type=int, default=4)
    parser.add_argument("--masked-degree", type=int, default=8)
    parser.add_argument("--per-combination-cells", type=int, default=8)
    parser.add_argument("--round-timeout", type=float, default=900.0)
    parser.add_argument("--session", choices=("agreed", "random"), default="agreed",
                        help="the engines' session id: the agreed one of the actor path (default: "
                             "'dependence/1#' and 32 hex digits, 45 characters) or run_secure_sum's "
                             "random 16 hex digits (the figures before the agreement)")
    parser.add_argument("--one", nargs=3, metavar=("ENGINE", "N", "CELLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one:
        engine, n, cells = args.one[0], int(args.one[1]), int(args.one[2])
        print(json.dumps(run_one(engine, n, cells if cells > 0 else None, args)))
        return

    L = vector_length(ADULT_SIZES)
    print(f"Adult attribute sizes {ADULT_SIZES}: {len(pair_layout(ADULT_SIZES))} pairs, "
          f"L = sum_(i<j)|A_i||A_j| = {L} value combinations")
    if L != 1582:
        raise SystemExit(f"expected 1,582 combinations, got {L}")
    if args.quick:
        plan = [("paper", 30, 0), ("paper-per-combination", 10, args.per_combination_cells),
                ("graph-direct", 500, 0), ("graph", 500, 0), ("masked-sparse", 500, 0), ("masked", 50, 0)]
    else:
        plan = [("paper", 100, 0), ("paper", 300, 0), ("paper", 1000, 0),
                ("paper-per-combination", 100, args.per_combination_cells)]
        plan += [(e, n, 0) for e in ("graph-direct", "graph", "masked-sparse") for n in (1_000, 10_000, ADULT_N)]
        plan += [("masked", 100, 0), ("masked", 300, 0)]
    if args.targets:
        plan = [("paper", 1_000, 0), ("masked-sparse", ADULT_N, 0)]
    if args.only:
        only = ENGINES.lookup(args.only).name
        plan = [p for p in plan if p[0] == only] or [(only, n, 0) for n in (500,) if args.quick] or \
            [(only, n, 0) for n in (1_000, 10_000, ADULT_N)]
    header = (f"{'engine':22s} {'n':>6s} {'L':>5s} {'wall s':>8s} {'cpu s':>8s} {'messages':>11s} "
              f"{'bytes':>14s} {'rounds':>6s} {'max/party msgs':>14s} {'peak RSS MB':>11s} exact  =cost")
    print(f"session ids: {args.session} ({len(agreed_adult_session('masked-sparse', ADULT_N)) if args.session == 'agreed' else 16} "
          f"characters in every engine message); deriving the agreed id: "
          f"{agreement_cpu(ADULT_N) * 1e6:.1f} µs of CPU per party without the shard's memo, once per shard with it")
    print(header)
    passthrough = [f"--seed={args.seed}", f"--graph-degree={args.graph_degree}", f"--session={args.session}",
                   f"--masked-degree={args.masked_degree}", f"--round-timeout={args.round_timeout}"]
    if args.adult:
        passthrough.append(f"--adult={args.adult}")
    for engine, n, cells in plan:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", engine, str(n), str(cells), *passthrough],
            capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            print(f"{engine:22s} {n:>6d} FAILED: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        matches = r["messages"] == r["cost_messages"] and r["bytes"] == r["cost_bytes"]
        print(f"{engine:22s} {r['n']:>6d} {r['L']:>5d} {r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} "
              f"{r['messages']:>11,d} {r['bytes']:>14,d} {r['rounds']:>6d} "
              f"{r['party_max_messages']:>14,d} {r['peak_rss_mb']:>11.1f} {str(r['exact']):5s}  {matches}")
        target = TARGETS_S.get((engine, n))
        if target is not None and not cells:
            print(f"{'':22s} target <= {target:g} s wall: {'met' if r['wall_s'] <= target else 'NOT met'} "
                  f"(now: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s = {r['cpu_s'] / n * 1e6:,.0f} µs "
                  f"per party, one core, so >= {r['cpu_s'] / 2:.1f} s on two; before: {BEFORE[(engine, n)]})")
        if cells:
            scale = L / r["L"]
            print(f"{'':22s} {'':>6s} {L:>5d} {r['wall_s'] * scale:>8.0f} {r['cpu_s'] * scale:>8.0f} "
                  f"{int(r['messages'] * scale):>11,d} {int(r['bytes'] * scale):>14,d} "
                  f"{int(r['rounds'] * scale):>6d}   (extrapolated linearly from {r['L']} of {L} combinations)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
