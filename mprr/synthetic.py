"""Synthetic data sets whose true joint distribution is known exactly.

- :func:`zipf_pair` — the two-attribute generator of the RR-Ind-Joint paper, Section 4.1:
  both attributes have Zipf-like marginals Pr(A = a) = c/a and the pair has a target
  Cramér's V.
- :func:`planted_clusters` — the default multi-attribute generator (no external file needed):
  some attributes are grouped into dependent clusters with a known joint, the rest are
  independent; the truth is a :class:`~mprr.distributions.ProductDistribution`.

Dependence is planted with the mixture  Σ = (1 − t)·(π¹ ⊗ … ⊗ πᵏ) + t·M,  where M is the
comonotone coupling of the marginals (one latent U ~ Uniform(0, 1), X_j = F_j⁻¹(U)).  Both
terms have marginals π¹…πᵏ, so Σ does too, and since Σ − ⊗π = t·(M − ⊗π), the φ² of every
pair scales by t²: Cramér's V(Σ) = t·V(M).  For equal marginals M = diag(π) and V(M) = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mprr.data import Attribute, Dataset, Schema
from mprr import dependence
from mprr.distributions import DenseDistribution, JointDistribution, ProductDistribution, sample
from mprr.domain import check_int
from mprr.errors import ConfigurationError

__all__ = [
    "SyntheticData",
    "zipf_marginal",
    "comonotone_coupling",
    "zipf_pair",
    "zipf_pair_joint",
    "planted_clusters",
    "DEFAULT_SIZES",
    "DEFAULT_CLUSTERS",
    "DEFAULT_KINDS",
]

#: Default attribute sizes of :func:`planted_clusters` (8 attributes, 34,560 cells).
DEFAULT_SIZES: tuple[int, ...] = (4, 3, 5, 2, 6, 3, 8, 2)
#: Default dependent clusters (the other attributes are independent singletons).
DEFAULT_CLUSTERS: tuple[tuple[int, ...], ...] = ((0, 1, 2), (3, 4))
#: Default kinds: attributes 1 and 2 ordinal (their planted dependence is monotone).
DEFAULT_KINDS: tuple[str, ...] = ("nominal", "ordinal", "ordinal", "nominal", "nominal", "nominal", "nominal", "nominal")


@dataclass(frozen=True)
class SyntheticData:
    """A sampled data set together with the population distribution it was drawn from.

    Attributes
    ----------
    dataset
        ``n`` i.i.d. records drawn from ``truth``.
    truth
        The exact population joint distribution.
    clusters
        The planted dependent clusters (attribute indices), empty when not applicable.
    """

    dataset: Dataset
    truth: JointDistribution
    clusters: tuple[tuple[int, ...], ...] = ()


def zipf_marginal(d: int, exponent: float = 1.0) -> np.ndarray:
    """Zipf-like marginal of d categories: Pr(i) = c/(i + 2)^exponent, i = 0..d−1.

    With exponent 1 this is the RR-Ind-Joint paper's Pr(A = a) = c/a for a = 2, …, d+1,
    c = 1/Σ 1/a (the paper writes a = 2..d, which gives d − 1 values for "d unique values";
    we keep d values).
    """
    d = check_int("d", d, 2)
    if not np.isfinite(exponent) or exponent < 0:
        raise ConfigurationError(f"exponent must be finite and >= 0, got {exponent!r}")
    w = np.arange(2, d + 2, dtype=float) ** -float(exponent)
    weights: np.ndarray = w / w.sum()
    return weights


def comonotone_coupling(marginals: Sequence[np.ndarray]) -> np.ndarray:
    """Joint tensor of X_j = F_j⁻¹(U), U ~ Uniform(0, 1) (the maximal monotone coupling).

    The "all mass on the diagonal" end of the RR-Ind-Joint paper's 4.1 generator (its Fig. 1):
    for equal marginals it is ``diag(π)``, Cramér's V = 1.

    Computed exactly from the union of the marginals' CDF breakpoints: each interval between
    consecutive breakpoints maps to one cell and carries its length as mass.
    """
    margs = [np.asarray(p, dtype=float) for p in marginals]
    if not margs or any(p.ndim != 1 or p.size < 1 or p.min() < 0 for p in margs):
        raise ConfigurationError("marginals must be non-empty 1-D non-negative probability vectors")
    if any(abs(p.sum() - 1.0) > 1e-9 for p in margs):
        raise ConfigurationError("every marginal must sum to 1")
    cdfs = [np.cumsum(p) / p.sum() for p in margs]
    breaks = np.unique(np.concatenate([[0.0, 1.0], *cdfs]))
    lengths = np.diff(breaks)
    mids = (breaks[:-1] + breaks[1:]) / 2
    idx = tuple(
        np.minimum(np.searchsorted(c, mids, side="right"), c.size - 1) for c in cdfs
    )
    shape = tuple(p.size for p in margs)
    flat = np.ravel_multi_index(idx, shape)
    return np.bincount(flat, weights=lengths, minlength=int(np.prod(shape))).reshape(shape)


def _names(m: int, names: Sequence[str] | None) -> tuple[str, ...]:
    if names is None:
        return tuple(f"A{j + 1}" for j in range(m))
    names = tuple(names)
    if len(names) != m:
        raise ConfigurationError(f"names must give one name per attribute ({m}), got {len(names)}")
    return names


def _schema(sizes: Sequence[int], names: Sequence[str], kinds: Sequence[str]) -> Schema:
    return Schema(
        tuple(
            Attribute(name, tuple(f"v{i}" for i in range(size)), kind)
            for name, size, kind in zip(names, sizes, kinds)
        )
    )


def zipf_pair(
    n: int,
    sizes: int | Sequence[int],
    cramers_v: float,
    *,
    rng: np.random.Generator,
    names: Sequence[str] = ("A", "B"),
) -> SyntheticData:
    """Two attributes with Zipf-like marginals and a target Cramér's V (RR-Ind-Joint 4.1).

    Parameters
    ----------
    n
        Number of records drawn i.i.d. from the population joint.
    sizes
        ``d`` (both attributes have d categories, as in the paper) or ``(d_A, d_B)``.
    cramers_v
        Target V in [0, 1].  The population joint is (1 − t)·π_A π_Bᵀ + t·M with
        t = V / V(M), M the comonotone coupling; for d_A = d_B, M = diag(π) and t = V, so
        the mass concentrates on the diagonal as in the paper's Figure 1.  For unequal
        sizes V(M) < 1 bounds the attainable V.
    rng
        Source of randomness (only used to draw the records).

    Returns
    -------
    SyntheticData
        ``truth`` is a :class:`DenseDistribution` whose Cramér's V equals ``cramers_v``.
    """
    n = check_int("n", n, 1)
    joint = zipf_pair_joint(sizes, cramers_v)
    truth = DenseDistribution(joint)
    schema = _schema(joint.shape, _names(2, names), ("nominal", "nominal"))
    codes = sample(truth, n, rng=rng)
    return SyntheticData(Dataset(schema, codes), truth, ((0, 1),) if cramers_v > 0 else ())


def zipf_pair_joint(sizes: int | Sequence[int], cramers_v: float) -> np.ndarray:
    """The population joint of :func:`zipf_pair` (parameters and errors as there): a probability
    table of shape ``(d_A, d_B)``."""
    if isinstance(sizes, (int, np.integer)):
        sizes = (sizes, sizes)
    sizes = tuple(sizes)
    if len(sizes) != 2:
        raise ConfigurationError(f"sizes must be d or a pair (d_A, d_B), got {sizes!r}")
    da, db = (check_int("sizes", s, 2) for s in sizes)
    v = float(cramers_v)
    if not 0.0 <= v <= 1.0:
        raise ConfigurationError(f"cramers_v must be in [0, 1], got {cramers_v!r}")
    pa, pb = zipf_marginal(da), zipf_marginal(db)
    coupling = comonotone_coupling([pa, pb])
    v_max = 1.0 if da == db else dependence.cramers_v(coupling)
    if v > v_max + 1e-12:
        raise ConfigurationError(
            f"cramers_v must be <= {v_max:.6f} for sizes ({da}, {db}) with Zipf marginals, got {v}"
        )
    t = 0.0 if v == 0 else min(1.0, v / v_max)
    joint = (1.0 - t) * np.outer(pa, pb) + t * coupling
    normalised: np.ndarray = joint / joint.sum()
    return normalised


def planted_clusters(
    n: int,
    *,
    rng: np.random.Generator,
    sizes: Sequence[int] = DEFAULT_SIZES,
    clusters: Sequence[Sequence[int]] = DEFAULT_CLUSTERS,
    strength: float = 0.7,
    exponent: float = 1.0,
    kinds: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
) -> SyntheticData:
    """Multi-attribute data with planted dependent clusters and independent attributes.

    The ground truth for RR-Clusters (main paper Section 4, Algorithm 1): the planted clusters
    are what Algorithm 1 should find, with the RR-Ind-Joint paper 4.1 construction per cluster.

    Every attribute j has the Zipf-like marginal :func:`zipf_marginal` (sizes[j], exponent).
    Each planted cluster C has the joint (1 − s)·⊗_{j∈C} π_j + s·M_C (s = ``strength``,
    M_C the comonotone coupling), so every pair inside C has Cramér's V = s·V(M_pair)
    (= s when the two attributes have equal size).  Attributes in no cluster are independent.

    Parameters
    ----------
    n
        Number of records drawn i.i.d. from the truth.
    rng
        Source of randomness (only used to draw the records; the truth is deterministic).
    sizes
        Category counts (each >= 2).  Default :data:`DEFAULT_SIZES`.
    clusters
        Disjoint groups of attribute indices (each of size >= 2).  Default
        :data:`DEFAULT_CLUSTERS`.
    strength
        s in [0, 1].
    exponent
        Zipf exponent of the marginals (0 = uniform).
    kinds
        Attribute kinds; default :data:`DEFAULT_KINDS` when ``sizes`` is the default, else
        all nominal.
    names
        Attribute names; default ``A1 … Am``.

    Returns
    -------
    SyntheticData
        ``truth`` is a :class:`ProductDistribution` with the planted clusters first, then one
        singleton per independent attribute; ``clusters`` are the planted clusters.
    """
    n = check_int("n", n, 1)
    sizes_t = tuple(check_int("every size", s, 2) for s in sizes)
    m = len(sizes_t)
    if m < 1:
        raise ConfigurationError("sizes must list at least one attribute")
    try:
        planted = tuple(tuple(int(a) for a in c) for c in clusters)
    except (TypeError, ValueError):
        raise ConfigurationError(f"clusters must be sequences of attribute indices, got {clusters!r}")
    flat = [a for c in planted for a in c]
    if any(len(c) < 2 for c in planted) or len(set(flat)) != len(flat) or any(
        a < 0 or a >= m for a in flat
    ):
        raise ConfigurationError(
            f"clusters must be disjoint groups of >= 2 attribute indices in [0, {m}), got {planted}"
        )
    s = float(strength)
    if not 0.0 <= s <= 1.0:
        raise ConfigurationError(f"strength must be in [0, 1], got {strength!r}")
    if kinds is None:
        kinds = DEFAULT_KINDS if sizes_t == DEFAULT_SIZES else ("nominal",) * m
    kinds = tuple(kinds)
    if len(kinds) != m:
        raise ConfigurationError(f"kinds must give one kind per attribute ({m}), got {len(kinds)}")
    margs = [zipf_marginal(d, exponent) for d in sizes_t]
    singles = tuple((a,) for a in range(m) if a not in flat)
    factors: list[np.ndarray] = []
    for c in planted:
        independent = margs[c[0]]
        for a in c[1:]:
            independent = np.multiply.outer(independent, margs[a])
        joint = (1.0 - s) * independent + s * comonotone_coupling([margs[a] for a in c])
        factors.append(joint / joint.sum())
    factors.extend(margs[a] for (a,) in singles)
    truth = ProductDistribution(planted + singles, tuple(factors), sizes_t)
    schema = _schema(sizes_t, _names(m, names), kinds)
    return SyntheticData(Dataset(schema, sample(truth, n, rng=rng)), truth, planted)
