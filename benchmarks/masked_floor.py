"""Benchmark: the floor of one party's cryptography in the masked secure sum.

The masked engine (Bonawitz et al. 2017 on a k = 8 regular neighbour graph, Shamir threshold
t = 5, L = 1,582 cells in Z_(2^32): the RR-Clusters 4.2 sum of Adult) asks each party for a
fixed amount of cryptography.  This measures it on this machine, item by item, with the
primitives the engine uses (``cryptography``'s X25519 and ChaCha20(-Poly1305), stdlib
``hmac`` / ``hashlib`` / ``secrets``), in two columns:

- **floor**: the library call alone, inputs prepared in advance (what no Python around it can
  beat, short of doing less cryptography);
- **engine**: the engine's own function for the same item (``parties.secure.crypto``,
  ``prg``, ``shamir``, ``views``, ``pki``), i.e. the floor plus its Python.

Per party (counts of a fault-free run, measured on an in-memory sum of 3,000 parties):
1 X25519 key pair; 8 static agreements (channel and view keys of the 8 neighbours) and
8 masking agreements (one masking key parsed per party: each is used by its owner's 8
neighbours); HKDF-SHA256: 40 HMACs (one extract and two expands per neighbour for the channel
and view keys, one extract and one expand per masking seed); 8 seals and 8 opens
(ChaCha20-Poly1305, random nonces); 9 ChaCha20 mask expansions of L ring elements added into
the masked input (the self mask and 8 pairwise masks); Shamir sharing of 2 secrets, 5-of-9;
the fresh view keys of the owner's non-adjacent holder pairs (one draw); about 56 combined view
keys (SHA-256), 64 view tags written and 32 checked (keyed BLAKE2b, 128-bit).  The floor of an
HMAC is two SHA-256 over the key's padded blocks prepared in advance (``hmac.digest``'s one-shot
OpenSSL call costs more: it looks up HMAC and SHA-256 on every call).

Prints microseconds per item and per party, and what the floor implies for 32,561 parties on
2 cores, beside the 30 s target of the whole sum (all in: messages, controller).  The machine is
shared: the floor is the best of several rounds (least disturbed), CPU time; beside it, the mean
of this run's rounds, a second reference (a run's CPU is an average over a minute, the best
round is not); the goal reads the ratio to the best rounds.  With ``--runs``, ``--between B``
more rounds are timed after each run (default 3), and the floor the runs are read against is the
best round of all of them (:class:`_floor_items.Floor`): the machine's speed drifts by 5-20 %
within minutes, and a floor timed only in the minute before the runs, in a slow spell, would
flatter the runs.

With ``--runs R`` it also runs the sum itself, R times on tcp and R pairs of runs on memory
(below), the runtimes alternated: RR-Clusters 4.2 with the masked-sparse sum of every pair cell
over the Adult parties (``--limit N``: the first N), on ``memory`` (one process) and on ``tcp``
(2 worker processes, TLS), as ``benchmarks/runtimes.py`` does.  It prints each run's secure-sum
wall time and the run's CPU (controller and workers apart), and where that CPU goes: the cryptography at its floor, the
same calls timed inside the memory run (``benchmarks/_in_run.py``: the engine's cryptographic
functions wrapped while it runs, group by group beside their floor), the cryptography the floor
leaves out (the PKI's set-up, the controller's unmasking), and the rest (protocol steps, messages,
accounting, the runtime), against the budget the 30 s target leaves on 2 cores.  ``--figure
PNG`` draws that as stacked bars.  The timers cost a memory run a few per cent, so each memory
run is paired with one as it is (only its secure sum's CPU measured; the pair in alternating
order): the goal's ratio is read from those.  Each run, and the programs alone, start from a
collected heap (``gc.collect()`` before the clock): what the measurements before it leave (the
cold floor's parties, the programs' sessions, an earlier run's shards) is reachable only through
reference cycles, which a run's rare full collections (:mod:`parties.collector`) do not reach
while it runs, and would otherwise stay through the next run (its memory held; its CPU not
measurably changed: back-to-back 32,561-party sums, alternated, 1,078-1,125 µs a party after a
collection, 1,088-1,107 without).

With ``--programs`` it also times the engine's programs alone at the runs' size (the counting
driver with the real cryptography, no event loop, endpoints or tasks): the run's CPU minus that
is what the runtime around the programs costs.

With ``--cold N`` it also measures the floor's calls on N parties' own keys and data, one round
after another over all of them (:func:`cold_floor`): what the cryptography costs with the data cold
in the cache, as in a run, and no Python around it.

Run: ``.venv/bin/python benchmarks/masked_floor.py [--repeat R] [--cold N] [--runs R [--between B]
[--limit N] [--programs] [adult.data] [--figure PNG]]``
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _adult import DEFAULT_ADULT  # noqa: E402  (benchmarks/_adult.py)
from _cold_floor import cold_floor  # noqa: E402  (benchmarks/_cold_floor.py)
from _floor_items import CELLS, DEGREE, SESSION, THRESHOLD, Floor, Item, per_party  # noqa: E402  (benchmarks/_floor_items.py)
from _in_run import CONTROLLER_PROGRAM, GROUPS, PARTY_PROGRAMS, PKI, UNMASKING, InRun, floor_of  # noqa: E402

N_ADULT = 32_561
PARAMS: dict[str, Any] = dict(p=0.7, Tv=50, Td=0.1, dependence="4.2", secure_sum="masked-sparse")
"""RR-Clusters 4.2 with the masked-sparse sum of every pair cell: the runs' protocol and parameters."""
TARGET_S = 30.0
"""The whole masked sum of 1,582 cells over 32,561 parties on 2 cores (issue target, wall)."""


@dataclass(frozen=True)
class Run:
    """One measured run of the masked sum (RR-Clusters 4.2) on one runtime."""

    runtime: str
    n: int
    wall: float
    """The whole run, seconds."""
    sum_wall: float
    """The secure sum, controller's ``SecureRelease`` to the tallies, seconds."""
    cpu_controller: float
    """CPU seconds of this process (on ``memory``: every party too)."""
    cpu_workers: float
    """CPU seconds of the worker processes (``tcp``)."""
    peak_mib: float
    """Peak resident memory, MiB: of this process (``memory``: every party too; the largest
    peak so far in the process), or of the largest worker process (``tcp``; ``getrusage`` counts
    a worker's fork of this process before it execs, so only a tcp run first in the process
    measures the workers themselves)."""
    in_run: dict[str, float] | None = None
    """Seconds spent inside the engine's cryptographic functions, per group of
    :data:`_in_run.GROUPS` (``memory`` runs with the timers; None on a memory run as it is, and on
    ``tcp``, whose parties run in the workers)."""
    sum_cpu: float | None = None
    """CPU seconds of the secure sum itself: the process's while the controller's secure release
    ran (:attr:`_in_run.InRun.sum_cpu`; ``memory`` runs, every party in the process)."""
    rounds: dict[str, tuple[float, float]] | None = None
    """Per round of the masked party, seconds of its method and of the floor's calls in it
    (:attr:`_in_run.InRun.rounds`; ``memory`` runs with the timers)."""
    sum_system: float | None = None
    """The kernel's CPU seconds within :attr:`sum_cpu` (:attr:`_in_run.InRun.sum_system`)."""
    sum_faults: int | None = None
    """Minor page faults while the secure sum ran (:attr:`_in_run.InRun.sum_faults`): its fresh memory."""
    in_sum: dict[str, float] | None = None
    """:attr:`in_run`'s seconds spent while the secure sum ran (:attr:`_in_run.InRun.seconds_in_sums`)."""

    @property
    def as_is(self) -> bool:
        """A memory run without the groups' timers (the goal's figure)."""
        return self.runtime == "memory" and self.in_run is None

    @property
    def cpu(self) -> float:
        return self.cpu_controller + self.cpu_workers


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_WORKER_RSS = ("largest worker, or this process's size when it started one: a worker is forked before it "
               "execs, so after a memory run read the figure of a tcp-only run")


def measure_runs(adult: Path, runs: int, limit: int | None,
                 runtimes: tuple[str, ...] = ("memory", "tcp"), after: Callable[[], None] | None = None) -> list[Run]:
    """``runs`` runs of the masked sum on each of ``runtimes`` (``memory``; ``tcp``: 2 workers,
    TLS), alternated; ``after()`` after each run (the floor's rounds between the runs)."""
    from mprr.data import Dataset
    from scenarios.datasets import load_adult

    data: Dataset = load_adult(adult)
    if limit:
        data = Dataset(data.schema, data.codes[:limit])
    params = PARAMS
    out: list[Run] = []
    for k in range(runs):
        for name in runtimes:
            # memory: a run with the timers of benchmarks/_in_run.py (where the CPU goes) and one
            # without (the goal's figure: the timers cost a few per cent), in alternating order
            for timed in ((k % 2 == 0, k % 2 == 1) if name == "memory" else (False,)):
                out.append(one_run(data, name, timed, params, f"{k + 1}/{runs}", first=not out))
                if after is not None:
                    after()
    return out


def one_run(data: Any, name: str, timed: bool, params: dict[str, Any], label: str, *, first: bool) -> Run:
    """One run of RR-Clusters 4.2 on ``name`` (``timed``: with :class:`InRun`'s timers; a memory
    run without them still measures its sum's CPU)."""
    from parties.runtime_registry import make_runtime
    from parties.simulate import simulate

    runtime = make_runtime(name, **({"workers": 2, "tls": True} if name == "tcp" else {}))
    timing = InRun(groups=timed) if name == "memory" else None  # (the parties of a tcp run are in its workers)
    gc.collect()  # (from a collected heap: module docstring)
    started, cpu, kids = time.perf_counter(), time.process_time(), _children_cpu()
    with timing if timing is not None else contextlib.nullcontext():
        sim = simulate(data, "RR-Clusters", seed=1, timeout=300.0, runtime=runtime, **params)
    who = resource.RUSAGE_CHILDREN if name == "tcp" else resource.RUSAGE_SELF
    run = Run(name, data.n, time.perf_counter() - started, sim.result.timings["secure_sum"],
              time.process_time() - cpu, _children_cpu() - kids, resource.getrusage(who).ru_maxrss / 1024,
              None if timing is None or not timed else dict(timing.seconds), None if timing is None else timing.sum_cpu,
              None if timing is None or not timed else {k: (v[0], v[1]) for k, v in timing.rounds.items()},
              None if timing is None else timing.sum_system, None if timing is None else timing.sum_faults,
              None if timing is None or not timed else dict(timing.seconds_in_sums))
    kind = "" if name != "memory" else " (timed)" if timed else " (as is)"
    print(f"run {label} {name:>6}{kind:8s}: secure sum {run.sum_wall:5.1f} s wall (run {run.wall:5.1f} s"
          + ("" if run.sum_cpu is None else f"; the sum's CPU {run.sum_cpu:.1f} s, of which the kernel's "
                                             f"{run.sum_system or 0.0:.2f} s, {(run.sum_faults or 0) / run.n:.1f} "
                                             "minor page faults per party") + "); "
          f"CPU {run.cpu:6.1f} s (this process {run.cpu_controller:5.1f} s, workers {run.cpu_workers:5.1f} s); "
          f"peak RSS {run.peak_mib:,.0f} MiB ({'this process' if name != 'tcp' else 'largest worker' if first else _WORKER_RSS})",
          flush=True)
    return run


def programs_alone(n: int) -> float:
    """CPU seconds of the masked-sparse sum's programs alone for ``n`` parties: the controller's
    and every party's program with the real cryptography (and a fresh PKI), run by the counting
    driver (:func:`parties.secure.engine.counted_cost`: no event loop, task, endpoint or
    mailbox, each message sized by the codec).  A run's CPU minus this is what its runtime
    costs around the programs (drivers, endpoints, the shard, set-up, the release decisions)."""
    from parties.collector import rare_full_collections
    from parties.secure.engine import counted_cost
    from parties.secure.registry import make_engine
    from parties.secure.suite import REAL

    engine = make_engine("masked-sparse")
    ctx = engine.context(range(n), CELLS, session="bench-programs")
    gc.collect()  # (from a collected heap: module docstring)
    start = time.process_time()
    with rare_full_collections():  # (the garbage collector's schedule of the runs, parties.simulate's)
        counted_cost(engine, ctx, suite=REAL, mirror=False)
    return time.process_time() - start


FLOOR_RATIO_GOAL = 1.5
"""The run's CPU over the floor's (floor per party times n) that issue 28 asks for."""
REST = "the rest: the runtime (hosts, frames, transport), the release, set-up"
CONTROLLER = "the controller's process (tcp only)"


def _budget(n: int) -> float:
    """CPU seconds the target allows ``n`` parties: 30 s wall on 2 cores for 32,561, per party."""
    return TARGET_S * 2 * n / N_ADULT


COLD = "the same cryptography on each party's own data (cold floor - floor)"
IN_RUN = "the same calls inside the run, beyond their floor (data cold, their Python)"
OUTSIDE = "cryptography the floor leaves out (PKI set-up; on memory the controller's unmasking too)"
STEPS = "the parties' programs beyond those calls: protocol steps, checks, messages"
CONTROL = "the controller's program beyond its unmasking (on tcp: in its process)"
ISOLATED = "Python of the cryptographic functions"


def _inside(seconds: dict[str, float], floor_seconds: float) -> dict[str, float]:
    """One memory run's :class:`InRun` seconds as parts of its CPU (beside the floor's ``floor_seconds``)."""
    calls = sum(seconds[g.name] for g in GROUPS if g.floor)
    return {IN_RUN: calls - floor_seconds, OUTSIDE: seconds[PKI] + seconds[UNMASKING],
            STEPS: seconds[PARTY_PROGRAMS] - calls, CONTROL: seconds[CONTROLLER_PROGRAM] - seconds[UNMASKING]}


def in_run_table(runs: list[Run], rows: list[Item]) -> dict[str, float] | None:
    """Print the engine's cryptographic functions and programs as they ran inside the memory runs
    (:class:`InRun`), the calls group by group beside their floor (the best round, and the mean
    of the rounds, a second reference); returns the mean seconds per party of each group (None:
    no memory run)."""
    timed = [r.in_run for r in runs if r.in_run is not None]
    if not timed:
        return None
    n = next(r.n for r in runs if r.in_run is not None)
    mean = {g.name: statistics.mean(t[g.name] for t in timed) / n for g in GROUPS}
    best, typical = {r.name: r.floor for r in rows}, {r.name: r.floor_mean for r in rows}
    print(f"\nThe engine's cryptography and programs inside the memory run(s), µs per party (mean of {len(timed)}; "
          "floor: the same calls at their floor, above, best round and mean of the rounds):")
    print(f"  {'group':76s} {'floor':>8s} {'mean':>8s} {'in run':>8s} {'/floor':>7s} {'/mean':>6s}")
    floors = means = calls = 0.0
    for group in GROUPS:
        if group.floor:
            floor, floor_mean, inside = floor_of(group, best), floor_of(group, typical), mean[group.name]
            floors, means, calls = floors + floor, means + floor_mean, calls + inside
            print(f"  {group.name:76s} {floor * 1e6:8.1f} {floor_mean * 1e6:8.1f} {inside * 1e6:8.1f} "
                  f"{inside / floor:6.2f}x {inside / floor_mean:5.2f}x")
        else:
            print(f"  {group.name:76s} {'-':>8s} {'-':>8s} {mean[group.name] * 1e6:8.1f}")
    label = "all the floor's calls"
    print(f"  {label:76s} {floors * 1e6:8.1f} {means * 1e6:8.1f} {calls * 1e6:8.1f} {calls / floors:6.2f}x "
          f"{calls / means:5.2f}x")
    print(f"  the parties' programs beyond the calls in them: {(mean[PARTY_PROGRAMS] - calls) * 1e6:.1f} µs per party; "
          f"the controller's beyond its unmasking: {(mean[CONTROLLER_PROGRAM] - mean[UNMASKING]) * 1e6:.1f}")
    by_round = [r.rounds for r in runs if r.rounds is not None]
    if by_round:
        print(f"  the party's rounds, µs per party: {'method':>8s} {'calls':>8s} {'its own':>8s}")
        methods = 0.0
        for label in by_round[0]:
            method = statistics.mean(r[label][0] for r in by_round) / n
            inside = statistics.mean(r[label][1] for r in by_round) / n
            methods += method
            print(f"    {label:46s} {method * 1e6:8.1f} {inside * 1e6:8.1f} {(method - inside) * 1e6:8.1f}")
        print(f"    the programs beyond their rounds' methods (the rounds' I/O, messages handed over): "
              f"{(mean[PARTY_PROGRAMS] - methods) * 1e6:.1f}")
    return mean


def report_runs(runs: list[Run], floor: float, engine: float, cold: float | None = None,
                inside: dict[str, float] | None = None, floor_mean: float | None = None
                ) -> dict[str, dict[str, list[float]]]:
    """Print where each runtime's CPU goes against the target's budget; returns, per runtime,
    the CPU seconds of each part in every run (what :func:`draw` stacks).  ``inside``: what
    :func:`in_run_table` returns; the parts are then measured inside each memory run (the
    floor's calls beyond their floor, the cryptography the floor leaves out, the programs beyond
    the calls), and on tcp, whose parties run in the workers, taken as the memory runs' per
    party times n (the controller's process a part of its own).  Without it (no memory run) the
    parts are estimates from the items alone: ``cold``, the cold floor per party
    (:func:`cold_floor`), its excess over the floor, and the engine's functions measured one by one.
    ``floor_mean``: the floor per party as the mean of the timing rounds (the run's CPU over it
    is printed beside the ratio to the floor, which the goal reads)."""
    n = runs[0].n
    budget = _budget(n)
    broken = [r for r in runs if not r.as_is]  # (the runs the parts are measured in)
    print(f"\nWhere the CPU goes, {n:,} parties (mean of {len(broken) // len({r.runtime for r in broken})} run(s) per "
          f"runtime; the 30 s target for {N_ADULT:,} parties leaves {budget / n * 1e3:.2f} ms of CPU per party on 2 "
          f"cores: {budget:.1f} s here):")
    parts: dict[str, dict[str, list[float]]] = {}
    for name in dict.fromkeys(r.runtime for r in broken):
        mine = [r for r in broken if r.runtime == name]
        split = {"cryptography at its floor": [floor * n] * len(mine)}
        if inside is not None:
            typical = _inside({k: v * n for k, v in inside.items()}, floor * n)
            typical[OUTSIDE] = inside[PKI] * n  # (tcp: the controller's unmasking is in its process)
            for r in mine:
                measured = typical if r.in_run is None else _inside(r.in_run, floor * n)
                for label in (IN_RUN, OUTSIDE, STEPS) + ((CONTROL,) if r.in_run is not None else ()):
                    split.setdefault(label, []).append(measured[label])
        else:
            if cold is not None:
                split[COLD] = [(cold - floor) * n] * len(mine)
            split[ISOLATED] = [(engine - floor) * n] * len(mine)
        covered = [sum(col) for col in zip(*split.values())]
        if name == "tcp":
            split[REST] = [r.cpu_workers - c for r, c in zip(mine, covered)]
            split[CONTROLLER] = [r.cpu_controller for r in mine]
        else:
            split[REST] = [r.cpu - c for r, c in zip(mine, covered)]
        parts[name] = split
        cpu = [r.cpu for r in mine]
        sums = [r.sum_wall for r in mine]
        print(f"  {name:>6}{' (timed)' if name == 'memory' else ''}: secure sum {statistics.mean(sums):5.1f} s wall (min {min(sums):.1f}, max {max(sums):.1f}; "
              f"{statistics.mean(r.sum_wall / r.wall for r in mine):.0%} of the run); run's CPU "
              f"{statistics.mean(cpu):6.1f} s = {statistics.mean(cpu) / n * 1e3:.2f} ms per party, "
              f"{statistics.mean(cpu) / budget:.2f} x the budget, {statistics.mean(cpu) / (floor * n):.2f} x the "
              f"cryptographic floor (min {min(cpu) / (floor * n):.2f}"
              + (")" if any(r.as_is for r in runs) else f"; goal <= {FLOOR_RATIO_GOAL} x)")
              + ("" if floor_mean is None else f"; {statistics.mean(cpu) / (floor_mean * n):.2f} x the floor's "
                 f"mean of the rounds (min {min(cpu) / (floor_mean * n):.2f})"))
        sums_cpu = [r.sum_cpu for r in mine if r.sum_cpu is not None]
        if sums_cpu:
            print(f"          the secure sum alone (its phase of the run, without the set-up and the releases before it): "
                  f"CPU {statistics.mean(sums_cpu):6.1f} s = {statistics.mean(sums_cpu) / (floor * n):.2f} x the floor "
                  f"(min {min(sums_cpu) / (floor * n):.2f})"
                  + ("" if floor_mean is None else f", {statistics.mean(sums_cpu) / (floor_mean * n):.2f} x its mean"))
        plain = [r for r in runs if r.runtime == name and r.as_is]
        if plain:
            cpu_plain, sum_plain = [r.cpu for r in plain], [r.sum_cpu for r in plain if r.sum_cpu is not None]
            print(f"          as is, without the timers (the goal's figure; {len(plain)} run(s)): run's CPU "
                  f"{statistics.mean(cpu_plain):6.1f} s = {statistics.mean(cpu_plain) / n * 1e3:.2f} ms per party, "
                  f"{statistics.mean(cpu_plain) / (floor * n):.2f} x the floor (min {min(cpu_plain) / (floor * n):.2f}); "
                  f"the secure sum alone {statistics.mean(sum_plain):6.1f} s = {statistics.mean(sum_plain) / n * 1e3:.2f} "
                  f"ms per party, {statistics.mean(sum_plain) / (floor * n):.2f} x the floor (min "
                  f"{min(sum_plain) / (floor * n):.2f}; goal <= {FLOOR_RATIO_GOAL} x)"
                  + ("" if floor_mean is None else f", {statistics.mean(sum_plain) / (floor_mean * n):.2f} x its mean")
                  + f"; the timers cost the run {statistics.mean(cpu) / statistics.mean(cpu_plain) - 1:+.1%}")
            kernel = [(r.sum_system or 0.0, r.sum_faults or 0) for r in plain if r.sum_cpu is not None]
            if kernel:
                system = statistics.mean(k for k, _ in kernel)
                print(f"          of the secure sum's CPU, the kernel's: {system:5.2f} s = "
                      f"{system / n * 1e6:.1f} µs per party, with "
                      f"{statistics.mean(f for _, f in kernel) / n:.1f} minor page faults per party (the memory the "
                      "sum touched first, zero-filled by the kernel) and its system calls")
        if name == "tcp" and n == N_ADULT:
            print(f"          target: the secure sum <= {TARGET_S:.0f} s wall on tcp with 2 workers: "
                  + ("met" if statistics.mean(sums) <= TARGET_S else "NOT met"))
        for label, values in split.items():
            print(f"          {label:88s} {statistics.mean(values):6.1f} s  {statistics.mean(values) / n * 1e3:5.2f} ms/party")
    if inside is not None and "tcp" in parts:
        print("          (tcp: the parts measured inside the run are the memory runs' per party, times n: its workers are not timed)")
    return parts


def draw(parts: dict[str, dict[str, list[float]]], runs: list[Run], png: Path, floor_mean: float | None = None
         ) -> Path:
    """Stacked bars of :func:`report_runs`'s parts per runtime, whiskers min-max of the runs' total
    CPU, the budget the 30 s target leaves on 2 cores, the goal, the floor as the mean of its
    timing rounds (``floor_mean`` per party, when given) and the secure sum's own CPU (memory)."""
    from matplotlib.figure import Figure

    from scenarios.plots import CustomPlot, render

    n = runs[0].n
    share = {name: statistics.mean(r.sum_wall / r.wall for r in runs if r.runtime == name and not r.as_is)
             for name in parts}
    colours = {"cryptography at its floor": "#4c72b0", COLD: "#6d8fc7", ISOLATED: "#8fa9d6", IN_RUN: "#8fa9d6",
               OUTSIDE: "#55a868", STEPS: "#ccb974", CONTROL: "#937860", REST: "#dd8452", CONTROLLER: "#c44e52"}
    labels = {"memory": "memory runtime\n(parties and controller\nin one process)",
              "tcp": "tcp runtime\n(controller + 2 worker\nprocesses, TLS)"}

    def paint(fig: Figure) -> None:
        ax = fig.add_subplot()
        seen: set[str] = set()
        for x, (name, split) in enumerate(parts.items()):
            bottom = 0.0
            for label, values in split.items():
                height = statistics.mean(values)
                ax.bar(x, height, 0.55, bottom=bottom, color=colours[label], label=None if label in seen else label)
                seen.add(label)
                bottom += height
            totals = [sum(col) for col in zip(*split.values())]
            ax.errorbar(x, statistics.mean(totals), yerr=[[statistics.mean(totals) - min(totals)],
                                                          [max(totals) - statistics.mean(totals)]],
                        fmt="none", ecolor="black", capsize=6, label="min-max of the runs" if x == 0 else None)
        ax.axhline(_budget(n), color="black", linestyle="--", linewidth=1,
                   label=f"the target's budget: {TARGET_S:.0f} s wall x 2 cores" + (
                       "" if n == N_ADULT else f" for {N_ADULT:,} parties, scaled to {n:,}"))
        goal = FLOOR_RATIO_GOAL * statistics.mean(next(iter(parts.values()))["cryptography at its floor"])
        ax.axhline(goal, color="black", linestyle=":", linewidth=1.2,
                   label=f"issue 28's goal: {FLOOR_RATIO_GOAL} x the cryptographic floor")
        if floor_mean is not None:
            ax.axhline(floor_mean * n, color="#8c2d8c", linestyle="-.", linewidth=1.3,
                       label="the floor's calls at the mean of their timing rounds")
        for x, name in enumerate(parts):
            own = [r.sum_cpu for r in runs if r.runtime == name and r.as_is and r.sum_cpu is not None]
            if own:
                ax.plot([x - 0.32, x + 0.32], [statistics.mean(own)] * 2, color="black", linewidth=2.2,
                        label="the secure sum's own CPU (its phase of a run without the timers)")
        ax.set_xticks(range(len(parts)), [labels[name] for name in parts], fontsize="small")
        ax.set_xlim(-0.6, len(parts) - 0.4)
        top = max(max(sum(col) for col in zip(*split.values())) for split in parts.values())
        entries = (len({label for split in parts.values() for label in split}) + 3  # (+ budget, goal, whiskers,
                   + (floor_mean is not None) + any(r.sum_cpu is not None for r in runs))  # mean floor, own CPU)
        ax.set_ylim(0, (1.25 + 0.085 * entries) * max(top, _budget(n)))  # room for the legend above the bars
        ax.set_ylabel("CPU time of the run (s)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper left")

    spec = CustomPlot(
        png.name, f"Masked secure sum of 1,582 cells, {n:,} Adult parties: where the CPU goes", paint,
        size=(6.4, 5.0),
        caption=(f"Bars: mean CPU seconds of {sum(not r.as_is for r in runs) // len(parts)} run(s) of RR-Clusters "
                 "4.2 per runtime (the "
                 f"secure sum takes {share['memory']:.0%} of the run's wall time on memory, {share['tcp']:.0%} on "
                 "tcp), split into the cryptography at its floor (hot, best of its timing rounds), "
                 + ("the same calls timed inside the memory run beyond that floor (their data cold, their Python), "
                    "the cryptography the floor leaves out (PKI set-up; on memory also the controller's unmasking), "
                    "the parties' and the controller's programs beyond those calls (timed the same way; on tcp the "
                    "parties' parts are the memory run's per party, times n, and the controller's process is a bar "
                    "of its own) and the rest (measured total minus those: the runtime, the release, set-up; on tcp "
                    "the workers' start-up too). "
                    if IN_RUN in next(iter(parts.values())) else
                    "its excess on each party's own data (cold in the cache; when measured), the Python around "
                    "the engine's cryptographic functions (each measured here per party, times n) and the rest "
                    "(measured total minus those; on tcp it includes the workers' start-up). ")
                 + "Whiskers: min-max of the runs' totals. Dashed: the CPU that "
                 f"30 s of wall time on this machine's 2 cores allows {N_ADULT:,} parties; dotted: issue 28's "
                 f"goal, {FLOOR_RATIO_GOAL} times the floor; dash-dotted: the floor's calls at the mean of their "
                 "timing rounds (a run's CPU is an average); black tick: the secure sum's own CPU on memory, "
                 "without the run's set-up and the releases before the sum, in the runs without the timers "
                 "(which split the bars and cost a run a few per cent)."))
    return render(spec, png.parent)


def print_floor(rows: list[Item], rounds: str) -> tuple[float, float, float]:
    """Print the floor's table (``rounds``: which rounds its best and mean are of); return the
    floor per party, the floor's mean of the rounds per party and the engine's functions per
    party (seconds)."""
    print(f"Masked secure sum: one party's cryptography (k = {DEGREE}, t = {THRESHOLD}, L = {CELLS}, Z_2^32), "
          f"CPU µs, {rounds} (floor and engine) and the floor's mean of the rounds "
          "(machine: 2 cores, shared)")
    print(f"{'item':66s} {'count':>5s} {'floor µs':>9s} {'mean µs':>8s} {'engine µs':>9s} {'floor/party':>11s} "
          f"{'mean/party':>10s} {'engine/party':>12s}")
    floor_total, mean_total = per_party(rows)
    engine_total = 0.0
    for name, count, floor, engine, floor_mean in rows:
        if count == 0:
            print(f"{name:66s} {'':>5s} {'':>9s} {'':>8s} {(engine or 0.0) * 1e6:9.1f}")
            continue
        eng = floor if engine is None else engine
        engine_total += count * eng
        print(f"{name:66s} {count:5d} {floor * 1e6:9.2f} {floor_mean * 1e6:8.2f} "
              f"{'' if engine is None else f'{engine * 1e6:9.2f}':>9s} {count * floor * 1e6:11.1f} "
              f"{count * floor_mean * 1e6:10.1f} {count * eng * 1e6:12.1f}")
    print(f"{'per party':66s} {'':5s} {'':9s} {'':8s} {'':9s} {floor_total * 1e6:11.1f} {mean_total * 1e6:10.1f} "
          f"{engine_total * 1e6:12.1f}")
    print(f"the floor's mean of the rounds is {mean_total / floor_total:.2f} x its best (the machine's speed varies "
          "from round to round)")
    for label, total in (("floor", floor_total), ("engine's functions", engine_total)):
        seconds = total * N_ADULT
        print(f"{label}: {total * 1e3:.2f} ms per party -> {seconds:.1f} s of CPU for {N_ADULT:,} parties, "
              f"{seconds / 2:.1f} s on 2 cores (target for the whole sum: <= {TARGET_S:.0f} s wall; "
              f"{TARGET_S * 2 / N_ADULT * 1e3:.2f} ms per party all in)")
    return floor_total, mean_total, engine_total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15,
                        help="rounds of timings, at least 1 (the best of each item is its floor; their mean is shown too)")
    parser.add_argument("--between", type=int, default=3, metavar="B",
                        help="with --runs: B more rounds of the floor's timings after each run; the floor is then the "
                             "best round of all (default 3; 0: only the rounds before the runs)")
    parser.add_argument("--runs", type=int, default=0, metavar="R",
                        help="also run the masked sum R times on memory and on tcp (2 workers), alternated")
    parser.add_argument("adult", nargs="?", type=Path, default=DEFAULT_ADULT, help="path of adult.data (--runs)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="first N Adult parties only (--runs)")
    parser.add_argument("--runtimes", default="memory,tcp", metavar="NAMES",
                        help="comma-separated runtimes of --runs, among memory and tcp (default: both)")
    parser.add_argument("--programs", action="store_true",
                        help="also time the engine's programs alone at the runs' size (needs --runs; "
                             "as much CPU again as a memory run)")
    parser.add_argument("--cold", type=int, default=0, metavar="N",
                        help="also measure the floor on N parties' distinct data, round after round (cold_floor)")
    parser.add_argument("--figure", type=Path, default=None, metavar="PNG",
                        help="draw where the runs' CPU goes into this PNG (needs --runs)")
    args = parser.parse_args(argv)
    runtimes = tuple(args.runtimes.split(","))
    if not runtimes or not set(runtimes) <= {"memory", "tcp"}:
        parser.error(f"--runtimes must name memory and/or tcp, got {args.runtimes!r}")
    if args.figure is not None and set(runtimes) != {"memory", "tcp"}:
        parser.error(f"--figure draws both runtimes: --runtimes must be memory,tcp, got {args.runtimes!r}")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.between < 0:
        parser.error(f"--between must be 0 or more, got {args.between}")
    if args.runs < 0:
        parser.error(f"--runs must be 0 or more, got {args.runs}")
    if args.figure is not None and (args.runs == 0 or args.figure.suffix != ".png"):
        parser.error(f"--figure needs --runs R >= 1 and a path ending in .png, got {args.figure} with --runs {args.runs}")
    if args.programs and args.runs == 0:
        parser.error("--programs needs --runs R >= 1 (it times the programs at the runs' size)")
    if args.runs and not args.adult.exists():
        parser.error(f"UCI Adult not found at {args.adult}; pass the path of adult.data")
    floor = Floor()
    floor.run(args.repeat)
    rows = floor.items()
    floor_total, mean_total, engine_total = print_floor(rows, f"best of {args.repeat} rounds")
    if args.cold < 0 or 0 < args.cold <= DEGREE:
        parser.error(f"--cold must be 0 (not measured) or more than {DEGREE} parties (the graph is {DEGREE}-regular), "
                     f"got {args.cold}")
    cold: float | None = None
    if args.cold:
        cold, by_round = cold_floor(args.cold, degree=DEGREE, threshold=THRESHOLD, cells=CELLS, session=SESSION)
        print(f"cold floor, {args.cold:,} parties' own keys and data, round after round: {cold * 1e3:.2f} ms per party, "
              f"{cold / floor_total:.2f} x the floor above (load {Path('/proc/loadavg').read_text().split()[0]})")
        for name, seconds in by_round.items():
            print(f"  round {name:70s} {seconds * 1e6:7.1f} µs per party")
    if args.runs:
        runs = measure_runs(args.adult, args.runs, args.limit, runtimes,
                            after=(lambda: floor.run(args.between)) if args.between else None)
        print(f"load average after the runs: {Path('/proc/loadavg').read_text().split()[:3]}")
        if args.between:
            before = floor_total
            rows = floor.items()
            floor_total, mean_total, engine_total = print_floor(
                rows, f"best of all {floor.rounds} rounds: {args.repeat} before the runs, {args.between} after each")
            print(f"the floor over all the rounds: {floor_total * 1e3:.3f} ms per party, {floor_total / before:.3f} x "
                  f"the floor of the rounds before the runs (the goal's ratios below read it)")
        parts = report_runs(runs, floor_total, engine_total, cold, in_run_table(runs, rows), mean_total)
        if args.programs:
            n = runs[0].n
            alone = programs_alone(n)
            memory = [r.cpu for r in runs if r.as_is]
            rest = (f"; the memory runs' (as they are) runtime around them: {statistics.mean(memory) - alone:.1f} s"
                    if memory else "")
            print(f"  the programs alone (counting driver, real cryptography, no event loop): {alone:.1f} s CPU = "
                  f"{alone / n * 1e3:.2f} ms per party, {alone / (floor_total * n):.2f} x the floor{rest} "
                  f"(load {Path('/proc/loadavg').read_text().split()[0]})")
        if args.figure is not None:
            print(f"wrote {draw(parts, runs, args.figure, mean_total)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
