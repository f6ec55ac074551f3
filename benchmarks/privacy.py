"""Micro-benchmark of per-party privacy accounting (mprr.privacy.ledger / mprr.privacy) at Adult scale.

Mirrors what the actor simulator does for RR-Clusters with dependence method 4.1 on UCI Adult
(32,561 parties, m = 8 attributes of sizes 9 x 16 x 7 x 15 x 6 x 5 x 2 x 2): every party owns a
:class:`mprr.privacy.PrivacyAccountant` with a finite budget, announces the plan of each phase,
and answers

- phase ``"dependence"``: 8 single-attribute releases through keep-or-uniform matrices
  (main paper 6.3.1), all parties sharing the same matrix objects;
- phase ``"clusters"``: one release per cluster of ((0,), (1,), (2, 5), (3,), (4, 6, 7)) through
  the 6.3.2 cluster matrix carrying Σ ε_A; the 3 singletons reuse their phase-1 matrix and are
  *replayed* (no new ε).

So 13 releases per party (10 granted, 3 replayed) in 2 requests, 423,293 releases in all.  Timed:

``shared``
    what a party of the actor simulator does: one :class:`mprr.privacy.Ask` per phase (its
    releases and plan) shared by all parties, as ``parties.public_state.ReleaseBook`` does,
    answered atomically by ``acc.answer``;
``summarize``
    :func:`mprr.privacy.summarize` over the 32,561 accountants, under each policy.

Prints wall times, µs per request and per party, and checks the totals against
:class:`mprr.privacy.PolicyTotals` recomputed from scratch on a sample of ledgers.

Usage::

    .venv/bin/python benchmarks/privacy.py [--parties N] [--repeat R] [--policy sequential]
        [--profile MODE]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mprr.matrices import cluster_optimal, keep_or_uniform  # noqa: E402
from mprr.privacy import Ask, PolicyTotals, PrivacyAccountant, Refusal, Release, summarize  # noqa: E402

ADULT_SIZES = (9, 16, 7, 15, 6, 5, 2, 2)
ADULT_NAMES = ("workclass", "education", "marital-status", "occupation", "relationship", "race", "sex", "income")
CLUSTERS = ((0,), (1,), (2, 5), (3,), (4, 6, 7))
N_PARTIES = 32_561
KEEP = 0.7


def build_units() -> list[tuple[str, tuple[str, ...], Any]]:
    """The (phase, attribute names, matrix) of the 13 requests of one party, in order."""
    singles = [keep_or_uniform(k, KEEP) for k in ADULT_SIZES]
    units: list[tuple[str, tuple[str, ...], Any]] = [
        ("dependence", (ADULT_NAMES[a],), singles[a]) for a in range(len(ADULT_SIZES))
    ]
    for cluster in CLUSTERS:
        if len(cluster) == 1:
            matrix = singles[cluster[0]]  # 4.1: same matrix as phase 1, so a replay
        else:
            eps = math.fsum(singles[a].epsilon for a in cluster)
            matrix = cluster_optimal(tuple(ADULT_SIZES[a] for a in cluster), eps)
        units.append(("clusters", tuple(ADULT_NAMES[a] for a in cluster), matrix))
    return units


def plans() -> dict[str, tuple[tuple[str, ...], ...]]:
    """The plan of each phase, one tuple shared by all parties (as a decoded request's plan is)."""
    return {
        "dependence": tuple((name,) for name in ADULT_NAMES),
        "clusters": tuple(tuple(ADULT_NAMES[a] for a in c) for c in CLUSTERS),
    }


def budget_for(units: list[tuple[str, tuple[str, ...], Any]]) -> float:
    """A finite budget the whole run fits in (so every budget check runs and passes)."""
    return 1.01 * math.fsum(m.epsilon for _, _, m in units[: len(ADULT_SIZES)]) * 2


def run_shared(n: int, policy: str) -> list[PrivacyAccountant]:
    units = build_units()
    budget = budget_for(units)
    plan = plans()
    requests: dict[str, list[Release]] = {}
    for phase, names, matrix in units:
        requests.setdefault(phase, []).append(Release.from_matrix(names, matrix, phase=phase))
    asks = [Ask(tuple(releases), phase, k, plan=plan[phase]) for k, (phase, releases) in enumerate(requests.items())]
    accountants = []
    for i in range(n):
        acc = PrivacyAccountant(budget, policy, party=i, allowed_attributes=ADULT_NAMES)
        for ask in asks:
            answer = acc.answer(ask)
            if isinstance(answer, Refusal):
                raise RuntimeError(f"party {i}: unexpected refusal {answer}")
        accountants.append(acc)
    return accountants


def check(accountants: list[PrivacyAccountant], policy: str) -> None:
    """Totals carried from grant to grant equal a from-scratch total (every 97th party) and the counts."""
    for acc in accountants[::97]:
        expected = PolicyTotals.of(acc.ledger.releases, policy).total
        if acc.spent() != expected:
            raise RuntimeError(f"party {acc.party}: spent {acc.spent()!r} != from scratch {expected!r}")
        if len(acc.ledger) != 10 or len(acc.replays) != 3 or acc.refusals:
            raise RuntimeError(f"party {acc.party}: unexpected ledger {acc!r}")


def timed(fn: Callable[[], Any], profile: bool = False) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, result) of ``fn()``."""
    gc.collect()
    profiler = cProfile.Profile() if profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    result = fn()
    if profiler is not None:
        profiler.disable()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    return elapsed, cpu, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, default=N_PARTIES, help=f"number of parties (default {N_PARTIES})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode, best reported (default 3)")
    parser.add_argument("--policy", default="sequential", help="accountants' policy (default sequential)")
    parser.add_argument(
        "--profile", choices=("shared", "summarize"), default=None, help="cProfile one mode"
    )
    args = parser.parse_args(argv)
    n, policy = args.parties, args.policy
    requests = 13 * n
    print(f"{n:,} parties x 13 requests (10 granted, 3 replayed) = {requests:,} requests; policy {policy!r}")

    print("best of --repeat runs; CPU = process time (robust to other load on the machine)")
    accountants: list[PrivacyAccountant] = []
    for mode, runner in (("shared", run_shared),):
        best, best_cpu = math.inf, math.inf
        for _ in range(args.repeat):
            accountants = []  # free the previous run before timing the next
            elapsed, cpu, accountants = timed(lambda: runner(n, policy), profile=args.profile == mode)
            best, best_cpu = min(best, elapsed), min(best_cpu, cpu)
        check(accountants, policy)
        print(
            f"{mode:>12}: wall {best:7.3f} s  CPU {best_cpu:7.3f} s   {1e6 * best_cpu / requests:6.2f} µs/request (CPU)"
            f"   {1e6 * best_cpu / n:7.2f} µs/party (CPU, incl. accountant + plans)"
        )
    for summary_policy in ("sequential", "parallel", "unlinkable-pairs"):
        best, best_cpu = math.inf, math.inf
        summary = None
        for _ in range(args.repeat):
            elapsed, cpu, summary = timed(
                lambda: summarize(accountants, summary_policy), profile=args.profile == "summarize"
            )
            best, best_cpu = min(best, elapsed), min(best_cpu, cpu)
        assert summary is not None
        eps = summary.epsilon
        print(
            f"   summarize ({summary_policy:>16}): wall {best:6.3f} s  CPU {best_cpu:6.3f} s   ε/party min/median/max = "
            f"{eps.min:.4f} / {eps.median:.4f} / {eps.max:.4f}, releases {summary.releases:,}, "
            f"replays {summary.replays:,}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
