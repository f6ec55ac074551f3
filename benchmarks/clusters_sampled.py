"""Benchmark: RR-Clusters-Sampled beside SMP, CALM-style and RR-Independent at equal ε per respondent.

For UCI Adult (32,561 records, 8 attributes) and for the planted-cluster synthetic data
(:func:`mprr.synthetic.planted_clusters`, 32,561 records, clusters (0, 1, 2) and (3, 4)), at
ε ∈ {1, 2, 4, 8}: the mean total variation distance of every 2-way (28) and 3-way (56)
marginal of the estimate from the data's own marginal, mean ± standard error over ``--runs``
runs (run r uses ``default_rng(seed + r)`` for the protocol and, on the synthetic data, for
the records).  RR-Clusters-Sampled runs with its plan (:func:`plan_sampled_clusters` from n,
the sizes and ε); the design it chose is printed.

Then the planted-cluster recovery at ε = 2 over ``--recovery-runs`` data sets: the share of
runs whose Algorithm 1 clusters (from the significant pairs) are exactly the planted ones, and
the share that merged two attributes independent in the truth — with the plan's discovery
share and with φ = 0.2 given (the plan may choose no discovery at this n).

Run: ``.venv/bin/python benchmarks/clusters_sampled.py [--runs R] [--recovery-runs K] [--seed S] [--adult PATH]``
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

for p in (Path(__file__).resolve().parents[1], Path(__file__).resolve().parent):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from mprr.data import Dataset  # noqa: E402
from mprr.protocols import calm, rr_clusters_sampled, rr_independent, smp  # noqa: E402
from mprr.protocols.result import ProtocolResult  # noqa: E402
from mprr.synthetic import DEFAULT_CLUSTERS, planted_clusters  # noqa: E402
from _adult import DEFAULT_ADULT  # noqa: E402  benchmarks/_adult.py

N = 32_561
EPSILONS = (1.0, 2.0, 4.0, 8.0)
METHODS: dict[str, Callable[[Dataset, float, np.random.Generator], ProtocolResult]] = {
    "RR-Clusters-Sampled": lambda d, e, r: rr_clusters_sampled(d, epsilon=e, n=d.n, rng=r),
    "SMP": lambda d, e, r: smp(d, epsilon=e, rng=r),
    "CALM-style": lambda d, e, r: calm(d, epsilon=e, k=2, rng=r),
    "RR-Independent": lambda d, e, r: rr_independent(d, epsilon=e, rng=r),
}


def empirical(ds: Dataset, k: int) -> dict[tuple[int, ...], np.ndarray]:
    """Every k-way marginal of the data (relative frequencies)."""
    sizes = ds.schema.sizes
    out = {}
    for key in itertools.combinations(range(ds.schema.m), k):
        shape = tuple(sizes[a] for a in key)
        idx = np.ravel_multi_index(tuple(ds.codes[:, a] for a in key), shape)
        out[key] = np.bincount(idx, minlength=int(np.prod(shape))).reshape(shape) / ds.n
    return out


def errors(result: ProtocolResult, ds: Dataset) -> tuple[float, float]:
    """Mean 2-way and 3-way TVD of the estimate from the data."""
    est = result.estimate
    return tuple(float(np.mean([0.5 * np.abs(est.marginal(key) - t).sum() for key, t in empirical(ds, k).items()]))
                 for k in (2, 3))  # type: ignore[return-value]


def table(name: str, make: Callable[[int], Dataset], runs: int, seed: int) -> None:
    """Print the 2-way / 3-way TVD table of one data set."""
    print(f"\n{name}: mean TVD ± SE over {runs} runs (2-way | 3-way)")
    print(f"{'ε':>4}  " + "  ".join(f"{m:>27}" for m in METHODS))
    for eps in EPSILONS:
        cells = []
        designs = set()
        for method, run in METHODS.items():
            got = []
            for r in range(runs):
                ds = make(seed + r)
                res = run(ds, eps, np.random.default_rng(seed + r))
                got.append(errors(res, ds))
                if method == "RR-Clusters-Sampled":
                    designs.add(str(res.parameters["design"]))
            a = np.asarray(got)
            mean, se = a.mean(axis=0), a.std(axis=0, ddof=1) / np.sqrt(len(a))
            cells.append(f"{mean[0]:.3f}±{se[0]:.3f} | {mean[1]:.3f}±{se[1]:.3f}")
        print(f"{eps:>4g}  " + "  ".join(f"{c:>27}" for c in cells) + f"   design: {', '.join(sorted(designs))}",
              flush=True)


def recovery(runs: int, seed: int) -> None:
    """Print the planted-cluster recovery at ε = 2."""
    planted = {tuple(c) for c in DEFAULT_CLUSTERS}
    group = {a: i for i, c in enumerate(DEFAULT_CLUSTERS) for a in c}
    for label, share in (("plan", None), ("φ = 0.2", 0.2)):
        exact = wrong = 0
        for r in range(runs):
            ds = planted_clusters(N, rng=np.random.default_rng(seed + r)).dataset
            res = rr_clusters_sampled(ds, epsilon=2.0, n=N, discovery_share=share, rng=np.random.default_rng(seed + r))
            found = [tuple(c) for c in res.parameters["algorithm1_clusters"]]  # type: ignore[union-attr]
            exact += {c for c in found if len(c) > 1} == planted
            wrong += any(group.get(a, -1 - a) != group.get(b, -1 - b) for c in found for a, b in
                         itertools.combinations(c, 2))
        print(f"planted clusters at ε = 2 ({label}): recovered in {exact}/{runs} runs ({100 * exact / runs:.0f} %, "
              f"goal ≥ 90 %); merged independent attributes in {wrong}/{runs} ({100 * wrong / runs:.0f} %, goal ≤ 5 %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--recovery-runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--adult", type=Path, default=DEFAULT_ADULT)
    args = parser.parse_args()
    start = time.perf_counter()
    if args.adult.exists():
        from scenarios.datasets import load_adult
        adult = load_adult(args.adult)
        table("UCI Adult", lambda s: adult, args.runs, args.seed)
    else:
        print(f"UCI Adult not found at {args.adult}: skipped (give --adult PATH)")
    table("planted-cluster synthetic data", lambda s: planted_clusters(N, rng=np.random.default_rng(s)).dataset,
          args.runs, args.seed)
    print()
    recovery(args.recovery_runs, args.seed)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
