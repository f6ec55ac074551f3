"""Scale benchmark on Ray: n parties, RR-Independent and RR-Clusters 4.1, memory of every process.

Starts a local Ray (or uses ``--address``), hosts the parties in ``--shards`` shard actors and
runs each protocol once per size.  The parties are synthetic planted clusters (``--data
planted``, the default) or UCI Adult's records repeated to ``n`` parties (``--data adult``: the
job of ``benchmarks/actors.py``, RR-Clusters 4.1 with p = 0.7, Tv = 50, Td = 0.1).  Prints, per
run, wall and CPU time, time per party and per message, the traffic (messages, payload bytes,
the Ray link's wire figures: framing, and the payload bytes that broadcasts and reply columns
did not carry) and the memory of **every process of the run** — this driver, the shard actors
and Ray's own processes (GCS, raylet with the object store, agents, idle workers) — sampled
from ``/proc`` every 0.25 s by a sampler process (whose own reads are not counted):

- *peak Σ RSS*: the largest sum of the processes' resident sets seen at one instant
  (shared pages, e.g. the object store, counted once per process that maps them: an upper
  bound of the machine's use);
- *peak Σ PSS*: the same with proportional set sizes (shared pages split between the
  processes that map them: the memory the run really occupies);
- *Σ peak RSS*: the sum of each process's own high-water mark (``VmHWM``), taken at
  different instants: an upper bound of the two above that no short spike escapes.

Targets on this 2-core machine: ``peak Σ RSS <= 8 GB`` for 1,000,000 parties, ``<= 16 GB`` for
10,000,000 (issue 28: RR-Clusters 4.1, it completes, time and CPU per party reported).  The
sampler stops the run (SIGINT to this driver, then SIGKILL to the run's processes) if the
machine's available memory falls under ``--min-available`` GB.  With two or more sizes it fits
the per-party slope (time and memory between the smallest and the largest size) and
extrapolates to 1,000,000 parties, and to a cluster: the shards' work and memory divide by the
number of shards, the driver's (the controller and the router, which see every message) do
not.  ``--check memory`` also runs each size in memory and compares releases; ``--check fast``
compares them with the fast path's (:func:`mprr.protocols.clusters.rr_clusters` /
``rr_independent`` on the same per-party streams), which needs no second actor run.

Usage::

    .venv/bin/python benchmarks/scale.py [--n 20000,60000] [--protocols RR-Independent,RR-Clusters]
        [--data planted|adult] [--shards 2] [--address auto] [--check memory|fast]
        [--min-available 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mprr.data import Dataset  # noqa: E402
from mprr.protocols.clusters import rr_clusters  # noqa: E402
from mprr.protocols.independent import rr_independent  # noqa: E402
from mprr.streams import PartyStreams  # noqa: E402
from mprr.synthetic import planted_clusters  # noqa: E402
from parties.ray_runtime import RayRuntime, import_ray  # noqa: E402
from parties.simulate import simulate  # noqa: E402
from scenarios.datasets import load_adult  # noqa: E402
from _adult import DEFAULT_ADULT  # noqa: E402  (benchmarks/_adult.py)

TARGET_PARTIES = 1_000_000
TARGET_MEMORY_BYTES = {1_000_000: 8e9, 10_000_000: 16e9}
"""Targets: peak memory of all processes of the run, 8 GB up to 1,000,000 parties, 16 GB up to
10,000,000 (decimal)."""
PROTOCOLS = {"RR-Independent": dict(p=0.7), "RR-Clusters": dict(p=0.7, Tv=100, Td=0.2)}
ADULT_PROTOCOLS = {"RR-Independent": dict(p=0.7), "RR-Clusters": dict(p=0.7, Tv=50, Td=0.1, dependence="4.1")}
"""The ``--data adult`` job's parameters (RR-Clusters 4.1 as ``benchmarks/actors.py``)."""


def target_bytes(n: int) -> float:
    """The memory target of a run of ``n`` parties."""
    return next((v for k, v in sorted(TARGET_MEMORY_BYTES.items()) if n <= k), max(TARGET_MEMORY_BYTES.values()))


_KIB = re.compile(rb"^(\w+):\s+(\d+) kB", re.M)
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from ``/proc/*/stat``."""
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(name))
    return tree


def _descendants(root: int) -> list[int]:
    tree, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(tree.get(pid, ()))
    return out


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "driver"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"
    if "ShardActor" in cmd:
        return "shard"
    if "ray::IDLE" in cmd:
        return "ray-worker"
    return "ray"  # GCS, raylet (object store), agents, monitors


@dataclass
class Sampler:
    """Memory and CPU of the process ``root`` and its descendants, sampled from ``/proc``.

    Runs in its own process (:class:`MemorySampler`), so its reads take neither the driver's
    GIL nor its CPU.  Each tick reads each process's RSS (``statm``), high-water mark
    (``status``) and CPU times (``stat``); PSS (``smaps_rollup``, which walks the page tables)
    every ``pss_every`` ticks.
    """

    root: int
    interval: float = 0.25
    pss_every: int = 4
    min_available: float = 3e9
    stopped: str = ""  # why the sampler stopped the run ("" if it did not)
    low_since: float | None = None
    peak_rss: int = 0
    peak_pss: int = 0
    at_peak: dict[str, int] = field(default_factory=dict)  # role -> Σ RSS at the peak-RSS sample
    hwm: dict[int, tuple[str, int]] = field(default_factory=dict)  # pid -> (role, VmHWM bytes)
    cpu: dict[int, tuple[float, float]] = field(default_factory=dict)  # pid -> (first, last) CPU seconds seen
    ticks: int = 0

    def sample(self) -> None:
        rss = pss = 0
        roles: dict[str, int] = {}
        with_pss = self.ticks % self.pss_every == 0
        for pid in _descendants(self.root):
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    one = int(f.read().split()[1]) * _PAGE
                with open(f"/proc/{pid}/status", "rb") as f:
                    hwm = int(dict(_KIB.findall(f.read())).get(b"VmHWM", 0)) * 1024
                with open(f"/proc/{pid}/stat", "rb") as f:
                    times = f.read().rsplit(b")", 1)[1].split()[11:13]
                if with_pss:
                    with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                        pss += int(dict(_KIB.findall(f.read())).get(b"Pss", 0)) * 1024
            except (OSError, ValueError, IndexError):
                continue
            seconds = (int(times[0]) + int(times[1])) / _TICK
            first = self.cpu[pid][0] if pid in self.cpu else (seconds if self.ticks == 0 else 0.0)
            self.cpu[pid] = (first, seconds)
            role = _role(pid, self.root)
            if pid in self.hwm and self.hwm[pid][0] == "shard":  # a shard stays a shard while it exits
                role = "shard"
            rss += one
            roles[role] = roles.get(role, 0) + one
            self.hwm[pid] = (role, max(hwm, one, self.hwm.get(pid, ("", 0))[1]))
        if rss > self.peak_rss:
            self.peak_rss, self.at_peak = rss, roles
        self.peak_pss = max(self.peak_pss, pss)
        self.ticks += 1
        self.guard()

    def guard(self) -> None:
        """Stop the run when the machine's available memory falls under :attr:`min_available`:
        SIGINT to the driver (it shuts Ray down), then, 5 s later if still under, SIGKILL to
        every process of the run."""
        with open("/proc/meminfo", "rb") as f:
            available = int(dict(_KIB.findall(f.read())).get(b"MemAvailable", 0)) * 1024
        if available >= self.min_available:
            self.low_since = None
            return
        now = time.monotonic()
        if self.low_since is None:
            self.low_since = now
            self.stopped = f"available memory {available / 1e9:.2f} GB < {self.min_available / 1e9:g} GB"
            with suppress(ProcessLookupError):
                os.kill(self.root, signal.SIGINT)
        elif now - self.low_since > 5.0:
            for pid in _descendants(self.root):
                if pid != os.getpid():
                    with suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)

    def run_until_stdin_closes(self) -> None:
        """Sample every ``interval`` until stdin closes, then print the figures as JSON."""
        import select

        while True:
            self.sample()
            ready, _, _ = select.select([sys.stdin], [], [], self.interval)
            if ready and not sys.stdin.buffer.read1(1 << 16):
                break
        self.sample()
        json.dump({"peak_rss": self.peak_rss, "peak_pss": self.peak_pss, "at_peak": self.at_peak, "stopped": self.stopped,
                   "hwm": list(self.hwm.values()), "cpu": [(self.hwm.get(pid, ("?", 0))[0], last - first)
                                                          for pid, (first, last) in self.cpu.items()]},
                  sys.stdout)


@dataclass
class MemorySampler:
    """Context manager: a :class:`Sampler` of this process's tree, in a child process."""

    peak_rss: int = 0
    peak_pss: int = 0
    at_peak: dict[str, int] = field(default_factory=dict)
    hwm: list[tuple[str, int]] = field(default_factory=list)
    cpu: list[tuple[str, float]] = field(default_factory=list)
    min_available: float = 3e9
    stopped: str = ""
    _child: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MemorySampler:
        self._child = subprocess.Popen(  # owner: this object (ended in __exit__)
            [sys.executable, __file__, "--sample-tree", str(os.getpid()), str(self.min_available)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        time.sleep(0.5)  # its first sample sets the CPU baseline
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._child is not None
        out, _ = self._child.communicate(timeout=60)
        got = json.loads(out)
        self.peak_rss, self.peak_pss, self.at_peak = got["peak_rss"], got["peak_pss"], got["at_peak"]
        self.stopped = got["stopped"]
        self.hwm = [(role, int(h)) for role, h in got["hwm"]]
        self.cpu = [(role, float(c)) for role, c in got["cpu"]]

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) of the processes while sampled (a process that ends loses
        at most its last interval)."""
        return sum(c for _, c in self.cpu)

    def cpu_by_role(self) -> dict[str, float]:
        """:meth:`cpu_seconds` by role."""
        out: dict[str, float] = {}
        for role, c in self.cpu:
            out[role] = out.get(role, 0.0) + c
        return out

    def by_role(self) -> dict[str, list[int]]:
        """Each process's high-water mark, by role (driver, shard, ray, ray-worker)."""
        out: dict[str, list[int]] = {}
        for role, h in self.hwm:
            out.setdefault(role, []).append(h)
        return out


@dataclass(frozen=True)
class Run:
    """Figures of one run."""

    n: int
    protocol: str
    wall: float
    protocol_seconds: float
    cpu: float
    messages: int
    payload: int
    peak_rss: int
    peak_pss: int
    sum_hwm: int
    roles: dict[str, list[int]]
    at_peak: dict[str, int]
    cpu_roles: dict[str, float]
    startup_seconds: float
    wire: dict[str, int]
    load: tuple[float, float]  # load average (1 min) before and after


def parties(n: int, args: argparse.Namespace) -> Dataset:
    """The ``n`` parties of a run: planted clusters, or Adult's records repeated to ``n``."""
    if args.data == "adult":
        adult = load_adult(args.adult)
        return Dataset(adult.schema, adult.codes[np.arange(n) % adult.n])
    return planted_clusters(n, rng=np.random.default_rng(args.seed)).dataset


def params(protocol: str, args: argparse.Namespace) -> dict[str, object]:
    """The protocol's parameters for the ``--data`` job."""
    return dict((ADULT_PROTOCOLS if args.data == "adult" else PROTOCOLS)[protocol])


def run_once(n: int, protocol: str, args: argparse.Namespace) -> Run | None:
    """One run of ``protocol`` with ``n`` parties (memory sampled across every process);
    ``None`` when the sampler stopped it (too little memory left on the machine)."""
    data = parties(n, args)
    kwargs = params(protocol, args)
    runtime = RayRuntime(shards=args.shards, num_cpus=0.5, address=args.address, start_timeout=args.timeout)
    load0 = os.getloadavg()[0]
    mem = MemorySampler(min_available=args.min_available * 1e9)
    try:
        with mem:
            started = time.perf_counter()
            sim = simulate(data, protocol, seed=args.seed, timeout=args.timeout, runtime=runtime, **kwargs)
            wall = time.perf_counter() - started
    except KeyboardInterrupt:
        if not mem.stopped:
            raise
    if mem.stopped:
        print(f"{protocol}, n = {n:,}: STOPPED by the sampler ({mem.stopped}); peak Σ RSS {_gb(mem.peak_rss)}")
        return None
    w = sim.wire or {}
    wire = {k: int(w.get(k, 0)) for k in ("payload_bytes", "framing_bytes", "control_bytes", "multicast_saved_bytes",
                                           "columns_saved_bytes")}
    run = Run(n, protocol, wall, float(w.get("protocol_seconds", wall)), mem.cpu_seconds(), sim.traffic.messages,
              sim.traffic.bytes, mem.peak_rss, mem.peak_pss, sum(h for _, h in mem.hwm), mem.by_role(), mem.at_peak,
              mem.cpu_by_role(), float(w.get("startup_seconds", 0.0)), wire, (load0, os.getloadavg()[0]))
    if args.check == "memory":
        ref = simulate(data, protocol, seed=args.seed, timeout=args.timeout, **kwargs)
        same = all(np.array_equal(a.codes, b.codes) for a, b in zip(ref.result.releases, sim.result.releases))
        print(f"    same release as memory: {same and ref.result.clusters == sim.result.clusters}")
    elif args.check == "fast":
        fast = (rr_clusters if protocol == "RR-Clusters" else rr_independent)(
            data, rng=PartyStreams(args.seed, data.n), **kwargs)  # type: ignore[operator]
        same = all(np.array_equal(a.codes, b.codes) for a, b in zip(fast.releases, sim.result.releases))
        if protocol == "RR-Clusters":
            same = same and fast.clusters == sim.result.clusters
        print(f"    same release{' and clusters' if protocol == 'RR-Clusters' else ''} as the fast path: {same}")
    del sim
    return run


def _gb(x: float) -> str:
    return f"{x / 1e9:.2f} GB"


def report(r: Run) -> None:
    roles = ", ".join(f"{role} {'+'.join(f'{h / 2**20:,.0f}' for h in sorted(hs, reverse=True))} MiB"
                      for role, hs in sorted(r.roles.items()))
    target = target_bytes(r.n)
    print(f"{r.protocol}, n = {r.n:,}: wall {r.wall:.1f} s (shard start-up {r.startup_seconds:.1f} s, protocol "
          f"{r.protocol_seconds:.1f} s), CPU {r.cpu:.1f} s all processes "
          f"({', '.join(f'{k} {v:.1f}' for k, v in sorted(r.cpu_roles.items()))}); load average "
          f"{r.load[0]:.1f} -> {r.load[1]:.1f}; {r.protocol_seconds / r.n * 1e6:.1f} µs/party wall of protocol, "
          f"{r.cpu / r.n * 1e6:.1f} µs/party CPU")
    w = r.wire
    print(f"    traffic: {r.messages:,} messages, {r.payload:,} payload bytes ({r.payload / r.n:.0f} B/party); "
          f"Ray link: payload {w['payload_bytes']:,} B, framing {w['framing_bytes']:,} B, control "
          f"{w['control_bytes']:,} B, not carried: broadcasts {w['multicast_saved_bytes']:,} B, reply columns "
          f"{w['columns_saved_bytes']:,} B")
    print(f"    memory: peak Σ RSS {_gb(r.peak_rss)} (target <= {_gb(target)}: "
          f"{'met' if r.peak_rss <= target else 'NOT met'}; {r.peak_rss / r.n / 1024:.2f} KiB/party), "
          f"peak Σ PSS {_gb(r.peak_pss)}, Σ peak RSS {_gb(r.sum_hwm)}")
    print(f"    at the peak: {', '.join(f'{k} {v / 2**20:,.0f} MiB' for k, v in sorted(r.at_peak.items()))}; "
          f"per-process peaks: {roles}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--sample-tree"]:  # the sampler process of MemorySampler
        Sampler(int(argv[1]), min_available=float(argv[2])).run_until_stdin_closes()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="20000,60000",
                        help="comma-separated party counts (default 20000,60000); two or more give the "
                             "per-party slope used to extrapolate (fixed process memory apart)")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS), help="comma-separated, of " + ", ".join(PROTOCOLS))
    parser.add_argument("--data", default="planted", choices=("planted", "adult"),
                        help="planted clusters (default) or Adult's records repeated to n (RR-Clusters 4.1 "
                             "as benchmarks/actors.py)")
    parser.add_argument("--adult", default=str(DEFAULT_ADULT), help="path of adult.data (--data adult)")
    parser.add_argument("--shards", type=int, default=2, help="shard actors (default 2)")
    parser.add_argument("--min-available", type=float, default=3.0,
                        help="stop the run if the machine's available memory falls under this many GB (default 3)")
    parser.add_argument("--address", default=None, help="Ray cluster (default: start a local one)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds a round (and the shards' start) may take (default 3600: a 1,000,000-party "
                             "round on a loaded 2-core machine takes minutes)")
    parser.add_argument("--check", nargs="?", const="memory", default=None, choices=("memory", "fast"),
                        help="compare the releases with a memory run (default) or the fast path's")
    args = parser.parse_args(argv)
    protocols = [p for p in args.protocols.split(",") if p]
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown:
        parser.error(f"unknown protocols {unknown}; known: {list(PROTOCOLS)}")
    ray = import_ray()
    t0 = time.perf_counter()
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             configure_logging=False)
    print(f"Ray started in {time.perf_counter() - t0:.1f} s; {ray.cluster_resources().get('CPU', 0):.0f} CPUs "
          f"(machine: {os.cpu_count()} cores, shared with other sessions; load average "
          f"{os.getloadavg()[0]:.1f})")
    sizes = [int(x) for x in str(args.n).split(",")]
    runs: dict[str, list[Run]] = {p: [] for p in protocols}
    try:
        for n in sizes:
            for protocol in protocols:
                run = run_once(n, protocol, args)
                if run is None:
                    return 1
                report(run)
                runs[protocol].append(run)
    finally:
        ray.shutdown()
    if len(sizes) >= 2:
        for protocol, pts in runs.items():
            a, b = pts[0], pts[-1]
            dn = b.n - a.n
            dt, dcpu = (b.protocol_seconds - a.protocol_seconds) / dn, (b.cpu - a.cpu) / dn
            dm = (b.peak_rss - a.peak_rss) / dn
            est_t = b.protocol_seconds + dt * (TARGET_PARTIES - b.n)
            est_m = b.peak_rss + dm * (TARGET_PARTIES - b.n)
            print(f"{protocol}: marginal {dt * 1e6:.0f} µs wall, {dcpu * 1e6:.0f} µs CPU and "
                  f"{dm / 1024:.1f} KiB (peak Σ RSS) per party (n = {a.n:,} to {b.n:,}); "
                  f"{TARGET_PARTIES:,} parties on this machine: ~{est_t / 60:.1f} min of protocol, "
                  f"~{_gb(est_m)} (target <= {_gb(target_bytes(TARGET_PARTIES))}: "
                  f"{'within' if est_m <= target_bytes(TARGET_PARTIES) else 'over'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
