"""Lazy Kronecker products of randomization matrices over a joint domain.

RR-Independent / RR-Ind-Joint randomize every attribute with its own matrix; the matrix of the
joint release is the Kronecker product ``P = P1 ⊗ ... ⊗ Pm`` (RR-Ind-Joint paper Theorem 1,
Corollary 1).  For the full Adult domain P would have 1,814,400² cells, so it is never built:
a vector over the joint domain is held as a tensor with one axis per attribute (C order, as
:func:`mprr.domain.encode_joint`), and ``P @ x`` becomes one small matrix product per axis
(mode products): ``(A ⊗ B) vec(X) = vec(A X B^T)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from mprr.domain import MAX_MATRIX_CELLS, check_cells
from mprr.errors import ConfigurationError
from mprr.randomization_matrix import RandomizationMatrix

__all__ = ["KroneckerMatrix", "mode_products"]

#: Default largest number of cells ``todense`` will build (128 MiB of float64).



def mode_products(tensor: np.ndarray, matrices: Sequence[np.ndarray]) -> np.ndarray:
    """Apply ``matrices[i]`` along axis ``i`` of ``tensor``: ``(M1 ⊗ … ⊗ Mm) vec(tensor)``.

    ``out[a1, ..., am] = Σ_b M1[a1, b1] ... Mm[am, bm] tensor[b1, ..., bm]`` — the product
    with a Kronecker matrix without forming it (RR-Ind-Joint paper 3.2, ``(A ⊗ B) vec(X) =
    vec(A X Bᵀ)``; with factor inverses, lambda paper Property 2).  Each step
    contracts the leading axis with one factor and appends the new axis at the end, so after m
    steps the axes are back in order and every intermediate is contiguous.  Cost
    ``O(N Σ r_i)`` for N cells instead of ``O(N²)``.
    """
    if tensor.ndim != len(matrices):
        raise ConfigurationError(
            f"tensor must have one axis per factor ({len(matrices)}), got shape {tensor.shape}"
        )
    out = tensor
    for m in matrices:
        out = np.tensordot(out, m, axes=([0], [1]))
    return np.ascontiguousarray(out)


class KroneckerMatrix:
    """Lazy ``P1 ⊗ P2 ⊗ … ⊗ Pm`` of validated randomization matrices.

    Parameters
    ----------
    factors
        One :class:`RandomizationMatrix` per attribute (KroneckerMatrix factors are flattened).

    Notes
    -----
    Properties follow from the factors without building the product: ε adds (the column
    ratios of eq. (4) multiply), the entropy rate adds (lambda paper Theorem 2), the condition
    number multiplies, and the inverse is the Kronecker product of the factor inverses (lambda
    paper Property 2; RR-Ind-Joint paper 3.2).
    """

    __slots__ = ("_factors",)

    def __init__(self, factors: Iterable[Any]) -> None:
        flat: list[RandomizationMatrix] = []
        for i, f in enumerate(factors):
            if isinstance(f, KroneckerMatrix):
                flat.extend(f.factors)
            elif isinstance(f, RandomizationMatrix):
                flat.append(f)
            else:
                raise ConfigurationError(
                    f"Kronecker factors must be RandomizationMatrix or KroneckerMatrix,"
                    f" got {type(f).__name__} at position {i}"
                )
        if not flat:
            raise ConfigurationError("a Kronecker product needs at least one factor, got none")
        self._factors = tuple(flat)

    @property
    def factors(self) -> tuple[RandomizationMatrix, ...]:
        """The per-attribute matrices, in axis order."""
        return self._factors

    @property
    def sizes(self) -> tuple[int, ...]:
        """Number of categories of every factor (the tensor shape of the joint domain)."""
        return tuple(f.size for f in self._factors)

    @property
    def size(self) -> int:
        """Number of joint values (product of the sizes)."""
        return math.prod(self.sizes)

    @property
    def shape(self) -> tuple[int, int]:
        """``(size, size)`` of the (never materialised) joint matrix."""
        return (self.size, self.size)

    @property
    def epsilon(self) -> float:
        """Eq. (4) ε of the product = Σ factor ε (column max/min ratios multiply)."""
        return float(sum(f.epsilon for f in self._factors))

    @property
    def entropy_rate(self) -> float:
        """Entropy rate in bits = Σ factor entropy rates (lambda paper Theorem 2)."""
        return float(sum(f.entropy_rate for f in self._factors))

    @property
    def beta(self) -> float:
        """β = H(P) / log2(size) = Σ H(P_i) / Σ log2 r_i."""
        return self.entropy_rate / math.log2(self.size) if self.size > 1 else 0.0

    @property
    def is_bistochastic(self) -> bool:
        """True iff every factor is bistochastic (column sums of the product multiply)."""
        return all(f.is_bistochastic for f in self._factors)

    @property
    def condition_number(self) -> float:
        """2-norm condition number = product of the factors' (singular values multiply)."""
        return float(math.prod(f.condition_number for f in self._factors))

    def inverse_factors(self) -> tuple[np.ndarray, ...]:
        """Factor inverses; ``inv(P1 ⊗ ... ⊗ Pm) = inv(P1) ⊗ ... ⊗ inv(Pm)`` (Property 2).

        Raises EstimationError if a factor is singular (then so is the product).
        """
        return tuple(f.inverse() for f in self._factors)

    def apply(self, tensor: ArrayLike) -> np.ndarray:
        """``P @ x`` for a tensor ``x`` over the joint domain (mode products with the factors)."""
        return mode_products(self._as_tensor(tensor), [f.values for f in self._factors])

    def apply_transpose(self, tensor: ArrayLike) -> np.ndarray:
        """``P.T @ x`` (e.g. the release distribution ``lambda = P.T pi`` of eq. (1))."""
        return mode_products(self._as_tensor(tensor), [f.values.T for f in self._factors])

    def todense(self, *, max_cells: int = MAX_MATRIX_CELLS) -> np.ndarray:
        """The full ``size x size`` matrix (``numpy.kron`` of the factors), for small domains only.

        Raises
        ------
        DomainTooLargeError
            If ``size**2 > max_cells``.
        """
        check_cells(self.size * self.size, max_cells, f"a dense Kronecker product (sizes {self.sizes})",
                    remedy="use mode products instead")
        out = np.ones((1, 1))
        for f in self._factors:
            out = np.kron(out, f.values)
        return out

    def to_matrix(self, *, max_cells: int = MAX_MATRIX_CELLS) -> RandomizationMatrix:
        """The dense product as a validated :class:`RandomizationMatrix` (small domains only)."""
        return RandomizationMatrix(self.todense(max_cells=max_cells))

    def _as_tensor(self, tensor: ArrayLike) -> np.ndarray:
        x = np.asarray(tensor, dtype=np.float64)
        if x.shape == (self.size,) and len(self._factors) > 1:
            x = x.reshape(self.sizes)
        if x.shape != self.sizes:
            raise ConfigurationError(
                f"tensor must have shape {self.sizes} (or ({self.size},)), got {x.shape}"
            )
        return x

    def __repr__(self) -> str:
        return f"KroneckerMatrix(sizes={self.sizes}, epsilon={self.epsilon:.6g}, beta={self.beta:.4f})"
