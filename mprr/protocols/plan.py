"""The plan of a step program: what it will ask of the parties, declared before it runs.

A step program (:mod:`mprr.protocols.steps`) learns the data only through the replies to its
steps; what it will ask *before* it sees any reply is a function of the public schema and its
parameters.  That function is its **plan function**, declared on the program with
:func:`declares`; :func:`plan_of` gives the :class:`Plan`:

- its phases in order (:class:`PhasePlan`): a release, a secure sum or a frequency-oracle
  report, with the units when they are fixed in advance (``None`` when the program chooses
  them from earlier replies, like RR-Clusters' clusters after Algorithm 1);
- every secure sum with the length of each party's vector, Σ over its units of Π |A_a| (the
  one-hot vector of main paper 4.2 / 4.3), and whether it adds true values (4.2, ε = ∞);
- what a party will be asked to apply in each phase: its matrix families
  (:data:`mprr.matrix_families.MATRIX_FAMILIES`, a release or a secure sum of randomized values)
  or frequency-oracle families (:data:`mprr.protocols.steps.ORACLES`, reports), when declared;
- its :class:`Needs`: a secure-sum engine (any secure sum), party-to-party links (a full mesh)
  and a PKI; the last two are the engine's, added by the runtime that picks it.

A runtime sets a run up from the plan (hosting, topology, keys, cost warnings) instead of
guessing from parameters, and the actor driver checks every step the program yields against
it (:meth:`Plan.check`): a program that asks for what it did not declare stops with a
:class:`~mprr.errors.ProtocolError` naming the step.

A program without a declared plan function gets one from a **dry run**
(:func:`dry_run_plan`): the local driver answers it on three contrasting synthetic data sets of
the schema (every record in category 0; independent uniform records; records whose
attributes all follow the record's index), and the plan is what the runs asked for, units
included, when they agree.  When they differ the program's steps depend on the data, and it
must declare its plan.

Usage::

    def pairs_plan(schema, *, pairs, epsilon):
        return Plan((PhasePlan.release("pairs", pairs),))

    @declares(pairs_plan)
    def pairs_steps(schema, *, pairs, epsilon): ...

    plan_of(pairs_steps, schema, pairs=[(0, 1)], epsilon=1.0).phases
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from mprr.data import Dataset, Schema
from mprr.errors import ConfigurationError, MprrError, ProtocolError
from mprr.matrix_families import MATRIX_FAMILIES
from mprr.protocols.steps import ASSIGNMENTS, ORACLES, Arguments, Release, Released, Report, SecureSum, Step, call_program

__all__ = [
    "DRY_RUN_RECORDS",
    "PHASE_KINDS",
    "Needs",
    "PhasePlan",
    "Plan",
    "PlanFunction",
    "declares",
    "dry_run_plan",
    "plan_of",
    "sum_cells",
]

PHASE_KINDS: tuple[str, ...] = ("release", "secure-sum", "report")
"""The kinds of phase: :class:`~mprr.protocols.steps.Release`, :class:`~mprr.protocols.steps.SecureSum`,
:class:`~mprr.protocols.steps.Report`."""

Units = tuple[tuple[int, ...], ...]


def sum_cells(units: Iterable[Sequence[int]], sizes: Sequence[int]) -> int:
    """Length of each party's secure-sum vector: Σ over the units of Π_{a ∈ unit} |A_a|
    (one one-hot block per unit, main paper 4.2 / 4.3)."""
    return sum(math.prod(int(sizes[a]) for a in u) for u in units)


def _units(units: Iterable[Sequence[int]]) -> Units:
    return tuple(tuple(int(a) for a in u) for u in units)


def _families(families: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if families is None else tuple(dict.fromkeys(families))


@dataclass(frozen=True)
class PhasePlan:
    """One phase of a plan.

    Attributes
    ----------
    phase
        The phase name (the step's, the ledger's and the result's).
    kind
        One of :data:`PHASE_KINDS`.
    units
        The units in order, or ``None``: chosen by the program from earlier replies.
    cells
        ``"secure-sum"``: the length of each party's vector (:func:`sum_cells`); ``None``
        otherwise.
    exact
        ``"secure-sum"``: the true values are added (main paper 4.2, ε = ∞).
    assign
        ``"report"``: how units are assigned to a party (:data:`mprr.protocols.steps.ASSIGNMENTS`).
    families
        What a party will be asked to apply, each family once in order of first use: the
        matrix families (a release, a secure sum; registered in
        :data:`~mprr.matrix_families.MATRIX_FAMILIES`, canonical names) or the frequency
        oracles (a report; :data:`~mprr.protocols.steps.ORACLES`); ``()`` for a secure sum of
        exact values; ``None``: not declared (any registered family).
    """

    phase: str
    kind: str
    units: Units | None = None
    cells: int | None = None
    exact: bool = False
    assign: str | None = None
    families: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.phase, str) or not self.phase:
            raise ConfigurationError(f"phase must be a non-empty string, got {self.phase!r}")
        if self.kind not in PHASE_KINDS:
            raise ConfigurationError(f"kind of phase {self.phase!r} must be one of {list(PHASE_KINDS)}, "
                                     f"got {self.kind!r}")
        if self.units is not None:
            object.__setattr__(self, "units", _units(self.units))
        secure = self.kind == "secure-sum"
        if secure and (self.units is None or self.cells is None or self.cells < 1):
            raise ConfigurationError(f"secure sum {self.phase!r} needs its units and cells >= 1 "
                                     f"(the vector length), got units {self.units!r} and cells {self.cells!r}")
        if not secure and (self.cells is not None or self.exact):
            raise ConfigurationError(f"cells and exact apply to a secure sum only; phase {self.phase!r} is a "
                                     f"{self.kind}, got cells = {self.cells!r}, exact = {self.exact!r}")
        if (self.kind == "report") != (self.assign is not None) or (
                self.assign is not None and self.assign not in ASSIGNMENTS):
            raise ConfigurationError(f"assign of phase {self.phase!r} ({self.kind}) must be "
                                     f"{'one of ' + str(list(ASSIGNMENTS)) if self.kind == 'report' else 'None'}, "
                                     f"got {self.assign!r}")
        if self.families is not None:
            object.__setattr__(self, "families", self._checked_families(tuple(self.families)))

    def _checked_families(self, families: tuple[str, ...]) -> tuple[str, ...]:
        """``families`` in canonical names, each once (ConfigurationError naming the phase and what is allowed)."""
        if self.kind == "secure-sum" and self.exact and families:
            raise ConfigurationError(f"secure sum {self.phase!r} adds exact values: its families must be (), "
                                     f"got {list(families)}")
        if self.kind == "report":
            bad = [f for f in families if f not in ORACLES]
            if bad:
                raise ConfigurationError(f"families of report phase {self.phase!r} must be frequency oracles "
                                         f"among {list(ORACLES)}, got {bad}")
            return tuple(dict.fromkeys(families))
        bad = [f for f in families if not isinstance(f, str) or not MATRIX_FAMILIES.accepts(f)]
        if bad:
            raise ConfigurationError(f"families of {self.kind} phase {self.phase!r} must be registered matrix "
                                     f"families among {list(MATRIX_FAMILIES)}, got {bad}")
        return tuple(dict.fromkeys(MATRIX_FAMILIES.lookup(f).name for f in families))

    @classmethod
    def release(cls, phase: str, units: Iterable[Sequence[int]] | None = None, *,
                families: Iterable[str] | None = None) -> PhasePlan:
        """A release (:class:`~mprr.protocols.steps.Release`) of ``units`` (``None``: chosen later)
        through matrices of ``families`` (``None``: not declared)."""
        return cls(phase, "release", None if units is None else _units(units), families=_families(families))

    @classmethod
    def secure_sum(cls, phase: str, units: Iterable[Sequence[int]], sizes: Sequence[int], *,
                   exact: bool, families: Iterable[str] | None = None) -> PhasePlan:
        """A secure sum (:class:`~mprr.protocols.steps.SecureSum`) of ``units`` over attributes
        of ``sizes``: exact values (4.2; families ``()``) or values randomized first through
        matrices of ``families`` (4.3; ``None``: not declared)."""
        u = _units(units)
        declared = () if exact and families is None else _families(families)
        return cls(phase, "secure-sum", u, sum_cells(u, sizes), exact=bool(exact), families=declared)

    @classmethod
    def report(cls, phase: str, units: Iterable[Sequence[int]] | None = None, *, assign: str,
               families: Iterable[str] | None = None) -> PhasePlan:
        """Frequency-oracle reports (:class:`~mprr.protocols.steps.Report`) of ``units`` through
        oracles of ``families`` (``None``: not declared)."""
        return cls(phase, "report", None if units is None else _units(units), assign=assign,
                   families=_families(families))

    @classmethod
    def of(cls, step: Step, sizes: Sequence[int]) -> PhasePlan:
        """The phase a step carries out (units and families included)."""
        if isinstance(step, Release):
            return cls.release(step.phase, step.units, families=(s.family for s in step.specs))
        if isinstance(step, Report):
            return cls.report(step.phase, step.units, assign=step.assign, families=(o.family for o in step.oracles))
        if isinstance(step, SecureSum):
            return cls.secure_sum(step.phase, step.units, sizes, exact=step.specs is None,
                                  families=None if step.specs is None else (s.family for s in step.specs))
        raise ConfigurationError(f"a step program yields Release, SecureSum or Report steps, got {type(step).__name__}")

    def admits(self, done: PhasePlan) -> bool:
        """Whether ``done`` (:meth:`of` a step) carries out this phase: equal, units aside
        where this phase left them open, its families among those declared (if declared)."""
        same = (done.phase, done.kind, done.cells, done.exact, done.assign) == (
            self.phase, self.kind, self.cells, self.exact, self.assign)
        families = self.families is None or set(done.families or ()) <= set(self.families)
        return same and families and (self.units is None or done.units == self.units)

    def describe(self) -> str:
        """One line: kind, phase, units (or "units chosen at run time"), vector length and families."""
        units = "units chosen at run time" if self.units is None else f"{len(self.units)} units {list(self.units)}"
        extra = (f", {self.cells} cells, {'exact' if self.exact else 'randomized'} values" if self.cells is not None
                 else f", assign {self.assign!r}" if self.assign else "")
        families = f", families {list(self.families)}" if self.families else ""
        return f"{self.kind} {self.phase!r} ({units}{extra}{families})"


@dataclass(frozen=True)
class Needs:
    """What a run needs besides the star of controller-party links.

    Attributes
    ----------
    engine
        A secure-sum engine (the plan has a secure sum).
    mesh
        Direct party-to-party links (a full mesh).
    pki
        Signing keys from a PKI the controller cannot alter.
    """

    engine: bool = False
    mesh: bool = False
    pki: bool = False

    def __or__(self, other: Needs) -> Needs:
        return Needs(self.engine or other.engine, self.mesh or other.mesh, self.pki or other.pki)

    def names(self) -> tuple[str, ...]:
        """The needs that hold, by name (``"engine"``, ``"mesh"``, ``"pki"``)."""
        return tuple(name for name in ("engine", "mesh", "pki") if getattr(self, name))


@dataclass(frozen=True)
class Plan:
    """A step program's plan: its phases in order and its needs (module docstring).

    ``needs`` always includes ``engine`` when a phase is a secure sum.
    """

    phases: tuple[PhasePlan, ...]
    needs: Needs = field(default_factory=Needs)

    def __post_init__(self) -> None:
        phases = tuple(self.phases)
        if not all(isinstance(p, PhasePlan) for p in phases):
            raise ConfigurationError(f"phases must be PhasePlan objects, got {[type(p).__name__ for p in phases]}")
        names = [p.phase for p in phases]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"phase names of a plan must be distinct, got {names}")
        if not isinstance(self.needs, Needs):
            raise ConfigurationError(f"needs must be a Needs, got {type(self.needs).__name__}")
        object.__setattr__(self, "phases", phases)
        object.__setattr__(self, "needs", self.needs | Needs(engine=any(p.kind == "secure-sum" for p in phases)))

    @property
    def secure_sums(self) -> tuple[PhasePlan, ...]:
        """The secure-sum phases."""
        return tuple(p for p in self.phases if p.kind == "secure-sum")

    def phase(self, name: str) -> PhasePlan:
        """The phase called ``name`` (ConfigurationError naming the phases there are)."""
        for p in self.phases:
            if p.phase == name:
                return p
        raise ConfigurationError(f"the plan has no phase {name!r}; its phases: {[p.phase for p in self.phases]}")

    @property
    def families(self) -> tuple[str, ...]:
        """Every matrix family a party will be asked to apply (declared ones, in phase order)."""
        return tuple(dict.fromkeys(f for p in self.phases if p.kind != "report" for f in p.families or ()))

    @property
    def oracles(self) -> tuple[str, ...]:
        """Every frequency-oracle family a party will be asked to report through (declared ones)."""
        return tuple(dict.fromkeys(f for p in self.phases if p.kind == "report" for f in p.families or ()))

    @property
    def sum_cells(self) -> tuple[int, ...]:
        """Each secure sum's vector length per party, in phase order."""
        return tuple(p.cells for p in self.secure_sums if p.cells is not None)

    def with_needs(self, needs: Needs) -> Plan:
        """This plan with ``needs`` added (e.g. an engine's mesh and PKI)."""
        return Plan(self.phases, self.needs | needs)

    def check(self, index: int, step: Step, sizes: Sequence[int]) -> None:
        """Check that ``step``, the program's step number ``index`` (from 0), is the plan's.

        Raises
        ------
        ProtocolError
            If the program yields more steps than planned, or a step that does not carry out
            the planned phase (kind, phase name, units, vector length).
        """
        done = PhasePlan.of(step, sizes)
        if index >= len(self.phases):
            raise ProtocolError(f"the program yielded step {index + 1} ({done.describe()}) but its plan declares "
                                f"{len(self.phases)} phase(s)")
        planned = self.phases[index]
        if not planned.admits(done):
            raise ProtocolError(f"step {index + 1} of the program is {done.describe()} but its plan declares "
                                f"{planned.describe()}")

    def check_done(self, steps: int) -> None:
        """Check that a program that yielded ``steps`` steps carried out every planned phase.

        Raises
        ------
        ProtocolError
            If it ended before its last planned phase.
        """
        if steps < len(self.phases):
            raise ProtocolError(f"the program ended after {steps} step(s) but its plan declares "
                                f"{[p.describe() for p in self.phases]}")

    @classmethod
    def of_steps(cls, steps: Iterable[Step], sizes: Sequence[int]) -> Plan:
        """The plan that ``steps`` carry out, units included."""
        return cls(tuple(PhasePlan.of(s, sizes) for s in steps))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly plan."""
        return {"phases": [{"phase": p.phase, "kind": p.kind,
                            "units": None if p.units is None else [list(u) for u in p.units],
                            **({"cells": p.cells, "exact": p.exact} if p.cells is not None else {}),
                            **({"assign": p.assign} if p.assign is not None else {}),
                            **({"families": list(p.families)} if p.families is not None else {})}
                           for p in self.phases],
                "needs": list(self.needs.names())}


PlanFunction = Callable[..., Plan]
"""``plan(schema, params) -> Plan`` (or ``plan(schema, **keywords)``): the plan of a step program
with these parameters, taken as the program takes them."""

F = TypeVar("F", bound=Callable[..., Any])

_DECLARED: dict[Callable[..., Any], PlanFunction] = {}


def declares(plan: PlanFunction) -> Callable[[F], F]:
    """Decorator: the step program it decorates declares ``plan`` as its plan function.

    ``plan`` takes the program's parameters as the program does (its parameter object, or
    keywords: :func:`~mprr.protocols.steps.call_program`; it may ignore those that do not change
    the plan) and must not look at any data.

    Raises
    ------
    ConfigurationError
        If ``plan`` is not callable.
    """
    if not callable(plan):
        raise ConfigurationError(f"plan must be a plan function plan(schema, **params), got {type(plan).__name__}")

    def declare(program: F) -> F:
        _DECLARED[program] = plan
        return program

    return declare


def declared(program: Callable[..., Any]) -> PlanFunction | None:
    """The plan function ``program`` declared (``None``: none)."""
    return _DECLARED.get(program)


def plan_of(program: Callable[..., Any], schema: Schema, params: Arguments | None = None, /, **keywords: Any) -> Plan:
    """The plan of ``program`` started with ``params`` (its parameter object) or ``keywords``
    (:func:`~mprr.protocols.steps.call_program`): its declared plan function's, which takes the
    same arguments, else a dry run's.

    Raises
    ------
    ConfigurationError
        If the plan function does not return a :class:`Plan`, or (no declared plan) the dry
        runs fail or disagree (:func:`dry_run_plan`).
    """
    function = _DECLARED.get(program)
    if function is None:
        return dry_run_plan(program, schema, params, **keywords)
    plan = call_program(function, schema, params, **keywords)
    if not isinstance(plan, Plan):
        raise ConfigurationError(f"the plan function of {getattr(program, '__name__', program)!r} must return a "
                                 f"Plan, got {type(plan).__name__}")
    return plan


DRY_RUN_RECORDS = 64
"""Records of each synthetic data set of a dry run."""


def _dry_datasets(schema: Schema) -> tuple[Dataset, ...]:
    """Every record in category 0 (the most skewed marginals); independent uniform records;
    records whose every attribute is the record's index modulo its size (all attributes as
    dependent as their sizes allow)."""
    sizes = np.asarray(schema.sizes, dtype=np.int64)
    rng = np.random.default_rng(0)
    constant = np.zeros((DRY_RUN_RECORDS, schema.m), dtype=np.int64)
    uniform = np.floor(rng.random((DRY_RUN_RECORDS, schema.m)) * sizes).astype(np.int64)
    dependent = np.arange(DRY_RUN_RECORDS, dtype=np.int64)[:, None] % sizes[None, :]
    return Dataset(schema, constant), Dataset(schema, uniform), Dataset(schema, dependent)


def _recording(steps: Generator[Step, Released, Any], seen: list[Step]) -> Generator[Step, Released, Any]:
    try:
        step = next(steps)
        while True:
            seen.append(step)
            step = steps.send((yield step))
    except StopIteration as stop:
        return stop.value


def dry_run_plan(program: Callable[..., Any], schema: Schema, params: Arguments | None = None, /,
                 **keywords: Any) -> Plan:
    """The plan of a program that declared none, when its steps do not depend on the data.

    The local driver (:func:`mprr.protocols.local.run_local`) runs the program on three
    synthetic data sets of ``schema`` (:data:`DRY_RUN_RECORDS` records each: every record in
    category 0, independent uniform records, records whose attributes all follow the record's
    index); the plan is the phases every run asked for, units included.

    Raises
    ------
    ConfigurationError
        If a dry run fails, or the runs asked for different steps (the program's steps depend
        on the data: declare its plan with :func:`declares`).
    """
    from mprr.protocols.local import run_local  # the local driver runs programs; it does not need plans

    name = getattr(program, "__name__", repr(program))
    plans = []
    for data in _dry_datasets(schema):
        seen: list[Step] = []
        try:
            run_local(lambda s: _recording(call_program(program, s, params, **keywords), seen), data,
                      rng=np.random.default_rng(1))
        except MprrError as exc:
            raise ConfigurationError(
                f"program {name!r} declares no plan and a dry run on synthetic data of its schema failed ({exc}); "
                "declare its plan with @mprr.protocols.plan.declares(plan_function)") from exc
        plans.append(Plan.of_steps(seen, schema.sizes))
    for other in plans[1:]:
        if _without_families(other) != _without_families(plans[0]):
            raise ConfigurationError(
                f"program {name!r} declares no plan and its steps depend on the data (dry runs on data sets of its "
                f"schema asked for {[p.describe() for p in plans[0].phases]} and "
                f"{[p.describe() for p in other.phases]}); declare its plan with "
                "@mprr.protocols.plan.declares(plan_function)")
    # the families a phase may apply: those of any run (a choice between them may follow the data)
    return Plan(tuple(replace(phase, families=tuple(dict.fromkeys(f for p in plans for f in p.phases[k].families or ())))
                      for k, phase in enumerate(plans[0].phases)), plans[0].needs)


def _without_families(plan: Plan) -> Plan:
    return Plan(tuple(replace(p, families=None) for p in plan.phases), plan.needs)
