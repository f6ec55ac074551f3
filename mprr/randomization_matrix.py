"""The validated randomization matrix: ``RandomizationMatrix`` and the numerics it needs.

Convention (main paper eq. (1)): ``P[u, v] = Pr(Y = v | X = u)``; rows sum to 1, the
distribution of the released value is ``lambda = P.T @ pi`` and the unbiased estimator is
``pi_hat = inv(P.T) @ lambda_hat`` (main paper eq. (2)).  Papers that write the transpose
(Nayak's concise theory: columns sum to 1) are converted at the boundary with
:meth:`RandomizationMatrix.from_columns` / :meth:`RandomizationMatrix.columns`.

The papers' constructors (GRR, keep-or-uniform, cluster-optimal, ...) are in
:mod:`mprr.matrices`, lazy Kronecker products in :mod:`mprr.kronecker`; both build on this
module, which imports neither.
"""

from __future__ import annotations

import math
import warnings
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from mprr.domain import check_real, real_array
from mprr.errors import ConfigurationError, EstimationError
from mprr.guide_table import GuideTable

__all__ = ["SINGULAR_TOLERANCE", "RandomizationMatrix", "column_epsilon", "dense_solve", "row_entropies"]

#: A closed-form inverse is refused as singular when its smallest eigenvalue modulus is below
#: this fraction of the largest one (condition number above 1e13).
SINGULAR_TOLERANCE: float = 1e-13

#: Draws per matrix row from which sampling builds the matrix's guide table (its cost is about
#: that of the binary search over 64 draws per row, for the table sizes of mprr.guide_table).
GUIDE_DRAWS_PER_ROW: int = 64



def _square_array(name: str, values: ArrayLike) -> np.ndarray:
    arr = real_array(name, values).copy()  # a copy: the matrix keeps it read-only
    if arr.ndim != 2:
        raise ConfigurationError(
            f"{name} must be a non-empty 2-D square array of probabilities, got {values!r} (shape {arr.shape})"
        )
    return arr


# --------------------------------------------------------------------------------------------
# RandomizationMatrix
# --------------------------------------------------------------------------------------------


class RandomizationMatrix:
    """A validated r x r randomization matrix, ``P[u, v] = Pr(Y = v | X = u)``.

    Parameters
    ----------
    values
        Square array of probabilities; copied and made read-only.
    atol
        Tolerance for the row sums (each must be within ``atol`` of 1).

    Raises
    ------
    ConfigurationError
        If ``values`` is not 2-D square, has a NaN/inf or a negative entry, or a row that
        does not sum to 1 within ``atol``.

    Notes
    -----
    Main paper eq. (1)/(2): ``lambda = P.T @ pi``, ``pi_hat = inv(P.T) @ lambda_hat``.  The
    matrix is immutable, so what is derived from it (ε, entropy, CDF, λ, inverse) is computed once.
    """

    def __init__(self, values: ArrayLike, *, atol: float = 1e-9) -> None:
        self._atol = check_real("atol", atol)
        self._values = _validated(_square_array("values", values), self._atol, "rows")
        self._values.setflags(write=False)

    # ---- conversions -----------------------------------------------------------------------

    @classmethod
    def from_columns(cls, q: ArrayLike, *, atol: float = 1e-9) -> RandomizationMatrix:
        """Build from a column-stochastic matrix ``Q[v, u] = Pr(Y = v | X = u)`` (Nayak, Kikuchi).

        Raises ConfigurationError when the columns of ``q`` do not sum to 1.
        """
        arr = _validated(_square_array("q", q), float(atol), "columns")
        return cls(arr.T, atol=atol)

    def columns(self) -> np.ndarray:
        """The column-stochastic transpose ``Q = P.T`` (Nayak's convention, ``lambda = Q pi``)."""
        return self._values.T.copy()

    # ---- basic attributes ------------------------------------------------------------------

    @property
    def values(self) -> np.ndarray:
        """The matrix entries (read-only ``float64`` array)."""
        return self._values

    @property
    def size(self) -> int:
        """Number of categories r."""
        return int(self._values.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        """``(r, r)``."""
        return (self.size, self.size)

    @property
    def atol(self) -> float:
        """Row-sum tolerance used at validation."""
        return self._atol

    def __repr__(self) -> str:
        return f"RandomizationMatrix(size={self.size}, epsilon={self.epsilon:.6g}, beta={self.beta:.4f})"

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in ("_values", "_atol") or name in self.__dict__:
            raise AttributeError(f"a RandomizationMatrix is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._values, dtype=dtype)

    # ---- privacy / randomness measures ------------------------------------------------------

    @cached_property
    def epsilon(self) -> float:
        """ε of main paper eq. (4): ``ln max_v (max_u P[u, v] / min_u P[u, v])``.

        ``inf`` when a column mixes zero and non-zero entries; all-zero columns (values that are
        never released) are ignored.
        """
        return column_epsilon(self._values)

    @cached_property
    def entropy_rate(self) -> float:
        """Entropy rate H(P) in bits: mean row entropy (bistochastic paper eq. (4))."""
        return float(np.mean(row_entropies(self._values)))

    @property
    def beta(self) -> float:
        """β = H(P) / log2(r) (bistochastic paper Definition 1); 0 for r = 1."""
        return self.entropy_rate / math.log2(self.size) if self.size > 1 else 0.0

    @property
    def is_bistochastic(self) -> bool:
        """True when the columns also sum to 1 (within ``atol``)."""
        return bool(np.all(np.abs(self._values.sum(axis=0) - 1.0) <= self._atol))

    @cached_property
    def cdf(self) -> np.ndarray:
        """Row-wise cumulative sums, rescaled so that each row ends exactly at 1.0.

        Row ``u`` is the inverse-CDF table of :func:`mprr.randomize.randomize`: the released
        value for a uniform ``w`` in [0, 1) is the first ``v`` with ``cdf[u, v] > w``.  After
        the rescale the last non-zero entry of a row has cdf exactly 1.0, so a value of zero
        probability can never be released.
        """
        cs = np.cumsum(self._values, axis=1)
        cs /= cs[:, -1:]
        cs.setflags(write=False)
        return cs

    @cached_property
    def guide(self) -> GuideTable | None:
        """Guide table of :attr:`cdf` (:mod:`mprr.guide_table`): the same inverse-CDF samples
        as the binary search in a constant number of passes; ``None`` when too large."""
        return GuideTable.build(self.cdf)

    def guide_for(self, draws: int) -> GuideTable | None:
        """:attr:`guide` when it pays for ``draws`` samples: already built, or at least
        :data:`GUIDE_DRAWS_PER_ROW` draws per row (building it searches every row's buckets,
        so a single party's draw keeps the binary search)."""
        if "guide" in self.__dict__ or draws >= GUIDE_DRAWS_PER_ROW * self.size:
            return self.guide
        return None

    # ---- structure and inversion -------------------------------------------------------------

    @cached_property
    def lam(self) -> float | None:
        """λ when ``P = λ I + (1 - λ) J / r`` (one value on the diagonal, one off it), else None.

        GRR, keep-or-uniform, cluster-optimal, λ-randomization and Warner matrices all have this
        form, which gives the closed-form inverse of lambda paper Property 1.
        """
        return _uniform_form_lambda(self._values)

    @property
    def closed_form(self) -> str | None:
        """Which closed-form inverse :meth:`inverse` uses: ``"property-1"``, ``"circulant"`` or None."""
        if self.lam is not None:
            return "property-1"
        if self._circulant:
            return "circulant"
        return None

    @property
    def condition_number(self) -> float:
        """2-norm condition number of P (``inf`` when singular); closed form ``1/|λ|`` for Property 1."""
        lam = self.lam
        if lam is not None:
            return math.inf if lam == 0.0 else max(1.0, abs(lam)) / min(1.0, abs(lam))
        with np.errstate(divide="ignore", invalid="ignore"):
            c = float(np.linalg.cond(self._values))
        return c if math.isfinite(c) else math.inf

    def inverse(self) -> np.ndarray:
        """Inverse of P as a new array.

        Closed forms: lambda paper Property 1, ``P^-1 = (1/λ)(I - J/r) + J/r``, for the
        ``λ I + (1 - λ) J / r`` family; the FFT diagonalisation for circulant matrices
        (bistochastic paper eq. (6)); otherwise an LU solve of ``P X = I``.

        Raises
        ------
        EstimationError
            If P is singular (or numerically singular).
        """
        return np.array(self._inverse)

    @cached_property
    def _inverse(self) -> np.ndarray:
        r = self.size
        lam = self.lam
        if lam is not None:
            if abs(lam) < SINGULAR_TOLERANCE:
                raise EstimationError(
                    f"randomization matrix is singular (lambda = {lam:.3g}: every row is the same"
                    " distribution); it has no inverse, use a matrix with lambda != 0"
                )
            jr = np.full((r, r), 1.0 / r)
            inverse: np.ndarray = (np.eye(r) - jr) / lam + jr
            return inverse
        if self._circulant:
            return _circulant_inverse(self._values[0])
        return dense_solve(self._values, np.eye(r), what="randomization matrix")

    @cached_property
    def _circulant(self) -> bool:
        v = self._values
        r = self.size
        idx = (np.arange(r)[None, :] - np.arange(r)[:, None]) % r
        return r > 2 and bool(np.array_equal(v, v[0][idx]))


def _validated(arr: np.ndarray, atol: float, orientation: str) -> np.ndarray:
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 1:
        raise ConfigurationError(
            f"a randomization matrix must be a non-empty 2-D square array, got shape {arr.shape}"
        )
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        i, j = bad[0]
        raise ConfigurationError(
            f"randomization matrix entries must be finite, got {arr[i, j]} at [{i}, {j}]"
        )
    neg = np.argwhere(arr < 0)
    if neg.size:
        i, j = neg[0]
        raise ConfigurationError(
            f"randomization matrix entries must be >= 0, got {arr[i, j]} at [{i}, {j}]"
        )
    axis = 1 if orientation == "rows" else 0
    sums = arr.sum(axis=axis)
    off = np.flatnonzero(np.abs(sums - 1.0) > atol)
    if off.size:
        k = off[0]
        line = "row" if orientation == "rows" else "column"
        raise ConfigurationError(
            f"every {line} of a randomization matrix must sum to 1 (within atol={atol:g}),"
            f" {line} {k} sums to {float(sums[k])!r}"
        )
    return arr


def column_epsilon(values: np.ndarray) -> float:
    """Main paper eq. (4) on a row-stochastic matrix: ``ln max_v max_u P[u,v] / min_u P[u,v]``."""
    cmax = values.max(axis=0)
    cmin = values.min(axis=0)
    used = cmax > 0
    if np.any(cmin[used] == 0.0):
        return math.inf
    if not np.any(used):  # pragma: no cover - impossible for a stochastic matrix
        return 0.0
    return float(np.max(np.log(cmax[used]) - np.log(cmin[used])))


def row_entropies(values: np.ndarray) -> np.ndarray:
    """Shannon entropy in bits of every row (``0 log 0 = 0``); bistochastic paper eq. (4)."""
    safe = np.where(values > 0, values, 1.0)
    entropies: np.ndarray = -np.sum(values * np.log2(safe), axis=1)
    return entropies


def _uniform_form_lambda(values: np.ndarray) -> float | None:
    """λ if ``values == λ I + (1 - λ) J / r`` up to 1e-12, else None."""
    r = values.shape[0]
    d = np.diagonal(values)
    if r == 1:
        return 1.0
    off_mask = ~np.eye(r, dtype=bool)
    off = values[off_mask]
    if np.ptp(d) > 1e-12 or np.ptp(off) > 1e-12:
        return None
    return float(d[0] - off[0])


def _circulant_inverse(first_row: np.ndarray) -> np.ndarray:
    """Inverse of the circulant matrix ``C[i, j] = c[(j - i) mod r]`` by the FFT."""
    r = first_row.shape[0]
    col = first_row[(-np.arange(r)) % r]  # first column C[k, 0] = c[-k mod r]
    eig = np.fft.fft(col)
    mags = np.abs(eig)
    if mags.min() < SINGULAR_TOLERANCE * mags.max():
        raise EstimationError(
            "circulant randomization matrix is singular (an eigenvalue of its first row's DFT"
            f" is {mags.min():.3g}); it has no inverse"
        )
    inv_col = np.real(np.fft.ifft(1.0 / eig))
    idx = (np.arange(r)[:, None] - np.arange(r)[None, :]) % r  # D[i, j] = d_col[(i - j) mod r]
    inverse: np.ndarray = inv_col[idx]
    return inverse


def dense_solve(a: np.ndarray, b: np.ndarray, *, what: str) -> np.ndarray:
    """Solve ``a x = b`` by LU; EstimationError when ``a`` is (numerically) singular.

    A reciprocal condition number below machine epsilon (scipy's LinAlgWarning) counts as
    singular, so a singular matrix never yields a silent wrong number.
    """
    import scipy.linalg  # here, not at import time: party workers build matrices but never solve

    with warnings.catch_warnings():
        warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
        try:
            return scipy.linalg.solve(a, b, check_finite=False)
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError, scipy.linalg.LinAlgWarning) as exc:
            raise EstimationError(f"{what} is singular and cannot be inverted ({exc})") from exc
