"""The protocols' parameter objects: typed, frozen, validated once (:class:`mprr.parameters.Parameters`).

Each object declares every parameter of a protocol's step program with its value type, default
and help, validates them when it is built (the message names the parameter, the bad value and
what is allowed), and checks the rules between them; a protocol's registry entry
(:mod:`mprr.protocols.registry`) builds it from the caller's parameters, and the scenario
schemas derive their fields from it (``scenarios.config.Field.derived``).

- :class:`MatrixChoice` — the attribute matrices of the papers' protocols: ``p`` (main paper
  6.3.1), ``epsilon_per_attribute`` (GRR) or ``epsilon`` per respondent, exactly one
- :class:`RRIndependentParameters` — RR-Independent (main paper Protocol 1)
- :class:`RRClustersParameters` — RR-Clusters (main paper Section 4, Algorithm 1, 6.3.2)
- :class:`RRJointParameters` — RR-Joint (main paper Protocol 2)
- :class:`RRIndJointParameters` — RR-Ind-Joint (Kikuchi, Algorithm 3)
- :class:`OracleParameters` — SPL and SMP (Arcolezi et al.; frequency oracles of Wang et al. 2017)
- :class:`RSFDParameters` — RS+FD[GRR] (Arcolezi et al., CIKM 2021)
- :class:`CALMParameters` — CALM-style marginal release (Zhang et al., CCS 2018)
- :class:`SampledClustersParameters` — RR-Clusters with sampled respondents
- :class:`LambdaParameters` — the λ-randomization protocol (lambda paper Section 5)
- :class:`AdjustmentOptions`, :class:`RRIndependentAdjustmentParameters`,
  :class:`RRClustersAdjustmentParameters` — RR-Adjustment (main paper Section 5, Algorithm 2)
  after RR-Independent or RR-Clusters: the base protocol's parameters and Algorithm 2's
"""

from __future__ import annotations

import math

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from mprr.domain import MAX_MATRIX_CELLS, MAX_TABLE_CELLS
from mprr.errors import ConfigurationError
from mprr.estimation import POSTPROCESSORS
from mprr.matrices import RandomizationMatrix
from mprr.parameters import Bool, Choice, Float, Int, List, Parameters, PerAttribute, parameter
from mprr.protocols.dependences import DEPENDENCE_METHODS, TABLE_SOURCES
from mprr.protocols.estimate import DEFAULT_POSTPROCESS
from mprr.protocols.oracle_reports import DEFAULT_ORACLE_POSTPROCESS, ORACLE_POSTPROCESS
from mprr.protocols.steps import ORACLE_CHOICES, Matrix, MatrixSpec

__all__ = ["AdjustmentOptions", "RRClustersAdjustmentParameters", "RRIndependentAdjustmentParameters", "CALMParameters", "DEFAULT_JOINT_MAX_CELLS", "DESIGNS", "EPSILON", "KEEP_PROBABILITY", "LambdaParameters", "SampledClustersParameters", "MatrixChoice", "ORACLE_POSTPROCESSING", "OracleParameters", "POSTPROCESS",
           "RRClustersParameters", "RRIndJointParameters", "RRIndependentParameters", "RRJointParameters", "RSFDParameters"]

KEEP_PROBABILITY = Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True)
"""A keep probability p of main paper 6.3.1: in (0, 1) (p = 0 is singular, p = 1 has ε = ∞)."""
EPSILON = Float(min=0.0, min_exclusive=True)
"""A finite ε > 0."""
POSTPROCESS = Choice(tuple(sorted(POSTPROCESSORS)))
"""A post-processing of the eq. (2) estimates (:data:`mprr.estimation.POSTPROCESSORS`)."""
DEFAULT_JOINT_MAX_CELLS = math.isqrt(MAX_MATRIX_CELLS)
"""Largest joint domain RR-Joint (and a cluster of RR-Clusters) accepts by default (4096): the
largest whose dense matrix fits :data:`mprr.domain.MAX_MATRIX_CELLS`."""
DESIGNS: tuple[str, ...] = ("clusters", "cover", "clusters-or-cover")
"""The designs of RR-Clusters with sampled respondents (:mod:`mprr.protocols.sampled_clusters`):
disjoint clusters, a cover by overlapping units, or the choice after the discovery."""
ORACLE_POSTPROCESSING = Choice(ORACLE_POSTPROCESS)
"""A post-processing of frequency-oracle estimates (:data:`mprr.protocols.oracle_reports.ORACLE_POSTPROCESS`)."""


@dataclass(frozen=True, kw_only=True)
class MatrixChoice(Parameters):
    """How the attribute matrices are chosen: exactly one of ``p``, ``epsilon_per_attribute``,
    ``epsilon`` (and, where a protocol takes them, explicit ``matrices``); a step program reads
    them and builds the matrices with :func:`mprr.protocols.budget.chosen_specs` (its plan declares
    their family with :func:`~mprr.protocols.budget.attribute_family`)."""

    p: Any = parameter(PerAttribute(KEEP_PROBABILITY), None,
                       help="keep probability of main paper 6.3.1 (keep_or_uniform(|A|, p)), for every "
                            "attribute or one per attribute")
    epsilon_per_attribute: Any = parameter(PerAttribute(EPSILON), None,
                                           help="ε of every attribute's generalized RR (the papers' setting)")
    epsilon: float | None = parameter(EPSILON, None,
                                      help="privacy budget ε per respondent (sequential over everything it releases)")
    postprocess: str = parameter(POSTPROCESS, DEFAULT_POSTPROCESS,
                                 help="post-processing of the eq. (2) estimates (paper: clip-rescale)")

    def chosen(self) -> list[str]:
        """The matrix parameters given."""
        return [name for name in ("p", "epsilon_per_attribute", "epsilon", "matrices")
                if getattr(self, name, None) is not None]

    def validate(self) -> None:
        given = self.chosen()
        if len(given) != 1:
            raise ConfigurationError(
                "give exactly one of p, epsilon_per_attribute, epsilon (per respondent) or matrices for the "
                f"attribute matrices, got {given or 'none'}"
            )


@dataclass(frozen=True, kw_only=True)
class RRIndependentParameters(MatrixChoice):
    """Parameters of RR-Independent (main paper Protocol 1;
    :func:`mprr.protocols.independent.rr_independent_steps`)."""

    protocol: ClassVar[str] = "RR-Independent"

    matrices: Sequence[RandomizationMatrix] | None = field(default=None)
    """Explicit matrices, one per attribute (checked against the schema by the program)."""


@dataclass(frozen=True, kw_only=True)
class RRClustersParameters(MatrixChoice):
    """Parameters of RR-Clusters (main paper Section 4; :func:`mprr.protocols.clusters.rr_clusters_steps`)."""

    protocol: ClassVar[str] = "RR-Clusters"

    Tv: float = parameter(Float(min=1.0, allow_inf=True, integers_kept=True),
                          help="Algorithm 1: largest number of value combinations of a cluster")
    Td: float = parameter(Float(min=0.0, max=1.0), help="Algorithm 1: smallest dependence to merge")
    discovery_share: float = parameter(
        Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True), 0.5,
        help="with epsilon: share of the budget RR-Clusters spends on its dependence phase")
    dependence: str = parameter(Choice(DEPENDENCE_METHODS), "4.1",
                                help="how RR-Clusters gets dependences (main paper 4.1, 4.2 or 4.3)")
    tables: str = parameter(Choice(TABLE_SOURCES), "estimated",
                            help="4.1: dependences on estimated or randomized pair tables")
    pair_epsilon: float | None = parameter(EPSILON, None, help="4.3: ε of every pair matrix (default ε_i + ε_j)")
    max_cells: int = parameter(Int(min=2), DEFAULT_JOINT_MAX_CELLS,
                               help="largest cluster domain RR-Clusters releases (its dense matrix is max_cells²)")

    def validate(self) -> None:
        super().validate()
        if self.epsilon is None and self.discovery_share != 0.5:
            raise ConfigurationError(
                f"discovery_share applies with a budget per respondent (epsilon) only, got {self.discovery_share!r}"
            )
        if self.epsilon is not None and self.dependence == "4.2":
            raise ConfigurationError(
                f"dependence='4.2' releases exact pair values (ε = ∞, no DP guarantee) and cannot meet a budget "
                f"of epsilon = {self.epsilon!r} per respondent; use dependence '4.1' or '4.3', or the papers' "
                "per-attribute setting (p or epsilon_per_attribute)"
            )
        if self.pair_epsilon is not None and self.dependence != "4.3":
            raise ConfigurationError(
                f"pair_epsilon applies to dependence='4.3' only, got dependence={self.dependence!r}"
            )
        if self.tables != "estimated" and self.dependence != "4.1":
            raise ConfigurationError(
                f"tables='randomized' applies to dependence='4.1' only, got dependence={self.dependence!r}"
            )
        if self.epsilon is not None and self.pair_epsilon is not None:
            raise ConfigurationError(
                "pair_epsilon cannot be combined with a budget per respondent (epsilon): the plan gives every "
                "pair ε·discovery_share/(m(m−1)/2); give epsilon_per_attribute or p to set pair_epsilon"
            )


@dataclass(frozen=True, kw_only=True)
class RRIndJointParameters(RRIndependentParameters):
    """Parameters of RR-Ind-Joint (Kikuchi's Algorithm 3; :func:`mprr.protocols.ind_joint.rr_ind_joint_steps`):
    RR-Independent's, the groups whose joints are estimated through the Kronecker inverse
    (disjointness and the schema checked by the program) and the largest group domain."""

    protocol: ClassVar[str] = "RR-Ind-Joint"

    groups: tuple[tuple[int, ...], ...] | None = parameter(
        List(List(Int(min=0), min_len=1), min_len=1), None,
        help="disjoint attribute subsets whose joint is estimated (default: every attribute)")
    max_cells: int = parameter(Int(min=1), MAX_TABLE_CELLS, help="largest group domain estimated")


@dataclass(frozen=True, kw_only=True)
class RRJointParameters(Parameters):
    """Parameters of RR-Joint (main paper Protocol 2; :func:`mprr.protocols.joint.rr_joint_steps`):
    exactly one of ``p`` (the budget of RR-Independent with that keep probability), ``epsilon``
    (of the joint matrix) and an explicit joint ``matrix``."""

    protocol: ClassVar[str] = "RR-Joint"

    p: Any = parameter(PerAttribute(KEEP_PROBABILITY), None,
                       help="keep probability of main paper 6.3.1 whose Σ_A ε_A the joint matrix carries")
    epsilon: float | None = parameter(EPSILON, None, help="ε of the ε-optimal joint matrix")
    matrix: RandomizationMatrix | None = field(default=None)
    """An explicit matrix over the joint domain (checked against the schema by the program)."""
    postprocess: str = parameter(POSTPROCESS, DEFAULT_POSTPROCESS,
                                 help="post-processing of the eq. (2) estimate (paper: clip-rescale)")
    max_cells: int = parameter(Int(min=2), DEFAULT_JOINT_MAX_CELLS, help="largest joint domain accepted")

    def validate(self) -> None:
        given = [k for k in ("p", "epsilon", "matrix") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ConfigurationError(f"give exactly one of p, epsilon or matrix, got {given or 'none'}")


ORACLE = Choice(ORACLE_CHOICES)
"""A frequency oracle: the least-variance one per unit (``"adaptive"``), or GRR, OUE, OLH."""


@dataclass(frozen=True, kw_only=True)
class OracleParameters(Parameters):
    """Parameters of SPL and SMP (:func:`mprr.protocols.multidim.spl_steps`, ``smp_steps``)."""

    protocol: ClassVar[str] = "SPL"

    epsilon: float = parameter(EPSILON, help="ε per respondent (sequential over everything it reports)")
    oracle: str = parameter(ORACLE, "adaptive",
                            help="frequency oracle: the least-variance one per unit (adaptive), or grr / oue / olh")
    postprocess: str = parameter(ORACLE_POSTPROCESSING, DEFAULT_ORACLE_POSTPROCESS,
                                 help="post-processing of the oracle estimates (norm-sub, the literature's)")


@dataclass(frozen=True, kw_only=True)
class RSFDParameters(Parameters):
    """Parameters of RS+FD[GRR] (:func:`mprr.protocols.multidim.rsfd_steps`)."""

    protocol: ClassVar[str] = "RS+FD"

    epsilon: float = parameter(EPSILON, help="ε per respondent, record-level")
    postprocess: str = parameter(ORACLE_POSTPROCESSING, DEFAULT_ORACLE_POSTPROCESS,
                                 help="post-processing of the oracle estimates (norm-sub, the literature's)")


@dataclass(frozen=True, kw_only=True)
class CALMParameters(OracleParameters):
    """Parameters of the CALM-style release (:func:`mprr.protocols.marginal_release.calm_steps`):
    one sampled k-way marginal per respondent (k at most m, checked by the program)."""

    protocol: ClassVar[str] = "CALM-style"

    k: int = parameter(Int(min=2, max=3), 2, help="size of the released marginals, 2 or 3")


@dataclass(frozen=True, kw_only=True)
class SampledClustersParameters(OracleParameters):
    """Parameters of RR-Clusters with sampled respondents
    (:func:`mprr.protocols.sampled_clusters.rr_clusters_sampled_steps`); ``None``: the plan chooses."""

    protocol: ClassVar[str] = "RR-Clusters-Sampled"

    n: int | None = parameter(Int(min=1), None, help="expected number of respondents, for the plan")
    discovery_share: float | None = parameter(Float(min=0.0, max=1.0, max_exclusive=True), None,
                                              help="share of the respondents that discover dependences (φ)")
    Tv: int | None = parameter(Int(min=1), None, help="largest number of value combinations of a cluster")
    alpha: float = parameter(Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True), 0.05,
                             help="family-wise level of the tests of independence (Bonferroni over the pairs)")
    design: str | None = parameter(Choice(DESIGNS), None,
                                   help="clusters (disjoint), cover (overlapping units of <= 3 attributes) or "
                                        "clusters-or-cover (decided after the discovery)")


@dataclass(frozen=True, kw_only=True)
class LambdaParameters(Parameters):
    """Parameters of the λ-randomization protocol (lambda paper Section 5;
    :func:`mprr.protocols.lambda_protocol.lambda_steps`): exactly one of ``lambdas`` (one per
    attribute, their count checked against the schema by the program) and ``epsilon``."""

    protocol: ClassVar[str] = "lambda-randomization"

    lambdas: tuple[float, ...] | None = parameter(
        List(Float(min=0.0, max=1.0, min_exclusive=True), min_len=1), None,
        help="the controller's first choice, one λ_j in (0, 1] per attribute")
    epsilon: float | None = parameter(EPSILON, None, help="instead of lambdas: ε per respondent")
    min_bits: float | None = parameter(Float(), None, help="step 3: smallest joint entropy rate (bits)")
    max_bits: float | None = parameter(Float(), None, help="step 3: largest joint entropy rate (bits)")
    min_beta: float | None = parameter(Float(), None, help="step 3: smallest β")
    max_beta: float | None = parameter(Float(), None, help="step 3: largest β")
    regenerate: Callable[[tuple[float, ...], Any], Sequence[float]] | None = field(default=None)
    """``regenerate(lambdas, check) -> new lambdas`` after an unsatisfactory check (``check``: the
    :class:`mprr.protocols.lambda_protocol.EntropyCheck`; not with ``epsilon``)."""
    max_rounds: int = parameter(Int(min=1), 20, help="largest number of entropy checks")
    postprocess: str = parameter(POSTPROCESS, DEFAULT_POSTPROCESS,
                                 help="post-processing of the eq. (2) estimate (paper: clip-rescale)")
    max_cells: int = parameter(Int(min=1), MAX_TABLE_CELLS, help="largest joint domain estimated")

    def validate(self) -> None:
        if (self.lambdas is None) == (self.epsilon is None):
            raise ConfigurationError(
                f"give lambdas (the lambda paper's first choice) or epsilon (per respondent), exactly one; got "
                f"lambdas = {self.lambdas!r}, epsilon = {self.epsilon!r}"
            )
        if self.epsilon is not None and self.regenerate is not None:
            raise ConfigurationError("regenerate cannot be combined with epsilon: new λ would change the budget")
        if self.regenerate is not None and not callable(self.regenerate):
            raise ConfigurationError(f"regenerate must be a function (lambdas, check) -> lambdas, got {self.regenerate!r}")


A = TypeVar("A", bound="AdjustmentOptions")


@dataclass(frozen=True, kw_only=True)
class AdjustmentOptions(Parameters):
    """Algorithm 2's options (main paper Section 5; :func:`mprr.protocols.adjustment.rr_adjustment`,
    :func:`mprr.adjustment.adjust`), added to a base protocol's parameters."""

    base: ClassVar[str] = ""
    """The protocol whose release Algorithm 2 reweights."""

    tol: float = parameter(Float(min=0.0, min_exclusive=True), 1e-9,
                           help="RR-Adjustment stops when the largest marginal gap is at most this")
    max_iter: int = parameter(Int(min=1), 1000, help="RR-Adjustment: most IPF sweeps")
    exact_limit: bool = parameter(Bool(), False, help="RR-Adjustment: iterate to the exact limit (adjust's)")

    @classmethod
    def from_mapping(cls: type[A], values: Mapping[str, Any], *, protocol: str | None = None) -> A:
        """Build from a mapping; on :class:`AdjustmentOptions` itself (the registry's generic
        ``"RR-Adjustment"``), the parameters of RR-Adjustment after ``values["base"]``
        (``"RR-Independent"`` by default, or ``"RR-Clusters"``): that base's and Algorithm 2's.

        Raises
        ------
        ConfigurationError
            For a base that is not adjustable, naming the adjustable ones; else as
            :meth:`Parameters.from_mapping`.
        """
        if cls.base:
            return super().from_mapping(values, protocol=protocol)
        rest = dict(values)
        base = rest.pop("base", "RR-Independent")
        adjusted = {c.base: c for c in cls.__subclasses__() if c.base}
        if base not in adjusted:
            raise ConfigurationError(f"base must be one of {list(adjusted)}, got {base!r}")
        return adjusted[base].from_mapping(rest, protocol=protocol)


@dataclass(frozen=True, kw_only=True)
class RRIndependentAdjustmentParameters(AdjustmentOptions, RRIndependentParameters):
    """Parameters of RR-Independent+Adjustment (:func:`mprr.protocols.adjustment.rr_adjustment_steps`):
    RR-Independent's and Algorithm 2's."""

    protocol: ClassVar[str] = "RR-Independent+Adjustment"
    base: ClassVar[str] = "RR-Independent"


@dataclass(frozen=True, kw_only=True)
class RRClustersAdjustmentParameters(AdjustmentOptions, RRClustersParameters):
    """Parameters of RR-Clusters+Adjustment (:func:`mprr.protocols.adjustment.rr_adjustment_steps`):
    RR-Clusters' and Algorithm 2's."""

    protocol: ClassVar[str] = "RR-Clusters+Adjustment"
    base: ClassVar[str] = "RR-Clusters"
