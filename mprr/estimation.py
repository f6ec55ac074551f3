"""Estimating the true distribution from randomized releases.

- :func:`invert` — the unbiased estimator of main paper eq. (2), ``pi_hat = inv(P.T) lambda_hat``
  (dense LU solve, closed forms, or mode products for Kronecker-structured matrices);
- post-processing to a proper distribution: :func:`clip_rescale` (main paper 6.4),
  :func:`project_simplex` (the exact Euclidean projection 6.4 describes) and :func:`ibu`
  (iterative Bayesian update / EM of Agrawal & Aggarwal, the method of the main paper's [2]);
- :func:`covariance` — Nayak's eq. (3.2) for the variance of ``pi_hat`` (or its randomization
  term alone: the variance given the records);
- :func:`marginal_variance` — the variance of every cell of a marginal of ``pi_hat`` (a linear
  map of it), without the full covariance matrix;
- :func:`error_bounds` — the confidence bounds of main paper eq. (5) and (6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from mprr.errors import ConfigurationError, EstimationError
from mprr.domain import MAX_MATRIX_CELLS, check_cells, check_int, check_real, check_unit, real_array
from mprr.kronecker import KroneckerMatrix, mode_products
from mprr.randomization_matrix import RandomizationMatrix, dense_solve

__all__ = [
    "POSTPROCESSORS",
    "IBUResult",
    "invert",
    "clip_rescale",
    "project_simplex",
    "ibu",
    "postprocess",
    "covariance",
    "marginal_variance",
    "error_bounds",
]

#: Names accepted by :func:`postprocess`.
POSTPROCESSORS: frozenset[str] = frozenset({"none", "clip-rescale", "project-simplex", "ibu"})

Matrix = RandomizationMatrix | KroneckerMatrix


# --------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------


def _check_matrix(P: Any) -> Matrix:
    if not isinstance(P, (RandomizationMatrix, KroneckerMatrix)):
        raise ConfigurationError(
            f"P must be a RandomizationMatrix or KroneckerMatrix, got {type(P).__name__}"
        )
    return P


def _allowed_shapes(P: Matrix) -> tuple[tuple[int, ...], ...]:
    if isinstance(P, KroneckerMatrix):
        return (P.sizes, (P.size,))
    return ((P.size,),)


def _frequencies(P: Matrix, observed: ArrayLike, name: str = "observed") -> np.ndarray:
    """Validated observed counts/frequencies, normalised to sum 1, in their given shape."""
    obs = real_array(name, observed, finite=True)
    shapes = _allowed_shapes(P)
    if obs.shape not in shapes:
        allowed = " or ".join(str(s) for s in shapes)
        raise ConfigurationError(f"{name} must have shape {allowed} to match P, got {obs.shape}")
    if np.any(obs < 0):
        raise ConfigurationError(f"{name} counts must be >= 0, got {float(obs.min())!r}")
    total = float(obs.sum())
    if total <= 0.0:
        raise ConfigurationError(f"{name} must have a positive total, got {total!r}")
    return obs / total


def _as_domain_tensor(P: Matrix, x: np.ndarray) -> np.ndarray:
    return x.reshape(P.sizes) if isinstance(P, KroneckerMatrix) else x


def _apply_t(P: Matrix, x: np.ndarray) -> np.ndarray:
    """``P.T @ x`` on a tensor of the domain shape (mode products for Kronecker)."""
    product: np.ndarray = P.apply_transpose(x) if isinstance(P, KroneckerMatrix) else P.values.T @ x
    return product


def _apply(P: Matrix, x: np.ndarray) -> np.ndarray:
    """``P @ x`` on a tensor of the domain shape."""
    product: np.ndarray = P.apply(x) if isinstance(P, KroneckerMatrix) else P.values @ x
    return product


# --------------------------------------------------------------------------------------------
# eq. (2)
# --------------------------------------------------------------------------------------------


def invert(P: RandomizationMatrix | KroneckerMatrix, observed: ArrayLike) -> np.ndarray:
    """Unbiased estimate ``pi_hat = inv(P.T) lambda_hat`` (main paper eq. (2)).

    Parameters
    ----------
    P
        A :class:`RandomizationMatrix` of size r, or a :class:`KroneckerMatrix`.
    observed
        Counts or frequencies of the released values (normalised to frequencies): shape
        ``(r,)`` for a dense P; for a Kronecker P a tensor of shape ``P.sizes`` (one axis per
        factor, C order) or the flat ``(P.size,)`` vector.

    Returns
    -------
    numpy.ndarray
        The estimate, same shape as ``observed``; sums to 1, may have negative entries.

    Notes
    -----
    Dense P: the closed form when P has one (lambda paper Property 1, circulant FFT), else an
    LU solve of ``P.T x = lambda_hat`` (no explicit inverse).  Kronecker P: mode products with
    ``inv(P_i).T`` on every axis (lambda paper Property 2), O(N Σ r_i) for N cells.

    Raises
    ------
    ConfigurationError
        Wrong shape, negative or non-finite counts, zero total.
    EstimationError
        P (or one of its factors) is singular.
    """
    P = _check_matrix(P)
    lam = _frequencies(P, observed)
    if isinstance(P, KroneckerMatrix):
        factors_t = [inv.T for inv in P.inverse_factors()]
        return mode_products(lam.reshape(P.sizes), factors_t).reshape(lam.shape)
    if P.closed_form is not None:
        solved: np.ndarray = P.inverse().T @ lam
        return solved
    return dense_solve(P.values.T, lam, what="randomization matrix")


# --------------------------------------------------------------------------------------------
# post-processing (main paper 6.4)
# --------------------------------------------------------------------------------------------


def clip_rescale(pi_hat: ArrayLike) -> np.ndarray:
    """Main paper 6.4: replace negative values by 0 and rescale the rest to sum 1.

    This is what the paper used; it is *not* the Euclidean projection the paper says it is
    (see :func:`project_simplex`).  Works on vectors and tensors.

    Raises
    ------
    EstimationError
        If no entry is positive (nothing to rescale).
    """
    x = real_array("pi_hat", pi_hat, finite=True)
    clipped = np.maximum(x, 0.0)
    total = float(clipped.sum())
    if total <= 0.0:
        raise EstimationError("clip-rescale needs at least one positive entry in pi_hat, got none")
    rescaled: np.ndarray = clipped / total
    return rescaled


def project_simplex(pi_hat: ArrayLike) -> np.ndarray:
    """Exact Euclidean projection onto the probability simplex (sort-based, O(N log N)).

    ``argmin_w ||w - v||_2`` subject to ``w >= 0, Σ w = 1``; the solution is
    ``w = max(v - θ, 0)`` with θ from the sorted values (Held et al. 1974; Duchi et al. 2008,
    Fig. 1).  Tensors are projected as one flattened vector and returned in their shape.
    """
    v = real_array("pi_hat", pi_hat, finite=True)
    if v.size == 0:
        raise ConfigurationError("pi_hat must have at least one entry, got an empty array")
    flat = v.ravel()
    u = np.sort(flat)[::-1]
    css = np.cumsum(u)
    css -= 1.0
    ks = np.arange(1, u.size + 1, dtype=np.float64)
    positive = u * ks > css
    rho = int(np.flatnonzero(positive)[-1])
    theta = css[rho] / (rho + 1)
    projected: np.ndarray = np.maximum(v - theta, 0.0)
    return projected


@dataclass(frozen=True)
class IBUResult:
    """Result of :func:`ibu`: the estimate, the iterations run, whether ``tol`` was reached."""

    estimate: np.ndarray
    iterations: int
    converged: bool


def ibu(
    P: RandomizationMatrix | KroneckerMatrix,
    observed: ArrayLike,
    *,
    tol: float = 1e-10,
    max_iter: int = 10_000,
    initial: ArrayLike | None = None,
) -> IBUResult:
    """Iterative Bayesian update (EM) to a proper distribution (Agrawal & Aggarwal 2001).

    ``pi_{t+1}(u) = Σ_v lambda_hat(v) P[u, v] pi_t(u) / Σ_w P[w, v] pi_t(w)``, i.e.
    ``pi_{t+1} = pi_t * (P @ (lambda_hat / (P.T @ pi_t)))``, starting from the uniform
    distribution (or ``initial``), until the L1 change of an iteration is <= ``tol`` or
    ``max_iter`` iterations.  Every iterate is a distribution; the fixed points maximise the
    multinomial likelihood of the observed releases.  For a Kronecker P both products are
    mode products, so the full Adult domain is handled without the joint matrix.

    Parameters
    ----------
    P, observed
        As in :func:`invert`.
    tol
        Convergence threshold on ``||pi_{t+1} - pi_t||_1``, > 0.  This is a step criterion:
        EM converges linearly (sublinearly when the MLE is on the simplex boundary), so the
        distance to the fixed point can exceed ``tol`` (measured: ~1e-8 in L1 and ~1e-11 in
        mean log-likelihood for ``tol=1e-10`` on a 10-value GRR with ε = 0.3).
    max_iter
        Iteration cap, >= 1; hitting it returns ``converged=False`` (no exception).
    initial
        Optional strictly positive starting distribution (entries 0 stay 0 under EM).

    Raises
    ------
    ConfigurationError
        As :func:`invert` for ``observed``; bad ``tol``, ``max_iter`` or ``initial``.
    EstimationError
        If ``observed`` has mass on a value P never releases (an all-zero column of P).
    """
    P = _check_matrix(P)
    tol = check_real("tol", tol, strict=True)
    check_int("max_iter", max_iter, 1)
    lam = _frequencies(P, observed)
    shape = lam.shape
    lam = _as_domain_tensor(P, lam)
    _check_releasable(P, lam)
    if initial is None:
        pi = np.full(lam.shape, 1.0 / lam.size)
    else:
        pi = _as_domain_tensor(P, _frequencies(P, initial, name="initial"))
        if np.any(pi <= 0):
            raise ConfigurationError("initial must be strictly positive (EM keeps zeros at zero)")
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        pred = _apply_t(P, pi)
        ratio = np.divide(lam, pred, out=np.zeros_like(lam), where=pred > 0)
        new = pi * _apply(P, ratio)
        new /= new.sum()
        change = float(np.abs(new - pi).sum())
        pi = new
        if change <= tol:
            converged = True
            break
    return IBUResult(estimate=pi.reshape(shape), iterations=it, converged=converged)


def _check_releasable(P: Matrix, lam: np.ndarray) -> None:
    """EstimationError if ``lam`` has mass on a value that P releases with probability 0.

    A released value ``v`` whose column of P is all zero can never be observed; counts there
    contradict P.  EM would silently drop them (or divide 0 by 0 if nothing else is observed).
    """
    if isinstance(P, KroneckerMatrix):
        dead = [~np.any(f.values > 0, axis=0) for f in P.factors]
        if not any(d.any() for d in dead):
            return
        mask = np.zeros(P.sizes, dtype=bool)
        for axis, d in enumerate(dead):
            shape = [1] * len(dead)
            shape[axis] = d.size
            mask |= d.reshape(shape)
    else:
        mask = ~np.any(P.values > 0, axis=0)
    bad = mask & (lam > 0)
    if np.any(bad):
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise EstimationError(
            f"observed has mass {float(lam[bad].sum())!r} on released values that P never "
            f"produces (all-zero columns of P), first at index {where}; the data contradict P"
        )


def postprocess(
    pi_hat: ArrayLike,
    method: str,
    *,
    P: RandomizationMatrix | KroneckerMatrix | None = None,
    observed: ArrayLike | None = None,
) -> np.ndarray:
    """Turn an eq. (2) estimate into the output of one of :data:`POSTPROCESSORS`.

    ``"none"`` returns a copy of ``pi_hat``; ``"clip-rescale"`` :func:`clip_rescale`;
    ``"project-simplex"`` :func:`project_simplex`; ``"ibu"`` runs :func:`ibu` on ``P`` and
    ``observed`` (both required; the result has the shape of ``pi_hat``).
    """
    if method not in POSTPROCESSORS:
        raise ConfigurationError(
            f"method must be one of {sorted(POSTPROCESSORS)}, got {method!r}"
        )
    x = real_array("pi_hat", pi_hat, finite=True)
    simple: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "none": np.array,
        "clip-rescale": clip_rescale,
        "project-simplex": project_simplex,
    }
    if method in simple:
        return simple[method](x)
    if P is None or observed is None:
        raise ConfigurationError("method 'ibu' needs both P and observed, got None")
    est = ibu(P, observed).estimate
    if est.size != x.size:
        raise ConfigurationError(f"pi_hat has {x.size} entries but P has {est.size} values")
    return est.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# accuracy
# --------------------------------------------------------------------------------------------


def _distribution(P: Matrix, pi: ArrayLike) -> np.ndarray:
    """``pi`` checked to be a distribution over P's values (shape ``(r,)`` or ``P.sizes``)."""
    p = real_array("pi", pi, finite=True)
    if p.shape not in _allowed_shapes(P) and not (isinstance(P, RandomizationMatrix) and p.size == P.size):
        raise ConfigurationError(f"pi must have shape {_allowed_shapes(P)[0]}, got {p.shape}")
    if abs(float(p.sum()) - 1.0) > 1e-6:
        raise ConfigurationError(f"pi must sum to 1, got {float(p.sum())!r}")
    if bool(np.any(p < 0.0)):
        at = tuple(int(i) for i in np.unravel_index(int(np.argmin(p)), p.shape))
        raise ConfigurationError(
            f"pi must be a probability distribution (entries >= 0 summing to 1), got {float(p[at])!r} "
            f"at {at}; project an eq. (2) estimate onto the simplex first"
        )
    return p


def covariance(
    P: RandomizationMatrix | KroneckerMatrix, pi: ArrayLike, n: int, *, sampling: bool = True
) -> np.ndarray:
    """Covariance matrix of ``pi_hat`` from n releases (Nayak's concise theory, eq. (3.2)).

    Nayak writes the column-stochastic ``Q = P.T`` (``lambda = Q pi``)::

        Var(pi_hat) = (D_pi - pi pi') / n + (Q^-1 D_lambda Q^-1' - D_pi) / n

    The first term is the multinomial sampling variance (the n records a sample from ``pi``),
    the second the extra variance due to randomization.  Here ``Q^-1 = inv(P).T``.

    Parameters
    ----------
    P
        Randomization matrix (row convention).  A Kronecker P is accepted for small domains
        (the result is a dense N x N matrix; DomainTooLargeError beyond 2**24 cells).
    pi
        The distribution (true, or the estimate as Nayak suggests); shape ``(r,)`` or
        ``P.sizes``; finite and summing to 1.
    n
        Number of releases, >= 1.
    sampling
        ``True`` (default): both terms, the variance over samples of n records from ``pi``.
        ``False``: the randomization term alone, the variance given the n records whose
        distribution is ``pi`` (each record's value fixed, only the randomization random:
        ``Var(lambda_hat | X) = (D_lambda - P' D_pi P) / n``, and ``Q^-1 P' = I``).
    """
    P = _check_matrix(P)
    check_int("n", n, 1)
    p = _distribution(P, pi).ravel()
    if isinstance(P, KroneckerMatrix):
        check_cells(P.size * P.size, MAX_MATRIX_CELLS, f"the covariance over {P.size} joint values",
                    name="MAX_MATRIX_CELLS")
        inv = np.ones((1, 1))
        for f in P.inverse_factors():
            inv = np.kron(inv, f)
        lam = _apply_t(P, p.reshape(P.sizes)).ravel()
    else:
        inv = P.inverse()
        lam = P.values.T @ p
    q_inv = inv.T  # Nayak's Q^-1 with Q = P.T
    randomization = (q_inv * lam) @ q_inv.T - np.diag(p)
    if not sampling:
        given_records: np.ndarray = randomization / n
        return given_records
    covariance: np.ndarray = (np.diag(p) - np.outer(p, p) + randomization) / n
    return covariance


def marginal_variance(
    P: RandomizationMatrix | KroneckerMatrix,
    pi: ArrayLike,
    n: int,
    keep: tuple[int, ...] | None = None,
    *,
    sampling: bool = True,
) -> np.ndarray:
    """Variance of every cell of a marginal of ``pi_hat`` (Nayak eq. (3.2), mapped linearly).

    The marginal over the axes ``keep`` of the unit's domain is ``A pi_hat`` with A the 0/1
    matrix that sums the other axes, so its covariance is ``A V Aᵀ`` exactly, V the
    covariance of :func:`covariance`.  Its diagonal is computed without V::

        Var(A pi_hat) = ((M ∘ M) lambda - (A pi)²) / n      (sampling=True, Nayak eq. 3.2)
        Var(A pi_hat | X) = ((M ∘ M) lambda - A pi) / n     (sampling=False, given the records)

    with ``M = A Q^-1`` (``Q^-1 = inv(P).T``), ``lambda = Pᵀ pi`` and ∘ the elementwise product
    (``A D_pi Aᵀ = D_{A pi}`` since every cell of the unit falls in one cell of the marginal).
    For a Kronecker P the marginal depends only on the kept factors (``inv(P_k) 1 = 1``), so
    ``M ∘ M`` is the Kronecker product of the kept ``(inv(P_k)ᵀ)²`` (mode products).

    Parameters
    ----------
    P
        The unit's matrix over its flattened domain (dense), or a Kronecker matrix with one
        factor per axis.
    pi
        Distribution over the unit's domain, shaped like the domain (one axis per attribute;
        a dense P over one attribute also accepts the flat vector); >= 0, summing to 1.
    n
        Number of releases, >= 1.
    keep
        Axes of ``pi`` kept, in the order of the result's axes (default: every axis, i.e. the
        diagonal of :func:`covariance`).
    sampling
        As in :func:`covariance`.

    Returns
    -------
    numpy.ndarray
        The variances, one axis per kept axis (clipped at 0 against round-off).
    """
    P = _check_matrix(P)
    check_int("n", n, 1)
    p = _distribution(P, pi)
    shape = P.sizes if isinstance(P, KroneckerMatrix) else p.shape
    if math.prod(shape) != P.size:
        raise ConfigurationError(f"pi has {p.size} cells but P has {P.size} values")
    p = p.reshape(shape)
    axes = tuple(range(len(shape))) if keep is None else tuple(int(a) for a in keep)
    if len(set(axes)) != len(axes) or any(not 0 <= a < len(shape) for a in axes) or not axes:
        raise ConfigurationError(
            f"keep must name distinct axes in [0, {len(shape)}), at least one, got {keep!r}"
        )
    dropped = tuple(a for a in range(len(shape)) if a not in axes)
    kept_sorted = sorted(axes)
    order = [kept_sorted.index(a) for a in axes]
    marginal = p.sum(axis=dropped).transpose(order)
    if isinstance(P, KroneckerMatrix):
        lam = _apply_t(P, p).sum(axis=dropped).transpose(order)
        inverses = P.inverse_factors()
        first = mode_products(lam, [np.square(inverses[a].T) for a in axes])
    else:
        lam = P.values.T @ p.ravel()
        rows = P.inverse().T.reshape(*shape, P.size)  # Q^-1, one row per unit cell
        M = rows.sum(axis=dropped).transpose(*order, len(order)) if dropped else rows.transpose(*order, len(order))
        first = np.square(M) @ lam
    variance: np.ndarray = np.maximum(first - (np.square(marginal) if sampling else marginal), 0.0) / n
    return variance


def error_bounds(lam_hat: ArrayLike, n: int, alpha: float) -> tuple[float, float]:
    """Simultaneous absolute and relative error of ``lambda_hat`` (main paper eq. (5), (6)).

    ``e_abs = max_u sqrt(B lambda_u (1 - lambda_u) / n)`` and
    ``e_rel = max_u sqrt(B (1 - lambda_u) / (lambda_u n))`` with B the upper α/r percentile
    of χ²(1), ``scipy.stats.chi2.isf(alpha / r, 1)``.  ``e_rel`` is ``inf`` when a frequency
    is 0.

    Parameters
    ----------
    lam_hat
        Observed frequencies or counts over the r released values (any shape; normalised).
    n
        Number of releases, >= 1.
    alpha
        Confidence level complement, in (0, 1).
    """
    lam = real_array("lam_hat", lam_hat, finite=True).ravel()
    if lam.size == 0 or np.any(lam < 0) or float(lam.sum()) <= 0:
        raise ConfigurationError("lam_hat must be non-empty, >= 0 and have a positive total")
    check_int("n", n, 1)
    alpha = check_unit("alpha", alpha, low_open=True, high_open=True)
    lam = lam / lam.sum()
    import scipy.stats  # here, not at import time: scipy.stats takes seconds to import (party workers never need it)

    b = float(scipy.stats.chi2.isf(alpha / lam.size, 1))
    e_abs = float(np.sqrt(b * np.max(lam * (1.0 - lam)) / n))
    if np.any(lam == 0.0):
        return e_abs, math.inf
    e_rel = float(np.sqrt(b * np.max((1.0 - lam) / lam) / n))
    return e_abs, e_rel
