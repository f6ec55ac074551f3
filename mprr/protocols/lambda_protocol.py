"""The λ-randomization protocol (lambda paper Section 5), fast path.

1. The controller chooses ``(λ_1, ..., λ_m)``, ``0 < λ_j ≤ 1`` (λ_j > 0 enforces a minimum of
   truthfulness).
2. It builds ``P(λ_j) = λ_j I + (1 − λ_j) J / r_j`` (lambda paper eq. 6).
3. **Entropy check**: it computes the entropy rates ``H(P(λ_j))`` and their sum, the entropy
   rate of the Kronecker product (Theorem 2) — the protection level of the data set.  If the
   level is unsatisfactory the λ's are re-generated; otherwise the Kronecker product is formed.
4. Each individual performs RR of her whole record with ``P(λ_1) ⊗ ... ⊗ P(λ_m)`` and
   publishes the randomized record.
5. The controller estimates the true joint distribution with eq. (2), using the exact inverse
   of the Kronecker product (Property 1 per factor, Property 2 for the product).

Here "unsatisfactory" is made explicit: optional bounds on the joint entropy in bits and/or on
β = H / log2(Π r_j); when they fail, ``regenerate(lambdas, check)`` proposes new λ's (e.g.
:func:`lambdas_for_entropy`), up to ``max_rounds`` checks; without ``regenerate`` the protocol
stops with a ConfigurationError stating the level reached and the level required.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mprr.data import Schema
from mprr.domain import check_cells
from mprr.errors import ConfigurationError
from mprr.matrices import check_int, check_unit, lambda_randomization
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess, dense_estimate
from mprr.protocols.ind_joint import DEFAULT_IND_JOINT_MAX_CELLS
from mprr.protocols.local import local_protocol
from mprr.protocols.release import ReleasedData
from mprr.protocols.result import ProtocolResult, release_result
from mprr.protocols.steps import MatrixSpec, Program, Release

__all__ = [
    "EntropyCheck",
    "lambda_protocol",
    "lambda_steps",
    "lambda_entropy_bits",
    "lambdas_for_entropy",
    "LambdaPlan",
    "lambda_plan",
    "assemble_lambda",
]


@dataclass(frozen=True)
class EntropyCheck:
    """One evaluation of step 3 of the λ-randomization protocol.

    Attributes
    ----------
    round
        1 for the controller's first choice, then one more per re-generation.
    lambdas
        The λ's checked.
    entropy_bits
        H(P(λ_j)) of every attribute, in bits.
    total_bits
        Σ_j H(P(λ_j)) = H(P(λ_1) ⊗ ... ⊗ P(λ_m)) (lambda paper Theorem 2).
    max_bits
        log2 Π r_j, the entropy of perfect secrecy.
    beta
        ``total_bits / max_bits`` (bistochastic privacy level of the joint).
    accepted
        Whether the level met the requested bounds.
    """

    round: int
    lambdas: tuple[float, ...]
    entropy_bits: tuple[float, ...]
    total_bits: float
    max_bits: float
    beta: float
    accepted: bool


def lambda_entropy_bits(r: int, lam: float) -> float:
    """Entropy rate in bits of ``λ I + (1 − λ) J / r`` (lambda paper eq. (6) matrix; every row
    has the same entropy, so H(P) of bistochastic paper eq. (4) is one row's entropy).

    Raises
    ------
    ConfigurationError
        If ``r`` is not an integer >= 1 or ``lam`` is not a real number in [0, 1] (outside it
        the matrix has negative entries and is not a randomization matrix).
    """
    r = check_int("r", r, 1)
    lam = check_unit("lam", lam)
    off = (1.0 - lam) / r
    diag = lam + off
    h = -diag * math.log2(diag) if diag > 0 else 0.0
    if off > 0:
        h -= (r - 1) * off * math.log2(off)
    return max(0.0, h)  # λ = 1: -1·log2(1) is -0.0


def lambdas_for_entropy(sizes: Sequence[int], bits: float, *, tol: float = 1e-12) -> tuple[float, ...]:
    """One common λ for every attribute giving a joint entropy rate of ``bits`` (bisection).

    A re-generation rule for step 3 of the lambda paper's Section 5 protocol, using Theorem 2
    (the joint entropy rate is the sum of the attributes').

    The entropy rate of ``P(λ)`` decreases from log2 r (λ → 0) to 0 (λ = 1), so the sum over
    attributes reaches any ``bits`` in ``[0, Σ log2 r_j)``.  A ready-made re-generation rule
    for step 3: ``regenerate=lambda lams, check: lambdas_for_entropy(sizes, target)``.

    Raises
    ------
    ConfigurationError
        If ``bits`` is outside ``[0, Σ log2 r_j)``.
    """
    sizes = [int(s) for s in sizes]
    top = sum(math.log2(r) for r in sizes)
    if not (isinstance(bits, (int, float)) and 0.0 <= bits < top):
        raise ConfigurationError(f"bits must be in [0, {top:.6g}) for sizes {sizes}, got {bits!r}")

    def total(lam: float) -> float:
        """Σ_j H(P(λ)) (Theorem 2)."""
        return sum(lambda_entropy_bits(r, lam) for r in sizes)

    lo, hi = 0.0, 1.0  # total(lo) > bits >= total(hi)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if total(mid) > bits:
            lo = mid
        else:
            hi = mid
    return (hi,) * len(sizes)


def _check_lambdas(lambdas: Sequence[float], m: int) -> tuple[float, ...]:
    try:
        lams = tuple(float(x) for x in lambdas)
    except (TypeError, ValueError):
        raise ConfigurationError(f"lambdas must be a sequence of {m} numbers in (0, 1], got {lambdas!r}") from None
    if len(lams) != m or not all(0.0 < x <= 1.0 for x in lams):
        raise ConfigurationError(f"lambdas must be {m} numbers in (0, 1] (one per attribute), got {lambdas!r}")
    return lams


def _check(
    round_: int,
    lams: tuple[float, ...],
    sizes: Sequence[int],
    bounds: dict[str, float | None],
) -> EntropyCheck:
    bits = tuple(lambda_entropy_bits(r, lam) for r, lam in zip(sizes, lams))
    total = math.fsum(bits)
    top = math.fsum(math.log2(r) for r in sizes)
    beta = total / top if top > 0 else 0.0
    ok = True
    if bounds["min_bits"] is not None and total < bounds["min_bits"]:
        ok = False
    if bounds["max_bits"] is not None and total > bounds["max_bits"]:
        ok = False
    if bounds["min_beta"] is not None and beta < bounds["min_beta"]:
        ok = False
    if bounds["max_beta"] is not None and beta > bounds["max_beta"]:
        ok = False
    return EntropyCheck(round_, lams, bits, total, top, beta, ok)


@dataclass(frozen=True)
class LambdaPlan:
    """Outcome of steps 1-3 of the λ protocol (see :func:`lambda_plan`).

    Attributes
    ----------
    checks
        Every :class:`EntropyCheck`, the last one accepted.
    bounds
        ``{"min_bits": ..., "max_bits": ..., "min_beta": ..., "max_beta": ...}`` as given.
    max_cells
        Largest joint domain estimated.
    """

    checks: tuple[EntropyCheck, ...]
    bounds: dict[str, float | None]
    max_cells: int

    @property
    def lambdas(self) -> tuple[float, ...]:
        """The accepted λ's (the last check's)."""
        return self.checks[-1].lambdas


def lambda_plan(
    sizes: Sequence[int],
    lambdas: Sequence[float],
    *,
    min_bits: float | None,
    max_bits: float | None,
    min_beta: float | None,
    max_beta: float | None,
    regenerate: Callable[[tuple[float, ...], EntropyCheck], Sequence[float]] | None,
    max_rounds: int,
    max_cells: int,
) -> LambdaPlan:
    """Steps 1-3 of the λ protocol (lambda paper Section 5): validation and entropy checks.

    Checks the joint domain against ``max_cells``, ``max_rounds`` and the bounds, then
    evaluates the protection level of ``lambdas`` (Theorem 2) and, while it is
    unsatisfactory, of ``regenerate``'s proposals, before anything is released.

    Returns
    -------
    LambdaPlan
        Every check (the last one accepted), the bounds and ``max_cells``.

    Raises
    ------
    ConfigurationError
        For invalid parameters, or when the level stays unsatisfactory (no ``regenerate``, or
        ``max_rounds`` reached).
    DomainTooLargeError
        If the joint domain exceeds ``max_cells``.
    """
    m = len(sizes)
    check_cells(math.prod(sizes), max_cells, "λ-randomization's estimate of the full joint")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ConfigurationError(f"max_rounds must be an integer >= 1, got {max_rounds!r}")
    bounds = {"min_bits": min_bits, "max_bits": max_bits, "min_beta": min_beta, "max_beta": max_beta}
    for name, value in bounds.items():  # a NaN bound would silently accept every level
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            raise ConfigurationError(f"{name} must be a finite number or None, got {value!r}")
    lams = _check_lambdas(lambdas, m)
    checks = [_check(1, lams, sizes, bounds)]
    while not checks[-1].accepted:
        last = checks[-1]
        wanted = ", ".join(f"{k}={v}" for k, v in bounds.items() if v is not None)
        if regenerate is None or len(checks) >= max_rounds:
            raise ConfigurationError(
                f"entropy check failed after {len(checks)} round(s): lambdas {last.lambdas} give "
                f"{last.total_bits:.6g} bits (beta {last.beta:.4g}), required {wanted}"
            )
        lams = _check_lambdas(regenerate(last.lambdas, last), m)
        checks.append(_check(len(checks) + 1, lams, sizes, bounds))
    return LambdaPlan(tuple(checks), bounds, max_cells)


def assemble_lambda(
    schema: Schema, released: ReleasedData, plan: LambdaPlan, *, n: int, method: str
) -> ProtocolResult:
    """The λ-randomization result from its ``"record"`` release (lambda paper Section 5 step 5).

    Eq. (2) with the exact inverse of the Kronecker matrix (Property 1 per factor, Property 2
    for the product) and ``method`` (``"none"``: raw estimate, negative entries allowed).
    """
    K = released.matrices[0]
    params = {
        "lambdas": list(plan.lambdas),
        "initial_lambdas": list(plan.checks[0].lambdas),
        **plan.bounds,
        "max_cells": plan.max_cells,
    }
    return release_result(
        "lambda-randomization",
        n=n,
        parameters=params,
        schema=schema,
        estimate=dense_estimate(released, schema.sizes, method),
        releases=(released,),
        postprocessing=method,
        clusters=released.units,
        details={"entropy_checks": plan.checks, "kronecker": K},
    )


def lambda_steps(
    schema: Schema,
    lambdas: Sequence[float],
    *,
    min_bits: float | None = None,
    max_bits: float | None = None,
    min_beta: float | None = None,
    max_beta: float | None = None,
    regenerate: Callable[[tuple[float, ...], EntropyCheck], Sequence[float]] | None = None,
    max_rounds: int = 20,
    postprocess: str = DEFAULT_POSTPROCESS,
    max_cells: int = DEFAULT_IND_JOINT_MAX_CELLS,
) -> Program:
    """The λ-randomization protocol (lambda paper Section 5) as a step program.

    Steps 1-3 (λ, matrices, entropy check with re-generation) run before any release; step 4
    is one release (phase ``"record"``, one unit through ``P(λ_1) ⊗ ... ⊗ P(λ_m)``, one
    uniform); step 5 estimates with the Kronecker inverse.

    Parameters
    ----------
    schema
        The attributes every party holds (all the program knows of the data before it runs).
    lambdas
        The controller's first choice, one λ_j in (0, 1] per attribute.
    min_bits, max_bits, min_beta, max_beta
        Step 3 protection level: bounds on the joint entropy rate (bits) and on β; a level
        outside any given bound is unsatisfactory.  None given: every level is accepted.
    regenerate
        ``regenerate(lambdas, check) -> new lambdas`` called after each unsatisfactory check.
    max_rounds
        Largest number of checks (first choice included).
    postprocess
        ``"clip-rescale"`` (default), ``"project-simplex"``, ``"ibu"`` or ``"none"`` (raw eq. 2).
    max_cells
        Largest joint domain estimated (checked before anything is drawn).

    Returns
    -------
    ProtocolResult
        ``estimate``: ``DenseDistribution`` of the full joint; phase ``"record"`` with one unit
        (all attributes) and the ``KroneckerMatrix``; ``details["entropy_checks"]`` lists every
        :class:`EntropyCheck` (the last one accepted).

    Raises
    ------
    ConfigurationError
        If the level stays unsatisfactory (no ``regenerate``, or ``max_rounds`` reached).
    DomainTooLargeError
        If the joint domain exceeds ``max_cells``.

    Notes
    -----
    Draw order (per party): 1 uniform — the record released through the Kronecker row by
    inverse-CDF, factor by factor (:func:`mprr.randomize.randomize_joint`).
    """
    method = check_postprocess(postprocess)
    plan = lambda_plan(
        schema.sizes,
        lambdas,
        min_bits=min_bits,
        max_bits=max_bits,
        min_beta=min_beta,
        max_beta=max_beta,
        regenerate=regenerate,
        max_rounds=max_rounds,
        max_cells=max_cells,
    )
    spec = MatrixSpec.lambda_kron(plan.lambdas)
    got = yield Release("record", (tuple(range(schema.m)),), (spec,), notes={"entropy checks": plan.checks})
    return assemble_lambda(schema, got.data, plan, n=got.n, method=method)


lambda_protocol = local_protocol(lambda_steps, "lambda_protocol")
