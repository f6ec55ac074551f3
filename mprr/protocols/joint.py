"""RR-Joint (main paper Section 3.2, Protocol 2), fast path.

Every party randomizes its whole record as one value of ``A^1 × ... × A^m`` with a matrix over
the joint domain and publishes it; the controller estimates the joint distribution with
eq. (2).  The estimation is dense over the joint domain (the matrix has ``(Π|A|)²`` entries),
so a domain above ``max_cells`` is refused with :class:`~mprr.errors.DomainTooLargeError`
before anything is drawn (main paper 3.2 / 6.2: the 1,814,400 cells of Adult are out of reach).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mprr.data import Schema
from mprr.errors import ConfigurationError
from mprr.domain import MAX_MATRIX_CELLS, check_cells, check_epsilon
from mprr.matrices import RandomizationMatrix
from mprr.protocols.budget import attribute_epsilons, attribute_matrices
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess, dense_estimate
from mprr.protocols.local import local_protocol
from mprr.protocols.plan import Plan, PhasePlan, declares
from mprr.protocols.result import release_result
from mprr.protocols.parameters import DEFAULT_JOINT_MAX_CELLS, RRJointParameters
from mprr.protocols.steps import MatrixSpec, Program, Release

__all__ = [
    "rr_joint",
    "rr_joint_steps",
    "DEFAULT_JOINT_MAX_CELLS",
    "check_joint_cells",
    "check_dense_matrix",
    "check_joint_matrix",
]



def check_joint_cells(sizes: Sequence[int], max_cells: int, what: str,
                      remedy: str = "use RR-Clusters or RR-Ind-Joint, or raise max_cells") -> int:
    """Number of joint cells of ``sizes``; DomainTooLargeError above ``max_cells`` (the message
    ends with ``remedy``, what the caller can do about it).  ``max_cells`` is the caller's checked
    value (a parameter object's, or checked by the public function that takes it)."""
    return check_cells(math.prod(int(s) for s in sizes), max_cells,
                       f"{what} over the joint of sizes {tuple(sizes)}", remedy=remedy)


def check_dense_matrix(cells: int, what: str) -> None:
    """DomainTooLargeError when a dense ``cells x cells`` matrix would exceed
    :data:`mprr.domain.MAX_MATRIX_CELLS` (checked before anything is built or drawn)."""
    check_cells(cells * cells, MAX_MATRIX_CELLS, f"{what}: a dense {cells:,}x{cells:,} matrix",
                name="MAX_MATRIX_CELLS", remedy=f"a max_cells above {math.isqrt(MAX_MATRIX_CELLS):,} only "
                "helps with an explicit matrix")


def check_joint_matrix(matrix: object, cells: int) -> RandomizationMatrix:
    """``matrix`` itself when it is a RandomizationMatrix over the ``cells`` joint cells."""
    if not isinstance(matrix, RandomizationMatrix) or matrix.size != cells:
        raise ConfigurationError(
            f"matrix must be a RandomizationMatrix over the {cells} joint cells, got {matrix!r}"
        )
    return matrix


def rr_joint_plan(schema: Schema, params: RRJointParameters) -> Plan:
    """The plan of :func:`rr_joint_steps`: one release ``"joint"`` of one unit, every attribute."""
    return Plan((PhasePlan.release("joint", (tuple(range(schema.m)),)),))


@declares(rr_joint_plan)
def rr_joint_steps(schema: Schema, params: RRJointParameters) -> Program:
    """RR-Joint (main paper Protocol 2) as a step program: one release of the whole record.

    Phase ``"joint"``, one unit (every attribute) through the ε-optimal joint matrix (or the
    given one); the reply gives the dense eq. (2) estimate.

    Parameters
    ----------
    schema
        The attributes every party holds (all the program knows of the data before it runs).
    params
        The :class:`~mprr.protocols.parameters.RRJointParameters`, validated when they were
        built.  Exactly one of ``p`` — budget equivalent to RR-Independent with keep
        probability ``p`` (main paper 6.3.2: ε-optimal joint matrix carrying Σ_A ε_A of the 6.3.1
        matrices); ``epsilon`` — total ε of the ε-optimal joint matrix (``cluster_optimal``);
        ``matrix`` — an explicit matrix over the joint domain (C order of the attribute codes,
        checked here against the schema).  ``postprocess``: ``"clip-rescale"`` (default),
        ``"project-simplex"``, ``"ibu"`` or ``"none"`` (raw eq. 2).  ``max_cells``: largest joint
        domain accepted (default :data:`~mprr.protocols.parameters.DEFAULT_JOINT_MAX_CELLS`).
        With ``p`` or ``epsilon`` the matrix is built here, dense, so the domain is also capped
        by :data:`mprr.domain.MAX_MATRIX_CELLS` (4096 values); only an explicit ``matrix`` can
        be larger.

    Returns
    -------
    ProtocolResult
        ``estimate``: ``DenseDistribution`` over the joint domain; phase ``"joint"`` with one
        unit (all attributes); one linkable release per party.

    Raises
    ------
    DomainTooLargeError
        If ``Π |A| > max_cells``, or the matrix to build exceeds ``MAX_MATRIX_CELLS`` (both
        checked before any matrix is built or any randomness is drawn).

    Notes
    -----
    Draw order (per party): 1 uniform — the record's joint code (C order over the schema)
    released by inverse-CDF of its matrix row.
    """
    p, epsilon, matrix, max_cells, method = params.p, params.epsilon, params.matrix, params.max_cells, params.postprocess
    cells = check_joint_cells(schema.sizes, max_cells, "RR-Joint")
    attr_eps: list[float] | None = None
    if matrix is not None:
        spec = MatrixSpec.dense(check_joint_matrix(matrix, cells))
    else:
        check_dense_matrix(cells, "RR-Joint")
        if epsilon is None:
            attr_eps = list(attribute_epsilons(attribute_matrices(schema.sizes, p=p)))
        spec = MatrixSpec.cluster_optimal(epsilon if epsilon is not None else sum(attr_eps or ()))
    got = yield Release("joint", (tuple(range(schema.m)),), (spec,))
    released = got.data
    out = {
        "p": p if p is None or isinstance(p, (int, float)) else [float(x) for x in p],
        "epsilon": float(released.randomized_matrices[0].epsilon),
        "matrix": None if matrix is None else "given",
        "attribute_epsilons": attr_eps,
        "max_cells": max_cells,
    }
    return release_result(
        "RR-Joint", n=got.n, parameters=out, schema=schema,
        estimate=dense_estimate(released, schema.sizes, method),
        releases=(released,), postprocessing=method, clusters=released.units,
    )


rr_joint = local_protocol(rr_joint_steps, "rr_joint", RRJointParameters)
