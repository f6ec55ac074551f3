"""Budgets: ε per respondent as the input, and the main paper's budget-equivalent matrices (6.3).

**ε per respondent.**  Every protocol takes ``epsilon``, the budget of one respondent: pure
ε-LDP for the whole record, sequential composition over everything the respondent releases
(a dependence phase included).  The plan that meets it is fixed before any data is seen
(:func:`keep_for_budget`, :func:`attribute_matrices` with ``epsilon``): the ledger of every party
then totals at most ``epsilon`` whatever the data.  The papers' per-attribute parameters stay
for the reproductions under names that say so: ``p`` (keep probability, 6.3.1) and
``epsilon_per_attribute`` (generalized RR with that ε on each attribute).

Main paper 6.3.1 (RR-Independent): attribute ``A`` is randomized by "keep the true value with
probability p, otherwise report a uniform draw over the support" (the randomization of
Corollary 1), i.e. :func:`mprr.matrices.keep_or_uniform` with diagonal ``p + (1 - p)/|A|`` and
off-diagonal ``(1 - p)/|A|``.  Its ε (eq. 4) is computed from the matrix:
``ε_A = ln(1 + p|A|/(1 - p))``.  (The paper prints diagonal ``p`` and
``ε_A = |ln(p |A| / (1 - p))|``; those rows do not sum to 1 — see docs/architecture.md, "6.3.1 keep-or-uniform".)

Main paper 6.3.2 (RR-Clusters / RR-Joint): cluster ``C`` is randomized with the ε-optimal
matrix over the product domain of its attributes carrying ``Σ_{A∈C} ε_A``
(:func:`mprr.matrices.cluster_optimal`), so that RR-Clusters and RR-Independent spend the same
budget.  (The printed ``p_C = 1/(1 + (1 − Π|A|) e^{−Σε})`` has a sign slip; rows sum to 1 with
``Π|A| − 1``.)

Main paper 4.3: the matrix of an attribute pair ``P^{ij}`` is the ε-optimal matrix over the
pair's product domain with ``ε_i + ε_j`` (or a given ``ε_pair``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from mprr.errors import ConfigurationError
from mprr.domain import check_epsilon, check_unit
from mprr.matrices import RandomizationMatrix, grr, keep_or_uniform
from mprr.protocols.release import Matrix
from mprr.protocols.steps import MatrixSpec

__all__ = [
    "BUDGET_CHOICES",
    "attribute_matrices",
    "chosen_specs",
    "per_attribute",
    "keep_epsilon",
    "keep_for_budget",
    "attribute_specs",
    "attribute_family",
    "CLUSTER_FAMILY",
    "attribute_epsilons",
    "cluster_spec",
    "pair_spec",
]


BUDGET_CHOICES: tuple[str, ...] = ("p", "epsilon_per_attribute", "epsilon", "matrices")
"""The ways to choose per-attribute matrices (exactly one per call)."""


def per_attribute(value: float | Sequence[float], m: int, name: str) -> list[float]:
    """A per-attribute value (:class:`mprr.parameters.PerAttribute`) for each of ``m`` attributes: a
    scalar repeated, or a sequence of exactly ``m`` values (ConfigurationError naming ``name`` otherwise)."""
    if isinstance(value, (str, bytes)):
        raise ConfigurationError(f"{name} must be a number or a sequence of {m} numbers, got {value!r}")
    if isinstance(value, Sequence) or isinstance(value, np.ndarray):
        values = list(value)
        if len(values) != m:
            raise ConfigurationError(
                f"{name} must give one value per attribute ({m}), got {len(values)} values"
            )
        return values
    return [value] * m


def keep_epsilon(size: int, p: float) -> float:
    """ε of ``keep_or_uniform(size, p)`` (main paper 6.3.1, eq. 4): ``ln(1 + p·size/(1 − p))``."""
    return math.log1p(p * size / (1.0 - p))


def keep_for_budget(sizes: Sequence[int], epsilon: float) -> float:
    """The keep probability p of main paper 6.3.1 whose attribute matrices spend ``epsilon`` in all.

    Solves ``Σ_A ln(1 + p|A|/(1 − p)) = ε`` for p in (0, 1) (the left side increases with p
    from 0 to ∞; bisection to machine precision).  One p for every attribute is the paper's
    design: an attribute with more categories gets a larger share ε_A of the budget, which
    estimates the joint better than an equal split ε/m (``docs/utility.md``).  Depends on the
    sizes and ε only, never on the data.
    """
    return _keep_for_budget(tuple(int(k) for k in sizes), check_epsilon(epsilon))


@functools.lru_cache(maxsize=64)
def _keep_for_budget(sz: tuple[int, ...], total: float) -> float:
    """:func:`keep_for_budget` of validated arguments (a pure function of them, so remembered)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if math.fsum(keep_epsilon(k, mid) for k in sz) < total:
            lo = mid
        else:
            hi = mid
    return lo


def attribute_matrices(
    sizes: Sequence[int],
    *,
    p: float | Sequence[float] | None = None,
    epsilon_per_attribute: float | Sequence[float] | None = None,
    epsilon: float | None = None,
    matrices: Sequence[RandomizationMatrix] | None = None,
) -> tuple[RandomizationMatrix, ...]:
    """Per-attribute randomization matrices: exactly one of ``p``, ``epsilon_per_attribute``,
    ``epsilon``, ``matrices``.

    Parameters
    ----------
    sizes
        Category count of every attribute, in schema order.
    p
        Keep probability (main paper 6.3.1 / Corollary 1): ``keep_or_uniform(|A|, p)``; a
        scalar for every attribute or one value per attribute, each in (0, 1).
    epsilon_per_attribute
        ε of each attribute (the papers' setting): ``grr(|A|, ε)`` (scalar or sequence).
    epsilon
        ε per respondent for all m attributes together: the paper's ``keep_or_uniform(|A|, p)``
        with the one p that spends ``epsilon`` in all (:func:`keep_for_budget`; sequential
        composition over the m releases).
    matrices
        Explicit matrices, one per attribute, of sizes ``sizes``.

    Returns
    -------
    tuple of RandomizationMatrix
        One matrix per attribute.

    Raises
    ------
    ConfigurationError
        Not exactly one choice, wrong lengths, p outside (0, 1), ε not finite > 0, or a
        matrix of the wrong size.
    """
    sizes = tuple(int(s) for s in sizes)
    m = len(sizes)
    given = [name for name, v in (("p", p), ("epsilon_per_attribute", epsilon_per_attribute),
                                  ("epsilon", epsilon), ("matrices", matrices)) if v is not None]
    if len(given) != 1:
        raise ConfigurationError(
            "give exactly one of p, epsilon_per_attribute, epsilon (per respondent) or matrices for the "
            f"attribute matrices, got {given or 'none'}"
        )
    if p is not None:
        ps = [check_unit("p", v, low_open=True, high_open=True, why=" (p = 0 is singular, p = 1 has ε = ∞)")
              for v in per_attribute(p, m, "p")]
        return tuple(keep_or_uniform(k, pk) for k, pk in zip(sizes, ps))
    if epsilon_per_attribute is not None:
        eps = [check_epsilon(v, "epsilon_per_attribute")
               for v in per_attribute(epsilon_per_attribute, m, "epsilon_per_attribute")]
        return tuple(grr(k, e) for k, e in zip(sizes, eps))
    if epsilon is not None:
        if isinstance(epsilon, Sequence) or isinstance(epsilon, np.ndarray):
            raise ConfigurationError(
                f"epsilon is the budget of one respondent (one number); got {epsilon!r}: for one ε per "
                "attribute use epsilon_per_attribute"
            )
        p_all = keep_for_budget(sizes, epsilon)
        return tuple(keep_or_uniform(k, p_all) for k in sizes)
    mats = tuple(matrices or ())
    if len(mats) != m:
        raise ConfigurationError(f"matrices must give one matrix per attribute ({m}), got {len(mats)}")
    for j, (k, mat) in enumerate(zip(sizes, mats)):
        if not isinstance(mat, RandomizationMatrix):
            raise ConfigurationError(
                f"matrices[{j}] must be a RandomizationMatrix, got {type(mat).__name__}"
            )
        if mat.size != k:
            raise ConfigurationError(
                f"matrices[{j}] must be {k}x{k} for attribute {j} with {k} categories, got size {mat.size}"
            )
    return mats


def attribute_specs(
    sizes: Sequence[int],
    *,
    p: float | Sequence[float] | None = None,
    epsilon_per_attribute: float | Sequence[float] | None = None,
    epsilon: float | None = None,
    matrices: Sequence[RandomizationMatrix] | None = None,
) -> tuple[tuple[MatrixSpec, ...], tuple[RandomizationMatrix, ...]]:
    """Per-attribute matrix specifications and the matrices they give.

    Validates exactly as :func:`attribute_matrices` (same errors), then describes each matrix:
    ``keep-or-uniform(p_j)`` (main paper 6.3.1), ``grr(ε_j)`` or the explicit matrix
    (``dense``), so every driver rebuilds the very same matrices.
    """
    mats = attribute_matrices(sizes, p=p, epsilon_per_attribute=epsilon_per_attribute, epsilon=epsilon,
                              matrices=matrices)
    m = len(mats)
    if p is not None:
        specs = tuple(MatrixSpec.keep_or_uniform(float(v)) for v in per_attribute(p, m, "p"))
    elif epsilon_per_attribute is not None:
        specs = tuple(MatrixSpec.grr(float(v))
                      for v in per_attribute(epsilon_per_attribute, m, "epsilon_per_attribute"))
    elif epsilon is not None:
        specs = (MatrixSpec.keep_or_uniform(keep_for_budget(sizes, epsilon)),) * m
    else:
        specs = tuple(MatrixSpec.dense(mat) for mat in mats)
    return specs, mats


def chosen_specs(
    sizes: Sequence[int],
    *,
    p: float | Sequence[float] | None = None,
    epsilon_per_attribute: float | Sequence[float] | None = None,
    epsilon: float | None = None,
    matrices: Sequence[RandomizationMatrix] | None = None,
) -> tuple[tuple[MatrixSpec, ...], tuple[Matrix, ...]]:
    """Each attribute's matrix spec and the matrix it builds, from a choice its parameter object
    validated (:class:`~mprr.protocols.parameters.MatrixChoice`: exactly one given, every value in
    range): what the step programs call.  ``keep-or-uniform(p_j)`` (main paper 6.3.1),
    ``grr(ε_j)``, ``keep-or-uniform`` with the one p that spends ``epsilon`` over the attributes
    (:func:`keep_for_budget`), or the explicit matrices (checked against ``sizes``,
    :func:`attribute_specs`).  :func:`attribute_specs` is the same for values not checked yet.

    Raises
    ------
    ConfigurationError
        If a per-attribute list does not give one value for each of the ``len(sizes)``
        attributes (the one rule that needs the attributes), or explicit matrices do not fit them.
    """
    m = len(sizes)
    if matrices is not None:
        return attribute_specs(sizes, matrices=matrices)
    if p is not None:
        specs = tuple(MatrixSpec.keep_or_uniform(v) for v in per_attribute(p, m, "p"))
    elif epsilon_per_attribute is not None:
        specs = tuple(MatrixSpec.grr(v) for v in per_attribute(epsilon_per_attribute, m, "epsilon_per_attribute"))
    else:
        assert epsilon is not None  # (exactly one choice: the parameter object's rule)
        specs = (MatrixSpec.keep_or_uniform(_keep_for_budget(tuple(int(k) for k in sizes), float(epsilon))),) * m
    return specs, tuple(spec.build([k]) for spec, k in zip(specs, sizes))


def attribute_family(
    *,
    p: object = None,
    epsilon_per_attribute: object = None,
    epsilon: object = None,
    matrices: object = None,
) -> str | None:
    """The matrix family :func:`attribute_specs` describes the attribute matrices with, from
    which option is given (a plan's families; the values are checked where the matrices are
    built): ``keep-or-uniform`` for ``p`` or ``epsilon``, ``grr`` for ``epsilon_per_attribute``,
    ``dense`` for explicit ``matrices``; ``None`` when none is given."""
    if p is not None:
        return "keep-or-uniform"
    if epsilon_per_attribute is not None:
        return "grr"
    if epsilon is not None:
        return "keep-or-uniform"
    return "dense" if matrices is not None else None


CLUSTER_FAMILY = "cluster-optimal"
"""The family of a cluster's and of a pair's matrix (:func:`cluster_spec`, :func:`pair_spec`;
main paper 6.3.2)."""


def cluster_spec(epsilons: Sequence[float]) -> MatrixSpec:
    """Main paper 6.3.2 matrix of a cluster as a spec: ε-optimal over Π|A| cells,
    ε = Σ_{A∈C} ε_A (each ε_A finite and > 0: an attribute left unrandomized cannot be budgeted)."""
    return MatrixSpec.cluster_optimal(sum(check_epsilon(e, "cluster attribute epsilon") for e in epsilons))


def pair_spec(epsilons: tuple[float, float], epsilon_pair: float | None = None) -> MatrixSpec:
    """Main paper 4.3 matrix ``P^{ij}`` of a pair as a spec: ε-optimal over ``r_i r_j`` cells, ε is
    ``epsilon_pair`` when given, else ``ε_i + ε_j`` (the budget of releasing both attributes once)."""
    if epsilon_pair is None:
        return cluster_spec(epsilons)  # a pair is a cluster of two attributes
    return MatrixSpec.cluster_optimal(check_epsilon(epsilon_pair, "pair_epsilon"))


def attribute_epsilons(matrices: Sequence[Matrix]) -> tuple[float, ...]:
    """ε of each matrix (main paper eq. 4), computed from the matrix itself."""
    return tuple(float(mat.epsilon) for mat in matrices)
