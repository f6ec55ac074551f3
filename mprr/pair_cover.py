"""Overlapping release units of at most three attributes that cover every attribute pair.

At a large ε per respondent the error of a marginal released by sampled respondents (each
reports one unit through a frequency oracle with all of ε) is mostly the sampling error of the
``n_u`` respondents that reported its unit, so a design with fewer, larger units wins as long
as the oracle noise on the larger domains stays small.  A family of units of at most three
attributes in which every attribute pair lies in some unit lets the aggregator answer every
2-way marginal by projection and every 3-way marginal from its three pair margins by maximum
entropy (CALM: Zhang, Wang, Li, He and Chen, "CALM: Consistent Adaptive Local Marginal for
Marginal Release under Local Differential Privacy", CCS 2018, Sections 4.4–4.5; the consistency
step of PriView: Qardaji, Yang and Li, "PriView: Practical Differentially Private Release of
Marginal Contingency Tables", SIGMOD 2014, which chooses its views as a covering design too).

- :func:`unit_error` — the predicted summed error of the pair marginals a unit releases;
- :func:`cover_pairs` — greedy weighted set cover of the attribute pairs by pairs and triples,
  starting from given units;
- :func:`unit_weights` — the share of the respondents per unit, ``∝ error^(2/3)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from mprr.domain import check_epsilon, check_sizes
from mprr.errors import ConfigurationError
from mprr.oracles import best_oracle

__all__ = ["unit_error", "cover_pairs", "unit_weights", "covered_pairs"]

Unit = tuple[int, ...]


def unit_error(unit: Sequence[int], sizes: Sequence[int], epsilon: float) -> float:
    """Predicted summed TVD-scale error of the pair marginals inside ``unit``, times ``sqrt(n_u)``.

    A unit of ``c`` cells is reported by ``n_u`` respondents through the least-variance oracle
    for ``c`` values at ε (per-report variance ``σ²``, :func:`mprr.oracles.best_oracle`).  A cell
    of a pair marginal of ``c_p`` cells sums ``c / c_p`` cells of the unit, so its variance is
    ``(c / c_p) σ² / n_u`` from the oracle plus ``(1/c_p)(1 − 1/c_p) / n_u`` from sampling
    (uniform frequencies); the pair's error is ``½ c_p`` times the standard deviation of a
    cell.  For a single attribute the unit is its own "pair".

    Parameters
    ----------
    unit
        Attribute indices.
    sizes
        Category counts of every attribute.
    epsilon
        ε of the one report.

    Returns
    -------
    float
        ``Σ_pairs ½ c_p sqrt((c/c_p) σ² + (1/c_p)(1 − 1/c_p))``.
    """
    eps = check_epsilon(epsilon)
    u = tuple(int(a) for a in unit)
    cells = math.prod(int(sizes[a]) for a in u)
    sigma2 = float(best_oracle(cells, eps).variance(1)[0])
    pairs: list[tuple[int, ...]] = list(itertools.combinations(u, 2)) or [u]
    total = 0.0
    for p in pairs:
        cp = math.prod(int(sizes[a]) for a in p)
        total += 0.5 * cp * math.sqrt((cells / cp) * sigma2 + (1.0 / cp) * (1.0 - 1.0 / cp))
    return total


def covered_pairs(units: Sequence[Sequence[int]]) -> set[tuple[int, int]]:
    """The attribute pairs ``(a, b)``, ``a < b``, that lie inside some unit."""
    out: set[tuple[int, int]] = set()
    for u in units:
        out.update(itertools.combinations(sorted(int(a) for a in u), 2))
    return out


def cover_pairs(sizes: Sequence[int], epsilon: float, *, start: Sequence[Sequence[int]] = (),
                max_cells: int | None = None) -> tuple[Unit, ...]:
    """Units of at most three attributes that cover every attribute pair (greedy weighted set cover).

    Starting from the units ``start`` (e.g. the significant clusters), the cover adds, while a
    pair is uncovered, the candidate pair or triple (of at most ``max_cells`` cells) with the
    most uncovered pairs per unit of cost ``unit_error^(2/3)`` (the cost a unit adds to
    ``Σ_u error_u^(2/3)``, whose power 3/2 is the design's summed error under the allocation
    of :func:`unit_weights`), ties to the lexicographically first.  Then any added unit whose
    pairs all lie in other units is dropped, largest cost first.  A pair of two attributes
    whose product exceeds ``max_cells`` is always a candidate (it must be covered).

    Parameters
    ----------
    sizes
        Category counts of the m attributes.
    epsilon
        ε of each report.
    start
        Units kept as they are (sorted attribute tuples; any size).
    max_cells
        Largest domain of an added triple (``None``: no limit).

    Returns
    -------
    tuple of tuple of int
        The start units then the added ones, each sorted; every pair of ``range(m)`` lies in one.
    """
    sz = check_sizes(sizes)
    eps = check_epsilon(epsilon)
    m = len(sz)
    if max_cells is not None and (isinstance(max_cells, bool) or not isinstance(max_cells, int) or max_cells < 1):
        raise ConfigurationError(f"max_cells must be an integer >= 1 or None, got {max_cells!r}")
    units: list[Unit] = []
    for s in start:
        u = tuple(sorted(int(a) for a in s))
        if not u or any(a < 0 or a >= m for a in u) or len(set(u)) != len(u):
            raise ConfigurationError(f"start units must be distinct attribute indices in [0, {m}), got {tuple(s)!r}")
        if u not in units:
            units.append(u)
    fixed = len(units)
    covered = covered_pairs(units)
    cost = {}
    for k in (2, 3):
        for u in itertools.combinations(range(m), k):
            if k == 3 and max_cells is not None and math.prod(sz[a] for a in u) > max_cells:
                continue
            cost[u] = unit_error(u, sz, eps) ** (2.0 / 3.0)
    while len(covered) < m * (m - 1) // 2:
        best = max(cost, key=lambda u: (len(set(itertools.combinations(u, 2)) - covered) / cost[u], -cost[u]))
        units.append(best)
        covered |= set(itertools.combinations(best, 2))
    for u in sorted(units[fixed:], key=lambda u: -cost[u]):
        others = covered_pairs([v for v in units if v != u])
        if set(itertools.combinations(u, 2)) <= others:
            units.remove(u)
    return tuple(units)


def unit_weights(units: Sequence[Sequence[int]], sizes: Sequence[int], epsilon: float) -> tuple[float, ...]:
    """Respondent shares ``∝ unit_error^(2/3)``: the allocation minimising ``Σ_u error_u / sqrt(n_u)``.

    With ``n_u = w_u n`` and ``Σ w_u = 1``, the Lagrange condition ``error_u w_u^(−3/2) = const``
    gives ``w_u ∝ error_u^(2/3)`` and the summed error ``(Σ_u error_u^(2/3))^(3/2) / sqrt(n)``.
    """
    raw = [unit_error(u, sizes, epsilon) ** (2.0 / 3.0) for u in units]
    total = sum(raw)
    return tuple(r / total for r in raw)
