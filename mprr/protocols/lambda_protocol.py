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
from collections.abc import Sequence
from dataclasses import dataclass

from mprr.data import Schema
from mprr.domain import check_cells, check_int, check_unit
from mprr.errors import ConfigurationError
from mprr.protocols.budget import keep_for_budget
from mprr.protocols.estimate import dense_estimate
from mprr.protocols.local import local_protocol
from mprr.protocols.plan import Plan, PhasePlan, declares
from mprr.protocols.result import release_result
from mprr.protocols.parameters import LambdaParameters
from mprr.protocols.steps import MatrixSpec, Program, Release

__all__ = [
    "EntropyCheck",
    "lambda_protocol",
    "lambda_steps",
    "lambda_entropy_bits",
    "lambdas_for_entropy",
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
    level = {"bits": total, "beta": beta}  # bounds are named min_bits, max_bits, min_beta, max_beta
    ok = all(bound is None or (level[name[4:]] >= bound if name.startswith("min") else level[name[4:]] <= bound)
             for name, bound in bounds.items())
    return EntropyCheck(round_, lams, bits, total, top, beta, ok)


def lambda_plan(schema: Schema, params: LambdaParameters) -> Plan:
    """The plan of :func:`lambda_steps`: one release ``"record"`` of one unit, every attribute
    (the entropy check and its re-generation run before it, on the controller)."""
    return Plan((PhasePlan.release("record", (tuple(range(schema.m)),)),))


@declares(lambda_plan)
def lambda_steps(schema: Schema, params: LambdaParameters) -> Program:
    """The λ-randomization protocol (lambda paper Section 5) as a step program.

    Steps 1-3 (λ, matrices, entropy check with re-generation) run before any release; step 4
    is one release (phase ``"record"``, one unit through ``P(λ_1) ⊗ ... ⊗ P(λ_m)``, one
    uniform); step 5 estimates with the Kronecker inverse.

    Parameters
    ----------
    schema
        The attributes every party holds (all the program knows of the data before it runs).
    params
        The :class:`~mprr.protocols.parameters.LambdaParameters`, validated when they were built:

        - ``lambdas``: the controller's first choice, one λ_j in (0, 1] per attribute (the
          lambda paper's input; their count is checked here against the schema);
        - ``epsilon``: instead of ``lambdas``, ε per respondent.  ``P(λ) = λI + (1 − λ)J/r`` is
          the main paper's ``keep_or_uniform(r, λ)``, so one λ for every attribute with
          ``Σ_j ln(1 + λ r_j/(1 − λ)) = ε`` (:func:`mprr.protocols.budget.keep_for_budget`)
          spends exactly ε (the Kronecker product's ε is the sum of its factors');
        - ``min_bits``, ``max_bits``, ``min_beta``, ``max_beta``: step 3 protection level, bounds
          on the joint entropy rate (bits) and on β; a level outside any given bound is
          unsatisfactory.  None given: every level is accepted;
        - ``regenerate``: ``regenerate(lambdas, check) -> new lambdas`` called after each
          unsatisfactory check; ``max_rounds``: largest number of checks (first choice included);
        - ``postprocess``: ``"clip-rescale"`` (default), ``"project-simplex"``, ``"ibu"`` or
          ``"none"`` (raw eq. 2); ``max_cells``: largest joint domain estimated (checked before
          anything is drawn).

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
    method, regenerate, max_rounds = params.postprocess, params.regenerate, params.max_rounds
    sizes = schema.sizes
    check_cells(math.prod(sizes), params.max_cells, "λ-randomization's estimate of the full joint")
    bounds = {"min_bits": params.min_bits, "max_bits": params.max_bits, "min_beta": params.min_beta,
              "max_beta": params.max_beta}
    lambdas = params.lambdas if params.epsilon is None else (keep_for_budget(sizes, params.epsilon),) * schema.m
    assert lambdas is not None
    checks = [_check(1, _check_lambdas(lambdas, schema.m), sizes, bounds)]
    while not checks[-1].accepted:  # step 3: re-generate while the level is unsatisfactory
        last = checks[-1]
        wanted = ", ".join(f"{k}={v}" for k, v in bounds.items() if v is not None)
        if regenerate is None or len(checks) >= max_rounds:
            raise ConfigurationError(
                f"entropy check failed after {len(checks)} round(s): lambdas {last.lambdas} give "
                f"{last.total_bits:.6g} bits (beta {last.beta:.4g}), required {wanted}"
            )
        checks.append(_check(len(checks) + 1, _check_lambdas(regenerate(last.lambdas, last), schema.m), sizes, bounds))
    lams = checks[-1].lambdas
    got = yield Release("record", (tuple(range(schema.m)),), (MatrixSpec.lambda_kron(lams),),
                        notes={"entropy checks": tuple(checks)})
    out = {"lambdas": list(lams), "initial_lambdas": list(checks[0].lambdas), "epsilon": params.epsilon, **bounds,
           "max_cells": params.max_cells}
    return release_result(
        "lambda-randomization", n=got.n, parameters=out, schema=schema,
        estimate=dense_estimate(got.data, sizes, method), releases=(got.data,), postprocessing=method,
        clusters=got.data.units, details={"entropy_checks": tuple(checks), "kronecker": got.data.matrices[0]},
    )


lambda_protocol = local_protocol(lambda_steps, "lambda_protocol", LambdaParameters, positional=("lambdas",))
