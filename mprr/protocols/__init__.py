"""Every protocol of the papers, written once as a sans-I/O step program, and the fast path.

Each protocol is a step program (:mod:`mprr.protocols.steps`, ``<protocol>_steps``) that yields
release / secure-sum steps and returns the result, and declares its plan
(:mod:`mprr.protocols.plan`, ``<protocol>_plan``: its phases from its parameters alone); the local driver (:mod:`~mprr.protocols.local`)
runs it vectorized for all n parties, the actor driver (:mod:`parties.driver`) with messages.
The fast-path functions (``rr_independent``, ``rr_clusters``, ...) are made from the step
programs by :func:`~mprr.protocols.local.local_protocol` and run the local driver: each shipped
program takes its parameter object (:mod:`~mprr.protocols.parameters`, ``program(schema, params)``,
validated once when it is built), and its fast-path function builds that object from its keywords.

Every protocol takes ``epsilon``, the budget of one respondent (sequential over all it releases;
:mod:`~mprr.protocols.budget`); the papers' protocols also keep their per-attribute settings
(``p``, ``epsilon_per_attribute``) for the reproductions.

Each fast-path function takes a :class:`mprr.data.Dataset` (party i holds row i), its parameters, a
keyword-only ``rng`` (``numpy.random.Generator`` for Monte Carlo sweeps, or
:class:`mprr.streams.PartyStreams` so that the actor simulator can replay exactly the same
releases) and a ``postprocess`` choice (``"clip-rescale"`` as in the paper, ``"project-simplex"``,
``"ibu"``, or ``"none"`` for the raw unbiased eq. (2) estimate), and returns a
:class:`ProtocolResult` that says which one was used.

Draw-order contract (:mod:`mprr.streams`): each released value (attribute, pair, cluster or
record) consumes one uniform from the releasing party's stream; every protocol's docstring
lists which uniforms, in which order.  A unit released before with the same matrix is a
*replay* (the party resends its earlier value: no uniform, no new ε — the
:class:`mprr.privacy.PrivacyAccountant` rule); this happens for the singleton clusters of
RR-Clusters with 4.1 dependences.

Modules, in dependency order (each imports only those above it):

- ``release``         — ``ReleasedData`` (one release phase) and the randomization of units
- ``estimate``        — eq. (2) per unit + post-processing; Kronecker IBU; product estimates
- ``fitted_model``    — the units behind an estimate (``EstimatedUnit``: matrix, tally, estimate)
                        gathered into the ``FittedModel`` both uncertainty methods start from
- ``uncertainty``     — standard errors and intervals of estimated tables: closed form (Nayak
                        eq. 3.2 mapped to a marginal, delta method across units) or a parametric
                        bootstrap where the estimator depends on the data; which one, stated
- ``result``          — ``ProtocolResult`` (estimate, releases, matrices, ledger, ε per policy,
                        ``to_frame`` with ``se`` / ``ci_low`` / ``ci_high``)
- ``steps``           — the step vocabulary: ``Release``, ``SecureSum``, ``Report``, ``Released``,
                        ``MatrixSpec`` (re-exported from :mod:`mprr.matrix_families`), ``OracleSpec``
- ``plan``            — what a program will ask, declared from its parameters before it runs:
                        ``Plan`` (phases, secure-sum vector lengths, the matrix / oracle
                        families each phase applies, ``Needs``: engine, mesh, PKI), ``@declares``, ``plan_of`` (a dry run for an undeclared,
                        data-independent program)
- ``oracle_reports``  — the answer to a ``Report`` step: units through frequency oracles
                        (:mod:`mprr.oracles`), every unit or one sampled unit per party, with
                        or without fake values (``report_rows``, the computation both drivers
                        share; ``report_releases``, what a reporting party books); estimates
                        and closed-form variances
- ``local``           — the local driver ``run_local`` (vectorized answers to every step) and
                        ``local_protocol``, the fast-path function of a step program
- ``budget``          — ε per respondent as the input (``keep_for_budget``), and the main paper's
                        6.3 matrices and their ``MatrixSpec``: keep_or_uniform per
                        attribute (6.3.1; ``chosen_specs`` from a validated matrix choice,
                        ``attribute_specs`` from unchecked values), the ε-optimal cluster matrix
                        carrying Σ ε_A (6.3.2), 4.3 pair matrices
- ``independent``     — RR-Independent (main paper Protocol 1)
- ``joint``           — RR-Joint (Protocol 2), refusing domains above a cell limit (and dense
                        matrices beyond ``mprr.domain.MAX_MATRIX_CELLS``) before drawing
- ``dependences``     — RR-Clusters phase 1: dependences by 4.1, 4.2 or 4.3
- ``clusters``        — RR-Clusters (Section 4: dependences, Algorithm 1, RR-Joint per cluster)
- ``adjustment``      — RR-Adjustment (Algorithm 2) after RR-Independent or RR-Clusters
- ``ind_joint``       — RR-Ind-Joint (Kikuchi): joint of any subset via the Kronecker inverse
- ``lambda_protocol`` — λ-randomization protocol (lambda paper Section 5) with its entropy check
- ``multidim``        — the field's multi-dimensional strategies at ε per respondent: SPL, SMP,
                        RS+FD (frequency oracles GRR / OUE / OLH)
- ``marginal_release``— CALM-style release: one sampled k-way marginal per respondent,
                        Norm-Sub, consistency, maximum entropy
- ``sampled_clusters``— RR-Clusters with sampled respondents: discovery on a share of the
                        respondents, a noise-aware test before Algorithm 1, one cluster per
                        respondent with all of ε (the clustering idea at ε per respondent);
                        at a large ε overlapping units of ≤ 3 attributes covering every pair
- ``pram``            — trusted-curator PRAM, invariant PRAM, S/n and its variance (eq. 4.4)
- ``synthesis``       — synthetic microdata drawn from any estimate
- ``parameters``      — the protocols' frozen, validated parameter objects (``RRClustersParameters``,
                        ``OracleParameters``, ... one per protocol; RR-Adjustment's add Algorithm 2's
                        options to their base protocol's), from which the scenario schemas derive
                        their fields; every shipped program takes its object
                        (``rr_clusters_steps(schema, params)``)
- ``registry``        — ``PROTOCOLS`` (a :class:`mprr.registry.Registry`): names and aliases -> step
                        programs and parameter objects; ``register_protocol`` for one's own
"""

from mprr.protocols.adjustment import ADJUSTABLE, rr_adjustment
from mprr.protocols.budget import attribute_epsilons, attribute_matrices
from mprr.protocols.clusters import rr_clusters
from mprr.protocols.dependences import DEPENDENCE_METHODS, TABLE_SOURCES, DependencePhase, dependence_phase
from mprr.protocols.estimate import DEFAULT_POSTPROCESS, estimate_unit
from mprr.protocols.independent import rr_independent
from mprr.protocols.ind_joint import DEFAULT_IND_JOINT_MAX_CELLS, ind_joint_estimate, rr_ind_joint
from mprr.protocols.joint import DEFAULT_JOINT_MAX_CELLS, rr_joint
from mprr.protocols.lambda_protocol import EntropyCheck, lambda_entropy_bits, lambda_protocol, lambdas_for_entropy
from mprr.protocols.marginal_release import MarginalSetDistribution, calm
from mprr.protocols.multidim import rsfd, smp, spl
from mprr.protocols.sampled_clusters import rr_clusters_sampled
from mprr.protocols.pram import (
    INVARIANT_METHODS,
    invariant_mixture,
    invariant_two_stage,
    is_invariant,
    pram,
    pram_conditional_variance,
)
from mprr.protocols.release import ReleasedData
from mprr.protocols.result import ProtocolResult
from mprr.protocols.synthesis import synthesize

__all__ = [
    "ProtocolResult",
    "ReleasedData",
    "DependencePhase",
    "EntropyCheck",
    "DEFAULT_JOINT_MAX_CELLS",
    "DEFAULT_IND_JOINT_MAX_CELLS",
    "DEFAULT_POSTPROCESS",
    "DEPENDENCE_METHODS",
    "TABLE_SOURCES",
    "INVARIANT_METHODS",
    "ADJUSTABLE",
    "rr_independent",
    "rr_joint",
    "rr_clusters",
    "rr_adjustment",
    "rr_ind_joint",
    "spl",
    "smp",
    "rsfd",
    "calm",
    "rr_clusters_sampled",
    "MarginalSetDistribution",
    "ind_joint_estimate",
    "lambda_protocol",
    "lambdas_for_entropy",
    "lambda_entropy_bits",
    "pram",
    "invariant_two_stage",
    "invariant_mixture",
    "is_invariant",
    "pram_conditional_variance",
    "synthesize",
    "dependence_phase",
    "attribute_matrices",
    "attribute_epsilons",
    "estimate_unit",
]
