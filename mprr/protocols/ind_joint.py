"""RR-Ind-Joint (Kikuchi & Domingo-Ferrer) as a step program, and its fast-path entry point.

Every party randomizes each attribute independently (exactly RR-Independent's release,
RR-Ind-Joint paper Algorithm 3 step 1); the controller estimates the *joint* distribution of
any attribute subset ``S = (i_1, ..., i_k)`` through the Kronecker product of the attribute
matrices (paper Theorem 1 / Corollary 1):

    Σ̂^S = ((P^{i_1} ⊗ ... ⊗ P^{i_k})ᵀ)⁻¹ λ̂^S,

computed with mode products and the factor inverses ((A ⊗ B)⁻¹ = A⁻¹ ⊗ B⁻¹, paper 3.2.2) —
never building the Kronecker matrix.  ε per party: Σ_A ε_A (paper Theorem 2, sequential
composition).

:func:`ind_joint_estimate` estimates any further subset from the same release afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mprr.data import Schema
from mprr.distributions import DenseDistribution, ProductDistribution, check_axes
from mprr.domain import MAX_TABLE_CELLS, check_cells, joint_tally
from mprr.errors import ConfigurationError
from mprr.matrices import RandomizationMatrix, kron
from mprr.protocols.budget import attribute_epsilons
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, check_postprocess, estimate_unit
from mprr.protocols.independent import matrix_parameters, rr_independent_plan, rr_independent_steps
from mprr.protocols.local import local_protocol
from mprr.protocols.parameters import RRIndJointParameters
from mprr.protocols.plan import Plan, declares
from mprr.protocols.release import Matrix
from mprr.protocols.result import ProtocolResult, release_result
from mprr.protocols.steps import Program

__all__ = [
    "rr_ind_joint",
    "rr_ind_joint_steps",
    "ind_joint_estimate",
    "canonical_groups",
    "DEFAULT_IND_JOINT_MAX_CELLS",
]

DEFAULT_IND_JOINT_MAX_CELLS = MAX_TABLE_CELLS
"""Largest joint domain (tensor cells) estimated by default: 4,194,304 cells (32 MiB per
tensor).  The full Adult domain (1,814,400 cells) fits."""


def canonical_groups(
    sizes: Sequence[int], groups: Sequence[Sequence[int]] | None, max_cells: int
) -> tuple[tuple[int, ...], ...]:
    """RR-Ind-Joint's groups in canonical form, each domain checked against ``max_cells``.

    Groups must be disjoint and non-empty; attributes in no group become singletons; each
    group is sorted and the groups are ordered by smallest attribute.  ``None``: one group
    with every attribute.  Checked before anything is released.

    Raises
    ------
    ConfigurationError
        For overlapping, empty or out-of-range groups.
    DomainTooLargeError
        If a group's joint domain has more than ``max_cells`` cells.
    """
    m = len(sizes)
    if groups is None:
        out = [tuple(range(m))]
    else:
        out = [check_axes(tuple(g), m, name=f"groups[{i}]") for i, g in enumerate(groups)]
        flat = [a for g in out for a in g]
        if any(len(g) == 0 for g in out) or len(set(flat)) != len(flat):
            raise ConfigurationError(f"groups must be disjoint, non-empty attribute subsets, got {groups!r}")
        covered = set(flat)
        out += [(a,) for a in range(m) if a not in covered]
    groups_t = tuple(sorted((tuple(sorted(g)) for g in out), key=lambda g: g[0]))
    for g in groups_t:
        check_cells(math.prod(sizes[a] for a in g), max_cells, f"the joint of group {g}")
    return groups_t


def _kron_estimate(
    codes: np.ndarray,
    sizes: Sequence[int],
    mats: Sequence[Matrix],
    axes: tuple[int, ...],
    method: str,
    max_cells: int,
) -> np.ndarray:
    sub = tuple(int(sizes[a]) for a in axes)
    check_cells(math.prod(sub), max_cells, f"the joint of attributes {axes}")
    counts = joint_tally(codes[:, list(axes)], sub)
    if len(axes) == 1:
        return estimate_unit(mats[axes[0]], counts, method)
    return estimate_unit(kron(*(mats[a] for a in axes)), counts, method)


def ind_joint_estimate(
    result: ProtocolResult,
    axes: Sequence[int],
    *,
    postprocess: str | None = None,
    max_cells: int = DEFAULT_IND_JOINT_MAX_CELLS,
) -> np.ndarray:
    """Joint distribution of ``axes`` (in that order) from an independent per-attribute release.

    RR-Ind-Joint paper Theorem 1: ``((P^{i_1} ⊗ ... ⊗ P^{i_k})ᵀ)⁻¹ λ̂^S`` by mode products.

    Works on any result whose first phase randomized every attribute separately
    (RR-Independent, RR-Ind-Joint, and the 4.1 dependence phase of RR-Clusters).

    Parameters
    ----------
    result
        The protocol result holding the release.
    axes
        Attribute indices; the returned tensor has one axis per entry, in this order.
    postprocess
        Post-processing (default: the result's).
    max_cells
        Largest tensor estimated.
    """
    method = check_postprocess(postprocess if postprocess is not None else result.postprocessing)
    m = result.schema.m
    axes_t = check_axes(tuple(axes), m)
    rel = result.releases[0]
    if rel.codes is None or rel.units != tuple((j,) for j in range(m)):
        raise ConfigurationError(
            f"{result.protocol} did not release every attribute separately in its first phase"
        )
    return _kron_estimate(rel.codes, result.schema.sizes, rel.randomized_matrices, axes_t, method, max_cells)


def rr_ind_joint_plan(schema: Schema, params: RRIndJointParameters) -> Plan:
    """The plan of :func:`rr_ind_joint_steps`: RR-Independent's (the groups are estimated from
    its one release)."""
    return rr_independent_plan(schema, params)


@declares(rr_ind_joint_plan)
def rr_ind_joint_steps(schema: Schema, params: RRIndJointParameters) -> Program:
    """RR-Ind-Joint (RR-Ind-Joint paper Algorithm 3) as a step program.

    The release of RR-Independent (:func:`~mprr.protocols.independent.rr_independent_steps`),
    then each group's joint through the Kronecker inverse.

    Parameters
    ----------
    schema
        The attributes every party holds (all the program knows of the data before it runs).
    params
        The :class:`~mprr.protocols.parameters.RRIndJointParameters`, validated when they were
        built (the fast-path function :func:`rr_ind_joint` builds them from its keywords):

        ``p``, ``epsilon_per_attribute``, ``epsilon``, ``matrices``
            Exactly one (as :func:`~mprr.protocols.rr_independent`); ``epsilon_per_attribute``
            gives the DP-optimal k-RR matrix of the paper (3.4) with that ε on each attribute,
            ``epsilon`` (per respondent) matrices that spend it over the m attributes.
        ``groups``
            Disjoint attribute subsets whose joint is estimated through the Kronecker inverse
            (checked against the schema here); attributes in no group are estimated alone.
            Default: one group with every attribute (the full joint, if it has at most
            ``max_cells`` cells).
        ``postprocess``
            ``"clip-rescale"`` (default), ``"project-simplex"``, ``"ibu"`` (mode-product IBU) or
            ``"none"``.
        ``max_cells``
            Largest group domain estimated (DomainTooLargeError beyond, checked before drawing).

    Returns
    -------
    ProtocolResult
        ``estimate``: ``DenseDistribution`` when one group holds every attribute, else the
        ``ProductDistribution`` of the groups (canonical order, by smallest attribute);
        phase ``"attributes"`` as RR-Independent.

    Notes
    -----
    Draw order (per party): m uniforms, one per attribute in schema order — identical to
    RR-Independent, so the same seed releases the same Y.
    """
    method = params.postprocess
    max_cells = params.max_cells
    groups_t = canonical_groups(schema.sizes, params.groups, max_cells)
    base = yield from rr_independent_steps(schema, params)
    released = base.releases[0]
    mats = released.randomized_matrices
    factors = [_kron_estimate(np.asarray(released.codes), schema.sizes, mats, g, method, max_cells) for g in groups_t]
    estimate: DenseDistribution | ProductDistribution = (
        DenseDistribution(factors[0], allow_negative=(method == "none")) if len(groups_t) == 1
        else ProductDistribution(groups_t, factors, schema.sizes, allow_negative=(method == "none"))
    )
    record = {
        **matrix_parameters(params.p, params.epsilon_per_attribute, params.epsilon, params.matrices),
        "groups": [list(g) for g in groups_t],
        "attribute_epsilons": list(attribute_epsilons(mats)),
        "max_cells": max_cells,
    }
    return release_result(
        "RR-Ind-Joint", n=base.n, parameters=record, schema=schema, estimate=estimate,
        releases=(released,), postprocessing=method, clusters=groups_t,
    )


rr_ind_joint = local_protocol(rr_ind_joint_steps, "rr_ind_joint", RRIndJointParameters)
