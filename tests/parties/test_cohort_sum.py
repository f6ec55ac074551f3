"""A cohort's secure sums (parties.cohort_sum): its members commit, start and end a sum in their
cohort, each running its own side, and every party ends where its own per-party path leaves it.

Each case runs on the memory runtime as it is and on the per-party path, which it must match: every
party built at the commitment (no cohort commits as a whole: each party commits, starts and runs
its sum on its own), or at the start (no cohort starts a sum as a whole).  The result, every
party's ledger, refusals, secure-sum sessions, released values, draws, status and errors, every
party's traffic and what the controller received, in order, must be the same.  Every run is on the
virtual clock (``tests/virtual_clock.py``): its round timeouts pass in virtual time.  At the shard,
the cases the controller's protocol does not make: two sessions interleaved, a read or a host
stopped in the middle of a sum, a roster without a member.
"""

from __future__ import annotations

from typing import Any

import asyncio

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.errors import ProtocolError
from mprr.synthetic import planted_clusters
from parties.cohort import Cohort
from parties.cohort_sum import CohortSums
from parties.faults import FaultPlan
from parties.runtime import HostingPlan, MemoryRuntime
from parties.secure.graph import GraphEngine
from parties.shard import PartyShard
from parties.shard_report import ShardReport
from parties.shard_setup import directory
from parties.simulate import PARTY_KINDS, SimulationResult, simulate_async
from parties.transport import CONTROLLER, Frame
from parties.wire.codec import Message, encode
from parties.wire.requests import SecureRelease, SecureSumStart, roster_runs
from tests.virtual_clock import run_virtual

N = 24
SEED = 4
CLUSTERS: dict[str, Any] = dict(p=0.7, Tv=60, Td=0.1)
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(N, rng=np.random.default_rng(8), strength=0.8).dataset


ALONE = ("built at the commitment", "built at the start")


def _alone(patch: pytest.MonkeyPatch, how: str | None) -> None:
    """The per-party path: no cohort commits a sum as a whole, or none starts one (``how``: one of :data:`ALONE`)."""
    if how == ALONE[0]:
        patch.setattr(Cohort, "commit", lambda self, *args: None)
    elif how == ALONE[1]:
        patch.setattr(CohortSums, "start", lambda self, *args: None)


def _run(data: Dataset, monkeypatch: pytest.MonkeyPatch, *, alone: str | None, **options: Any
         ) -> SimulationResult | str:
    """The simulation (or the error it ended with), on the per-party path ``alone`` (:data:`ALONE`) if given."""
    with monkeypatch.context() as patch:
        _alone(patch, alone)
        try:
            return run_virtual(simulate_async(data, "RR-Clusters", seed=SEED, **CLUSTERS,  # type: ignore[arg-type]
                                              **options))
        except Exception as exc:  # noqa: BLE001  (the same error either way)
            return f"{type(exc).__name__}: {exc}"


def _sessions(accountant: Any) -> dict[str, str | None]:
    return {session: accountant.session_state(session) for session in accountant._sessions}


def _same(a: SimulationResult | str, b: SimulationResult | str) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.result.clusters == b.result.clusters
    assert [r.units for r in a.result.releases] == [r.units for r in b.result.releases]
    for x, y in zip(a.parties, b.parties, strict=True):
        assert x.accountant.ledger.releases == y.accountant.ledger.releases
        assert [(r.reason, r.request_id, r.message) for r in x.refusals] == [
            (r.reason, r.request_id, r.message) for r in y.refusals]
        assert _sessions(x.accountant) == _sessions(y.accountant)
        assert (x.released_values, x.draws, x.status, x.errors) == (y.released_values, y.draws, y.status, y.errors)
    ta, tb = a.traffic, b.traffic
    assert ta.messages == tb.messages and ta.bytes == tb.bytes
    received = [[(e.src, e.phase, e.kind, e.size) for e in sim.view_log] for sim in (a, b)]
    assert received[0] == received[1]  # (what the controller received, in order)


CASES = {
    "masked-sparse 4.2": dict(dependence="4.2", secure_sum="masked-sparse", timeout=3.0),
    "graph 4.3": dict(dependence="4.3", engine="graph", timeout=3.0),
    "paper 4.2": dict(dependence="4.2", engine="paper", timeout=3.0),
    "masked 4.2, a party crashes in the sum": dict(dependence="4.2", engine="masked", timeout=1.0,
                                                   faults=FaultPlan(crash={5: 3}), on_dropout="exclude"),
    "masked-sparse 4.2, shares dropped": dict(dependence="4.2", secure_sum="masked-sparse", timeout=0.5,
                                              faults=FaultPlan(drop=0.05, phases=frozenset({"masked/share-keys"})),
                                              fault_seed=2, on_dropout="exclude"),
    "masked 4.2, some tags dropped: their parties wait, stopped at the end": dict(
        dependence="4.2", engine="masked", timeout=0.5, on_dropout="exclude", fault_seed=1,
        faults=FaultPlan(drop=1.0, phases=frozenset({"masked/consistency"}), senders=frozenset({3, 9}))),
    "masked 4.2, the sum aborted": dict(dependence="4.2", engine="masked", timeout=0.5,
                                        faults=FaultPlan(drop=0.3, phases=frozenset({"masked/input"})), fault_seed=1),
    "masked 4.2, a second session refused": dict(dependence="4.2", engine="masked", timeout=3.0,
                                                 attacks=["difference-secure-sum"]),
    "masked 4.2 on 3 shards, a party crashes": dict(
        dependence="4.2", engine="masked", timeout=1.0, on_dropout="exclude", faults=FaultPlan(crash={13: 3}),
        runtime=MemoryRuntime(shards=3)),
    "masked-sparse 4.2 on 3 shards, shares dropped": dict(
        dependence="4.2", secure_sum="masked-sparse", timeout=0.5, on_dropout="exclude", fault_seed=2,
        faults=FaultPlan(drop=0.05, phases=frozenset({"masked/share-keys"})), runtime=MemoryRuntime(shards=3)),
    "masked 4.3, budgets apart": dict(dependence="4.3", engine="masked", timeout=3.0,
                                      budget=[1000.0] * 16 + [500.0] * 8),
}


@pytest.mark.parametrize("alone", ALONE)
@pytest.mark.parametrize("case", list(CASES))
def test_a_cohorts_sum_leaves_every_party_where_its_own_path_would(data: Dataset, monkeypatch: pytest.MonkeyPatch,
                                                                  case: str, alone: str) -> None:
    _same(_run(data, monkeypatch, alone=None, **CASES[case]), _run(data, monkeypatch, alone=alone, **CASES[case]))


def test_a_clean_sum_keeps_the_members_in_their_cohort(data: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    build = PartyShard._build

    def counted(self: PartyShard, rows: np.ndarray) -> None:
        built.extend(rows.tolist())
        build(self, rows)

    monkeypatch.setattr(PartyShard, "_build", counted)
    for alone, during in ((None, []), (ALONE[0], list(range(N))), (ALONE[1], list(range(N)))):
        built.clear()
        sim = _run(data, monkeypatch, alone=alone, **CASES["masked-sparse 4.2"])
        assert not isinstance(sim, str)
        # together: no party built in the run (each committed, ran and closed its sum in its cohort);
        # alone: every party built to decide on its own
        assert sorted(set(built)) == during
        assert all(set(_sessions(p.accountant).values()) == {"done"} for p in sim.parties)  # (built here, to read)


# ---------------------------------------------------------------------- at the shard
M = 4


async def _shard_case(alone: str | None, script: Any) -> tuple[list[tuple[Any, ...]], list[tuple[int, str, int]]]:
    """``script(shard, broadcast, end)`` on a shard of :data:`M` parties (graph engine, one cohort):
    every party's sessions and errors after it, and the frames the parties sent, in order."""
    data = planted_clusters(M, rng=np.random.default_rng(2)).dataset
    plan = HostingPlan(n=M, schema=data.schema, records=np.asarray(data.codes), seed=5, budgets=(float("inf"),) * M,
                       policy="sequential", accept=tuple(k.KIND for k in PARTY_KINDS), engine=GraphEngine(),
                       fault_seed=5, timeout=50.0)
    sent: list[Frame] = []
    uncaught: list[dict[str, Any]] = []  # (an error in a callback of the loop: logged, never raised)
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: uncaught.append(context))
    with pytest.MonkeyPatch.context() as patch:
        _alone(patch, alone)
        shard = PartyShard(plan.setup(range(M)), sent.append)
        shard.register(directory([(range(M), shard.public_keys())], M))
        task = asyncio.create_task(shard.serve())
        await asyncio.sleep(0)

        async def broadcast(msg: Message, to: range | list[int] = range(M)) -> None:
            for p in to:
                shard.deliver(Frame(CONTROLLER, p, "dependence", msg.KIND, encode(msg)))
            await asyncio.sleep(0)

        def end(party: int, session: str, error: ProtocolError | None = None) -> None:
            run = next(r for r in shard._sums._runs[party] if r.session == session)
            shard._sums._end(run, error)  # (as its program's end would)

        await script(shard, broadcast, end)
        shard.stop()
        await task
        report = ShardReport.of(shard)  # (what a runtime hands back: the cohorts' state as they hold it)
        states = [_state(report.summary(p)) for p in range(M)]
        assert states == [_state(shard.parties[p]) for p in range(M)]  # (and each built on its own)
    assert uncaught == []
    return states, [(f.src, f.phase, f.kind) for f in sent]


def _state(party: Any) -> tuple[Any, ...]:
    """A party's sessions, errors (in order), status, ledger, released values and draws."""
    return (tuple(party.accountant.session_state(s) for s in ("s1", "s2")), tuple(party.errors), party.status,
            party.accountant.ledger.releases, tuple(party.released_values), party.draws)


def _commit(rid: int, session: str, units: tuple[tuple[int, ...], ...]) -> SecureRelease:
    return SecureRelease(rid, f"dependence{rid}", session, units, units, True)


async def _two_sessions(broadcast: Any) -> None:
    await broadcast(_commit(1, "s1", ((0, 1),)))
    await broadcast(SecureSumStart(1, "s1", "graph", roster_runs(range(M))))
    await broadcast(_commit(2, "s2", ((2, 3),)))
    await broadcast(SecureSumStart(2, "s2", "graph", roster_runs(range(M))))


async def _done_then_failed(shard: PartyShard, broadcast: Any, end: Any) -> None:
    await _two_sessions(broadcast)
    end(0, "s1")  # party 0 is done with s1, the others still run it
    end(0, "s2", ProtocolError("round timed out"))  # then its side of s2 fails: it leaves, done with s1
    for p in range(1, M):
        end(p, "s1")


async def _read_in_between(shard: PartyShard, broadcast: Any, end: Any) -> None:
    await _two_sessions(broadcast)
    end(0, "s2")
    end(1, "s1")
    shard.cohorts()  # a read while some are done: those still running leave, each as it stands
    for p in (1, 2, 3):
        end(p, "s2")


async def _stopped(shard: PartyShard, broadcast: Any, end: Any) -> None:
    await broadcast(_commit(1, "s1", ((0, 1),)))
    await broadcast(SecureSumStart(1, "s1", "graph", roster_runs(range(M))))
    end(1, "s1")  # the others are stopped with the host, running


async def _without_a_member(shard: PartyShard, broadcast: Any, end: Any) -> None:
    await broadcast(_commit(1, "s1", ((0, 1),)))
    await broadcast(SecureSumStart(1, "s1", "graph", roster_runs([0, 1, 3])))  # party 2 refuses it


async def _restarted_and_early(shard: PartyShard, broadcast: Any, end: Any) -> None:
    await broadcast(SecureSumStart(1, "s1", "graph", roster_runs(range(M))))  # before its commitment: refused
    await broadcast(_commit(1, "s1", ((0, 1),)))
    await broadcast(SecureSumStart(1, "s1", "graph", roster_runs(range(M))))
    await broadcast(SecureSumStart(1, "s1", "graph", roster_runs(range(M))), [1, 2])  # a second start: refused
    for p in range(M):
        end(p, "s1")


async def _both_failed_in_a_turn(shard: PartyShard, broadcast: Any, end: Any) -> None:
    await _two_sessions(broadcast)
    for p in range(1, M):
        end(p, "s1")
        end(p, "s2")
    end(0, "s2", ProtocolError("shares did not open"))  # the last side of both sessions fails, s2's first
    end(0, "s1", ProtocolError("round timed out"))


async def _started_by_some(shard: PartyShard, broadcast: Any, end: Any) -> None:
    await broadcast(_commit(1, "s1", ((0, 1),)))
    await broadcast(SecureSumStart(1, "s1", "graph", roster_runs(range(M))), [0, 1, 2])  # party 3: committed
    for p in (0, 1):
        end(p, "s1")
    shard.cohorts()
    end(2, "s1")


@pytest.mark.parametrize("script", [_done_then_failed, _read_in_between, _stopped, _without_a_member,
                                    _restarted_and_early, _both_failed_in_a_turn, _started_by_some])
def test_at_the_shard_every_party_ends_as_on_its_own_path(script: Any) -> None:
    together = asyncio.run(_shard_case(None, script))
    for alone in ALONE:
        assert together == asyncio.run(_shard_case(alone, script))


async def test_a_cohort_starts_a_sum_only_as_each_member_would_and_else_changes_nothing() -> None:
    data = planted_clusters(M, rng=np.random.default_rng(2)).dataset
    engine = GraphEngine()
    plan = HostingPlan(n=M, schema=data.schema, records=np.asarray(data.codes), seed=5, budgets=(float("inf"),) * M,
                       policy="sequential", accept=tuple(k.KIND for k in PARTY_KINDS), engine=engine,
                       fault_seed=5, timeout=50.0)
    shard = PartyShard(plan.setup(range(M)), [].append)
    shard.register(directory([(range(M), shard.public_keys())], M))
    commit = _commit(1, "s1", ((0, 1),))
    for p in range(M):
        shard.deliver(Frame(CONTROLLER, p, "dependence", commit.KIND, encode(commit)))
    (cohort,) = shard.cohorts()
    sums, signers, registry = shard._cohort_sums, shard._signers, shard._registry
    book, network = shard._book, shard.network
    everyone = SecureSumStart(1, "s1", "graph", roster_runs(range(M)))

    def start(msg: SecureSumStart = everyone, *, engine: Any = engine, signers: Any = signers,
              registry: Any = registry) -> dict[int, Any] | None:
        return sums.start(cohort, msg, engine, signers, registry, book, network)

    def unchanged() -> bool:
        return cohort.accountant.session_state("s1") == "committed" and sorted(sums._held["s1"]) == list(range(M))

    assert start() is None and unchanged()  # the host is not serving: each refuses on its own
    shard._sums.serving = True
    assert start(SecureSumStart(1, "s1", "masked", roster_runs(range(M)))) is None and unchanged()  # another engine
    assert start(engine=None) is None and unchanged()  # no engine agreed
    assert start(signers={i: s for i, s in signers.items() if i != 2}) is None and unchanged()  # a member without keys
    assert start(registry=None) is None and unchanged()  # no key directory
    assert start(SecureSumStart(1, "s1", "graph", roster_runs([0, 1, 3]))) is None and unchanged()  # 2 not in it
    assert start(SecureSumStart(1, "s1", "graph", roster_runs([0, 1, 2, 3, 9]))) is None and unchanged()  # party 9?
    inputs, k, digest = sums._held["s1"][3]
    sums._held["s1"][3] = (inputs, k, b"another request")
    assert start() is None and unchanged()  # (members committed to two requests)
    sums._held["s1"][3] = (inputs, k, digest)
    minimum, cohort.accountant.min_roster = cohort.accountant.min_roster, M + 1
    assert start() is None and unchanged()  # a roster below the members' own minimum: their accountant refuses it
    cohort.accountant.min_roster = minimum
    programs = start()
    assert programs is not None and sorted(programs) == list(range(M))
    assert cohort.accountant.session_state("s1") == "running" and "s1" not in sums._held
    assert start() is None  # started once: a second start is each member's to refuse
    shard._sums.serving = False


def test_the_members_whose_side_fails_leave_their_cohort_together(data: Dataset, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    builds: list[list[int]] = []
    build = PartyShard._build

    def counted(self: PartyShard, rows: np.ndarray) -> None:
        if rows.size:
            builds.append(rows.tolist())
        build(self, rows)

    monkeypatch.setattr(PartyShard, "_build", counted)
    sim = _run(data, monkeypatch, alone=None, **CASES["masked-sparse 4.2, shares dropped"])
    assert not isinstance(sim, str)
    failed = [p.index for p in sim.parties if p.errors]  # (the parties read: built here, after the run's builds)
    assert len(failed) > 1 and builds[0] == failed  # one build for all of them (a split copies a cohort's columns)
