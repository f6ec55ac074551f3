"""Guide tables: the inverse-CDF sample of a matrix row in a constant number of array passes.

The draw contract of :mod:`mprr.streams` releases, for a true value ``x`` and a uniform ``w``
in [0, 1), the first ``v`` with ``cdf[x, v] > w`` (:func:`mprr.randomize.inverse_cdf`, a
binary search of ``ceil(log2 r)`` passes over the n draws).  A guide table (the indexed search
of Chen and Asau, "On generating random variates from an empirical distribution", 1974; Devroye,
*Non-Uniform Random Variate Generation*, Section III.2.4) cuts [0, 1) into ``B`` buckets
``[b/B, (b+1)/B)``, ``B`` a power of two, fine enough that no bucket of any row holds two
distinct CDF values.  For each row and bucket it stores

- ``low``: the answer at the bucket's left end, the first ``v`` with ``cdf[x, v] > b/B``;
- ``edge``: ``cdf[x, low]``;
- ``high``: the answer once ``w`` reaches ``edge``, the first ``v`` with ``cdf[x, v] > edge``.

The sample is then ``high if w >= edge else low`` with ``b = floor(w B)``: a few passes over the
draws whatever r.  It is exact, not an approximation: ``w B`` and ``b / B`` are exact in binary
floating point (B is a power of two), so ``b/B <= w < (b+1)/B`` holds exactly, the answer lies at
or after ``low``, and ``high``'s CDF reaches ``(b+1)/B`` (checked for every bucket when the table
is built), so the answer is the one the binary search gives, bit for bit.

A matrix whose smallest CDF step needs more than :data:`MAX_GUIDE_CELLS` table cells (a very
large domain or a tiny probability) has no table and is sampled by the binary search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MAX_GUIDE_CELLS", "GuideTable"]

#: Largest guide table (rows x buckets) built for one matrix: 3 arrays of 8-byte entries, 3 MiB.
MAX_GUIDE_CELLS: int = 1 << 17


@dataclass(frozen=True, eq=False)
class GuideTable:
    """Guide table of an ``(r_in, r)`` row-wise CDF table (see the module docstring).

    Attributes
    ----------
    buckets
        ``B``, a power of two.
    low, edge, high
        ``(r_in * B,)`` arrays, entry ``x * B + b`` for row ``x`` and bucket ``b``.
    """

    buckets: int
    low: np.ndarray
    edge: np.ndarray
    high: np.ndarray
    _pair: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # low and high interleaved: entry 2 (x B + b) + [w >= edge] is the sample
        pair = np.empty(2 * self.low.size, dtype=np.int64)
        pair[0::2], pair[1::2] = self.low, self.high
        object.__setattr__(self, "_pair", pair)

    @classmethod
    def build(cls, cdf: np.ndarray, *, max_cells: int = MAX_GUIDE_CELLS) -> GuideTable | None:
        """The guide table of ``cdf`` (rows non-decreasing, last column exactly 1.0), or ``None``
        when it would need more than ``max_cells`` cells.

        ``B`` is the smallest power of two at least twice the number of columns and at least
        ``1 / s``, ``s`` the smallest positive step between consecutive CDF values of a row, so
        that no bucket holds two distinct values (every bucket is checked).
        """
        rows, r = cdf.shape
        if rows * 2 * r > max_cells:  # B >= 2r buckets per row would not fit
            return None
        steps = np.diff(cdf, axis=1, prepend=0.0)
        positive = steps[steps > 0.0]
        smallest = float(positive.min()) if positive.size else 1.0
        if smallest * max_cells < rows:  # 1/smallest buckets per row would not fit
            return None
        buckets = 1 << max(1, math.ceil(math.log2(max(2 * r, 1.0 / smallest))))
        if rows * buckets > max_cells:
            return None
        # low[x, b] = #{v : cdf[x, v] <= b/B} = #{v : ceil(cdf[x, v] B) <= b} (B a power of two:
        # cdf B and its ceiling are exact), a running count of each row's histogram of ceilings
        row = np.arange(rows, dtype=np.intp)[:, None]
        ceilings = np.ceil(cdf * buckets).astype(np.intp)
        ceilings += row * (buckets + 1)
        counts = np.bincount(ceilings.ravel(), minlength=rows * (buckets + 1)).reshape(rows, buckets + 1)
        low = np.minimum(np.cumsum(counts[:, :buckets], axis=1), r - 1)  # r - 1: unreachable guard
        at = low + row * r  # flat index of (x, low[x, b]) in cdf
        edge = cdf.ravel().take(at)
        # following[x, v]: first w > v with cdf[x, w] > cdf[x, v] (r - 1 past the last step)
        starts = np.where(cdf[:, 1:] > cdf[:, :-1], np.arange(1, r, dtype=np.intp), r - 1)
        following = np.minimum.accumulate(starts[:, ::-1], axis=1)[:, ::-1]
        following = np.concatenate([following, np.full((rows, 1), r - 1, dtype=np.intp)], axis=1)
        high = following.ravel().take(at)  # where edge = 1.0: never taken (w < 1)
        upper = (np.arange(buckets, dtype=np.float64) + 1.0) / buckets
        reach = cdf.ravel().take(high + row * r)
        if not bool(np.all((edge >= upper) | (reach >= upper))):
            return None  # a bucket with two distinct values (rounding): keep the binary search
        return cls(buckets, low.ravel(), edge.ravel(), high.ravel())

    def sample(self, rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        """First ``v`` with ``cdf[rows[i], v] > uniforms[i]`` for every i (int64), as
        :func:`mprr.randomize.inverse_cdf` returns; ``uniforms`` in [0, 1), ``rows`` valid rows."""
        at = (uniforms * self.buckets).astype(np.intp)
        at += rows * self.buckets
        above = uniforms >= self.edge.take(at)
        at <<= 1
        at += above
        out: np.ndarray = self._pair.take(at)
        return out
