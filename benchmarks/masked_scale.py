"""Benchmark: the masked secure sum against its cryptographic floor, by the number of parties.

Issue 28's goal reads the masked-sparse sum of Adult (RR-Clusters 4.2, L = 1,582 pair cells,
k = 8, t = 5) against the floor of one party's cryptography that ``benchmarks/masked_floor.py``
measures: the CPU of the secure sum alone (:class:`_in_run.InRun`'s ``sum_cpu``, the runs as they
are, on the ``memory`` runtime) over n times that floor.  Each party does the same work whatever
n is (its 8 neighbours, its 2-hop neighbourhood); what grows with n is the data the run holds,
cold in the caches and the TLB by the time a party's next round comes.  This measures the sum
at several sizes (the first n parties of Adult, in increasing order, ``--runs`` runs each, one
process, after one run of the smallest size that is not counted: a process's first run is its
slowest), each size beside the floor measured right before its runs (the machine's speed drifts
over minutes), so that the size's share of the ratio can be read.

Prints, per size and run: the sum's CPU per party, its ratio to the floor (goal <= 1.5), the
kernel's part of it (page faults of fresh memory, system calls) and the process's peak RSS so
far (the sizes run in increasing order: each size's peak, the first's with Adult loaded and the
floor measured too).  ``--figure PNG`` draws the ratio against the number of parties.

With ``--groups`` each size also makes one run with the timers of ``benchmarks/_in_run.py`` (after
its runs as they are, not counted in the ratio: the timers cost a few per cent), and a second
table says where the sum's CPU per party goes at each size and how much each part grows from the
smallest size to the largest: the engine's cryptographic calls group by group, the parties'
programs beyond those calls, the controller's program, and the rest of the sum (the runtime
around the programs, the sessions' set-up, the garbage collector).

Run: ``.venv/bin/python benchmarks/masked_scale.py [--sizes 2000,8000,16000,32561] [--runs 2]
[--repeat 15] [--groups] [adult.data] [--figure PNG]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _adult import DEFAULT_ADULT  # noqa: E402  (benchmarks/_adult.py)
from _floor_items import items, per_party  # noqa: E402  (benchmarks/_floor_items.py)
from _in_run import CONTROLLER_PROGRAM, GROUPS, PARTY_PROGRAMS, UNMASKING  # noqa: E402  (benchmarks/_in_run.py)
from masked_floor import FLOOR_RATIO_GOAL, N_ADULT, PARAMS, Run, one_run  # noqa: E402  (benchmarks/masked_floor.py)

SIZES = (2_000, 8_000, 16_000, N_ADULT)
STEPS = "the parties' programs beyond those calls (protocol steps, checks, messages)"
CONTROL = "the controller's program beyond its unmasking"
REST = "the rest of the sum: the runtime around the programs, sessions' set-up, the collector"
TOTAL = "the sum (timed run)"


@dataclass(frozen=True)
class Size:
    """The runs of one size, and the floor they are read against (seconds per party)."""

    n: int
    runs: tuple[Run, ...]
    floor: float
    timed: Run | None = None
    """A run with the timers of ``_in_run`` (``--groups``; not among :attr:`runs`), or None."""

    def per_party(self) -> list[float]:
        """Each run's secure-sum CPU per party, seconds (ValueError: a run without it measured)."""
        if any(run.sum_cpu is None for run in self.runs):
            raise ValueError(f"a run of {self.n} parties has no secure-sum CPU: runs on memory measure it")
        return [(run.sum_cpu or 0.0) / self.n for run in self.runs]

    def ratios(self) -> list[float]:
        """Each run's secure-sum CPU over n times the floor (the goal's ratio)."""
        return [cpu / self.floor for cpu in self.per_party()]


def breakdown(run: Run) -> dict[str, float]:
    """Where a timed run's secure-sum CPU goes, seconds per party: each of the floor's groups of
    calls (:data:`_in_run.GROUPS`), the parties' programs beyond them, the controller's unmasking and
    its program beyond it, the rest of the sum (its CPU beyond both programs), and the sum itself;
    every part timed while the sum ran (:attr:`Run.in_sum`: not the programs that the cost warning
    counts before the run) (ValueError: a run without the timers or the sum's CPU)."""
    seconds = run.in_sum
    if seconds is None or run.sum_cpu is None:
        raise ValueError(f"a run of {run.n} parties without the timers of _in_run: --groups runs measure them")
    calls = {g.name: seconds[g.name] for g in GROUPS if g.floor}
    parts = {**calls, STEPS: seconds[PARTY_PROGRAMS] - sum(calls.values()), UNMASKING: seconds[UNMASKING],
             CONTROL: seconds[CONTROLLER_PROGRAM] - seconds[UNMASKING],
             REST: run.sum_cpu - seconds[PARTY_PROGRAMS] - seconds[CONTROLLER_PROGRAM], TOTAL: run.sum_cpu}
    return {name: value / run.n for name, value in parts.items()}


def floor_per_party(repeat: int) -> tuple[float, float]:
    """One party's cryptography at its floor (best of ``repeat`` timing rounds) and at the rounds'
    mean, seconds (``_floor_items.per_party`` of its ``items``, as ``masked_floor.py`` reads it)."""
    return per_party(items(repeat))


def measure(adult: Path, sizes: tuple[int, ...], runs: int, repeat: int, *, groups: bool = False) -> list[Size]:
    """``runs`` runs as they are of the masked sum of the first n Adult parties, for each n of
    ``sizes`` in increasing order, in this process, after one run of the smallest that is not
    counted, each size with the floor measured right before its runs (:func:`floor_per_party` of
    ``repeat`` rounds), and with ``groups`` one timed run after them (:attr:`Size.timed`)
    (ValueError: a size above the data's parties)."""
    from mprr.data import Dataset
    from scenarios.datasets import load_adult

    data: Dataset = load_adult(adult)
    if max(sizes) > data.n:
        raise ValueError(f"--sizes asks for {max(sizes):,} parties; {adult} holds {data.n:,}")
    ordered = sorted(sizes)
    one_run(Dataset(data.schema, data.codes[:ordered[0]]), "memory", False, PARAMS, "warm-up, not counted",
            first=True)
    out: list[Size] = []
    for n in ordered:
        part = Dataset(data.schema, data.codes[:n])
        floor, floor_mean = floor_per_party(repeat)
        print(f"floor before the runs of {n:,}: {floor * 1e3:.3f} ms per party (the mean of its rounds "
              f"{floor_mean * 1e3:.3f})", flush=True)
        made = tuple(one_run(part, "memory", False, PARAMS, f"{k + 1}/{runs} of {n:,}", first=False)
                     for k in range(runs))
        timed = one_run(part, "memory", True, PARAMS, f"timed, of {n:,}", first=False) if groups else None
        out.append(Size(n, made, floor, timed))
    return out


def report(sizes: list[Size]) -> None:
    """Print each size's runs against its floor, and the sizes whose runs meet the goal on average."""
    print(f"\nThe secure sum alone (runs as they are, memory runtime) against the floor measured before each size's "
          f"runs; goal <= {FLOOR_RATIO_GOAL} x")
    print(f"{'parties':>8s} {'floor ms':>9s} {'ms per party':>16s} {'x the floor':>14s} {'kernel µs/party':>16s} "
          f"{'faults/party':>13s} {'peak RSS MiB':>13s}")
    for size in sizes:
        runs = size.runs
        print(f"{size.n:8,d} {size.floor * 1e3:9.3f} {' / '.join(f'{c * 1e3:.3f}' for c in size.per_party()):>16s} "
              f"{' / '.join(f'{r:.2f}' for r in size.ratios()):>14s} "
              f"{' / '.join(f'{(r.sum_system or 0.0) / size.n * 1e6:.1f}' for r in runs):>16s} "
              f"{' / '.join(f'{(r.sum_faults or 0) / size.n:.1f}' for r in runs):>13s} "
              f"{max(r.peak_mib for r in runs):13,.0f}")
    met = [size.n for size in sizes if statistics.mean(size.ratios()) <= FLOOR_RATIO_GOAL]
    print(f"goal met (mean of the runs) at: {', '.join(f'{n:,}' for n in met) if met else 'no size'}")
    timed = [size for size in sizes if size.timed is not None]
    if timed:
        growth_table(timed)


def growth_table(sizes: list[Size]) -> None:
    """Print :func:`breakdown` of each size's timed run, µs per party, and each part's growth from
    the first size to the last."""
    parts = [breakdown(size.timed) for size in sizes if size.timed is not None]
    first, last = sizes[0].n, sizes[-1].n
    print(f"\nWhere the sum's CPU goes (one run with the timers of _in_run per size), µs per party, and its growth "
          f"from {first:,} to {last:,} parties:")
    print(f"  {'part':84s} " + " ".join(f"{size.n:>8,d}" for size in sizes) + f" {'growth':>8s}")
    for name in parts[0]:
        values = [part[name] * 1e6 for part in parts]
        print(f"  {name:84s} " + " ".join(f"{v:8.1f}" for v in values) + f" {values[-1] - values[0]:+8.1f}")


def draw(sizes: list[Size], png: Path) -> Path:
    """The ratio of each run against the number of parties (log scale), the runs' mean joined,
    beside the goal."""
    from matplotlib.figure import Figure

    from scenarios.plots import CustomPlot, render

    def paint(fig: Figure) -> None:
        ax = fig.add_subplot()
        ns = [size.n for size in sizes]
        for size in sizes:
            ax.scatter([size.n] * len(size.runs), size.ratios(), color="#4c72b0", s=18, zorder=3,
                       label="one run" if size is sizes[0] else None)
        ax.plot(ns, [statistics.mean(size.ratios()) for size in sizes], color="#4c72b0", linewidth=1.2,
                label="mean of the runs")
        ax.axhline(FLOOR_RATIO_GOAL, color="black", linestyle=":", linewidth=1.2,
                   label=f"issue 28's goal: {FLOOR_RATIO_GOAL} x the floor")
        ax.set_xscale("log")
        ax.set_xticks(ns, [f"{n:,}" for n in ns], fontsize="small")
        ax.minorticks_off()
        ax.set_xlabel("parties (the first n of UCI Adult)")
        ax.set_ylabel("secure sum's CPU / (n x the floor)")
        low = min(min(size.ratios()) for size in sizes)
        high = max(max(size.ratios()) for size in sizes)
        ax.set_ylim(min(low, FLOOR_RATIO_GOAL) - 0.05, max(high, FLOOR_RATIO_GOAL) + 0.08)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", loc="upper left")

    spec = CustomPlot(
        png.name, "Masked secure sum (RR-Clusters 4.2, 1,582 cells): CPU over its floor, by parties", paint,
        caption=(f"Points: the CPU of the secure sum alone, per party, over one party's cryptography at its floor "
                 f"(best of its timing rounds, measured before each size's runs: "
                 f"{min(size.floor for size in sizes) * 1e3:.3f}-{max(size.floor for size in sizes) * 1e3:.3f} ms), "
                 f"for each of {len(sizes[0].runs)} run(s) as they are (memory runtime, one process, sizes in "
                 "increasing order, after a warm-up run); line: their mean. Dotted: issue 28's goal. The work per "
                 "party is the same at every size (8 neighbours); what grows is the data the run holds."))
    return render(spec, png.parent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adult", nargs="?", type=Path, default=DEFAULT_ADULT, help="path of adult.data")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), metavar="N,N,...",
                        help="numbers of parties (the first n of Adult), each more than 9")
    parser.add_argument("--runs", type=int, default=2, metavar="R", help="runs of each size, at least 1")
    parser.add_argument("--repeat", type=int, default=15,
                        help="timing rounds of each size's floor, at least 1")
    parser.add_argument("--figure", type=Path, default=None, metavar="PNG",
                        help="draw the ratios into this PNG")
    parser.add_argument("--groups", action="store_true",
                        help="one more run per size with the timers of _in_run: where the CPU goes, size by size")
    args = parser.parse_args(argv)
    try:
        sizes = tuple(int(n) for n in args.sizes.split(","))
    except ValueError:
        parser.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if not sizes or min(sizes) <= 9 or len(set(sizes)) != len(sizes):
        parser.error(f"--sizes must be distinct numbers of parties above 9 (the graph is 8-regular), "
                     f"got {args.sizes!r}")
    if args.runs < 1 or args.repeat < 1:
        parser.error(f"--runs and --repeat must be at least 1, got {args.runs} and {args.repeat}")
    if args.figure is not None and args.figure.suffix != ".png":
        parser.error(f"--figure needs a path ending in .png, got {args.figure}")
    if not args.adult.exists():
        parser.error(f"UCI Adult not found at {args.adult}; pass the path of adult.data")
    try:
        measured = measure(args.adult, sizes, args.runs, args.repeat, groups=args.groups)
    except ValueError as exc:
        parser.error(str(exc))
    report(measured)
    if args.figure is not None:
        print(f"wrote {draw(measured, args.figure)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
