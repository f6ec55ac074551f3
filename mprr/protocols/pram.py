"""PRAM: post-randomization by a trusted curator (concise-theory paper, Section 4).

The curator holds the true data set and post-randomizes every record (the cross-classification
of all the data set's attributes; select attributes with ``Dataset.select`` first) through a
matrix, independently of the other records.

- **Fixed matrix** ``P``: mathematically RR; the unbiased estimator is eq. (2)
  ``π̂ = (Pᵀ)⁻¹ S/n`` (concise paper 3.1, main paper eq. 2), post-processed.
- **Invariant PRAM** (Gouweleeuw et al. 1998): ``P`` is built from the data so that the
  expected randomized frequencies equal the original ones.  In this package's row convention
  (``P[u, v] = Pr(Y = v | X = u)``) the invariance (concise paper eq. 4.1, written there for
  the column-stochastic transpose) reads ``Pᵀ T = T``.  Then ``Π̂_* = S/n`` (the frequencies of
  the released data) is unbiased and needs neither P nor its inverse; its conditional
  variance given T and P is eq. (4.4):
  ``V(Π̂_* | T, P) = (1/n) [D_{Π̂_0} − Σ_i (T_i/n) P_i P_iᵀ]`` with ``P_i`` row i of P.

Two invariant constructions are offered:

``"two-stage"`` (Gouweleeuw et al.)
    From a base matrix R and the frequencies t: λ = Rᵀt, the Bayes-reversed matrix
    ``Q[v, u] = R[u, v] t_u / λ_v``, and ``P = R Q``; then ``tᵀP = λᵀQ = tᵀ``.
``"mixture"``
    ``P = θ I + (1 − θ) 1 tᵀ``: keep the value with probability θ, else draw a value from the
    empirical distribution t; ``tᵀP = tᵀ``.

Privacy: the curator sees every true record (an exact release to the curator, ε = ∞ with
respect to it); the published data carry the PRAM matrix's ε (eq. 4), which for an invariant
matrix depends on the data.  The ledger records both.
"""

from __future__ import annotations


import numpy as np

from mprr.data import Dataset
from mprr.distributions import DenseDistribution
from mprr.domain import check_int, check_unit, encode_joint, tally
from mprr.errors import ConfigurationError
from mprr.privacy.release import Release, json_number
from mprr.matrices import RandomizationMatrix
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess, dense_estimate
from mprr.protocols.joint import DEFAULT_JOINT_MAX_CELLS, check_dense_matrix, check_joint_cells, check_joint_matrix
from mprr.protocols.release import check_inputs, release_units
from mprr.protocols.result import ProtocolResult, release_result
from mprr.streams import Randomness, draw_uniforms

__all__ = [
    "INVARIANT_METHODS",
    "invariant_two_stage",
    "invariant_mixture",
    "is_invariant",
    "pram_conditional_variance",
    "pram",
]

INVARIANT_METHODS: tuple[str, ...] = ("two-stage", "mixture")


def _frequencies(frequencies: np.ndarray) -> np.ndarray:
    t = np.asarray(frequencies, dtype=np.float64).reshape(-1)
    if t.size < 1 or not np.all(np.isfinite(t)) or t.min() < 0 or t.sum() <= 0:
        raise ConfigurationError("frequencies must be finite, non-negative counts or probabilities with a positive sum")
    frequencies_: np.ndarray = t / t.sum()
    return frequencies_


def invariant_two_stage(frequencies: np.ndarray, base: RandomizationMatrix) -> RandomizationMatrix:
    """Invariant PRAM matrix ``P = R Q`` of Gouweleeuw et al. (1998) from a base matrix ``R``.

    Parameters
    ----------
    frequencies
        Original counts T (or frequencies t), one per category of the domain.
    base
        Row-stochastic base matrix R of the same size.

    Returns
    -------
    RandomizationMatrix
        P with ``Pᵀ t = t`` (concise paper eq. 4.1 in the row convention).  Rows of the
        reverse matrix Q for values never reached (λ_v = 0) are the identity row.
    """
    t = _frequencies(frequencies)
    if not isinstance(base, RandomizationMatrix) or base.size != t.size:
        raise ConfigurationError(f"base must be a RandomizationMatrix of size {t.size}, got {base!r}")
    R = np.asarray(base.values)
    lam = R.T @ t
    with np.errstate(divide="ignore", invalid="ignore"):
        Q = np.where(lam[:, None] > 0, R.T * t[None, :] / lam[:, None], 0.0)
    Q[lam <= 0] = np.eye(t.size)[lam <= 0]
    P = R @ Q
    return RandomizationMatrix(P / P.sum(axis=1, keepdims=True))


def invariant_mixture(frequencies: np.ndarray, theta: float) -> RandomizationMatrix:
    """Invariant PRAM matrix ``θ I + (1 − θ) 1 tᵀ`` (keep w.p. θ, else draw from t).

    Satisfies concise paper eq. (4.1) in the row convention: ``Pᵀ t = θ t + (1 − θ) t = t``.
    """
    t = _frequencies(frequencies)
    theta = check_unit("theta", theta, high_open=True, why=" (theta = 1 releases the data unchanged)")
    P = theta * np.eye(t.size) + (1.0 - theta) * np.ones((t.size, 1)) * t[None, :]
    return RandomizationMatrix(P)


def is_invariant(P: RandomizationMatrix, frequencies: np.ndarray, *, atol: float = 1e-9) -> bool:
    """Whether ``Pᵀ t = t`` (concise paper eq. 4.1, row convention) within ``atol``."""
    t = _frequencies(frequencies)
    return bool(np.allclose(np.asarray(P.values).T @ t, t, atol=atol, rtol=0.0))


def pram_conditional_variance(P: RandomizationMatrix, counts: np.ndarray) -> np.ndarray:
    """Conditional covariance of ``Π̂_* = S/n`` given T and P (concise paper eq. 4.4).

    ``V = (1/n²) Σ_i T_i [D_{P_i} − P_i P_iᵀ] = (1/n) [D_{Π̂_0} − Σ_i (T_i/n) P_i P_iᵀ]`` with
    ``P_i`` the transition distribution of category i (row i here, column i in the paper);
    the second form holds for an invariant P (then Σ_i T_i P_i = T).  Computed with the first
    form, valid for any P.

    Parameters
    ----------
    P
        The PRAM matrix (k × k).
    counts
        Original counts T (k,).
    """
    if not isinstance(P, RandomizationMatrix):
        raise ConfigurationError(f"P must be a RandomizationMatrix, got {type(P).__name__}")
    T = np.asarray(counts, dtype=np.float64).reshape(-1)
    Pv = np.asarray(P.values)
    if T.shape != (Pv.shape[0],) or not np.all(np.isfinite(T)) or T.min() < 0:
        raise ConfigurationError(
            f"counts must be {Pv.shape[0]} finite non-negative counts, got {np.asarray(counts)!r}"
        )
    n = T.sum()
    if n <= 0:
        raise ConfigurationError("counts must have a positive total")
    mean = Pv.T @ T
    second = (Pv * T[:, None]).T @ Pv
    variance: np.ndarray = (np.diag(mean) - second) / (n * n)
    return variance


def pram(
    dataset: Dataset,
    *,
    matrix: RandomizationMatrix | None = None,
    invariant: str | None = None,
    theta: float | None = None,
    base: RandomizationMatrix | None = None,
    rng: Randomness,
    postprocess: str = DEFAULT_POSTPROCESS,
    max_cells: int = DEFAULT_JOINT_MAX_CELLS,
) -> ProtocolResult:
    """Post-randomize a whole data set as a trusted curator (concise-theory paper Section 4).

    Parameters
    ----------
    dataset
        The true data; its attributes are cross-classified into one variable (C order).
    matrix
        A fixed PRAM matrix over the joint domain (estimate: eq. 2 + post-processing).
    invariant
        ``"two-stage"`` (needs ``base``) or ``"mixture"`` (needs ``theta``): build an invariant
        matrix from the data (estimate: S/n, no post-processing needed).
    theta, base
        Parameters of the invariant constructions.
    rng
        ``numpy.random.Generator`` or :class:`mprr.streams.PartyStreams` (record i is
        randomized with the stream of party i).
    postprocess
        Post-processing of the eq. (2) estimate for a fixed matrix.
    max_cells
        Largest joint domain (the matrix is dense).

    Returns
    -------
    ProtocolResult
        ``estimate``: ``DenseDistribution``; phase ``"pram"``; ``details`` holds ``"matrix"``,
        ``"invariant"`` (whether ``Pᵀ T = T``), ``"variance"`` (eq. 4.4 conditional covariance of
        S/n) and ``"estimator"`` (``"S/n"`` or ``"eq. 2"``).

    Notes
    -----
    Draw order: 1 uniform per record (the curator uses record i's stream, so the same seed
    reproduces the release in either engine).
    """
    check_inputs(dataset, rng)
    sizes = dataset.sizes
    cells = check_joint_cells(sizes, check_int("max_cells", max_cells, 2), "PRAM")
    if invariant is not None and matrix is None:
        check_dense_matrix(cells, "invariant PRAM")  # the matrix is built here, dense
    joint = encode_joint(dataset.codes, sizes) if dataset.m > 1 else dataset.codes[:, 0]
    T = tally(joint, cells).astype(np.float64)
    if (matrix is None) == (invariant is None):
        raise ConfigurationError("give exactly one of matrix (fixed PRAM) or invariant ('two-stage' or 'mixture')")
    if invariant is not None:
        if invariant not in INVARIANT_METHODS:
            raise ConfigurationError(f"invariant must be one of {list(INVARIANT_METHODS)}, got {invariant!r}")
        if invariant == "two-stage":
            if base is None or theta is not None:
                raise ConfigurationError("invariant='two-stage' needs base (and no theta)")
            P = invariant_two_stage(T, base)
        else:
            if theta is None or base is not None:
                raise ConfigurationError("invariant='mixture' needs theta (and no base)")
            P = invariant_mixture(T, theta)
        method = "none"
    else:
        P = check_joint_matrix(matrix, cells)
        method = check_postprocess(postprocess)
    uniforms = draw_uniforms(rng, dataset.n, 1)
    unit = tuple(range(dataset.m))
    released = release_units("pram", dataset.codes, sizes, (unit,), (P,), uniforms)
    if invariant is not None:  # S/n, unbiased for an invariant matrix (concise paper 4)
        counts = released.counts[0]
        estimate = DenseDistribution(counts / counts.sum())
    else:
        estimate = dense_estimate(released, sizes, method)
    collection = Release.exact_values(dataset.schema.names, linkable=True, phase="collection")
    params = {
        "invariant": invariant,
        "theta": theta,
        "base": None if base is None else "given",
        "matrix": None if matrix is None else "given",
        "epsilon_of_matrix": json_number(P.epsilon),
    }
    details = {
        "matrix": P,
        "invariant": is_invariant(P, T),
        "variance": pram_conditional_variance(P, T),
        "estimator": "S/n" if invariant is not None else "eq. 2",
    }
    return release_result(
        "PRAM",
        n=dataset.n,
        parameters=params,
        schema=dataset.schema,
        estimate=estimate,
        releases=(released,),
        postprocessing=method,
        clusters=(unit,),
        ledger_prefix=(collection,),
        details=details,
    )
