"""RR-Adjustment (main paper Section 5, Algorithm 2) after RR-Independent or RR-Clusters.

The controller already holds the randomized data set Y (the last release: attribute values
for RR-Independent, cluster values for RR-Clusters) and the estimated marginal of every
attribute or cluster.  Algorithm 2 weights the records of Y so that their weighted marginals
match those estimates (iterative proportional fitting, :func:`mprr.adjustment.adjust`); the
weighted records are the new estimate of the joint distribution (a ``WeightedSample``).

Nothing new is released and no randomness is drawn: RR-Adjustment is post-processing of what
the controller has, so it costs no ε (main paper Section 5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mprr.adjustment import adjust
from mprr.distributions import ProductDistribution, WeightedSample
from mprr.errors import ConfigurationError
from mprr.data import Schema
from mprr.protocols.result import ProtocolResult
from mprr.protocols.plan import Plan, declares, plan_of
from mprr.protocols.steps import Program

if TYPE_CHECKING:
    from mprr.protocols.parameters import AdjustmentOptions

__all__ = ["rr_adjustment", "rr_adjustment_steps", "ADJUSTABLE"]

ADJUSTABLE: tuple[str, ...] = ("RR-Independent", "RR-Clusters")
"""Protocols whose result RR-Adjustment accepts (main paper 6.2 items 3 and 4)."""


def rr_adjustment(
    result: ProtocolResult,
    *,
    tol: float = 1e-9,
    max_iter: int = 1000,
    exact_limit: bool = False,
) -> ProtocolResult:
    """Apply Algorithm 2 to the release of an RR-Independent or RR-Clusters run.

    Parameters
    ----------
    result
        Result of :func:`~mprr.protocols.rr_independent` or :func:`~mprr.protocols.rr_clusters`
        (its estimate is a product of attribute / cluster distributions).
    tol, max_iter, exact_limit
        Passed to :func:`mprr.adjustment.adjust` (stop when the largest marginal gap is
        ``≤ tol``, at a fixed point, or after ``max_iter`` sweeps).

    Returns
    -------
    ProtocolResult
        Same releases and ledger; protocol ``"<protocol>+Adjustment"``; ``estimate`` a
        ``WeightedSample`` of the released records Y with the Algorithm 2 weights;
        ``adjustment`` the :class:`mprr.adjustment.Adjustment` (weights, iterations, gap,
        converged).  The marginal targets are adjusted in cluster order within each sweep.

    Raises
    ------
    ConfigurationError
        If ``result`` is not an RR-Independent / RR-Clusters result.
    """
    if isinstance(result, ProtocolResult) and result.releases and result.releases[-1].oracle_reports:
        raise ConfigurationError(
            f"rr_adjustment reweights released records, and {result.protocol} released none across its units "
            "(each respondent reported one sampled unit): its estimate is already the maximum-entropy (IPF) fit of "
            "the released marginals, which is what Algorithm 2 converges to from a uniform start; use "
            "result.estimate, or mprr.protocols.synthesize for synthetic records"
        )
    if not isinstance(result, ProtocolResult) or result.protocol not in ADJUSTABLE:
        got = result.protocol if isinstance(result, ProtocolResult) else type(result).__name__
        raise ConfigurationError(f"rr_adjustment applies to results of {list(ADJUSTABLE)}, got {got!r}")
    if result.postprocessing == "none":
        raise ConfigurationError(
            "rr_adjustment needs proper marginal targets; the result used postprocess='none' "
            "(raw eq. 2, possibly negative): rerun with 'clip-rescale', 'project-simplex' or 'ibu'"
        )
    estimate = result.estimate
    if not isinstance(estimate, ProductDistribution):
        raise ConfigurationError(
            f"rr_adjustment needs a product estimate of attributes or clusters, got {type(estimate).__name__}"
        )
    released = result.released_records
    marginals = list(zip(estimate.clusters, estimate.factors))
    adj = adjust(released, marginals, tol=tol, max_iter=max_iter, exact_limit=exact_limit)
    weighted = WeightedSample(released, adj.weights, estimate.sizes)
    params = dict(result.parameters)
    params["adjustment"] = {"tol": tol, "max_iter": max_iter, "exact_limit": exact_limit}
    return replace(
        result,
        protocol=f"{result.protocol}+Adjustment",
        parameters=params,
        estimate=weighted,
        adjustment=adj,
        details={**result.details, "base_estimate": estimate},
        timings={},
    )


def _base(params: AdjustmentOptions) -> Callable[..., Program]:
    """The base protocol's step program."""
    from mprr.protocols.clusters import rr_clusters_steps
    from mprr.protocols.independent import rr_independent_steps

    return rr_clusters_steps if params.base == "RR-Clusters" else rr_independent_steps


def rr_adjustment_plan(schema: Schema, params: AdjustmentOptions) -> Plan:
    """The plan of :func:`rr_adjustment_steps`: the base protocol's (Algorithm 2 asks nothing
    of the parties)."""
    return plan_of(_base(params), schema, params)


@declares(rr_adjustment_plan)
def rr_adjustment_steps(schema: Schema, params: AdjustmentOptions) -> Program:
    """RR-Adjustment after a base protocol as a step program: the base protocol's steps, then
    Algorithm 2 on the controller (no step, no ε).

    ``params`` is a :class:`~mprr.protocols.parameters.RRIndependentAdjustmentParameters` or
    :class:`~mprr.protocols.parameters.RRClustersAdjustmentParameters` (validated when it was
    built): the base protocol's parameters, and ``tol``, ``max_iter``, ``exact_limit`` of
    :func:`rr_adjustment`.
    """
    result = yield from _base(params)(schema, params)  # the base program reads its own fields
    return rr_adjustment(result, tol=params.tol, max_iter=params.max_iter, exact_limit=params.exact_limit)
