"""Per-party privacy budgets: an accountant that grants, replays or refuses releases.

Each party keeps its own :class:`PrivacyAccountant` (the controller is untrusted).  For every
release the controller asks for, the party calls :meth:`PrivacyAccountant.request` (or
:meth:`~PrivacyAccountant.charge`, which raises on refusal) *before* randomizing:

- **replayed** — the very same release (same attributes, same matrix, same channel) is already
  in the ledger: nothing new is spent and the party resends the value it released then
  (``decision.entry_index`` points at it), so a curious controller that asks again learns
  nothing new;
- **refused** — the request is outside the announced plan (:meth:`announce_plan`,
  ``allowed_attributes``) or would push ε over the budget under the accountant's composition
  policy (:mod:`mprr.ledger`); the refusal is recorded in :attr:`refusals`, the ledger is
  unchanged.  A finer (or any different) matrix for something already released is new spending;
- **granted** — the release is appended to the ledger.

:func:`summarize` turns the ledgers of all parties into a :class:`PrivacySummary` (ε per party
min / median / max, per phase, β and entropy bits, "no DP guarantee" when ε = ∞).

The ledger types and composition policies are defined in :mod:`mprr.ledger` and re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from mprr.errors import BudgetExceededError, ConfigurationError, ProtocolError
from mprr.ledger import (
    COMPOSITION_RULES,
    EXACT_KEY,
    Attr,
    CompositionPolicy,
    Ledger,
    Release,
    as_policy,
    attribute_components,
    compose,
    compose_by_phase,
    matrix_fingerprint,
)

__all__ = [
    # re-exported from mprr.ledger
    "Attr",
    "Release",
    "Ledger",
    "CompositionPolicy",
    "COMPOSITION_RULES",
    "EXACT_KEY",
    "as_policy",
    "compose",
    "compose_by_phase",
    "attribute_components",
    "matrix_fingerprint",
    # defined here
    "PlanViolationError",
    "RefusalReason",
    "Outcome",
    "Refusal",
    "Decision",
    "PrivacyAccountant",
    "Stats",
    "PhaseSummary",
    "PrivacySummary",
    "summarize",
]


class PlanViolationError(ProtocolError):
    """The controller asked for a release outside the plan announced to the party.

    Parameters
    ----------
    party
        Identifier of the refusing party, when known.
    """

    def __init__(self, message: str, *, party: int | str | None = None) -> None:
        super().__init__(message)
        self.party = party


class RefusalReason(str, Enum):
    """Why a party refused a release."""

    BUDGET_EXCEEDED = "budget-exceeded"
    PLAN_VIOLATION = "plan-violation"

    def __str__(self) -> str:
        return self.value


class Outcome(str, Enum):
    """What the party does with a request."""

    GRANTED = "granted"
    REPLAYED = "replayed"
    REFUSED = "refused"

    def __str__(self) -> str:
        return self.value


def _fmt(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.6g}"


@dataclass(frozen=True)
class Refusal:
    """A refused request, as kept in :attr:`PrivacyAccountant.refusals` and sent to the controller.

    ``requested`` is the ε the release would have added under the policy (∞ for an exact
    release; 0 for a pure plan violation that was not costed), ``remaining`` the ε left.
    """

    request: Release
    reason: RefusalReason
    message: str
    requested: float
    remaining: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (∞ written as ``"inf"``)."""
        return {
            "request": self.request.name,
            "reason": self.reason.value,
            "message": self.message,
            "requested": "inf" if math.isinf(self.requested) else self.requested,
            "remaining": "inf" if math.isinf(self.remaining) else self.remaining,
        }


@dataclass(frozen=True)
class Decision:
    """The accountant's answer to one request.

    Attributes
    ----------
    outcome
        granted / replayed / refused.
    request
        The release that was asked for.
    entry_index
        Index in the ledger of the release to send: the new entry (granted) or the earlier one
        to resend unchanged (replayed); ``None`` when refused.
    epsilon_before, epsilon_after
        ε spent before and after (equal unless granted).
    refusal
        The :class:`Refusal` record when refused.
    """

    outcome: Outcome
    request: Release
    entry_index: int | None
    epsilon_before: float
    epsilon_after: float
    refusal: Refusal | None = None

    @property
    def granted(self) -> bool:
        return self.outcome is Outcome.GRANTED

    @property
    def replayed(self) -> bool:
        return self.outcome is Outcome.REPLAYED

    @property
    def refused(self) -> bool:
        return self.outcome is Outcome.REFUSED


class PrivacyAccountant:
    """One party's budget, ledger, plan and refusals.

    Parameters
    ----------
    budget
        Largest total ε the party accepts (≥ 0; ``math.inf`` to account without a limit —
        the only way to allow exact 4.2 releases, whose ε is ∞).
    policy
        Composition policy name or :class:`CompositionPolicy` (``"sequential"`` by default).
    party
        Identifier of the party, used in messages and errors.
    allowed_attributes
        If given, every released attribute must be one of these (e.g. the schema the party
        agreed to share); other requests are refused as plan violations.
    rtol
        Relative tolerance on the budget comparison (ε values come from logarithms, so a
        release that lands on the budget up to rounding is accepted).

    Notes
    -----
    Not thread-safe; an actor owns its accountant.  The ledger is an immutable snapshot
    (:class:`~mprr.ledger.Ledger`) replaced on each grant, so a reference taken earlier never
    changes.
    """

    def __init__(
        self,
        budget: float,
        policy: CompositionPolicy | str = CompositionPolicy.SEQUENTIAL,
        *,
        party: int | str | None = None,
        allowed_attributes: Iterable[Attr] | None = None,
        rtol: float = 1e-9,
    ) -> None:
        if isinstance(budget, bool) or not isinstance(budget, (int, float, np.integer, np.floating)):
            raise ConfigurationError(f"budget must be a number >= 0 or math.inf, got {budget!r}")
        if math.isnan(float(budget)) or float(budget) < 0:
            raise ConfigurationError(f"budget must be a number >= 0 or math.inf, got {budget!r}")
        if not (isinstance(rtol, (int, float)) and 0 <= rtol < 1e-3):
            raise ConfigurationError(f"rtol must be in [0, 1e-3), got {rtol!r}")
        self.budget = float(budget)
        self.policy = as_policy(policy)
        self.party = party
        self.rtol = float(rtol)
        self.allowed_attributes: frozenset[Attr] | None = (
            None if allowed_attributes is None else frozenset(allowed_attributes)
        )
        self._ledger = Ledger()
        self._refusals: list[Refusal] = []
        self._replays: list[tuple[Release, int]] = []
        self._plans: dict[str, frozenset[frozenset[Attr]]] = {}

    # ------------------------------------------------------------------ state
    @property
    def ledger(self) -> Ledger:
        """Immutable snapshot of the releases granted so far."""
        return self._ledger

    @property
    def refusals(self) -> tuple[Refusal, ...]:
        """Every refused request, in order."""
        return tuple(self._refusals)

    @property
    def replays(self) -> tuple[tuple[Release, int], ...]:
        """Every repeated request answered from the ledger: (request, index of the original)."""
        return tuple(self._replays)

    @property
    def plans(self) -> Mapping[str, frozenset[frozenset[Attr]]]:
        """Announced plans: phase -> allowed attribute groups (as sets)."""
        return dict(self._plans)

    def spent(self) -> float:
        """ε spent so far under the accountant's policy (∞: no DP guarantee)."""
        return self._ledger.total(self.policy)

    def spent_by_phase(self) -> dict[str, float]:
        """ε spent in each phase under the accountant's policy."""
        return self._ledger.by_phase(self.policy)

    def remaining(self) -> float:
        """ε still available (``budget - spent``, never negative; ∞ for an unlimited budget)."""
        if math.isinf(self.budget):
            return math.inf
        return max(self.budget - self.spent(), 0.0)

    # ------------------------------------------------------------------ plan
    def announce_plan(self, phase: str, groups: Iterable[Sequence[Attr] | Attr]) -> None:
        """Fix the attribute groups the controller may ask for in ``phase``.

        Afterwards a request in ``phase`` whose attribute set is not one of ``groups`` is
        refused (:attr:`RefusalReason.PLAN_VIOLATION`).  Phases without a plan are
        unrestricted (``allowed_attributes`` still applies).  Announcing the same plan again
        is a no-op; announcing a different plan for the same phase raises, because a party
        must not let the controller widen a plan after the fact.

        Raises
        ------
        PlanViolationError
            If ``phase`` already has a different plan.
        ConfigurationError
            If ``phase`` is empty or a group is empty.
        """
        if not isinstance(phase, str) or not phase:
            raise ConfigurationError(f"phase must be a non-empty string, got {phase!r}")
        plan_groups = []
        for group in groups:
            members = frozenset((group,) if isinstance(group, (str, int, np.integer)) else group)
            if not members:
                raise ConfigurationError(f"plan groups must be non-empty, got {group!r} in phase {phase!r}")
            plan_groups.append(members)
        plan = frozenset(plan_groups)
        previous = self._plans.get(phase)
        if previous is not None and previous != plan:
            raise PlanViolationError(
                f"party {self.party}: phase {phase!r} already has an announced plan of "
                f"{len(previous)} groups; a different plan cannot replace it",
                party=self.party,
            )
        self._plans[phase] = plan

    def plan_violation(self, request: Release) -> str | None:
        """Why ``request`` is outside the plan / allowed attributes, or ``None`` if it is inside."""
        if self.allowed_attributes is not None:
            unknown = [a for a in request.attributes if a not in self.allowed_attributes]
            if unknown:
                return (
                    f"party {self.party}: release '{request.name}' asks for attributes {unknown!r} "
                    f"that the party does not release (allowed: {sorted(map(str, self.allowed_attributes))})"
                )
        plan = self._plans.get(request.phase)
        if plan is not None and frozenset(request.attributes) not in plan:
            return (
                f"party {self.party}: release '{request.name}' asks for attributes "
                f"{list(request.attributes)!r}, not a group of the plan announced for phase "
                f"{request.phase!r}"
            )
        return None

    # ------------------------------------------------------------------ accounting
    def lookup(self, request: Release) -> int | None:
        """Index of the ledger entry ``request`` repeats (to resend its value), or ``None``."""
        return self._ledger.lookup(request)

    def would_spend(self, release: Release) -> float:
        """Total ε after ``release`` under the policy (unchanged if it would be a replay)."""
        if self._ledger.lookup(release) is not None:
            return self.spent()
        phases = self._ledger.by_phase(self.policy)
        rule = COMPOSITION_RULES[self.policy]
        phases[release.phase] = rule([r for r in self._ledger if r.phase == release.phase] + [release])
        return math.fsum(phases.values())

    def _fits(self, total: float) -> bool:
        if total <= self.budget or math.isinf(self.budget):
            return True
        return math.isfinite(total) and total <= self.budget * (1 + self.rtol) + 1e-12

    def check(self, request: Release) -> Decision:
        """What :meth:`request` would decide, without recording anything."""
        return self._decide(request)

    def _decide(self, request: Release) -> Decision:
        if not isinstance(request, Release):
            raise ConfigurationError(f"request must be a Release, got {request!r}")
        before = self.spent()
        remaining = self.remaining()
        violation = self.plan_violation(request)
        if violation is not None:
            refusal = Refusal(request, RefusalReason.PLAN_VIOLATION, violation, 0.0, remaining)
            return Decision(Outcome.REFUSED, request, None, before, before, refusal)
        index = self._ledger.lookup(request)
        if index is not None:
            return Decision(Outcome.REPLAYED, request, index, before, before)
        after = self.would_spend(request)
        if not self._fits(after):
            requested = after - before if math.isfinite(before) else math.inf
            detail = " (exact release: no DP guarantee)" if request.exact else ""
            message = (
                f"party {self.party}: release '{request.name}' would spend ε={_fmt(requested)}{detail} "
                f"but only {_fmt(remaining)} of the budget {_fmt(self.budget)} remains "
                f"under policy '{self.policy.value}'"
            )
            refusal = Refusal(request, RefusalReason.BUDGET_EXCEEDED, message, requested, remaining)
            return Decision(Outcome.REFUSED, request, None, before, before, refusal)
        return Decision(Outcome.GRANTED, request, len(self._ledger), before, after)

    def request(self, request: Release) -> Decision:
        """Decide on ``request`` and record the outcome; never raises for a refusal.

        Granted: appended to the ledger.  Replayed: recorded in :attr:`replays`, ledger
        unchanged (resend the value of ``ledger[decision.entry_index]``).  Refused: recorded
        in :attr:`refusals`, ledger unchanged.
        """
        decision = self._decide(request)
        if decision.granted:
            self._ledger = self._ledger.appended(request)
        elif decision.replayed and decision.entry_index is not None:
            self._replays.append((request, decision.entry_index))
        elif decision.refusal is not None:
            self._refusals.append(decision.refusal)
        return decision

    def charge(self, release: Release) -> Decision:
        """Like :meth:`request`, but a refusal raises (after being recorded).

        Raises
        ------
        BudgetExceededError
            With ``requested`` (ε the release would add), ``remaining`` and ``party``; the
            ledger is unchanged.
        PlanViolationError
            When the release is outside the announced plan / allowed attributes.
        """
        decision = self.request(release)
        refusal = decision.refusal
        if refusal is None:
            return decision
        if refusal.reason is RefusalReason.BUDGET_EXCEEDED:
            raise BudgetExceededError(
                refusal.message, requested=refusal.requested, remaining=refusal.remaining, party=self.party
            )
        raise PlanViolationError(refusal.message, party=self.party)

    def __repr__(self) -> str:
        return (
            f"PrivacyAccountant(party={self.party!r}, budget={_fmt(self.budget)}, "
            f"policy='{self.policy.value}', spent={_fmt(self.spent())}, releases={len(self._ledger)}, "
            f"refusals={len(self._refusals)})"
        )


# ---------------------------------------------------------------------- summaries
def _json(value: float) -> float | str:
    return "inf" if math.isinf(value) else float(value)


@dataclass(frozen=True)
class Stats:
    """min / median / max of a non-empty set of values (∞ allowed)."""

    min: float
    median: float
    max: float
    count: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Stats | None:
        """Stats of ``values``, or ``None`` when there are none."""
        array = np.asarray(list(values), dtype=np.float64)
        if array.size == 0:
            return None
        ordered = np.sort(array)
        mid = ordered.size // 2
        median = ordered[mid] if ordered.size % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        return cls(float(ordered[0]), float(median), float(ordered[-1]), int(array.size))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (∞ written as ``"inf"``)."""
        return {"min": _json(self.min), "median": _json(self.median), "max": _json(self.max), "count": self.count}


def _stats_dict(stats: Stats | None) -> dict[str, Any] | None:
    return None if stats is None else stats.to_dict()


@dataclass(frozen=True)
class PhaseSummary:
    """One phase across parties: ε per party (0 for a party without releases in it), β, bits."""

    epsilon: Stats
    beta: Stats | None
    entropy_bits: Stats | None
    releases: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon.to_dict(),
            "beta": _stats_dict(self.beta),
            "entropy_bits": _stats_dict(self.entropy_bits),
            "releases": self.releases,
        }


@dataclass(frozen=True)
class PrivacySummary:
    """Privacy report of a run under one composition policy.

    Attributes
    ----------
    policy
        The composition policy used.
    parties
        Number of parties summarised.
    epsilon
        Total ε per party (min / median / max); ``None`` without parties.
    phases
        Per phase (order of first appearance): :class:`PhaseSummary`.
    beta, entropy_bits
        β and entropy rate (bits) of the matrices of all releases (unknown values skipped).
    releases, exact_releases
        Number of ledger entries, and of exact (4.2) releases among them.
    parties_without_guarantee
        Parties whose ε is ∞ ("no DP guarantee").
    refusals
        Refusals per reason (accountants only).
    replays
        Repeated requests answered from a ledger (accountants only).
    """

    policy: CompositionPolicy
    parties: int
    epsilon: Stats | None
    phases: Mapping[str, PhaseSummary]
    beta: Stats | None
    entropy_bits: Stats | None
    releases: int
    exact_releases: int
    parties_without_guarantee: int
    refusals: Mapping[str, int] = field(default_factory=dict)
    replays: int = 0

    @property
    def no_dp_guarantee(self) -> bool:
        """``True`` when some party's ε is ∞."""
        return self.parties_without_guarantee > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict; ∞ is written as the string ``"inf"``."""
        return {
            "policy": self.policy.value,
            "parties": self.parties,
            "epsilon": _stats_dict(self.epsilon),
            "no_dp_guarantee": self.no_dp_guarantee,
            "parties_without_guarantee": self.parties_without_guarantee,
            "phases": {name: phase.to_dict() for name, phase in self.phases.items()},
            "beta": _stats_dict(self.beta),
            "entropy_bits": _stats_dict(self.entropy_bits),
            "releases": self.releases,
            "exact_releases": self.exact_releases,
            "refusals": dict(self.refusals),
            "replays": self.replays,
        }


def summarize(
    sources: Mapping[Any, PrivacyAccountant | Ledger] | Iterable[PrivacyAccountant | Ledger],
    policy: CompositionPolicy | str | None = None,
) -> PrivacySummary:
    """Summarise the ledgers of a run (one per party) under one composition policy.

    Parameters
    ----------
    sources
        Accountants or ledgers, one per party (a mapping's values are used).
    policy
        Policy to compose with.  ``None``: the accountants' common policy (ConfigurationError
        if they differ), ``"sequential"`` for bare ledgers.  Call once per policy for a report
        comparing policies.
    """
    items = list(sources.values()) if isinstance(sources, Mapping) else list(sources)
    ledgers: list[Ledger] = []
    refusals: dict[str, int] = {}
    replays = 0
    own_policies = set()
    for item in items:
        if isinstance(item, PrivacyAccountant):
            ledgers.append(item.ledger)
            own_policies.add(item.policy)
            for refusal in item.refusals:
                refusals[refusal.reason.value] = refusals.get(refusal.reason.value, 0) + 1
            replays += len(item.replays)
        elif isinstance(item, Ledger):
            ledgers.append(item)
        else:
            raise ConfigurationError(f"summarize expects PrivacyAccountant or Ledger objects, got {item!r}")
    if policy is None:
        if len(own_policies) > 1:
            raise ConfigurationError(
                f"accountants use different policies {sorted(p.value for p in own_policies)}; pass policy="
            )
        chosen = own_policies.pop() if own_policies else CompositionPolicy.SEQUENTIAL
    else:
        chosen = as_policy(policy)

    per_party = [ledger.by_phase(chosen) for ledger in ledgers]
    totals = [math.fsum(phases.values()) for phases in per_party]
    phase_names = list(dict.fromkeys(name for ledger in ledgers for name in ledger.phases))
    all_releases = [r for ledger in ledgers for r in ledger]
    phases = {}
    for name in phase_names:
        in_phase = [r for r in all_releases if r.phase == name]
        phases[name] = PhaseSummary(
            epsilon=Stats.of(p.get(name, 0.0) for p in per_party),  # type: ignore[arg-type]
            beta=Stats.of(r.beta for r in in_phase if r.beta is not None),
            entropy_bits=Stats.of(r.entropy_bits for r in in_phase if r.entropy_bits is not None),
            releases=len(in_phase),
        )
    return PrivacySummary(
        policy=chosen,
        parties=len(ledgers),
        epsilon=Stats.of(totals),
        phases=phases,
        beta=Stats.of(r.beta for r in all_releases if r.beta is not None),
        entropy_bits=Stats.of(r.entropy_bits for r in all_releases if r.entropy_bits is not None),
        releases=len(all_releases),
        exact_releases=sum(r.exact for r in all_releases),
        parties_without_guarantee=sum(math.isinf(t) for t in totals),
        refusals=refusals,
        replays=replays,
    )
