"""Sans-I/O protocol steps: what a protocol asks of the parties, and what comes back.

Every protocol of :mod:`mprr.protocols` is written once, as a *step program*: a generator
that takes its parameters, ``yield`` s one step per communication phase and receives what
the parties released, then ``return`` s the :class:`~mprr.protocols.result.ProtocolResult`::

    def rr_independent_steps(schema, params: RRIndependentParameters):
        specs, mats = chosen_specs(schema.sizes, p=params.p, epsilon_per_attribute=params.epsilon_per_attribute,
                                   epsilon=params.epsilon, matrices=params.matrices)
        got = yield Release("attributes", singletons(schema.m), specs)
        return release_result("RR-Independent", n=got.n, releases=(got.data,),
                              estimate=product_estimate(got.data, schema.sizes, params.postprocess), ...)

The program never touches data, randomness, messages or clocks (the h11 pattern).  What it
will ask is declared before it runs, from its parameters: its plan (:mod:`mprr.protocols.plan`,
``@declares(rr_independent_plan)``), which a runtime reads to set the run up.  Drivers answer
its steps:

- :func:`mprr.protocols.local.run_local` — every party at once, vectorized (the fast path);
- :func:`parties.driver.run_actors` — the controller actor sends one request per step to the
  party actors, gathers their replies (or runs a secure sum) and sends back what came.

Both build each unit's matrix from the same :class:`MatrixSpec` with the same constructor,
so the same seed gives bit-identical results.  Steps:

:class:`Release`
    "Release these units through these matrices" (phase name, units in draw order, one
    :class:`MatrixSpec` per unit; optionally which units replay a unit of an earlier phase).
:class:`SecureSum`
    "Secure-sum these units" (main paper 4.2 exact values, or 4.3 values randomized through
    the units' matrices): the controller learns only the tallies.
:class:`Report`
    "Report these units through these frequency oracles" (:mod:`mprr.oracles`): every unit
    (``assign="every"``, SPL with OUE / OLH), or **one** unit per party drawn by the party
    itself with public weights (``"sampled"``: SMP, CALM-style marginals, sampled clusters),
    or one real unit hidden among uniform fake values for the others (``"sampled-fake"``:
    RS+FD, Arcolezi et al. CIKM 2021).  The public rule (units, weights, oracles) is the same
    for every party; only the draw is the party's.

A program takes, after the schema, either its protocol's parameter object (a frozen
:class:`mprr.parameters.Parameters`, validated once when it was built: the program reads its
fields and checks nothing again; ``rr_clusters_steps(schema, params)``) or keywords (a program of
one's own, ``pairs_steps(schema, *, pairs, epsilon)``); :func:`call_program` starts either.

Reply: :class:`Released` (the :class:`~mprr.protocols.release.ReleasedData`, the number of
parties in it, and driver details such as the secure-sum session).

Matrices never travel densely when they have a closed form: a
:class:`~mprr.matrix_families.MatrixSpec` (re-exported here, as :data:`Matrix` is) names a
*family* of :data:`mprr.matrix_families.MATRIX_FAMILIES` (keep-or-uniform, grr,
cluster-optimal, lambda-kron, dense, or one registered by a user) and its parameters, and
whoever randomizes rebuilds the matrix over the joint domain of the unit's attributes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, Union

from mprr.data import Schema
from mprr.errors import ConfigurationError
from mprr.matrix_families import Matrix, MatrixSpec
from mprr.oracles import GRR, OLH, OUE, FrequencyOracle, best_oracle
from mprr.parameters import Parameters
from mprr.protocols.release import ReleasedData
from mprr.protocols.result import ProtocolResult

__all__ = [
    "ASSIGNMENTS",
    "Arguments",
    "Matrix",
    "MatrixSpec",
    "ORACLES",
    "OracleSpec",
    "Program",
    "Release",
    "Released",
    "Report",
    "SecureSum",
    "Step",
    "call_program",
    "singletons",
]


def singletons(m: int) -> tuple[tuple[int, ...], ...]:
    """``((0,), (1,), ..., (m-1,))`` — one unit per attribute, schema order."""
    return tuple((j,) for j in range(m))



def _units(units: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(a) for a in u) for u in units)


@dataclass(frozen=True)
class Release:
    """Step: every party releases ``units`` through ``specs`` (one uniform per fresh unit).

    Attributes
    ----------
    phase
        Phase name (the ledger's and the result's).
    units
        Attribute indices of each unit, in draw order.
    specs
        One :class:`MatrixSpec` per unit.
    replays
        ``None``, or per unit ``None`` (release afresh) or ``(phase, j)``: the unit is the same
        attributes with the same matrix as unit ``j`` of the earlier ``phase``, so every party
        resends that value (no uniform, no ε; :class:`~mprr.protocols.release.ReleasedData`
        ``replayed``).
    notes
        Values the controller derived before this step (dependences, clusters), for its view.
    """

    phase: str
    units: tuple[tuple[int, ...], ...]
    specs: tuple[MatrixSpec, ...]
    replays: tuple[tuple[str, int] | None, ...] | None = None
    notes: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", _units(self.units))
        object.__setattr__(self, "specs", tuple(self.specs))
        if len(self.specs) != len(self.units):
            raise ConfigurationError(
                f"a release needs one matrix per unit: {len(self.units)} units, {len(self.specs)} specs"
            )
        if self.replays is not None:
            object.__setattr__(self, "replays", tuple(self.replays))
            if len(self.replays) != len(self.units):
                raise ConfigurationError(
                    f"replays must have one entry per unit ({len(self.units)}), got {len(self.replays)}"
                )

    @property
    def replayed(self) -> tuple[bool, ...] | None:
        """Per unit, whether it replays an earlier release (``None`` without replays)."""
        return None if self.replays is None else tuple(r is not None for r in self.replays)


@dataclass(frozen=True)
class SecureSum:
    """Step: the parties' values of ``units`` are added by a secure sum (main paper 4.2 / 4.3).

    Attributes
    ----------
    phase
        Phase name.
    units
        Attribute indices of each unit (the pairs, lexicographic).
    specs
        ``None``: the true values (4.2, ε = ∞, no DP guarantee); otherwise one
        :class:`MatrixSpec` per unit, each value randomized first (4.3, one uniform per unit).

    No ε travels with the step: whoever answers it books each matrix's own eq. (4) ε (a
    party never takes ε from the controller).
    """

    phase: str
    units: tuple[tuple[int, ...], ...]
    specs: tuple[MatrixSpec, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", _units(self.units))
        if self.specs is not None:
            object.__setattr__(self, "specs", tuple(self.specs))


ORACLES: tuple[str, ...] = ("grr", "oue", "olh")
"""Frequency oracles a :class:`Report` step may name (:mod:`mprr.oracles`)."""

ORACLE_CHOICES: tuple[str, ...] = ("adaptive", *ORACLES)
"""A protocol's choice of oracle: ``"adaptive"`` (the least-variance oracle per unit) or one
oracle for every unit."""


@dataclass(frozen=True)
class OracleSpec:
    """A frequency oracle named by family and ε, rebuilt over a unit's domain by whoever randomizes.

    ``family`` is one of :data:`ORACLES` (GRR, OUE, OLH of Wang et al., USENIX Security 2017);
    ``epsilon`` the ε of one report, finite and > 0.
    """

    family: str
    epsilon: float

    def __post_init__(self) -> None:
        if self.family not in ORACLES:
            raise ConfigurationError(f"oracle family must be one of {list(ORACLES)}, got {self.family!r}")
        eps = float(self.epsilon)
        if not math.isfinite(eps) or eps <= 0.0:
            raise ConfigurationError(f"oracle epsilon must be finite and > 0, got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", eps)

    @classmethod
    def best(cls, cells: int, epsilon: float) -> OracleSpec:
        """The oracle of least variance for ``cells`` values at ε (:func:`mprr.oracles.best_oracle`)."""
        return cls(best_oracle(cells, epsilon).name.lower(), epsilon)

    def build(self, sizes: Sequence[int]) -> FrequencyOracle:
        """The oracle over the joint domain of attributes with ``sizes`` categories (C order)."""
        cells = math.prod(int(s) for s in sizes)
        if self.family == "grr":
            return GRR(cells, self.epsilon)
        if self.family == "oue":
            return OUE(cells, self.epsilon)
        return OLH(cells, self.epsilon)


ASSIGNMENTS: tuple[str, ...] = ("every", "sampled", "sampled-fake")
"""How a :class:`Report` step assigns units to a party."""


@dataclass(frozen=True)
class Report:
    """Step: every party reports units through their frequency oracles.

    Attributes
    ----------
    phase
        Phase name.
    units
        Attribute indices of each unit.
    oracles
        One :class:`OracleSpec` per unit.
    assign
        ``"every"``: each party reports every unit (ε of the units add up, sequential).
        ``"sampled"``: each party draws one unit with ``weights`` and sends its index and its
        report (ε of one report).  ``"sampled-fake"``: as ``"sampled"``, but the party sends a
        value for every unit, uniform fake values for the others (GRR oracles only), and not
        the index.
    weights
        ``"sampled"`` / ``"sampled-fake"``: the weight of each unit (public, the same for every
        party; ``None``: uniform), kept as given so that a step rebuilt from a request on the
        wire has the very same :attr:`probabilities` (the weights divided by their ``math.fsum``).
    abstain
        ``"sampled"``: the probability that a party reports nothing in this phase (its draw; the
        respondents are split between phases instead of the budget).
    exclude
        ``"sampled"``: phases whose reporters report nothing in this phase (each respondent
        spends its budget in one phase only).

    Notes
    -----
    Draw order (per party, :mod:`mprr.streams`): ``"every"`` — one block of the oracle's
    ``uniforms_per_report`` uniforms per unit, in unit order; ``"sampled"`` — one uniform picks
    the unit (inverse CDF of ``abstain`` then the weights scaled by ``1 − abstain``), then
    ``max_j`` of the oracles' uniforms per report, the assigned oracle using the first it needs
    (a party that abstains or is excluded draws them too, and sends nothing); ``"sampled-fake"`` — one uniform picks the
    unit, then one block per unit in unit order: the assigned unit's block perturbs its value,
    every other block's first uniform draws its fake value (``floor(u · cells)``).
    """

    phase: str
    units: tuple[tuple[int, ...], ...]
    oracles: tuple[OracleSpec, ...]
    assign: str = "every"
    weights: tuple[float, ...] | None = None
    abstain: float = 0.0
    exclude: tuple[str, ...] = ()
    notes: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", _units(self.units))
        object.__setattr__(self, "oracles", tuple(self.oracles))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        abstain = float(self.abstain)
        if not 0.0 <= abstain < 1.0:
            raise ConfigurationError(f"abstain must be in [0, 1), got {self.abstain!r}")
        object.__setattr__(self, "abstain", abstain)
        if (abstain or self.exclude) and self.assign != "sampled":
            raise ConfigurationError("abstain and exclude apply to assign='sampled' only")
        if self.assign not in ASSIGNMENTS:
            raise ConfigurationError(f"assign must be one of {list(ASSIGNMENTS)}, got {self.assign!r}")
        if not self.units:
            raise ConfigurationError("a report step needs at least one unit")
        if len(self.oracles) != len(self.units):
            raise ConfigurationError(
                f"a report step needs one oracle per unit: {len(self.units)} units, {len(self.oracles)} oracles"
            )
        if self.weights is not None:
            if self.assign == "every":
                raise ConfigurationError("weights apply to assign='sampled' or 'sampled-fake' only")
            w = tuple(float(x) for x in self.weights)
            if len(w) != len(self.units) or not all(math.isfinite(x) and x >= 0.0 for x in w) or sum(w) <= 0.0:
                raise ConfigurationError(
                    f"weights must be {len(self.units)} finite non-negative numbers with a positive sum, "
                    f"got {self.weights!r}"
                )
            object.__setattr__(self, "weights", w)
        if self.assign == "sampled-fake" and any(o.family != "grr" for o in self.oracles):
            raise ConfigurationError(
                f"fake values (assign='sampled-fake', RS+FD) are drawn for GRR oracles only, got "
                f"{[o.family for o in self.oracles]}"
            )

    @property
    def sampled(self) -> bool:
        """Whether each party reports one drawn unit (``"sampled"`` or ``"sampled-fake"``)."""
        return self.assign != "every"

    @cached_property
    def probabilities(self) -> tuple[float, ...]:
        """The probability that a party reports each unit (1 for ``"every"``): the weights
        divided by their ``math.fsum``."""
        k = len(self.units)
        if not self.sampled:
            return (1.0,) * k
        if self.weights is None:
            return (1.0 / k,) * k
        total = math.fsum(self.weights)
        return tuple(x / total for x in self.weights)


Step = Release | SecureSum | Report


@dataclass(frozen=True, eq=False)
class Released:
    """What a step brought back: the phase's release, over ``n`` parties.

    ``details`` holds what the driver adds (e.g. ``{"secure_sum": {"engine": ..., ...}}`` on
    the actor path); a program copies it into its result's details.
    """

    data: ReleasedData
    n: int
    details: Mapping[str, Any] = field(default_factory=dict)


Program = Generator[Step, Released, ProtocolResult]
"""A step program: yields steps, receives :class:`Released`, returns the result."""


Arguments = Union[Parameters, Mapping[str, Any]]
"""What a step program is called with after the schema: its protocol's parameter object, or the
keywords of a program of one's own (module docstring)."""

T = TypeVar("T")


def call_program(program: Callable[..., T], schema: Schema, params: Arguments | None = None, /,
                 **keywords: Any) -> T:
    """Start ``program`` (module docstring): ``program(schema, params)`` with a parameter object,
    ``program(schema, **keywords)`` with keywords (given as ``keywords`` or as a mapping ``params``).

    Raises
    ------
    ConfigurationError
        If both a parameter object (or mapping) and keywords are given.
    """
    if params is None:
        return program(schema, **keywords)
    if keywords:
        raise ConfigurationError(f"give the program's parameters as one object or as keywords, not both; got "
                                 f"{type(params).__name__} and {sorted(keywords)}")
    if isinstance(params, Parameters):
        return program(schema, params)
    return program(schema, **params)
