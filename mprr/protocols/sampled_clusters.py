"""RR-Clusters with sampled respondents: the main paper's clustering idea at ε per respondent.

The main paper (Section 4) clusters dependent attributes and randomizes each cluster jointly.
At the budgets people deploy, its protocol loses to the field's methods for three reasons
(every respondent pays for discovery, the clustering follows the noise, every respondent
releases every cluster with a share of ε).  This variant keeps the idea and changes all three:

1. **Discovery on a share of the respondents, not of the budget.**  A fraction φ of the
   respondents (drawn by each party itself) reports one attribute pair (uniformly drawn; at a
   large ε with the weights of the cover below) through a frequency oracle with all of its ε
   (CALM-style); the others report nothing in this phase.
2. **Noise-aware Algorithm 1.**  Each pair's debiased table and its covariance under
   independence give a Wald χ² test that accounts for the LDP noise
   (:meth:`mprr.independence.PairEstimate.wald`; the GRR covariance is exact, the OUE / OLH one
   uses the oracles' per-cell variances; a table with no variance left is untestable); only
   pairs rejected at level α / (number of pairs) (Bonferroni) enter Algorithm 1, with their
   bias-corrected Cramér's V (:func:`mprr.independence.dependence_effect`) as the dependence
   and ``Td`` = 0: the clusters are merged by descending dependence up to ``Tv`` value
   combinations (main paper Algorithm 1).
3. **Releases that use the whole budget.**  Every other respondent reports one cluster, drawn
   with probability proportional to ``cells^(2/3)`` (the allocation that minimises
   ``Σ_C cells_C / sqrt(n_C)``, the order of the clusters' summed estimation error), through
   the least-variance frequency oracle for its domain with all of ε.  The estimate is the
   product of the cluster estimates (maximum entropy on disjoint marginals), Norm-Sub applied.

At a large ε the product of disjoint clusters loses when a dependence crosses them: a pair
split across two clusters is answered by independence, whose bias (0.04–0.06 of 2-way TVD on
UCI Adult) exceeds the whole error of a marginal release.  There the plan runs a discovery and
decides after it (design ``"clusters-or-cover"``): when every significant pair lies inside one
of Algorithm 1's clusters, the disjoint clusters are released as above; otherwise the **cover**:
the release units are overlapping units of at most three attributes that together contain
every attribute pair (:func:`mprr.pair_cover.cover_pairs`: a greedy weighted set cover by
small-domain pairs and triples, from n-free predicted errors), each drawn with probability
``∝ error^(2/3)`` of its predicted pair error (:func:`mprr.pair_cover.unit_weights`).  Fewer,
larger units than the m(m−1)/2 pairs of a CALM-style release mean more respondents per unit,
which pays once the oracle noise of one report is small beside the sampling noise.  In this
regime the discovery respondents draw their pair with the same weights, and their reports are
pooled with the release (inverse-variance average of the unbiased estimates of a unit reported
in both phases, then Norm-Sub); the marginals are made consistent and non-negative (PriView:
Qardaji, Yang and Li, "PriView: Practical Differentially Private Release of Marginal
Contingency Tables", SIGMOD 2014, Section 4.4, as in CALM: Zhang, Wang, Li, He and Chen, "CALM:
Consistent Adaptive Local Marginal for Marginal Release under Local Differential Privacy", CCS
2018, Section 4.4), and every other marginal is their maximum-entropy fit (CALM Section 4.5;
:class:`MarginalSetDistribution`).

Every respondent reports once with ε: its ledger books ε (discovery *or* release).  The plan
(design, φ, Tv) is chosen from n, m, the domain sizes and ε before any data is seen
(:func:`plan_sampled_clusters`) and recorded in the result; the test, the clustering and the
release use only what the discovery respondents released.  With φ = 0 (small ε or n: the
discovery could not tell dependence from noise) the clusters design releases one attribute per
respondent, i.e. SMP with size-aware weights; so does ``"clusters-or-cover"`` (there are too few
respondents to test a pair, so a cover's many units would get too few reports each), while a
cover asked for explicitly (``design="cover"``) starts from no cluster.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mprr.clustering import cluster_attributes
from mprr.data import Schema
from mprr.domain import check_epsilon, check_unit
from mprr.errors import ConfigurationError, EstimationError
from mprr.independence import PairEstimate, matrix_estimate, support_estimate
from mprr.marginals import make_consistent
from mprr.oracles import GRR, best_oracle
from mprr.pair_cover import cover_pairs, unit_weights
from mprr.protocols.local import local_protocol
from mprr.protocols.plan import Plan, PhasePlan, declares
from mprr.protocols.marginal_release import MarginalSetDistribution, consistent_marginals
from mprr.protocols.multidim import oracle_specs
from mprr.protocols.oracle_reports import (
    DEFAULT_ORACLE_POSTPROCESS,
    ReportedData,
    check_oracle_postprocess,
    postprocess_frequencies,
    respondent_ledger,
)
from mprr.protocols.release import all_pairs
from mprr.protocols.result import release_result
from mprr.protocols.parameters import DESIGNS, SampledClustersParameters
from mprr.protocols.steps import Program, Report

Key = tuple[int, ...]

__all__ = ["SampledClustersPlan", "pooled_marginals", "plan_sampled_clusters", "pair_estimate", "rr_clusters_sampled",
           "rr_clusters_sampled_steps"]

COVER_NOISE = 2.0
"""The cover design is chosen when one report of the typical pair has an oracle variance of at
most ``COVER_NOISE / cells`` (twice the sampling variance of a cell at uniform frequencies)."""

DISCOVERY_MAX = 0.6
"""Largest discovery share the plan chooses."""

DISCOVERY_LEAST = 1.0 / 3.0
"""The plan runs a discovery when the share of respondents that gives the typical pair a per-cell
noise below 0.5/cells is at most this."""

TV_DEVIATION = 0.75
"""Largest summed per-cell deviation ½·c·sd of a cluster's raw estimate the plan's Tv allows."""

DISCOVERY = "discovery"
RELEASE = "clusters"
CLUSTERS, COVER, EITHER = DESIGNS


@dataclass(frozen=True)
class SampledClustersPlan:
    """The data-independent plan of :func:`rr_clusters_sampled_steps`.

    Attributes
    ----------
    discovery_share
        φ: the probability that a respondent reports for discovery (0: no discovery).
    Tv
        Largest number of value combinations of a cluster (of a triple, in the cover design).
    alpha
        Family-wise level of the tests of independence (per pair α / number of pairs).
    reason
        Why this plan (said in the result).
    design
        ``"clusters"`` (disjoint clusters, product estimate), ``"cover"`` (overlapping units of
        at most three attributes covering every pair, :func:`mprr.pair_cover.cover_pairs`) or
        ``"clusters-or-cover"`` (decided after the discovery: the disjoint clusters when every
        significant pair lies inside one of Algorithm 1's clusters, else the cover).
    """

    discovery_share: float
    Tv: int
    alpha: float
    reason: str
    design: str = "clusters"


def plan_sampled_clusters(n: int | None, sizes: Sequence[int], epsilon: float, *,
                          discovery_share: float | None = None, Tv: int | None = None,
                          alpha: float = 0.05, design: str | None = None) -> SampledClustersPlan:
    """Choose the design, φ and Tv from n, m, the domain sizes and ε (before any data is seen).

    Discovery pays when a pair's test has power: each of the m(m−1)/2 pairs gets about
    ``N = φ n / (m(m−1)/2)`` reports, and the debiased table of a pair of ``c`` cells through
    GRR at ε has a per-cell standard deviation of about ``sqrt((e^ε + c − 2) / (N (e^ε − 1)²))``.
    The least share φ₀ that brings that noise on the typical pair (median cells ``c``) below
    ``0.5 / c`` (a dependence of Cramér's V ≈ 0.1 is then visible) is
    ``φ₀ = 4 c² (e^ε + c − 2) / (e^ε − 1)² · (m(m−1)/2) / n``; the plan runs a discovery when
    ``φ₀ ≤ 1/3``, with ``φ = 2 φ₀`` clipped to [0.2, 0.6] (twice the least share gives the tests
    power against the weaker dependences), else none.  Tv grows with what the release can
    estimate: the raw estimate of a cluster of ``c`` cells reported by ``N_C`` respondents has a
    summed per-cell deviation of about ``½ c · sd(c, N_C)``; Tv is the largest power of two
    ``c`` for which it stays below 0.75 (at least the largest attribute, at most 4,096), with
    ``N_C`` the cluster's share of the ``(1 − φ) n`` release respondents under the weights
    ``∝ cells^(2/3)`` when it replaces two attributes of the median size.  Norm-Sub removes
    most of that deviation on sparse tables; the bounds 0.75, 1/3 and 2 were calibrated on UCI
    Adult and the planted-cluster data (``benchmarks/clusters_sampled.py``).

    The design is ``"clusters-or-cover"`` (decided after the discovery) when one report of the
    typical pair (median cells ``c`` over the pairs) through the least-variance oracle at ε has
    a variance of at most ``COVER_NOISE / c`` = twice the sampling variance of a cell at
    uniform frequencies (the oracle noise no longer dominates, so sharing respondents between
    the pairs of a unit pays; on UCI Adult from ε ≈ 4), else ``"clusters"``.  Given the design
    ``"cover"``, the discovery runs only when the least-error cover of
    :func:`mprr.pair_cover.cover_pairs` uses triples (otherwise it is all pairs and there is
    nothing for the discovery to choose).  In a cover Tv bounds the domain of a triple.

    Parameters
    ----------
    n
        Expected number of respondents (``None``: assume 10,000).
    sizes
        Category counts of the attributes.
    epsilon
        ε per respondent.
    discovery_share, Tv
        Fix φ (in [0, 1)) or Tv instead of choosing them.
    alpha
        Family-wise level of the tests.
    design
        Fix the design (one of :data:`DESIGNS`) instead of choosing it.
    """
    eps = check_epsilon(epsilon)
    sz = tuple(int(s) for s in sizes)
    m = len(sz)
    nn = 10_000 if n is None else int(n)
    pairs = max(m * (m - 1) // 2, 1)
    e = math.exp(min(eps, 700.0))

    def sd(cells: float, reports: float) -> float:
        """Per-cell standard deviation of a GRR estimate over ``reports`` reports."""
        return math.sqrt((e + cells - 2.0) / (max(reports, 1.0) * (e - 1.0) ** 2))

    if design is not None and design not in DESIGNS:
        raise ConfigurationError(f"design must be one of {list(DESIGNS)} or None, got {design!r}")
    reasons = []
    typical = float(np.median([a * b for i, a in enumerate(sz) for b in sz[i + 1:]])) if m > 1 else 1.0
    if design is None:
        # oracle variance of one report of the typical pair against its sampling variance (uniform)
        oracle_var = float(best_oracle(max(int(round(typical)), 2), eps).variance(1)[0])
        chosen = EITHER if m > 2 and oracle_var <= COVER_NOISE / typical else CLUSTERS
        reasons.append(f"design {chosen}: a report of a typical pair ({typical:g} cells) has oracle variance "
                       f"{oracle_var:.3g} " + ("≤" if chosen == EITHER else ">") + f" {COVER_NOISE:g}/cells = "
                       f"{COVER_NOISE / typical:.3g}" + ("" if m > 2 else f" ({m} attributes: no cover)"))
    else:
        chosen = design
        reasons.append(f"design {chosen} (given)")
    if discovery_share is None and chosen == COVER and len(cover_pairs(sz, eps)) >= pairs:
        phi = 0.0
        reasons.append(f"discovery share 0: the least-error cover at ε is the {pairs} pairs themselves "
                       "(no triple for the discovery to choose)")
    elif discovery_share is None:
        # reports a pair needs for a per-cell noise below 0.5/cells: 4 c² (e^ε + c − 2) / (e^ε − 1)²
        need = 4.0 * typical ** 2 * (e + typical - 2.0) / (e - 1.0) ** 2
        least = need * pairs / nn
        phi = min(DISCOVERY_MAX, max(0.2, 2.0 * least)) if least <= DISCOVERY_LEAST else 0.0
        reasons.append(f"discovery share {phi:g}: a typical pair ({typical:g} cells) needs {need:,.0f} reports for "
                       f"a per-cell noise below 0.5/cells, i.e. φ = {least:.3g} " +
                       (f"≤ {DISCOVERY_LEAST:.3g} (twice that, in [0.2, {DISCOVERY_MAX:g}])" if phi
                        else f"> {DISCOVERY_LEAST:.3g}"))
    else:
        phi = check_unit("discovery_share", discovery_share, high_open=True)
        reasons.append(f"discovery share {phi:g} (given)")
    if Tv is None:
        # a cluster of c cells replacing two typical attributes, weights ∝ cells^(2/3)
        others = max(m - 2, 0) * float(np.median(sz)) ** (2.0 / 3.0)

        def reports(c: float) -> float:
            return float((1.0 - phi) * nn * c ** (2.0 / 3.0) / (c ** (2.0 / 3.0) + others))

        tv = max(sz)
        c = tv
        while c < 4096 and 0.5 * (c * 2) * sd(c * 2, reports(c * 2)) < TV_DEVIATION:
            c *= 2
            tv = c
        reasons.append(f"Tv {tv}: the largest cluster domain whose raw estimate keeps ½·c·sd < {TV_DEVIATION:g} with "
                       f"its {reports(tv):,.0f} reports")
    else:
        if isinstance(Tv, bool) or not isinstance(Tv, int) or Tv < 1:
            raise ConfigurationError(f"Tv must be an integer >= 1, got {Tv!r}")
        tv = Tv
        reasons.append(f"Tv {tv} (given)")
    a = check_unit("alpha", alpha, low_open=True, high_open=True)
    return SampledClustersPlan(phi, tv, a, "; ".join(reasons), chosen)


def pair_estimate(data: ReportedData, j: int) -> PairEstimate:
    """Debiased table of discovery pair ``j`` and its covariance, from its ``n_j`` reports."""
    oracle = data.oracles[j]
    shape = data.unit_sizes[j]
    n_j = int(data.reports[j])
    support = np.asarray(data.counts[j], dtype=np.float64).reshape(-1)
    if isinstance(oracle, GRR):
        return matrix_estimate(oracle.matrix, support, (shape[0], shape[1]))
    return support_estimate(support.reshape(shape[0], shape[1]), n_j, oracle.p_star, oracle.q_star)


def pooled_marginals(releases: Sequence[ReportedData], sizes: Sequence[int], method: str) -> dict[Key, np.ndarray]:
    """Every unit's estimate from every phase, pooled, then made consistent (CALM 4.4, PriView).

    A unit reported in several phases (an attribute pair of the discovery that is also a
    release unit) gets the inverse-variance average of its unbiased estimates, post-processed
    once (Norm-Sub of the pooled estimate, not an average of Norm-Subs of noisier ones).  The
    variance of a cell of unit ``V`` over its ``n_V`` reports is taken as the oracle's
    approximate variance plus the sampling variance at uniform frequencies,
    ``σ²_V = q*(1 − q*)/(n_V (p* − q*)²) + (1/c_V)(1 − 1/c_V)/n_V`` (at a large ε the sampling
    term dominates); the consistency step weights the marginals by it.
    """
    sums: dict[Key, np.ndarray] = {}
    precision: dict[Key, float] = {}
    for data in releases:
        for j, unit in enumerate(data.units):
            if data.reports[j] < 1:
                continue
            cells = math.prod(data.unit_sizes[j])
            var = float(np.mean(data.variance(j))) + (1.0 - 1.0 / cells) / (cells * data.reports[j])
            key = tuple(int(a) for a in unit)
            sums[key] = sums.get(key, 0.0) + data.raw_frequencies(j).reshape(data.unit_sizes[j]) / var
            precision[key] = precision.get(key, 0.0) + 1.0 / var
    tables = {k: postprocess_frequencies(v / precision[k], method).reshape(v.shape) for k, v in sums.items()}
    if method == "none":
        return tables
    return make_consistent(tables, sizes, {k: 1.0 / p for k, p in precision.items()})


def rr_clusters_sampled_plan(schema: Schema, params: SampledClustersParameters) -> Plan:
    """The plan of :func:`rr_clusters_sampled_steps`: reports ``"discovery"`` of the pairs, one
    sampled pair per reporting party (when :func:`plan_sampled_clusters` gives φ > 0 and there
    are pairs), then reports ``"clusters"``, one sampled unit per party, the units (clusters or
    a cover) chosen after the discovery."""
    plan = plan_sampled_clusters(params.n, schema.sizes, params.epsilon, discovery_share=params.discovery_share,
                                 Tv=params.Tv, alpha=params.alpha, design=params.design)
    pairs = all_pairs(schema.m)
    discovery = (PhasePlan.report(DISCOVERY, pairs, assign="sampled"),) if plan.discovery_share > 0.0 and pairs else ()
    return Plan((*discovery, PhasePlan.report(RELEASE, assign="sampled")))


@declares(rr_clusters_sampled_plan)
def rr_clusters_sampled_steps(schema: Schema, params: SampledClustersParameters) -> Program:
    """RR-Clusters with sampled respondents as a step program (module docstring).

    Parameters
    ----------
    schema
        The attributes every party holds.
    params
        The :class:`~mprr.protocols.parameters.SampledClustersParameters`, validated when they
        were built: ``epsilon`` per respondent (each reports once, for discovery or for the
        release); ``n``, the expected number of respondents, for the plan
        (:func:`plan_sampled_clusters`); ``discovery_share``, ``Tv``: fix the plan's φ or Tv
        instead of choosing them; ``alpha``, the family-wise level of the tests of independence
        (Bonferroni over the pairs); ``design``: fix the plan's design, ``"clusters"``
        (disjoint), ``"cover"`` (overlapping units of at most three attributes covering every
        pair) or ``"clusters-or-cover"`` (decided after the discovery), instead of choosing it;
        ``oracle``: ``"adaptive"`` (default) or ``"grr"`` / ``"oue"`` / ``"olh"`` for every
        report; ``postprocess``: post-processing of the cluster estimates (``"norm-sub"`` default).

    Returns
    -------
    ProtocolResult
        ``"RR-Clusters-Sampled"``: a :class:`MarginalSetDistribution` of the cluster estimates;
        phases ``"discovery"`` (when φ > 0) and ``"clusters"``; ``clusters`` (the release units:
        disjoint clusters, or the cover's overlapping units), ``dependence`` (the
        bias-corrected V of the significant pairs, 0 elsewhere), ``details["tests"]`` (every
        pair's statistic, p-value, V and whether it was significant) and ``details["plan"]``;
        ``parameters["design"]`` (the design released: ``"clusters"`` or ``"cover"``),
        ``parameters["algorithm1_clusters"]`` (Algorithm 1's clusters of the significant pairs)
        and ``parameters["crossing_pairs"]`` (the significant pairs that no such cluster holds).

    Notes
    -----
    Draw order: :class:`~mprr.protocols.steps.Report` ``assign="sampled"``: the discovery step
    over the pairs (``abstain = 1 − φ``; uniform, or weighted like the cover when a cover may be
    released), then the release step over the clusters or the cover's units, excluding the
    discovery reporters.
    """
    method, eps, oracle = params.postprocess, params.epsilon, params.oracle
    sizes = schema.sizes
    m = schema.m
    plan = plan_sampled_clusters(params.n, sizes, eps, discovery_share=params.discovery_share, Tv=params.Tv,
                                 alpha=params.alpha, design=params.design)
    pairs = all_pairs(m)
    dependence = np.eye(m)
    tests: list[dict[str, object]] = []
    significant_pairs: list[tuple[int, int]] = []
    releases = []
    if plan.discovery_share > 0.0 and pairs:
        # with a cover in view the discovery's pairs, pooled into the estimate, are drawn like the cover's
        pair_weights = unit_weights(pairs, sizes, eps) if plan.design in (COVER, EITHER) else None
        got = yield Report(DISCOVERY, pairs, oracle_specs(pairs, sizes, eps, oracle), assign="sampled",
                           weights=pair_weights, abstain=1.0 - plan.discovery_share)
        found = got.data
        assert isinstance(found, ReportedData)
        releases.append(found)
        level = plan.alpha / len(pairs)
        for j, (a, b) in enumerate(pairs):
            est = pair_estimate(found, j) if found.reports[j] >= 2 else None
            if est is None or float(np.sum(est.estimate)) <= 0.0:
                # too few reports, or an OUE / OLH estimate whose total the noise drove to <= 0: untestable
                tests.append({"pair": [a, b], "reports": int(found.reports[j]), "statistic": None, "p_value": None,
                              "cramers_v": None, "significant": False})
                continue
            try:
                test = est.wald()  # covariance under independence: the test holds its size at few reports
                effect = est.effect()
            except EstimationError:  # a degenerate table (no variance left in its contrasts): untestable
                tests.append({"pair": [a, b], "reports": int(found.reports[j]), "statistic": None, "p_value": None,
                              "cramers_v": None, "significant": False})
                continue
            significant = bool(test.p_value < level)
            if significant:
                dependence[a, b] = dependence[b, a] = max(float(effect.cramers_v), 1e-9)
                significant_pairs.append((a, b))
            tests.append({"pair": [a, b], "reports": int(found.reports[j]), "statistic": float(test.statistic),
                          "df": int(test.df), "p_value": float(test.p_value), "cramers_v": float(effect.cramers_v),
                          "cramers_v_se": float(effect.cramers_v_se), "significant": significant})
    clustering = cluster_attributes(np.clip(dependence, 0.0, 1.0), sizes, plan.Tv, 1e-9)
    clusters = tuple(sorted((tuple(sorted(int(a) for a in c)) for c in clustering.clusters), key=lambda c: c[0]))
    found_clusters = clusters
    inside = {p for c in clusters for p in itertools.combinations(c, 2)}
    crossing = [p for p in significant_pairs if p not in inside]
    design = plan.design
    if design == EITHER:
        # the product of disjoint clusters is right when no detected dependence crosses them; without
        # a discovery (too few respondents to test a pair) the many units of a cover would each get
        # too few reports too: the clusters design, one attribute per respondent
        design = COVER if crossing else CLUSTERS
    if design == COVER:
        clusters = cover_pairs(sizes, eps, max_cells=plan.Tv)
        weights = unit_weights(clusters, sizes, eps)
    else:
        weights = tuple(float(math.prod(sizes[a] for a in c)) ** (2.0 / 3.0) for c in clusters)
    cells = [math.prod(sizes[a] for a in c) for c in clusters]
    got = yield Report(RELEASE, clusters, oracle_specs(clusters, sizes, eps, oracle), assign="sampled",
                       weights=weights, exclude=(DISCOVERY,) if releases else (),
                       notes={"dependence": dependence, "clusters": clusters})
    released = got.data
    assert isinstance(released, ReportedData)
    releases.append(released)
    if design == COVER:
        tables = pooled_marginals(releases, sizes, method)
    else:
        tables = consistent_marginals(released, sizes, method)
    out = {"epsilon": eps, "discovery_share": plan.discovery_share, "Tv": plan.Tv, "alpha": plan.alpha,
              "oracle": oracle, "plan": plan.reason, "design": design,
              "crossing_pairs": [list(p) for p in crossing],
              "algorithm1_clusters": [list(c) for c in found_clusters], "cluster_cells": cells,
              "significant_pairs": [list(p) for p in significant_pairs],
              "reports_per_cluster": list(released.reports)}
    return release_result(
        "RR-Clusters-Sampled", n=got.n, parameters=out, schema=schema,
        estimate=MarginalSetDistribution(tables, sizes), releases=tuple(releases), postprocessing=method,
        clusters=clusters, clustering_trace=clustering.trace, dependence=dependence,
        details={"tests": tests, "plan": plan}, ledger=respondent_ledger(releases, schema.names),
    )


rr_clusters_sampled = local_protocol(rr_clusters_sampled_steps, "rr_clusters_sampled", SampledClustersParameters)
