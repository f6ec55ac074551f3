"""Clustering of attributes based on their dependence (main paper Section 4, Algorithm 1).

Algorithm 1 starts from single-attribute clusters.  The dependence between two clusters is the
maximum dependence between an attribute of one and an attribute of the other.  The list of
cluster pairs is sorted by descending dependence and walked from its first element:

- while the current element ``dep`` is ``>= Td``:
    - if the merged cluster has at most ``Tv`` combinations of values (product of the category
      counts), the two clusters are merged, the list is recomputed for the new clusters and
      sorted again, and the walk restarts from its *first* element (steps 10-14);
    - otherwise the walk moves on to the *next* element of the same list (step 16);
- the loop ends at the first element below ``Td`` or when the list is exhausted (a list with
  no next element — e.g. a single cluster — ends the loop).

:func:`cluster_significant` runs the same walk on the attribute pairs that a test of
independence on the randomized data finds dependent (:func:`significant_pairs` of the p-values
of :mod:`mprr.independence`): the dependences estimated from randomized data are dominated by
noise at small ε, and a fixed ``Td`` then merges independent attributes.

Tie-breaking (deterministic): pairs of equal dependence are taken in increasing order of the
smallest attribute index of the first cluster, then of the second cluster (clusters are
disjoint, so this is the lexicographic order of the sorted index tuples).  Equal dependences
are compared exactly, as floats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mprr.domain import check_real, check_sizes, check_unit
from mprr.errors import ConfigurationError

__all__ = [
    "REASON_BELOW_TD",
    "REASON_EXCEEDS_TV",
    "REASON_MERGED",
    "REASON_NOT_SIGNIFICANT",
    "CORRECTIONS",
    "significant_pairs",
    "cluster_significant",
    "Clustering",
    "MergeStep",
    "cluster_attributes",
]

#: ``MergeStep.reason`` of a pair that was merged (steps 9-14).
REASON_MERGED = "merged"
#: ``MergeStep.reason`` of a pair skipped because the merged cluster would exceed ``Tv`` (step 16).
REASON_EXCEEDS_TV = "exceeds Tv"
#: ``MergeStep.reason`` of the pair whose dependence ended the while loop (step 7).
REASON_BELOW_TD = "below Td"
#: ``MergeStep.reason`` of the first pair of clusters with no significant attribute pair
#: between them, which ends :func:`cluster_significant`.
REASON_NOT_SIGNIFICANT = "not significant"


@dataclass(frozen=True)
class MergeStep:
    """One element of the dependence list examined by Algorithm 1.

    Attributes
    ----------
    step
        1-based position of this examination in the run.
    left, right
        The two clusters (sorted attribute indices), ``left`` before ``right`` in canonical order.
    dependence
        Cluster dependence (maximum pairwise attribute dependence).
    cells
        Number of value combinations of ``left ∪ right`` (product of category counts).
    merged
        Whether the pair was merged.
    reason
        :data:`REASON_MERGED`, :data:`REASON_EXCEEDS_TV` or :data:`REASON_BELOW_TD` (the last
        step of a run that stopped because the dependence fell below ``Td``).
    """

    step: int
    left: tuple[int, ...]
    right: tuple[int, ...]
    dependence: float
    cells: int
    merged: bool
    reason: str


@dataclass(frozen=True)
class Clustering:
    """Result of :func:`cluster_attributes`.

    Attributes
    ----------
    clusters
        Partition of ``range(m)``: tuples of sorted attribute indices, ordered by their
        smallest index.
    trace
        Every element of the dependence list the algorithm examined, in order.
    """

    clusters: tuple[tuple[int, ...], ...]
    trace: tuple[MergeStep, ...]

    @property
    def labels(self) -> tuple[int, ...]:
        """Cluster index of each attribute (position in :attr:`clusters`)."""
        m = sum(len(c) for c in self.clusters)
        out = [0] * m
        for k, cluster in enumerate(self.clusters):
            for attr in cluster:
                out[attr] = k
        return tuple(out)

    def cells(self, sizes: Sequence[int]) -> tuple[int, ...]:
        """Number of value combinations of each cluster, given the attribute ``sizes``."""
        return tuple(math.prod(int(sizes[a]) for a in c) for c in self.clusters)


def _check_dependence(dependence: object) -> np.ndarray:
    try:
        d = np.array(dependence, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"dependence must be a square numeric matrix, got {dependence!r}"
        ) from exc
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 1:
        raise ConfigurationError(
            f"dependence must be a non-empty square (m, m) matrix, got shape {d.shape}"
        )
    if not np.all(np.isfinite(d)):
        raise ConfigurationError("dependence must contain only finite values in [0, 1]")
    if np.any(d < 0.0) or np.any(d > 1.0):
        raise ConfigurationError(
            f"dependence entries must lie in [0, 1], got min {d.min()!r} and max {d.max()!r}"
        )
    asym = float(np.max(np.abs(d - d.T)))
    if asym > 1e-12:
        raise ConfigurationError(
            f"dependence must be symmetric (|D - D^T| <= 1e-12), got max asymmetry {asym!r}"
        )
    return d


def _check_sizes(sizes: object, m: int) -> tuple[int, ...]:
    out = check_sizes(sizes)
    if len(out) != m:
        raise ConfigurationError(f"sizes must have one entry per attribute ({m}), got {len(out)} entries")
    return out


def cluster_attributes(
    dependence: object, sizes: Sequence[int], Tv: float, Td: float
) -> Clustering:
    """Cluster attributes by dependence — main paper Algorithm 1.

    Parameters
    ----------
    dependence
        Symmetric ``(m, m)`` matrix of pairwise dependences in ``[0, 1]`` (e.g.
        :func:`mprr.dependence.dependence_matrix`); the diagonal is not used.
    sizes
        Number of categories of each attribute.
    Tv
        Maximum number of value combinations allowed in a merged cluster (``>= 1``; ``inf``
        for no limit).  A single attribute with more categories than ``Tv`` stays a singleton.
    Td
        Minimum dependence (in ``[0, 1]``) required to merge two clusters.

    Returns
    -------
    Clustering
        The clusters (canonical order) and the trace of every list element examined.

    Raises
    ------
    ConfigurationError
        If the matrix is not square, symmetric, finite and within ``[0, 1]``, if ``sizes`` is
        not ``m`` positive integers, if ``Tv < 1`` or if ``Td`` is outside ``[0, 1]``.

    Notes
    -----
    Control flow follows Algorithm 1 literally (see the module docstring): after a merge the
    list is recomputed and the walk restarts at its first element, so a pair skipped for
    ``Tv`` is examined (and skipped) again; after a skip the walk continues with the next
    element.  The run ends at the first element with dependence ``< Td`` or at the end of the
    list.  Ties: lower attribute indices first.
    """
    d = _check_dependence(dependence)
    m = d.shape[0]
    sz = _check_sizes(sizes, m)
    tv = _check_tv(Tv)
    td = check_unit("Td", Td, why=" (minimum dependence)")
    return _algorithm_1(d, sz, tv, td, None)


def _check_tv(Tv: float) -> float:
    tv = check_real("Tv", Tv, minimum=None, allow_inf=True)
    if tv < 1.0:
        raise ConfigurationError(f"Tv must be >= 1 (maximum cells per cluster), got {Tv!r}")
    return tv


def _algorithm_1(d: np.ndarray, sz: tuple[int, ...], tv: float, td: float,
                 significant: np.ndarray | None) -> Clustering:
    """Algorithm 1 on a validated matrix; with ``significant`` (boolean (m, m)), only the
    significant attribute pairs count: a cluster pair's dependence is the largest over its
    significant attribute pairs, pairs with one come first, and the walk ends at the first
    pair without one (:data:`REASON_NOT_SIGNIFICANT`)."""
    m = d.shape[0]
    upper = np.triu(d, 1)
    attr_dep = upper + upper.T  # symmetric, zero diagonal (the diagonal is never a pair)
    eligible = None if significant is None else significant.astype(np.float64)
    if eligible is not None:
        np.fill_diagonal(eligible, 0.0)
        attr_dep = np.where(eligible > 0, attr_dep, 0.0)
    clusters: list[tuple[int, ...]] = [(i,) for i in range(m)]
    trace: list[MergeStep] = []

    def cluster_max(values: np.ndarray) -> np.ndarray:
        perm = np.fromiter((a for c in clusters for a in c), dtype=np.intp, count=m)
        starts = np.cumsum([0] + [len(c) for c in clusters[:-1]])
        sub = values[np.ix_(perm, perm)]
        out: np.ndarray = np.maximum.reduceat(np.maximum.reduceat(sub, starts, axis=0), starts, axis=1)
        return out

    def dependence_list() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Steps 4-5 / 12-13: cluster-pair dependences (max over members), sorted."""
        a, b = np.triu_indices(len(clusters), k=1)
        deps = cluster_max(attr_dep)[a, b]
        ok = np.ones(a.size) if eligible is None else cluster_max(eligible)[a, b]
        # Clusters are kept in canonical order, so index order == smallest-attribute order.
        order = np.lexsort((b, a, -deps, -ok))
        return a[order], b[order], deps[order], ok[order]

    la, lb, ldep, lok = dependence_list()
    pos = 0
    while pos < la.size:
        a, b, dep = int(la[pos]), int(lb[pos]), float(ldep[pos])
        left, right = clusters[a], clusters[b]
        cells = math.prod(sz[i] for i in left + right)
        step = len(trace) + 1
        if not lok[pos] > 0:  # no significant attribute pair between the two clusters
            trace.append(MergeStep(step, left, right, dep, cells, False, REASON_NOT_SIGNIFICANT))
            break
        if dep < td:  # step 7: the while condition fails
            trace.append(MergeStep(step, left, right, dep, cells, False, REASON_BELOW_TD))
            break
        if cells <= tv:  # steps 9-14
            trace.append(MergeStep(step, left, right, dep, cells, True, REASON_MERGED))
            rest = [c for k, c in enumerate(clusters) if k not in (a, b)]
            clusters = sorted(rest + [tuple(sorted(left + right))])
            la, lb, ldep, lok = dependence_list()
            pos = 0
        else:  # step 16: next element of the same list
            trace.append(MergeStep(step, left, right, dep, cells, False, REASON_EXCEEDS_TV))
            pos += 1
    return Clustering(clusters=tuple(clusters), trace=tuple(trace))


# --------------------------------------------------------------------------------------------
# Algorithm 1 on the pairs that a test of independence finds dependent
# --------------------------------------------------------------------------------------------

#: Multiple-testing corrections of :func:`significant_pairs`.
CORRECTIONS = frozenset({"bonferroni", "holm", "none"})


def _check_pair_key(key: object, m: int | None, name: str) -> tuple[int, int]:
    ok = (isinstance(key, tuple) and len(key) == 2
          and all(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) for x in key))
    if ok:
        i, j = int(key[0]), int(key[1])  # type: ignore[index]
        ok = 0 <= i < j and (m is None or j < m)
    if not ok:
        allowed = "" if m is None else f" in [0, {m})"
        raise ConfigurationError(f"{name} must be pairs (i, j) of attribute indices i < j{allowed}, got {key!r}")
    return i, j


def significant_pairs(
    p_values: Mapping[tuple[int, int], float], alpha: float, *, correction: str = "bonferroni"
) -> tuple[tuple[int, int], ...]:
    """The attribute pairs whose test of independence rejects, the family-wise level ``alpha``.

    Parameters
    ----------
    p_values
        ``{(i, j): p}`` for every pair tested (``i < j``), e.g. the ``p_value`` of
        :func:`mprr.independence.pearson_chi2` or :func:`mprr.independence.wald_independence`.
    alpha
        Family-wise error rate over the pairs tested, in (0, 1).
    correction
        ``"bonferroni"``: reject when ``p < alpha / M`` (M pairs tested); ``"holm"``: Holm's
        step-down procedure (Holm 1979; rejects everything Bonferroni rejects, and possibly
        more); ``"none"``: ``p < alpha`` for each pair on its own.

    Returns
    -------
    tuple
        The rejected pairs, sorted.
    """
    if correction not in CORRECTIONS:
        raise ConfigurationError(f"correction must be one of {sorted(CORRECTIONS)}, got {correction!r}")
    level = check_unit("alpha", alpha, low_open=True, high_open=True)
    if not isinstance(p_values, Mapping):
        raise ConfigurationError(f"p_values must be a mapping {{(i, j): p}}, got {type(p_values).__name__}")
    tested = {_check_pair_key(k, None, "keys of p_values"): check_unit(f"p_values[{k!r}]", v)
              for k, v in p_values.items()}
    count = len(tested)
    if correction == "none":
        return tuple(sorted(k for k, p in tested.items() if p < level))
    if correction == "bonferroni":
        return tuple(sorted(k for k, p in tested.items() if p < level / count))
    rejected = []
    for rank, (key, p) in enumerate(sorted(tested.items(), key=lambda e: (e[1], e[0]))):
        if not p < level / (count - rank):
            break
        rejected.append(key)
    return tuple(sorted(rejected))


def cluster_significant(
    dependence: object, significant: Iterable[tuple[int, int]], sizes: Sequence[int], Tv: float, *,
    Td: float = 0.0,
) -> Clustering:
    """Algorithm 1 (main paper Section 4) that merges only significantly dependent attributes.

    The dependences estimated from randomized data are mostly noise at the budgets used in
    practice, and a fixed threshold ``Td`` merges unrelated attributes.  Here the merge
    condition is a test of independence instead: only the ``significant`` attribute pairs
    (e.g. :func:`significant_pairs` of Pearson's χ² or Wald tests) count.  The dependence of
    two clusters is the largest dependence over the significant attribute pairs between them;
    cluster pairs with such a pair are walked in decreasing dependence exactly as
    :func:`cluster_attributes` walks its list (merge within ``Tv`` and restart, skip beyond
    it), and the walk ends at the first cluster pair with no significant attribute pair
    (:data:`REASON_NOT_SIGNIFICANT`) or with a dependence below ``Td``.

    Parameters
    ----------
    dependence
        Symmetric ``(m, m)`` matrix in ``[0, 1]`` ordering the merges, e.g. bias-corrected
        Cramér's V (:func:`mprr.independence.dependence_effect`).
    significant
        Attribute pairs ``(i, j)``, ``i < j``, found dependent.
    sizes, Tv
        As :func:`cluster_attributes`.
    Td
        An additional minimum dependence, in ``[0, 1]`` (0: significance alone decides).

    Returns
    -------
    Clustering
        The clusters and the trace; its dependences are those of significant pairs.

    Notes
    -----
    With every pair significant and ``Td`` at most the smallest dependence, this is exactly
    :func:`cluster_attributes` with that ``Td``.
    """
    d = _check_dependence(dependence)
    m = d.shape[0]
    sz = _check_sizes(sizes, m)
    tv = _check_tv(Tv)
    td = check_unit("Td", Td, why=" (minimum dependence)")
    mask = np.zeros((m, m), dtype=bool)
    for key in significant:
        i, j = _check_pair_key(key, m, "significant")
        mask[i, j] = mask[j, i] = True
    return _algorithm_1(d, sz, tv, td, mask)
