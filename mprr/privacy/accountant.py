"""One party's privacy accountant: every rule a party applies before it releases anything.

Each party keeps its own :class:`PrivacyAccountant` (the controller is untrusted) and asks it
about each request of the controller (:meth:`PrivacyAccountant.answer`, one :class:`Ask` per
request) *before* randomizing.  The answer is atomic: a :class:`Refusal` (recorded once,
nothing spent), or one :class:`Decision` per release of the request:

- **replayed** — the very same release (same attributes, same matrix, same channel) is already
  in the ledger: nothing new is spent and the party resends the value it released then
  (``decision.entry_index`` points at it), so a curious controller that asks again learns
  nothing new;
- **granted** — the release is appended to the ledger.  A finer (or any different) matrix for
  something already released is new spending.

A request is refused when

- its phase's plan differs from the plan first announced for that phase, or one of its units is
  not a group of that plan, or it asks for an attribute outside ``allowed_attributes``
  (:attr:`RefusalReason.PLAN_VIOLATION`; a request announces its phase's plan with
  :attr:`Ask.plan`);
- it commits an input to a secure-sum session that the party cannot commit
  (:attr:`RefusalReason.SESSION_REFUSED`): a session committed before with other units, or
  exact values (main paper 4.2) of an attribute that already entered a session;
- its new releases together would push ε over the budget under the accountant's composition
  policy (:mod:`mprr.privacy.ledger`; :attr:`RefusalReason.BUDGET_EXCEEDED`).

**One session per committed input.**  Two secure sums of the same inputs over rosters that
differ by one party v reveal v's input (full sum minus partial sum).  So a commitment for a
new session never reuses an earlier input (4.2 exact values are refused, 4.3 randomized pairs
are drawn afresh and booked as new spending, never replayed), and a session runs at most once,
with one roster of at least ``min_roster`` parties that holds the party
(:meth:`~PrivacyAccountant.start_session`), even after a run that aborted.  Why not a retry
over the same roster: buffered messages of the aborted run could enter the retry and make its
sum wrong, and with the masked engine the controller names the survivors, so two runs could be
made to sum over two survivor sets.

Cost: an answer is a few dictionary look-ups per release — the ledger finds repeats through an
index and keeps its totals incrementally per phase
(:class:`mprr.privacy.composition.PolicyTotals`), and the budget is compared once per request.

Everything here is re-exported by :mod:`mprr.privacy`, the module the rest of the code imports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from enum import Enum
from typing import Any, NamedTuple

import numpy as np

from mprr.domain import check_int, check_real
from mprr.privacy.composition import CompositionPolicy, as_policy
from mprr.privacy.copies import own, shared, state_key
from mprr.errors import ConfigurationError
from mprr.privacy.ledger import Ledger
from mprr.privacy.release import Attr, Release, json_number

__all__ = [
    "DEFAULT_MIN_ROSTER",
    "RefusalReason",
    "Outcome",
    "Ask",
    "Refusal",
    "Decision",
    "PrivacyAccountant",
]

DEFAULT_MIN_ROSTER = 3
"""Fewest parties a party accepts in a secure-sum roster: the threshold rule of statistical
disclosure control (no aggregate of fewer than 3 contributors), and the smallest roster in
which a participant cannot subtract its own input from the sum to get another one's."""


class RefusalReason(str, Enum):
    """Why a party refused a request."""

    BUDGET_EXCEEDED = "budget-exceeded"
    PLAN_VIOLATION = "plan-violation"
    SESSION_REFUSED = "session-refused"
    INVALID_REQUEST = "invalid-request"

    def __str__(self) -> str:
        return self.value


class Outcome(str, Enum):
    """What the party does with one release of a granted request."""

    GRANTED = "granted"
    REPLAYED = "replayed"

    def __str__(self) -> str:
        return self.value


def _fmt(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.6g}"


@dataclass(frozen=True)
class Ask:
    """One request of the controller, as an accountant judges it.

    Built from public data only, so the parties of a run can share one object per request.

    Attributes
    ----------
    releases
        One :class:`Release` per unit (empty for a request that could not be evaluated).
    phase
        The request's phase.
    request_id
        The controller's id of the request (named in refusals).
    units
        The attribute groups asked for, as the request names them (default: each release's
        attributes).
    plan
        The plan the request announces for its phase (``None``: none; the phase's earlier
        plan, if any, still applies).
    session
        The secure-sum session the releases commit an input to (``None``: a direct release).
        Every release of a commitment is a fresh draw, never a replay.
    exact
        ``True`` when the commitment holds true values (main paper 4.2).
    """

    releases: tuple[Release, ...]
    phase: str
    request_id: int | str | None = None
    units: tuple[tuple[Attr, ...], ...] = ()
    plan: tuple[tuple[Attr, ...], ...] | None = None
    session: str | None = None
    exact: bool = False

    @cached_property
    def plan_groups(self) -> frozenset[frozenset[Attr]] | None:
        """:attr:`plan` as a set of attribute sets (computed once, shared by the parties)."""
        return None if self.plan is None else _normalised_plan(self.phase, self.plan)

    @property
    def groups(self) -> tuple[tuple[Attr, ...], ...]:
        """:attr:`units`, or each release's attributes when none were given."""
        return self.units or tuple(r.attributes for r in self.releases)

    @property
    def label(self) -> str:
        """How messages name the request."""
        if self.request_id is None or (len(self.releases) == 1 and self.releases[0].request_id is not None):
            return f"release '{self.releases[0].name}'" if self.releases else f"a request ({self.phase})"
        return f"request {self.request_id} ({self.phase})"


@dataclass(frozen=True)
class Refusal:
    """A refused request: the one record kept in :attr:`PrivacyAccountant.refusals`, logged by
    the harness and sent (as ``"reason: message"``) to the controller.

    ``requested`` is the ε the request would have added under the policy (∞ for an exact
    release; 0 when it was not costed), ``remaining`` the ε left.
    """

    reason: RefusalReason
    message: str
    requested: float
    remaining: float
    party: int | str | None = None
    request_id: int | str | None = None
    phase: str = ""
    units: tuple[tuple[Attr, ...], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (∞ written as ``"inf"``)."""
        return {
            "party": self.party,
            "request_id": self.request_id,
            "phase": self.phase,
            "units": [list(u) for u in self.units],
            "reason": self.reason.value,
            "message": self.message,
            "requested": json_number(self.requested),
            "remaining": json_number(self.remaining),
        }


class Decision(NamedTuple):
    """What the party does with one release of an accepted request.

    ``entry_index`` is the index in the ledger of the release to send: the new entry (granted)
    or the earlier one to resend unchanged (replayed).
    """

    outcome: Outcome
    request: Release
    entry_index: int

    @property
    def granted(self) -> bool:
        return self.outcome is _GRANTED

    @property
    def replayed(self) -> bool:
        return self.outcome is _REPLAYED


_GRANTED, _REPLAYED = Outcome.GRANTED, Outcome.REPLAYED


def _normalised_plan(phase: str, groups: Iterable[Sequence[Attr] | Attr]) -> frozenset[frozenset[Attr]]:
    """The plan ``groups`` as a set of attribute sets (ConfigurationError for an empty group), one
    shared object per tuple of groups: the parties of a run announce the same plan thousands of times."""
    if type(groups) is tuple:
        try:
            return _shared_plan(phase, groups)
        except TypeError:  # unhashable groups: no sharing
            pass
    plan_groups = []
    for group in groups:
        members = frozenset((group,) if isinstance(group, (str, int, np.integer)) else group)
        if not members:
            raise ConfigurationError(f"plan groups must be non-empty, got {group!r} in phase {phase!r}")
        plan_groups.append(members)
    return frozenset(plan_groups)


@lru_cache(maxsize=4096)
def _shared_plan(phase: str, groups: tuple[Any, ...]) -> frozenset[frozenset[Attr]]:
    return _normalised_plan(phase, list(groups))


@lru_cache(maxsize=4096)
def _shared_set(attributes: tuple[Attr, ...]) -> frozenset[Attr]:
    """``frozenset(attributes)``, one shared object per tuple (the parties' schema names)."""
    return frozenset(attributes)


@dataclass
class _Session:
    """What a party remembers of one secure-sum session it committed to."""

    units: tuple[tuple[Attr, ...], ...]
    exact: bool
    roster_size: int | None = None  # parties of the (only) roster it ran with
    state: str = "committed"  # committed -> running -> done | aborted (never run again)


class PrivacyAccountant:
    """One party's budget, ledger, plans, secure-sum sessions and refusals.

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
    min_roster
        Fewest parties the party accepts in a secure-sum roster (>= 2).
    rtol
        Relative tolerance on the budget comparison (ε values come from logarithms, so a
        release that lands on the budget up to rounding is accepted).

    Notes
    -----
    Not thread-safe; an actor owns its accountant.  The ledger is an immutable snapshot
    (:class:`~mprr.privacy.ledger.Ledger`) replaced on each grant, so a reference taken earlier
    never changes.
    """

    def __init__(
        self,
        budget: float,
        policy: CompositionPolicy | str = CompositionPolicy.SEQUENTIAL,
        *,
        party: int | str | None = None,
        allowed_attributes: Iterable[Attr] | None = None,
        min_roster: int = DEFAULT_MIN_ROSTER,
        rtol: float = 1e-9,
    ) -> None:
        self.budget = check_real("budget", budget, allow_inf=True)
        if not (isinstance(rtol, (int, float)) and 0 <= rtol < 1e-3):
            raise ConfigurationError(f"rtol must be in [0, 1e-3), got {rtol!r}")
        self.policy = as_policy(policy)
        self.party = party
        self.min_roster = check_int("min_roster", min_roster, 2)
        self.rtol = float(rtol)
        self.allowed_attributes: frozenset[Attr] | None = (
            None if allowed_attributes is None else _shared_set(allowed_attributes)
            if type(allowed_attributes) is tuple else frozenset(allowed_attributes)
        )
        self._ledger = Ledger.empty()
        self._refusals: list[Refusal] = []
        self._replays: list[tuple[Release, int]] = []
        self._plans: dict[str, frozenset[frozenset[Attr]]] = {}
        self._sessions: dict[str, _Session] = {}
        self._exact: dict[Attr, str] = {}  # attribute -> session its exact value entered

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

    def remaining(self) -> float:
        """ε still available (``budget - spent``, never negative; ∞ for an unlimited budget)."""
        if math.isinf(self.budget):
            return math.inf
        return max(self.budget - self.spent(), 0.0)

    # ------------------------------------------------------------------ plan
    def _announce(self, phase: str, plan: frozenset[frozenset[Attr]]) -> str | None:
        """Announce ``plan`` for ``phase``; why not, if the phase has another plan."""
        previous = self._plans.get(phase)
        if previous is None:
            self._plans[phase] = plan
        elif previous is not plan and previous != plan:
            return (
                f"party {self.party}: phase {phase!r} already has an announced plan of "
                f"{len(previous)} groups {sorted(sorted(map(str, g)) for g in previous)}; another plan "
                f"{sorted(sorted(map(str, g)) for g in plan)} cannot replace it"
            )
        return None

    def _outside(self, ask: Ask) -> str | None:
        """Why ``ask`` leaves its phase's plan or the allowed attributes, or ``None``."""
        plan = self._plans.get(ask.phase)
        if plan is not None and any(r.attribute_set not in plan for r in ask.releases):
            outside = [list(u) for u, r in zip(ask.groups, ask.releases) if r.attribute_set not in plan]
            return (
                f"party {self.party}: {ask.label} asks for attributes {', '.join(map(repr, outside))}, "
                f"not groups of the plan announced for phase {ask.phase!r}"
            )
        allowed = self.allowed_attributes
        if allowed is not None:
            for release in ask.releases:
                if not release.attribute_set <= allowed:
                    unknown = [a for a in release.attributes if a not in allowed]
                    return (
                        f"party {self.party}: release '{release.name}' asks for attributes {unknown!r} "
                        f"that the party does not release (allowed: {sorted(map(str, allowed))})"
                    )
        return None

    # ------------------------------------------------------------------ sessions
    def _commitment(self, ask: Ask, session: str) -> tuple[RefusalReason, str, float] | bool:
        """``True`` for a commitment made before (re-sent), ``False`` for a new one it may make,
        else why it refuses (reason, message, requested ε)."""
        known = self._sessions.get(session)
        if known is not None:
            if known.units == ask.units and known.exact == ask.exact:
                return True
            return (RefusalReason.SESSION_REFUSED,
                    f"party {self.party}: session {session!r} was committed with units "
                    f"{list(known.units)} (exact={known.exact}); {ask.label} asks "
                    f"for {list(ask.units)} (exact={ask.exact})", 0.0)
        if ask.exact:
            reused = sorted({a for unit in ask.units for a in unit if a in self._exact}, key=str)
            if reused:
                return (RefusalReason.SESSION_REFUSED,
                        f"party {self.party}: the exact values of attributes {reused} already entered "
                        f"secure-sum session {self._exact[reused[0]]!r}; a committed input enters at most "
                        "one session (two sums over rosters that differ by one party would reveal that "
                        "party's values)", math.inf)
        return False

    def start_session(self, session: str, roster: Sequence[int], member: int) -> str | None:
        """Bind ``session``'s committed input to ``roster`` and start it; why not, if it must not run.

        A session runs once (even after an abort), with a roster that holds ``member`` (the party)
        and at least :attr:`min_roster` parties.
        """
        known = self._sessions.get(session)
        if known is None:
            return "no committed input or unknown session"
        if known.roster_size is not None:
            return (f"its input already entered session {session!r} ({known.state}, roster of "
                    f"{known.roster_size} parties); a session runs once, with one roster")
        if member not in roster:
            return f"party {member} is not in the roster it was sent"
        if len(roster) < self.min_roster:
            return (f"roster of {len(roster)} parties is below the party's minimum "
                    f"min_roster = {self.min_roster}")
        known.roster_size, known.state = len(roster), "running"
        return None

    def session_state(self, session: str) -> str | None:
        """State of ``session``: ``"committed"`` (input committed, not started), ``"running"``,
        ``"done"`` or ``"aborted"``; ``None`` for a session the party never committed to."""
        known = self._sessions.get(session)
        return None if known is None else known.state

    def end_session(self, session: str, *, aborted: bool) -> None:
        """Record that ``session`` (started by :meth:`start_session`) finished or aborted."""
        self._sessions[session].state = "aborted" if aborted else "done"

    # ------------------------------------------------------------------ decisions
    def refuse(self, ask: Ask, reason: RefusalReason, message: str, requested: float = 0.0) -> Refusal:
        """Record and return the refusal of ``ask`` (e.g. a request the party cannot evaluate)."""
        refusal = Refusal(RefusalReason(reason), message, requested, self.remaining(), self.party,
                          ask.request_id, ask.phase, ask.groups)
        self._refusals.append(refusal)
        return refusal

    def answer(self, ask: Ask) -> tuple[Decision, ...] | Refusal:
        """Decide on ``ask`` as a whole: one :class:`Decision` per release, or one :class:`Refusal`.

        Checks, in order: the plan (the request's plan must be the phase's first, its units
        groups of it, its attributes allowed), the secure-sum commitment, then the budget
        against the new spending of all releases together (releases the ledger holds, or that
        repeat an earlier one of the request, are replays and add nothing; a commitment's
        releases are all new).  A refusal is recorded once and changes nothing else, except
        that the plan it announced, if it was its phase's first, stays the phase's plan (the
        controller committed to it by announcing it); an accepted request appends its new
        releases to the ledger.  A commitment the party made
        before (a re-sent request) gets ``()``: nothing new is decided.

        Raises
        ------
        ConfigurationError
            If ``ask`` has no release or an item is not a :class:`Release`.
        """
        releases = ask.releases
        if not releases:
            raise ConfigurationError(f"{ask.label} must ask for at least one release, got none")
        for release in releases:
            if not isinstance(release, Release):
                raise ConfigurationError(f"releases must be Release objects, got {release!r}")
        plan = ask.plan_groups
        problem = None if plan is None else self._announce(ask.phase, plan)
        if problem is not None or (problem := self._outside(ask)) is not None:
            return self.refuse(ask, RefusalReason.PLAN_VIOLATION, problem)
        session = ask.session
        if session is not None:
            commitment = self._commitment(ask, session)
            if commitment is True:
                return ()
            if commitment is not False:
                return self.refuse(ask, *commitment)
        ledger = self._ledger
        fresh = session is not None
        if not math.isinf(self.budget):
            new: list[Release] = []
            for release in releases:
                if fresh or (ledger.lookup(release) is None and not any(release.same_as(a) for a in new)):
                    new.append(release)
            if new:
                totals = ledger.totals(self.policy)
                before, after = totals.total, totals.plus_all(new).total
                if not self._fits(after):
                    requested = after - before if math.isfinite(before) else math.inf
                    exact = " (exact release: no DP guarantee)" if any(r.exact for r in new) else ""
                    return self.refuse(ask, RefusalReason.BUDGET_EXCEEDED, (
                        f"party {self.party}: {ask.label} would spend ε={_fmt(requested)}{exact} "
                        f"but only {_fmt(self.remaining())} of the budget {_fmt(self.budget)} remains "
                        f"under policy '{self.policy.value}'"), requested)
        decisions = []
        if fresh:  # a commitment: every release is new, appended at once
            start = len(ledger)
            decisions = [Decision(_GRANTED, release, position) for position, release in enumerate(releases, start)]
            ledger = ledger.extended(releases)
        else:
            for release in releases:
                index = ledger.lookup(release)
                if index is None:
                    decisions.append(Decision(_GRANTED, release, len(ledger)))
                    ledger = ledger.appended(release)
                else:
                    self._replays.append((release, index))
                    decisions.append(Decision(_REPLAYED, release, index))
        self._ledger = ledger
        if session is not None:
            self._sessions[session] = _Session(ask.units, ask.exact)
            if ask.exact:
                for unit in ask.units:
                    for a in unit:
                        self._exact.setdefault(a, session)
        return tuple(decisions)

    def _fits(self, total: float) -> bool:
        if total <= self.budget or math.isinf(self.budget):
            return True
        return math.isfinite(total) and total <= self.budget * (1 + self.rtol) + 1e-12

    # ------------------------------------------------------------------ copies
    def state_key(self) -> tuple[Any, ...]:
        """Equal for two accountants whose state is equal apart from the party they belong to
        (:func:`~mprr.privacy.copies.state_key` of every field but ``party``): a host keeps one
        accountant for all the parties whose keys are equal."""
        return tuple((name, state_key(value)) for name, value in sorted(vars(self).items()) if name != "party")

    def copies(self, parties: Iterable[int | str | None]) -> list[PrivacyAccountant]:
        """A copy of this accountant for each of ``parties``, in order, belonging to it: each with
        its own lists, dicts and sets and its own copy of every mutable record, at any depth (a
        secure-sum session's state); the ledger, tuples of immutable items and frozen records
        shared (:mod:`mprr.privacy.copies`).  Which fields are shared and how each container is copied
        is found once for all the copies."""
        kept: dict[str, Any] = {}
        owned: list[tuple[str, Any]] = []  # (name, value): each copy's own copy of the value
        containers: list[tuple[str, Any]] = []  # (name, a list, dict or set whose values are all shared)
        for name, value in vars(self).items():
            if name == "party":
                continue
            if type(value) in (dict, list, set) and shared(value.values() if type(value) is dict else value):
                containers.append((name, value))  # (copied by its type alone: the common case, fast)
            elif shared((value,)):
                kept[name] = value
            else:
                owned.append((name, value))
        cls = type(self)
        out = []
        for party in parties:
            acc = object.__new__(cls)
            fields = acc.__dict__
            fields.update(kept)
            for name, value in containers:
                fields[name] = type(value)(value)
            for name, value in owned:
                fields[name] = own(value)
            fields["party"] = party
            out.append(acc)
        return out

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if any("__slots__" in vars(c) for c in cls.__mro__ if c is not object):
            raise ConfigurationError(
                f"{cls.__name__} declares __slots__: a PrivacyAccountant keeps its state in its __dict__, "
                "which copies() and state_key() read whole; keep the subclass's fields there too")

    def __repr__(self) -> str:
        return (
            f"PrivacyAccountant(party={self.party!r}, budget={_fmt(self.budget)}, "
            f"policy='{self.policy.value}', spent={_fmt(self.spent())}, releases={len(self._ledger)}, "
            f"refusals={len(self._refusals)})"
        )
