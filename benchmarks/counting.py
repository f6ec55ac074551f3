"""Benchmark: the counting driver's closed-form traffic of the program engines.

``SecureSumEngine.cost`` (what ``simulate``'s expensive-configuration warning and
``SecureSumResult.cost`` read) and ``scenarios.cost_model.closed_form`` run every role's
sans-I/O program through the counting driver (:func:`parties.secure.counting.count`); a
role-symmetric sum (paper, graph on a regular graph) runs the controller and one party, whose
traffic counts for all.  This prints the CPU and wall seconds of each case of the brief, with
its count: ``paper`` at n = 1,000 and 32,561, ``graph`` (relayed) and ``graph-direct`` at
n = 32,561, all with L = 1,582 cells (Adult's pair cells) on an 8-regular graph, and the
closed forms of the ``communication_cost`` scenario's six engines at its largest point,
n = 1,024 and L = 461.  The load average is printed before and after (the machine is shared).

Run: ``.venv/bin/python benchmarks/counting.py [case ...]`` with cases ``engine:n`` (``comm:n``
for the scenario's closed forms), e.g. ``paper:1000 graph:32561``.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scenarios.cost_model as cost_model  # noqa: E402
from parties.secure.registry import sized_engine  # noqa: E402

CASES = ("paper:1000", "paper:32561", "graph:32561", "graph-direct:32561", "comm:1024")
ENGINES = ("paper", "paper-per-combination", "graph", "graph-direct", "masked", "masked-sparse")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(cases: list[str]) -> None:
    print("load", Path("/proc/loadavg").read_text().strip())
    for case in cases:
        name, n_text = case.split(":")
        n = int(n_text)
        cpu, wall = _cpu(), time.perf_counter()
        if name == "comm":
            cost_model.counted_secure_sum.cache_clear()
            what = ", ".join(f"{key} {cost_model.closed_form(key, n, 461, degree=8).messages:,}" for key in ENGINES)
        else:
            engine = sized_engine(name, degree=8, round_timeout=60.0, seed=0)
            cost = engine.cost(engine.context(range(n), 1582, session="s" * 16))
            what = f"{cost.messages:,} messages, {cost.bytes:,} B, {cost.rounds} rounds, exact {cost.exact}"
        print(f"{case}: {_cpu() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall: {what}", flush=True)
    print("load", Path("/proc/loadavg").read_text().strip())


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
