"""The per-party accountant (mprr.privacy.accountant): decisions against a from-scratch model, atomic checks."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.privacy.accountant import Decision, Outcome, PrivacyAccountant, RefusalReason
from mprr.errors import ConfigurationError, PlanViolationError, ProtocolError
from mprr.privacy.ledger import CompositionPolicy, Release, compose
from mprr.matrices import grr, keep_or_uniform

POLICIES = tuple(CompositionPolicy)


def rel(attrs, eps, **kw) -> Release:
    return Release(attributes=attrs, epsilon=eps, **kw)


request_strategy = st.builds(
    lambda attrs, eps, linkable, key, phase: Release(
        attributes=tuple(attrs), epsilon=eps, linkable=linkable, matrix_key=key, phase=phase
    ),
    st.lists(st.sampled_from("ABCD"), min_size=1, max_size=2, unique=True),
    st.sampled_from([0.25, 0.5, 1.0, math.inf]),
    st.booleans(),
    st.sampled_from(["m1", "m2", None]),
    st.sampled_from(["dependence", "release"]),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(request_strategy, max_size=14),
    st.sampled_from(POLICIES),
    st.sampled_from([1.0, 2.5, math.inf]),
)
def test_decisions_follow_the_from_scratch_model(requests, policy, budget) -> None:
    # Model: replay iff some granted release is the same (same_as); otherwise grant iff the
    # composition of the ledger plus the request, computed from scratch, fits the budget.
    acc = PrivacyAccountant(budget, policy, party="p")
    granted: list[Release] = []
    for request in requests:
        before = compose(granted, policy)
        repeat = next((i for i, r in enumerate(granted) if r.same_as(request)), None)
        after = compose([*granted, request], policy)
        fits = math.isinf(budget) or after <= budget * (1 + 1e-9) + 1e-12 and math.isfinite(after)
        assert acc.would_spend(request) == (before if repeat is not None else after)
        decision = acc.request(request)
        assert decision.epsilon_before == before
        if repeat is not None:
            assert decision.outcome is Outcome.REPLAYED and decision.entry_index == repeat
        elif fits:
            assert decision.outcome is Outcome.GRANTED and decision.entry_index == len(granted)
            assert decision.epsilon_after == after
            granted.append(request)
        else:
            assert decision.outcome is Outcome.REFUSED and decision.refusal is not None
            assert decision.refusal.reason is RefusalReason.BUDGET_EXCEEDED
        assert acc.spent() == compose(granted, policy) and list(acc.ledger) == granted
        assert acc.spent_by_phase() == acc.ledger.by_phase(policy)


def test_would_spend_all_is_the_atomic_total_and_records_nothing() -> None:
    acc = PrivacyAccountant(10.0, "sequential")
    P = keep_or_uniform(4, 0.6)
    first = Release.from_matrix(("A",), P, phase="dependence")
    acc.charge(first)
    new = [
        Release.from_matrix(("A",), P, phase="clusters"),  # replay of `first`: adds nothing
        Release.from_matrix(("B", "C"), grr(4, 1.0), phase="clusters"),
        Release.from_matrix(("B", "C"), grr(4, 1.0), phase="clusters"),  # repeats the previous one
        Release.from_matrix(("D",), grr(2, 0.5), phase="clusters"),
    ]
    expected = compose([first, new[1], new[3]], "sequential")
    assert acc.would_spend_all(new) == expected == pytest.approx(P.epsilon + 1.5, rel=1e-12)
    assert acc.would_spend_all([]) == acc.spent() == first.epsilon
    assert len(acc.ledger) == 1 and acc.refusals == () and acc.replays == ()
    # Granting them one by one lands on the same total.
    for release in new:
        acc.request(release)
    assert acc.spent() == expected
    with pytest.raises(ConfigurationError, match=r"releases must be Release objects, got 'A'"):
        acc.would_spend_all(["A"])  # type: ignore[list-item]


@pytest.mark.parametrize("policy", POLICIES)
def test_would_spend_all_follows_the_policy(policy) -> None:
    acc = PrivacyAccountant(math.inf, policy)
    acc.charge(rel(("A", "B"), 1.0, linkable=False))
    batch = [rel(("A", "C"), 0.6, linkable=False), rel(("D",), 0.2, linkable=False)]
    assert acc.would_spend_all(batch) == compose([*acc.ledger, *batch], policy)


def test_a_release_outside_the_plan_is_a_protocol_error_naming_the_party() -> None:
    acc = PrivacyAccountant(1.0, party=9)
    acc.announce_plan("release", [("A",)])
    with pytest.raises(ProtocolError, match=r"party 9: release 'release\(B\)' asks for attributes") as info:
        acc.charge(rel(("B",), 0.1))
    assert isinstance(info.value, PlanViolationError) and info.value.party == 9
    assert acc.spent() == 0.0 and len(acc.ledger) == 0


def test_announced_plans_are_shared_safely_between_accountants() -> None:
    # The same plan object announced by many parties gives each the same plan; equal plans written
    # differently (lists, permuted groups, a bare name) are the same plan; phases stay apart.
    plan = (("A", "B"), ("C",))
    accountants = [PrivacyAccountant(5.0, party=i) for i in range(3)]
    for acc in accountants:
        acc.announce_plan("clusters", plan)
    accountants[0].announce_plan("clusters", [["B", "A"], "C"])  # same plan: no-op
    accountants[1].announce_plan("dependence", (("A",), ("B",), ("C",)))
    assert accountants[0].plans == accountants[2].plans == {"clusters": frozenset({frozenset("AB"), frozenset("C")})}
    assert accountants[1].plans["dependence"] == frozenset({frozenset("A"), frozenset("B"), frozenset("C")})
    with pytest.raises(PlanViolationError, match=r"phase 'clusters' already has an announced plan of 2 groups"):
        accountants[2].announce_plan("clusters", (("A",), ("B", "C")))
    with pytest.raises(ConfigurationError, match=r"plan groups must be non-empty, got \(\) in phase 'x'"):
        accountants[2].announce_plan("x", ((),))
    assert accountants[0].request(rel(("B", "A"), 1.0, phase="clusters")).granted
    assert accountants[0].request(rel(("A",), 1.0, phase="clusters")).refused


def test_a_decision_says_what_happened_and_cannot_be_altered() -> None:
    acc = PrivacyAccountant(2.0)
    r = rel(("A",), 1.0, request_id="q")
    granted = acc.request(r)
    replayed = acc.request(rel(("A",), 1.0, request_id="q"))
    refused = acc.request(rel(("B",), 1.5))
    assert granted == Decision(Outcome.GRANTED, r, 0, 0.0, 1.0)
    assert (granted.granted, granted.replayed, granted.refused) == (True, False, False)
    assert (replayed.granted, replayed.replayed, replayed.refused) == (False, True, False)
    # a replay points at the entry it repeats and spends nothing
    assert (replayed.entry_index, replayed.epsilon_before, replayed.epsilon_after, replayed.refusal) == (0, 1.0, 1.0, None)
    assert (refused.granted, refused.replayed, refused.refused) == (False, False, True)
    assert refused.refusal is not None and refused.refusal.reason is RefusalReason.BUDGET_EXCEEDED
    assert acc.spent() == 1.0 and len(acc.ledger) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        granted.entry_index = 3  # type: ignore[misc]


def test_check_after_request_does_not_leak_state() -> None:
    # would_spend / check compute "what if" totals; they must not alter what is spent.
    acc = PrivacyAccountant(3.0, "parallel")
    acc.charge(rel(("A",), 1.0))
    for _ in range(3):
        assert acc.check(rel(("A", "B"), 1.5)).granted
        assert acc.would_spend(rel(("A", "B"), 2.5)) == 3.5
    assert acc.spent() == 1.0 and len(acc.ledger) == 1
    assert acc.request(rel(("A", "B"), 2.5)).refused and acc.spent() == 1.0


def test_allowed_attributes_refuse_every_other_attribute() -> None:
    names = ("A", "B", "C")
    first, second = PrivacyAccountant(1.0, allowed_attributes=names), PrivacyAccountant(1.0, allowed_attributes=names)
    assert first.allowed_attributes == second.allowed_attributes == frozenset(names)
    listed = PrivacyAccountant(1.0, allowed_attributes=["A", "B"])
    assert listed.allowed_attributes == frozenset({"A", "B"})
    assert listed.request(rel(("C",), 0.1)).refused and first.request(rel(("C",), 0.1)).granted


def test_request_all_grants_replays_or_refuses_a_whole_request_together() -> None:
    acc = PrivacyAccountant(2.0, "sequential", party=4)
    first = Release.from_matrix(("A",), grr(2, 1.0), phase="dependence")
    acc.charge(first)
    again = Release.from_matrix(("A",), grr(2, 1.0), phase="dependence")  # a replay of `first`
    b = Release.from_matrix(("B",), grr(2, 0.5), phase="dependence")
    decisions = acc.request_all([again, b, b])
    assert isinstance(decisions, tuple)
    assert [d.outcome for d in decisions] == [Outcome.REPLAYED, Outcome.GRANTED, Outcome.REPLAYED]
    assert acc.spent() == compose([first, b], "sequential") == pytest.approx(1.5, rel=1e-12)
    # Over the budget together: one refusal, nothing granted although `c` alone would fit.
    c = Release.from_matrix(("C",), grr(2, 0.4), phase="dependence")
    d = Release.from_matrix(("D",), grr(2, 0.4), phase="dependence")
    refused = acc.request_all([c, d], label="request 7 (dependence)")
    assert isinstance(refused, Decision) and refused.refusal is not None
    assert refused.refusal.reason is RefusalReason.BUDGET_EXCEEDED
    assert refused.refusal.message == (
        "party 4: request 7 (dependence) would spend ε=0.8 but only 0.5 of the budget 2 remains "
        "under policy 'sequential'"
    )
    assert acc.refusals == (refused.refusal,) and len(acc.ledger) == 2
    assert acc.request(c).granted
    # fresh: every release is new spending, even one the ledger holds.
    refresh = acc.request_all([Release.from_matrix(("A",), grr(2, 1.0), phase="dependence")], fresh=True)
    assert isinstance(refresh, Decision) and refresh.refused and len(acc.ledger) == 3
    with pytest.raises(ConfigurationError, match=r"request_all needs at least one release, got none"):
        acc.request_all([])
    with pytest.raises(ConfigurationError, match=r"releases must be Release objects, got 'A'"):
        acc.request_all(["A"])  # type: ignore[list-item]


def test_request_all_refuses_the_first_release_outside_the_plan() -> None:
    acc = PrivacyAccountant(math.inf, party=1, allowed_attributes=("A", "B"))
    inside = Release.from_matrix(("A",), grr(2, 1.0), phase="p")
    outside = Release.from_matrix(("Z",), grr(2, 1.0), phase="p")
    refused = acc.request_all([inside, outside])
    assert isinstance(refused, Decision) and refused.refusal is not None
    assert refused.refusal.reason is RefusalReason.PLAN_VIOLATION and refused.request is outside
    assert refused.refusal.message.startswith("party 1: release 'p(Z)' asks for attributes ['Z']")
    assert len(acc.ledger) == 0
