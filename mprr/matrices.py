"""Validated randomization matrices and the constructors of the papers.

Convention (main paper eq. (1)): ``P[u, v] = Pr(Y = v | X = u)``; rows sum to 1, the
distribution of the released value is ``lambda = P.T @ pi`` and the unbiased estimator is
``pi_hat = inv(P.T) @ lambda_hat`` (main paper eq. (2)).  Papers that write the transpose
(Nayak's concise theory: columns sum to 1) are converted at the boundary with
:meth:`RandomizationMatrix.from_columns` / :meth:`RandomizationMatrix.columns`.

The class itself lives in :mod:`mprr.randomization_matrix` (re-exported here); lazy Kronecker
products over joint domains live in :mod:`mprr.kronecker`, and :func:`kron` builds one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from mprr.domain import MAX_MATRIX_CELLS, check_cells, check_epsilon, check_int, check_sizes, check_unit, real_array
from mprr.errors import ConfigurationError
from mprr.kronecker import KroneckerMatrix
from mprr.randomization_matrix import (SINGULAR_TOLERANCE, RandomizationMatrix, column_epsilon, dense_solve,
                                       row_entropies)

__all__ = [
    "SINGULAR_TOLERANCE",
    "RandomizationMatrix",
    "column_epsilon",
    "dense_solve",
    "row_entropies",
    "grr",
    "keep_or_uniform",
    "cluster_optimal",
    "lambda_randomization",
    "warner",
    "circulant",
    "tridiagonal",
    "k_anonymity",
    "kron",
]

#: Largest number of cells (r * r) a dense matrix built by a constructor may have (128 MiB).


# --------------------------------------------------------------------------------------------
# parameter checks shared by the constructors
# --------------------------------------------------------------------------------------------


def _check_cells(name: str, r: int, max_cells: int) -> None:
    check_cells(r * r, max_cells, f"{name}: a dense {r} x {r} matrix",
                remedy="use per-attribute factors and kron() instead")


# --------------------------------------------------------------------------------------------
# constructors
# --------------------------------------------------------------------------------------------


#: Matrices of the uniform form (one value on the diagonal, one off it) with at most this many
#: categories are built once per (k, diagonal, off-diagonal) and shared: they are immutable, and
#: a protocol run builds the same few again and again (with their CDF and guide table).
SHARED_UNIFORM_FORM_K: int = 128


def _uniform_form(k: int, diag: float, off: float, name: str, max_cells: int) -> RandomizationMatrix:
    _check_cells(name, k, max_cells)
    if k <= SHARED_UNIFORM_FORM_K:
        return _shared_uniform_form(k, diag, off)
    return _build_uniform_form(k, diag, off)


def _build_uniform_form(k: int, diag: float, off: float) -> RandomizationMatrix:
    m = np.full((k, k), off)
    np.fill_diagonal(m, diag)
    return RandomizationMatrix(m)


@functools.lru_cache(maxsize=64)
def _shared_uniform_form(k: int, diag: float, off: float) -> RandomizationMatrix:
    return _build_uniform_form(k, diag, off)


def grr(k: int, epsilon: float, *, max_cells: int = MAX_MATRIX_CELLS) -> RandomizationMatrix:
    """DP-optimal k-ary randomized response (generalised RR).

    ``e^ε/(e^ε + k - 1)`` on the diagonal and ``1/(e^ε + k - 1)`` off it (RR-Ind-Joint
    paper 3.4; bistochastic paper eq. (2)); computed as ``1/(1 + (k-1)e^-ε)`` so large ε does
    not overflow.  Its eq. (4) ε is exactly ``epsilon``.
    """
    k = check_int("k", k, 2)
    eps = check_epsilon(epsilon)
    t = math.exp(-eps)
    diag = 1.0 / (1.0 + (k - 1) * t)
    return _uniform_form(k, diag, t * diag, "grr", max_cells)


def keep_or_uniform(k: int, p: float, *, max_cells: int = MAX_MATRIX_CELLS) -> RandomizationMatrix:
    """Keep the true value with probability p, else report a uniform value over all k.

    Main paper Corollary 1 / Proposition 1: diagonal ``p + (1 - p)/k``, off-diagonal
    ``(1 - p)/k``.  (Main paper 6.3.1 writes ``p`` on the diagonal, whose rows do not sum to 1;
    this is the stochastic matrix of the randomization it describes.)  Singular for p = 0.
    """
    k = check_int("k", k, 2)
    p = check_unit("p", p)
    off = (1.0 - p) / k
    return _uniform_form(k, p + off, off, "keep_or_uniform", max_cells)


def cluster_optimal(
    sizes: Sequence[int], epsilon: float, *, max_cells: int = MAX_MATRIX_CELLS
) -> RandomizationMatrix:
    """The ε-DP-optimal matrix of RR-Joint on a cluster (main paper 6.3.2, sign slip corrected).

    For a cluster whose attributes have ``sizes`` categories (R = Π sizes joint values) and total
    budget ``epsilon`` (= Σ_A ε_A), the matrix has ``p_C`` on the diagonal and ``p_C e^-ε`` off it
    with ``p_C = 1 / (1 + (R - 1) e^-ε)``.  The paper prints ``(1 - R)``, for which rows do not
    sum to 1.  This is :func:`grr` on the R joint values, in C order (:func:`mprr.domain.encode_joint`).
    """
    dims = list(check_sizes(sizes))
    big_r = math.prod(dims)
    if big_r < 2:
        raise ConfigurationError(f"the cluster must have at least 2 joint values, got sizes={sizes!r}")
    eps = check_epsilon(epsilon)
    _check_cells("cluster_optimal", big_r, max_cells)
    return grr(big_r, eps, max_cells=max_cells)


def lambda_randomization(k: int, lam: float, *, max_cells: int = MAX_MATRIX_CELLS) -> RandomizationMatrix:
    """λ-randomization ``P = λ I + (1 - λ) J / k`` (lambda paper eq. (6)), 0 < λ <= 1.

    Its inverse is the closed form of lambda paper Property 1.
    """
    k = check_int("k", k, 2)
    lam = check_unit("lam", lam, low_open=True)
    off = (1.0 - lam) / k
    return _uniform_form(k, lam + off, off, "lambda_randomization", max_cells)


def warner(p: float) -> RandomizationMatrix:
    """Warner's (1965) design: keep the true binary answer with probability p, flip it otherwise.

    ``[[p, 1-p], [1-p, p]]`` (Nayak section 1); singular for p = 1/2.
    """
    p = check_unit("p", p)
    return RandomizationMatrix(np.array([[p, 1.0 - p], [1.0 - p, p]]))


def circulant(first_row: ArrayLike, *, atol: float = 1e-9) -> RandomizationMatrix:
    """Circulant matrix ``P[i, j] = c[(j - i) mod r]`` (bistochastic paper eq. (6)).

    ``first_row`` must be a probability vector of length >= 2; the result is bistochastic.
    """
    c = real_array("first_row", first_row)
    if c.ndim != 1 or c.shape[0] < 2:
        raise ConfigurationError(f"first_row must be a 1-D array of length >= 2, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0) or abs(float(c.sum()) - 1.0) > atol:
        raise ConfigurationError(
            f"first_row must be finite, >= 0 and sum to 1 (within atol={atol:g}), got {c.tolist()!r}"
        )
    r = c.shape[0]
    _check_cells("circulant", r, MAX_MATRIX_CELLS)
    idx = (np.arange(r)[None, :] - np.arange(r)[:, None]) % r
    return RandomizationMatrix(c[idx], atol=atol)


def tridiagonal(alphas: ArrayLike) -> RandomizationMatrix:
    """Symmetric tridiagonal bistochastic matrix of bistochastic paper eq. (7).

    ``alphas`` (length r - 1) are the off-diagonal entries; the diagonal is
    ``1 - alpha_{i-1} - alpha_i`` so every row and column sums to 1.  Requires
    ``alpha_i >= 0`` and ``alpha_{i-1} + alpha_i <= 1``.
    """
    a = real_array("alphas", alphas)
    if a.ndim != 1 or a.shape[0] < 1:
        raise ConfigurationError(f"alphas must be a 1-D array of length >= 1, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise ConfigurationError(f"alphas must be finite and in [0, 1], got {a.tolist()!r}")
    pair = a[:-1] + a[1:]
    if np.any(pair > 1.0 + 1e-12):
        i = int(np.flatnonzero(pair > 1.0 + 1e-12)[0])
        raise ConfigurationError(
            f"alphas must satisfy alpha[i-1] + alpha[i] <= 1, got alphas[{i}] + alphas[{i + 1}]"
            f" = {float(pair[i])!r}"
        )
    r = a.shape[0] + 1
    _check_cells("tridiagonal", r, MAX_MATRIX_CELLS)
    left = np.concatenate(([0.0], a))
    right = np.concatenate((a, [0.0]))
    m = np.diag(np.clip(1.0 - left - right, 0.0, 1.0)) + np.diag(a, 1) + np.diag(a, -1)
    return RandomizationMatrix(m)


def k_anonymity(block_sizes: Sequence[int]) -> RandomizationMatrix:
    """Block-diagonal matrix of uniform blocks ``J / n_l`` (bistochastic paper eq. (3), Anatomy).

    Each class of ``n_l`` values is permuted uniformly at random within the class.  Singular as
    soon as one block has more than one value.
    """
    sizes = list(check_sizes(block_sizes, name="block_sizes"))
    r = sum(sizes)
    if r < 2:
        raise ConfigurationError(f"k_anonymity needs at least 2 values in total, got block_sizes={block_sizes!r}")
    _check_cells("k_anonymity", r, MAX_MATRIX_CELLS)
    block = np.repeat(np.arange(len(sizes)), sizes)  # block of every value
    same = block[:, None] == block[None, :]
    return RandomizationMatrix(same / np.asarray(sizes, dtype=np.float64)[block][:, None])


def kron(*factors: Any) -> KroneckerMatrix:
    """Lazy Kronecker product ``P1 ⊗ P2 ⊗ ...`` over the joint domain (C order).

    The matrix of independent per-attribute releases (RR-Ind-Joint paper Theorem 1 /
    Corollary 1; lambda paper Section 4).  Factors may be :class:`RandomizationMatrix` or :class:`~mprr.kronecker.KroneckerMatrix`
    (flattened).  See :class:`mprr.kronecker.KroneckerMatrix`.
    """
    return KroneckerMatrix(factors)

