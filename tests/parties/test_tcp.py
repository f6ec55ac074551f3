"""The ``tcp`` runtime: memory ≡ tcp for the equivalence matrix (every protocol, dependence
method and engine), mutual TLS, wire accounting, a killed worker, no orphan process.

A spawned run starts worker processes (a few seconds): those tests are few, small and marked;
the matrix runs on workers started by hand once per module, which serve run after run.  Attacks
on the runtime are in ``test_tcp_attacks``.
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import numpy as np
import pytest

from mprr.errors import ConfigurationError, PartyDropped
from mprr.synthetic import planted_clusters
from parties.runtime import Hosting, HostingPlan
from parties.secure.registry import engine_needs_mesh, make_engine
from parties.shard import split
from parties.simulate import simulate
from parties.tcp import TcpRuntime, parse_address, parse_parties
from tests.parties.equivalence import assert_same_runs
from tests.parties.equivalence_cases import (Case, dataset, matrix_cases, reference,
                                             simulate_case)
from parties.transport import CONTROLLER
from tests.parties.transport_helpers import once_before

pytestmark = pytest.mark.process

N = 120


@pytest.fixture(scope="module")
def data():  # type: ignore[no-untyped-def]
    return planted_clusters(N, rng=np.random.default_rng(11), strength=0.8).dataset


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    """Same released data, clusters, estimates, ledgers, view and traffic statistics."""
    assert_same_runs(a, b)


# ---------------------------------------------------------------------- the equivalence matrix
WORKERS = 2


def _alternating(cases: list[Case]) -> list[Case]:
    """The cases with those run here alternating between data-set sizes where they can: a
    worker polls for its next run every 0.5 s, so the workers of the other size have
    reconnected while one size's run goes on."""
    by_size: dict[int, list[Case]] = {}
    for case in cases:
        by_size.setdefault(dataset(case.data).n if not case.missing else -1, []).append(case)
    queues = [by_size[n] for n in sorted(by_size) if n >= 0]
    out: list[Case] = []
    while any(queues):
        out += [q.pop(0) for q in queues if q]
    return out + by_size.get(-1, [])


CASES = _alternating(matrix_cases())


@pytest.fixture(scope="module")
def tcp_runtime() -> Iterator[Callable[[int], TcpRuntime]]:
    """``runtime(n)``: a runtime served by two hand-started workers of parties ``0..n-1``
    (``python -m parties.worker``, as ``mprr party`` would be), for every data-set size of the
    matrix, all started at once: they serve run after run, so a case costs its run and not a
    start of two Python processes; they are killed at the module's end (and would exit on
    their own after ``--linger``)."""
    import socket
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    started: dict[int, TcpRuntime] = {}
    processes: list[subprocess.Popen[bytes]] = []
    scratch = Path(tempfile.mkdtemp(prefix="mprr-test-matrix-"))
    for n in sorted({dataset(c.data).n for c in CASES if not c.missing}):
        with socket.socket() as probe:  # a free port, told to the workers before the controller binds it
            probe.bind(("127.0.0.1", 0))
            address = f"127.0.0.1:{probe.getsockname()[1]}"
        for k, r in enumerate(split(n, WORKERS)):
            with open(scratch / f"worker-{n}-{k}.log", "wb") as log:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "parties.worker", "--connect", address, "--parties",
                     f"{r.start}-{r.stop - 1}", "--worker", str(k), "--no-tls", "--wait", "120", "--linger", "60",
                     "-q"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log))
        started[n] = TcpRuntime(workers=WORKERS, spawn=False, tls=False, listen=address, connect_timeout=120.0)
    try:
        yield started.__getitem__
    finally:
        for proc in processes:
            proc.kill()
            proc.wait()
        said = {log.name: log.read_text(errors="replace").strip() for log in sorted(scratch.glob("*.log"))}
        shutil.rmtree(scratch, ignore_errors=True)
        assert not any(said.values()), said  # quiet workers: anything on stderr is an error


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_matrix_between_two_worker_processes_gives_the_memory_runs(case, tcp_runtime) -> None:  # type: ignore[no-untyped-def]
    """Every case of the equivalence matrix (tests/parties/equivalence_cases.py) on two worker
    processes: its memory run, traffic statistics included; the wire carries the in-memory
    payload, a party-to-party frame twice (up to the router, down to its receiver's worker)."""
    if case.missing:
        pytest.fail(case.missing)
    memory = reference(case)
    n = dataset(case.data).n
    tcp = simulate_case(case, tcp_runtime(n))
    _same(memory, tcp)
    assert not any(p.errors for p in tcp.parties)
    wire = tcp.wire
    assert wire is not None and wire["workers"] == WORKERS and wire["lost_workers"] == 0 and not wire["problems"]
    assert wire["payload_bytes"] == memory.traffic.bytes + wire["party_to_party_bytes"]
    if case.engine is not None:
        engine = make_engine(case.engine)
        assert (wire["party_to_party_bytes"] > 0) == engine_needs_mesh(case.engine)  # shares over direct links
        if engine.signs:  # 32-byte verification keys up, the directory down to both workers
            assert wire["control_bytes"] > 32 * n * 3


def test_rr_clusters_over_mutual_tls_with_two_workers(data) -> None:  # type: ignore[no-untyped-def]
    memory = simulate(data, "RR-Clusters", seed=3, timeout=10.0, p=0.7, Tv=60, Td=0.1)
    tcp = simulate(data, "RR-Clusters", seed=3, timeout=10.0, p=0.7, Tv=60, Td=0.1,
                   runtime=TcpRuntime(workers=2))
    _same(memory, tcp)
    wire = tcp.wire
    assert wire is not None and wire["tls"] and wire["workers"] == 2
    assert wire["payload_bytes"] == memory.traffic.bytes
    # a request broadcast to a worker's parties is one MULTI record (4-byte length + 13-byte
    # header + phase + 4 bytes per party, the payload once); replies: columns records
    requests = memory.traffic.sent_by(CONTROLLER).messages
    assert 4 * requests < wire["framing_bytes"] < 29 * requests
    assert wire["multicast_saved_bytes"] > 0.9 * wire["sent"]["payload"]
    assert wire["columns_saved_bytes"] > 0 and wire["received"]["columns_saved"] == wire["columns_saved_bytes"]
    assert wire["tls_overhead_bytes"] > 0  # handshakes, record headers, AEAD tags from TCP_INFO
    sent = wire["sent"]  # what crossed: the payload once per broadcast, framing, control
    crossed = sent["payload"] + sent["framing"] + sent["control"] - sent["multicast_saved"]
    assert crossed < tcp.to_dict()["traffic"]["wire"]["socket_bytes_sent"] < crossed + 20_000


def test_a_plugins_engine_runs_on_spawned_workers_which_load_its_module(own_plugin) -> None:  # noqa: ANN001
    """The plugin's ``ring`` engine (tests/own_plugin.py, registered by importing it): the spawned
    workers are started with ``--plugin tests.own_plugin`` (parties.tcp.worker_plugins), so they
    know its messages and rebuild its engine from the set-up: the memory run, traffic included."""
    case = next(c for c in matrix_cases() if c.engine == "ring")
    tcp = simulate_case(case, TcpRuntime(workers=2, tls=False))
    _same(reference(case), tcp)
    assert tcp.traffic.by_kind["SealedShares"].messages > 0 and not any(p.errors for p in tcp.parties)


def test_a_worker_refuses_a_set_up_naming_a_module_it_was_not_started_with(own_plugin, monkeypatch) -> None:  # noqa: ANN001
    """The controller cannot make a worker rebuild classes of a module its operator did not load
    (parties.plugins): the worker hangs up on the set-up, and the run's error says why."""
    from parties import tcp as tcp_module
    from mprr.errors import RuntimeFailure

    monkeypatch.setattr(tcp_module, "worker_plugins", lambda plan: ())
    case = next(c for c in matrix_cases() if c.engine == "ring")
    with pytest.raises(RuntimeFailure, match=r"control record names tests\.own_plugin\.RingEngine; only classes "
                                             r"of mprr, parties and the plugins this process loaded \(--plugin\)"):
        simulate_case(case, TcpRuntime(workers=1, tls=False))


def test_an_engine_registered_at_the_controller_only_does_not_disturb_a_run_of_another() -> None:
    """tests/own_engine.py registered in this process, never in the workers: a run of the graph
    engine on spawned workers gives its memory run (the parties accept their own engine's kinds,
    and a host drops kinds it cannot decode; before, no party answered and the run timed out)."""
    from parties.secure.registry import ENGINES, register_engine

    ours = not ENGINES.accepts("ring-mask")  # registered here by this test (importing the module registers it)
    from tests import own_engine

    if not ENGINES.accepts("ring-mask"):
        register_engine(own_engine.ENTRY)
    try:
        data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(3, 2, 4), clusters=((0, 1),)).dataset
        params = {"p": 0.7, "Tv": 30, "Td": 0.1, "dependence": "4.2", "secure_sum": "graph"}
        memory = simulate(data, "RR-Clusters", seed=5, timeout=10.0, **params)
        tcp = simulate(data, "RR-Clusters", seed=5, timeout=10.0, runtime=TcpRuntime(workers=2, tls=False), **params)
        _same(memory, tcp)
    finally:
        if ours:
            ENGINES.unregister("ring-mask")


class _KillDuringSum(TcpRuntime):
    """Kills (SIGKILL) the last worker when the controller starts the secure sum."""

    spawned: list = []  # noqa: RUF012 - the processes of the last run, for the orphan check

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        from parties.wire.requests import SecureSumStart

        async with super().host(plan) as hosting:
            procs = hosting.processes  # type: ignore[attr-defined]
            _KillDuringSum.spawned = list(procs)
            once_before(hosting.router, SecureSumStart.KIND, procs[-1].kill)
            yield hosting


def test_a_worker_killed_during_a_secure_sum_ends_in_an_error_or_a_degraded_sum() -> None:
    n = 30
    small = planted_clusters(n, rng=np.random.default_rng(11), strength=0.8).dataset
    params = dict(p=0.7, Tv=60, Td=0.1, dependence="4.3", secure_sum="masked")
    # the masked engine recovers from dropouts: two workers of three survive, a majority of holders
    sim = simulate(small, "RR-Clusters", seed=2, timeout=4.0, runtime=_KillDuringSum(workers=3, tls=False),
                   on_dropout="exclude", **params)
    lost = set(range(20, n))
    assert sim.degraded and set(sim.excluded) == lost and sim.wire is not None and sim.wire["lost_workers"] == 1
    assert sim.result.details["secure_sum"]["contributors"] == n - len(lost) == sim.result.n
    assert all(p.returncode is not None for p in _KillDuringSum.spawned)  # no orphan
    # the paper engine cannot lose a party: a clear error (the survivors stall without the lost
    # parties' shares, so the engine names them too)
    with pytest.raises(PartyDropped,
                       match=r"paper secure sum: no broadcast r_j from 30 parties .* \(crashed or stalled\)") as info:
        simulate(small, "RR-Clusters", seed=2, timeout=4.0, runtime=_KillDuringSum(workers=2, tls=False),
                 **{**params, "dependence": "4.2", "secure_sum": "paper"})
    assert set(range(15, n)) <= set(info.value.parties)
    assert all(p.returncode is not None for p in _KillDuringSum.spawned)


class _KillOne(TcpRuntime):
    """Kills worker 1 (SIGKILL) as soon as every worker is ready."""

    spawned: list = []  # noqa: RUF012 - the processes of the last run, for the orphan check

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        async with super().host(plan) as hosting:
            procs = hosting.processes  # type: ignore[attr-defined]
            _KillOne.spawned = list(procs)
            procs[1].kill()
            await procs[1].wait()
            yield hosting


def test_a_killed_worker_drops_its_parties_within_the_round_timeout(data) -> None:  # type: ignore[no-untyped-def]
    runtime = _KillOne(workers=2, tls=False)
    with pytest.raises(PartyDropped, match="crashed") as info:
        simulate(data, "RR-Independent", seed=1, timeout=4.0, p=0.6, runtime=runtime)
    assert set(info.value.parties) == set(range(N // 2, N))
    assert all(p.returncode is not None for p in _KillOne.spawned)  # no orphan after an error
    sim = simulate(data, "RR-Independent", seed=1, timeout=4.0, p=0.6, runtime=runtime, on_dropout="exclude")
    assert sim.degraded and set(sim.excluded) == set(range(N // 2, N))
    assert sim.result.n == N // 2 and sim.wire is not None and sim.wire["lost_workers"] == 1
    assert all(p.returncode is not None for p in _KillOne.spawned)


def test_seeded_crash_faults_work_on_tcp(data) -> None:  # type: ignore[no-untyped-def]
    from parties.faults import FaultPlan

    # a crashed party costs each run one full round timeout; 4 s leaves the honest parties
    # of a loaded machine time to answer, so only the planned crashes are excluded
    plan = FaultPlan(crash={3: 1, 70: 1})
    memory = simulate(data, "RR-Independent", seed=2, timeout=4.0, p=0.6, faults=plan, on_dropout="exclude")
    tcp = simulate(data, "RR-Independent", seed=2, timeout=4.0, p=0.6, faults=plan, on_dropout="exclude",
                   runtime=TcpRuntime(workers=2, tls=False))
    assert tcp.crashed == memory.crashed == (3, 70)
    assert set(tcp.excluded) == set(memory.excluded) == {3, 70}
    assert tcp.traffic.lost_to_crash == memory.traffic.lost_to_crash
    assert np.array_equal(tcp.result.releases[0].codes, memory.result.releases[0].codes)


def test_seeded_probabilistic_faults_hit_the_same_messages_on_tcp(data) -> None:  # type: ignore[no-untyped-def]
    from parties.faults import FaultPlan

    # decisions are keyed by (src, dst, k), so the two workers' interleaving at the router does
    # not change which messages are dropped or duplicated: the same parties are excluded
    plan = FaultPlan(drop=0.04, duplicate=0.1)
    memory = simulate(data, "RR-Independent", seed=2, timeout=4.0, p=0.6, faults=plan, on_dropout="exclude")
    tcp = simulate(data, "RR-Independent", seed=2, timeout=4.0, p=0.6, faults=plan, on_dropout="exclude",
                   runtime=TcpRuntime(workers=2, tls=False))
    assert memory.excluded and set(tcp.excluded) == set(memory.excluded)
    for key in ("dropped", "duplicated"):
        assert getattr(tcp.traffic, key) == getattr(memory.traffic, key) > 0, key
    assert np.array_equal(tcp.result.releases[0].codes, memory.result.releases[0].codes)


def test_options_are_checked_before_anything_starts(data) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError, match="workers must be an integer >= 1, got 0"):
        TcpRuntime(workers=0)
    with pytest.raises(ConfigurationError, match="need tls_dir"):
        TcpRuntime(spawn=False)
    with pytest.raises(ConfigurationError, match="address must be HOST:PORT"):
        parse_address("localhost")
    assert parse_parties("0-999") == range(0, 1000)
    with pytest.raises(ConfigurationError, match="FIRST-LAST"):
        parse_parties("9-3")
    import networkx as nx

    with pytest.raises(ConfigurationError, match="supports the star topology, and the full mesh an engine needs, "
                                                 "only"):
        simulate(data, "RR-Independent", seed=1, p=0.6, topology=nx.cycle_graph(N), runtime=TcpRuntime())
    assert math.isfinite(TcpRuntime().connect_timeout)


def test_a_worker_started_by_hand_serves_run_after_run(data) -> None:  # type: ignore[no-untyped-def]
    import logging
    import re
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    # a scenario runs several protocols, each a run of its own: one hand-started worker (here a
    # subprocess, as `mprr party` would be) keeps its certificates and serves them all, then
    # exits 0 once no controller has listened for --linger (20) seconds.  Its directory is not
    # under pytest's numbered temporary directories, which a concurrent pytest may prune.
    scratch = Path(tempfile.mkdtemp(prefix="mprr-test-worker-"))
    from parties.tls import reuse_or_make_material

    reuse_or_make_material(scratch / "tls", 1)  # what the controller's first run writes, given to the worker
    workers: list[subprocess.Popen[bytes]] = []
    log = open(scratch / "worker.log", "w")

    class StartTheWorker(logging.Handler):
        """Starts the worker at the address the first run's controller logs once it listens: the
        controller binds port 0 (any free port), so no other process can take it first."""

        def emit(self, record: logging.LogRecord) -> None:
            found = re.search(r"listening on (\S+) for", record.getMessage())
            if found and not workers:
                workers.append(subprocess.Popen(
                    [sys.executable, "-m", "parties.worker", "--connect", found[1], "--parties", f"0-{N - 1}",
                     "--tls-dir", str(scratch / "tls"), "--wait", "120", "--linger", "20"],
                    stdin=subprocess.DEVNULL, stderr=log))
                addresses.append(found[1])

    addresses: list[str] = []
    logger, handler = logging.getLogger("parties.tcp"), StartTheWorker()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def runtime(listen: str) -> TcpRuntime:
        return TcpRuntime(workers=1, spawn=False, listen=listen, tls_dir=str(scratch / "tls"),
                          connect_timeout=120.0)  # a loaded machine imports slowly

    try:
        try:
            first = simulate(data, "RR-Independent", seed=4, timeout=10.0, p=0.6, runtime=runtime("127.0.0.1:0"))
            second = simulate(data, "RR-Clusters", seed=4, timeout=10.0, p=0.7, Tv=60, Td=0.1,
                              runtime=runtime(addresses[0]))  # where the worker comes back
            assert workers[0].wait(timeout=90) == 0
            log.flush()
            said = (scratch / "worker.log").read_text().splitlines()
            me = f"mprr party: worker 0 (parties 0-{N - 1})"
            assert said[0] == f"{me}: connected to the controller at {addresses[0]}"
            assert [line.rsplit(" (", 1)[0] for line in said[1:3]] == [f"{me}: run 1 served", f"{me}: run 2 served"]
            assert said[3] == f"{me}: exiting after 2 run(s): no next run at {addresses[0]} within 20 s (--linger)"
        except BaseException as exc:
            exc.add_note(f"worker exit code {[w.poll() for w in workers]}, stderr: "
                         + (scratch / "worker.log").read_text()[-2000:])
            raise
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)
    _same(first, simulate(data, "RR-Independent", seed=4, timeout=10.0, p=0.6))
    _same(second, simulate(data, "RR-Clusters", seed=4, timeout=10.0, p=0.7, Tv=60, Td=0.1))


async def test_a_worker_whose_controller_hangs_up_reports_it() -> None:
    import asyncio

    from mprr.errors import RuntimeFailure
    from parties.worker import run_worker

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        with pytest.raises(RuntimeFailure, match="worker 0: the controller closed the connection before sending"):
            await run_worker(f"127.0.0.1:{port}", range(0, 4), tls=False)
    with pytest.raises(RuntimeFailure, match=f"worker 0: cannot reach the controller at 127.0.0.1:{port}"):
        await run_worker(f"127.0.0.1:{port}", range(0, 4), tls=False, wait=0.0)


def test_hand_started_workers_keep_valid_certificates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from parties.tls import reuse_or_make_material

    first = reuse_or_make_material(tmp_path, 2, hosts=("10.0.0.5",))
    ca = first.ca.read_bytes()
    assert reuse_or_make_material(tmp_path, 2, hosts=("10.0.0.5",)).ca.read_bytes() == ca  # reused
    assert reuse_or_make_material(tmp_path, 1).ca.read_bytes() == ca  # a subset of the workers
    assert reuse_or_make_material(tmp_path, 3).ca.read_bytes() != ca  # worker-2 missing: renewed
    renewed = reuse_or_make_material(tmp_path, 3).ca.read_bytes()
    assert reuse_or_make_material(tmp_path, 3, hosts=("ctl.example",)).ca.read_bytes() != renewed  # new host


def test_connect_timeout_is_checked() -> None:
    with pytest.raises(ConfigurationError, match="connect_timeout must be a finite number > 0, got 0"):
        TcpRuntime(connect_timeout=0)


def test_a_worker_checks_its_waiting_times(capsys: pytest.CaptureFixture[str]) -> None:
    from parties.worker import worker_main

    assert worker_main(["--connect", "127.0.0.1:1", "--parties", "0-1", "--no-tls", "--linger", "-1"]) == 2
    assert "--linger must be a finite number >= 0, got -1.0" in capsys.readouterr().err


def test_uncovered_parties_are_named_as_ranges() -> None:
    from parties.tcp import format_ranges, uncovered

    assert uncovered(3000, [range(0, 1500), range(1500, 2999)]) == [range(2999, 3000)]
    assert uncovered(10, [range(3, 5), range(7, 8)]) == [range(0, 3), range(5, 7), range(8, 10)]
    assert uncovered(4, [range(0, 4)]) == [] and uncovered(2, []) == [range(0, 2)]
    assert format_ranges(uncovered(10, [range(3, 5), range(7, 8)])) == "0-2, 5-6, 8-9"
    gaps = [range(k, k + 1) for k in range(0, 20, 2)]
    assert format_ranges(gaps, limit=3) == "0, 2, 4, … (7 more ranges, 10 parties in all)"


async def test_workers_leaving_a_gap_are_told_which_parties_nobody_hosts(
        caplog: pytest.LogCaptureFixture) -> None:
    """Two hand-started workers (here tasks of this event loop) declare 0-1 and 3-4 of 6 parties:
    the controller's wait ends naming parties 2 and 5; the workers said they connected."""
    import asyncio
    import logging
    import socket

    from mprr.errors import RuntimeFailure
    from parties.simulate import PARTY_KINDS
    from parties.worker import run_worker

    data = planted_clusters(6, rng=np.random.default_rng(1)).dataset
    plan = HostingPlan(n=6, schema=data.schema, records=np.asarray(data.codes), seed=3,
                       budgets=(math.inf,) * 6, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS), timeout=5.0)
    with socket.socket() as probe:  # a free port the workers can be told before the controller binds it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runtime = TcpRuntime(workers=2, spawn=False, tls=False, listen=f"127.0.0.1:{port}", connect_timeout=3.0)
    said: list[str] = []
    workers = [asyncio.create_task(run_worker(f"127.0.0.1:{port}", r, worker=k, tls=False, wait=10.0,
                                              status=said.append))
               for k, r in enumerate((range(0, 2), range(3, 5)))]
    try:
        with caplog.at_level(logging.INFO, logger="parties.tcp"):
            with pytest.raises(RuntimeFailure, match=r"workers host 4 of 6 parties after 3.0 s \(2 connected\); "
                                                     r"no worker hosts parties 2, 5"):
                async with runtime.host(plan):
                    pass  # pragma: no cover - the wait fails
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    listening = next(r.getMessage() for r in caplog.records if "listening on" in r.getMessage())
    assert listening == (
        f"tcp runtime: listening on 127.0.0.1:{port} for workers of parties 0-5; waiting up to 3 s for workers "
        f"started with `mprr party --connect HOST:{port} --parties FIRST-LAST --worker K --no-tls` covering every "
        "party, e.g. --worker 0 --parties 0-2, --worker 1 --parties 3-5")
    assert sorted(said) == [f"worker 0 (parties 0-1): connected to the controller at 127.0.0.1:{port}",
                            f"worker 1 (parties 3-4): connected to the controller at 127.0.0.1:{port}"]


async def test_wait_ready_wakes_when_a_worker_process_exits() -> None:
    """No polling: the exit of a worker process ends the wait at once (virtual clock), with the
    worker named; a run whose workers never connect ends at its one timeout."""
    import asyncio

    from mprr.data import Attribute, Schema
    from mprr.errors import RuntimeFailure
    from parties.runtime import HostingPlan
    from parties.simulate import PARTY_KINDS
    from parties.tcp import TcpHosting

    class Exiting:
        returncode: int | None = None

        async def wait(self) -> int:
            await asyncio.sleep(0.537)
            self.returncode = 3
            return 3

    schema = Schema((Attribute("a", ("x", "y"), "nominal"),))
    plan = HostingPlan(n=4, schema=schema, records=np.zeros((4, 1), dtype=int), seed=1,
                       budgets=(float("inf"),) * 4, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS))
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(RuntimeFailure, match="worker 0 exited with code 3 before it was ready"):
        await TcpHosting(plan, tls=False, expected=None).wait_ready([Exiting()], 10.0, [])  # type: ignore[list-item]
    assert loop.time() - start == pytest.approx(0.537, abs=1e-6)
    start = loop.time()
    with pytest.raises(RuntimeFailure, match="workers host 0 of 4 parties after 2.5 s"):
        await TcpHosting(plan, tls=False, expected=None).wait_ready([], 2.5, [])
    assert loop.time() - start == pytest.approx(2.5, abs=1e-6)
