"""Marginal release in the style of CALM, at ε per respondent.

CALM (Zhang, Wang, Li, He and Chen, "CALM: Consistent Adaptive Local Marginal for Marginal
Release under Local Differential Privacy", CCS 2018) lets every respondent report **one**
randomly assigned k-way marginal (the joint value of k attributes) through a frequency oracle
with all of its ε; the aggregator estimates each marginal from the reports on it, makes the
marginals non-negative (Norm-Sub) and consistent on their shared attributes
(:func:`mprr.marginals.make_consistent`), and answers any other marginal by maximum entropy
(:func:`mprr.maxent.maxent_marginal`).

"CALM-style": the marginals are all k-subsets of the attributes (k = 2 or 3), assigned
uniformly; CALM's choice of k and of the number of marginals from n, d and ε is not made
here.  The estimate is a :class:`MarginalSetDistribution`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any
from functools import cached_property

import numpy as np

from mprr.data import Schema
from mprr.distributions import DenseDistribution, SizedDomain, check_axes
from mprr.domain import MAX_TENSOR_CELLS, check_cells, check_epsilon
from mprr.errors import ConfigurationError
from mprr.marginals import make_consistent, project
from mprr.maxent import maxent_joint, maxent_marginal
from mprr.protocols.local import local_protocol
from mprr.protocols.plan import Plan, PhasePlan, declares
from mprr.protocols.multidim import oracle_specs
from mprr.protocols.oracle_reports import ReportedData
from mprr.protocols.parameters import CALMParameters
from mprr.protocols.result import release_result
from mprr.protocols.steps import Program, Report

__all__ = ["MarginalSetDistribution", "consistent_marginals", "calm", "calm_steps"]

Key = tuple[int, ...]


class MarginalSetDistribution(SizedDomain):
    """A joint distribution known through a consistent set of marginals (maximum entropy elsewhere).

    ``marginal(axes)`` projects a released marginal that contains ``axes``, else fits the
    maximum-entropy distribution over ``axes`` to the released marginals' projections
    (:func:`mprr.maxent.maxent_marginal`); ``probability`` uses the maximum-entropy joint
    (domains up to ``max_cells``).
    """

    def __init__(self, marginals: Mapping[Key, np.ndarray], sizes: Sequence[int], *,
                 max_cells: int = MAX_TENSOR_CELLS) -> None:
        self._sizes = tuple(int(s) for s in sizes)
        self._marginals = {tuple(k): np.asarray(v, dtype=np.float64) for k, v in marginals.items()}
        self._max_cells = max_cells
        self._cache: dict[Key, np.ndarray] = {}

    @property
    def marginals(self) -> Mapping[Key, np.ndarray]:
        """The released (consistent) marginals, by attribute subset."""
        return dict(self._marginals)

    def marginal(self, axes: Sequence[int]) -> np.ndarray:
        """The marginal over ``axes`` (in that order)."""
        ax = check_axes(axes, self.m)
        key = tuple(sorted(ax))
        if key not in self._cache:
            holder = next((k for k in self._marginals if set(key) <= set(k)), None)
            if holder is not None:
                table = project(self._marginals[holder], holder, key)
            else:
                table = maxent_marginal(self._marginals, self._sizes, key).table
            self._cache[key] = np.asarray(table, dtype=np.float64)
        order = [key.index(a) for a in ax]
        return np.transpose(self._cache[key], order)

    @cached_property
    def _joint(self) -> DenseDistribution:
        return DenseDistribution(maxent_joint(self._marginals, self._sizes, max_cells=self._max_cells).table)

    def todense(self, max_cells: int = MAX_TENSOR_CELLS) -> np.ndarray:
        """The maximum-entropy joint as a tensor (DomainTooLargeError above ``max_cells`` cells)."""
        if math.prod(self._sizes) > max_cells:
            check_cells(math.prod(self._sizes), max_cells, "the maximum-entropy joint")
        return self._joint.tensor

    def probability(self, mask_or_cells: np.ndarray) -> float | np.ndarray:
        """Probability of a set of cells under the maximum-entropy joint."""
        return self._joint.probability(mask_or_cells)

    def __repr__(self) -> str:
        return f"MarginalSetDistribution(sizes={self._sizes}, marginals={sorted(self._marginals)})"


def consistent_marginals(data: ReportedData, sizes: Sequence[int], method: str) -> dict[Key, np.ndarray]:
    """Each released marginal estimated (post-processed), then made consistent (CALM 4.4).

    The consistency step weights each marginal by the inverse of its oracle's approximate
    per-cell variance over its ``n_j`` reports.  With ``method = "none"`` the raw estimates are
    returned unchanged.
    """
    tables = {u: data.frequencies(j, method) for j, u in enumerate(data.units)}
    if method == "none":
        return tables
    variances = {u: float(np.mean(data.variance(j))) for j, u in enumerate(data.units)}
    return make_consistent(tables, sizes, variances)


def calm_plan(schema: Schema, params: CALMParameters) -> Plan:
    """The plan of :func:`calm_steps`: reports ``"marginals"``, one sampled k-subset per party."""
    return Plan((PhasePlan.report("marginals", itertools.combinations(range(schema.m), params.k),
                                  assign="sampled"),))


@declares(calm_plan)
def calm_steps(schema: Schema, params: CALMParameters) -> Program:
    """CALM-style marginal release as a step program (module docstring).

    Parameters
    ----------
    schema
        The attributes every party holds.
    params
        The :class:`~mprr.protocols.parameters.CALMParameters`, validated when they were built:
        ``epsilon`` per respondent (its one report of one k-way marginal); ``k``, the size of
        the released marginals, 2 or 3 (at most m, checked here against the schema);
        ``oracle``, ``"adaptive"`` (per marginal, the least-variance oracle for its cells) or
        ``"grr"`` / ``"oue"`` / ``"olh"``; ``postprocess``, ``"norm-sub"`` (default),
        ``"clip-rescale"``, ``"project-simplex"`` — each followed by the consistency step — or
        ``"none"`` (raw, inconsistent marginals).

    Returns
    -------
    ProtocolResult
        ``"CALM-style"``: a :class:`MarginalSetDistribution`; one phase ``"marginals"``.

    Raises
    ------
    ConfigurationError
        If ``k`` exceeds the number of attributes m.

    Notes
    -----
    Draw order: :class:`~mprr.protocols.steps.Report`, ``assign="sampled"`` over the
    k-subsets in lexicographic order.
    """
    k, eps, method = params.k, params.epsilon, params.postprocess
    if k > schema.m:
        raise ConfigurationError(f"k must be 2 or 3 (and at most m = {schema.m}), got {k!r}")
    units = tuple(itertools.combinations(range(schema.m), k))
    got = yield Report("marginals", units, oracle_specs(units, schema.sizes, eps, params.oracle), assign="sampled")
    data = got.data
    assert isinstance(data, ReportedData)
    tables = consistent_marginals(data, schema.sizes, method)
    out = {"epsilon": eps, "k": k, "oracle": params.oracle, "marginals": len(units),
           "oracles": sorted({type(o).__name__ for o in data.oracles}),
           "reports_per_marginal": {"min": min(data.reports), "max": max(data.reports)},
           "cells": [math.prod(data.unit_sizes[j]) for j in range(len(units))]}
    return release_result("CALM-style", n=got.n, parameters=out, schema=schema,
                          estimate=MarginalSetDistribution(tables, schema.sizes), releases=(data,),
                          postprocessing=method, clusters=None)


calm = local_protocol(calm_steps, "calm", CALMParameters)
