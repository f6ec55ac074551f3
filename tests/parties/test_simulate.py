"""Tests for parties.simulate: the actor path reproduces the fast path; traffic closed forms."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from mprr.privacy import summarize
from mprr.data import Dataset
from mprr.distributions import DenseDistribution, ProductDistribution, WeightedSample
from mprr.errors import ConfigurationError, ProtocolError
from mprr.matrices import keep_or_uniform
from mprr.protocols import (
    ProtocolResult,
    lambda_protocol,
    rr_adjustment,
    rr_clusters,
    rr_ind_joint,
    rr_independent,
    rr_joint,
)
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from mprr.protocols.registry import PROTOCOLS, lookup
from mprr.protocols.steps import MatrixSpec, Release
from parties.wire.codec import encode
from parties.controller import ReleaseRefused
from mprr.protocols.local import run_local
from mprr.protocols.oracle_reports import ReportedData, reporters
from mprr.protocols.steps import OracleSpec, Report
from parties.wire.messages import OracleReport, RandomizedValues
from parties.transport import CONTROLLER
from parties.wire.requests import ReleaseRequest, ReportRequest
from parties.simulate import SimulationResult, simulate, simulate_async

N = 240
SEED = 3


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(N, rng=np.random.default_rng(11), strength=0.8).dataset


def same_estimate(a: object, b: object) -> None:
    assert type(a) is type(b)
    if isinstance(a, ProductDistribution):
        assert a.clusters == b.clusters  # type: ignore[attr-defined]
        for x, y in zip(a.factors, b.factors):  # type: ignore[attr-defined]
            assert np.array_equal(x, y)
    elif isinstance(a, DenseDistribution):
        assert np.array_equal(a.tensor, b.tensor)  # type: ignore[attr-defined]
    elif isinstance(a, WeightedSample):
        assert np.array_equal(a.codes, b.codes) and np.array_equal(a.weights, b.weights)  # type: ignore[attr-defined]
    else:  # pragma: no cover
        raise AssertionError(f"unexpected estimate {type(a)}")


def assert_same(actor: ProtocolResult, fast: ProtocolResult) -> None:
    """The actor run released exactly the fast path's data, clusters, estimates and ledger."""
    assert actor.protocol == fast.protocol
    assert actor.clusters == fast.clusters
    assert actor.phases == fast.phases
    for a, b in zip(actor.releases, fast.releases):
        assert a.units == b.units and a.unit_sizes == b.unit_sizes
        assert np.array_equal(a.codes, b.codes)
        for x, y in zip(a.counts, b.counts):
            assert np.array_equal(x, y)
        assert a.replayed == b.replayed
    assert actor.ledger == fast.ledger
    same_estimate(actor.estimate, fast.estimate)
    if fast.dependence is not None:
        assert np.array_equal(actor.dependence, fast.dependence)
        assert actor.clustering_trace == fast.clustering_trace
    assert actor.postprocessing == fast.postprocessing
    assert actor.n == fast.n


CASES = [
    ("RR-Independent", dict(p=0.6), lambda d, r: rr_independent(d, p=0.6, rng=r)),
    ("RR-Independent", dict(epsilon_per_attribute=[1.0, 2.0, 0.5, 1.5, 1.0, 2.0, 1.0, 0.7]),
     lambda d, r: rr_independent(d, epsilon_per_attribute=[1.0, 2.0, 0.5, 1.5, 1.0, 2.0, 1.0, 0.7], rng=r)),
    ("RR-Independent", dict(matrices=[keep_or_uniform(s, 0.5) for s in (4, 3, 5, 2, 6, 3, 8, 2)],
                            postprocess="project-simplex"),
     lambda d, r: rr_independent(d, matrices=[keep_or_uniform(s, 0.5) for s in d.sizes], rng=r,
                                 postprocess="project-simplex")),
    ("RR-Joint", dict(p=0.8), lambda d, r: rr_joint(d, p=0.8, rng=r)),
    ("RR-Clusters", dict(p=0.7, Tv=60, Td=0.1),
     lambda d, r: rr_clusters(d, p=0.7, Tv=60, Td=0.1, rng=r)),
    ("RR-Clusters", dict(epsilon_per_attribute=1.2, Tv=30, Td=0.05, tables="randomized", postprocess="ibu"),
     lambda d, r: rr_clusters(d, epsilon_per_attribute=1.2, Tv=30, Td=0.05, tables="randomized", postprocess="ibu", rng=r)),
    ("RR-Independent+Adjustment", dict(p=0.6),
     lambda d, r: rr_adjustment(rr_independent(d, p=0.6, rng=r))),
    ("RR-Clusters+Adjustment", dict(p=0.7, Tv=60, Td=0.1, tol=1e-8),
     lambda d, r: rr_adjustment(rr_clusters(d, p=0.7, Tv=60, Td=0.1, rng=r), tol=1e-8)),
    ("RR-Ind-Joint", dict(p=0.6, groups=[(0, 1, 2), (3, 4)]),
     lambda d, r: rr_ind_joint(d, p=0.6, groups=[(0, 1, 2), (3, 4)], rng=r)),
    ("lambda-randomization", dict(lambdas=[0.5] * 8),
     lambda d, r: lambda_protocol(d, [0.5] * 8, rng=r)),
    ("lambda-randomization", dict(lambdas=[0.9, 0.2, 0.5], min_bits=1.0),
     lambda d, r: lambda_protocol(d, [0.9, 0.2, 0.5], min_bits=1.0, rng=r)),
]
SMALL = {3, 10}  # cases run on the first three attributes (dense joint domain of 60 cells)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_same_seed_releases_exactly_what_the_fast_path_releases(data, case) -> None:
    protocol, params, fast = CASES[case]
    if case in SMALL:
        data = data.select(list(data.schema.names[:3]))
    sim = simulate(data, protocol, seed=SEED, timeout=5.0, **params)
    assert isinstance(sim, SimulationResult) and not sim.degraded
    assert_same(sim.result, fast(data, PartyStreams(SEED, N)))
    # every party's own ledger holds the releases of the protocol's ledger
    assert all(ledger == sim.result.ledger for ledger in sim.ledgers)


def test_rr_clusters_recovers_planted_clusters_and_replays_singletons(data) -> None:
    sim = simulate(data, "clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.4)
    result = sim.result
    assert result.clusters == ((0, 1, 2), (3, 4), (5,), (6,), (7,))  # the planted clusters
    singles = [j for j, u in enumerate(result.releases[1].units) if len(u) == 1]
    assert singles, "the planted data leave singleton clusters"
    dep, rel = result.releases
    for j in singles:  # replayed: the phase-1 value of that attribute, no new draw
        (a,) = rel.units[j]
        assert np.array_equal(rel.codes[:, j], dep.codes[:, a])
    draws = {p.draws for p in sim.parties}
    assert draws == {dep.codes.shape[1] + len(rel.units) - len(singles)}


def test_different_seeds_release_different_data(data) -> None:
    a = simulate(data, "RR-Independent", seed=1, timeout=5.0, p=0.5).result.releases[0].codes
    b = simulate(data, "RR-Independent", seed=2, timeout=5.0, p=0.5).result.releases[0].codes
    assert not np.array_equal(a, b)


# ---------------------------------------------------------------------- traffic closed forms
def reply_size(k: int) -> int:
    """Encoded RandomizedValues with k codes: header 5 + id 8 + array (1+1+8+8k) + ids 4."""
    return 27 + 8 * k


def test_reply_size_formula_matches_the_codec() -> None:
    for k in (1, 3, 8):
        assert len(encode(RandomizedValues(1, np.zeros(k, dtype=np.int64)))) == reply_size(k)


@pytest.mark.parametrize("n", [50, 120])
def test_rr_independent_traffic_matches_the_closed_form(n: int) -> None:
    # Main paper 3.1 / 4.1: controller O(nm), each party O(m): one request in, m codes out.
    ds = planted_clusters(n, rng=np.random.default_rng(n)).dataset
    m = ds.m
    sim = simulate(ds, "RR-Independent", seed=1, timeout=5.0, p=0.6)
    request = ReleaseRequest.build(1, "attributes", [(j,) for j in range(m)], [MatrixSpec.keep_or_uniform(0.6)] * m)
    req, rep = len(encode(request)), reply_size(m)
    t = sim.traffic
    assert (t.messages, t.bytes, t.delivered, t.rounds) == (2 * n, n * (req + rep), 2 * n, 2)
    assert t.sent_by(CONTROLLER) == (n, n * req)
    assert t.received_by(CONTROLLER) == (n, n * rep)
    for i in range(n):
        assert t.sent_by(i) == (1, rep) and t.received_by(i) == (1, req)
    assert dict(t.by_kind) == {"ReleaseRequest": (n, n * req), "RandomizedValues": (n, n * rep)}
    assert sim.view.messages == n and sim.view.bytes == n * rep


def test_rr_clusters_traffic_matches_the_closed_form(data) -> None:
    # Two rounds trips: m codes (4.1) then one code per cluster (l), i.e. O(m) per party.
    n, m = data.n, data.m
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1)
    clusters = sim.result.clusters
    l = len(clusters)
    req1 = ReleaseRequest.build(1, "dependence", [(j,) for j in range(m)], [MatrixSpec.keep_or_uniform(0.7)] * m)
    eps = sim.result.parameters["attribute_epsilons"]
    specs2 = [MatrixSpec.keep_or_uniform(0.7) if len(c) == 1 else MatrixSpec.cluster_optimal(sum(eps[a] for a in c))
              for c in clusters]
    req2 = ReleaseRequest.build(2, "clusters", clusters, specs2)
    s1, s2 = len(encode(req1)), len(encode(req2))
    r1, r2 = reply_size(m), reply_size(l)
    t = sim.traffic
    assert t.sent_by(CONTROLLER) == (2 * n, n * (s1 + s2))
    assert t.received_by(CONTROLLER) == (2 * n, n * (r1 + r2))
    assert all(t.sent_by(i) == (2, r1 + r2) and t.received_by(i) == (2, s1 + s2) for i in range(n))
    assert (t.messages, t.bytes, t.rounds) == (4 * n, n * (s1 + s2 + r1 + r2), 4)
    assert {p: c.messages for p, c in t.by_phase.items()} == {"dependence": 2 * n, "clusters": 2 * n}


# ---------------------------------------------------------------------- API and errors
def test_registry_names_and_aliases() -> None:
    assert set(PROTOCOLS) == {
        "RR-Independent", "RR-Joint", "RR-Clusters", "RR-Independent+Adjustment", "RR-Clusters+Adjustment",
        "RR-Adjustment", "RR-Ind-Joint", "lambda-randomization", "SPL", "SMP", "RS+FD", "CALM-style",
        "RR-Clusters-Sampled",
    }
    assert lookup("rr_independent").name == "RR-Independent"
    assert lookup("calm").name == "CALM-style" and lookup("rs-fd").name == "RS+FD"
    assert lookup("Clusters + Adjustment".replace(" ", "")).name == "RR-Clusters+Adjustment"
    assert lookup("lambda").name == "lambda-randomization"
    assert lookup("rs_fd").name == "RS+FD" and lookup("clusters-sampled").name == "RR-Clusters-Sampled"


def test_rr_adjustment_alias_takes_a_base(data) -> None:
    sim = simulate(data, "RR-Adjustment", seed=SEED, timeout=5.0, base="RR-Clusters", p=0.7, Tv=60, Td=0.1)
    assert sim.result.protocol == "RR-Clusters+Adjustment"
    with pytest.raises(ConfigurationError, match="base must be one of"):
        simulate(data, "RR-Adjustment", seed=SEED, timeout=5.0, base="RR-Joint", p=0.7)


@pytest.mark.parametrize(
    ("protocol", "options", "match"),
    [
        ("RR-Nothing", {}, "protocol must be one of"),
        ("RR-Independent", {"p": 0.5, "Tv": 3}, r"unknown parameter\(s\) \['Tv'\]"),
        ("RR-Clusters", {"p": 0.5}, r"needs parameter\(s\) \['Td', 'Tv'\]"),
        ("RR-Clusters+Adjustment", {"p": 0.5, "Tv": 9, "Td": 0.1, "base": "RR-Clusters"}, "fixes"),
        ("RR-Independent", {"p": 0.5, "timeout": -1.0}, "timeout must be a finite number > 0, got -1.0"),
        ("RR-Independent", {"p": 0.5, "budget": -1.0}, "budget must be"),
        ("RR-Independent", {"p": 0.5, "policy": "magic"}, "policy must be one of"),
        ("RR-Independent", {"p": 0.5, "on_dropout": "ignore"}, "on_dropout must be one of"),
        ("RR-Independent", {"p": 0.5, "retries": -1}, "retries must be"),
        ("RR-Independent", {"p": 0.5, "attacks": ["steal"]}, "attacks must be among"),
        ("RR-Independent", {"p": 1.5}, r"p must be a finite number > 0 and < 1, got 1.5 \(float\)"),
    ],
)
def test_bad_configuration_is_reported(data, protocol, options, match) -> None:
    with pytest.raises(ConfigurationError, match=match):
        simulate(data, protocol, seed=1, **{"timeout": 2.0, **options})


def test_dataset_must_be_a_dataset() -> None:
    with pytest.raises(ConfigurationError, match="dataset must be a mprr.data.Dataset"):
        simulate(np.zeros((3, 2)), "RR-Independent", seed=1, p=0.5)  # type: ignore[arg-type]


def test_report_is_json_serializable(data) -> None:
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1)
    report = json.loads(json.dumps(sim.to_dict()))
    assert report["protocol"]["protocol"] == "RR-Clusters"
    assert report["traffic"]["messages"] == 4 * N
    assert report["privacy"]["parties"] == N and report["degraded"] is False
    assert report["options"]["seed"] == SEED and report["options"]["budget"] == "inf"
    assert sim.wall_time > 0 and sim.result.timings["wall"] == sim.wall_time
    assert sim.privacy.epsilon.max == pytest.approx(sim.result.epsilon("sequential"))
    parallel = summarize([party.accountant for party in sim.parties], "parallel")
    assert parallel.policy.value == "parallel" and parallel.epsilon.max <= sim.privacy.epsilon.max


def test_privacy_summary_matches_the_result_ledger(data) -> None:
    sim = simulate(data, "RR-Independent", seed=SEED, timeout=5.0, p=0.6)
    eps = sum(keep_or_uniform(s, 0.6).epsilon for s in data.sizes)
    assert sim.privacy.epsilon.min == pytest.approx(eps) and sim.privacy.epsilon.max == pytest.approx(eps)
    assert sim.privacy.releases == N * data.m and sim.privacy.refusals == {}
    assert math.isclose(sim.result.epsilon(), eps)


# ---------------------------------------------------------------------- 4.2 / 4.3 via secure sums
SECURE_N = 30


@pytest.fixture(scope="module")
def small() -> Dataset:
    return planted_clusters(SECURE_N, rng=np.random.default_rng(8), strength=0.8).dataset


@pytest.mark.parametrize("engine", ["paper", "graph", "graph-direct", "masked", "masked-sparse"])
@pytest.mark.parametrize("dependence", ["4.2", "4.3"])
def test_secure_sum_dependences_equal_the_fast_path(small, dependence, engine) -> None:
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1,
                   dependence=dependence, engine=engine)
    fast = rr_clusters(small, p=0.7, Tv=60, Td=0.1, dependence=dependence, rng=PartyStreams(SEED, SECURE_N))
    dep_actor, dep_fast = sim.result.releases[0], fast.releases[0]
    assert dep_actor.codes is None  # the controller only learns the tallies of the secure sum
    assert dep_actor.units == dep_fast.units and dep_actor.exact == dep_fast.exact == (dependence == "4.2")
    for x, y in zip(dep_actor.counts, dep_fast.counts):
        assert np.array_equal(x, y)
    assert np.array_equal(sim.result.dependence, fast.dependence)
    assert sim.result.clusters == fast.clusters
    assert np.array_equal(sim.result.releases[1].codes, fast.releases[1].codes)
    same_estimate(sim.result.estimate, fast.estimate)
    assert sim.result.ledger == fast.ledger and all(ledger == fast.ledger for ledger in sim.ledgers)
    assert sim.result.details["secure_sum"]["engine"] == engine.split("-")[0]  # graph-direct is a graph engine, masked-sparse a masked one
    # in the dependence phase the controller saw commitments and secure-sum messages only
    kinds = {e.kind for e in sim.view_log if e.phase != "clusters"}
    assert "RandomizedValues" not in kinds and "Ack" in kinds
    assert {e.kind for e in sim.view_log if e.phase == "clusters"} == {"RandomizedValues"}


def test_exact_pairs_carry_no_dp_guarantee(small) -> None:
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2")
    assert sim.privacy.no_dp_guarantee and sim.privacy.exact_releases == SECURE_N * len(sim.result.releases[0].units)
    with pytest.raises(ReleaseRefused, match=r"exact release: no DP guarantee") as info:
        simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2", budget=100.0)
    assert info.value.phase == "dependence" and len(info.value.refusals) == SECURE_N


def test_randomized_pairs_count_once_per_attribute_under_unlinkable_pairs(small) -> None:
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.3",
                   engine="graph", policy="unlinkable-pairs")
    eps = sim.result.parameters["attribute_epsilons"]
    by_phase = sim.ledgers[0].by_phase("unlinkable-pairs")
    # main paper 4.3: each attribute counted once, at its largest share of a pair matrix's own
    # ε (ε_i + ε_j, split equally: the party books nothing the controller claims)
    m = small.m
    split = sum(max((eps[a] + eps[b]) / 2 for b in range(m) if b != a) for a in range(m))
    assert by_phase["dependence"] == pytest.approx(split) and split >= sum(eps) - 1e-12
    assert sim.ledgers[0].by_phase("sequential")["dependence"] == pytest.approx((small.m - 1) * sum(eps))


@pytest.mark.parametrize("seed", ["x", 1.5, True, -1, None])
def test_seed_must_be_an_integer(small, seed) -> None:
    """Before: "x" raised a raw ValueError, 1.5 ran as seed 1, True was accepted."""
    with pytest.raises(ConfigurationError, match=rf"seed must be an integer >= 0, got {re.escape(repr(seed))}"):
        simulate(small, "RR-Independent", seed=seed, timeout=1.0, p=0.5)


def test_unknown_engine_is_refused(small) -> None:
    with pytest.raises(ConfigurationError, match="engine must be one of"):
        simulate(small, "RR-Clusters", seed=SEED, timeout=1.0, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                 engine="magic")


def test_an_engine_without_a_secure_sum_in_the_plan_is_refused(small) -> None:
    with pytest.raises(ConfigurationError, match=r"engine = 'masked' has no effect: the plan of 'RR-Clusters' with "
                                                 r"these parameters has no secure sum \(release 'dependence'"):
        simulate(small, "RR-Clusters", seed=SEED, timeout=1.0, p=0.7, Tv=60, Td=0.1, engine="masked")
    with pytest.raises(ConfigurationError, match=r"engine = 'paper' has no effect: the plan of 'RR-Independent'"):
        simulate(small, "RR-Independent", seed=SEED, timeout=1.0, p=0.7, secure_sum="paper")


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


def test_secure_dependence_traffic_is_commit_start_plus_the_engine_closed_form(small) -> None:
    # dependence phase: n SecureRelease + n Ack + n SecureSumStart, then the paper engine's
    # own closed form (main paper 4.2: per party (n-1) shares + n broadcasts of L cells)
    from parties.wire.messages import Ack
    from parties.wire.requests import SecureRelease, SecureSumStart
    from parties.secure.agreement import agreed_session, request_digest
    from parties.secure.paper import PaperEngine

    n, m = small.n, small.m
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2")
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    cells = sum(small.sizes[i] * small.sizes[j] for i, j in pairs)
    commit = SecureRelease(1, "dependence", "dependence/1", tuple(pairs), tuple(pairs), True)
    start = SecureSumStart(1, "dependence/1", "paper", ((0, n),))
    expected = n * (len(encode(commit)) + len(encode(Ack(1))) + len(encode(start)))
    assert sim.traffic.by_phase["dependence"][:2] == (3 * n, expected)
    # the engine runs under the agreed session id: a digest of the commitment and the start
    session = agreed_session(request_digest(commit), start)
    cost = PaperEngine(round_timeout=5.0).cost(PaperEngine().context(range(n), cells, session=session))
    engine = [c for p, c in sim.traffic.by_phase.items() if p.startswith("paper/")]
    assert (sum(c.messages for c in engine), sum(c.bytes for c in engine)) == (cost.messages, cost.bytes)


@pytest.mark.parametrize("name", ["graph-direct", "masked-sparse"])
def test_every_secure_sum_name_the_scenarios_offer_is_accepted(name: str) -> None:
    """The scenarios' ``secure_sum`` choices are library names too (same keyword)."""
    import numpy as np

    from mprr.protocols import rr_clusters
    from mprr.streams import PartyStreams
    from mprr.synthetic import planted_clusters

    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    sim = simulate(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2", secure_sum=name)
    fast = rr_clusters(data, p=0.7, Tv=6, Td=0.1, dependence="4.2", rng=PartyStreams(5, data.n))
    assert sim.result.clusters == fast.clusters
    with pytest.raises(ConfigurationError, match="give secure_sum or engine"):
        simulate(data, "RR-Clusters", seed=5, p=0.7, dependence="4.2", secure_sum=name, engine="paper")


async def test_expensive_secure_sum_is_announced_with_its_closed_form_cost_and_progress_reported(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the virtual clock, with every message delayed up to 0.1 s, the run lasts virtual time:
    the heartbeat's reports come at exact multiples of its interval, whatever the machine's speed."""
    import logging

    import numpy as np

    import parties.simulate as simulate_module
    from mprr.synthetic import planted_clusters
    from parties.faults import FaultPlan

    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    seen: list[tuple[float, int, int]] = []
    monkeypatch.setattr(simulate_module, "EXPENSIVE_BYTES", 1_000)
    with caplog.at_level(logging.INFO, logger="parties.simulate"):
        await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2",
                             secure_sum="paper", faults=FaultPlan(delay=1.0, max_delay=0.1),
                             progress=lambda *a: seen.append(a), progress_interval=0.025)
    warning = next(r for r in caplog.records if r.levelno == logging.WARNING)
    # paper engine, 16 pair cells (2·3 + 2·2 + 3·2): (2n − 1) messages per party; a short
    # headline, then the parties, cells and closed form wrapped for a terminal, then the advice
    text = warning.getMessage()
    headline, *details = text.splitlines()
    # (counted until the traffic crossed the threshold: at least that much)
    assert re.match(r"expensive configuration: the paper secure sum sends at least ([\d,]+) messages, ", headline)
    assert "or 1,000,000 messages or 1,000 bytes counted) counted (paper, n = 24" in " ".join(
        line.strip() for line in text.splitlines())
    assert "(24 parties, secure sum 'dependence' of 16 cells; closed form: " in " ".join(line.strip() for line in details)
    assert details[-1] == "  a sparse engine (graph, masked-sparse) or fewer parties costs less"
    assert len(details) >= 2 and all(len(line) <= simulate_module.WARNING_WIDTH for line in details)
    assert len(seen) >= 2
    assert [round(t, 6) for t, _, _ in seen] == [round(0.025 * (k + 1), 6) for k in range(len(seen))]
    assert all(0 < m1 <= m2 and 0 < b1 <= b2 for (_, m1, b1), (_, m2, b2) in zip(seen, seen[1:]))
    assert any("simulation running" in r.getMessage() for r in caplog.records)
    caplog.clear()
    await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2",
                         secure_sum="masked-sparse")
    # already sparse: the advice does not suggest the engine in use
    sparse = next(r for r in caplog.records if r.levelno == logging.WARNING).getMessage()
    assert sparse.startswith("expensive configuration: the masked secure sum sends at least 72 messages, ")
    # (its lower bound already crosses the threshold: no program counted)
    assert "closed form: at least (lower bound: 24 PublicKeys, 24 KeyDirectory and 24 MaskedInput" in " ".join(
        line.strip() for line in sparse.splitlines())
    assert sparse.splitlines()[-1] == "  fewer parties or fewer cells cost less"
    caplog.clear()
    monkeypatch.undo()
    await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2", secure_sum="paper")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # below the threshold: silent
    with pytest.raises(ConfigurationError, match="progress_interval must be a number > 0 or math.inf, got 0"):
        await simulate_async(data, "RR-Independent", seed=5, p=0.7, progress_interval=0)


def test_repr_is_one_short_line(data) -> None:
    sim = simulate(data, "RR-Independent", seed=SEED, p=0.7)
    text = repr(sim)
    assert text.startswith("SimulationResult('RR-Independent', n=240, messages=480, bytes=")
    assert "\n" not in text and len(text) < 200


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


# ---------------------------------------------------------------------- frequency-oracle reports
REPORT_N = 300
REPORT_CASES = [
    ("SPL", dict(epsilon=2.0, oracle="oue")),
    ("SMP", dict(epsilon=2.0)),
    ("SMP", dict(epsilon=2.0, oracle="olh")),
    ("RS+FD", dict(epsilon=2.0)),
    ("CALM-style", dict(epsilon=2.0)),
    ("RR-Clusters-Sampled", dict(epsilon=4.0, discovery_share=0.3, Tv=60)),
]


@pytest.fixture(scope="module")
def report_data() -> Dataset:
    return planted_clusters(REPORT_N, rng=np.random.default_rng(11), strength=0.8).dataset


def party_ledgers(fast: ProtocolResult, names) -> list[tuple]:
    """Each party's ledger on the fast path: the entries of the phases it reported in."""
    took = np.stack([reporters(r) for r in fast.releases], axis=1)
    return [tuple(e for r, t in zip(fast.releases, row) if t for e in r.ledger_entries(names)) for row in took]


def assert_same_reports(actor: ProtocolResult, fast: ProtocolResult) -> None:
    assert (actor.protocol, actor.phases, actor.n, actor.clusters) == (fast.protocol, fast.phases, fast.n, fast.clusters)
    for a, b in zip(actor.releases, fast.releases):
        assert isinstance(a, ReportedData) and isinstance(b, ReportedData)
        assert np.array_equal(a.codes, b.codes)
        assert (a.assigned is None) == (b.assigned is None)
        assert a.assigned is None or np.array_equal(a.assigned, b.assigned)
        assert all(np.array_equal(x, y) for x, y in zip(a.counts, b.counts))
        assert (a.reports, a.probabilities, a.oracles, a.assign) == (b.reports, b.probabilities, b.oracles, b.assign)
    assert actor.ledger == fast.ledger
    ea, eb = actor.estimate, fast.estimate
    assert type(ea) is type(eb)
    if isinstance(eb, ProductDistribution):
        same_estimate(ea, eb)
    else:
        assert ea.marginals.keys() == eb.marginals.keys()  # type: ignore[attr-defined]
        assert all(np.array_equal(ea.marginals[k], eb.marginals[k]) for k in eb.marginals)  # type: ignore[attr-defined]
    if fast.dependence is not None:
        assert np.array_equal(actor.dependence, fast.dependence)


@pytest.mark.parametrize("case", REPORT_CASES, ids=[f"{p}-{k.get('oracle', '')}" for p, k in REPORT_CASES])
def test_oracle_reports_on_the_actors_are_the_fast_path_reports(report_data, case) -> None:
    protocol, params = case
    sim = simulate(report_data, protocol, seed=SEED, timeout=5.0, **params)
    fast = run_local(lookup(protocol).program, report_data, lookup(protocol).bind(params), rng=PartyStreams(SEED, REPORT_N))
    assert not sim.degraded
    assert_same_reports(sim.result, fast)
    # every party booked what the fast path books for it, at its own oracles' ε
    assert [ledger.releases for ledger in sim.ledgers] == party_ledgers(fast, report_data.schema.names)
    if protocol == "RR-Clusters-Sampled":  # both phases ran, and the discovery reporters sat the release out
        assert fast.phases == ("discovery", "clusters")
        found, released = fast.releases
        assert not np.any((found.assigned >= 0) & (released.assigned >= 0))
    # traffic: the closed forms of docs/cost_model.md (ReportRequest, OracleReport), per phase
    n = REPORT_N
    requests = replies = 0
    for r in fast.releases:
        # RR-Clusters-Sampled weighs its clusters, and its discovery pairs when a cover is in view
        weighed = r.phase == "clusters" or (r.phase == "discovery" and fast.details["plan"].design != "clusters")
        w = len(r.units) if weighed else 0
        exclude = ("discovery",) if r.phase == "clusters" and len(fast.releases) == 2 else ()
        requests += (49 + len(r.phase) + 19 * len(r.units) + 8 * sum(map(len, r.units)) + len(r.assign) + 8 * w
                     + sum(4 + len(e) for e in exclude))
        reports = n * len(r.units) if r.assigned is None else int(np.sum(r.assigned >= 0))
        replies += 31 * n + 8 * reports
    phases = len(fast.releases)
    assert dict(sim.traffic.by_kind) == {"ReportRequest": (phases * n, n * requests),
                                         "OracleReport": (phases * n, replies)}
    # the controller saw oracle reports and nothing else: each party's message is its row
    assert sim.view_log.kinds() == frozenset({"OracleReport"})
    for release in fast.releases:
        got = {e.src: e.message for e in sim.view_log if e.phase == release.phase}
        assert sorted(got) == list(range(REPORT_N))
        for i, msg in got.items():
            if release.assigned is None:
                assert msg.unit == -1 and msg.reports.tolist() == release.codes[i].tolist()
            else:
                j = int(release.assigned[i])
                assert msg.unit == j and msg.reports.tolist() == ([] if j < 0 else [release.codes[i, j]])


def test_oracle_report_traffic_is_the_codec_size_of_each_message(report_data) -> None:
    # SMP: one request in (its codec size), one report out (31 bytes + 8 per report) per party
    n = REPORT_N
    sim = simulate(report_data, "SMP", seed=SEED, timeout=5.0, epsilon=2.0)
    (data,) = sim.result.releases
    step = Report("attributes", data.units, tuple(OracleSpec("grr", e) for e in data.epsilons), "sampled")
    req = len(encode(ReportRequest.build(1, step)))
    rep = len(encode(OracleReport(1, 0, np.zeros(1, dtype=np.int64))))
    t = sim.traffic
    assert rep == 39
    assert dict(t.by_kind) == {"ReportRequest": (n, n * req), "OracleReport": (n, n * rep)}
    assert all(t.sent_by(i) == (1, rep) and t.received_by(i) == (1, req) for i in range(n))
    assert (t.messages, t.bytes, t.rounds) == (2 * n, n * (req + rep), 2)
    # a party that sends nothing in a phase still answers: 31 bytes
    sampled = simulate(report_data, "RR-Clusters-Sampled", seed=SEED, timeout=5.0, epsilon=4.0, discovery_share=0.3,
                       Tv=60)
    reports = sum(int(np.sum(r.assigned >= 0)) for r in sampled.result.releases)
    assert sampled.traffic.by_kind["OracleReport"] == (2 * n, 2 * n * 31 + 8 * reports)


def test_a_budget_below_the_oracle_epsilon_is_refused_by_every_party(report_data) -> None:
    with pytest.raises(ReleaseRefused, match="parties refused request") as info:
        simulate(report_data, "SPL", seed=SEED, timeout=5.0, budget=1.5, epsilon=2.0)
    assert len(info.value.refusals) == REPORT_N
    assert all("budget-exceeded" in r.reason and r.requested == pytest.approx(2.0)
               for r in info.value.refusals.values())
    sim = simulate(report_data, "SMP", seed=SEED, timeout=5.0, budget=2.0, epsilon=2.0)
    assert all(ledger.total("sequential") <= 2.0 * (1 + 1e-9) for ledger in sim.ledgers)


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
