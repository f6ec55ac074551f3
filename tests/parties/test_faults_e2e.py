"""Fault injection end to end: dropped messages and crashed parties end in a clear error or a
documented degraded result within the timeout; nothing hangs; nothing wrong is reported.

Every run is on the virtual clock (``tests/virtual_clock.py``): its 0.1-0.3 s round timeouts
pass in virtual time, so the outcome does not depend on the machine's speed or load."""

from __future__ import annotations

import asyncio

import networkx as nx
import numpy as np
import pytest

from mprr.data import Dataset
from mprr.errors import PartyDropped, ProtocolError, RoundTimeout
from mprr.protocols import rr_clusters, rr_independent
from mprr.protocols.local import run_local
from mprr.protocols.registry import lookup
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from mprr.protocols.steps import MatrixSpec
from parties.wire.codec import encode
from parties.faults import FaultPlan
from parties.wire.messages import RandomizedValues
from parties.transport import CONTROLLER
from parties.wire.requests import ReleaseRequest
from parties.simulate import SimulationResult, simulate_async
from parties.traffic import LatencyModel
from tests.virtual_clock import run_virtual

N = 60
SEED = 5
CLUSTERS = dict(p=0.7, Tv=60, Td=0.1)
pytestmark = pytest.mark.timeout(30)


def simulate(data: Dataset, protocol: str, **options: object) -> SimulationResult:
    """:func:`parties.simulate.simulate` on the virtual clock."""
    return run_virtual(simulate_async(data, protocol, **options))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(N, rng=np.random.default_rng(8), strength=0.8).dataset


def test_silent_party_ends_the_run_with_a_round_timeout(data) -> None:
    faults = FaultPlan(drop=1.0, senders=frozenset({3}))
    with pytest.raises(RoundTimeout, match="did not answer request 1 within 0.2 s: party 3") as info:
        simulate(data, "RR-Clusters", seed=SEED, timeout=0.2, faults=faults, **CLUSTERS)
    assert info.value.missing == (3,) and info.value.phase == "dependence"


def test_a_round_timeout_lasts_exactly_its_virtual_time(data) -> None:
    # on the virtual clock the silent party costs exactly one round timeout, never real time
    async def timed() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(RoundTimeout):
            await simulate_async(data, "RR-Independent", seed=SEED, timeout=0.25, p=0.5,
                                 faults=FaultPlan(drop=1.0, senders=frozenset({3})))
        return loop.time() - start

    assert run_virtual(timed()) == pytest.approx(0.25)


def test_crashed_party_ends_the_run_with_party_dropped(data) -> None:
    with pytest.raises(PartyDropped, match="party 2") as info:
        simulate(data, "RR-Clusters", seed=SEED, timeout=0.2, faults=FaultPlan(crash={2: 2}), **CLUSTERS)
    assert info.value.parties == (2,)
    assert isinstance(info.value.__cause__, RoundTimeout) and info.value.__cause__.phase == "clusters"


def test_crashed_controller_ends_the_run(data) -> None:
    with pytest.raises(PartyDropped, match="controller has crashed"):
        simulate(data, "RR-Independent", seed=SEED, timeout=0.2, p=0.5, faults=FaultPlan(crash={CONTROLLER: 1}))


def test_crash_with_exclusion_gives_the_documented_degraded_result(data) -> None:
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=0.2, on_dropout="exclude",
                   faults=FaultPlan(crash={2: 2, 7: 1}), **CLUSTERS)
    assert sim.degraded and sim.crashed == (2, 7)
    assert sorted(sim.excluded) == [2, 7]
    assert sim.excluded[7].startswith("dependence: silent") and sim.excluded[2].startswith("clusters: silent")
    assert sim.result.n == N - 2
    # every other party released exactly its fast-path values: the estimate uses true releases only
    fast = rr_clusters(data, rng=PartyStreams(SEED, N), **CLUSTERS)
    dep_rows = [i for i in range(N) if i != 7]
    assert np.array_equal(sim.result.releases[0].codes, fast.releases[0].codes[dep_rows])
    # phase 2 uses the parties that answered it, row k = k-th of them, as each of them sent it
    rows = [i for i in range(N) if i not in (2, 7)]
    sent = {e.src: e.message.codes for e in sim.view_log if e.phase == "clusters"}
    assert sorted(sent) == rows
    assert np.array_equal(sim.result.releases[1].codes, np.stack([sent[i] for i in rows]))
    # a party that crashes while sending has spent ε for a release the controller never got
    assert len(sim.ledgers[7]) == data.m and len(sim.ledgers[2]) > data.m


@pytest.mark.parametrize("fault_seed", [1, 2])
def test_dropped_messages_with_retries_release_exactly_the_fast_path_data(data, fault_seed) -> None:
    # A retried request is answered by replay (same values, no new spending), so losses
    # change nothing but the traffic.
    faults = FaultPlan(drop=0.1)
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=0.1, retries=8, faults=faults,
                   fault_seed=fault_seed, **CLUSTERS)
    fast = rr_clusters(data, rng=PartyStreams(SEED, N), **CLUSTERS)
    assert sim.traffic.dropped > 0 and not sim.degraded
    assert sim.result.clusters == fast.clusters
    for a, b in zip(sim.result.releases, fast.releases):
        assert np.array_equal(a.codes, b.codes)
    assert all(ledger == fast.ledger for ledger in sim.ledgers)
    assert sim.traffic.messages > 4 * N  # the retries are counted


def test_duplicated_delayed_and_reordered_messages_change_nothing(data) -> None:
    faults = FaultPlan(duplicate=0.3, delay=0.3, reorder=0.3, max_delay=0.005)
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=1.0, faults=faults, **CLUSTERS)
    fast = rr_clusters(data, rng=PartyStreams(SEED, N), **CLUSTERS)
    t = sim.traffic
    assert t.duplicated > 0 and t.delayed > 0 and t.reordered > 0
    for a, b in zip(sim.result.releases, fast.releases):
        assert np.array_equal(a.codes, b.codes)
    assert all(p.draws == sim.parties[0].draws for p in sim.parties)  # a duplicate is a replay


def test_without_retries_a_lost_reply_fails_instead_of_reporting_a_partial_result(data) -> None:
    faults = FaultPlan(drop=0.05)
    with pytest.raises(RoundTimeout) as info:
        simulate(data, "RR-Independent", seed=SEED, timeout=0.1, p=0.5, faults=faults, fault_seed=3)
    assert len(info.value.missing) >= 1


def test_latency_model_gives_simulated_time_per_round(data) -> None:
    latency = LatencyModel(latency=0.01, bandwidth=1e6)
    sim = simulate(data, "RR-Independent", seed=SEED, timeout=2.0, p=0.5, latency=latency)
    m = data.m
    req = len(encode(ReleaseRequest.build(1, "attributes", [(j,) for j in range(m)],
                                          [MatrixSpec.keep_or_uniform(0.5)] * m)))
    rep = len(encode(RandomizedValues(1, np.zeros(m, dtype=np.int64))))
    assert sim.traffic.rounds == 2
    assert sim.traffic.simulated_time == pytest.approx(0.02 + (req + rep) / 1e6)
    fast = rr_independent(data, p=0.5, rng=PartyStreams(SEED, N))
    assert np.array_equal(sim.result.releases[0].codes, fast.releases[0].codes)


def test_topology_without_a_link_to_a_party_is_a_clear_error(data) -> None:
    graph = nx.Graph()
    graph.add_nodes_from(range(N))
    graph.add_edges_from((CONTROLLER, i) for i in range(N) if i != 4)
    with pytest.raises(ProtocolError, match="controller cannot send to party 4"):
        simulate(data, "RR-Independent", seed=SEED, timeout=0.5, p=0.5, topology=graph)


def test_crash_inside_the_paper_secure_sum_is_party_dropped() -> None:
    small = planted_clusters(20, rng=np.random.default_rng(8)).dataset
    # party 5 commits (send 1: Ack), then crashes on its first share: the paper's sum stalls
    # for everybody (main paper 4.2 has no dropout recovery) and no count is returned
    with pytest.raises(PartyDropped, match="no count is returned") as info:
        simulate(small, "RR-Clusters", seed=SEED, timeout=0.3, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                 faults=FaultPlan(crash={5: 2}))
    assert 5 in info.value.parties


def test_masked_secure_sum_survives_a_dropout_with_a_documented_result() -> None:
    small = planted_clusters(20, rng=np.random.default_rng(8)).dataset
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=0.3, p=0.7, Tv=60, Td=0.1, dependence="4.3",
                   engine="masked", on_dropout="exclude", faults=FaultPlan(crash={5: 3}))
    assert sim.degraded and 5 in sim.excluded
    assert sim.result.details["secure_sum"]["contributors"] == 19
    total = sum(float(c.sum()) for c in sim.result.releases[0].counts[:1])
    assert total == 19  # the tallies count exactly the 19 contributors: never a wrong count
    assert sim.result.n == 19


def test_masked_secure_sum_dropout_fails_under_the_fail_policy() -> None:
    small = planted_clusters(20, rng=np.random.default_rng(8)).dataset
    with pytest.raises(PartyDropped, match="dropped out of the secure sum"):
        simulate(small, "RR-Clusters", seed=SEED, timeout=0.3, p=0.7, Tv=60, Td=0.1, dependence="4.3",
                 engine="masked", faults=FaultPlan(crash={5: 3}))


@pytest.mark.parametrize("faults", [FaultPlan(drop=0.1), FaultPlan(duplicate=0.3, delay=0.3, reorder=0.3, max_delay=0.005)],
                         ids=["drop", "duplicate-delay-reorder"])
def test_lost_or_repeated_report_requests_change_nothing_but_the_traffic(data, faults) -> None:
    # a re-sent or duplicated ReportRequest gets the party's same reply: no new draw, no new entry
    params = dict(epsilon=2.0, oracle="oue")
    sim = simulate(data, "SMP", seed=SEED, timeout=0.1, retries=8, faults=faults, fault_seed=3, **params)
    fast = run_local(lookup("SMP").program, data, lookup("SMP").bind(params), rng=PartyStreams(SEED, N))
    assert not sim.degraded and sim.traffic.messages > 2 * N  # the faults struck, the retries / copies are counted
    assert np.array_equal(sim.result.releases[0].codes, fast.releases[0].codes)
    assert all(ledger == fast.ledger for ledger in sim.ledgers)
    assert {p.draws for p in sim.parties} == {1 + max(data.sizes)}  # one block each: OUE needs max |A| uniforms
