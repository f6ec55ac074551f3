"""Joint distributions over a product domain of categorical attributes.

A joint distribution over ``m`` attributes with category counts ``sizes`` is a probability
tensor with one axis per attribute, in schema order (docs/architecture.md, "joint domains are tensors").
Three representations share one small protocol, :class:`JointDistribution`:

- :class:`DenseDistribution` — the full tensor (RR-Joint, small domains, estimates of eq. (2));
- :class:`ProductDistribution` — a product of independent cluster distributions (the estimate
  of RR-Independent and RR-Clusters, main paper Protocols 1 and 3), never materialized;
- :class:`WeightedSample` — a weighted set of records (the output of RR-Adjustment,
  main paper Algorithm 2, and empirical distributions of data sets).

:func:`sample` draws synthetic microdata from any of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from mprr.domain import MAX_TENSOR_CELLS, check_cells, check_int, check_sizes
from mprr.errors import ConfigurationError, DataError

__all__ = [
    "JointDistribution",
    "DenseDistribution",
    "ProductDistribution",
    "WeightedSample",
    "SizedDomain",
    "check_axes",
    "sample",
]

@runtime_checkable
class JointDistribution(Protocol):
    """What every joint distribution offers.

    Attributes
    ----------
    sizes
        Category count of each attribute (one tensor axis per attribute).
    """

    @property
    def sizes(self) -> tuple[int, ...]:
        """Category count of each attribute."""
        ...

    def marginal(self, axes: Sequence[int]) -> np.ndarray:
        """Probability tensor of the attributes ``axes``, with axes in the order given."""
        ...

    def probability(self, mask_or_cells: np.ndarray) -> float | np.ndarray:
        """Mass of a boolean mask over the full domain, or point masses of ``(k, m)`` cells."""
        ...


# --------------------------------------------------------------------------- validation


def check_axes(axes: Sequence[int] | int, m: int, *, name: str = "axes") -> tuple[int, ...]:
    """Validate attribute indices: distinct integers in ``[0, m)`` (negative not allowed).

    ``name`` is the parameter named in the error message.
    """
    if isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    try:
        out = tuple(int(a) for a in axes)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name} must be a sequence of integers, got {axes!r}")
    if any(a < 0 or a >= m for a in out):
        raise ConfigurationError(f"{name} must be attribute indices in [0, {m}), got {out}")
    if len(set(out)) != len(out):
        raise ConfigurationError(f"{name} must be distinct attribute indices, got {out}")
    return out


def _cells(sizes: Sequence[int]) -> int:
    return math.prod(int(s) for s in sizes)


def _check_max_cells(sizes: Sequence[int], max_cells: int, what: str) -> None:
    check_cells(_cells(sizes), max_cells, f"{what}: a dense tensor of sizes {tuple(sizes)}",
                remedy="query a marginal or raise max_cells")


def _check_probability_tensor(
    tensor: np.ndarray, *, name: str, atol: float, allow_negative: bool = False
) -> None:
    if not np.all(np.isfinite(tensor)):
        raise ConfigurationError(f"{name} must contain only finite values")
    if not allow_negative and tensor.size and tensor.min() < -atol:
        raise ConfigurationError(
            f"{name} must be non-negative, got minimum {float(tensor.min())!r}"
        )
    total = float(tensor.sum())
    if abs(total - 1.0) > atol * max(1.0, math.sqrt(tensor.size)):
        raise ConfigurationError(f"{name} must sum to 1 (within {atol}), got {total!r}")


def _mask_or_cells(value: np.ndarray, sizes: tuple[int, ...]) -> tuple[str, np.ndarray]:
    arr = np.asarray(value)
    if arr.dtype == bool:
        if arr.shape != sizes:
            raise ConfigurationError(
                f"a mask must have the domain shape {sizes}, got shape {arr.shape}"
            )
        return "mask", arr
    if not np.issubdtype(arr.dtype, np.integer):
        raise ConfigurationError(
            f"probability() takes a boolean mask of shape {sizes} or integer cells of shape "
            f"(k, {len(sizes)}), got dtype {arr.dtype}"
        )
    if arr.ndim == 1 and arr.shape[0] == len(sizes):
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != len(sizes):
        raise ConfigurationError(
            f"cells must have shape (k, {len(sizes)}), got shape {arr.shape}"
        )
    if arr.size and (arr.min() < 0 or np.any(arr.max(axis=0) >= np.asarray(sizes))):
        raise ConfigurationError(f"cells must have codes in [0, size) for sizes {sizes}")
    return "cells", arr.astype(np.int64, copy=False)


# --------------------------------------------------------------------------- dense


class DenseDistribution:
    """A joint distribution held as a full probability tensor.

    Parameters
    ----------
    tensor
        Array with one axis per attribute; entries are probabilities summing to 1.
    allow_negative
        Accept negative entries (e.g. a raw eq. (2) estimate π̂ = (Pᵀ)⁻¹λ̂, which sums to 1 but
        need not be non-negative). Such a distribution cannot be sampled.
    atol
        Tolerance of the sum-to-one check (scaled by sqrt(number of cells)).

    Raises
    ------
    ConfigurationError
        Non-finite entries, negative entries (unless allowed), sum not 1, zero-dimensional.
    """

    def __init__(
        self, tensor: np.ndarray, *, allow_negative: bool = False, atol: float = 1e-9
    ) -> None:
        arr = np.array(tensor, dtype=np.float64)
        if arr.ndim == 0:
            raise ConfigurationError("tensor must have at least one axis, got a scalar")
        check_sizes(arr.shape, name="tensor shape")
        _check_probability_tensor(arr, name="tensor", atol=atol, allow_negative=allow_negative)
        arr.setflags(write=False)
        self._tensor = arr
        self.allow_negative = bool(allow_negative)

    @property
    def tensor(self) -> np.ndarray:
        """The read-only probability tensor."""
        return self._tensor

    @property
    def sizes(self) -> tuple[int, ...]:
        """Category count of each attribute (one tensor axis per attribute)."""
        return tuple(int(s) for s in self._tensor.shape)

    @property
    def m(self) -> int:
        """Number of attributes."""
        return self._tensor.ndim

    @property
    def cells(self) -> int:
        """Number of cells of the joint domain (product of the sizes)."""
        return int(self._tensor.size)

    def marginal(self, axes: Sequence[int]) -> np.ndarray:
        """Sum out every other axis; result axes follow the order of ``axes``."""
        axes = check_axes(axes, self.m)
        others = tuple(a for a in range(self.m) if a not in axes)
        reduced = self._tensor.sum(axis=others) if others else self._tensor
        kept = [a for a in range(self.m) if a in axes]
        return np.transpose(reduced, [kept.index(a) for a in axes]).copy()

    def probability(self, mask_or_cells: np.ndarray) -> float | np.ndarray:
        """Total mass of a boolean mask (float), or point masses of ``(k, m)`` cells."""
        kind, arr = _mask_or_cells(mask_or_cells, self.sizes)
        if kind == "mask":
            return float(self._tensor[arr].sum())
        masses: np.ndarray = self._tensor[tuple(arr.T)]
        return masses

    def todense(self, max_cells: int = MAX_TENSOR_CELLS) -> np.ndarray:
        """Return a writable copy of the tensor."""
        return self._tensor.copy()

    def __repr__(self) -> str:
        return f"DenseDistribution(sizes={self.sizes})"


# --------------------------------------------------------------------------- product


class SizedDomain:
    """Accessors shared by distributions that store their per-attribute ``_sizes`` (also
    :class:`mprr.protocols.marginal_release.MarginalSetDistribution`)."""

    _sizes: tuple[int, ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        """Category count of each attribute (one tensor axis per attribute)."""
        return self._sizes

    @property
    def m(self) -> int:
        """Number of attributes."""
        return len(self._sizes)

    @property
    def cells(self) -> int:
        """Number of cells of the joint domain (product of the sizes)."""
        return _cells(self._sizes)


class ProductDistribution(SizedDomain):
    """Product of independent cluster distributions (RR-Independent / RR-Clusters estimate).

    Parameters
    ----------
    clusters
        A partition of ``range(len(sizes))``: each attribute in exactly one cluster.
    factors
        ``factors[i]`` is the probability tensor of cluster ``clusters[i]``, with axes in the
        order of that cluster tuple (shape ``tuple(sizes[a] for a in clusters[i])``).
    sizes
        Category count of every attribute.
    allow_negative
        Accept negative factor entries (raw eq. (2) estimates with post-processing "none");
        such a distribution cannot be sampled.
    atol
        Tolerance of each factor's sum-to-one check.

    Notes
    -----
    Pr(x) = Π_C f_C(x_C).  :meth:`marginal` never builds the full joint: each factor is
    summed onto the requested axes it holds, the pieces are combined by outer product and
    the result is transposed into the requested order.
    """

    def __init__(
        self,
        clusters: Sequence[Sequence[int]],
        factors: Sequence[np.ndarray],
        sizes: Sequence[int],
        *,
        allow_negative: bool = False,
        atol: float = 1e-9,
    ) -> None:
        sizes_t = check_sizes(sizes)
        m = len(sizes_t)
        try:
            clusters_t = tuple(tuple(int(a) for a in c) for c in clusters)
        except (TypeError, ValueError):
            raise ConfigurationError(f"clusters must be sequences of integers, got {clusters!r}")
        flat = [a for c in clusters_t for a in c]
        if any(len(c) == 0 for c in clusters_t) or sorted(flat) != list(range(m)):
            raise ConfigurationError(
                f"clusters must partition the attributes 0..{m - 1} (each exactly once, no "
                f"empty cluster), got {clusters_t}"
            )
        if len(factors) != len(clusters_t):
            raise ConfigurationError(
                f"need one factor per cluster: {len(clusters_t)} clusters, {len(factors)} factors"
            )
        out = []
        for i, (c, f) in enumerate(zip(clusters_t, factors)):
            arr = np.array(f, dtype=np.float64)
            expected = tuple(sizes_t[a] for a in c)
            if arr.shape != expected:
                raise ConfigurationError(
                    f"factor {i} (cluster {c}) must have shape {expected}, got {arr.shape}"
                )
            _check_probability_tensor(
                arr, name=f"factor {i} (cluster {c})", atol=atol, allow_negative=allow_negative
            )
            arr.setflags(write=False)
            out.append(arr)
        self.allow_negative = bool(allow_negative)
        self._clusters = clusters_t
        self._factors = tuple(out)
        self._sizes = sizes_t

    @property
    def clusters(self) -> tuple[tuple[int, ...], ...]:
        """The attribute clusters (a partition of the attributes)."""
        return self._clusters

    @property
    def factors(self) -> tuple[np.ndarray, ...]:
        """Probability tensor of each cluster, axes in the cluster's attribute order."""
        return self._factors

    def marginal(self, axes: Sequence[int]) -> np.ndarray:
        """Marginal over ``axes`` (in that order), computed cluster by cluster."""
        axes = check_axes(axes, self.m)
        if not axes:
            return np.array(1.0)
        pieces: list[np.ndarray] = []
        order: list[int] = []  # attribute of each axis of the outer product
        for ci, (c, f) in enumerate(zip(self._clusters, self._factors)):
            keep = [pos for pos, a in enumerate(c) if a in axes]
            if not keep:
                continue
            drop = tuple(pos for pos in range(len(c)) if pos not in keep)
            pieces.append(f.sum(axis=drop) if drop else f)
            order.extend(c[pos] for pos in keep)
        result = pieces[0]
        for piece in pieces[1:]:
            result = np.multiply.outer(result, piece)
        return np.transpose(result, [order.index(a) for a in axes]).copy()

    def probability(self, mask_or_cells: np.ndarray, *, max_cells: int = MAX_TENSOR_CELLS) -> float | np.ndarray:
        """Mass of a boolean mask (needs the dense joint), or point masses of ``(k, m)`` cells
        (computed factor by factor, no dense joint)."""
        kind, arr = _mask_or_cells(mask_or_cells, self._sizes)
        if kind == "mask":
            return float(self.todense(max_cells=max_cells)[arr].sum())
        prob = np.ones(arr.shape[0])
        for c, f in zip(self._clusters, self._factors):
            prob *= f[tuple(arr[:, list(c)].T)]
        return prob

    def todense(self, max_cells: int = MAX_TENSOR_CELLS) -> np.ndarray:
        """The full joint tensor (DomainTooLargeError beyond ``max_cells``)."""
        _check_max_cells(self._sizes, max_cells, "ProductDistribution.todense")
        return self.marginal(tuple(range(self.m)))

    def __repr__(self) -> str:
        return f"ProductDistribution(clusters={self._clusters}, sizes={self._sizes})"


# --------------------------------------------------------------------------- weighted sample


class WeightedSample(SizedDomain):
    """Distribution putting mass ∝ ``weights[i]`` on the record ``codes[i]``.

    Used for RR-Adjustment (main paper Algorithm 2: record weights on the randomized data Y)
    and, with unit weights, for the empirical distribution of a data set.

    Parameters
    ----------
    codes
        ``(n, m)`` integer codes, ``codes[:, j]`` in ``[0, sizes[j])``.
    weights
        ``(n,)`` finite non-negative weights with a positive sum (normalised internally).
    sizes
        Category count of every attribute.
    """

    def __init__(self, codes: np.ndarray, weights: np.ndarray, sizes: Sequence[int]) -> None:
        sizes_t = check_sizes(sizes)
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] != len(sizes_t):
            raise DataError(f"codes must have shape (n, {len(sizes_t)}), got shape {arr.shape}")
        if arr.shape[0] == 0:
            raise DataError("codes must hold at least one record, got 0")
        if not np.issubdtype(arr.dtype, np.integer):
            raise DataError(f"codes must be integers, got dtype {arr.dtype}")
        if arr.min() < 0 or np.any(arr.max(axis=0) >= np.asarray(sizes_t)):
            raise DataError(f"codes must lie in [0, size) for sizes {sizes_t}")
        w = np.array(weights, dtype=np.float64)
        if w.shape != (arr.shape[0],):
            raise ConfigurationError(f"weights must have shape ({arr.shape[0]},), got {w.shape}")
        if not np.all(np.isfinite(w)) or w.min() < 0 or w.sum() <= 0:
            raise ConfigurationError("weights must be finite, non-negative and have a positive sum")
        c = arr.astype(np.int64)
        c.setflags(write=False)
        w = w / w.sum()
        w.setflags(write=False)
        self._codes, self._sizes = c, sizes_t
        self._weights: np.ndarray = w

    @property
    def codes(self) -> np.ndarray:
        """The ``(n, m)`` read-only record codes."""
        return self._codes

    @property
    def weights(self) -> np.ndarray:
        """Normalised weights (sum to 1)."""
        return self._weights

    def marginal(self, axes: Sequence[int], *, max_cells: int = MAX_TENSOR_CELLS) -> np.ndarray:
        """Weighted bincount of the records' codes on ``axes`` (in that order)."""
        axes = check_axes(axes, self.m)
        if not axes:
            return np.array(1.0)
        sub = tuple(self._sizes[a] for a in axes)
        _check_max_cells(sub, max_cells, "WeightedSample.marginal")
        flat = np.ravel_multi_index(tuple(self._codes[:, a] for a in axes), sub)
        return np.bincount(flat, weights=self._weights, minlength=_cells(sub)).reshape(sub)

    def probability(self, mask_or_cells: np.ndarray) -> float | np.ndarray:
        """Mass of a boolean mask (no dense joint needed), or point masses of cells."""
        kind, arr = _mask_or_cells(mask_or_cells, self._sizes)
        if kind == "mask":
            return float(self._weights[arr[tuple(self._codes.T)]].sum())
        if self.cells >= 2**62:
            check_cells(self.cells, 2**62 - 1, "point probabilities (flat cell indices)", name="2**62")
        rec = np.ravel_multi_index(tuple(self._codes.T), self._sizes)
        uniq, inv = np.unique(rec, return_inverse=True)
        mass = np.bincount(inv, weights=self._weights, minlength=uniq.size)
        q = np.ravel_multi_index(tuple(arr.T), self._sizes)
        pos = np.clip(np.searchsorted(uniq, q), 0, uniq.size - 1)
        return np.where(uniq[pos] == q, mass[pos], 0.0)

    def todense(self, max_cells: int = MAX_TENSOR_CELLS) -> np.ndarray:
        """The full joint tensor (DomainTooLargeError beyond ``max_cells``)."""
        return self.marginal(tuple(range(self.m)), max_cells=max_cells)

    def __repr__(self) -> str:
        return f"WeightedSample(n={self._codes.shape[0]}, sizes={self._sizes})"


# --------------------------------------------------------------------------- sampling


def _draw_flat(p: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Inverse-CDF draw of ``n`` flat indices from probability vector ``p``."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    idx = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(idx, p.size - 1)


def sample(
    dist: JointDistribution, n: int, *, rng: np.random.Generator, max_cells: int = MAX_TENSOR_CELLS
) -> np.ndarray:
    """Draw ``n`` i.i.d. records (synthetic microdata) from a joint distribution.

    Main paper Section 1 / 3.2: from the published estimate "any party can ... create a
    synthetic data set".

    Parameters
    ----------
    dist
        A :class:`DenseDistribution` (inverse-CDF over the flattened tensor),
        :class:`ProductDistribution` (each cluster sampled independently, in cluster order;
        the full joint is never built) or :class:`WeightedSample` (records resampled with
        probability ∝ weight).  Any other :class:`JointDistribution` with ``todense`` is
        sampled from its dense tensor.
    n
        Number of records, >= 0.
    rng
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` int64 codes.
    """
    check_int("n", n, 0)
    if not isinstance(rng, np.random.Generator):
        raise ConfigurationError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n = int(n)
    sizes = tuple(dist.sizes)
    if isinstance(dist, ProductDistribution):
        if any(f.min() < 0 for f in dist.factors):
            raise ConfigurationError(
                "cannot sample from a distribution with negative entries; post-process the "
                "estimate first (clip-rescale, project-simplex or ibu)"
            )
        out = np.empty((n, len(sizes)), dtype=np.int64)
        for c, f in zip(dist.clusters, dist.factors):
            flat = _draw_flat(f.ravel(), n, rng)
            out[:, list(c)] = np.stack(np.unravel_index(flat, f.shape), axis=1)
        return out
    if isinstance(dist, WeightedSample):
        rows = _draw_flat(dist.weights, n, rng)
        drawn: np.ndarray = dist.codes[rows].copy()
        return drawn
    if isinstance(dist, DenseDistribution):
        tensor = dist.tensor
    elif hasattr(dist, "todense"):
        tensor = np.asarray(dist.todense(max_cells=max_cells))
    else:
        raise ConfigurationError(f"cannot sample from {type(dist).__name__}: no todense()")
    if tensor.min() < 0:
        raise ConfigurationError(
            "cannot sample from a distribution with negative entries; post-process the "
            "estimate first (clip-rescale, project-simplex or ibu)"
        )
    flat = _draw_flat(tensor.ravel(), n, rng)
    return np.stack(np.unravel_index(flat, tensor.shape), axis=1).astype(np.int64)
