"""Plans of step programs (mprr.protocols.plan): declared from parameters, checked against runs."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest

from mprr.data import Attribute, Dataset, Schema
from mprr.errors import ConfigurationError, ProtocolError
from mprr.protocols.local import run_local
from mprr.protocols.plan import Needs, PhasePlan, Plan, _recording, declared, declares, dry_run_plan, plan_of, sum_cells
from mprr.protocols.registry import PROTOCOLS
from mprr.protocols.result import ProtocolResult, release_result
from mprr.protocols.parameters import RRClustersParameters
from mprr.protocols.steps import Arguments, MatrixSpec, Program, Release, Released, SecureSum, Step, call_program
from mprr.synthetic import planted_clusters

SIZES = (4, 3, 5, 2, 6)


def _datasets() -> tuple[Dataset, Dataset]:
    """Two data sets of one schema: planted clusters {0,1,2},{3,4}, and independent attributes."""
    a = planted_clusters(3000, sizes=SIZES, clusters=((0, 1, 2), (3, 4)), rng=np.random.default_rng(1)).dataset
    b = planted_clusters(3000, sizes=SIZES, clusters=(), rng=np.random.default_rng(2)).dataset
    assert a.schema == b.schema
    return a, b


def _recorded(program: Any, params: Arguments, seen: list[Step]) -> Any:
    def run(schema: Schema) -> Generator[Step, Released, Any]:
        return _recording(call_program(program, schema, params), seen)

    return run


# every registered protocol, at ε per respondent, and RR-Clusters with each dependence method
_CASES: list[tuple[str, dict[str, Any]]] = [
    ("RR-Independent", {"epsilon": 2.0}),
    ("RR-Joint", {"epsilon": 2.0, "max_cells": 40_000}),
    ("RR-Clusters", {"epsilon": 2.0, "Tv": 40, "Td": 0.1}),
    ("RR-Clusters", {"p": 0.7, "Tv": 40, "Td": 0.1, "dependence": "4.2"}),
    ("RR-Clusters", {"p": 0.7, "Tv": 40, "Td": 0.1, "dependence": "4.3"}),
    ("RR-Independent+Adjustment", {"epsilon": 2.0}),
    ("RR-Clusters+Adjustment", {"p": 0.7, "Tv": 40, "Td": 0.1, "dependence": "4.3", "max_iter": 3}),
    ("RR-Adjustment", {"epsilon": 2.0, "base": "RR-Independent"}),
    ("RR-Ind-Joint", {"epsilon": 2.0, "groups": [[0, 1, 2], [3, 4]]}),
    ("lambda-randomization", {"epsilon": 2.0, "max_cells": 40_000}),
    ("SPL", {"epsilon": 2.0}),
    ("SMP", {"epsilon": 2.0}),
    ("RS+FD", {"epsilon": 2.0}),
    ("CALM-style", {"epsilon": 2.0, "k": 3}),
    ("RR-Clusters-Sampled", {"epsilon": 2.0, "n": 3000}),
]


def test_the_cases_cover_every_registered_protocol() -> None:
    assert {name for name, _ in _CASES} == set(PROTOCOLS)
    assert all(declared(entry.program) is not None for entry in PROTOCOLS.values())


@pytest.mark.parametrize(("name", "params"), _CASES, ids=[f"{n}-{sorted(p.items())}" for n, p in _CASES])
def test_every_protocol_does_what_its_plan_declares_on_any_data(name: str, params: dict[str, Any]) -> None:
    """The plan comes from the schema and the parameters; runs on two data sets of that schema
    (different dependences, so different clusters) both carry out exactly its phases."""
    entry = PROTOCOLS[name]
    bound = entry.bind(params)
    plans, runs = [], []
    for data in _datasets():
        plan = entry.plan(data.schema, bound)
        seen: list[Step] = []
        run_local(_recorded(entry.program, bound, seen), data, rng=np.random.default_rng(3))
        for i, step in enumerate(seen):
            plan.check(i, step, data.sizes)
        plan.check_done(len(seen))
        assert [p.phase for p in plan.phases] == [s.phase for s in seen]
        assert plan.sum_cells == tuple(sum_cells(s.units, data.sizes) for s in seen if isinstance(s, SecureSum))
        assert plan.needs.engine == any(isinstance(s, SecureSum) for s in seen)
        plans.append(plan)
        runs.append(seen)
    assert plans[0] == plans[1]


def test_rr_clusters_plan_worked_example() -> None:
    """4.3 on sizes (4, 3, 5, 2, 6): one secure sum of the 10 pairs, Σ_{i<j} |A_i||A_j| =
    12+20+8+24 + 15+6+18 + 10+30 + 12 = 155 cells per party, then the clusters (chosen later)."""
    schema = _datasets()[0].schema
    plan = PROTOCOLS["RR-Clusters"].plan(schema, RRClustersParameters(p=0.7, Tv=40, Td=0.1, dependence="4.3"))
    dependence, clusters = plan.phases
    assert (dependence.kind, dependence.cells, dependence.exact, len(dependence.units or ())) == (
        "secure-sum", 155, False, 10)
    assert clusters == PhasePlan("clusters", "release", families=("cluster-optimal",))
    assert dependence.families == ("cluster-optimal",)  # the pairs' 6.3.2 matrices (main paper 4.3)
    assert plan.sum_cells == (155,) and plan.needs == Needs(engine=True)
    exact = PROTOCOLS["RR-Clusters"].plan(schema, RRClustersParameters(p=0.7, Tv=40, Td=0.1, dependence="4.2"))
    assert exact.secure_sums[0].exact and exact.secure_sums[0].families == ()
    per_attribute = PROTOCOLS["RR-Clusters"].plan(schema, RRClustersParameters(p=0.7, Tv=40, Td=0.1))
    assert per_attribute.phases[0] == PhasePlan.release("dependence", ((0,), (1,), (2,), (3,), (4,)),
                                                        families=("keep-or-uniform",))
    # a singleton cluster replays phase 1 under 4.1: its family is the attribute matrices'
    assert per_attribute.phase("clusters").families == ("keep-or-uniform", "cluster-optimal")
    assert per_attribute.families == ("keep-or-uniform", "cluster-optimal") and per_attribute.oracles == ()
    assert per_attribute.needs == Needs() and per_attribute.sum_cells == ()


def test_sum_cells_and_needs() -> None:
    assert sum_cells(((0, 1), (0, 2), (1, 2)), (4, 3, 5)) == 12 + 20 + 15
    assert sum_cells(((0, 1, 2),), (4, 3, 5)) == 60
    assert Needs(engine=True) | Needs(mesh=True) == Needs(engine=True, mesh=True)
    assert Needs(engine=True, pki=True).names() == ("engine", "pki")
    plan = Plan((PhasePlan.secure_sum("s", ((0, 1),), (2, 3), exact=True),)).with_needs(Needs(mesh=True))
    assert plan.needs == Needs(engine=True, mesh=True)
    assert plan.to_dict() == {"phases": [{"phase": "s", "kind": "secure-sum", "units": [[0, 1]], "cells": 6,
                                          "exact": True, "families": []}], "needs": ["engine", "mesh"]}


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: PhasePlan("a", "gossip"), r"kind of phase 'a' must be one of \['release', 'secure-sum', 'report'\], "
                                           r"got 'gossip'"),
        (lambda: PhasePlan("", "release"), r"phase must be a non-empty string, got ''"),
        (lambda: PhasePlan("s", "secure-sum", ((0, 1),)), r"secure sum 's' needs its units and cells >= 1"),
        (lambda: PhasePlan("r", "release", cells=4), r"cells and exact apply to a secure sum only; phase 'r'"),
        (lambda: PhasePlan("r", "report"), r"assign of phase 'r' \(report\) must be one of"),
        (lambda: PhasePlan("r", "release", assign="every"), r"assign of phase 'r' \(release\) must be None"),
        (lambda: Plan((PhasePlan("a", "release"), PhasePlan("a", "release"))),
         r"phase names of a plan must be distinct, got \['a', 'a'\]"),
        (lambda: PhasePlan.release("r", families=("grr", "shuffle")),
         r"families of release phase 'r' must be registered matrix families among \['keep-or-uniform', 'grr', "
         r"'cluster-optimal', 'lambda-kron', 'dense'\], got \['shuffle'\]"),
        (lambda: PhasePlan.report("o", assign="every", families=("grr", "rappor")),
         r"families of report phase 'o' must be frequency oracles among \['grr', 'oue', 'olh'\], got \['rappor'\]"),
        (lambda: PhasePlan.secure_sum("s", ((0, 1),), (2, 3), exact=True, families=("grr",)),
         r"secure sum 's' adds exact values: its families must be \(\), got \['grr'\]"),
    ],
)
def test_bad_plans_are_refused_naming_the_value(build: Any, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        build()


def test_check_names_the_step_that_departs_from_the_plan() -> None:
    sizes = (2, 3)
    plan = Plan((PhasePlan.release("a", ((0,), (1,))), PhasePlan.release("b")))
    spec = MatrixSpec.grr(1.0)
    plan.check(0, Release("a", ((0,), (1,)), (spec, spec)), sizes)
    plan.check(1, Release("b", ((0, 1),), (spec,)), sizes)  # units left open: any
    with pytest.raises(ProtocolError, match=r"step 1 of the program is release 'a' \(1 units \[\(0,\)\], families \['grr'\]\) but its "
                                            r"plan declares release 'a' \(2 units"):
        plan.check(0, Release("a", ((0,),), (spec,)), sizes)
    with pytest.raises(ProtocolError, match=r"step 2 of the program is secure-sum 'b' .* but its plan declares "
                                            r"release 'b' \(units chosen at run time\)"):
        plan.check(1, SecureSum("b", ((0, 1),)), sizes)
    with pytest.raises(ProtocolError, match=r"the program yielded step 3 \(release 'c' .*\) but its plan declares 2"):
        plan.check(2, Release("c", ((0,),), (spec,)), sizes)
    with pytest.raises(ProtocolError, match=r"the program ended after 1 step\(s\) but its plan declares"):
        plan.check_done(1)


# ---------------------------------------------------------------- programs of one's own

SCHEMA = Schema((Attribute("a", ("0", "1")), Attribute("b", ("0", "1", "2")), Attribute("c", ("0", "1"))))


def _result(got: Released, schema: Schema) -> ProtocolResult:
    from mprr.distributions import ProductDistribution

    uniform = [np.full(s, 1.0 / s) for s in schema.sizes]
    return release_result("own", n=got.n, parameters={}, schema=schema,
                          estimate=ProductDistribution(tuple((j,) for j in range(schema.m)), uniform, schema.sizes),
                          releases=(got.data,), postprocessing="none", clusters=None)


def fixed_steps(schema: Schema, *, epsilon: float) -> Program:
    """Releases every attribute: the same steps on any data."""
    got = yield Release("all", tuple((j,) for j in range(schema.m)), (MatrixSpec.grr(epsilon),) * schema.m)
    return _result(got, schema)


def adaptive_steps(schema: Schema, *, epsilon: float) -> Program:
    """Releases attribute 0, then attribute 1 if most released codes are 0, else attribute 2:
    data-dependent."""
    got = yield Release("first", ((0,),), (MatrixSpec.grr(epsilon),))
    chosen = 1 if float(np.mean(got.data.codes[:, 0] == 0)) > 0.75 else 2
    got = yield Release("then", ((chosen,),), (MatrixSpec.grr(epsilon),))
    return _result(got, schema)


def adaptive_plan(schema: Schema, *, epsilon: float) -> Plan:
    return Plan((PhasePlan.release("first", ((0,),)), PhasePlan.release("then")))


@declares(adaptive_plan)
def declared_adaptive_steps(schema: Schema, *, epsilon: float) -> Program:
    """:func:`adaptive_steps` with its plan declared."""
    return (yield from adaptive_steps(schema, epsilon=epsilon))


def test_a_data_independent_program_gets_its_plan_from_a_dry_run() -> None:
    assert declared(fixed_steps) is None
    plan = plan_of(fixed_steps, SCHEMA, epsilon=1.0)
    assert plan == Plan((PhasePlan.release("all", ((0,), (1,), (2,)), families=("grr",)),)) == dry_run_plan(
        fixed_steps, SCHEMA, epsilon=1.0)  # the families it applied (GRR), as the runs asked


def test_a_data_dependent_program_must_declare_its_plan() -> None:
    with pytest.raises(ConfigurationError, match=r"program 'adaptive_steps' declares no plan and its steps depend "
                                                 r"on the data .*declares\(plan_function\)"):
        plan_of(adaptive_steps, SCHEMA, epsilon=5.0)
    assert declared(declared_adaptive_steps) is adaptive_plan
    assert plan_of(declared_adaptive_steps, SCHEMA, epsilon=1.0) == adaptive_plan(SCHEMA, epsilon=1.0)


def test_a_dry_run_that_fails_asks_for_a_declared_plan() -> None:
    with pytest.raises(ConfigurationError, match=r"program 'fixed_steps' declares no plan and a dry run on synthetic "
                                                 r"data of its schema failed \(.*epsilon"):
        plan_of(fixed_steps, SCHEMA, epsilon=-1.0)


def test_declares_refuses_a_non_callable_and_plan_of_a_non_plan() -> None:
    with pytest.raises(ConfigurationError, match=r"plan must be a plan function plan\(schema, \*\*params\), got int"):
        declares(3)  # type: ignore[arg-type]
    liar = declares(lambda schema, **p: "release everything")(lambda schema, **p: iter(()))
    with pytest.raises(ConfigurationError, match=r"must return a Plan, got str"):
        plan_of(liar, SCHEMA)


def test_a_plan_carries_what_the_parties_will_be_asked_to_apply() -> None:
    """Families: the attribute matrices' (RR-Independent), the oracles' (SPL: GRR at ε/m on
    small domains, main paper / Wang et al.), in canonical names; a step through a family the
    plan does not declare departs from it."""
    schema = _datasets()[0].schema
    assert PROTOCOLS["RR-Independent"].plan(schema, {"p": 0.7}).families == ("keep-or-uniform",)
    assert PROTOCOLS["RR-Independent"].plan(schema, {"epsilon_per_attribute": 1.0}).families == ("grr",)
    spl = PROTOCOLS["SPL"].plan(schema, {"epsilon": 2.0, "oracle": "oue"})
    assert spl.oracles == ("oue",) and spl.families == ()
    assert PhasePlan.release("r", families=("keep_or_uniform", "grr", "grr")).families == ("keep-or-uniform", "grr")
    plan = Plan((PhasePlan.release("a", ((0,),), families=("grr",)),))
    plan.check(0, Release("a", ((0,),), (MatrixSpec.grr(1.0),)), (2,))
    with pytest.raises(ProtocolError, match=r"step 1 of the program is release 'a' \(1 units \[\(0,\)\], families "
                                            r"\['keep-or-uniform'\]\) but its plan declares release 'a' \(1 units "
                                            r"\[\(0,\)\], families \['grr'\]\)"):
        plan.check(0, Release("a", ((0,),), (MatrixSpec.keep_or_uniform(0.5),)), (2,))
