"""The equivalence matrix: one case per registered protocol variant, dependence method and engine.

The cases are derived from the registries when the tests are collected:

- every protocol of :data:`mprr.protocols.registry.PROTOCOLS` runs with the representative
  parameters of :data:`REPRESENTATIVE` (per-attribute matrices, budgets per respondent,
  frequency oracles...); a protocol registered without an entry there gets a case that
  fails naming it;
- every dependence method of :data:`mprr.protocols.dependences.DEPENDENCE_METHODS` runs in
  RR-Clusters; a method whose plan has a secure sum runs once per registered secure-sum
  engine (:data:`parties.secure.registry.ENGINES`), so a new engine is covered with no edit.

Each case names its data set: ``full`` (240 parties, 8 attributes with planted clusters),
``three`` (its first 3 attributes: a dense joint domain of 60 cells for RR-Joint and
λ-randomization) or ``secure`` (24 parties, 3 attributes of 2, 3 and 2 values: 16 pair cells,
so that a secure sum over a full mesh of parties, paper-per-combination's one sum per value
combination included, stays cheap).

Every runtime runs every case: memory on one shard and on three (``test_equivalence``), tcp on
two hand-started worker processes serving run after run (``test_tcp``) and ray on one pool of
shard actors serving run after run (``test_ray``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mprr.data import Dataset
from mprr.matrices import keep_or_uniform
from mprr.protocols import lambda_protocol, rr_adjustment, rr_clusters, rr_ind_joint, rr_independent, rr_joint
from mprr.protocols.dependences import DEPENDENCE_METHODS
from mprr.protocols.registry import PROTOCOLS, lookup
from mprr.protocols.result import ProtocolResult
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.secure.registry import ENGINES

__all__ = ["Case", "REPRESENTATIVE", "SEED", "dataset", "fast_path", "matrix_cases", "reference",
           "secure_methods", "simulate_case"]

SEED = 3
FULL_N = 240
SECURE_N = 24

Public = Callable[[Dataset, PartyStreams], ProtocolResult]


@dataclass(frozen=True)
class Variant:
    """A protocol's representative parameters on a data set; ``public``: the same job through
    the public fast-path function (checked equal to the registered program's run)."""

    label: str
    params: Mapping[str, Any]
    data: str = "full"
    public: Public | None = None


@dataclass(frozen=True)
class Case:
    """One cell of the matrix: a protocol, its parameters, its data set; ``missing`` names
    what the registry holds and the matrix has no parameters for."""

    id: str
    protocol: str
    params: Mapping[str, Any] = field(default_factory=dict)
    data: str = "full"
    public: Public | None = None
    missing: str | None = None

    @property
    def engine(self) -> str | None:
        return self.params.get("engine")


EIGHT = [1.0, 2.0, 0.5, 1.5, 1.0, 2.0, 1.0, 0.7]

REPRESENTATIVE: dict[str, list[Variant]] = {
    "RR-Independent": [
        Variant("p", dict(p=0.6), public=lambda d, r: rr_independent(d, p=0.6, rng=r)),
        Variant("epsilon-per-attribute", dict(epsilon_per_attribute=EIGHT),
                public=lambda d, r: rr_independent(d, epsilon_per_attribute=EIGHT, rng=r)),
        Variant("matrices-project-simplex",
                dict(matrices=[keep_or_uniform(s, 0.5) for s in (4, 3, 5, 2, 6, 3, 8, 2)], postprocess="project-simplex"),
                public=lambda d, r: rr_independent(d, matrices=[keep_or_uniform(s, 0.5) for s in d.sizes], rng=r,
                                                   postprocess="project-simplex")),
        Variant("epsilon-per-respondent", dict(epsilon=4.0)),
    ],
    "RR-Joint": [
        Variant("p", dict(p=0.8), "three", lambda d, r: rr_joint(d, p=0.8, rng=r)),
        Variant("epsilon-per-respondent", dict(epsilon=3.0), "three"),
    ],
    "RR-Clusters": [
        Variant("4.1-p", dict(p=0.7, Tv=60, Td=0.1), public=lambda d, r: rr_clusters(d, p=0.7, Tv=60, Td=0.1, rng=r)),
        Variant("4.1-randomized-tables-ibu",
                dict(epsilon_per_attribute=1.2, Tv=30, Td=0.05, tables="randomized", postprocess="ibu"),
                public=lambda d, r: rr_clusters(d, epsilon_per_attribute=1.2, Tv=30, Td=0.05, tables="randomized",
                                                postprocess="ibu", rng=r)),
        Variant("4.1-epsilon-per-respondent", dict(epsilon=8.0, Tv=60, Td=0.1, discovery_share=0.4)),
        Variant("4.3-epsilon-per-respondent-masked-sparse",
                dict(epsilon=6.0, Tv=6, Td=0.1, dependence="4.3", engine="masked-sparse"), "secure"),
    ],
    "RR-Independent+Adjustment": [
        Variant("p", dict(p=0.6), public=lambda d, r: rr_adjustment(rr_independent(d, p=0.6, rng=r))),
    ],
    "RR-Clusters+Adjustment": [
        Variant("p", dict(p=0.7, Tv=60, Td=0.1, tol=1e-8),
                public=lambda d, r: rr_adjustment(rr_clusters(d, p=0.7, Tv=60, Td=0.1, rng=r), tol=1e-8)),
    ],
    "RR-Adjustment": [  # the alias taking a base: here RR-Clusters with its 4.3 secure sum
        Variant("base-clusters-4.3-graph",
                dict(base="RR-Clusters", p=0.7, Tv=6, Td=0.1, dependence="4.3", engine="graph"), "secure",
                lambda d, r: rr_adjustment(rr_clusters(d, p=0.7, Tv=6, Td=0.1, dependence="4.3", rng=r))),
    ],
    "RR-Ind-Joint": [
        Variant("p", dict(p=0.6, groups=[(0, 1, 2), (3, 4)]),
                public=lambda d, r: rr_ind_joint(d, p=0.6, groups=[(0, 1, 2), (3, 4)], rng=r)),
    ],
    "lambda-randomization": [
        Variant("lambdas", dict(lambdas=[0.5] * 8), public=lambda d, r: lambda_protocol(d, [0.5] * 8, rng=r)),
        Variant("lambdas-min-bits", dict(lambdas=[0.9, 0.2, 0.5], min_bits=1.0), "three",
                lambda d, r: lambda_protocol(d, [0.9, 0.2, 0.5], min_bits=1.0, rng=r)),
        Variant("epsilon-per-respondent", dict(epsilon=3.0), "three"),
    ],
    "SPL": [Variant("oue", dict(epsilon=2.0, oracle="oue"))],
    "SMP": [Variant("adaptive", dict(epsilon=2.0)), Variant("olh", dict(epsilon=2.0, oracle="olh"))],
    "RS+FD": [Variant("grr", dict(epsilon=2.0))],
    "CALM-style": [Variant("2-way", dict(epsilon=2.0))],
    "RR-Clusters-Sampled": [Variant("discovery-0.3", dict(epsilon=4.0, discovery_share=0.3, Tv=60))],
}
"""Representative parameters of every shipped protocol, by canonical name."""

SECURE_BASE = dict(p=0.7, Tv=6, Td=0.1)
"""RR-Clusters on the ``secure`` data set, for the dependence methods."""


@functools.cache
def dataset(name: str) -> Dataset:
    """The data set a case names (module docstring)."""
    if name == "full":
        return planted_clusters(FULL_N, rng=np.random.default_rng(11), strength=0.8).dataset
    if name == "three":
        full = dataset("full")
        return full.select(list(full.schema.names[:3]))
    if name == "secure":
        return planted_clusters(SECURE_N, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    raise KeyError(name)


def secure_methods() -> list[str]:
    """The dependence methods whose plan has a secure sum (read from RR-Clusters' plan)."""
    entry = lookup("RR-Clusters")
    schema = dataset("secure").schema
    return [d for d in DEPENDENCE_METHODS
            if entry.plan(schema, entry.bind({**SECURE_BASE, "dependence": d})).needs.engine]


def matrix_cases() -> list[Case]:
    """Every case, from the registries as they are now (module docstring)."""
    cases: list[Case] = []
    for name, entry in PROTOCOLS.items():
        variants = REPRESENTATIVE.get(name)
        if not variants:
            cases.append(Case(f"{name}[no-case]", name, missing=(
                f"protocol {name!r} is registered but the equivalence matrix has no parameters for it: add "
                f"representative ones to REPRESENTATIVE in tests/parties/equivalence_cases.py")))
            continue
        for v in variants:
            cases.append(Case(f"{name}[{v.label}]", name, v.params, v.data, v.public))
    secure = secure_methods()
    for d in DEPENDENCE_METHODS:
        if d not in secure:
            cases.append(Case(f"RR-Clusters[dependence-{d}]", "RR-Clusters", {**SECURE_BASE, "dependence": d}, "secure"))
            continue
        for engine in ENGINES:
            cases.append(Case(f"RR-Clusters[dependence-{d}-{engine}]", "RR-Clusters",
                              {**SECURE_BASE, "dependence": d, "engine": engine}, "secure"))
    return cases


TIMEOUT = 10.0
"""Round timeout of the matrix's runs (a loaded machine's parties answer well within it)."""

_REFERENCE: dict[str, Any] = {}


def simulate_case(case: Case, runtime: Any = None) -> Any:
    """The case's actor run (:func:`parties.simulate.simulate`) on ``runtime`` (``None``: memory, one shard)."""
    from parties.simulate import simulate

    return simulate(dataset(case.data), case.protocol, seed=SEED, timeout=TIMEOUT, runtime=runtime, **case.params)


def reference(case: Case) -> Any:
    """The case's run in memory with one shard, once per test session (the other runtimes' reference)."""
    if case.id not in _REFERENCE:
        _REFERENCE[case.id] = simulate_case(case)
    return _REFERENCE[case.id]


def fast_path(case: Case) -> ProtocolResult:
    """The case's fast-path run: the registered program under :func:`mprr.protocols.local.run_local`."""
    from mprr.protocols.local import run_local

    data = dataset(case.data)
    entry = lookup(case.protocol)
    kwargs = entry.bind({k: v for k, v in case.params.items() if k != "engine"})
    result: ProtocolResult = run_local(entry.program, data, kwargs, rng=PartyStreams(SEED, data.n))
    return result
