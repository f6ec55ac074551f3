"""The field's multi-dimensional frequency strategies: SPL, SMP and RS+FD, at ε per respondent.

Each respondent holds m attributes and has a budget ε for its whole record:

- **SPL** (split): every attribute reported through a frequency oracle with ε/m (sequential
  composition; Wang et al., USENIX Security 2017, applied per attribute).
- **SMP** (sample): each respondent draws one attribute uniformly and reports it, with its
  index, through an oracle with all of ε (Wang et al. 2019, "Collecting and Analyzing
  Multidimensional Data with Local Differential Privacy"; Arcolezi et al. 2021).
- **RS+FD** (random sampling plus fake data; Arcolezi, Couchot, Al Bouna and Xiao,
  "Random Sampling Plus Fake Data: Multidimensional Frequency Estimates With Local
  Differential Privacy", CIKM 2021): as SMP, but the respondent also sends uniform fake
  values for the other attributes and not the index; GRR oracle.  The paper's ε holds for
  records that differ in one attribute; mprr books record-level ε, so the sampled attribute's
  GRR runs at the respondent's whole ε (the paper's amplified ε'): see
  :func:`mprr.protocols.oracle_reports.rsfd_oracle_epsilon`.

Each estimates the m marginals (post-processed, Norm-Sub by default) and the joint as their
product, like RR-Independent.  The oracle of each attribute is ``"adaptive"`` (GRR when
``d < 3e^ε + 2``, else OUE / OLH: :func:`mprr.oracles.best_oracle`) or one of
``"grr"``, ``"oue"``, ``"olh"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mprr.data import Schema
from mprr.distributions import ProductDistribution
from mprr.domain import check_epsilon
from mprr.errors import ConfigurationError
from mprr.protocols.local import local_protocol
from mprr.protocols.plan import Plan, PhasePlan, declares
from mprr.protocols.oracle_reports import (
    DEFAULT_ORACLE_POSTPROCESS,
    ReportedData,
    check_oracle_postprocess,
    rsfd_oracle_epsilon,
)
from mprr.protocols.result import ProtocolResult, release_result
from mprr.protocols.parameters import OracleParameters, RSFDParameters
from mprr.protocols.steps import ORACLE_CHOICES, OracleSpec, Program, Report, singletons

__all__ = [
    "ORACLE_CHOICES",
    "oracle_families",
    "oracle_specs",
    "oracle_product",
    "spl",
    "spl_steps",
    "smp",
    "smp_steps",
    "rsfd",
    "rsfd_steps",
]

def oracle_specs(units: Sequence[Sequence[int]], sizes: Sequence[int], epsilon: float,
                 oracle: str) -> tuple[OracleSpec, ...]:
    """One :class:`OracleSpec` per unit at ``epsilon``: ``oracle``, or the best per unit domain."""
    if oracle not in ORACLE_CHOICES:
        raise ConfigurationError(f"oracle must be one of {list(ORACLE_CHOICES)}, got {oracle!r}")
    out = []
    for u in units:
        cells = 1
        for a in u:
            cells *= int(sizes[a])
        out.append(OracleSpec.best(cells, epsilon) if oracle == "adaptive" else OracleSpec(oracle, epsilon))
    return tuple(out)


def oracle_product(data: ReportedData, sizes: Sequence[int], method: str) -> ProductDistribution:
    """The product of the units' estimated distributions (the units partition the attributes)."""
    factors = tuple(data.frequencies(j, method) for j in range(len(data.units)))
    return ProductDistribution(data.units, factors, tuple(sizes), allow_negative=(method == "none"))


def _result(name: str, data: ReportedData, n: int, schema: Schema, method: str,
            params: dict[str, object]) -> ProtocolResult:
    params = {**params, "oracles": [type(o).__name__ for o in data.oracles],
              "report_epsilons": list(data.epsilons)}
    return release_result(name, n=n, parameters=params, schema=schema,
                          estimate=oracle_product(data, schema.sizes, method), releases=(data,),
                          postprocessing=method, clusters=data.units)


def oracle_families(units: Sequence[Sequence[int]], sizes: Sequence[int], epsilon: object,
                    oracle: str) -> tuple[str, ...] | None:
    """The oracle families of :func:`oracle_specs` (a plan's families); ``None`` (not declared)
    without a valid ``epsilon`` or ``oracle``, which the program itself then refuses."""
    try:
        return tuple(dict.fromkeys(o.family for o in oracle_specs(units, sizes, float(epsilon), oracle)))  # type: ignore[arg-type]
    except (ConfigurationError, TypeError, ValueError):
        return None


def spl_plan(schema: Schema, params: OracleParameters) -> Plan:
    """The plan of :func:`spl_steps`: reports ``"attributes"``, every singleton by every party,
    through the oracles of ε/m."""
    units = singletons(schema.m)
    return Plan((PhasePlan.report("attributes", units, assign="every",
                                  families=oracle_families(units, schema.sizes, params.epsilon / schema.m,
                                                           params.oracle)),))


def smp_plan(schema: Schema, params: OracleParameters) -> Plan:
    """The plan of :func:`smp_steps`: reports ``"attributes"``, one sampled singleton per party."""
    units = singletons(schema.m)
    return Plan((PhasePlan.report("attributes", units, assign="sampled",
                                  families=oracle_families(units, schema.sizes, params.epsilon, params.oracle)),))


def rsfd_plan(schema: Schema, params: RSFDParameters) -> Plan:
    """The plan of :func:`rsfd_steps`: reports ``"attributes"``, one sampled singleton per party
    among fake values for the others, through GRR."""
    return Plan((PhasePlan.report("attributes", singletons(schema.m), assign="sampled-fake", families=("grr",)),))


@declares(spl_plan)
def spl_steps(schema: Schema, params: OracleParameters) -> Program:
    """SPL as a step program: every attribute through an oracle with ε/m (module docstring).

    Parameters
    ----------
    schema
        The attributes every party holds.
    params
        The :class:`~mprr.protocols.parameters.OracleParameters`, validated when they were
        built: ``epsilon`` per respondent (sequential over the m reports), ``oracle``
        (``"adaptive"``, ``"grr"``, ``"oue"`` or ``"olh"``) and ``postprocess``
        (``"norm-sub"``, ``"clip-rescale"``, ``"project-simplex"`` or ``"none"``).

    Returns
    -------
    ProtocolResult
        ``"SPL"``: product of the estimated marginals; one phase ``"attributes"``.

    Notes
    -----
    Draw order: :class:`~mprr.protocols.steps.Report` with ``assign="every"``.
    """
    units = singletons(schema.m)
    got = yield Report("attributes", units, oracle_specs(units, schema.sizes, params.epsilon / schema.m, params.oracle))
    assert isinstance(got.data, ReportedData)
    return _result("SPL", got.data, got.n, schema, params.postprocess,
                   {"epsilon": params.epsilon, "oracle": params.oracle})


@declares(smp_plan)
def smp_steps(schema: Schema, params: OracleParameters) -> Program:
    """SMP as a step program: one attribute per respondent, drawn uniformly, with all of ε.

    Parameters are those of :func:`spl_steps`.  Phase ``"attributes"``: every party draws one
    attribute and reports its index and value; attribute j is estimated from the ``n_j``
    reports on it.  Draw order: :class:`~mprr.protocols.steps.Report`, ``assign="sampled"``.
    """
    units = singletons(schema.m)
    got = yield Report("attributes", units, oracle_specs(units, schema.sizes, params.epsilon, params.oracle),
                       assign="sampled")
    assert isinstance(got.data, ReportedData)
    return _result("SMP", got.data, got.n, schema, params.postprocess,
                   {"epsilon": params.epsilon, "oracle": params.oracle})


@declares(rsfd_plan)
def rsfd_steps(schema: Schema, params: RSFDParameters) -> Program:
    """RS+FD[GRR] as a step program: one real attribute hidden among uniform fake values.

    Parameters
    ----------
    schema
        The attributes every party holds.
    params
        The :class:`~mprr.protocols.parameters.RSFDParameters`: ``epsilon`` per respondent,
        record-level (the sampled attribute's GRR runs at ε; the paper's published
        per-attribute ε for this is ``rsfd_oracle_epsilon(ε, m)``, recorded in
        ``parameters["published_epsilon"]``), and ``postprocess`` as :func:`spl_steps`.

    Notes
    -----
    Draw order: :class:`~mprr.protocols.steps.Report`, ``assign="sampled-fake"``.
    """
    eps = params.epsilon
    units = singletons(schema.m)
    got = yield Report("attributes", units, oracle_specs(units, schema.sizes, eps, "grr"), assign="sampled-fake")
    assert isinstance(got.data, ReportedData)
    return _result("RS+FD", got.data, got.n, schema, params.postprocess,
                   {"epsilon": eps, "oracle": "grr", "published_epsilon": rsfd_oracle_epsilon(eps, schema.m)})


spl = local_protocol(spl_steps, "spl", OracleParameters)
smp = local_protocol(smp_steps, "smp", OracleParameters)
rsfd = local_protocol(rsfd_steps, "rsfd", RSFDParameters)
