"""Choreographies of RR-Clusters (main paper Section 4) and RR-Adjustment (Section 5).

RR-Clusters with dependence method 4.1, as message rounds (main paper 4.1: "they have to send
their randomized record, then receive the attribute clustering and finally return their
randomized record according to the received clustering"):

1. phase ``"dependence"``: the controller broadcasts one request (plan = the m singletons,
   matrices ``P^j``); every party answers with its m randomized attribute values;
2. the controller computes the dependences from the bivariate tables of what it received
   (eq. (2)-estimated through ``P^i ⊗ P^j``, or raw), runs Algorithm 1 and **announces the
   clusters**: the plan of phase ``"clusters"`` carried by the next request;
3. phase ``"clusters"``: every party answers with one code per cluster (6.3.2 matrix
   carrying ``Σ_{A∈C} ε_A``), the controller estimates each cluster with eq. (2).  With 4.1,
   a singleton cluster ``{A}`` is requested with A's phase-1 matrix, so every party *replays*
   its phase-1 value of A (no uniform, no ε), exactly as :func:`mprr.protocols.rr_clusters`.

Traffic (fault-free, n parties, m attributes, l clusters): the controller sends 2n messages
and receives 2n, i.e. O(nm) bytes; each party sends 2 messages of ``O(m)`` bytes
(m and l codes) and receives 2.

Dependence methods 4.2 and 4.3 run through a secure sum (:mod:`parties.secure`, engine
``"paper"`` — main paper 4.2's modular sum, full mesh —, ``"graph"`` or ``"masked"``): every
party commits to the one-hot vector of each pair's value, true (4.2: ε = ∞, no DP guarantee)
or randomized through the pair matrix (4.3: one uniform per pair, lexicographic order,
unlinkable releases), and the controller learns only the pair tallies.  Cost
O(Σ_{i<j} |A_i||A_j| · n) per party with the paper engine (main paper 4.2).

RR-Adjustment applies Algorithm 2 (:func:`mprr.protocols.rr_adjustment`) to the RR-Independent
or RR-Clusters result on the controller: no message, no ε.
"""

from __future__ import annotations

import functools

from collections.abc import Sequence

import numpy as np

from mprr.clustering import cluster_attributes
from mprr.dependence import bivariate_tables, dependence_matrix
from mprr.errors import ConfigurationError
from mprr.matrices import kron
from mprr.protocols.adjustment import rr_adjustment
from mprr.protocols.budget import attribute_epsilons, check_epsilon, pair_matrix
from mprr.protocols.clusters import assemble_rr_clusters, release_clusters
from mprr.protocols.dependences import check_dependence_options
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess, estimate_unit
from mprr.protocols.joint import DEFAULT_JOINT_MAX_CELLS
from mprr.protocols.release import ReleasedData, all_pairs
from mprr.protocols.result import ProtocolResult
from parties.choreographies.basic import rr_independent
from parties.choreographies.common import attribute_specs, singletons
from parties.controller import Controller
from parties.protocol_messages import MatrixSpec
from parties.secure.engine import SecureSumEngine
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine

__all__ = ["ADJUSTMENT_BASES", "ENGINES", "rr_adjustment_choreography", "rr_clusters", "secure_engine"]

ADJUSTMENT_BASES: tuple[str, ...] = ("RR-Independent", "RR-Clusters")
"""Protocols RR-Adjustment can follow (main paper 6.2 items 3 and 4)."""

ENGINES = {
    "paper": PaperEngine,
    "graph": GraphEngine,
    "graph-direct": functools.partial(GraphEngine, relay=False),
    "masked": MaskedEngine,
    "masked-sparse": functools.partial(MaskedEngine, topology="regular", degree=8),
}
"""Secure-sum engines by name (:mod:`parties.secure`): the names the ``secure_sum`` parameter of
the scenarios takes.  ``graph-direct`` sends shares over direct party links (it needs a full
mesh); ``masked-sparse`` is the masked engine on a k-regular graph (k = 8; pass a configured
:class:`~parties.secure.masked.MaskedEngine` for another k)."""


def secure_engine(engine: str | SecureSumEngine, timeout: float) -> SecureSumEngine:
    """An engine instance: ``engine`` itself, or the named engine with ``round_timeout=timeout``."""
    if isinstance(engine, SecureSumEngine):
        return engine
    if engine not in ENGINES:
        raise ConfigurationError(f"engine must be one of {list(ENGINES)} or a SecureSumEngine, got {engine!r}")
    return ENGINES[engine](round_timeout=timeout)  # type: ignore[abstract]


async def _dependence_phase(
    ctl: Controller,
    dependence: str,
    specs: Sequence[MatrixSpec],
    eps: Sequence[float],
    *,
    tables: str,
    pair_epsilon: float | None,
    method: str,
    engine: str | SecureSumEngine,
) -> tuple[ReleasedData, dict[tuple[int, int], np.ndarray]]:
    """Phase 1 of RR-Clusters: what was released and the pair tables (as the fast path)."""
    schema = ctl.schema
    sizes = schema.sizes
    m = schema.m
    pairs = all_pairs(m)
    if dependence == "4.1":  # RR on each attribute, direct messages
        phase1 = await ctl.release("dependence", singletons(m), specs)
        released = phase1.released_data(schema)
        raw = bivariate_tables(released.codes, sizes)
        if tables == "randomized":
            return released, {k: v.astype(np.float64) for k, v in raw.items()}
        mats = phase1.matrices
        return released, {(i, j): estimate_unit(kron(mats[i], mats[j]), raw[(i, j)], method) for (i, j) in pairs}
    pair_specs = shares = pair_mats = None
    if dependence == "4.3":  # pair matrices P^{ij} carrying ε_i + ε_j (or pair_epsilon)
        pair_mats = [pair_matrix((sizes[i], sizes[j]), (eps[i], eps[j]), pair_epsilon) for i, j in pairs]
        pair_specs = [
            MatrixSpec.cluster_optimal(
                check_epsilon(pair_epsilon, "pair_epsilon") if pair_epsilon is not None
                else sum(check_epsilon(e, "pair attribute epsilon") for e in (eps[i], eps[j]))
            )
            for i, j in pairs
        ]
        shares = None if pair_epsilon is not None else [(eps[i], eps[j]) for i, j in pairs]
    if not pairs:
        return ReleasedData("dependence", (), (), (), None, (), linkable=False, exact=dependence == "4.2"), {}
    tally = await ctl.secure_release(
        "dependence", pairs, engine=secure_engine(engine, ctl.timeout), specs=pair_specs, shares=shares
    )
    released = tally.released_data(schema, shares=shares)
    if dependence == "4.2":
        return released, dict(zip(pairs, released.counts))
    return released, {
        pair: estimate_unit(P, counts, method) for pair, P, counts in zip(pairs, pair_mats, released.counts)  # type: ignore[arg-type]
    }


async def rr_clusters(
    ctl: Controller,
    *,
    Tv: float,
    Td: float,
    p: float | Sequence[float] | None = None,
    epsilon: float | Sequence[float] | None = None,
    dependence: str = "4.1",
    tables: str = "estimated",
    pair_epsilon: float | None = None,
    postprocess: str = DEFAULT_POSTPROCESS,
    max_cells: int = DEFAULT_JOINT_MAX_CELLS,
    engine: str | SecureSumEngine = "paper",
) -> ProtocolResult:
    """RR-Clusters: parameters as :func:`mprr.protocols.rr_clusters` (see the module docstring).

    ``engine`` (4.2 / 4.3 only): secure-sum engine name (``"paper"``, ``"graph"``,
    ``"masked"``; built with the controller's round timeout) or a configured engine.

    Raises
    ------
    ConfigurationError
        For invalid parameters (as the fast path) or an unknown engine.
    """
    method = check_postprocess(postprocess)
    check_dependence_options(dependence, tables, pair_epsilon)
    if dependence != "4.1" and not isinstance(engine, SecureSumEngine) and engine not in ENGINES:
        raise ConfigurationError(f"engine must be one of {list(ENGINES)} or a SecureSumEngine, got {engine!r}")
    schema = ctl.schema
    sizes = schema.sizes
    m = schema.m
    specs, attr_mats = attribute_specs(sizes, p=p, epsilon=epsilon)
    eps = attribute_epsilons(attr_mats)
    released1, pair_tables = await _dependence_phase(
        ctl, dependence, specs, eps, tables=tables, pair_epsilon=pair_epsilon, method=method, engine=engine
    )
    dep = dependence_matrix(pair_tables, schema.kinds) if m > 1 else np.ones((1, 1))
    ctl.note("dependence", dep)

    # Algorithm 1, then the cluster announcement and release (RR-Joint per cluster, 6.3.2)
    clustering = cluster_attributes(dep, sizes, Tv, Td)
    clusters = release_clusters(clustering, sizes, max_cells)
    ctl.note("clusters", clusters)
    # With 4.1 a singleton cluster {A} is requested with A's phase-1 matrix (the 6.3.2 matrix
    # carrying ε_A is that matrix): every party replays its phase-1 value (no uniform, no ε).
    replayed = tuple(len(c) == 1 and dependence == "4.1" for c in clusters)
    cspecs = tuple(
        specs[c[0]]
        if again
        else MatrixSpec.cluster_optimal(sum(check_epsilon(eps[a], "cluster attribute epsilon") for a in c))
        for c, again in zip(clusters, replayed)
    )
    phase2 = await ctl.release("clusters", clusters, cspecs)
    released2 = phase2.released_data(schema, replayed=replayed)
    details: dict[str, object] = {"dependence_tables": pair_tables}
    if dependence != "4.1" and ctl.tallies:
        details["secure_sum"] = {"engine": ctl.tallies[-1].engine, "session": ctl.tallies[-1].session,
                                 "contributors": len(ctl.tallies[-1].contributors)}
    result = assemble_rr_clusters(
        schema,
        (released1, released2),
        n=len(phase2.contributors),
        p=p,
        epsilon=epsilon,
        Tv=Tv,
        Td=Td,
        dependence=dependence,
        tables=tables,
        pair_epsilon=pair_epsilon,
        attribute_epsilons=eps,
        clustering=clustering,
        dependence_matrix=dep,
        details=details,
        method=method,
    )
    ctl.note("cluster estimates", result.estimate)
    return result


async def rr_adjustment_choreography(
    ctl: Controller,
    *,
    base: str = "RR-Independent",
    tol: float = 1e-9,
    max_iter: int = 1000,
    exact_limit: bool = False,
    **params: object,
) -> ProtocolResult:
    """RR-Adjustment (main paper Algorithm 2) after ``base`` (``"RR-Independent"`` or ``"RR-Clusters"``).

    ``params`` go to the base choreography; ``tol``, ``max_iter``, ``exact_limit`` to
    :func:`mprr.protocols.rr_adjustment`.  Runs on the controller only (no message).
    """
    if base == "RR-Independent":
        result = await rr_independent(ctl, **params)  # type: ignore[arg-type]
    elif base == "RR-Clusters":
        result = await rr_clusters(ctl, **params)  # type: ignore[arg-type]
    else:
        raise ConfigurationError(f"base must be one of {list(ADJUSTMENT_BASES)}, got {base!r}")
    adjusted = rr_adjustment(result, tol=tol, max_iter=max_iter, exact_limit=exact_limit)
    ctl.note("adjustment", adjusted.adjustment)
    return adjusted
