"""One party's privacy accountant: grants, replays or refuses each release it is asked for.

Each party keeps its own :class:`PrivacyAccountant` (the controller is untrusted).  For every
release the controller asks for, the party calls :meth:`PrivacyAccountant.request` (or
:meth:`~PrivacyAccountant.charge`, which raises on refusal) *before* randomizing:

- **replayed** — the very same release (same attributes, same matrix, same channel) is already
  in the ledger: nothing new is spent and the party resends the value it released then
  (``decision.entry_index`` points at it), so a curious controller that asks again learns
  nothing new;
- **refused** — the request is outside the announced plan (:meth:`announce_plan`,
  ``allowed_attributes``) or would push ε over the budget under the accountant's composition
  policy (:mod:`mprr.privacy.ledger`); the refusal is recorded in :attr:`refusals`, the ledger is
  unchanged.  A finer (or any different) matrix for something already released is new spending;
- **granted** — the release is appended to the ledger.

Cost: a decision is a few dictionary look-ups — the ledger finds repeats through an index and
keeps its totals incrementally per phase (:class:`mprr.privacy.composition.PolicyTotals`), so a party's
accounting costs microseconds per request whatever its history.

Everything here is re-exported by :mod:`mprr.privacy`, the module the rest of the code imports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from mprr.privacy.composition import CompositionPolicy, as_policy
from mprr.errors import BudgetExceededError, ConfigurationError, PlanViolationError
from mprr.privacy.ledger import Attr, Ledger, Release

__all__ = [
    "RefusalReason",
    "Outcome",
    "Refusal",
    "Decision",
    "PrivacyAccountant",
]


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
        return self.outcome is _GRANTED

    @property
    def replayed(self) -> bool:
        return self.outcome is _REPLAYED

    @property
    def refused(self) -> bool:
        return self.outcome is _REFUSED


_GRANTED, _REPLAYED, _REFUSED = Outcome.GRANTED, Outcome.REPLAYED, Outcome.REFUSED


def _decision(
    outcome: Outcome, request: Release, entry_index: int | None, before: float, after: float
) -> Decision:
    """A :class:`Decision` without a refusal, built without the dataclass ``__init__`` (hot path)."""
    decision = object.__new__(Decision)
    decision.__dict__.update(
        outcome=outcome,
        request=request,
        entry_index=entry_index,
        epsilon_before=before,
        epsilon_after=after,
        refusal=None,
    )
    return decision


_PLANS: dict[tuple[str, tuple[Any, ...]], frozenset[frozenset[Attr]]] = {}
"""Memo of normalised plans: the parties of a run announce the same plan object thousands of times."""
_PLANS_MAX = 4096


def _normalised_plan(phase: str, groups: Iterable[Sequence[Attr] | Attr]) -> frozenset[frozenset[Attr]]:
    """The plan ``groups`` as a set of attribute sets (ConfigurationError for an empty group)."""
    key = None
    if type(groups) is tuple:
        key = (phase, groups)
        try:
            plan = _PLANS.get(key)
        except TypeError:  # unhashable groups: no memo
            key, plan = None, None
        if plan is not None:
            return plan
    plan_groups = []
    for group in groups:
        members = frozenset((group,) if isinstance(group, (str, int, np.integer)) else group)
        if not members:
            raise ConfigurationError(f"plan groups must be non-empty, got {group!r} in phase {phase!r}")
        plan_groups.append(members)
    plan = frozenset(plan_groups)
    if key is not None:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


_ALLOWED: dict[tuple[Any, ...], frozenset[Attr]] = {}
"""Memo of ``allowed_attributes`` sets: the parties of a run pass the same schema names."""


def _attribute_set(attributes: Iterable[Attr]) -> frozenset[Attr]:
    """``frozenset(attributes)``, one shared object per distinct tuple of attributes."""
    if type(attributes) is not tuple:
        return frozenset(attributes)
    try:
        found = _ALLOWED.get(attributes)
    except TypeError:  # unhashable members
        return frozenset(attributes)
    if found is None:
        if len(_ALLOWED) >= _PLANS_MAX:
            _ALLOWED.clear()
        found = _ALLOWED[attributes] = frozenset(attributes)
    return found


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
    Decisions read the ledger's incremental totals directly (:meth:`would_spend` gives the
    same number for a request that is not a repeat).  Not thread-safe; an actor owns its
    accountant.  The ledger is an immutable snapshot (:class:`~mprr.privacy.ledger.Ledger`) replaced
    on each grant, so a reference taken earlier never changes.
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
            None if allowed_attributes is None else _attribute_set(allowed_attributes)
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
        return self._ledger.totals(self.policy).total

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
        plan = _normalised_plan(phase, groups)
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
        members = request.attribute_set
        if self.allowed_attributes is not None and not members <= self.allowed_attributes:
            unknown = [a for a in request.attributes if a not in self.allowed_attributes]
            if unknown:
                return (
                    f"party {self.party}: release '{request.name}' asks for attributes {unknown!r} "
                    f"that the party does not release (allowed: {sorted(map(str, self.allowed_attributes))})"
                )
        plan = self._plans.get(request.phase)
        if plan is not None and members not in plan:
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
        return self._ledger.totals(self.policy).plus(release).total

    def would_spend_all(self, releases: Iterable[Release]) -> float:
        """Total ε after granting every one of ``releases`` together (an atomic request).

        Releases the ledger already holds, or that repeat an earlier one of ``releases``
        (:meth:`Release.same_as`), would be replays and add nothing.  Records nothing.

        Raises
        ------
        ConfigurationError
            If an item is not a :class:`Release`.
        """
        return self._ledger.totals(self.policy).plus_all(self._new_spending(releases)).total

    def _new_spending(self, releases: Iterable[Release], *, fresh: bool = False) -> list[Release]:
        """Those of ``releases`` that are new spending: all of them if ``fresh``, else the non-replays."""
        ledger = self._ledger
        added: list[Release] = []
        for release in releases:
            if not isinstance(release, Release):
                raise ConfigurationError(f"releases must be Release objects, got {release!r}")
            if fresh or (ledger.lookup(release) is None and not any(release.same_as(a) for a in added)):
                added.append(release)
        return added

    def _fits(self, total: float) -> bool:
        if total <= self.budget or math.isinf(self.budget):
            return True
        return math.isfinite(total) and total <= self.budget * (1 + self.rtol) + 1e-12

    def _over_budget(
        self, request: Release, before: float, after: float, exact: bool, label: str
    ) -> Decision | None:
        """The budget refusal of a request that takes the total from ``before`` to ``after``, if any."""
        if self._fits(after):
            return None
        remaining = self.remaining()
        requested = after - before if math.isfinite(before) else math.inf
        detail = " (exact release: no DP guarantee)" if exact else ""
        message = (
            f"party {self.party}: {label} would spend ε={_fmt(requested)}{detail} "
            f"but only {_fmt(remaining)} of the budget {_fmt(self.budget)} remains "
            f"under policy '{self.policy.value}'"
        )
        refusal = Refusal(request, RefusalReason.BUDGET_EXCEEDED, message, requested, remaining)
        return Decision(Outcome.REFUSED, request, None, before, before, refusal)

    def check(self, request: Release) -> Decision:
        """What :meth:`request` would decide, without recording anything."""
        return self._decide(request)

    def _decide(self, request: Release, *, replay: bool = True) -> Decision:
        if not isinstance(request, Release):
            raise ConfigurationError(f"request must be a Release, got {request!r}")
        ledger = self._ledger
        totals = ledger.totals(self.policy)
        before = totals.total
        violation = self.plan_violation(request)
        if violation is not None:
            refusal = Refusal(request, RefusalReason.PLAN_VIOLATION, violation, 0.0, self.remaining())
            return Decision(Outcome.REFUSED, request, None, before, before, refusal)
        index = ledger.lookup(request) if replay else None
        if index is not None:
            return _decision(_REPLAYED, request, index, before, before)
        after = totals.plus(request).total  # == would_spend(request): not a repeat here
        refused = self._over_budget(request, before, after, request.exact, f"release '{request.name}'")
        if refused is not None:
            return refused
        return _decision(_GRANTED, request, len(ledger.releases), before, after)

    def request(self, request: Release) -> Decision:
        """Decide on ``request`` and record the outcome; never raises for a refusal.

        Granted: appended to the ledger.  Replayed: recorded in :attr:`replays`, ledger
        unchanged (resend the value of ``ledger[decision.entry_index]``).  Refused: recorded
        in :attr:`refusals`, ledger unchanged.
        """
        return self._record(self._decide(request))

    def request_fresh(self, request: Release) -> Decision:
        """Like :meth:`request`, but never a replay: granted as new spending or refused.

        For a fresh randomization of something released before, e.g. the input of a new
        secure-sum session (main paper 4.3): a committed input enters at most one session, so
        a second session needs a new draw, which costs ε again.
        """
        return self._record(self._decide(request, replay=False))

    def request_all(
        self, releases: Sequence[Release], *, fresh: bool = False, label: str | None = None
    ) -> Decision | tuple[Decision, ...]:
        """Decide on ``releases`` as one atomic request: all granted/replayed together, or refused.

        The releases are checked against the plan in order, then their new spending
        (:meth:`would_spend_all`; with ``fresh`` every release is new, as in
        :meth:`request_fresh`) against the budget.  A refusal is one :class:`Decision`
        (recorded once in :attr:`refusals`, ledger unchanged; its message names ``label``, by
        default the first release); otherwise one recorded decision per release, in order
        (:meth:`request`, or :meth:`request_fresh` with ``fresh``).

        Raises
        ------
        ConfigurationError
            If ``releases`` is empty or an item is not a :class:`Release`.
        """
        if not releases:
            raise ConfigurationError("request_all needs at least one release, got none")
        for release in releases:
            if not isinstance(release, Release):
                raise ConfigurationError(f"releases must be Release objects, got {release!r}")
            violation = self.plan_violation(release)
            if violation is not None:
                before = self.spent()
                refusal = Refusal(release, RefusalReason.PLAN_VIOLATION, violation, 0.0, self.remaining())
                return self._record(Decision(Outcome.REFUSED, release, None, before, before, refusal))
        new = [] if math.isinf(self.budget) else self._new_spending(releases, fresh=fresh)
        if new:
            totals = self._ledger.totals(self.policy)
            refused = self._over_budget(
                new[0], totals.total, totals.plus_all(new).total, any(r.exact for r in new),
                f"release '{new[0].name}'" if label is None else label,
            )
            if refused is not None:
                return self._record(refused)
        decide = self._decide
        return tuple(self._record(decide(release, replay=not fresh)) for release in releases)

    def _record(self, decision: Decision) -> Decision:
        request = decision.request
        outcome = decision.outcome
        if outcome is _GRANTED:
            self._ledger = self._ledger.appended(request)
        elif outcome is _REPLAYED and decision.entry_index is not None:
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
