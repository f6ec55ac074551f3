"""The frequency-oracle interface of local differential privacy, shared by GRR, OUE and OLH.

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

:class:`FrequencyOracle` holds what the oracles share (perturbation from uniforms, support
counts, the estimator and its variance) and the checks of their inputs; the oracles themselves
and Wang et al.'s choice between them are in :mod:`mprr.oracles`.

Draw contract (:mod:`mprr.streams`): randomness enters only as an ``(n, uniforms_per_report)``
array of uniforms in [0, 1), row ``i`` drawn from party ``i``'s stream, so a report is a
deterministic function of (value, uniforms) and the fast path and the actors agree.  Every
report is one non-negative ``int64`` code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mprr.domain import check_epsilon, check_int, real_array
from mprr.errors import ConfigurationError, DataError
from mprr.streams import Randomness, draw_uniforms

__all__ = ["MAX_EPSILON", "FrequencyOracle"]


MAX_EPSILON: float = 700.0
"""Largest ε an oracle accepts: ``e^-ε`` must stay a normal float64 (it underflows near 745)."""


_CHUNK_CELLS = 1 << 16  # reports x cells evaluated at once by support(): 512 KiB of uint64, cache-sized

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
