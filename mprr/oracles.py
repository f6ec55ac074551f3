"""Frequency oracles of local differential privacy: GRR, OUE and OLH.

Wang, Blocki, Li and Jha, *Locally Differentially Private Protocols for Frequency Estimation*
(USENIX Security 2017) — "Wang et al." below.  Each respondent holds one value ``v`` in
``[0, d)`` and sends one report; the aggregator counts how many reports *support* each cell
and inverts the expected count (Wang et al.'s estimator for "pure" protocols)::

    f̂_v = (C_v / n - q*) / (p* - q*)

where ``p*`` is the probability that a report supports the respondent's own value and ``q*``
the probability that it supports any other given value.  The estimate is unbiased and its
variance is (Wang et al.'s variance of the count estimate, divided by n² for frequencies)::

    Var[f̂_v] = q*(1 - q*) / (n (p* - q*)²)  +  f_v (1 - p* - q*) / (n (p* - q*))

The first term is the "approximate" variance Wang et al. compare oracles by (``f_v = 0``); with
the true frequencies the sum is exact.

Oracles (frozen, validated dataclasses sharing :class:`FrequencyOracle`):

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
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mprr.domain import MAX_TENSOR_CELLS, check_epsilon, check_int, real_array
from mprr.errors import ConfigurationError, DataError
from mprr.hashing import OLH_MAX_G, bucket_members, hash_buckets
from mprr.matrices import RandomizationMatrix, grr
from mprr.randomize import sample_rows
from mprr.streams import Randomness, draw_uniforms

__all__ = [
    "MAX_EPSILON",
    "GRR_MATRIX_MAX_D",
    "OUE_MAX_D",
    "MAX_D",
    "FrequencyOracle",
    "GRR",
    "OUE",
    "OLH",
    "best_oracle",
]

MAX_EPSILON: float = 700.0
"""Largest ε an oracle accepts: ``e^-ε`` must stay a normal float64 (it underflows near 745)."""

GRR_MATRIX_MAX_D: int = 1024
"""Largest d for which :meth:`GRR.perturb` samples through the :func:`mprr.matrices.grr` matrix
(the d x d matrix and its cumulative table, 16 MiB at d = 1024), bit-identical to
:func:`mprr.randomize.randomize`; above it the closed-form inverse CDF of the same row is used."""

OUE_MAX_D: int = 62
"""Largest d of :class:`OUE`: a report is a d-bit mask held in one non-negative int64."""

MAX_D: int = MAX_TENSOR_CELLS
"""Largest d of :class:`GRR` and :class:`OLH`: support counts are a dense ``(d,)`` vector
(:data:`mprr.domain.MAX_TENSOR_CELLS`, 50 million cells)."""


_CHUNK_CELLS = 1 << 16  # reports x cells evaluated at once by support(): 512 KiB of uint64, cache-sized
_TWO32 = float(1 << 32)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


# --------------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------------


def _check_d(cls: str, value: Any, maximum: int, advice: str = "") -> int:
    d = check_int(f"{cls}: d", value, 2)
    if d > maximum:
        raise ConfigurationError(f"{cls}: d must be an integer in [2, {maximum:,}], got {d:,}{advice}")
    return d


def _check_oracle_epsilon(cls: str, epsilon: Any) -> float:
    eps = check_epsilon(epsilon, f"{cls}: epsilon")
    if eps > MAX_EPSILON:
        raise ConfigurationError(f"{cls}: epsilon must be finite and in (0, {MAX_EPSILON:g}], got {epsilon!r}")
    return eps


def _int_array(name: str, values: ArrayLike) -> IntArray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise DataError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise DataError(f"{name} must be in [0, 2**63), got {int(arr.max())}")
    out: IntArray = arr.astype(np.int64, copy=False)
    return out


def _check_codes(name: str, values: ArrayLike, limit: int, what: str) -> IntArray:
    """``values`` as 1-D int64 in ``[0, limit)`` or DataError naming ``what`` the range is."""
    arr = _int_array(name, values)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= limit:
            raise DataError(f"{name} must be in [0, {limit:,}) ({what}), got {lo if lo < 0 else hi:,}")
    return arr


def _check_uniforms(u: ArrayLike, n: int, k: int) -> FloatArray:
    arr = real_array("u", u)
    if arr.shape != (n, k):
        raise ConfigurationError(
            f"u must have shape ({n}, {k}) (uniforms_per_report = {k} per value), got {arr.shape}"
        )
    if arr.size and not (np.all(np.isfinite(arr)) and arr.min() >= 0.0 and arr.max() < 1.0):
        bad = arr[~(np.isfinite(arr) & (arr >= 0.0) & (arr < 1.0))][0]
        raise ConfigurationError(f"u must be finite and in [0, 1), got {float(bad)!r}")
    return arr


def _sum_rows(match: NDArray[np.bool_], groups: IntArray | None, n_groups: int) -> FloatArray:
    """``(n_groups, d)`` counts of True per column of ``match``, rows summed by group."""
    d = match.shape[1]
    if groups is None:
        total: FloatArray = match.sum(axis=0, dtype=np.float64)[None, :]
        return total
    flat = (groups[:, None] * d + np.arange(d, dtype=np.int64)[None, :])[match]
    counts: FloatArray = np.bincount(flat, minlength=n_groups * d).astype(np.float64).reshape(n_groups, d)
    return counts


# --------------------------------------------------------------------------------------------
# the interface
# --------------------------------------------------------------------------------------------


class FrequencyOracle(ABC):
    """What GRR, OUE and OLH share: perturb from uniforms, support counts, estimate, variance.

    Subclasses are frozen dataclasses with fields ``d`` (domain size) and ``epsilon`` (the ε
    requested); see the module docstring for the estimator and its variance (Wang et al. 2017).
    """

    name: ClassVar[str]
    d: int
    epsilon: float

    # ---- parameters of the mechanism -------------------------------------------------------

    @property
    @abstractmethod
    def uniforms_per_report(self) -> int:
        """How many uniforms from the party's stream one report consumes."""

    @property
    @abstractmethod
    def p_star(self) -> float:
        """Probability that a report supports the respondent's own value."""

    @property
    @abstractmethod
    def q_star(self) -> float:
        """Probability that a report supports a given value other than the respondent's."""

    @property
    @abstractmethod
    def epsilon_spent(self) -> float:
        """ε of one report computed from the mechanism's own probabilities (what a party books).

        The largest log-ratio of the probabilities of one report under two input values; equal
        to :attr:`epsilon` up to rounding.
        """

    @property
    @abstractmethod
    def report_bits(self) -> int:
        """Bits one report needs on a wire (the codes lie in ``[0, 2**report_bits)``)."""

    @property
    @abstractmethod
    def report_limit(self) -> int:
        """Exclusive upper bound of the report codes."""

    # ---- respondent side ---------------------------------------------------------------------

    @abstractmethod
    def _perturb(self, x: IntArray, u: FloatArray) -> IntArray:
        """Reports of validated values ``x`` with validated uniforms ``u``."""

    def perturb(self, values: ArrayLike, u: ArrayLike) -> IntArray:
        """One report per value, a deterministic function of the value and its uniforms.

        Parameters
        ----------
        values
            ``(n,)`` integer values in ``[0, d)``.
        u
            ``(n, uniforms_per_report)`` uniforms in [0, 1); row ``i`` from party ``i``'s stream.

        Returns
        -------
        numpy.ndarray
            ``(n,)`` int64 report codes in ``[0, report_limit)``.

        Raises
        ------
        DataError
            If a value is not an integer in ``[0, d)``.
        ConfigurationError
            If ``u`` has the wrong shape or a value outside [0, 1).
        """
        x = _check_codes("values", values, self.d, f"the {self.name} domain size d")
        uu = _check_uniforms(u, x.shape[0], self.uniforms_per_report)
        if x.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        return self._perturb(x, uu)

    def perturb_rng(self, values: ArrayLike, *, rng: Randomness) -> IntArray:
        """:meth:`perturb` with the uniforms drawn from ``rng`` (:func:`mprr.streams.draw_uniforms`).

        ``rng`` is a numpy Generator (one block ``rng.random((n, k))``) or a
        :class:`~mprr.streams.PartyStreams` (row ``i`` from party ``i``'s stream).
        """
        x = _check_codes("values", values, self.d, f"the {self.name} domain size d")
        return self.perturb(x, draw_uniforms(rng, x.shape[0], self.uniforms_per_report))

    # ---- aggregator side ---------------------------------------------------------------------

    @abstractmethod
    def _tally(self, reports: IntArray, groups: IntArray | None, n_groups: int) -> FloatArray:
        """``(n_groups, d)`` support counts of validated reports (``groups`` None: one group)."""

    def _reports(self, reports: ArrayLike) -> IntArray:
        return _check_codes("reports", reports, self.report_limit, f"{self.name} report codes for d={self.d}")

    def support(self, reports: ArrayLike) -> FloatArray:
        """``(d,)`` support counts ``C_v``: how many reports support each cell.

        Raises
        ------
        DataError
            If a report is not an integer code in ``[0, report_limit)``.
        """
        r = self._reports(reports)
        out: FloatArray = self._tally(r, None, 1)[0]
        return out

    def support_by_group(self, reports: ArrayLike, groups: ArrayLike, n_groups: int) -> FloatArray:
        """``(n_groups, d)`` support counts of the reports of each group.

        For methods where each respondent reports one of several units through this oracle
        (e.g. SMP: one sampled attribute each): ``groups[i]`` in ``[0, n_groups)`` is the unit
        report ``i`` belongs to.  Row ``j`` equals ``support(reports[groups == j])``; divide by
        ``numpy.bincount(groups, minlength=n_groups)`` in :meth:`estimate`.
        """
        n_groups = check_int("n_groups", n_groups, 1)
        r = self._reports(reports)
        g = _check_codes("groups", groups, n_groups, "n_groups")
        if g.shape != r.shape:
            raise DataError(f"groups must have one entry per report, shape {r.shape}, got {g.shape}")
        return self._tally(r, g, n_groups)

    def estimate(self, support: ArrayLike, n: ArrayLike) -> FloatArray:
        """Unbiased frequency estimate ``(C_v / n - q*) / (p* - q*)`` (Wang et al.).

        Parameters
        ----------
        support
            ``(d,)`` support counts (or ``(k, d)``: one row per group).
        n
            Number of reports (an int, or ``(k,)`` ints for grouped support), each >= 1.

        Returns
        -------
        numpy.ndarray
            Same shape as ``support``; may be negative and need not sum to 1.
        """
        s = real_array("support", support, finite=True)
        if s.ndim not in (1, 2) or s.shape[-1] != self.d:
            raise ConfigurationError(f"support must have shape ({self.d},) or (k, {self.d}), got {s.shape}")
        nn = np.asarray(n)
        if nn.dtype.kind not in "iu" or nn.ndim > 1 or (nn.ndim == 1 and (s.ndim != 2 or nn.shape[0] != s.shape[0])):
            raise ConfigurationError(
                f"n must be an integer >= 1 (or one per row of a (k, d) support), got {n!r}"
            )
        if nn.size and int(nn.min()) < 1:
            raise ConfigurationError(f"n must be an integer >= 1 (number of reports), got {int(nn.min())}")
        scale = nn.astype(np.float64)[:, None] if nn.ndim == 1 else float(nn)
        p, q = self.p_star, self.q_star
        out: FloatArray = (s / scale - q) / (p - q)
        return out

    def variance(self, n: int, f: ArrayLike | None = None) -> FloatArray:
        """Per-cell variance of :meth:`estimate` over n reports (Wang et al.'s count variance / n²).

        Parameters
        ----------
        n
            Number of reports, >= 1.
        f
            True frequencies ``(d,)`` in [0, 1].  Without them the approximate variance of
            Wang et al. (the ``f_v = 0`` term ``q*(1-q*)/(n (p*-q*)²)``, the same for every cell)
            is returned; with them the exact variance, adding ``f_v (1-p*-q*)/(n (p*-q*))``.

        Returns
        -------
        numpy.ndarray
            ``(d,)`` variances of the frequency estimates.
        """
        n = check_int("n", n, 1)
        p, q = self.p_star, self.q_star
        base = q * (1.0 - q) / (n * (p - q) ** 2)
        if f is None:
            return np.full(self.d, base)
        ff = real_array("f", f, finite=True)
        if ff.shape != (self.d,) or np.any(ff < 0.0) or np.any(ff > 1.0):
            raise ConfigurationError(f"f must be {self.d} frequencies in [0, 1], got shape {ff.shape}")
        out: FloatArray = base + ff * (1.0 - p - q) / (n * (p - q))
        return out


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
