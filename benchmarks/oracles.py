"""Benchmark: frequency oracles GRR, OUE, OLH — mprr beside multi-freq-ldpy and pure-ldp.

One job per (oracle, d): every one of n = 32,561 respondents (UCI Adult's size) perturbs its
value at ε = 1, the aggregator computes the support counts and the frequency estimate.  The
values are UCI Adult columns — sex (d = 2), education (d = 16), education x occupation
(d = 240) — or, when Adult is not found, Zipf-distributed values of the same sizes.  Prints the
wall time per respondent of perturb + support + estimate for each implementation, measured in
the same run (mprr: best of ``--repeat``; the peers: one run, they loop in Python per
respondent), and checks that the peers' estimates agree with mprr's statistically:

- ``max|z|`` — the largest over cells of ``(peer - mprr) / sqrt(2 Var_v)``, with ``Var_v`` the
  exact variance of Wang et al. (``FrequencyOracle.variance(n, f)``); the two estimates are
  independent, so every z is about N(0, 1) and ``max|z| < 5`` is the test.  multi-freq-ldpy's
  estimator (``*_Aggregator_MI``) clips negatives to 0 and renormalizes; it is compared with
  mprr's estimate post-processed the same way (approximate: the clip changes the variance).
- ``err/formula`` — ``Σ_v (f̂_v - f_v)² / Σ_v Var_v``: about 1 for an unbiased estimator with
  the formula's variance (below 1 after the clip).

mprr's OUE packs a report into an int64 (d <= 62), so at d = 240 only the peers' OUE runs.

The peers are the optional ``bench`` extra: ``.venv/bin/pip install -e '.[bench]'``; a peer
that is not installed is named and skipped.

Run: ``.venv/bin/python benchmarks/oracles.py [--n N] [--epsilon E] [--repeat R] [--adult PATH]``
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import random
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from mprr.oracles import GRR, OLH, OUE, OUE_MAX_D, FrequencyOracle  # noqa: E402
from _adult import DEFAULT_ADULT  # noqa: E402  benchmarks/_adult.py

DOMAINS = (2, 16, 240)
ORACLES = ("GRR", "OUE", "OLH")
Z_LIMIT = 5.0
Estimate = np.ndarray
Runner = Callable[[str, int, float, np.ndarray, int], Estimate]


# ------------------------------------------------------------------------------------ data


def job_values(n: int, adult: Path, seed: int) -> tuple[dict[int, np.ndarray], str]:
    """Values of every respondent for each d, and where they come from."""
    if adult.exists():
        from scenarios.datasets import load_adult

        codes = load_adult(adult).codes[:n]
        if codes.shape[0] == n:
            edu, occ, sex = codes[:, 1], codes[:, 3], codes[:, 6]
            return {2: sex, 16: edu, 240: edu * 15 + occ}, f"UCI Adult {adult} (sex, education, education x occupation)"
    rng = np.random.default_rng(seed)
    out = {}
    for d in DOMAINS:
        w = 1.0 / np.arange(1, d + 1)
        out[d] = rng.choice(d, size=n, p=w / w.sum())
    return out, f"Zipf values (UCI Adult not found at {adult}, or fewer than n records)"


# ------------------------------------------------------------------------------------ runners


def run_mprr(name: str, d: int, eps: float, x: np.ndarray, seed: int) -> Estimate | None:
    oracle: FrequencyOracle
    if name == "GRR":
        oracle = GRR(d, eps)
    elif name == "OUE":
        if d > OUE_MAX_D:
            return None
        oracle = OUE(d, eps)
    else:
        oracle = OLH(d, eps)
    reports = oracle.perturb_rng(x, rng=np.random.default_rng(seed))
    out: Estimate = oracle.estimate(oracle.support(reports), x.shape[0])
    return out


def multi_freq_runner() -> Runner:
    """multi-freq-ldpy's clients (one call per respondent) and MI aggregators; imported here,
    outside the timed region, and its numba clients compiled before anything is timed."""
    from multi_freq_ldpy.pure_frequency_oracles import GRR as mGRR
    from multi_freq_ldpy.pure_frequency_oracles import LH as mLH
    from multi_freq_ldpy.pure_frequency_oracles import UE as mUE

    for d in DOMAINS:
        mGRR.GRR_Client(0, d, 1.0)
        mUE.UE_Client(0, d, 1.0, True)

    def run(name: str, d: int, eps: float, x: np.ndarray, seed: int) -> Estimate:
        np.random.seed(seed)  # the LH client's seeds (the numba clients keep their own state)
        values = x.tolist()
        if name == "GRR":
            reports: Any = [mGRR.GRR_Client(v, d, eps) for v in values]
            return np.asarray(mGRR.GRR_Aggregator_MI(reports, d, eps))
        if name == "OUE":
            reports = [mUE.UE_Client(v, d, eps, True) for v in values]
            return np.asarray(mUE.UE_Aggregator_MI(reports, eps, True))
        reports = [mLH.LH_Client(v, d, eps, True) for v in values]
        return np.asarray(mLH.LH_Aggregator_MI(reports, d, eps, True))

    return run


def pure_ldp_runner() -> Runner:
    """pure-ldp's clients and servers (one privatise + aggregate per respondent), unnormalized
    estimates; imported here, outside the timed region (pure-ldp imports scikit-learn)."""
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    def identity(v: int) -> int:
        return v

    def run(name: str, d: int, eps: float, x: np.ndarray, seed: int) -> Estimate:
        random.seed(seed)
        np.random.seed(seed)
        client: Any
        server: Any
        if name == "GRR":
            client, server = DEClient(eps, d, index_mapper=identity), DEServer(eps, d, index_mapper=identity)
        elif name == "OUE":
            client = UEClient(eps, d, use_oue=True, index_mapper=identity)
            server = UEServer(eps, d, use_oue=True, index_mapper=identity)
        else:
            client = LHClient(eps, d, use_olh=True, index_mapper=identity)
            server = LHServer(eps, d, use_olh=True, index_mapper=identity)
        for v in x.tolist():
            server.aggregate(client.privatise(v))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counts = server.estimate_all(range(d), suppress_warnings=True)
        return np.asarray(counts, dtype=np.float64) / x.shape[0]

    return run


PEERS: dict[str, tuple[str, Callable[[], Runner]]] = {
    "multi-freq-ldpy": ("multi_freq_ldpy", multi_freq_runner),
    "pure-ldp": ("pure_ldp", pure_ldp_runner),
}


# ------------------------------------------------------------------------------------ checks


def clip_renormalize(est: Estimate) -> Estimate:
    """multi-freq-ldpy's MI post-processing: negatives to 0, then divide by the sum."""
    c = np.clip(est, 0.0, None)
    out: Estimate = c / c.sum() if c.sum() > 0 else c
    return out


def exact_variance(name: str, d: int, eps: float, n: int, f: np.ndarray) -> np.ndarray:
    """Wang et al.'s exact per-cell variance, for d > 62 OUE's from its p*, q* directly."""
    if name == "OUE" and d > OUE_MAX_D:
        p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
        out: np.ndarray = q * (1 - q) / (n * (p - q) ** 2) + f * (1 - p - q) / (n * (p - q))
        return out
    oracle = {"GRR": GRR, "OUE": OUE, "OLH": OLH}[name](d, eps)
    return oracle.variance(n, f)


def timed(fn: Callable[[], Estimate | None], repeat: int) -> tuple[Estimate | None, float]:
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=32_561)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5, help="mprr runs per job (best time kept)")
    parser.add_argument("--seed", type=int, default=2017)
    parser.add_argument("--adult", type=Path, default=DEFAULT_ADULT)
    args = parser.parse_args()
    n, eps = args.n, args.epsilon

    values, source = job_values(n, args.adult, args.seed)
    runners: dict[str, Runner] = {}
    for peer, (module, loader) in PEERS.items():
        if importlib.util.find_spec(module) is None:
            print(f"NOTE: {peer} is not installed: its rows are skipped (.venv/bin/pip install -e '.[bench]')")
            continue
        try:
            runners[peer] = loader()
        except ImportError as exc:
            print(f"NOTE: {peer} is installed but does not import ({exc}): its rows are skipped")
    print(f"n = {n:,} respondents, epsilon = {eps:g}, values: {source}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; mprr: best of {args.repeat}, peers: one run")

    header = (f"{'d':>4s} {'oracle':6s} {'implementation':16s} {'us/resp':>9s} {'total s':>8s} {'x mprr':>8s}"
              f" {'max|z|':>7s} {'err/formula':>11s}  agrees")
    print(header)
    print("-" * len(header))
    disagreements = 0
    for d in DOMAINS:
        x = np.asarray(values[d], dtype=np.int64)
        f = np.bincount(x, minlength=d) / n
        for name in ORACLES:
            var = exact_variance(name, d, eps, n, f)
            mine, t_mine = timed(lambda: run_mprr(name, d, eps, x, args.seed), args.repeat)
            if mine is None:
                print(f"{d:4d} {name:6s} {'mprr':16s} {'n/a: OUE needs d <= 62 (use OLH)':>45s}")
            else:
                err = float(np.sum((mine - f) ** 2) / var.sum())
                print(f"{d:4d} {name:6s} {'mprr':16s} {1e6 * t_mine / n:9.3f} {t_mine:8.4f} {1.0:8.0f}"
                      f" {'':>7s} {err:11.2f}  (reference)")
            for peer, runner in runners.items():
                est, t_peer = timed(lambda: runner(name, d, eps, x, args.seed + 1), 1)
                assert est is not None
                clipped = peer == "multi-freq-ldpy"
                err = float(np.sum((est - f) ** 2) / var.sum())
                if mine is None:
                    z_text, verdict = "", "-"
                else:
                    ref = clip_renormalize(mine) if clipped else mine
                    z = float(np.max(np.abs(est - ref) / np.sqrt(2 * var)))
                    ok = z < Z_LIMIT
                    disagreements += not ok
                    z_text, verdict = f"{z:7.2f}", ("yes" if ok else "NO") + (" (clipped)" if clipped else "")
                ratio = f"{t_peer / t_mine:8.0f}" if mine is not None else f"{'':>8s}"
                print(f"{d:4d} {name:6s} {peer:16s} {1e6 * t_peer / n:9.3f} {t_peer:8.4f} {ratio}"
                      f" {z_text:>7s} {err:11.2f}  {verdict}")
    print(f"\nx mprr = peer time / mprr time; max|z| < {Z_LIMIT:g} counts as agreement.")
    if disagreements:
        print(f"{disagreements} peer estimate(s) disagree with mprr's")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
