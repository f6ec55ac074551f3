"""Benchmark: eq. (2) inversion on Kronecker-structured matrices vs dense inversion.

Prints, for the full Adult domain (9 x 16 x 7 x 15 x 6 x 5 x 2 x 2 = 1,814,400 cells) with
random multinomial counts for n = 32,561 parties:

- wall time of ``invert`` + ``project_simplex`` on the Kronecker structure of per-attribute GRR
  matrices (best of several runs, without tracing);
- peak memory of that step (tracemalloc peak of new allocations, and the process maximum
  resident set size from ``resource.getrusage``);
- dense inversion (RR-Joint style: build the joint matrix and solve / invert it) on the
  3-attribute sub-domain education x occupation x workclass (16 x 15 x 9 = 2,160 values) vs
  the structured ``invert`` on the same data, and their ratio.

Targets: full domain < 1 s and < 300 MB on one core; structured >= 100x faster than
dense on the sub-domain.  Run: ``.venv/bin/python benchmarks/estimation.py [--seed S]``.

"On one core": the BLAS thread count is set to 1 before numpy is imported (unless the
environment already sets it), so both the structured and the dense timings are single-threaded.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy: one core, as the target says

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from mprr.estimation import invert, project_simplex  # noqa: E402
from mprr.matrices import grr, kron  # noqa: E402

ADULT_SIZES = (9, 16, 7, 15, 6, 5, 2, 2)  # workclass, education, marital, occupation, relationship, race, sex, income
SUB_SIZES = (16, 15, 9)  # education, occupation, workclass
N_PARTIES = 32_561
EPSILON = 1.0  # per attribute


def _maxrss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 / 1024 if sys.platform == "darwin" else rss / 1024  # bytes on macOS, KiB on Linux


def _best_time(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _random_counts(sizes: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    weights = rng.random(int(np.prod(sizes)))
    return rng.multinomial(N_PARTIES, weights / weights.sum()).reshape(sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    threads = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    print(f"numpy {np.__version__}; BLAS thread env: {threads}")

    # ---------------------------------------------------------------- full Adult domain
    km = kron(*(grr(k, EPSILON) for k in ADULT_SIZES))
    counts = _random_counts(ADULT_SIZES, rng)
    print(f"\nfull Adult domain: sizes {ADULT_SIZES} = {km.size:,} cells, n = {N_PARTIES:,},"
          f" GRR eps = {EPSILON} per attribute (total {km.epsilon:g})")

    def full() -> np.ndarray:
        return project_simplex(invert(km, counts))

    rss_before = _maxrss_mb()  # after imports and data generation, before the first estimate
    tracemalloc.start()
    est = full()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = _maxrss_mb()
    t_full = _best_time(full, args.repeat)
    pi_hat = invert(km, counts)
    t_inv = _best_time(lambda: invert(km, counts), args.repeat)
    t_proj = _best_time(lambda: project_simplex(pi_hat), args.repeat)
    print(f"  invert + project_simplex: {t_full:.3f} s (best of {args.repeat});"
          f" invert {t_inv:.3f} s, project_simplex {t_proj:.3f} s")
    print(f"  peak traced allocation of one invert + project_simplex: {peak / 2**20:.1f} MiB;"
          f" process max RSS {rss_before:.1f} MiB before it (interpreter, numpy/scipy, counts)"
          f" -> {rss_after:.1f} MiB after (+{rss_after - rss_before:.1f} MiB)")
    print(f"  estimate: sum {est.sum():.12f}, min {est.min():.3g}, non-zero cells {np.count_nonzero(est):,};"
          f" pi_hat min {pi_hat.min():.3g}, max {pi_hat.max():.3g}")
    ok_time, ok_mem = t_full < 1.0, peak / 2**20 < 300 and rss_after < 300
    print(f"  target < 1 s: {'met' if ok_time else 'MISSED'}; target < 300 MB: {'met' if ok_mem else 'MISSED'}")

    # ---------------------------------------------------------------- sub-domain: dense vs structured
    sub = kron(*(grr(k, EPSILON) for k in SUB_SIZES))
    sub_counts = _random_counts(SUB_SIZES, rng)
    lam = sub_counts.ravel() / sub_counts.sum()
    print(f"\nsub-domain {SUB_SIZES} = {sub.size:,} values (dense matrix {sub.size}^2 = {sub.size**2:,} cells)")

    def dense_solve() -> np.ndarray:
        return np.linalg.solve(sub.todense().T, lam)

    def dense_inverse() -> np.ndarray:
        return np.linalg.inv(sub.todense().T) @ lam

    def structured() -> np.ndarray:
        return invert(sub, sub_counts)

    structured()
    np.testing.assert_allclose(structured().ravel(), dense_solve(), atol=1e-9)
    dense_repeat = max(1, min(args.repeat, 3))
    t_dense_solve = _best_time(dense_solve, dense_repeat)
    t_dense_inv = _best_time(dense_inverse, dense_repeat)
    t_struct = _best_time(structured, 20 * args.repeat)
    print(f"  dense (build + LU solve of P^T): {t_dense_solve * 1e3:.1f} ms;"
          f" dense (build + explicit inverse): {t_dense_inv * 1e3:.1f} ms")
    print(f"  structured (mode products):      {t_struct * 1e3:.3f} ms")
    print(f"  ratio dense-solve / structured: {t_dense_solve / t_struct:,.0f}x;"
          f" dense-inverse / structured: {t_dense_inv / t_struct:,.0f}x"
          f" (target >= 100x: {'met' if t_dense_solve / t_struct >= 100 else 'MISSED'})")


if __name__ == "__main__":
    main()
