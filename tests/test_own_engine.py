"""A user's secure-sum engine (``tests/own_engine.py``: its module, its messages, one registration)
and a user's matrix family run everywhere a shipped one does: the actors (``simulate``), the
closed forms of the cost model and the communication scenario, the fault scenario and the
curious controller's attacks — with nothing else edited."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from mprr.data import Schema
from mprr.distributions import ProductDistribution
from mprr.errors import ConfigurationError
from mprr.matrices import RandomizationMatrix
from mprr.matrix_families import MATRIX_FAMILIES, MatrixFamily, register_matrix_family
from mprr.privacy.composition import as_policy
from mprr.protocols.local import run_local
from mprr.protocols.plan import PhasePlan, Plan, declares, plan_of
from mprr.protocols.result import release_result
from mprr.protocols.steps import MatrixSpec, Program, Release, singletons
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.router import Router
from parties.secure.run import run_secure_sum
from parties.secure.paper import PaperEngine
from parties.secure.registry import (
    ENGINES,
    MESH,
    EngineEntry,
    controller_kinds,
    engine_needs_mesh,
    party_kinds,
    register_engine,
)
from parties.simulate import simulate
from parties.wire.codec import encode
from scenarios.cost_model import (
    closed_form,
    measure_rr,
    measure_secure_sum,
    pair_indicators,
    randomized_values_bytes,
    release_phase,
)
from scenarios.faults import predicted_success, run_trial
from scenarios.faults import SCHEMA as FAULTS
from scenarios.runner import run
from tests import own_engine
from tests.virtual_clock import run_virtual

SESSION = "s" * 16

ENGINES.unregister("ring-mask")  # registered on import (collection): every other test sees the shipped engines


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    """``tests/own_engine.py``'s registration for each test of this module, removed after it, so
    that the registry of every other test holds the shipped engines only (its message kinds stay
    in the codec, as a module's classes do)."""
    if not ENGINES.accepts("ring-mask"):
        register_engine(own_engine.ENTRY)
    yield
    ENGINES.unregister("ring-mask")


def _vectors(n: int, sizes: tuple[int, ...] = (3, 2, 2), seed: int = 4) -> np.ndarray:
    data = planted_clusters(n, rng=np.random.default_rng(seed), sizes=sizes, clusters=()).dataset
    return pair_indicators(data.codes, data.sizes)


def by_hand(n: int, L: int, S: int = 16) -> tuple[int, int, int, int, int]:
    """The module docstring: 2 messages per party of 5 + (4 + S) + 10 + b·L bytes, 2 rounds,
    the controller silent (messages, bytes, rounds, busiest party's messages and bytes)."""
    b = 1 if n < 256 else 2  # M = n + 1
    size = 5 + 4 + S + 10 + b * L
    return 2 * n, 2 * n * size, 2, 2, 2 * size


# ---------------------------------------------------------------- the engine


def test_one_registration_makes_it_a_registered_engine() -> None:
    entry = ENGINES.lookup("ring-mask")
    assert entry is own_engine.ENTRY and entry.factory is own_engine.RingMaskEngine
    assert engine_needs_mesh("ring-mask") and engine_needs_mesh(own_engine.RingMaskEngine())
    assert own_engine.RingMask in party_kinds() and own_engine.RingMasked in controller_kinds()
    assert not entry.tolerates_dropouts and entry.family == "ring-mask"


@pytest.mark.parametrize(("n", "L"), [(2, 1), (5, 7), (30, 33), (300, 4)])
def test_its_closed_form_is_counted_and_equals_the_hand_formula(n: int, L: int) -> None:
    """The counting driver sizes its own messages with the codec; the hand formula of its
    module docstring is the independent check (b = 2 bytes a cell from n = 256 on)."""
    c = closed_form("ring-mask", n, L)
    assert (c.messages, c.bytes, c.rounds, c.party_messages, c.party_bytes) == by_hand(n, L)
    assert (c.controller_messages, c.controller_bytes, c.consistency_messages) == (0, 0, 0)
    one = own_engine.RingMasked(SESSION, np.zeros(L, dtype=np.uint8 if n < 256 else np.uint16))
    assert len(encode(one)) == c.party_bytes // 2


def test_its_sum_is_exact_and_its_traffic_the_closed_form() -> None:
    vectors = _vectors(9)
    n, L = vectors.shape
    net = Router(n, topology=nx.complete_graph(n))
    result = asyncio.run(run_secure_sum(own_engine.RingMaskEngine(round_timeout=10.0), net, vectors, session=SESSION))
    np.testing.assert_array_equal(result.total, vectors.sum(axis=0))
    c = closed_form("ring-mask", n, L)
    assert (result.statistics.messages, result.statistics.bytes, result.statistics.rounds) == (
        c.messages, c.bytes, c.rounds)
    measured = measure_secure_sum("ring-mask", vectors, vectors.sum(axis=0, dtype=np.int64), sweep="test", m=3,
                                  d=None, degree=4, round_timeout=10, index=1)
    assert all(measured.matches().values()) and measured.exact_sum


def test_it_runs_on_the_actors_by_name_with_the_same_result_as_the_paper_engine() -> None:
    """RR-Clusters with 4.2 (exact pair tables through the secure sum): the same tables, so the
    same clusters and releases as with the shipped paper engine; the traffic is the closed form
    (RR phases + SecureRelease / Ack / SecureSumStart + the counted ring-mask sum)."""
    data = planted_clusters(40, rng=np.random.default_rng(2), sizes=(3, 2, 4), clusters=((0, 1),)).dataset
    params = {"p": 0.7, "Tv": 30, "Td": 0.1, "dependence": "4.2"}
    own = simulate(data, "RR-Clusters", seed=5, timeout=20.0, secure_sum="ring-mask", **params)
    paper = simulate(data, "RR-Clusters", seed=5, timeout=20.0, secure_sum="paper", **params)
    assert own.result.clusters == paper.result.clusters
    assert np.array_equal(own.result.release("clusters").codes, paper.result.release("clusters").codes)
    assert own.options["topology"] == f"{40 * 39 // 2} party links"  # its MESH need, from its entry
    assert own.traffic.by_kind["RingMasked"].messages == 40
    measured = measure_rr("RR-Clusters", (3, 2, 4), 12, sweep="method", d=None, seed=3, dependence="4.2",
                          engine="ring-mask", params={**params, "degree": 4, "round_timeout": 20.0})
    assert measured.matches(), (measured.measured(), measured.closed)


@pytest.mark.slow  # ~3 s: secure sums and actor runs of the communication scenario
def test_the_communication_scenario_measures_it_against_its_closed_form(tmp_path: Path) -> None:
    params = {
        "n_values": [4, 6], "sizes": [2, 3, 2], "degree": 2, "n_fixed": 4, "m_values": [2], "m_sweep_size": 2,
        "d_values": [3], "d_sweep_m": 2, "rr_protocols": [], "round_timeout": 10, "method_n_values": [6],
        "engines": ["ring-mask", "paper"],
    }
    run("communication_cost", out_dir=tmp_path, parameters=params)
    metrics = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["all_equal_closed_form"] is True and metrics["all_sums_exact"] is True
    assert metrics["rr_all_equal_closed_form"] is True and metrics["rr_measured"] == 5  # 4.1; 4.2, 4.3 with each engine
    assert set(metrics["log_log_slopes"]) == {"ring-mask", "paper"}


def test_the_fault_scenario_offers_it_and_predicts_it_from_its_entry(tmp_path: Path) -> None:
    """It stalls on a dropout (its entry's ``dropouts``): a clear error, never a count, and the
    predicted success rate is (1 − ρ)^n."""
    params = dict(FAULTS.validate({"n": 6, "round_timeout": 0.3}))
    vectors = _vectors(6, (3, 2))
    clean = run_virtual(run_trial("ring-mask", params, vectors, (), rate=0.0, index=1, seed=3))
    assert clean.outcome == "exact" and clean.contributors == 6
    dropped = run_virtual(run_trial("ring-mask", params, vectors, (2,), rate=0.2, index=2, seed=3))
    assert dropped.outcome == "error" and "no count is returned" in dropped.message
    assert predicted_success("ring-mask", 6, 0.2, 6, "binomial") == pytest.approx(0.8 ** 6)
    run("secure_sum_faults", out_dir=tmp_path, parameters={
        "n": 6, "rates": [0.0], "trials": 2, "round_timeout": 0.5, "engines": ["ring-mask", "paper"]})
    metrics = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["success_rate"]["ring-mask"] == {"0": 1.0} and metrics["every_returned_sum_exact"] is True


def test_an_engine_the_fault_scenario_cannot_crash_is_refused_by_name(tmp_path: Path) -> None:
    """An engine registered without a crash point (and no configured one for its family)."""
    register_engine(EngineEntry("uncrashable", PaperEngine, needs=frozenset({MESH})), replace=True)
    try:
        with pytest.raises(ConfigurationError, match=r"engine 'uncrashable' has no crash point: give "
                                                     r"crash_send.uncrashable or register it with "
                                                     r"EngineEntry\(crash_send=...\)"):
            run("secure_sum_faults", out_dir=tmp_path, parameters={"n": 4, "rates": [0.0], "trials": 1,
                                                                   "engines": ["uncrashable"]})
    finally:
        ENGINES.unregister("uncrashable")


# ---------------------------------------------------------------- a matrix family of one's own


def _cyclic(params: tuple[float, ...], sizes: tuple[int, ...]) -> RandomizationMatrix:
    """Keep with probability p; else, with equal chances, move to the next joint value
    (cyclically) or to a uniform one: P = p·I + (1 − p)·(S + J/R)/2."""
    cells = math.prod(sizes)
    p = params[0]
    if not 0.0 < p < 1.0:
        raise ConfigurationError(f"p of a cyclic matrix must be in (0, 1), got {p}")
    shift = np.roll(np.eye(cells), 1, axis=1)
    return RandomizationMatrix(p * np.eye(cells) + (1.0 - p) * (shift + np.full((cells, cells), 1.0 / cells)) / 2.0)


@pytest.fixture
def cyclic() -> Iterator[MatrixFamily]:
    family = register_matrix_family(MatrixFamily("cyclic", ("p",), lambda sizes: 1, _cyclic,
                                                 finer=lambda v: tuple((1.0 + x) / 2.0 for x in v)), replace=True)
    try:
        yield family
    finally:
        MATRIX_FAMILIES.unregister("cyclic")


def cyclic_plan(schema: Schema, *, p: float) -> Plan:
    return Plan((PhasePlan.release("attributes", singletons(schema.m), families=("cyclic",)),))


@declares(cyclic_plan)
def cyclic_steps(schema: Schema, *, p: float) -> Program:
    """Every attribute through the cyclic matrix of ``p`` (raw frequencies: a test protocol)."""
    got = yield Release("attributes", singletons(schema.m), (MatrixSpec("cyclic", (p,)),) * schema.m)
    uniform = [np.full(s, 1.0 / s) for s in schema.sizes]
    return release_result("cyclic", n=got.n, parameters={"p": p}, schema=schema,
                          estimate=ProductDistribution(singletons(schema.m), uniform, schema.sizes),
                          releases=(got.data,), postprocessing="none", clusters=None)


def test_a_users_matrix_family_runs_on_the_actors_and_in_the_closed_forms(cyclic: MatrixFamily) -> None:
    """The plan declares the family, every party rebuilds it by name and computes its ε from
    the matrix (main paper eq. 4), the fast path and the actors release the same codes, the
    traffic is the release closed form with the family's name, and the curious controller's
    finer matrix is the family's own ``finer`` (p → (1 + p)/2: more ε, paid by every party)."""
    data = planted_clusters(30, rng=np.random.default_rng(1), sizes=(3, 4), clusters=()).dataset
    plan = plan_of(cyclic_steps, data.schema, p=0.6)
    assert plan.families == ("cyclic",)
    fast = run_local(cyclic_steps, data, rng=PartyStreams(7, data.n), p=0.6)
    sim = simulate(data, cyclic_steps, seed=7, p=0.6)
    assert np.array_equal(fast.releases[0].codes, sim.result.releases[0].codes)
    spent = sum(_cyclic((0.6,), (r,)).epsilon for r in data.sizes)
    assert sim.result.epsilon() == pytest.approx(spent) and fast.epsilon() == pytest.approx(spent)
    phase = release_phase("attributes", singletons(2), plan.phase("attributes").families * 2)
    assert (sim.traffic.messages, sim.traffic.bytes) == (2 * 30, 30 * (phase.request_bytes + phase.reply_bytes))
    attacked = simulate(data, cyclic_steps, seed=7, p=0.6, attacks=("finer-matrix",))
    (attack,) = attacked.attacks
    assert (attack.asked, attack.answered, attack.refused) == (30, 30, 0)  # no budget: every party pays
    finer = _cyclic((0.8,), (3,)).epsilon  # the first unit (attribute 0) at p = (1 + 0.6)/2
    assert all(ledger.total(as_policy("sequential")) == pytest.approx(spent + finer) for ledger in attacked.ledgers)


def test_a_plan_refuses_a_family_nobody_registered() -> None:
    with pytest.raises(ConfigurationError, match=r"families of release phase 'attributes' must be registered matrix "
                                                 r"families among .*, got \['cyclic'\]"):
        cyclic_plan(planted_clusters(5, rng=np.random.default_rng(0), sizes=(2, 2), clusters=()).dataset.schema,
                    p=0.5)
