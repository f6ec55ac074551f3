"""The fitted model behind a protocol's estimate: its released units, tallies and matrices.

The uncertainty of a result's tables (:mod:`mprr.protocols.uncertainty`) starts from the units
whose product is the estimate: each unit's attributes, randomization matrix, released tally and
post-processed estimate (an :class:`EstimatedUnit`), gathered with the result's post-processing,
RR-Adjustment options and what both methods take as given into a :class:`FittedModel` by
:func:`fitted_model`.  Its variances follow Nayak's eq. (3.2) ("A concise theory of randomized
response"), evaluated at :attr:`EstimatedUnit.plug_in`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mprr.distributions import DenseDistribution, JointDistribution, ProductDistribution
from mprr.domain import joint_tally
from mprr.errors import ConfigurationError
from mprr.estimation import clip_rescale, invert
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import RandomizationMatrix, kron
from mprr.protocols.release import ReleasedData

__all__ = ["POSTPROCESSING_ATOL", "Matrix", "EstimatedUnit", "FittedModel", "fitted_model", "round_counts"]

POSTPROCESSING_ATOL = 1e-6
"""A unit's post-processing counts as inactive when it moved no cell by more than this."""

Matrix = RandomizationMatrix | KroneckerMatrix


@dataclass(frozen=True, eq=False)
class EstimatedUnit:
    """One released unit and its estimate: the building block of every direct estimate.

    Attributes
    ----------
    attributes
        Attribute indices of the unit (its axes, in this order).
    sizes
        Category counts of those attributes.
    matrix
        The unit's randomization matrix (dense over the flattened unit domain, or Kronecker).
    counts
        Released tally, shape ``sizes``.
    estimate
        The unit's post-processed estimate, shape ``sizes``.
    """

    attributes: tuple[int, ...]
    sizes: tuple[int, ...]
    matrix: Matrix
    counts: np.ndarray
    estimate: np.ndarray

    @property
    def raw(self) -> np.ndarray:
        """The unbiased eq. (2) estimate from :attr:`counts` (may be negative)."""
        return np.asarray(invert(self.matrix, self.counts.reshape(-1))).reshape(self.sizes)

    @property
    def postprocessed(self) -> bool:
        """Whether the post-processing changed the eq. (2) estimate (by more than
        :data:`POSTPROCESSING_ATOL` in some cell)."""
        return not np.allclose(self.estimate, self.raw, rtol=0.0, atol=POSTPROCESSING_ATOL)

    @property
    def plug_in(self) -> np.ndarray:
        """The distribution the variances are evaluated at (the estimate; clip-rescaled when it
        has negative cells, i.e. after ``postprocess="none"``)."""
        est = np.asarray(self.estimate, dtype=np.float64)
        return est if bool(np.all(est >= 0.0)) else clip_rescale(est)


@dataclass(frozen=True, eq=False)
class FittedModel:
    """What the uncertainty of a result's tables needs (built by :func:`fitted_model`).

    Attributes
    ----------
    n
        Number of parties (records released per unit).
    sizes
        Category counts of every attribute of the schema.
    units
        The estimated units whose product is the (base) estimate.
    postprocess
        The post-processing every unit's estimate went through.
    estimate
        The result's estimate (after RR-Adjustment: its ``WeightedSample``).
    adjustment
        Options of Algorithm 2 (``tol``, ``max_iter``, ``exact_limit``) when the estimate is
        RR-Adjustment's, else ``None``.
    given
        What both methods take as given (e.g. the clusters of RR-Clusters), or ``""``.
    """

    n: int
    sizes: tuple[int, ...]
    units: tuple[EstimatedUnit, ...]
    postprocess: str
    estimate: JointDistribution
    adjustment: Mapping[str, Any] | None = None
    given: str = ""


def round_counts(n: int, p: np.ndarray) -> np.ndarray:
    """Integers summing to n closest to ``n·p`` (largest remainders)."""
    exact = n * np.asarray(p, dtype=np.float64).ravel()
    counts = np.floor(exact).astype(np.int64)
    short = n - int(counts.sum())
    if short > 0:
        counts[np.argsort(counts - exact, kind="stable")[:short]] += 1
    return counts


def fitted_model(
    *,
    estimate: JointDistribution,
    releases: Sequence[ReleasedData],
    n: int,
    sizes: Sequence[int],
    postprocess: str,
    base: JointDistribution | None = None,
    adjustment: Mapping[str, Any] | None = None,
    given: str = "",
) -> FittedModel:
    """The units behind a result's estimate, with their released tallies and matrices.

    Each cluster of the (base) estimate is a unit of the last release (RR-Independent,
    RR-Clusters, RR-Joint, λ-randomization, PRAM with a fixed matrix), or a group of
    attributes of a first release that randomized every attribute separately (RR-Ind-Joint:
    tally of the released codes, Kronecker product of the attribute matrices).

    Parameters
    ----------
    estimate
        The result's estimate.
    releases
        The result's release phases.
    n, sizes
        Number of parties; category counts of the schema.
    postprocess
        The post-processing of the unit estimates.
    base, adjustment
        After RR-Adjustment: the product estimate it adjusted, and the options of Algorithm 2.
    given
        What the methods take as given (stated in every description).

    Raises
    ------
    ConfigurationError
        If the estimate is not built from released units this way.
    """
    product = base if adjustment is not None else estimate
    if isinstance(product, ProductDistribution):
        clusters, factors = product.clusters, product.factors
    elif isinstance(product, DenseDistribution):
        clusters, factors = (tuple(range(product.m)),), (product.tensor,)
    else:
        raise ConfigurationError(
            f"uncertainty needs a product or dense estimate of released units, got {type(product).__name__}"
        )
    last, first = releases[-1], releases[0]
    per_attribute = first.codes is not None and not first.exact and first.units == tuple((a,) for a in range(len(sizes)))
    units = []
    for cluster, factor in zip(clusters, factors):
        us = tuple(int(sizes[a]) for a in cluster)
        if cluster in last.units and not last.exact:
            j = last.units.index(cluster)
            matrix, counts = last.randomized_matrices[j], np.asarray(last.counts[j], dtype=np.float64)
        elif per_attribute and first.codes is not None:
            mats = first.randomized_matrices
            matrix = mats[cluster[0]] if len(cluster) == 1 else kron(*(mats[a] for a in cluster))
            counts = np.asarray(joint_tally(first.codes[:, list(cluster)], us), dtype=np.float64)
        else:
            raise ConfigurationError(
                f"the estimate's unit {cluster} was not released as one unit nor attribute by attribute; "
                "no uncertainty can be derived from the releases"
            )
        units.append(EstimatedUnit(cluster, us, matrix, counts.reshape(us), np.asarray(factor).reshape(us)))
    return FittedModel(n=int(n), sizes=tuple(int(s) for s in sizes), units=tuple(units), postprocess=postprocess,
                       estimate=estimate, adjustment=adjustment, given=given)
