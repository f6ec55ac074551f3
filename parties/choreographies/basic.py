"""Choreographies of the one-phase protocols: RR-Independent, RR-Joint, RR-Ind-Joint, λ.

Each is the controller's side of the protocol as an ``async`` function of a
:class:`~parties.controller.Controller`; the parties' side is always the same
(:class:`~parties.party.Party` answering release requests).  The controller validates the
parameters and builds its :class:`ProtocolResult` with the very functions of the fast path
(:mod:`mprr.protocols`: ``joint_plan``, ``ind_joint_plan``, ``lambda_plan`` and the
``assemble_*`` functions), on the codes it received, so the same seed gives the same
result.

Message flow (n parties, m attributes; one request broadcast + one reply per party):

- RR-Independent (main paper Protocol 1) / RR-Ind-Joint: phase ``"attributes"``, m units
  (one per attribute, schema order), reply of m codes;
- RR-Joint (Protocol 2): phase ``"joint"``, one unit (the whole record), reply of 1 code;
- λ-randomization (lambda paper Section 5): the controller runs the entropy check (step 3)
  locally, then phase ``"record"``: one unit through ``P(λ_1) ⊗ ... ⊗ P(λ_m)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mprr.matrices import RandomizationMatrix
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess
from mprr.protocols.ind_joint import DEFAULT_IND_JOINT_MAX_CELLS, assemble_rr_ind_joint, ind_joint_plan
from mprr.protocols.independent import assemble_rr_independent
from mprr.protocols.joint import DEFAULT_JOINT_MAX_CELLS, assemble_rr_joint, joint_plan
from mprr.protocols.lambda_protocol import EntropyCheck, assemble_lambda, lambda_plan
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
    specs, _ = attribute_specs(sizes, p=p, epsilon=epsilon, matrices=matrices)
    units = singletons(schema.m)
    phase = await ctl.release("attributes", units, specs)
    released = phase.released_data(schema)
    result = assemble_rr_independent(
        schema, released, n=len(phase.contributors), p=p, epsilon=epsilon, matrices=matrices, method=method
    )
    ctl.note("attribute estimates", result.estimate)
    return result


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
    plan = joint_plan(schema.sizes, p=p, epsilon=epsilon, matrix=matrix, max_cells=max_cells, dense_check=False)
    if plan.epsilon is None:
        spec = MatrixSpec.dense(plan.matrix)  # type: ignore[arg-type]
    else:
        spec = MatrixSpec.cluster_optimal(plan.epsilon)
    unit = tuple(range(schema.m))
    phase = await ctl.release("joint", (unit,), (spec,))
    result = assemble_rr_joint(schema, phase.released_data(schema), plan, n=len(phase.contributors), method=method)
    ctl.note("joint estimate", result.estimate)
    return result


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
    through the Kronecker inverse by :func:`mprr.protocols.ind_joint.assemble_rr_ind_joint`.
    """
    method = check_postprocess(postprocess)
    schema = ctl.schema
    sizes = schema.sizes
    plan = ind_joint_plan(sizes, p=p, epsilon=epsilon, matrices=matrices, groups=groups, max_cells=max_cells)
    base = await rr_independent(ctl, p=p, epsilon=epsilon, matrices=matrices, postprocess=method)
    result = assemble_rr_ind_joint(schema, base.releases[0], plan, n=base.n, method=method)
    ctl.note("group estimates", result.estimate)
    return result


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
    ctl.note("entropy checks", plan.checks)
    unit = tuple(range(schema.m))
    phase = await ctl.release("record", (unit,), (MatrixSpec.lambda_kron(plan.lambdas),))
    return assemble_lambda(schema, phase.released_data(schema), plan, n=len(phase.contributors), method=method)
