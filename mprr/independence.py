"""Tests of independence of two attributes from locally randomized reports, and an effect size.

Two situations, two tests (issue: dependence discovery that ignores the noise of RR):

- **Product channels.**  When each attribute is randomized by its own matrix (RR-Independent,
  main paper Protocol 1; the Kronecker channel ``P_i ⊗ P_j`` of the RR-Ind-Joint paper), the
  released pair is ``(Y_i, Y_j)`` with ``Y_i`` depending on ``X_i`` only; if ``X_i ⊥ X_j`` then
  ``Y_i ⊥ Y_j``.  Pearson's χ² test on the table of *released* pairs (:func:`pearson_chi2`)
  therefore has its nominal size, with no debiasing at all.
- **Any channel with a known matrix on the pair's joint domain** (e.g. GRR on the
  ``d_i · d_j`` joint values, main paper 4.3, where ``Y_i`` and ``Y_j`` are dependent even when
  ``X_i ⊥ X_j``), and frequency oracles that count *supports* (OUE, OLH; Wang, Blocki, Li, Jha,
  "Locally Differentially Private Protocols for Frequency Estimation", USENIX Security 2017):
  a Wald test (:func:`wald_independence`) on the debiased estimate π̂ and its covariance.
  :func:`matrix_estimate` and :func:`support_estimate` build the (estimate, covariance) pair.

:func:`dependence_effect` gives a bias-corrected Cramér's V of the debiased table with its
standard error, for reports (the plug-in V of a noisy estimate is biased upwards: noise looks
like dependence).

All covariances here include the multinomial sampling of the respondents (the population, not
the observed data set, is tested): Nayak's eq. (3.2) ("A concise theory of randomized
response"), as :func:`mprr.estimation.covariance`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from mprr.domain import MAX_MATRIX_CELLS, check_cells, check_real, check_unit, real_array
from mprr.errors import ConfigurationError, EstimationError
from mprr.estimation import invert, project_simplex
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import RandomizationMatrix

__all__ = [
    "IndependenceTest",
    "PairEstimate",
    "DependenceEffect",
    "pearson_chi2",
    "matrix_estimate",
    "support_estimate",
    "wald_independence",
    "dependence_effect",
]


@dataclass(frozen=True)
class IndependenceTest:
    """Outcome of a test of independence of two attributes.

    Attributes
    ----------
    statistic
        The χ² statistic.
    df
        Degrees of freedom of its null distribution χ²(df).
    p_value
        ``Pr(χ²(df) >= statistic)``; 1 when ``df == 0``.
    method
        ``"pearson-chi2"`` or ``"wald"``.
    """

    statistic: float
    df: int
    p_value: float
    method: str

    def rejects(self, alpha: float) -> bool:
        """Whether independence is rejected at level ``alpha`` (``p_value < alpha``)."""
        return self.p_value < check_unit("alpha", alpha, low_open=True, high_open=True)


@dataclass(frozen=True)
class PairEstimate:
    """A debiased estimate of a pair's joint distribution with its covariance.

    Attributes
    ----------
    estimate
        ``(d_i, d_j)`` estimate π̂ (may have negative cells).
    covariance
        ``(d_i d_j, d_i d_j)`` covariance of π̂ flattened in C order, evaluated at π̂ (the
        plug-in; for standard errors and :func:`dependence_effect`).
    null_covariance
        The same covariance evaluated at the independence fit ``π̃ = π̂_i ⊗ π̂_j`` of π̂ (its
        marginals projected onto the simplex): the covariance under the null hypothesis, for
        :func:`wald_independence`.  The marginals are estimated far more precisely than the
        cells, so this is a much less noisy estimate of the covariance under independence
        than the plug-in.  **Use it for the test**: with few reports per cell the plug-in
        makes the test reject almost always under independence, this one errs on the
        conservative side (GRR on 16 x 15 joint values, 400 data sets, nominal 0.05:
        ε = 2, n = 1,200: size 0.015 with it, 0.875 with the plug-in; ε = 8, n = 1,200: 0.06
        and 1.0; n = 5,000: 0.0025-0.06 and 0.06-0.57; 9 x 16 values, ε = 4, n = 5,000: 0.07
        and 0.16).
    n
        Number of reports it was computed from.
    """

    estimate: np.ndarray
    covariance: np.ndarray
    null_covariance: np.ndarray
    n: int

    def wald(self, *, rcond: float = 1e-10) -> IndependenceTest:
        """:func:`wald_independence` with the covariance under independence."""
        return wald_independence(self.estimate, self.null_covariance, rcond=rcond)

    def effect(self) -> DependenceEffect:
        """:func:`dependence_effect` with the plug-in covariance."""
        return dependence_effect(self.estimate, self.covariance)


@dataclass(frozen=True)
class DependenceEffect:
    """Bias-corrected Cramér's V of a debiased pair estimate (:func:`dependence_effect`).

    Attributes
    ----------
    cramers_v
        ``sqrt(max(phi2, 0) / k)``, ``k = min(r, c) - 1``.
    cramers_v_se
        Standard error of ``cramers_v``: half the width of the image of ``phi2 ± phi2_se``
        (clipped at 0) under ``sqrt(·/k)``; the delta-method SE when V is large against it.
    phi2
        Bias-corrected mean square contingency φ² (may be negative: noise only).
    phi2_se
        Standard error of the plug-in φ² (second-order delta method).
    bias
        The bias removed from the plug-in φ² (``tr(W Σ_h)``, see :func:`dependence_effect`).
    """

    cramers_v: float
    cramers_v_se: float
    phi2: float
    phi2_se: float
    bias: float


# --------------------------------------------------------------------------------------------
# product channels: Pearson's χ² on the released pairs
# --------------------------------------------------------------------------------------------


def _count_table(name: str, counts: ArrayLike) -> np.ndarray:
    arr = real_array(name, counts, finite=True)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ConfigurationError(f"{name} must be a non-empty 2-D table, got shape {arr.shape}")
    if np.any(arr < 0):
        raise ConfigurationError(f"{name} must be counts >= 0, got {float(arr.min())!r}")
    if float(arr.sum()) <= 0.0:
        raise ConfigurationError(f"{name} must have a positive total, got {float(arr.sum())!r}")
    return arr


def _chi2_sf(statistic: float, df: int) -> float:
    if df == 0:
        return 1.0
    import scipy.stats  # here, not at import time: scipy.stats takes seconds to import

    return float(scipy.stats.chi2.sf(statistic, df))


def pearson_chi2(counts: ArrayLike) -> IndependenceTest:
    """Pearson's χ² test of independence on the table of released pairs (product channels).

    ``χ² = Σ_ab (O_ab − E_ab)² / E_ab`` with ``E_ab = O_a· O_·b / n``, df ``(r − 1)(c − 1)``
    over the rows and columns that occur.  With each attribute randomized by its own matrix,
    ``X_i ⊥ X_j`` implies ``Y_i ⊥ Y_j``, so this test of the released table has its nominal
    size for the independence of the true attributes (its power is that of the attenuated
    dependence of the released pair).  Do **not** use it for a channel on the joint domain
    (GRR on pairs): there the released attributes are dependent under independence; use
    :func:`wald_independence`.

    Parameters
    ----------
    counts
        ``(d_i, d_j)`` counts of the released pairs.

    Returns
    -------
    IndependenceTest
        ``method="pearson-chi2"``; df 0 and p-value 1 when fewer than two rows or columns occur.
    """
    o = _count_table("counts", counts)
    o = o[o.sum(axis=1) > 0][:, o.sum(axis=0) > 0]
    n = float(o.sum())
    expected = np.outer(o.sum(axis=1), o.sum(axis=0)) / n
    statistic = float(np.sum((o - expected) ** 2 / expected))
    df = (o.shape[0] - 1) * (o.shape[1] - 1)
    return IndependenceTest(statistic=statistic if df else 0.0, df=df, p_value=_chi2_sf(statistic, df),
                            method="pearson-chi2")


# --------------------------------------------------------------------------------------------
# estimates and covariances
# --------------------------------------------------------------------------------------------


def _pair_shape(shape: Any, size: int) -> tuple[int, int]:
    try:
        di, dj = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise ConfigurationError(f"shape must be a pair (d_i, d_j), got {shape!r}") from None
    if di < 1 or dj < 1 or di * dj != size:
        raise ConfigurationError(f"shape must be (d_i, d_j) with d_i * d_j = {size}, got {shape!r}")
    return di, dj


def matrix_estimate(
    P: RandomizationMatrix | KroneckerMatrix, counts: ArrayLike, shape: tuple[int, int] | None = None
) -> PairEstimate:
    """Eq. (2) estimate of a pair's joint distribution and its covariance, any known matrix.

    ``π̂ = (Pᵀ)⁻¹ λ̂`` (main paper eq. (2)) with ``λ̂ = counts / n``, and
    ``Cov(π̂) = Q⁻¹ (D_λ̂ − λ̂ λ̂ᵀ) Q⁻¹ᵀ / n`` with ``Q = Pᵀ``: the multinomial covariance of
    λ̂ mapped through the inverse, i.e. Nayak's eq. (3.2) at ``π = π̂`` (sampling plus
    randomization variance; it needs no non-negative π̂, unlike :func:`mprr.estimation.covariance`).

    Parameters
    ----------
    P
        Matrix of the release of the pair's joint value (C order, first attribute slowest):
        a :class:`~mprr.matrices.RandomizationMatrix` over ``d_i d_j`` values (e.g.
        ``grr(d_i * d_j, ε)``) or a :class:`~mprr.kronecker.KroneckerMatrix` (e.g.
        ``kron(P_i, P_j)``).
    counts
        Counts of the released values, shape ``(d_i, d_j)`` or ``(d_i d_j,)``.
    shape
        ``(d_i, d_j)``; by default the shape of a 2-D ``counts``, else the sizes of a
        two-factor Kronecker ``P``.

    Raises
    ------
    ConfigurationError
        Counts that are negative, not a pair table of P's size, or a total below 1.
    EstimationError
        P singular.
    """
    if not isinstance(P, (RandomizationMatrix, KroneckerMatrix)):
        raise ConfigurationError(f"P must be a RandomizationMatrix or KroneckerMatrix, got {type(P).__name__}")
    c = real_array("counts", counts, finite=True)
    if shape is None:
        if c.ndim == 2:
            shape = (c.shape[0], c.shape[1])
        elif isinstance(P, KroneckerMatrix) and len(P.sizes) == 2:
            shape = (P.sizes[0], P.sizes[1])
        else:
            raise ConfigurationError("shape (d_i, d_j) is needed for flat counts and a dense P")
    di, dj = _pair_shape(shape, P.size)
    if c.size != P.size:
        raise ConfigurationError(f"counts must have {P.size} cells (one per value of P), got shape {c.shape}")
    flat = c.ravel()
    if np.any(flat < 0):
        raise ConfigurationError(f"counts must be >= 0, got {float(flat.min())!r}")
    n = float(flat.sum())
    if n < 1.0:
        raise ConfigurationError(f"counts must total at least 1 report, got {n!r}")
    lam = flat / n
    pi = invert(P, lam.reshape(P.sizes) if isinstance(P, KroneckerMatrix) else lam).ravel()
    check_cells(P.size * P.size, MAX_MATRIX_CELLS, f"the covariance over {P.size} joint values",
                name="MAX_MATRIX_CELLS")
    inverse_form = _inverse_form(P)

    def at(p_flat: np.ndarray, l_flat: np.ndarray) -> np.ndarray:
        cov: np.ndarray = (inverse_form(l_flat) - np.outer(p_flat, p_flat)) / n
        symmetric: np.ndarray = (cov + cov.T) / 2.0
        return symmetric

    null = _independence_fit(pi.reshape(di, dj)).ravel()
    null_lam = (P.apply_transpose(null.reshape(P.sizes)) if isinstance(P, KroneckerMatrix) else P.values.T @ null).ravel()
    return PairEstimate(estimate=pi.reshape(di, dj), covariance=at(pi, lam), null_covariance=at(null, null_lam),
                        n=int(round(n)))


def _inverse_form(P: RandomizationMatrix | KroneckerMatrix) -> Callable[[np.ndarray], np.ndarray]:
    """``λ ↦ Q⁻¹ D_λ Q⁻¹ᵀ = P⁻ᵀ D_λ P⁻¹`` over the flat joint domain.

    Closed forms avoid dense matrix products: for ``P = λI + (1 − λ)J/r`` (lambda paper
    Property 1: ``P⁻¹ = aI + bJ``, ``a = 1/λ``, ``b = (1 − a)/r``) it is
    ``a² D_λ + ab(λ1ᵀ + 1λᵀ) + b²(Σλ)11ᵀ``; for ``A ⊗ B`` (inverse ``A⁻¹ ⊗ B⁻¹``, Property 2)
    it is one contraction per factor.
    """
    if isinstance(P, KroneckerMatrix) and len(P.factors) == 2:
        ia, ib = P.inverse_factors()
        da, db = P.sizes

        def kron_form(lam: np.ndarray) -> np.ndarray:
            t = np.einsum("uv,ux,uy->vxy", lam.reshape(da, db), ia, ia)
            m: np.ndarray = np.einsum("vxy,vw,vz->xwyz", t, ib, ib).reshape(P.size, P.size)
            return m

        return kron_form
    if isinstance(P, RandomizationMatrix) and P.lam is not None and P.lam != 0.0:
        a = 1.0 / P.lam
        b = (1.0 - a) / P.size

        def uniform_form(lam: np.ndarray) -> np.ndarray:
            m: np.ndarray = a * b * (lam[:, None] + lam[None, :]) + b * b * float(lam.sum())
            m[np.diag_indices_from(m)] += a * a * lam
            return m

        return uniform_form
    if isinstance(P, KroneckerMatrix):
        inv = np.ones((1, 1))
        for f in P.inverse_factors():
            inv = np.kron(inv, f)
    else:
        inv = P.inverse()

    def dense_form(lam: np.ndarray) -> np.ndarray:
        m: np.ndarray = (inv.T * lam) @ inv
        return m

    return dense_form


def _independence_fit(pi: np.ndarray) -> np.ndarray:
    """``π̂_i ⊗ π̂_j`` with both marginals of π̂ projected onto the probability simplex."""
    total = float(pi.sum())
    fit: np.ndarray = np.outer(project_simplex(pi.sum(axis=1) / total), project_simplex(pi.sum(axis=0) / total))
    return fit


def support_estimate(support: ArrayLike, n: int, p: float, q: float) -> PairEstimate:
    """Estimate and covariance of a pair's joint distribution from a support-counting oracle.

    For pure LDP frequency oracles (Wang et al., USENIX Security 2017, Section 3) each report
    *supports* a set of values; ``p = Pr(report supports v | X = v)`` and
    ``q = Pr(report supports v | X = u)``, ``u ≠ v`` (OUE: ``p = 1/2``, ``q = 1/(e^ε + 1)``;
    OLH: ``p = e^ε/(e^ε + g − 1)``, ``q = 1/g``).  With ``λ̂_v = support_v / n``, the estimate
    is ``π̂_v = (λ̂_v − q) / (p − q)`` (their eq. (1)) and, over the population (X drawn from π,
    so sampling is included, unlike their conditional variance formula)::

        Var(π̂_v) = λ_v (1 − λ_v) / (n (p − q)²),   Cov(π̂_u, π̂_v) = −π_u π_v / n  (u ≠ v)

    (OUE: bits independent given X; OLH: pairwise-independent hashing, and three-wise for the
    covariance), evaluated at λ̂, π̂.

    Parameters
    ----------
    support
        ``(d_i, d_j)`` number of reports supporting each joint value.
    n
        Number of reports, >= 1.
    p, q
        Support probabilities, ``0 <= q < p <= 1``.
    """
    s = real_array("support", support, finite=True)
    if s.ndim != 2 or s.size < 1:
        raise ConfigurationError(f"support must be a (d_i, d_j) table, got shape {s.shape}")
    n_f = check_real("n", n, minimum=1.0)
    if not float(n_f).is_integer():
        raise ConfigurationError(f"n must be an integer number of reports >= 1, got {n!r}")
    pp = check_unit("p", p)
    qq = check_unit("q", q)
    if not qq < pp:
        raise ConfigurationError(f"p must be > q (the report must favour the true value), got p={pp}, q={qq}")
    if np.any(s < 0) or np.any(s > n_f):
        raise ConfigurationError(f"support counts must lie in [0, n={int(n_f)}], got {float(s.min())!r}..{float(s.max())!r}")
    lam = s.ravel() / n_f
    pi = (lam - qq) / (pp - qq)

    def at(p_flat: np.ndarray, l_flat: np.ndarray) -> np.ndarray:
        cov = -np.outer(p_flat, p_flat)
        np.fill_diagonal(cov, l_flat * (1.0 - l_flat) / (pp - qq) ** 2)
        scaled: np.ndarray = cov / n_f
        return scaled

    null = _independence_fit(pi.reshape(s.shape)).ravel()
    return PairEstimate(estimate=pi.reshape(s.shape), covariance=at(pi, lam),
                        null_covariance=at(null, qq + (pp - qq) * null), n=int(n_f))


# --------------------------------------------------------------------------------------------
# Wald test
# --------------------------------------------------------------------------------------------


def _check_pair(estimate: ArrayLike, covariance: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    pi = real_array("estimate", estimate, finite=True)
    if pi.ndim != 2 or pi.shape[0] < 1 or pi.shape[1] < 1:
        raise ConfigurationError(f"estimate must be a (d_i, d_j) table, got shape {pi.shape}")
    cov = real_array("covariance", covariance, finite=True)
    d = pi.size
    if cov.shape != (d, d):
        raise ConfigurationError(f"covariance must have shape ({d}, {d}) for an estimate of shape {pi.shape}, got {cov.shape}")
    asym = float(np.max(np.abs(cov - cov.T))) if d else 0.0
    if asym > 1e-9 * max(1.0, float(np.max(np.abs(cov)))):
        raise ConfigurationError(f"covariance must be symmetric, got max asymmetry {asym!r}")
    if float(pi.sum()) <= 0.0:
        raise ConfigurationError(f"estimate must have a positive total, got {float(pi.sum())!r}")
    return pi, (cov + cov.T) / 2.0


def _contrasts(pi: np.ndarray) -> np.ndarray:
    """Interaction contrasts ``h_ab = S π_ab − π_a· π_·b`` (S = Σ π) of every cell, flattened."""
    h: np.ndarray = float(pi.sum()) * pi - np.outer(pi.sum(axis=1), pi.sum(axis=0))
    return h.ravel()


def _jacobian_apply(pi: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``J m`` for the Jacobian J of the contrasts at π (rows and columns of ``m`` over cells).

    ``∂h_ab/∂π_ce = S [ab = ce] + π_ab − [c = a] π_·b − [e = b] π_a·``, so ``J m`` is a few
    sums of the rows of ``m`` (no dense J, no matrix product)::

        (J m)_ab = S m_ab + π_ab Σ_ce m_ce − π_·b Σ_e m_ae − π_a· Σ_c m_cb
    """
    di, dj = pi.shape
    t = m.reshape(di, dj, -1)
    row = pi.sum(axis=1)
    col = pi.sum(axis=0)
    out = (float(pi.sum()) * t + pi[:, :, None] * t.sum(axis=(0, 1))[None, None, :]
           - col[None, :, None] * t.sum(axis=1)[:, None, :] - row[:, None, None] * t.sum(axis=0)[None, :, :])
    flat: np.ndarray = out.reshape(di * dj, -1)
    return flat


def _sandwich(pi: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``J Σ Jᵀ``: the delta-method covariance of the contrasts of every cell."""
    left = _jacobian_apply(pi, cov)
    both: np.ndarray = _jacobian_apply(pi, left.T.copy()).T
    symmetric: np.ndarray = (both + both.T) / 2.0
    return symmetric


def wald_independence(estimate: ArrayLike, covariance: ArrayLike, *, rcond: float = 1e-10) -> IndependenceTest:
    """Wald test of independence on a debiased pair estimate and its covariance.

    The interaction contrasts ``g_ab(π) = S π_ab − π_a· π_·b`` (``S = Σ π``, 1 for eq. (2)
    estimates), ``a < d_i − 1``, ``b < d_j − 1``, vanish exactly under independence.  Their
    covariance by the delta method is ``Σ_g = J Σ Jᵀ`` (J the Jacobian of g at π̂, Σ the
    covariance of π̂), and ``W = gᵀ Σ_g⁻¹ g`` is asymptotically χ²((d_i − 1)(d_j − 1)) under
    independence (Wald 1943; e.g. Agresti, "Categorical Data Analysis", 16.1).

    Pass the covariance under independence (``null_covariance``): the plug-in covariance at
    π̂ makes the test grossly oversized when the cells have few reports (see
    :class:`PairEstimate`).

    Size (400 simulated data sets of independent Zipf attributes, nominal 0.05): 2 x 3 values,
    GRR on the 6 joint values or per-attribute GRR, ε = 1 and 4, n = 5,000: 0.04–0.065;
    9 x 16 values, ε = 4, n = 20,000: 0.06–0.07.  With GRR on 144 joint values at ε = 1 the
    estimate is mostly noise and the test is conservative until n is very large (size 0.01 at
    n = 20,000, 0.0175 at 100,000, 0.05 at 1,000,000): the noise of the estimated marginals
    inflates the delta-method covariance.

    Parameters
    ----------
    estimate
        ``(d_i, d_j)`` estimate π̂ (eq. (2) or a support oracle; negative cells allowed).
    covariance
        Covariance of π̂ flattened in C order, ``(d_i d_j, d_i d_j)``; preferably the
        covariance under independence (``PairEstimate.null_covariance`` of
        :func:`matrix_estimate`, :func:`support_estimate`), else the plug-in.
    rcond
        Eigenvalues of Σ_g below ``rcond`` times the largest are treated as 0: Σ_g⁻¹ is then
        the Moore–Penrose pseudo-inverse and df the number of eigenvalues kept (Σ_g is
        singular when an estimated marginal cell is 0, e.g. a category nobody reported).
        A well-conditioned Σ_g (Cholesky pivots above ``100 · rcond``) is solved by Cholesky
        instead, the same number at a fraction of the cost.

    Returns
    -------
    IndependenceTest
        ``method="wald"``.

    Raises
    ------
    EstimationError
        Σ_g is zero (no information in the estimate).
    """
    pi, cov = _check_pair(estimate, covariance)
    rc = check_real("rcond", rcond, strict=True)
    di, dj = pi.shape
    if di < 2 or dj < 2:
        return IndependenceTest(statistic=0.0, df=0, p_value=1.0, method="wald")
    keep = (np.arange(di)[:, None] < di - 1) & (np.arange(dj)[None, :] < dj - 1)
    idx = np.flatnonzero(keep.ravel())
    sigma = _sandwich(pi, cov)[np.ix_(idx, idx)]
    statistic, df = _quadratic_form(sigma, _contrasts(pi)[idx], rc)
    return IndependenceTest(statistic=statistic, df=df, p_value=_chi2_sf(statistic, df), method="wald")


def _quadratic_form(sigma: np.ndarray, g: np.ndarray, rcond: float) -> tuple[float, int]:
    """``gᵀ Σ⁺ g`` and the rank of Σ: by Cholesky when Σ is well conditioned (the usual case),
    else by the eigendecomposition with eigenvalues below ``rcond`` times the largest dropped."""
    top = float(np.max(np.diag(sigma))) if sigma.size else 0.0
    if not top > 0.0:
        raise EstimationError("the covariance of the interaction contrasts is zero; the estimate carries no information")
    try:
        chol = np.linalg.cholesky(sigma)
    except np.linalg.LinAlgError:
        chol = None
    if chol is not None:
        d = np.abs(np.diag(chol))
        if float(d.min()) ** 2 > 100.0 * rcond * float(d.max()) ** 2:
            import scipy.linalg  # here, not at import time (see _chi2_sf)

            z = scipy.linalg.solve_triangular(chol, g, lower=True, check_finite=False)
            return float(z @ z), int(g.size)
    w, v = np.linalg.eigh(sigma)
    kept = w > rcond * float(w.max())
    z = v[:, kept].T @ g
    return float(np.sum(z * z / w[kept])), int(np.count_nonzero(kept))


# --------------------------------------------------------------------------------------------
# effect size
# --------------------------------------------------------------------------------------------


def dependence_effect(estimate: ArrayLike, covariance: ArrayLike) -> DependenceEffect:
    """Bias-corrected Cramér's V of a debiased pair estimate, with its standard error.

    The plug-in mean square contingency of the estimate is the quadratic form
    ``φ̂² = ĥᵀ W ĥ`` of the contrasts ``h_ab = π_ab − π_a π_b`` (all cells, S = 1) with
    ``W = diag(1 / (π_a π_b))`` (main paper eq. (9): ``V = sqrt(φ² / k)``,
    ``k = min(r, c) − 1``).  Treating W as fixed and ĥ as Gaussian with mean h and
    covariance ``Σ_h = J Σ Jᵀ`` (delta method), ``E[φ̂²] = φ² + tr(W Σ_h)`` and
    ``Var(φ̂²) = 2 tr((W Σ_h)²) + 4 hᵀ W Σ_h W h``.  So

    - ``phi2 = φ̂² − tr(W Σ_h)`` (for multinomial data without randomization the bias is
      ``(r − 1)(c − 1)/n``, the correction of Bergsma, "A bias-correction for Cramér's V and
      Tschuprow's T", J. Korean Stat. Soc. 2013);
    - ``phi2_se² = 2 tr((W Σ_h)²) + 4 max(ĥᵀ W Σ_h W ĥ − tr((W Σ_h)²), 0)`` (the plug-in of
      ``hᵀ W Σ_h W h`` with its own bias removed; second-order, so it does not vanish at
      independence as the first-order delta method does).  The clip at 0 keeps the SE at least
      its value under independence and makes it conservative there (measured: 19 % above the
      spread of φ̂² for 3 x 4 values, 3 % for 9 x 16; within 5 % under dependence).

    Categories whose estimated marginal is <= 0 are left out (W is undefined there); r and c
    count the categories kept.  The marginals in W are estimates too; their variation is
    ignored (it is of lower order when the noise is small against the marginals).

    Parameters
    ----------
    estimate, covariance
        As :func:`wald_independence`.
    """
    raw, raw_cov = _check_pair(estimate, covariance)
    total = float(raw.sum())
    pi = raw / total
    cov = raw_cov / total**2
    rows = pi.sum(axis=1) > 0.0
    cols = pi.sum(axis=0) > 0.0
    k = min(int(rows.sum()), int(cols.sum())) - 1
    if k < 1:
        return DependenceEffect(cramers_v=0.0, cramers_v_se=0.0, phi2=0.0, phi2_se=0.0, bias=0.0)
    keep = np.flatnonzero((rows[:, None] & cols[None, :]).ravel())
    weights = 1.0 / np.outer(pi.sum(axis=1), pi.sum(axis=0)).ravel()[keep]
    h = _contrasts(pi)[keep]
    sigma_h = _sandwich(pi, cov)[np.ix_(keep, keep)]
    ws = weights[:, None] * sigma_h  # W Σ_h
    bias = float(np.trace(ws))
    tr2 = float(np.sum(ws * ws.T))  # tr((W Σ_h)²)
    plug = float(h @ (weights * h))
    wh = weights * h
    quad = float(wh @ sigma_h @ wh)
    phi2 = plug - bias
    phi2_se = math.sqrt(max(2.0 * tr2 + 4.0 * max(quad - tr2, 0.0), 0.0))
    v = math.sqrt(max(phi2, 0.0) / k)
    hi = math.sqrt(max(phi2 + phi2_se, 0.0) / k)
    lo = math.sqrt(max(phi2 - phi2_se, 0.0) / k)
    return DependenceEffect(cramers_v=min(v, 1.0), cramers_v_se=(hi - lo) / 2.0, phi2=phi2, phi2_se=phi2_se,
                            bias=bias)
