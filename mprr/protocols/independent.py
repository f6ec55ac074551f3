"""RR-Independent (main paper Section 3.1, Protocol 1), fast path.

Every party randomizes each of its m attribute values separately with the attribute's matrix
``P^j`` and publishes the results; the controller estimates each marginal with eq. (2)
``π̂^j = ((P^j)ᵀ)⁻¹ λ̂^j`` (post-processed) and the joint distribution as the product of the
marginals (Protocol 1 step 10).  Written once as a step program (:func:`rr_independent_steps`),
run by the local driver (:func:`rr_independent`) or the actor driver (:mod:`parties.driver`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mprr.data import Schema
from mprr.matrices import RandomizationMatrix
from mprr.protocols.budget import attribute_epsilons, attribute_family, chosen_specs
from mprr.protocols.estimate import product_estimate
from mprr.protocols.local import local_protocol
from mprr.protocols.parameters import RRIndependentParameters
from mprr.protocols.plan import Plan, PhasePlan, declares
from mprr.protocols.result import release_result
from mprr.protocols.steps import Program, Release, singletons

__all__ = ["rr_independent", "rr_independent_steps", "matrix_parameters"]


def matrix_parameters(
    p: float | Sequence[float] | None,
    epsilon_per_attribute: float | Sequence[float] | None,
    epsilon: float | None,
    matrices: Sequence[RandomizationMatrix] | None,
) -> dict[str, object]:
    """JSON-friendly record of how the attribute matrices were chosen."""
    def plain(v: float | Sequence[float] | None) -> float | list[float] | None:
        """A scalar as is, a sequence as a list of floats."""
        if v is None or isinstance(v, (int, float)):
            return v
        return [float(x) for x in v]

    return {"p": plain(p), "epsilon_per_attribute": plain(epsilon_per_attribute), "epsilon": plain(epsilon),
            "matrices": None if matrices is None else "given"}


def rr_independent_plan(schema: Schema, params: RRIndependentParameters) -> Plan:
    """The plan of :func:`rr_independent_steps`: one release ``"attributes"`` of the m singletons,
    through the family of the attribute matrices (:func:`~mprr.protocols.budget.attribute_family`)."""
    family = attribute_family(p=params.p, epsilon_per_attribute=params.epsilon_per_attribute, epsilon=params.epsilon,
                              matrices=params.matrices)
    return Plan((PhasePlan.release("attributes", singletons(schema.m),
                                   families=None if family is None else (family,)),))


@declares(rr_independent_plan)
def rr_independent_steps(schema: Schema, params: RRIndependentParameters) -> Program:
    """RR-Independent (main paper Protocol 1) as a step program (:mod:`mprr.protocols.steps`).

    One step: phase ``"attributes"``, one unit per attribute (schema order) through ``P^j``;
    the reply gives the marginals (eq. 2) and their product.

    Parameters
    ----------
    schema
        The attributes every party holds (all the program knows of the data before it runs).
    params
        The :class:`~mprr.protocols.parameters.RRIndependentParameters` (or a subclass's, such
        as RR-Ind-Joint's), validated when they were built (the fast-path function
        :func:`rr_independent` builds them from its keywords):

        ``p``, ``epsilon_per_attribute``, ``epsilon``, ``matrices``
            Exactly one: keep probability of main paper 6.3.1 (``keep_or_uniform(|A|, p)``, the
            paper's experiments; ε_A computed from the matrix), ε of each attribute (``grr``),
            ε per respondent (``keep_or_uniform`` with the one p whose m releases spend
            ``epsilon``), or one explicit matrix per attribute
            (:func:`~mprr.protocols.budget.chosen_specs`).
        ``postprocess``
            ``"clip-rescale"`` (paper, default), ``"project-simplex"``, ``"ibu"`` or ``"none"``
            (raw eq. 2).

    Returns
    -------
    ProtocolResult
        ``estimate``: product of the m estimated marginals (``ProductDistribution`` with
        singleton clusters); one release phase ``"attributes"``; the ledger holds m linkable
        releases per party (sequential ε = Σ_A ε_A).

    Raises
    ------
    ConfigurationError
        If a per-attribute list or ``matrices`` does not fit the attributes of ``schema`` (every
        other rule is the parameter object's).

    Notes
    -----
    Draw order (per party, :mod:`mprr.streams`): m uniforms, one per attribute in schema order
    (attribute j's released value = inverse-CDF of row x_j of ``P^j`` at the j-th uniform).
    """
    method = params.postprocess
    specs, _ = chosen_specs(schema.sizes, p=params.p, epsilon_per_attribute=params.epsilon_per_attribute,
                            epsilon=params.epsilon, matrices=params.matrices)
    got = yield Release("attributes", singletons(schema.m), specs)
    record = {
        **matrix_parameters(params.p, params.epsilon_per_attribute, params.epsilon, params.matrices),
        "attribute_epsilons": list(attribute_epsilons(got.data.randomized_matrices)),
    }
    return release_result(
        "RR-Independent", n=got.n, parameters=record, schema=schema,
        estimate=product_estimate(got.data, schema.sizes, method),
        releases=(got.data,), postprocessing=method, clusters=got.data.units,
    )


rr_independent = local_protocol(rr_independent_steps, "rr_independent", RRIndependentParameters)
