"""RR-Clusters (main paper Section 4), fast path.

1. **Dependences** between attributes without a trusted party — main paper 4.1, 4.2 or 4.3
   (:mod:`mprr.protocols.dependences`).
2. **Algorithm 1** clusters the attributes: merge by descending dependence while dependence
   ``≥ Td`` and the merged cluster has ``≤ Tv`` value combinations
   (:func:`mprr.clustering.cluster_attributes`).
3. **RR-Joint per cluster**: every party releases each cluster's joint value through the
   6.3.2 matrix, the ε-optimal matrix over the cluster domain carrying ``Σ_{A∈C} ε_A``, so the
   release spends the same budget as RR-Independent (main paper 6.3).  The controller
   estimates each cluster with eq. (2) and the joint distribution as the product of the
   cluster distributions.

**Budget per respondent** (``epsilon``): the plan is fixed before the data is seen.  A share
``discovery_share`` s of ε goes to phase 1 (4.1: the paper's ``keep_or_uniform(|A|, p₁)`` with
the p₁ whose attribute ε add up to ε·s, :func:`~mprr.protocols.budget.keep_for_budget`; 4.3:
ε·s/(m(m−1)/2) per pair, sequential composition over the pairs), the rest to the release:
with the p₂ whose attribute ε_A add up to ε·(1 − s), cluster ``C`` gets ``Σ_{A∈C} ε_A`` (main
paper 6.3.2), so the release spends ``ε·(1 − s)`` whatever clusters Algorithm 1 forms.
Every party's sequential ledger is then at most ε for any data (4.2, exact values with ε = ∞,
cannot meet a budget and is refused).  The papers' per-attribute setting (``p`` or
``epsilon_per_attribute``) gives the 6.3.2 budgets below.

Clusters are canonical: each a sorted tuple of attribute indices, ordered by smallest index
(the order :func:`mprr.clustering.cluster_attributes` returns).  A cluster's joint code is the
C-order code of its attributes in that sorted order.

**Replays** (dependence method 4.1 only): a singleton cluster ``{A}`` would be released with
the 6.3.2 matrix carrying ε_A — mathematically the very matrix A was released with in phase 1
(the ε-optimal matrix of |A| values and ε_A).  As a :class:`mprr.privacy.PrivacyAccountant`
prescribes for a repeated request, every party resends its phase-1 value of A: no uniform is
drawn and no ε is spent (the ledger has no new entry; ``ReleasedData.replayed`` marks it).
The release phase still uses matrices carrying Σ_{A∈C} ε_A for every cluster (main paper 6.3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mprr.clustering import Clustering, cluster_attributes
from mprr.data import Schema
from mprr.domain import check_int
from mprr.protocols.budget import (
    CLUSTER_FAMILY,
    attribute_epsilons,
    attribute_family,
    chosen_specs,
    cluster_spec,
    keep_epsilon,
    keep_for_budget,
)
from mprr.protocols.steps import Matrix, MatrixSpec
from mprr.protocols.dependences import PHASE, dependence_plan, dependence_steps
from mprr.protocols.estimate import product_estimate
from mprr.protocols.independent import matrix_parameters
from mprr.protocols.joint import check_joint_cells
from mprr.protocols.local import local_protocol
from mprr.protocols.parameters import RRClustersParameters
from mprr.protocols.plan import Plan, PhasePlan, declares
from mprr.protocols.result import release_result
from mprr.protocols.steps import Program, Release

__all__ = ["rr_clusters", "rr_clusters_steps", "release_clusters"]


def release_clusters(
    clustering: Clustering, sizes: Sequence[int], max_cells: int
) -> tuple[tuple[int, ...], ...]:
    """Algorithm 1's clusters in canonical form, each domain checked against ``max_cells``.

    Each cluster a sorted tuple of attribute indices, ordered by smallest index; a cluster
    over more than ``max_cells`` joint cells raises DomainTooLargeError
    (:func:`~mprr.protocols.joint.check_joint_cells`) before anything is released.
    """
    check_int("max_cells", max_cells, 2)  # once, not for every cluster
    clusters = tuple(tuple(sorted(int(a) for a in c)) for c in clustering.clusters)
    clusters = tuple(sorted(clusters, key=lambda c: c[0]))
    for c in clusters:
        check_joint_cells([sizes[a] for a in c], max_cells, f"the release of cluster {c}",
                          remedy=f"lower Tv (Algorithm 1 then forms clusters of at most Tv value "
                                 f"combinations) or raise max_cells (at most {max_cells:,} now)")
    return clusters


def rr_clusters_plan(schema: Schema, params: RRClustersParameters) -> Plan:
    """The plan of :func:`rr_clusters_steps`: the dependence phase of ``params.dependence``
    (:func:`~mprr.protocols.dependences.dependence_plan`: a release under 4.1, a secure sum of
    the pair vectors under 4.2 / 4.3), then the release ``"clusters"``, whose units Algorithm 1
    chooses from the dependences, through the 6.3.2 matrices
    (:data:`~mprr.protocols.budget.CLUSTER_FAMILY`) and, under 4.1, the attribute matrices' family
    for a singleton cluster that replays phase 1."""
    family = attribute_family(p=params.p, epsilon_per_attribute=params.epsilon_per_attribute, epsilon=params.epsilon)
    dependence = params.dependence
    clusters = (CLUSTER_FAMILY,) if dependence != "4.1" or family is None else (family, CLUSTER_FAMILY)
    return Plan((*dependence_plan(schema, dependence, family), PhasePlan.release("clusters", families=clusters)))


@declares(rr_clusters_plan)
def rr_clusters_steps(schema: Schema, params: RRClustersParameters) -> Program:
    """RR-Clusters (main paper Section 4 with Algorithm 1 and the 6.3.2 matrices) as a step program.

    Steps: phase ``"dependence"`` (:func:`~mprr.protocols.dependences.dependence_steps`: a
    release under 4.1, a secure sum under 4.2 / 4.3), then phase ``"clusters"`` announcing
    Algorithm 1's clusters, one unit per cluster through the 6.3.2 matrix (under 4.1 a
    singleton cluster replays phase 1).

    Parameters
    ----------
    schema
        The attributes every party holds (all the program knows of the data before it runs).
    params
        The :class:`~mprr.protocols.parameters.RRClustersParameters`, validated when they were
        built (the fast-path function :func:`rr_clusters` builds them from its keywords):

        ``Tv``, ``Td``
            Algorithm 1: largest number of value combinations of a cluster; smallest
            dependence for two clusters to be merged.
        ``p``, ``epsilon_per_attribute``, ``epsilon``
            Exactly one.  The papers' setting: keep probability of main paper 6.3.1
            (``keep_or_uniform(|A|, p)``) or ε of each attribute (``grr``), scalar or one per
            attribute; these give ε_A, the matrices of phase 1 (4.1) and the budget of each
            cluster ``Σ_{A∈C} ε_A`` (the total depends on the dependence method and, through
            replays, on the clusters).  Or ``epsilon``: ε per respondent, planned as in the
            module docstring so that every party's sequential ledger totals at most
            ``epsilon`` (not with 4.2).
        ``discovery_share``
            With ``epsilon`` only: the share of the budget spent on phase 1, in (0, 1)
            (default 0.5).
        ``dependence``
            ``"4.1"`` (RR per attribute, default), ``"4.2"`` (exact bivariate tables; ε = ∞, no
            DP guarantee) or ``"4.3"`` (RR per pair + secure sum).
        ``tables``
            4.1 only: dependences on ``"estimated"`` (default, eq. (2) through ``P^i ⊗ P^j``)
            or ``"randomized"`` (raw released) bivariate tables.
        ``pair_epsilon``
            4.3 only: ε of every pair matrix (default ``ε_i + ε_j``).
        ``postprocess``
            ``"clip-rescale"`` (paper, default), ``"project-simplex"``, ``"ibu"`` or ``"none"``;
            used for the cluster estimates and the estimated pair tables.
        ``max_cells``
            Largest cluster domain the release accepts (DomainTooLargeError beyond; only
            reachable when ``Tv > max_cells``).

    Returns
    -------
    ProtocolResult
        ``estimate``: ``ProductDistribution`` of the cluster distributions; phases
        ``"dependence"`` then ``"clusters"``; ``clusters``, ``clustering_trace`` (Algorithm 1
        merge steps) and ``dependence`` (the (m, m) matrix); ``details["dependence_tables"]``.

    Raises
    ------
    ConfigurationError
        If ``p`` or ``epsilon_per_attribute`` is a list without one value per attribute of
        ``schema`` (every other rule is the parameter object's).

    Notes
    -----
    Draw order (per party, :mod:`mprr.streams`):

    - phase 1, 4.1: m uniforms, one per attribute in schema order; 4.2: none; 4.3: m(m−1)/2
      uniforms, one per pair ``(i, j)``, ``i < j``, lexicographic;
    - phase 2: one uniform per cluster, clusters in canonical order (sorted by smallest
      attribute index), except, under 4.1, singleton clusters (replays of phase 1: no
      uniform); the cluster value is the C-order code of its sorted attributes.
    """
    method = params.postprocess
    dependence = params.dependence
    pair_epsilon = params.pair_epsilon
    sizes = schema.sizes
    m = schema.m
    budgeted = params.epsilon is not None
    attr_mats: tuple[Matrix, ...]
    if params.epsilon is not None:
        total = params.epsilon
        discovery = total * params.discovery_share
        specs, attr_mats = chosen_specs(sizes, epsilon=discovery)
        if dependence == "4.3" and m > 1:
            pair_epsilon = discovery / (m * (m - 1) // 2)
        release_p = keep_for_budget(sizes, total - discovery)
        eps = tuple(keep_epsilon(k, release_p) for k in sizes)
    else:
        specs, attr_mats = chosen_specs(sizes, p=params.p, epsilon_per_attribute=params.epsilon_per_attribute)
        eps = attribute_epsilons(attr_mats)
    phase1 = yield from dependence_steps(
        schema, dependence, specs, postprocess=method, tables=params.tables, pair_epsilon=pair_epsilon
    )
    clustering = cluster_attributes(phase1.dependence, sizes, params.Tv, params.Td)
    clusters = release_clusters(clustering, sizes, params.max_cells)
    # Under 4.1 a singleton cluster {A} whose release matrix is the matrix of A's phase-1
    # release (the 6.3.2 matrix carrying ε_A is that matrix) is a replay.
    same_budget = not budgeted or abs(eps[0] - float(attribute_epsilons(attr_mats)[0])) <= 1e-12 * eps[0]
    replays = tuple(
        (PHASE, c[0]) if dependence == "4.1" and len(c) == 1 and same_budget else None for c in clusters
    )
    cspecs: tuple[MatrixSpec, ...] = tuple(
        specs[c[0]] if again is not None else cluster_spec([eps[a] for a in c])
        for c, again in zip(clusters, replays)
    )
    got = yield Release(
        "clusters", clusters, cspecs, replays=replays,
        notes={"dependence": phase1.dependence, "clusters": clusters},
    )
    record = {
        **matrix_parameters(params.p, params.epsilon_per_attribute, params.epsilon, None),
        "discovery_share": params.discovery_share if budgeted else None,
        "Tv": params.Tv,
        "Td": params.Td,
        "dependence": dependence,
        "tables": params.tables,
        "pair_epsilon": pair_epsilon,
        "attribute_epsilons": list(attribute_epsilons(attr_mats)),
        "cluster_epsilons": [float(P.epsilon) for P in got.data.randomized_matrices],
        "cluster_cells": [math.prod(sizes[a] for a in c) for c in clusters],
    }
    return release_result(
        "RR-Clusters", n=got.n, parameters=record, schema=schema,
        estimate=product_estimate(got.data, sizes, method), releases=(phase1.released, got.data),
        postprocessing=method, clusters=clusters, clustering_trace=clustering.trace,
        dependence=phase1.dependence, details={"dependence_tables": phase1.tables, **phase1.details},
    )


rr_clusters = local_protocol(rr_clusters_steps, "rr_clusters", RRClustersParameters)
