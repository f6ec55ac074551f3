"""Estimation of one unit's distribution from released counts (main paper eq. 2 + Section 6.4).

π̂ = (Pᵀ)⁻¹ λ̂ (:func:`mprr.estimation.invert`; mode products for Kronecker matrices), then a
post-processing that turns π̂ into a proper distribution:

- ``"clip-rescale"`` (default, main paper 6.4: negatives to 0, rescale to sum 1 — the paper
  calls it the closest distribution in Euclidean distance; it is not),
- ``"project-simplex"`` (the exact Euclidean projection onto the simplex),
- ``"ibu"`` (iterative Bayesian update, the EM maximum-likelihood estimate),
- ``"none"`` (raw eq. 2, may be negative; only where the caller accepts it).

For a :class:`~mprr.kronecker.KroneckerMatrix` both eq. (2) and the IBU run with mode products
(:mod:`mprr.estimation`): the joint matrix is never built.
"""

from __future__ import annotations

import numpy as np

from mprr.distributions import DenseDistribution, ProductDistribution
from mprr.errors import ConfigurationError
from mprr.estimation import POSTPROCESSORS, invert, postprocess
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import RandomizationMatrix
from mprr.protocols.release import ReleasedData

__all__ = [
    "DEFAULT_POSTPROCESS",
    "check_postprocess",
    "estimate_unit",
    "product_estimate",
    "dense_estimate",
]

DEFAULT_POSTPROCESS = "clip-rescale"
"""The paper's choice (main paper 6.4)."""


def check_postprocess(method: object, *, allow_none: bool = True) -> str:
    """Validate a post-processing name against :data:`mprr.estimation.POSTPROCESSORS`.

    Parameters
    ----------
    method
        One of ``"clip-rescale"``, ``"project-simplex"``, ``"ibu"`` and (when ``allow_none``)
        ``"none"``: the raw unbiased eq. (2) estimate, possibly negative (estimates then carry
        ``allow_negative=True`` and cannot be sampled or adjusted).
    allow_none
        Whether the raw, possibly negative eq. (2) estimate is acceptable.
    """
    allowed = sorted(m for m in POSTPROCESSORS if allow_none or m != "none")
    if method not in allowed:
        raise ConfigurationError(f"postprocess must be one of {allowed}, got {method!r}")
    return str(method)


def estimate_unit(
    P: RandomizationMatrix | KroneckerMatrix, counts: np.ndarray, method: str
) -> np.ndarray:
    """Estimate a unit's distribution from its released counts (eq. 2 + post-processing).

    Parameters
    ----------
    P
        The unit's matrix: a ``RandomizationMatrix`` over the flattened unit domain, or a
        ``KroneckerMatrix`` with one factor per axis of ``counts``.
    counts
        Released counts, flat or shaped like the unit's domain.
    method
        Post-processing name (see :func:`check_postprocess`).

    Returns
    -------
    numpy.ndarray
        Probabilities with the shape of ``counts``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    flat = counts.reshape(-1)
    pi_hat = np.asarray(invert(P, flat))
    return np.asarray(postprocess(pi_hat, method, P=P, observed=flat)).reshape(counts.shape)


def product_estimate(
    released: ReleasedData, sizes: tuple[int, ...], method: str
) -> ProductDistribution:
    """Product of the units' estimated distributions (RR-Independent / RR-Clusters / RR-Joint).

    Each unit (attribute or cluster) is estimated with :func:`estimate_unit` from its released
    counts; the units must partition the attributes.  Main paper Protocol 1 step 10: the
    frequency of a set is the sum of products of the unit estimates.
    """
    factors = tuple(
        estimate_unit(mat, counts, method).reshape(us)
        for mat, counts, us in zip(released.randomized_matrices, released.counts, released.unit_sizes)
    )
    return ProductDistribution(released.units, factors, sizes, allow_negative=(method == "none"))


def dense_estimate(released: ReleasedData, sizes: tuple[int, ...], method: str) -> DenseDistribution:
    """The full joint distribution from a release whose single unit is the whole record.

    RR-Joint (main paper Protocol 2), λ-randomization (lambda paper Section 5 step 5) and
    fixed-matrix PRAM: eq. (2) with the unit's matrix (dense, or Kronecker by mode products)
    and ``method``, reshaped to ``sizes``; ``"none"`` keeps the raw estimate (negative entries
    allowed).
    """
    tensor = estimate_unit(released.randomized_matrices[0], released.counts[0], method).reshape(sizes)
    return DenseDistribution(tensor, allow_negative=(method == "none"))
