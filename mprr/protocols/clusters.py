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

from mprr.clustering import cluster_attributes
from mprr.data import Dataset
from mprr.ledger import Ledger
from mprr.protocols.budget import attribute_epsilons, attribute_matrices, cluster_matrix
from mprr.protocols.dependences import dependence_phase
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess, product_estimate
from mprr.protocols.independent import matrix_parameters
from mprr.protocols.joint import DEFAULT_JOINT_MAX_CELLS, check_joint_cells
from mprr.protocols.release import check_inputs, release_units
from mprr.protocols.result import ProtocolResult
from mprr.streams import Randomness, draw_uniforms

__all__ = ["rr_clusters"]


def rr_clusters(
    dataset: Dataset,
    *,
    Tv: float,
    Td: float,
    p: float | Sequence[float] | None = None,
    epsilon: float | Sequence[float] | None = None,
    dependence: str = "4.1",
    tables: str = "estimated",
    pair_epsilon: float | None = None,
    rng: Randomness,
    postprocess: str = DEFAULT_POSTPROCESS,
    max_cells: int = DEFAULT_JOINT_MAX_CELLS,
) -> ProtocolResult:
    """Run RR-Clusters (main paper Section 4 with Algorithm 1 and the 6.3.2 matrices).

    Parameters
    ----------
    dataset
        The parties' true records.
    Tv
        Algorithm 1: largest number of value combinations of a cluster.
    Td
        Algorithm 1: smallest dependence for two clusters to be merged.
    p, epsilon
        Exactly one: keep probability of main paper 6.3.1 (``keep_or_uniform(|A|, p)``) or ε
        per attribute (``grr``); scalar or one per attribute.  These give ε_A, the matrices of
        phase 1 (4.1) and the budget of each cluster ``Σ_{A∈C} ε_A``.
    dependence
        ``"4.1"`` (RR per attribute, default), ``"4.2"`` (exact bivariate tables; ε = ∞, no DP
        guarantee) or ``"4.3"`` (RR per pair + secure sum).
    tables
        4.1 only: dependences on ``"estimated"`` (default, eq. (2) through ``P^i ⊗ P^j``) or
        ``"randomized"`` (raw released) bivariate tables.
    pair_epsilon
        4.3 only: ε of every pair matrix (default ``ε_i + ε_j``).
    rng
        ``numpy.random.Generator`` or :class:`mprr.streams.PartyStreams`.
    postprocess
        ``"clip-rescale"`` (paper, default), ``"project-simplex"``, ``"ibu"`` or ``"none"``;
        used for the cluster estimates and the estimated pair tables.
    max_cells
        Largest cluster domain the release accepts (DomainTooLargeError beyond; only reachable
        when ``Tv > max_cells``).

    Returns
    -------
    ProtocolResult
        ``estimate``: ``ProductDistribution`` of the cluster distributions; phases
        ``"dependence"`` then ``"clusters"``; ``clusters``, ``clustering_trace`` (Algorithm 1
        merge steps) and ``dependence`` (the (m, m) matrix); ``details["dependence_tables"]``.

    Notes
    -----
    Draw order (per party, :mod:`mprr.streams`):

    - phase 1, 4.1: m uniforms, one per attribute in schema order; 4.2: none; 4.3: m(m−1)/2
      uniforms, one per pair ``(i, j)``, ``i < j``, lexicographic;
    - phase 2: one uniform per cluster, clusters in canonical order (sorted by smallest
      attribute index), except, under 4.1, singleton clusters (replays of phase 1: no
      uniform); the cluster value is the C-order code of its sorted attributes.
    """
    check_inputs(dataset, rng)
    method = check_postprocess(postprocess)
    sizes = dataset.sizes
    attr_mats = attribute_matrices(sizes, p=p, epsilon=epsilon)
    eps = attribute_epsilons(attr_mats)
    phase1 = dependence_phase(
        dataset,
        dependence,
        attr_mats,
        rng=rng,
        postprocess=method,
        tables=tables,
        pair_epsilon=pair_epsilon,
    )
    clustering = cluster_attributes(phase1.dependence, sizes, Tv, Td)
    clusters = tuple(tuple(sorted(int(a) for a in c)) for c in clustering.clusters)
    clusters = tuple(sorted(clusters, key=lambda c: c[0]))
    for c in clusters:
        check_joint_cells([sizes[a] for a in c], max_cells, f"the release of cluster {c}")
    # Under 4.1 a singleton cluster {A} would be released again with the matrix of A's
    # phase-1 release (the 6.3.2 matrix carrying ε_A is that matrix): a replay.
    replay = dependence == "4.1"
    cmats = tuple(
        attr_mats[c[0]]
        if replay and len(c) == 1
        else cluster_matrix([sizes[a] for a in c], [eps[a] for a in c])
        for c in clusters
    )
    previous = [
        phase1.released.codes[:, c[0]] if replay and len(c) == 1 else None  # type: ignore[index]
        for c in clusters
    ]
    uniforms = draw_uniforms(rng, dataset.n, sum(p is None for p in previous))
    released = release_units(
        "clusters", dataset.codes, sizes, clusters, cmats, uniforms, previous=previous
    )
    estimate = product_estimate(released, sizes, method)
    names = dataset.schema.names
    ledger = Ledger(phase1.released.ledger_entries(names) + released.ledger_entries(names))
    params = {
        "n": dataset.n,
        "m": dataset.m,
        "sizes": list(sizes),
        **matrix_parameters(p, epsilon, None),
        "Tv": Tv,
        "Td": Td,
        "dependence": dependence,
        "tables": tables,
        "pair_epsilon": pair_epsilon,
        "attribute_epsilons": list(eps),
        "cluster_epsilons": [float(P.epsilon) for P in cmats],
        "cluster_cells": [math.prod(sizes[a] for a in c) for c in clusters],
    }
    return ProtocolResult(
        protocol="RR-Clusters",
        parameters=params,
        schema=dataset.schema,
        estimate=estimate,
        releases=(phase1.released, released),
        ledger=ledger,
        postprocessing=method,
        clusters=clusters,
        clustering_trace=clustering.trace,
        dependence=phase1.dependence,
        details={"dependence_tables": phase1.tables},
    )
