"""parties.simulate sets a run up from the program's plan: the secure sum and the mesh it needs,
a program of one's own held to the plan it declares, a user's topology enforced, a user's
protocol and engine registered by name."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.distributions import ProductDistribution
from mprr.errors import ConfigurationError, ProtocolError
from mprr.protocols.local import run_local
from mprr.protocols.steps import MatrixSpec, Release
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.simulate import simulate

SEED = 3
SECURE_N = 30


@pytest.fixture(scope="module")
def small() -> Dataset:
    return planted_clusters(SECURE_N, rng=np.random.default_rng(8), strength=0.8).dataset


def test_the_run_is_set_up_from_the_plan_and_records_it(small) -> None:
    """4.3 with the paper engine: the plan's secure sum of Σ_{i<j} |A_i||A_j| cells needs an
    engine, and the paper engine's direct links a full mesh."""
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.3")
    plan = sim.options["plan"]
    sizes = small.sizes
    cells = sum(sizes[i] * sizes[j] for i in range(len(sizes)) for j in range(i + 1, len(sizes)))
    assert [(p["phase"], p["kind"], p.get("cells")) for p in plan["phases"]] == [
        ("dependence", "secure-sum", cells), ("clusters", "release", None)]
    assert plan["needs"] == ["engine", "mesh"]
    n = small.n
    assert sim.options["topology"] == f"{n * (n - 1) // 2} party links"
    plain = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1)
    assert plain.options["plan"]["needs"] == [] and plain.options["topology"] == "star"


def _two_steps(schema, *, epsilon):  # type: ignore[no-untyped-def]
    """Releases attribute 0, then attribute 1 if most released codes are 0, else attribute 2."""
    got = yield Release("first", ((0,),), (MatrixSpec.grr(epsilon),))
    chosen = 1 if float(np.mean(got.data.codes[:, 0] == 0)) > 0.75 else 2
    got = yield Release("then", ((chosen,),), (MatrixSpec.grr(epsilon),))
    return rr_independent_result(got, schema)


def rr_independent_result(got, schema):  # type: ignore[no-untyped-def]
    from mprr.protocols.result import release_result

    uniform = [np.full(s, 1.0 / s) for s in schema.sizes]
    return release_result("own", n=got.n, parameters={}, schema=schema, clusters=None,
                          estimate=ProductDistribution(tuple((j,) for j in range(schema.m)), uniform, schema.sizes),
                          releases=(got.data,), postprocessing="none")


def test_a_program_of_ones_own_runs_on_its_declared_plan_and_is_held_to_it(small) -> None:
    from mprr.protocols.plan import PhasePlan, Plan, declares

    with pytest.raises(ConfigurationError, match=r"declares no plan and its steps depend on the data"):
        simulate(small, _two_steps, seed=SEED, timeout=2.0, epsilon=5.0)

    @declares(lambda schema, **p: Plan((PhasePlan.release("first", ((0,),)), PhasePlan.release("then"))))
    def declared_steps(schema, *, epsilon):  # type: ignore[no-untyped-def]
        return (yield from _two_steps(schema, epsilon=epsilon))

    sim = simulate(small, declared_steps, seed=SEED, timeout=2.0, epsilon=5.0)
    fast = run_local(declared_steps, small, rng=PartyStreams(SEED, small.n), epsilon=5.0)
    assert np.array_equal(sim.result.releases[0].codes, fast.releases[0].codes)

    @declares(lambda schema, **p: Plan((PhasePlan.release("first", ((0,),)), PhasePlan.release("then", ((1,),)))))
    def misdeclared_steps(schema, *, epsilon):  # type: ignore[no-untyped-def]
        return (yield from _two_steps(schema, epsilon=epsilon))

    assert fast.releases[0].units == ((2,),)  # what the data chose, not what the next plan declares
    with pytest.raises(ProtocolError, match=r"step 2 of the program is release 'then' \(1 units \[\(2,\)\], families \['grr'\]\) but "
                                            r"its plan declares release 'then' \(1 units \[\(1,\)\]\)"):
        simulate(small, misdeclared_steps, seed=SEED, timeout=2.0, epsilon=5.0)



def test_memory_takes_a_user_topology_for_a_secure_sum_and_enforces_it() -> None:
    # graph-direct sends shares along its own neighbour graph: a user graph holding those links
    # gives the default run's result; a graph without them (here no party link) is refused
    import networkx as nx

    from parties.secure.registry import make_engine

    data = planted_clusters(12, rng=np.random.default_rng(3)).dataset
    params = dict(seed=2, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2", secure_sum="graph-direct")
    default = simulate(data, "RR-Clusters", **params)
    engine = make_engine("graph-direct")
    ctx = engine.context(range(12), 1)
    graph = nx.Graph((i, j) for i in ctx.neighbours for j in ctx.neighbours[i])
    given = simulate(data, "RR-Clusters", topology=graph, **params)
    assert given.result.clusters == default.result.clusters
    for a, b in zip(given.result.releases, default.result.releases):
        assert all(np.array_equal(x, y) for x, y in zip(a.counts or (), b.counts or ()))
    assert given.options["topology"] == f"{graph.number_of_edges()} party links"
    star = nx.Graph()
    star.add_nodes_from(range(12))
    with pytest.raises(ConfigurationError, match="topology lacks some links of the communication graph"):
        simulate(data, "RR-Clusters", topology=star, **params)



def test_a_users_protocol_registered_by_name_runs_on_the_actors(own_plugin) -> None:  # noqa: ANN001
    data = planted_clusters(120, rng=np.random.default_rng(11)).dataset
    pairs = [[0, 1], [3, 4]]
    fast = run_local(own_plugin.pairs_steps, data, rng=PartyStreams(7, data.n), pairs=((0, 1), (3, 4)), epsilon=2.0)
    sim = simulate(data, "pairs", seed=7, pairs=pairs, epsilon=2.0)  # by name, on the memory runtime
    np.testing.assert_array_equal(fast.releases[0].codes, sim.result.releases[0].codes)
    assert sim.result.protocol == "pairs" and sim.options["protocol"] == "pairs"
    assert fast.epsilon() == sim.result.epsilon() == 2.0 and max(ledger.total("sequential") for ledger in sim.ledgers) == 2.0
    # its secure-sum variant, through a secure-sum engine registered by the same plugin
    summed = simulate(data, "pair_sums", seed=7, pairs=pairs, epsilon=2.0, engine="ring")
    local = run_local(own_plugin.pair_sums_steps, data, rng=PartyStreams(7, data.n), pairs=((0, 1), (3, 4)),
                      epsilon=2.0)
    for ours, theirs in zip(local.releases[0].counts, summed.result.releases[0].counts):
        np.testing.assert_array_equal(ours, theirs)  # the ring's sum is the fast path's tally
    assert "SealedShares" in summed.traffic.by_kind and summed.result.epsilon() == 2.0
    params = own_plugin.PairsParameters(pairs=pairs, epsilon=2.0)
    again = simulate(data, "pairs", seed=7, parameters=params)  # the parameter object instead of keywords
    np.testing.assert_array_equal(again.result.releases[0].codes, sim.result.releases[0].codes)
    with pytest.raises(ConfigurationError, match=r"give the protocol's parameters in the parameter object, not also "
                                                 r"as \['epsilon'\]"):
        simulate(data, "pairs", seed=7, parameters=params, epsilon=1.0)
