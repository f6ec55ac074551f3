"""Frequency oracles of local differential privacy: GRR, OUE and OLH.

Wang, Blocki, Li and Jha, *Locally Differentially Private Protocols for Frequency Estimation*
(USENIX Security 2017) — "Wang et al." below.  Each respondent holds one value ``v`` in
``[0, d)`` and sends one report; the aggregator counts how many reports *support* each cell and
inverts the expected count with Wang et al.'s estimator for "pure" protocols, whose unbiased
estimate and variance :mod:`mprr.frequency_oracle` gives once for all three.

Oracles (frozen, validated dataclasses sharing :class:`~mprr.frequency_oracle.FrequencyOracle`,
whose module gives the estimator, its variance and the checks they share):

- :class:`GRR` — generalized randomized response (Wang et al. "direct encoding", k-RR): report
  the true value with ``p = e^ε/(e^ε + d - 1)``, any other with ``q = 1/(e^ε + d - 1)``.
- :class:`OUE` — optimized unary encoding: a d-bit vector, the respondent's own bit set with
  ``p = 1/2``, every other bit with ``q = 1/(e^ε + 1)``.
- :class:`OLH` — optimized local hashing: hash the value into ``[0, g)`` with a hash function
  picked at random by the respondent (``g = round(e^ε) + 1`` by default), then GRR over g.

Draw contract (:mod:`mprr.streams`): randomness enters only as an ``(n, uniforms_per_report)``
array of uniforms in [0, 1), row ``i`` drawn from party ``i``'s stream — one uniform for GRR,
d for OUE (one per bit), two for OLH (hash seed, then perturbation) — so a report is a
deterministic function of (value, uniforms) and the fast path and the actors agree.  Every
report is one non-negative ``int64`` code: GRR the reported cell; OUE the bit vector as a
bitmask (bit ``v`` = cell ``v``); OLH ``seed * g + y``.

:func:`best_oracle` makes Wang et al.'s choice between them by approximate variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from mprr.domain import MAX_TENSOR_CELLS, check_int
from mprr.errors import ConfigurationError
from mprr.frequency_oracle import (
    _CHUNK_CELLS,
    MAX_EPSILON,
    FloatArray,
    FrequencyOracle,
    IntArray,
    _check_d,
    _check_oracle_epsilon,
    _sum_rows,
)
from mprr.hashing import OLH_MAX_G, bucket_members, hash_buckets
from mprr.matrices import RandomizationMatrix, grr
from mprr.randomize import sample_rows

__all__ = [
    "MAX_EPSILON",  # from mprr.frequency_oracle, with the interface the oracles share
    "GRR_MATRIX_MAX_D",
    "OUE_MAX_D",
    "MAX_D",
    "FrequencyOracle",
    "GRR",
    "OUE",
    "OLH",
    "best_oracle",
]


GRR_MATRIX_MAX_D: int = 1024
"""Largest d for which :meth:`GRR.perturb` samples through the :func:`mprr.matrices.grr` matrix
(the d x d matrix and its cumulative table, 16 MiB at d = 1024), bit-identical to
:func:`mprr.randomize.randomize`; above it the closed-form inverse CDF of the same row is used."""

OUE_MAX_D: int = 62
"""Largest d of :class:`OUE`: a report is a d-bit mask held in one non-negative int64."""

MAX_D: int = MAX_TENSOR_CELLS
"""Largest d of :class:`GRR` and :class:`OLH`: support counts are a dense ``(d,)`` vector
(:data:`mprr.domain.MAX_TENSOR_CELLS`, 50 million cells)."""


_TWO32 = float(1 << 32)


# --------------------------------------------------------------------------------------------
# GRR
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GRR(FrequencyOracle):
    """Generalized randomized response over d values (Wang et al.'s "direct encoding", k-RR).

    Reports the true value with ``p = e^ε/(e^ε + d - 1)`` and each other value with
    ``q = 1/(e^ε + d - 1)``; ``p* = p``, ``q* = q``.  It is the :func:`mprr.matrices.grr`
    matrix, and a report is its inverse-CDF sample (:func:`mprr.randomize.randomize`) for the
    same uniform — bit-identical up to ``d =`` :data:`GRR_MATRIX_MAX_D`; above it the
    closed-form inverse CDF of the same row (equal except when a uniform falls within rounding
    of a cell boundary).  Approximate variance ``(e^ε + d - 2)/(n (e^ε - 1)²)``.

    Parameters
    ----------
    d
        Domain size, in [2, :data:`MAX_D`].
    epsilon
        ε of one report, in (0, :data:`MAX_EPSILON`].
    """

    d: int
    epsilon: float
    name: ClassVar[str] = "GRR"

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", _check_d(self.name, self.d, MAX_D))
        object.__setattr__(self, "epsilon", _check_oracle_epsilon(self.name, self.epsilon))

    @property
    def uniforms_per_report(self) -> int:
        """One uniform per report."""
        return 1

    @property
    def p_star(self) -> float:
        """``e^ε/(e^ε + d - 1)``, computed as ``1/(1 + (d-1)e^-ε)`` like :func:`mprr.matrices.grr`."""
        return 1.0 / (1.0 + (self.d - 1) * math.exp(-self.epsilon))

    @property
    def q_star(self) -> float:
        """``1/(e^ε + d - 1)``, computed as ``e^-ε p*`` like :func:`mprr.matrices.grr`."""
        return math.exp(-self.epsilon) * self.p_star

    @property
    def epsilon_spent(self) -> float:
        """``ln(p/q)`` — main paper eq. (4) on the GRR matrix."""
        return math.log(self.p_star) - math.log(self.q_star)

    @property
    def report_bits(self) -> int:
        """``ceil(log2 d)``."""
        return (self.d - 1).bit_length()

    @property
    def report_limit(self) -> int:
        """d."""
        return self.d

    @cached_property
    def matrix(self) -> RandomizationMatrix:
        """The :func:`mprr.matrices.grr` matrix of this oracle (refused beyond 4,096 values)."""
        return grr(self.d, self.epsilon)

    def _perturb(self, x: IntArray, u: FloatArray) -> IntArray:
        w = u[:, 0]
        if self.d <= GRR_MATRIX_MAX_D:
            return sample_rows(self.matrix, x, w)
        # row x of the cdf: (v+1) q for v < x, then x q + p + (v - x) q for v >= x
        p, q = self.p_star, self.q_star
        xq = x * q
        below = np.clip(np.floor(w / q), 0, x - 1).astype(np.int64)
        above = np.clip(x + 1 + np.floor((w - xq - p) / q), x, self.d - 1).astype(np.int64)
        out: IntArray = np.where(w < xq, below, np.where(w < xq + p, x, above))
        return out

    def _tally(self, reports: IntArray, groups: IntArray | None, n_groups: int) -> FloatArray:
        idx = reports if groups is None else groups * self.d + reports
        counts: FloatArray = np.bincount(idx, minlength=n_groups * self.d).astype(np.float64)
        return counts.reshape(n_groups, self.d)


# --------------------------------------------------------------------------------------------
# OUE
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OUE(FrequencyOracle):
    """Optimized unary encoding (Wang et al.).

    The value is one-hot encoded in d bits; the respondent's bit is reported as 1 with
    ``p = 1/2``, every other bit as 1 with ``q = 1/(e^ε + 1)`` (bit ``v`` consumes uniform
    ``u[:, v]``: set when ``u < p`` or ``u < q``).  ``p* = p``, ``q* = q``; ε =
    ``ln(p(1-q)/((1-p)q))``.  Approximate variance ``4e^ε/(n (e^ε - 1)²)``, independent of d.
    A report is the bit vector as an int64 bitmask (bit ``v`` = cell ``v``), so d <= 62.

    Parameters
    ----------
    d
        Domain size, in [2, :data:`OUE_MAX_D`] (use :class:`OLH` for larger domains).
    epsilon
        ε of one report, in (0, :data:`MAX_EPSILON`].
    """

    d: int
    epsilon: float
    name: ClassVar[str] = "OUE"

    def __post_init__(self) -> None:
        advice = " (a report is a d-bit mask in one int64); use OLH for larger domains"
        object.__setattr__(self, "d", _check_d(self.name, self.d, OUE_MAX_D, advice))
        object.__setattr__(self, "epsilon", _check_oracle_epsilon(self.name, self.epsilon))

    @property
    def uniforms_per_report(self) -> int:
        """d uniforms per report, one per bit."""
        return self.d

    @property
    def p_star(self) -> float:
        """1/2."""
        return 0.5

    @property
    def q_star(self) -> float:
        """``1/(e^ε + 1)``, computed as ``e^-ε/(1 + e^-ε)``."""
        t = math.exp(-self.epsilon)
        return t / (1.0 + t)

    @property
    def epsilon_spent(self) -> float:
        """``ln(p(1-q)/((1-p)q))``."""
        p, q = self.p_star, self.q_star
        return math.log(p) + math.log1p(-q) - math.log1p(-p) - math.log(q)

    @property
    def report_bits(self) -> int:
        """d."""
        return self.d

    @property
    def report_limit(self) -> int:
        """``2**d``."""
        return 1 << self.d

    def _perturb(self, x: IntArray, u: FloatArray) -> IntArray:
        n = x.shape[0]
        threshold = np.full((n, self.d), self.q_star)
        threshold[np.arange(n), x] = self.p_star
        packed = np.packbits(u < threshold, axis=1, bitorder="little")
        buf = np.zeros((n, 8), dtype=np.uint8)
        buf[:, : packed.shape[1]] = packed
        out: IntArray = buf.view("<u8").reshape(n).astype(np.int64)
        return out

    def _tally(self, reports: IntArray, groups: IntArray | None, n_groups: int) -> FloatArray:
        out = np.zeros((n_groups, self.d))
        step = max(1, _CHUNK_CELLS // 64)
        for start in range(0, reports.shape[0], step):
            chunk = np.ascontiguousarray(reports[start : start + step].astype("<i8"))
            bits = np.unpackbits(chunk.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")[:, : self.d]
            out += _sum_rows(bits.astype(bool), None if groups is None else groups[start : start + step], n_groups)
        return out


# --------------------------------------------------------------------------------------------
# OLH
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OLH(FrequencyOracle):
    """Optimized local hashing (Wang et al.).

    The respondent picks a hash function ``H_seed`` of :func:`mprr.hashing.universal_hash` with
    ``seed = floor(u0 · 2**32)``, hashes its value into ``[0, g)`` and reports the hash through
    GRR over g values driven by ``u1``: keep it when ``u1 < p = e^ε/(e^ε + g - 1)``, else the
    ``j``-th of the other ``g - 1`` buckets, ``j = floor((u1 - p)/q)`` with
    ``q = 1/(e^ε + g - 1)``.  The report is ``seed · g + y``.  A report supports cell v when
    ``H_seed(v) = y``: ``p* = p``, ``q* = 1/g``.  ε = ``ln(p/q)`` (the seed does not depend on
    the value).  With ``g = e^ε + 1`` the approximate variance is ``4e^ε/(n (e^ε - 1)²)``, as
    OUE's; g defaults to ``round(e^ε) + 1`` (Wang et al.'s optimal ``g = e^ε + 1``, rounded).

    Parameters
    ----------
    d
        Domain size, in [2, :data:`MAX_D`].
    epsilon
        ε of one report, in (0, :data:`MAX_EPSILON`].
    g
        Hash range, in [2, :data:`OLH_MAX_G`]; ``None`` for ``round(e^ε) + 1``.
    """

    d: int
    epsilon: float
    g: int | None = None
    _g: int = field(init=False, repr=False, compare=False, default=0)
    name: ClassVar[str] = "OLH"

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", _check_d(self.name, self.d, MAX_D))
        eps = _check_oracle_epsilon(self.name, self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        if self.g is None:
            if eps > math.log(OLH_MAX_G - 1.5):
                raise ConfigurationError(
                    f"OLH: the default g = round(e^epsilon) + 1 must be at most {OLH_MAX_G:,}, so epsilon must"
                    f" be at most {math.log(OLH_MAX_G - 1.5):.4g} without an explicit g, got {eps!r}; pass g"
                    " or use GRR"
                )
            g = round(math.exp(eps)) + 1
        else:
            g = check_int("OLH: g", self.g, 2)
            if g > OLH_MAX_G:
                raise ConfigurationError(
                    f"OLH: g must be an integer in [2, {OLH_MAX_G:,}] (seed * g + y must fit in an int64),"
                    f" got {g:,}"
                )
        object.__setattr__(self, "g", g)
        object.__setattr__(self, "_g", g)

    @property
    def uniforms_per_report(self) -> int:
        """Two uniforms per report: the hash seed, then the perturbation."""
        return 2

    @property
    def p_star(self) -> float:
        """``e^ε/(e^ε + g - 1)``, computed as ``1/(1 + (g-1)e^-ε)``."""
        return 1.0 / (1.0 + (self._g - 1) * math.exp(-self.epsilon))

    @property
    def q_grr(self) -> float:
        """``1/(e^ε + g - 1)``: probability of each other bucket in the GRR step."""
        return math.exp(-self.epsilon) * self.p_star

    @property
    def q_star(self) -> float:
        """``1/g``."""
        return 1.0 / self._g

    @property
    def epsilon_spent(self) -> float:
        """``ln(p/q)`` of the GRR step over g buckets."""
        return math.log(self.p_star) - math.log(self.q_grr)

    @property
    def report_bits(self) -> int:
        """``32 + ceil(log2 g)``."""
        return 32 + (self._g - 1).bit_length()

    @property
    def report_limit(self) -> int:
        """``2**32 · g``."""
        return (1 << 32) * self._g

    def _perturb(self, x: IntArray, u: FloatArray) -> IntArray:
        g = self._g
        seeds = np.floor(u[:, 0] * _TWO32).astype(np.uint64)
        h = hash_buckets(seeds, x.astype(np.uint64), g)
        p, q = self.p_star, self.q_grr
        w = u[:, 1]
        if q > 0.0:
            j = np.clip(np.floor((w - p) / q), 0, g - 2).astype(np.int64)
            other = j + (j >= h)
        else:  # p == 1: always kept
            other = h
        y = np.where(w < p, h, other)
        out: IntArray = seeds.astype(np.int64) * g + y
        return out

    def _tally(self, reports: IntArray, groups: IntArray | None, n_groups: int) -> FloatArray:
        g = self._g
        seeds = (reports // g).astype(np.uint64)
        y = reports % g
        cells = np.arange(self.d, dtype=np.uint64)
        out = np.zeros((n_groups, self.d))
        step = max(1, _CHUNK_CELLS // self.d)
        for start in range(0, reports.shape[0], step):
            stop = start + step
            match = bucket_members(seeds[start:stop], y[start:stop], cells, g)
            out += _sum_rows(match, None if groups is None else groups[start:stop], n_groups)
        return out


# --------------------------------------------------------------------------------------------
# choice
# --------------------------------------------------------------------------------------------


def best_oracle(d: int, epsilon: float) -> FrequencyOracle:
    """The oracle of least approximate variance for d values at ε (Wang et al.'s comparison).

    GRR's approximate variance ``(e^ε + d - 2)/(e^ε - 1)²`` is below OUE's and OLH's
    ``4e^ε/(e^ε - 1)²`` exactly when ``d < 3e^ε + 2``: then :class:`GRR`.  Otherwise
    :class:`OUE` when ``d <=`` :data:`OUE_MAX_D` (the optimal variance, a d-bit report), else
    :class:`OLH` (nearly the same variance with ``32 + log2 g`` bits per report).
    """
    d = check_int("d", d, 2)
    eps = _check_oracle_epsilon("best_oracle", epsilon)
    if d < 3.0 * math.exp(eps) + 2.0:
        return GRR(d, eps)
    if d <= OUE_MAX_D:
        return OUE(d, eps)
    return OLH(d, eps)
