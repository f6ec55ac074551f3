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
    exact bivariate tables.  The fast path computes these tables centrally (stand-in for the
    secure sum).  ε = ∞: **no DP guarantee**.  No uniform is drawn.
``"4.3"`` — RR on each pair of attributes + secure sum (Section 4.3)
    Every party randomizes each pair ``(A^i, A^j)``, ``i < j``, with ``P^{ij}`` (ε-optimal over
    the pair, carrying ``ε_i + ε_j`` or a given ``pair_epsilon``); the randomized pairs are
    summed securely (unlinkable) and each pair table is estimated with eq. (2).  Sequential
    composition charges each attribute m − 1 times; the named ``unlinkable-pairs`` policy of
    :mod:`mprr.ledger` counts it once.

Dependence measure: |Pearson| for two ordinal attributes (eq. 8), Cramér's V otherwise (eq. 9),
:func:`mprr.dependence.dependence_matrix`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mprr.data import Dataset
from mprr.dependence import bivariate_tables, dependence_matrix
from mprr.errors import ConfigurationError
from mprr.matrices import RandomizationMatrix, kron
from mprr.protocols.budget import pair_matrix
from mprr.protocols.estimate import estimate_unit
from mprr.protocols.release import ReleasedData, all_pairs, exact_tables, release_units
from mprr.streams import Randomness, draw_uniforms

__all__ = [
    "DEPENDENCE_METHODS",
    "TABLE_SOURCES",
    "DependencePhase",
    "check_dependence_options",
    "dependence_phase",
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
    """

    method: str
    released: ReleasedData
    tables: dict[tuple[int, int], np.ndarray]
    dependence: np.ndarray


def check_dependence_options(method: object, tables: object, pair_epsilon: object) -> None:
    """Validate the options of phase 1 of RR-Clusters (main paper 4.1 / 4.2 / 4.3).

    ``method`` in :data:`DEPENDENCE_METHODS`, ``tables`` in :data:`TABLE_SOURCES`
    (``"randomized"`` with 4.1 only), ``pair_epsilon`` with 4.3 only.  Shared by the fast path
    and the actor choreography.

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


def dependence_phase(
    dataset: Dataset,
    method: str,
    attribute_matrices: Sequence[RandomizationMatrix],
    *,
    rng: Randomness,
    postprocess: str,
    tables: str = "estimated",
    pair_epsilon: float | None = None,
    max_cells: int = 1 << 22,
) -> DependencePhase:
    """Run phase 1 of RR-Clusters with one of the methods of main paper 4.1 / 4.2 / 4.3.

    Parameters
    ----------
    dataset
        The parties' true records.
    method
        ``"4.1"``, ``"4.2"`` or ``"4.3"`` (see the module docstring).
    attribute_matrices
        Matrix of each attribute (4.1 releases; their ε give the 4.3 pair budgets ε_i + ε_j).
    rng
        ``numpy.random.Generator`` or :class:`mprr.streams.PartyStreams`.
    postprocess
        Post-processing of estimated tables (4.1 with ``tables="estimated"``, 4.3).
    tables
        4.1 only: ``"estimated"`` (default) or ``"randomized"``.
    pair_epsilon
        4.3 only: ε of every pair matrix instead of ``ε_i + ε_j``.
    max_cells
        Largest pair table (4.2 exact tables).

    Notes
    -----
    Draw order (per party): 4.1 — m uniforms, one per attribute in schema order; 4.2 — none;
    4.3 — m(m−1)/2 uniforms, one per pair ``(i, j)``, ``i < j``, in lexicographic order
    ``(0,1), (0,2), ..., (m−2, m−1)``; the pair value is the C-order code ``x_i·r_j + x_j``.
    """
    check_dependence_options(method, tables, pair_epsilon)
    sizes = dataset.sizes
    m = dataset.m
    pairs = all_pairs(m)
    kinds = dataset.schema.kinds
    if method == "4.1":
        uniforms = draw_uniforms(rng, dataset.n, m)
        units = tuple((j,) for j in range(m))
        released = release_units(PHASE, dataset.codes, sizes, units, attribute_matrices, uniforms)
        raw = bivariate_tables(released.codes, sizes)
        if tables == "randomized":
            pair_tables = {k: v.astype(np.float64) for k, v in raw.items()}
        else:
            pair_tables = {
                (i, j): estimate_unit(
                    kron(attribute_matrices[i], attribute_matrices[j]), raw[(i, j)], postprocess
                )
                for (i, j) in pairs
            }
    elif method == "4.2":
        released = exact_tables(PHASE, dataset.codes, sizes, pairs, max_cells=max_cells)
        pair_tables = {pair: counts for pair, counts in zip(pairs, released.counts)}
    else:
        eps = [float(P.epsilon) for P in attribute_matrices]
        mats = tuple(pair_matrix((sizes[i], sizes[j]), (eps[i], eps[j]), pair_epsilon) for i, j in pairs)
        shares = None if pair_epsilon is not None else [(eps[i], eps[j]) for i, j in pairs]
        uniforms = draw_uniforms(rng, dataset.n, len(pairs))
        released = release_units(
            PHASE, dataset.codes, sizes, pairs, mats, uniforms, linkable=False, shares=shares
        )
        pair_tables = {
            pair: estimate_unit(P, counts, postprocess)
            for pair, P, counts in zip(pairs, mats, released.counts)
        }
    dep = dependence_matrix(pair_tables, kinds) if m > 1 else np.ones((1, 1))
    return DependencePhase(method=method, released=released, tables=pair_tables, dependence=dep)
