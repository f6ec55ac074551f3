"""Shared helpers of the mprr.protocols tests: small data and a party-by-party replay."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mprr.data import Attribute, Dataset, Schema
from mprr.domain import encode_joint
from mprr.kronecker import KroneckerMatrix
from mprr.randomize import randomize, randomize_joint
from mprr.streams import PartyStreams
from mprr.synthetic import SyntheticData, planted_clusters


def planted(n: int, seed: int, **kwargs: object) -> SyntheticData:
    """Default planted-cluster data (clusters (0,1,2) and (3,4), sizes 4,3,5,2,6,3,8,2)."""
    return planted_clusters(n, rng=np.random.default_rng(seed), **kwargs)  # type: ignore[arg-type]


def small_dataset(codes: Sequence[Sequence[int]], sizes: Sequence[int]) -> Dataset:
    """A nominal data set with the given codes."""
    attrs = tuple(
        Attribute(f"a{j}", tuple(f"c{k}" for k in range(s)), "nominal") for j, s in enumerate(sizes)
    )
    return Dataset(Schema(attrs), np.asarray(codes, dtype=np.int64))


def replay(
    dataset: Dataset,
    streams: PartyStreams,
    phases: Sequence[tuple[Sequence[Sequence[int]], Sequence[object]]],
) -> list[np.ndarray]:
    """Release every party's values one at a time, drawing from its own stream.

    ``phases`` lists, in order, the units and matrices of each phase.  Party i draws one
    ``stream.random()`` per unit, in unit order, phase after phase — the draw-order contract of
    :mod:`mprr.streams` — and releases one value with it.  Returns one ``(n, k)`` array of
    released codes per phase.
    """
    sizes = dataset.sizes
    out = [np.empty((dataset.n, len(units)), dtype=np.int64) for units, _ in phases]
    for i in range(dataset.n):
        gen = streams.generator(i)
        row = dataset.codes[i]
        for p, (units, mats) in enumerate(phases):
            for j, (unit, mat) in enumerate(zip(units, mats)):
                u = np.array([gen.random()])
                us = tuple(sizes[a] for a in unit)
                if isinstance(mat, KroneckerMatrix):
                    rec = randomize_joint(row[list(unit)][None, :], mat, us, uniforms=u)
                    out[p][i, j] = encode_joint(rec, us)[0]
                else:
                    code = encode_joint(row[list(unit)][None, :], us)
                    out[p][i, j] = randomize(code, mat, uniforms=u)[0]  # type: ignore[arg-type]
    return out


def tv_bound_raw(cov: np.ndarray) -> float:
    """Bound on TV(π̂, π) for a raw eq. (2) estimate when every cell is within 5 sd.

    ``TV = ½ Σ_c |π̂_c − π_c| <= ½ Σ_c 5 σ_c`` with σ_c² the diagonal of Nayak's eq. (3.2)
    covariance (the event :func:`five_sigma` tests; it fails with probability ~6e-7 per cell).
    """
    return float(2.5 * np.sqrt(np.clip(np.diag(cov), 0.0, None)).sum())


def tv_bound_projected(cov: np.ndarray) -> float:
    """Bound on TV(proj(π̂), π) for the simplex projection of an eq. (2) estimate.

    On the same event ``||π̂ − π||₂ <= 5 sqrt(tr Cov)``; the Euclidean projection onto the
    simplex is non-expansive and π lies in it, so ``||proj(π̂) − π||₂`` obeys the same bound,
    and ``TV = ½ ||·||₁ <= ½ sqrt(k) ||·||₂`` for k cells.
    """
    return float(2.5 * np.sqrt(cov.shape[0] * max(float(np.trace(cov)), 0.0)))


def five_sigma(estimate: np.ndarray, truth: np.ndarray, cov: np.ndarray) -> tuple[float, float]:
    """Largest |estimate − truth| and 5 × its standard deviation, cell by cell (max ratio)."""
    sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    err = np.abs(np.ravel(estimate) - np.ravel(truth))
    k = int(np.argmax(err / sd))
    return float(err[k]), float(5 * sd[k])
