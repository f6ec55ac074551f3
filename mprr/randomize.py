"""Local randomization of codes by inverse-CDF sampling of a matrix row.

Draw contract (:mod:`mprr.streams`): one release of one value consumes exactly one uniform
``w`` in [0, 1) and the released value is the first ``v`` with ``cdf[x, v] > w``, where ``x``
is the true value and ``cdf`` the row-wise cumulative sums of the matrix
(:attr:`mprr.matrices.RandomizationMatrix.cdf`).  The result is a deterministic function of
``(x, w)``, so a batch of n releases (fast path) and n single releases (actor path) agree.

The search is a vectorised binary search on the gathered row entries — ``ceil(log2 r)`` passes
over n elements, O(n log r) time and O(n) memory, exact (no offset arithmetic that would lose
precision for large r) — so r of several thousand costs a few milliseconds for n = 32,561.  A
matrix with a guide table (:attr:`mprr.matrices.RandomizationMatrix.guide`,
:mod:`mprr.guide_table`) is sampled in a constant number of passes instead, with the same result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from mprr.domain import check_sizes, decode_joint, encode_joint
from mprr.errors import ConfigurationError, DataError
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import RandomizationMatrix

__all__ = ["randomize", "randomize_joint", "inverse_cdf", "sample_rows"]


def inverse_cdf(cdf: np.ndarray, rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """First index ``v`` with ``cdf[rows[i], v] > uniforms[i]`` for every i (vectorised).

    The inverse-CDF sample of row ``rows[i]`` of the randomization matrix (main paper eq. (1):
    ``Pr(Y = v | X = u) = P[u, v]``) — the draw contract of :mod:`mprr.streams`.

    ``cdf`` is an (r_in, r) row-wise non-decreasing table whose last column is exactly 1.0 and
    ``uniforms`` lie in [0, 1), so the answer always exists and is in ``[0, r)``.
    """
    r = cdf.shape[1]
    flat = cdf.ravel()
    base = rows.astype(np.int64, copy=False) * r
    lo = np.zeros(rows.shape[0], dtype=np.int64)
    hi = np.full(rows.shape[0], r - 1, dtype=np.int64)
    for _ in range(max(1, math.ceil(math.log2(r)))):
        mid = (lo + hi) >> 1
        above = flat[base + mid] > uniforms
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid + 1)
    return lo


def _check_uniforms(uniforms: ArrayLike, n: int) -> np.ndarray:
    u = np.asarray(uniforms, dtype=np.float64)
    if u.shape != (n,):
        raise ConfigurationError(f"uniforms must have shape ({n},) (one per code), got {u.shape}")
    if u.size and not (np.all(np.isfinite(u)) and u.min() >= 0.0 and u.max() < 1.0):
        bad = u[~(np.isfinite(u) & (u >= 0.0) & (u < 1.0))][0]
        raise ConfigurationError(f"uniforms must be finite and in [0, 1), got {float(bad)!r}")
    return u


def _check_codes(codes: ArrayLike, r: int) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise DataError(f"codes must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise DataError(f"codes must be 1-D, got shape {arr.shape}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= r):
        bad = arr.min() if arr.min() < 0 else arr.max()
        raise DataError(f"codes must be in [0, {r}) (the matrix size), got {int(bad)}")
    return arr


def randomize(codes: ArrayLike, P: RandomizationMatrix, *, uniforms: ArrayLike) -> np.ndarray:
    """Release every code through its row of P by inverse-CDF sampling (main paper eq. (1)).

    Parameters
    ----------
    codes
        ``(n,)`` true values in ``[0, P.size)``.
    P
        The randomization matrix.
    uniforms
        ``(n,)`` uniforms in [0, 1), one per release, drawn by the caller (party streams).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 released values: ``v_i = min{v : P.cdf[codes[i], v] > uniforms[i]}``.
    """
    if not isinstance(P, RandomizationMatrix):
        raise ConfigurationError(f"P must be a RandomizationMatrix, got {type(P).__name__}")
    x = _check_codes(codes, P.size)
    u = _check_uniforms(uniforms, x.shape[0])
    if x.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return sample_rows(P, x, u)


def sample_rows(P: RandomizationMatrix, rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """:func:`inverse_cdf` of ``P.cdf`` (validated ``rows`` and ``uniforms``), through ``P``'s guide
    table when it has one and it pays for these draws (:mod:`mprr.guide_table`, the same values
    in fewer passes; :meth:`~mprr.matrices.RandomizationMatrix.guide_for`)."""
    guide = P.guide_for(rows.shape[0])
    if guide is None:
        return inverse_cdf(P.cdf, rows, uniforms)
    return guide.sample(rows, uniforms)


def randomize_joint(
    codes: ArrayLike,
    P: RandomizationMatrix | KroneckerMatrix,
    sizes: Sequence[int],
    *,
    uniforms: ArrayLike,
) -> np.ndarray:
    """Release whole records (one joint value each, one uniform each) through P.

    Parameters
    ----------
    codes
        ``(n, k)`` true codes, column j in ``[0, sizes[j])``.
    P
        A :class:`RandomizationMatrix` over the joint domain (size ``Π sizes``, C order — e.g.
        :func:`mprr.matrices.cluster_optimal`), or a :class:`KroneckerMatrix` whose factor
        sizes equal ``sizes``.
    sizes
        Category counts of the k attributes.
    uniforms
        ``(n,)`` uniforms in [0, 1).

    Returns
    -------
    numpy.ndarray
        ``(n, k)`` int64 released codes.

    Notes
    -----
    For a dense P this is :func:`randomize` on the joint codes (RR-Joint, main paper
    Protocol 2).  For a Kronecker P the inverse CDF of the joint row (C order) factorises: the
    first attribute's value is the inverse CDF of its row at ``w``, and the residual
    ``(w - F(v-1)) / p(v)`` — again uniform on [0, 1) — drives the next attribute.  This is the
    joint inverse-CDF sample without building the joint row (identical in exact arithmetic).
    """
    dims = check_sizes(sizes)
    if isinstance(P, KroneckerMatrix):
        if P.sizes != dims:
            raise ConfigurationError(f"Kronecker factor sizes {P.sizes} do not match sizes {dims}")
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] != len(dims):
            raise DataError(f"codes must have shape (n, {len(dims)}), got {arr.shape}")
        encode_joint(arr, dims)  # validates dtype and ranges
        w = _check_uniforms(uniforms, arr.shape[0]).copy()
        out = np.empty(arr.shape, dtype=np.int64)
        below_one = np.nextafter(1.0, 0.0)
        for j, f in enumerate(P.factors):
            cdf = f.cdf
            x = arr[:, j].astype(np.int64, copy=False)
            v = sample_rows(f, x, w)
            out[:, j] = v
            if j + 1 < len(P.factors):
                hi = cdf[x, v]
                lo = np.where(v > 0, cdf[x, np.maximum(v - 1, 0)], 0.0)
                w = np.clip((w - lo) / (hi - lo), 0.0, below_one)
        return out
    if not isinstance(P, RandomizationMatrix):
        raise ConfigurationError(
            f"P must be a RandomizationMatrix or KroneckerMatrix, got {type(P).__name__}"
        )
    total = math.prod(dims)
    if P.size != total:
        raise ConfigurationError(
            f"P has size {P.size} but the joint domain of sizes {dims} has {total} values"
        )
    flat = encode_joint(codes, dims)
    released = randomize(flat, P, uniforms=uniforms)
    return decode_joint(released, dims)
