"""Choreographies of the one-phase protocols: RR-Independent, RR-Joint, RR-Ind-Joint, λ.

Each is the controller's side of the protocol as an ``async`` function of a
:class:`~parties.controller.Controller`; the parties' side is always the same
(:class:`~parties.party.Party` answering release requests).  The controller computes its
estimates with the same :mod:`mprr` functions as the fast path (:mod:`mprr.protocols`), on
the codes it received, so the same seed gives the same :class:`ProtocolResult`.

Message flow (n parties, m attributes; one request broadcast + one reply per party):

- RR-Independent (main paper Protocol 1) / RR-Ind-Joint: phase ``"attributes"``, m units
  (one per attribute, schema order), reply of m codes;
- RR-Joint (Protocol 2): phase ``"joint"``, one unit (the whole record), reply of 1 code;
- λ-randomization (lambda paper Section 5): the controller runs the entropy check (step 3)
  locally, then phase ``"record"``: one unit through ``P(λ_1) ⊗ ... ⊗ P(λ_m)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from mprr.distributions import DenseDistribution, ProductDistribution, check_axes
from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.ledger import Ledger
from mprr.matrices import RandomizationMatrix
from mprr.protocols.budget import attribute_epsilons, attribute_matrices, check_epsilon
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess, estimate_unit, product_estimate
from mprr.protocols.ind_joint import DEFAULT_IND_JOINT_MAX_CELLS, ind_joint_estimate
from mprr.protocols.independent import matrix_parameters
from mprr.protocols.joint import DEFAULT_JOINT_MAX_CELLS, check_joint_cells
from mprr.protocols.lambda_protocol import EntropyCheck, lambda_entropy_bits
from mprr.protocols.result import ProtocolResult
from parties.choreographies.common import attribute_specs, singletons
from parties.controller import Controller
from parties.protocol_messages import MatrixSpec

__all__ = ["rr_independent", "rr_joint", "rr_ind_joint", "lambda_randomization"]


async def rr_independent(
    ctl: Controller,
    *,
    p: float | Sequence[float] | None = None,
    epsilon: float | Sequence[float] | None = None,
    matrices: Sequence[RandomizationMatrix] | None = None,
    postprocess: str = DEFAULT_POSTPROCESS,
) -> ProtocolResult:
    """RR-Independent (main paper Protocol 1): parameters as :func:`mprr.protocols.rr_independent`."""
    method = check_postprocess(postprocess)
    schema = ctl.schema
    sizes = schema.sizes
    specs, mats = attribute_specs(sizes, p=p, epsilon=epsilon, matrices=matrices)
    units = singletons(schema.m)
    phase = await ctl.release("attributes", units, specs)
    released = phase.released_data(schema)
    estimate = product_estimate(released, sizes, method)
    ctl.note("attribute estimates", estimate)
    params = {
        "n": len(phase.contributors),
        "m": schema.m,
        "sizes": list(sizes),
        **matrix_parameters(p, epsilon, matrices),
        "attribute_epsilons": list(attribute_epsilons(mats)),
    }
    return ProtocolResult(
        protocol="RR-Independent",
        parameters=params,
        schema=schema,
        estimate=estimate,
        releases=(released,),
        ledger=Ledger(released.ledger_entries(schema.names)),
        postprocessing=method,
        clusters=units,
    )


async def rr_joint(
    ctl: Controller,
    *,
    p: float | Sequence[float] | None = None,
    epsilon: float | None = None,
    matrix: RandomizationMatrix | None = None,
    postprocess: str = DEFAULT_POSTPROCESS,
    max_cells: int = DEFAULT_JOINT_MAX_CELLS,
) -> ProtocolResult:
    """RR-Joint (main paper Protocol 2): parameters as :func:`mprr.protocols.rr_joint`."""
    method = check_postprocess(postprocess)
    schema = ctl.schema
    sizes = schema.sizes
    cells = check_joint_cells(sizes, max_cells, "RR-Joint")
    given = [k for k, v in (("p", p), ("epsilon", epsilon), ("matrix", matrix)) if v is not None]
    if len(given) != 1:
        raise ConfigurationError(f"give exactly one of p, epsilon or matrix, got {given or 'none'}")
    attr_eps: list[float] | None = None
    if matrix is not None:
        if not isinstance(matrix, RandomizationMatrix) or matrix.size != cells:
            raise ConfigurationError(
                f"matrix must be a RandomizationMatrix over the {cells} joint cells, got {matrix!r}"
            )
        spec = MatrixSpec.dense(matrix)
    elif epsilon is not None:
        spec = MatrixSpec.cluster_optimal(check_epsilon(epsilon))
    else:
        attr_eps = list(attribute_epsilons(attribute_matrices(sizes, p=p)))
        spec = MatrixSpec.cluster_optimal(sum(attr_eps))
    unit = tuple(range(schema.m))
    phase = await ctl.release("joint", (unit,), (spec,))
    released = phase.released_data(schema)
    P = phase.matrices[0]
    tensor = estimate_unit(P, released.counts[0], method).reshape(sizes)
    estimate = DenseDistribution(tensor, allow_negative=(method == "none"))
    ctl.note("joint estimate", estimate)
    params = {
        "n": len(phase.contributors),
        "m": schema.m,
        "sizes": list(sizes),
        "p": p if p is None or isinstance(p, (int, float)) else [float(x) for x in p],
        "epsilon": float(P.epsilon),
        "matrix": None if matrix is None else "given",
        "attribute_epsilons": attr_eps,
        "max_cells": max_cells,
    }
    return ProtocolResult(
        protocol="RR-Joint",
        parameters=params,
        schema=schema,
        estimate=estimate,
        releases=(released,),
        ledger=Ledger(released.ledger_entries(schema.names)),
        postprocessing=method,
        clusters=(unit,),
    )


def _groups(groups: Sequence[Sequence[int]] | None, m: int) -> tuple[tuple[int, ...], ...]:
    """Normalise RR-Ind-Joint groups as the fast path does (disjoint; rest as singletons)."""
    if groups is None:
        return (tuple(range(m)),)
    out = [check_axes(tuple(g), m) for g in groups]
    flat = [a for g in out for a in g]
    if any(len(g) == 0 for g in out) or len(set(flat)) != len(flat):
        raise ConfigurationError(f"groups must be disjoint, non-empty attribute subsets, got {groups!r}")
    covered = set(flat)
    out += [(a,) for a in range(m) if a not in covered]
    return tuple(sorted((tuple(sorted(g)) for g in out), key=lambda g: g[0]))


async def rr_ind_joint(
    ctl: Controller,
    *,
    p: float | Sequence[float] | None = None,
    epsilon: float | Sequence[float] | None = None,
    matrices: Sequence[RandomizationMatrix] | None = None,
    groups: Sequence[Sequence[int]] | None = None,
    postprocess: str = DEFAULT_POSTPROCESS,
    max_cells: int = DEFAULT_IND_JOINT_MAX_CELLS,
) -> ProtocolResult:
    """RR-Ind-Joint (RR-Ind-Joint paper Algorithm 3): the RR-Independent release, joint estimates.

    Parameters as :func:`mprr.protocols.rr_ind_joint`; the groups' joints are estimated
    through the Kronecker inverse with :func:`mprr.protocols.ind_joint_estimate`.
    """
    method = check_postprocess(postprocess)
    schema = ctl.schema
    sizes = schema.sizes
    groups_t = _groups(groups, schema.m)
    for g in groups_t:
        cells = math.prod(sizes[a] for a in g)
        if cells > max_cells:
            raise DomainTooLargeError(
                f"the joint of group {g} has {cells:,} cells, more than max_cells={max_cells:,}",
                cells=cells,
                limit=max_cells,
            )
    base = await rr_independent(ctl, p=p, epsilon=epsilon, matrices=matrices, postprocess=method)
    factors = [ind_joint_estimate(base, g, postprocess=method, max_cells=max_cells) for g in groups_t]
    if len(groups_t) == 1:
        estimate: DenseDistribution | ProductDistribution = DenseDistribution(factors[0])
    else:
        estimate = ProductDistribution(groups_t, factors, sizes)
    ctl.note("group estimates", estimate)
    params = {
        "n": base.n,
        "m": schema.m,
        "sizes": list(sizes),
        **matrix_parameters(p, epsilon, matrices),
        "groups": [list(g) for g in groups_t],
        "attribute_epsilons": base.parameters["attribute_epsilons"],
        "max_cells": max_cells,
    }
    return ProtocolResult(
        protocol="RR-Ind-Joint",
        parameters=params,
        schema=schema,
        estimate=estimate,
        releases=base.releases,
        ledger=base.ledger,
        postprocessing=method,
        clusters=groups_t,
    )


def _entropy_check(round_: int, lams: tuple[float, ...], sizes: Sequence[int],
                   bounds: dict[str, float | None]) -> EntropyCheck:
    """Step 3 of the λ protocol (same arithmetic as :mod:`mprr.protocols.lambda_protocol`)."""
    bits = tuple(lambda_entropy_bits(r, lam) for r, lam in zip(sizes, lams))
    total = math.fsum(bits)
    top = math.fsum(math.log2(r) for r in sizes)
    beta = total / top if top > 0 else 0.0
    ok = not (
        (bounds["min_bits"] is not None and total < bounds["min_bits"])
        or (bounds["max_bits"] is not None and total > bounds["max_bits"])
        or (bounds["min_beta"] is not None and beta < bounds["min_beta"])
        or (bounds["max_beta"] is not None and beta > bounds["max_beta"])
    )
    return EntropyCheck(round_, lams, bits, total, top, beta, ok)


def _lambdas(lambdas: Sequence[float], m: int) -> tuple[float, ...]:
    try:
        lams = tuple(float(x) for x in lambdas)
    except (TypeError, ValueError):
        raise ConfigurationError(f"lambdas must be a sequence of {m} numbers in (0, 1], got {lambdas!r}") from None
    if len(lams) != m or not all(0.0 < x <= 1.0 for x in lams):
        raise ConfigurationError(f"lambdas must be {m} numbers in (0, 1] (one per attribute), got {lambdas!r}")
    return lams


async def lambda_randomization(
    ctl: Controller,
    *,
    lambdas: Sequence[float],
    min_bits: float | None = None,
    max_bits: float | None = None,
    min_beta: float | None = None,
    max_beta: float | None = None,
    regenerate: Callable[[tuple[float, ...], EntropyCheck], Sequence[float]] | None = None,
    max_rounds: int = 20,
    postprocess: str = DEFAULT_POSTPROCESS,
    max_cells: int = DEFAULT_IND_JOINT_MAX_CELLS,
) -> ProtocolResult:
    """λ-randomization (lambda paper Section 5): parameters as :func:`mprr.protocols.lambda_protocol`.

    Steps 1-3 (choice of λ, matrices, entropy check with re-generation) run on the controller;
    step 4 is one release round (every party randomizes its record through the Kronecker
    product, one uniform); step 5 estimates with the Kronecker inverse.
    """
    method = check_postprocess(postprocess)
    schema = ctl.schema
    sizes = schema.sizes
    m = schema.m
    cells = math.prod(sizes)
    if cells > max_cells:
        raise DomainTooLargeError(
            f"λ-randomization estimates the full joint of {cells:,} cells, more than max_cells={max_cells:,}",
            cells=cells,
            limit=max_cells,
        )
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ConfigurationError(f"max_rounds must be an integer >= 1, got {max_rounds!r}")
    bounds = {"min_bits": min_bits, "max_bits": max_bits, "min_beta": min_beta, "max_beta": max_beta}
    lams = _lambdas(lambdas, m)
    checks = [_entropy_check(1, lams, sizes, bounds)]
    while not checks[-1].accepted:
        last = checks[-1]
        wanted = ", ".join(f"{k}={v}" for k, v in bounds.items() if v is not None)
        if regenerate is None or len(checks) >= max_rounds:
            raise ConfigurationError(
                f"entropy check failed after {len(checks)} round(s): lambdas {last.lambdas} give "
                f"{last.total_bits:.6g} bits (beta {last.beta:.4g}), required {wanted}"
            )
        lams = _lambdas(regenerate(last.lambdas, last), m)
        checks.append(_entropy_check(len(checks) + 1, lams, sizes, bounds))
    ctl.note("entropy checks", tuple(checks))
    unit = tuple(range(m))
    phase = await ctl.release("record", (unit,), (MatrixSpec.lambda_kron(lams),))
    released = phase.released_data(schema)
    K = phase.matrices[0]
    tensor = np.asarray(estimate_unit(K, released.counts[0], method)).reshape(sizes)
    params = {
        "n": len(phase.contributors),
        "m": m,
        "sizes": list(sizes),
        "lambdas": list(lams),
        "initial_lambdas": list(checks[0].lambdas),
        "min_bits": min_bits,
        "max_bits": max_bits,
        "min_beta": min_beta,
        "max_beta": max_beta,
        "max_cells": max_cells,
    }
    return ProtocolResult(
        protocol="lambda-randomization",
        parameters=params,
        schema=schema,
        estimate=DenseDistribution(tensor),
        releases=(released,),
        ledger=Ledger(released.ledger_entries(schema.names)),
        postprocessing=method,
        clusters=(unit,),
        details={"entropy_checks": tuple(checks), "kronecker": K},
    )
