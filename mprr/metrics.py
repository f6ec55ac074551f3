"""Accuracy metrics: count queries (main paper 6.5, eq. 16), MAE / MSE (RR-Ind-Joint paper
3.5), total variation distance.

Count queries
-------------
Main paper 6.5: "Let S be a subset of the data domain ... We took two random attributes ...
We randomly chose the subset S to contain a σ proportion of all the possible combinations of
values of the previously selected two attributes."  A :class:`CountQuery` is the pair of
attributes and a boolean mask over their combinations; its answer X_S is the number of records
whose pair of values lies in the mask (or n times the probability mass under a distribution).

Errors (eq. 16): e_S = |Y_S − X_S| and r_S = |(Y_S − X_S) / X_S|.  **A true count X_S = 0**
makes r_S undefined; :func:`relative_error` returns NaN for it by default (so that
``numpy.median`` of a batch becomes NaN and the caller must decide, e.g. ``numpy.nanmedian``
plus a count of undefined queries), or ``inf`` (``zero="inf"``; 0 when Y_S = 0 too) or raises
(``zero="raise"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Union

import numpy as np

from mprr.data import Dataset
from mprr.distributions import JointDistribution
from mprr.domain import MAX_TENSOR_CELLS, check_int, check_real, check_sizes, check_unit
from mprr.errors import ConfigurationError, EstimationError

__all__ = [
    "CountQuery",
    "QueryErrors",
    "random_queries",
    "answer",
    "answers",
    "absolute_error",
    "relative_error",
    "evaluate_queries",
    "mae",
    "mse",
    "total_variation",
]

Source = Union[Dataset, JointDistribution]
ZeroPolicy = Literal["nan", "inf", "raise"]


@dataclass(frozen=True, eq=False)
class CountQuery:
    """A count query over two attributes (main paper 6.5).

    Parameters
    ----------
    axes
        Two distinct attribute indices ``(i, j)``.
    cells
        Boolean mask of shape ``(sizes[i], sizes[j])``: the value combinations in S.
    """

    axes: tuple[int, int]
    cells: np.ndarray

    def __post_init__(self) -> None:
        try:
            axes = tuple(int(a) for a in self.axes)
        except (TypeError, ValueError):
            raise ConfigurationError(f"axes must be two attribute indices, got {self.axes!r}")
        if len(axes) != 2 or axes[0] == axes[1] or min(axes) < 0:
            raise ConfigurationError(f"axes must be two distinct indices >= 0, got {self.axes!r}")
        mask = np.array(self.cells)
        if mask.dtype != bool or mask.ndim != 2 or mask.size == 0:
            raise ConfigurationError(
                f"cells must be a non-empty 2-D boolean mask, got dtype {mask.dtype} shape {mask.shape}"
            )
        mask.setflags(write=False)
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "cells", mask)

    @property
    def coverage(self) -> float:
        """Fraction σ of the two attributes' value combinations in S."""
        return float(self.cells.mean())

    def check_sizes(self, sizes: Sequence[int]) -> None:
        """Raise ConfigurationError if the query does not fit a domain of these sizes."""
        if max(self.axes) >= len(sizes):
            raise ConfigurationError(
                f"query axes {self.axes} do not exist in a domain of {len(sizes)} attributes"
            )
        expected = (int(sizes[self.axes[0]]), int(sizes[self.axes[1]]))
        if self.cells.shape != expected:
            raise ConfigurationError(
                f"query mask must have shape {expected} for axes {self.axes}, got {self.cells.shape}"
            )


@dataclass(frozen=True)
class QueryErrors:
    """Per-query answers and eq. (16) errors (arrays aligned with the queries)."""

    true_counts: np.ndarray
    estimated_counts: np.ndarray
    absolute: np.ndarray
    relative: np.ndarray


def random_queries(
    sizes: Sequence[int], sigma: float, count: int, *, rng: np.random.Generator
) -> list[CountQuery]:
    """The query generator of main paper 6.5.

    For each query: two distinct attributes chosen uniformly at random, then
    k = max(1, round_half_up(σ · |A_i|·|A_j|)) of their value combinations chosen uniformly
    without replacement (the paper does not say how σ·cells is rounded).

    Parameters
    ----------
    sizes
        Category counts of the domain (at least 2 attributes).
    sigma
        Coverage σ in (0, 1].
    count
        Number of queries, >= 1.
    rng
        Source of randomness (consumed query by query: the attribute pair, then the cells).
    """
    sizes_t = check_sizes(sizes)
    if len(sizes_t) < 2:
        raise ConfigurationError(f"count queries need at least 2 attributes, got sizes {sizes_t}")
    s = check_unit("sigma", sigma, low_open=True)
    check_int("count", count, 1)
    out = []
    for _ in range(int(count)):
        i, j = sorted(int(a) for a in rng.choice(len(sizes_t), size=2, replace=False))
        cells = sizes_t[i] * sizes_t[j]
        k = max(1, math.floor(s * cells + 0.5))
        mask = np.zeros(cells, dtype=bool)
        mask[rng.choice(cells, size=k, replace=False)] = True
        out.append(CountQuery((i, j), mask.reshape(sizes_t[i], sizes_t[j])))
    return out


def _pair_table(source: Source, axes: tuple[int, int], n: float | None) -> np.ndarray:
    if isinstance(source, Dataset):
        if n is not None:
            raise ConfigurationError("n must be None when answering on a Dataset (counts are exact)")
        return source.joint_counts(axes).astype(float)
    table = np.asarray(source.marginal(axes), dtype=float)
    return table * float(n) if n is not None else table


def answers(queries: Sequence[CountQuery], source: Source, *, n: float | None = None) -> np.ndarray:
    """Answers X_S (or Y_S) of many count queries (main paper 6.5); each attribute pair's
    table is computed once.

    Parameters
    ----------
    queries
        The count queries.
    source
        A :class:`Dataset` (answers are record counts) or a :class:`JointDistribution`
        (answers are probability masses, times ``n`` when given — the estimated count Y_S).
    n
        Number of records to scale a distribution's mass to a count.

    Returns
    -------
    numpy.ndarray
        ``(len(queries),)`` float answers.
    """
    if n is not None and check_real("n", n) == 0:
        raise ConfigurationError(f"n must be > 0, got {n!r}")
    if not isinstance(source, (Dataset, JointDistribution)):
        raise ConfigurationError(
            f"source must be a Dataset or a JointDistribution, got {type(source).__name__}"
        )
    sizes = source.sizes
    out = np.empty(len(queries))
    groups: dict[tuple[int, int], list[int]] = {}
    for q_index, q in enumerate(queries):
        if not isinstance(q, CountQuery):
            raise ConfigurationError(f"queries must be CountQuery objects, got {type(q).__name__}")
        q.check_sizes(sizes)
        groups.setdefault(q.axes, []).append(q_index)
    for axes, idx in groups.items():
        table = _pair_table(source, axes, n).ravel()
        masks = np.stack([queries[k].cells.ravel() for k in idx])
        out[idx] = masks @ table
    return out


def answer(query: CountQuery, source: Source, *, n: float | None = None) -> float:
    """Answer of one count query (main paper 6.5; see :func:`answers`)."""
    return float(answers([query], source, n=n)[0])


def absolute_error(estimate: np.ndarray | float, truth: np.ndarray | float) -> np.ndarray:
    """e_S = |Y_S − X_S| (main paper 6.5), elementwise."""
    y, x = np.asarray(estimate, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    return np.abs(y - x)


def relative_error(
    estimate: np.ndarray | float, truth: np.ndarray | float, *, zero: ZeroPolicy = "nan"
) -> np.ndarray:
    """r_S = |(Y_S − X_S) / X_S| (main paper eq. 16), elementwise.

    Parameters
    ----------
    zero
        What to return where the true count X_S is 0: ``"nan"`` (default), ``"inf"``
        (0 where Y_S = 0 as well) or ``"raise"`` (EstimationError).
    """
    if zero not in ("nan", "inf", "raise"):
        raise ConfigurationError(f"zero must be 'nan', 'inf' or 'raise', got {zero!r}")
    y, x = np.broadcast_arrays(np.asarray(estimate, dtype=float), np.asarray(truth, dtype=float))
    diff = np.abs(y - x)
    undefined = x == 0
    if zero == "raise" and np.any(undefined):
        raise EstimationError(
            f"relative error is undefined for {int(undefined.sum())} queries with true count 0 "
            "(use zero='nan' or zero='inf')"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        r = diff / np.abs(x)
    if zero == "nan":
        r = np.where(undefined, np.nan, r)
    else:
        r = np.where(undefined, np.where(diff == 0, 0.0, np.inf), r)
    return r


def evaluate_queries(
    queries: Sequence[CountQuery],
    estimate: Source,
    truth: Source,
    *,
    n: float | None = None,
    zero: ZeroPolicy = "nan",
) -> QueryErrors:
    """Eq. (16) errors of an estimate against the truth for many queries.

    ``n`` scales any JointDistribution among ``estimate``/``truth`` to counts; when ``truth``
    is a Dataset and ``n`` is None, its record count is used for the estimate.
    """
    if n is None and isinstance(truth, Dataset):
        n = truth.n
    x = answers(queries, truth, n=None if isinstance(truth, Dataset) else n)
    y = answers(queries, estimate, n=None if isinstance(estimate, Dataset) else n)
    return QueryErrors(x, y, absolute_error(y, x), relative_error(y, x, zero=zero))


def _dense_pair(
    estimate: np.ndarray | JointDistribution,
    truth: np.ndarray | JointDistribution,
    axes: Sequence[int] | None,
    max_cells: int,
) -> tuple[np.ndarray, np.ndarray]:
    def dense(obj: np.ndarray | JointDistribution) -> np.ndarray:
        """The (marginal) probability tensor of ``obj``."""
        if isinstance(obj, JointDistribution):
            if axes is not None:
                return np.asarray(obj.marginal(tuple(axes)), dtype=float)
            if not hasattr(obj, "todense"):
                raise ConfigurationError(f"{type(obj).__name__} has no todense(); pass axes")
            return np.asarray(obj.todense(max_cells=max_cells), dtype=float)
        if axes is not None:
            raise ConfigurationError("axes can only be given for JointDistribution inputs")
        return np.asarray(obj, dtype=float)

    a, b = dense(estimate), dense(truth)
    if a.shape != b.shape:
        raise ConfigurationError(f"estimate and truth must have the same shape, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ConfigurationError("estimate and truth must not be empty")
    return a, b


def mae(
    estimate: np.ndarray | JointDistribution,
    truth: np.ndarray | JointDistribution,
    *,
    axes: Sequence[int] | None = None,
    max_cells: int = MAX_TENSOR_CELLS,
) -> float:
    """Mean absolute error over the cells (RR-Ind-Joint paper 3.5):
    MAE = (1/d²) Σ_x |Σ(x) − Σ̂(x)| for two attributes of d values; in general the mean over
    all cells of the (marginal over ``axes``, if given) tensor."""
    a, b = _dense_pair(estimate, truth, axes, max_cells)
    return float(np.mean(np.abs(a - b)))


def mse(
    estimate: np.ndarray | JointDistribution,
    truth: np.ndarray | JointDistribution,
    *,
    axes: Sequence[int] | None = None,
    max_cells: int = MAX_TENSOR_CELLS,
) -> float:
    """Mean squared error over the cells: (1/d²) Σ_x (Σ(x) − Σ̂(x))² (RR-Ind-Joint Theorem 3,
    Table 1)."""
    a, b = _dense_pair(estimate, truth, axes, max_cells)
    return float(np.mean((a - b) ** 2))


def total_variation(
    estimate: np.ndarray | JointDistribution,
    truth: np.ndarray | JointDistribution,
    *,
    axes: Sequence[int] | None = None,
    max_cells: int = MAX_TENSOR_CELLS,
) -> float:
    """Total variation distance ½ Σ_x |p(x) − q(x)| (= ½ · cells · MAE of RR-Ind-Joint
    paper 3.5; the L1 accuracy of an estimated joint distribution)."""
    a, b = _dense_pair(estimate, truth, axes, max_cells)
    return float(0.5 * np.abs(a - b).sum())
