"""RR-Adjustment: record weights on the randomized data set (main paper Section 5, Algorithm 2).

Algorithm 2 gives every record of the randomized data set ``Y`` the weight ``1/n`` and then
repeats sweeps over the attributes (or attribute clusters): for attribute ``j`` it computes
``s_k = Σ_{i: y_i^j = k} w_i`` for every category ``k`` and sets
``w_i ← w_i · π̂^j_v / s_v`` with ``v = y_i^j`` (``Adjust_weights``).  This is iterative
proportional fitting of the weight vector to the estimated marginals; the weighted records
are the estimate of the joint distribution of ``X``.

Implementation notes
--------------------
- Records with the same values on the adjusted axes always carry the same weight (they start
  equal and are multiplied by the same factors), so the iteration runs on the distinct value
  combinations with their multiplicities and expands to records at the end — the same numbers
  as the record-by-record loop, vectorized with ``bincount``.
- Weights are probabilities: they **sum to 1** (as the paper's initial ``1/n``).
- A target cell with positive mass but no record carrying a positive weight cannot be matched
  (``s_v = 0``: there is nothing to scale).  Algorithm 2 as printed would then lose that mass
  and leave weights summing to less than 1; here the step rescales the target over the cells
  it *can* reach, so the weights keep summing to 1, and the unmatched mass shows in ``gap``.
  When no target mass at all is reachable, :class:`~mprr.errors.EstimationError` is raised.
- A target cell with mass 0 sets the weights of its records to 0 (they stay 0).
- Convergence: after every sweep, ``gap`` = max absolute difference between the weighted
  marginals and the targets; the run stops when ``gap <= tol`` (``converged``), when a sweep
  leaves the weights unchanged (a fixed point, the paper's "until weights do not change any
  more") or after ``max_iter`` sweeps.
- When the targets force some value combinations to weight 0 even though their own target
  cells are positive (main paper Example 1: the two ``(a^1_2, a^2_1)`` records), Algorithm 2
  only approaches the limit at rate ~1/iterations.  ``exact_limit=True`` first removes those
  combinations — the ones that are zero in every weighting of ``Y`` matching the targets, found
  with one linear program — and then iterates: the limit is the same (the limit of iterative
  proportional fitting is the I-projection of the start, whose support is that maximal
  support; Csiszár 1975), but it is reached geometrically.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, DataError, EstimationError

__all__ = ["Adjustment", "adjust"]

_SUM_ATOL = 1e-6


@dataclass(frozen=True)
class Adjustment:
    """Result of :func:`adjust` (main paper Algorithm 2).

    Attributes
    ----------
    weights
        ``(n,)`` read-only record weights, non-negative, summing to 1.
    iterations
        Number of complete sweeps over the marginals (Algorithm 2's *Repeat* loop).
    gap
        Max absolute difference between a weighted marginal and its target after the last
        sweep (includes target mass that no record can carry).
    converged
        ``gap <= tol``.
    """

    weights: np.ndarray
    iterations: int
    gap: float
    converged: bool


def _check_codes(released: object) -> np.ndarray:
    arr = np.asarray(released)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise DataError(
            f"released must be a non-empty 2-D (n, m) array of codes, got shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise DataError(f"released codes must be integers, got dtype {arr.dtype}")
    if np.any(arr < 0):
        raise DataError(f"released codes must be >= 0, got minimum {int(arr.min())}")
    return arr.astype(np.int64, copy=False)


def _check_marginals(
    marginals: object, m: int
) -> list[tuple[tuple[int, ...], np.ndarray]]:
    if not isinstance(marginals, Iterable):
        raise ConfigurationError(
            f"marginals must be a sequence of (axes, target probability tensor) pairs, got {marginals!r}"
        )
    items = list(marginals)
    if not items:
        raise ConfigurationError("marginals must hold at least one (axes, target) pair, got none")
    sizes: dict[int, int] = {}
    out = []
    for k, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ConfigurationError(f"marginals[{k}] must be an (axes, target) pair, got {item!r}")
        axes_raw, target_raw = item
        axes_seq = (axes_raw,) if isinstance(axes_raw, (int, np.integer)) else tuple(axes_raw)
        if (
            not axes_seq
            or any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in axes_seq)
            or any(not 0 <= a < m for a in axes_seq)
            or len(set(axes_seq)) != len(axes_seq)
        ):
            raise ConfigurationError(
                f"marginals[{k}] axes must be distinct attribute indices in [0, {m}), "
                f"got {axes_raw!r}"
            )
        axes = tuple(int(a) for a in axes_seq)
        target = np.array(target_raw, dtype=float)
        if target.ndim != len(axes):
            raise ConfigurationError(
                f"marginals[{k}] target must have one axis per attribute in {axes}, "
                f"got shape {target.shape}"
            )
        if not np.all(np.isfinite(target)):
            raise ConfigurationError(f"marginals[{k}] target must be finite")
        if np.any(target < 0.0):
            raise ConfigurationError(
                f"marginals[{k}] target must be a probability tensor (>= 0), got minimum "
                f"{float(target.min())!r}; post-process eq. (2) estimates first "
                "(clip-rescale, project-simplex or ibu)"
            )
        total = float(target.sum())
        if abs(total - 1.0) > _SUM_ATOL:
            raise ConfigurationError(
                f"marginals[{k}] target must sum to 1 (within {_SUM_ATOL}), got {total!r}"
            )
        for a, r in zip(axes, target.shape, strict=True):
            if sizes.setdefault(a, r) != r:
                raise ConfigurationError(
                    f"marginals disagree on the number of categories of attribute {a}: "
                    f"{sizes[a]} and {r}"
                )
        out.append((axes, target / total))
    return out


def _maximal_support(
    flat_idx: list[np.ndarray], targets: list[np.ndarray], n_cells: int
) -> np.ndarray | None:
    """Cells that are positive in some non-negative weighting matching every target.

    One LP over the cone ``{x >= 0, s >= 0 : A x = s b}`` (``A`` sums cells into marginal
    cells): maximise ``Σ t_c`` with ``0 <= t_c <= min(x_c, 1)``.  The cone is scale-free, so the
    optimum has ``t_c = 1`` exactly on the maximal support and 0 elsewhere.  Returns ``None``
    when no weighting matches the targets (then nothing is removed).
    """
    rows, cols, rhs = [], [], []
    offset = 0
    for idx, pi in zip(flat_idx, targets, strict=True):
        reachable = np.bincount(idx, minlength=pi.size) > 0
        if np.any(pi[~reachable] > 0.0):
            return None
        rows.append(offset + idx)
        cols.append(np.arange(n_cells))
        rhs.append(pi)
        offset += pi.size
    from scipy import sparse  # here, not at import time: scipy.optimize takes about a second to import
    from scipy.optimize import linprog

    A = sparse.csr_matrix(
        (np.ones(n_cells * len(flat_idx)), (np.concatenate(rows), np.concatenate(cols))),
        shape=(offset, n_cells),
    )
    b = np.concatenate(rhs)
    eye = sparse.identity(n_cells, format="csr")
    a_eq = sparse.hstack([A, sparse.csr_matrix((offset, n_cells)), sparse.csr_matrix(-b[:, None])], format="csr")
    a_ub = sparse.hstack([-eye, eye, sparse.csr_matrix((n_cells, 1))], format="csr")
    cost = np.concatenate([np.zeros(n_cells), -np.ones(n_cells), [0.0]])
    bounds = [(0.0, None)] * n_cells + [(0.0, 1.0)] * n_cells + [(0.0, None)]
    res = linprog(
        cost, A_ub=a_ub, b_ub=np.zeros(n_cells), A_eq=a_eq, b_eq=np.zeros(offset),
        bounds=bounds, method="highs",
    )
    if res.status != 0 or res.x is None:
        raise EstimationError(f"support linear program failed: {res.message}")
    support = res.x[n_cells : 2 * n_cells] > 0.5
    return support if np.any(support) else None


def adjust(
    released: object,
    marginals: Sequence[tuple[object, object]],
    *,
    tol: float = 1e-9,
    max_iter: int = 1000,
    exact_limit: bool = False,
) -> Adjustment:
    """RR-Adjustment — main paper Algorithm 2: weight the randomized records to fit marginals.

    Parameters
    ----------
    released
        ``(n, m)`` integer codes of the randomized data set ``Y``.
    marginals
        Sequence of ``(axes, target)``: ``axes`` a tuple of attribute indices (one attribute
        for RR-Independent, a cluster for RR-Clusters), ``target`` the estimated probability
        tensor over those axes (shape = their category counts, non-negative, summing to 1 —
        post-process eq. (2) estimates first).  Adjusted in the given order within a sweep.
    tol
        Stop when the max absolute marginal difference is ``<= tol``.
    max_iter
        Maximum number of sweeps (``>= 0``).
    exact_limit
        Remove first the value combinations that are zero in every weighting matching the
        targets (one linear program; see the module notes).  Same limit, reached faster.
        The LP has two variables per distinct value combination of ``Y`` (about 1 s with
        HiGHS for 30,000 combinations), so it is off by default.

    Returns
    -------
    Adjustment
        Weights (summing to 1), sweeps performed, final gap and whether ``gap <= tol``.

    Raises
    ------
    DataError
        If ``released`` is not a non-empty 2-D array of non-negative integer codes, or a code
        is outside the categories of a target.
    ConfigurationError
        On malformed marginals (axes out of range or repeated, shape mismatch, negative or
        non-normalised target, attribute sizes that disagree) or bad ``tol`` / ``max_iter``.
    EstimationError
        If a target puts all its mass on value combinations no weighted record carries.

    Examples
    --------
    Main paper Example 1 (limit ``(1/2, 0, 0, 1/2)`` over ``(a1, a2)`` cells ``11, 12, 21, 22``):

    >>> import numpy as np
    >>> Y = np.array([[0, 0]] * 4 + [[1, 0]] * 2 + [[1, 1]] * 4)
    >>> half = np.array([0.5, 0.5])
    >>> res = adjust(Y, [((0,), half), ((1,), half)], exact_limit=True)
    >>> [round(float(w), 12) for w in res.weights[[0, 4, 6]]]
    [0.125, 0.0, 0.125]
    """
    codes = _check_codes(released)
    n, m = codes.shape
    fits = _check_marginals(marginals, m)
    check_real("tol", tol)
    check_int("max_iter", max_iter, 0)

    size_of = {a: r for axes, target in fits for a, r in zip(axes, target.shape, strict=True)}
    involved = sorted(size_of)
    dims = tuple(size_of[a] for a in involved)
    sub_all = codes[:, involved]
    over = sub_all >= np.asarray(dims)[None, :]
    if np.any(over):
        r, c = np.argwhere(over)[0]
        raise DataError(
            f"released codes of attribute {involved[c]} reach {int(sub_all[r, c])}, outside "
            f"the {dims[c]} categories of its target"
        )
    # Distinct value combinations of the involved attributes, with multiplicities.
    if math.prod(dims) < 2**62:
        keys, inverse, counts = np.unique(
            np.ravel_multi_index(tuple(sub_all.T), dims), return_inverse=True, return_counts=True
        )
        cells = np.stack(np.unravel_index(keys, dims), axis=1)
    else:
        cells, inverse, counts = np.unique(
            sub_all, axis=0, return_inverse=True, return_counts=True
        )
    inverse = inverse.reshape(-1)
    column = {a: k for k, a in enumerate(involved)}
    flat_idx: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for axes, target in fits:
        sub = cells[:, [column[a] for a in axes]]
        flat_idx.append(np.ravel_multi_index(tuple(sub.T), target.shape))
        targets.append(target.ravel())

    w = counts / float(n)  # Algorithm 2 step 4: w_i = 1/n, aggregated per value combination
    if exact_limit:
        support = _maximal_support(flat_idx, targets, cells.shape[0])
        if support is not None:
            w = np.where(support, w, 0.0)
            w = w / w.sum()

    def gap_of(weights: np.ndarray) -> float:
        """Largest |weighted marginal − target| over every target cell."""
        return max(
            float(np.max(np.abs(np.bincount(idx, weights=weights, minlength=pi.size) - pi)))
            for idx, pi in zip(flat_idx, targets, strict=True)
        )

    gap = gap_of(w)
    iterations = 0
    while iterations < max_iter:
        before = w
        for idx, pi in zip(flat_idx, targets, strict=True):  # Adjust_weights(Y, w, j, π̂^j)
            s = np.bincount(idx, weights=w, minlength=pi.size)
            live = s > 0.0
            goal = pi
            if np.any(pi[~live] > 0.0):
                reach = float(pi[live].sum())
                if reach <= 0.0:
                    raise EstimationError(
                        "a target puts all its mass on value combinations that no weighted "
                        "record carries; the randomized data cannot be adjusted to it"
                    )
                goal = pi / reach
            factor = np.divide(goal, s, out=np.ones_like(s), where=live)
            w = w * factor[idx]
        iterations += 1
        gap = gap_of(w)
        if gap <= tol or np.array_equal(w, before):
            break
    weights = w[inverse] / counts[inverse]
    weights.setflags(write=False)
    return Adjustment(
        weights=weights, iterations=iterations, gap=gap, converged=bool(gap <= tol)
    )

