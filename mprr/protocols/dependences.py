"""Phase 1 of RR-Clusters: dependences between attributes without a trusted party.

The three methods of main paper Section 4:

``"4.1"`` — RR on each attribute (Section 4.1)
    Every party publishes each attribute randomized with the attribute matrix (the
    randomization of Corollary 1, ``keep_or_uniform(|A|, p)`` in the paper's experiments).
    The controller computes dependences from the bivariate tables of the released data:
    ``tables="randomized"`` uses the raw tables of Y (the paper's text: attenuated but
    rank-preserving dependences, Proposition 1 / Corollary 1); ``tables="estimated"``
    (default) first estimates each pair's table through the Kronecker inverse
    ``((P^i ⊗ P^j)ᵀ)⁻¹ λ̂^{ij}`` (RR-Ind-Joint) and post-processes it.  ε = Σ_A ε_A, linkable.
``"4.2"`` — exact bivariate distributions via secure sum (Section 4.2)
    Parties contribute their true pairs to a modular secure sum; the controller learns the
    exact bivariate tables.  The local driver computes these tables centrally (stand-in for
    the secure sum).  ε = ∞: **no DP guarantee**.  No uniform is drawn.
``"4.3"`` — RR on each pair of attributes + secure sum (Section 4.3)
    Every party randomizes each pair ``(A^i, A^j)``, ``i < j``, with ``P^{ij}`` (ε-optimal over
    the pair, carrying ``ε_i + ε_j`` or a given ``pair_epsilon``); the randomized pairs are
    summed securely (unlinkable) and each pair table is estimated with eq. (2).  Sequential
    composition charges each attribute m − 1 times; the named ``unlinkable-pairs`` policy of
    :mod:`mprr.privacy.ledger` counts it once.

Dependence measure: |Pearson| for two ordinal attributes (eq. 8), Cramér's V otherwise (eq. 9),
:func:`mprr.dependence.dependence_matrix`.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mprr.data import Dataset, Schema
from mprr.dependence import bivariate_tables, dependence_matrix
from mprr.errors import ConfigurationError
from mprr.matrices import RandomizationMatrix, kron
from mprr.protocols.budget import CLUSTER_FAMILY, pair_spec
from mprr.protocols.estimate import check_postprocess, estimate_unit
from mprr.protocols.local import run_local
from mprr.protocols.plan import PhasePlan
from mprr.protocols.release import ReleasedData, all_pairs
from mprr.protocols.steps import MatrixSpec, Release, Released, SecureSum, Step, singletons
from mprr.streams import Randomness

__all__ = [
    "DEPENDENCE_METHODS",
    "TABLE_SOURCES",
    "DependencePhase",
    "check_dependence_options",
    "dependence_phase",
    "dependence_steps",
]

DEPENDENCE_METHODS: tuple[str, ...] = ("4.1", "4.2", "4.3")
"""Section of the main paper giving the dependence method."""

TABLE_SOURCES: tuple[str, ...] = ("estimated", "randomized")
"""For method 4.1: dependences on eq. (2)-estimated pair tables, or on the raw released ones."""

PHASE = "dependence"


@dataclass(frozen=True, eq=False)
class DependencePhase:
    """Outcome of phase 1 of RR-Clusters.

    Attributes
    ----------
    method
        ``"4.1"``, ``"4.2"`` or ``"4.3"``.
    released
        What the parties released (phase ``"dependence"``).
    tables
        The bivariate table of every pair ``(i, j)``, ``i < j``, the dependences were computed
        from (probabilities for estimated tables, counts otherwise).
    dependence
        ``(m, m)`` symmetric dependence matrix (1 on the diagonal).
    details
        What the driver added (the secure-sum session on the actor path).
    """

    method: str
    released: ReleasedData
    tables: dict[tuple[int, int], np.ndarray]
    dependence: np.ndarray
    details: Mapping[str, Any] = field(default_factory=dict)


def check_dependence_options(method: object, tables: object, pair_epsilon: object) -> None:
    """Validate the options of phase 1 of RR-Clusters (main paper 4.1 / 4.2 / 4.3).

    ``method`` in :data:`DEPENDENCE_METHODS`, ``tables`` in :data:`TABLE_SOURCES`
    (``"randomized"`` with 4.1 only), ``pair_epsilon`` with 4.3 only.

    Raises
    ------
    ConfigurationError
        Naming the first invalid option.
    """
    if method not in DEPENDENCE_METHODS:
        raise ConfigurationError(f"dependence must be one of {list(DEPENDENCE_METHODS)}, got {method!r}")
    if tables not in TABLE_SOURCES:
        raise ConfigurationError(f"tables must be one of {list(TABLE_SOURCES)}, got {tables!r}")
    if pair_epsilon is not None and method != "4.3":
        raise ConfigurationError(f"pair_epsilon applies to dependence='4.3' only, got dependence={method!r}")
    if tables != "estimated" and method != "4.1":
        raise ConfigurationError(
            f"tables='randomized' applies to dependence='4.1' only, got dependence={method!r}"
        )


def dependence_plan(schema: Schema, method: str, family: str | None = None) -> tuple[PhasePlan, ...]:
    """The phases of :func:`dependence_steps` with ``method``: 4.1 — a release of the m
    singletons through the attribute matrices' ``family`` (``None``: not declared); 4.2 / 4.3 —
    a secure sum of the m(m−1)/2 pairs (exact under 4.2; under 4.3 randomized through the pair
    matrices of :data:`~mprr.protocols.budget.CLUSTER_FAMILY`), a vector of
    Σ_{i<j} |A_i||A_j| cells per party; none when there is no pair to sum.  ``method`` is a
    validated one (:class:`~mprr.protocols.parameters.RRClustersParameters`)."""
    if method == "4.1":
        return (PhasePlan.release(PHASE, singletons(schema.m), families=None if family is None else (family,)),)
    pairs = all_pairs(schema.m)
    return (PhasePlan.secure_sum(PHASE, pairs, schema.sizes, exact=method == "4.2",
                                 families=() if method == "4.2" else (CLUSTER_FAMILY,)),) if pairs else ()


def dependence_steps(
    schema: Schema,
    method: str,
    matrices: Sequence[MatrixSpec | RandomizationMatrix],
    *,
    postprocess: str,
    tables: str = "estimated",
    pair_epsilon: float | None = None,
) -> Generator[Step, Released, DependencePhase]:
    """Phase 1 of RR-Clusters (main paper 4.1 / 4.2 / 4.3, see the module docstring) as a step program.

    The options are validated ones (RR-Clusters' :class:`~mprr.protocols.parameters.RRClustersParameters`,
    or :func:`dependence_phase`, which checks them with :func:`check_dependence_options`).

    Parameters
    ----------
    schema
        The public schema.
    method
        ``"4.1"``, ``"4.2"`` or ``"4.3"``.
    matrices
        Each attribute's matrix, or its spec (4.1 releases through them; their eq. (4) ε give
        the 4.3 pair budgets ε_i + ε_j).
    postprocess
        Post-processing of estimated tables (4.1 with ``tables="estimated"``, 4.3).
    tables
        4.1 only: ``"estimated"`` (default) or ``"randomized"``.
    pair_epsilon
        4.3 only: ε of every pair matrix instead of ``ε_i + ε_j``.

    Notes
    -----
    Draw order (per party): 4.1 — m uniforms, one per attribute in schema order; 4.2 — none;
    4.3 — m(m−1)/2 uniforms, one per pair ``(i, j)``, ``i < j``, in lexicographic order
    ``(0,1), (0,2), ..., (m−2, m−1)``; the pair value is the C-order code ``x_i·r_j + x_j``.
    """
    sizes = schema.sizes
    specs = tuple(s if isinstance(s, MatrixSpec) else MatrixSpec.dense(s) for s in matrices)
    m = schema.m
    pairs = all_pairs(m)
    details: Mapping[str, Any] = {}
    if method == "4.1":
        got = yield Release(PHASE, singletons(m), specs)
        released = got.data
        raw = bivariate_tables(released.codes, sizes)
        if tables == "randomized":
            pair_tables = {k: v.astype(np.float64) for k, v in raw.items()}
        else:
            mats = released.matrices
            pair_tables = {
                (i, j): estimate_unit(kron(mats[i], mats[j]), raw[(i, j)], postprocess)
                for (i, j) in pairs
            }
    elif not pairs:
        released = ReleasedData(PHASE, (), (), (), None, (), linkable=False, exact=method == "4.2")
        pair_tables = {}
    elif method == "4.2":
        got = yield SecureSum(PHASE, pairs)
        released, details = got.data, got.details
        pair_tables = dict(zip(pairs, released.counts))
    else:
        eps = [float(s.build([sizes[j]]).epsilon) for j, s in enumerate(specs)]
        pair_specs = tuple(pair_spec((eps[i], eps[j]), pair_epsilon) for i, j in pairs)
        # no per-attribute shares: the ledger books each pair matrix's own eq. (4) ε, split
        # equally between its two attributes (what a party computes from the matrix)
        got = yield SecureSum(PHASE, pairs, pair_specs)
        released, details = got.data, got.details
        pair_tables = {
            pair: estimate_unit(P, counts, postprocess)
            for pair, P, counts in zip(pairs, released.randomized_matrices, released.counts)
        }
    dep = dependence_matrix(pair_tables, schema.kinds) if m > 1 else np.ones((1, 1))
    return DependencePhase(method=method, released=released, tables=pair_tables, dependence=dep, details=details)


def dependence_phase(
    dataset: Dataset,
    method: str,
    matrices: Sequence[MatrixSpec | RandomizationMatrix],
    *,
    rng: Randomness,
    postprocess: str,
    tables: str = "estimated",
    pair_epsilon: float | None = None,
) -> DependencePhase:
    """Phase 1 of RR-Clusters run on every record of ``dataset``: :func:`dependence_steps` (its
    parameters) after :func:`check_dependence_options`, by the local driver
    (:func:`mprr.protocols.local.run_local`; ``rng`` a ``numpy.random.Generator`` or a
    :class:`mprr.streams.PartyStreams`).

    Raises
    ------
    ConfigurationError
        Naming the first invalid option, or an invalid post-processing.
    """
    check_dependence_options(method, tables, pair_epsilon)
    return run_local(dependence_steps, dataset, rng=rng, method=method, matrices=matrices,
                     postprocess=check_postprocess(postprocess), tables=tables, pair_epsilon=pair_epsilon)
