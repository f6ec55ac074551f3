"""The per-party accountant (mprr.privacy.accountant): decisions against a from-scratch model, atomic checks."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.privacy.accountant import Ask, Decision, Outcome, PrivacyAccountant, Refusal, RefusalReason
from mprr.errors import ConfigurationError
from mprr.privacy import CompositionPolicy, Release
from tests.mprr.privacy.asking import ask, charge, refused
from tests.mprr.privacy.composition_model import compose
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
        repeat = next((i for i, r in enumerate(granted) if r.same_as(request)), None)
        after = compose([*granted, request], policy)
        fits = math.isinf(budget) or after <= budget * (1 + 1e-9) + 1e-12 and math.isfinite(after)
        decision = ask(acc, request)
        if repeat is not None:
            assert isinstance(decision, Decision) and decision.outcome is Outcome.REPLAYED
            assert decision.entry_index == repeat
        elif fits:
            assert isinstance(decision, Decision) and decision.outcome is Outcome.GRANTED
            assert decision.entry_index == len(granted)
            granted.append(request)
        else:
            assert isinstance(decision, Refusal) and decision.reason is RefusalReason.BUDGET_EXCEEDED
        assert acc.spent() == compose(granted, policy)
        assert list(acc.ledger) == granted


def test_answer_spends_the_atomic_total_of_a_request() -> None:
    acc = PrivacyAccountant(10.0, "sequential")
    P = keep_or_uniform(4, 0.6)
    first = Release.from_matrix(("A",), P, phase="dependence")
    charge(acc, first)
    new = (
        Release.from_matrix(("A",), P, phase="clusters"),  # replay of `first`: adds nothing
        Release.from_matrix(("B", "C"), grr(4, 1.0), phase="clusters"),
        Release.from_matrix(("B", "C"), grr(4, 1.0), phase="clusters"),  # repeats the previous one
        Release.from_matrix(("D",), grr(2, 0.5), phase="clusters"),
    )
    decisions = acc.answer(Ask(new, "clusters", 3))
    assert isinstance(decisions, tuple)
    assert [d.outcome for d in decisions] == [Outcome.REPLAYED, Outcome.GRANTED, Outcome.REPLAYED, Outcome.GRANTED]
    assert [d.entry_index for d in decisions] == [0, 1, 1, 2]
    expected = compose([first, new[1], new[3]], "sequential")
    assert acc.spent() == expected == pytest.approx(P.epsilon + 1.5, rel=1e-12)
    assert acc.replays == ((new[0], 0), (new[2], 1)) and acc.refusals == ()
    with pytest.raises(ConfigurationError, match=r"releases must be Release objects, got 'A'"):
        acc.answer(Ask(("A",), "clusters"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"request 4 \(clusters\) must ask for at least one release, got none"):
        acc.answer(Ask((), "clusters", 4))


@pytest.mark.parametrize("policy", POLICIES)
def test_answer_follows_the_policy(policy) -> None:
    acc = PrivacyAccountant(math.inf, policy)
    charge(acc, rel(("A", "B"), 1.0, linkable=False))
    batch = (rel(("A", "C"), 0.6, linkable=False), rel(("D",), 0.2, linkable=False))
    expected = compose([*acc.ledger, *batch], policy)
    acc.answer(Ask(batch, "release"))
    assert acc.spent() == expected


def test_a_release_outside_the_plan_is_refused_naming_the_party() -> None:
    acc = PrivacyAccountant(1.0, party=9)
    refusal = refused(acc, rel(("B",), 0.1), RefusalReason.PLAN_VIOLATION,
                      r"party 9: release 'release\(B\)' asks for attributes", [("A",)])
    assert refusal.party == 9 and acc.plans == {"release": frozenset({frozenset("A")})}
    assert acc.spent() == 0.0 and len(acc.ledger) == 0


def test_announced_plans_are_shared_safely_between_accountants() -> None:
    # The same plan object announced by many parties gives each the same plan; equal plans written
    # differently (lists, permuted groups, a bare name) are the same plan; phases stay apart.
    plan = (("A", "B"), ("C",))
    accountants = [PrivacyAccountant(5.0, party=i) for i in range(3)]
    c = rel(("C",), 0.5, phase="clusters")
    for acc in accountants:
        charge(acc, c, plan)
    charge(accountants[0], c, [["B", "A"], "C"])  # same plan: no-op
    charge(accountants[1], rel(("A",), 0.5, phase="dependence"), (("A",), ("B",), ("C",)))
    assert accountants[0].plans == accountants[2].plans == {"clusters": frozenset({frozenset("AB"), frozenset("C")})}
    assert accountants[1].plans["dependence"] == frozenset({frozenset("A"), frozenset("B"), frozenset("C")})
    refused(accountants[2], c, RefusalReason.PLAN_VIOLATION,
            r"phase 'clusters' already has an announced plan of 2 groups", (("A",), ("B", "C")))
    with pytest.raises(ConfigurationError, match=r"plan groups must be non-empty, got \(\) in phase 'x'"):
        ask(accountants[2], rel(("A",), 0.5, phase="x"), ((),))
    assert charge(accountants[0], rel(("B", "A"), 1.0, phase="clusters")).granted
    refused(accountants[0], rel(("A",), 1.0, phase="clusters"), RefusalReason.PLAN_VIOLATION)


def test_a_decision_says_what_happened_and_cannot_be_altered() -> None:
    acc = PrivacyAccountant(2.0)
    r = rel(("A",), 1.0, request_id="q")
    granted = charge(acc, r)
    replayed = charge(acc, rel(("A",), 1.0, request_id="q"))
    refused(acc, rel(("B",), 1.5), RefusalReason.BUDGET_EXCEEDED)
    assert granted == Decision(Outcome.GRANTED, r, 0)
    assert (granted.granted, granted.replayed) == (True, False)
    assert (replayed.granted, replayed.replayed) == (False, True)
    assert replayed.entry_index == 0  # a replay points at the entry it repeats and spends nothing
    assert acc.spent() == 1.0 and len(acc.ledger) == 1
    with pytest.raises(AttributeError, match="can.t set attribute|has no setter"):
        granted.entry_index = 3  # type: ignore[misc]


def test_allowed_attributes_refuse_every_other_attribute() -> None:
    names = ("A", "B", "C")
    first, second = PrivacyAccountant(1.0, allowed_attributes=names), PrivacyAccountant(1.0, allowed_attributes=names)
    assert first.allowed_attributes == second.allowed_attributes == frozenset(names)
    listed = PrivacyAccountant(1.0, allowed_attributes=["A", "B"])
    assert listed.allowed_attributes == frozenset({"A", "B"})
    refused(listed, rel(("C",), 0.1), RefusalReason.PLAN_VIOLATION)
    assert charge(first, rel(("C",), 0.1)).granted


def test_answer_grants_replays_or_refuses_a_whole_request_together() -> None:
    acc = PrivacyAccountant(2.0, "sequential", party=4)
    charge(acc, Release.from_matrix(("A",), grr(2, 1.0), phase="dependence"))
    b = Release.from_matrix(("B",), grr(2, 0.5), phase="dependence")
    assert acc.spent() == pytest.approx(1.0) and acc.answer(Ask((b,), "dependence", 6))
    # Over the budget together: one refusal, nothing granted although `c` alone would fit.
    c = Release.from_matrix(("C",), grr(2, 0.4), phase="dependence")
    d = Release.from_matrix(("D",), grr(2, 0.4), phase="dependence")
    refused = acc.answer(Ask((c, d), "dependence", 7, ((2,), (3,))))
    assert refused == Refusal(
        RefusalReason.BUDGET_EXCEEDED,
        "party 4: request 7 (dependence) would spend ε=0.8 but only 0.5 of the budget 2 remains "
        "under policy 'sequential'",
        pytest.approx(0.8), pytest.approx(0.5), 4, 7, "dependence", ((2,), (3,)),
    )
    assert acc.refusals == (refused,) and len(acc.ledger) == 2
    assert charge(acc, c).granted


def test_answer_refuses_a_request_outside_the_plan_or_the_allowed_attributes() -> None:
    acc = PrivacyAccountant(math.inf, party=1, allowed_attributes=("A", "B", "C"))
    inside = Release.from_matrix(("A",), grr(2, 1.0), phase="p")
    pair = Release.from_matrix(("B", "C"), grr(4, 1.0), phase="p")
    outside = Release.from_matrix(("Z",), grr(2, 1.0), phase="p")
    refused = acc.answer(Ask((inside, outside), "p", 1))
    assert isinstance(refused, Refusal) and refused.reason is RefusalReason.PLAN_VIOLATION
    assert refused.message.startswith("party 1: release 'p(Z)' asks for attributes ['Z']")
    plan = (("A",), ("B", "C"))
    assert acc.answer(Ask((inside,), "p", 2, plan=plan))  # announces the plan
    refused = acc.answer(Ask((pair, inside), "p", 3, ((1, 2), (0,)), plan=(("A", "B"), ("C",))))
    assert isinstance(refused, Refusal) and "another plan" in refused.message
    refused = acc.answer(Ask((Release.from_matrix(("A", "B"), grr(4, 1.0), phase="p"),), "p", 4, ((0, 1),),
                             plan=plan))
    assert isinstance(refused, Refusal) and refused.message == (
        "party 1: request 4 (p) asks for attributes [0, 1], not groups of the plan announced for phase 'p'"
    )
    assert len(acc.ledger) == 1 and [r.request_id for r in acc.refusals] == [1, 3, 4]


def test_a_committed_input_enters_one_session_that_runs_once() -> None:
    acc = PrivacyAccountant(math.inf, party=2, min_roster=3)
    exact = Release.exact_values(("A", "B"), linkable=False, phase="dependence")
    commit = Ask((exact,), "dependence", 1, ((0, 1),), session="s", exact=True)
    assert len(acc.answer(commit)) == 1
    assert acc.answer(commit) == ()  # re-sent: already committed, nothing new
    other = acc.answer(Ask((exact,), "dependence", 2, ((0, 1),), session="t", exact=True))
    assert isinstance(other, Refusal) and other.reason is RefusalReason.SESSION_REFUSED
    assert other.requested == math.inf and "already entered secure-sum session 's'" in other.message
    changed = acc.answer(Ask((exact,), "dependence", 3, ((1, 0),), session="s", exact=True))
    assert isinstance(changed, Refusal) and "was committed with units" in changed.message
    # 4.3: a randomized input for a new session is a fresh draw, booked again
    pair = Release.from_matrix(("A", "B"), grr(4, 1.0), linkable=False, phase="dependence")
    fresh = PrivacyAccountant(1.5, party=3)
    assert fresh.answer(Ask((pair,), "dependence", 1, ((0, 1),), session="u"))[0].granted  # type: ignore[index]
    again = fresh.answer(Ask((pair,), "dependence", 2, ((0, 1),), session="v"))
    assert isinstance(again, Refusal) and again.reason is RefusalReason.BUDGET_EXCEEDED
    # a session starts once, with a roster that holds the party and has >= min_roster parties
    assert acc.start_session("nope", (0, 1, 2), 2) == "no committed input or unknown session"
    assert acc.start_session("s", (0, 1, 3), 2) == "party 2 is not in the roster it was sent"
    assert acc.start_session("s", (1, 2), 2) == (
        "roster of 2 parties is below the party's minimum min_roster = 3")
    assert acc.start_session("s", (0, 1, 2), 2) is None
    acc.end_session("s", aborted=True)
    assert acc.start_session("s", (0, 1, 2), 2) == (
        "its input already entered session 's' (aborted, roster of 3 parties); a session runs once, "
        "with one roster")
    with pytest.raises(ConfigurationError, match=r"min_roster must be an integer >= 2, got 1"):
        PrivacyAccountant(1.0, min_roster=1)


def test_a_copy_gives_its_party_its_own_containers_and_session_records() -> None:
    acc = PrivacyAccountant(math.inf, party=2, min_roster=3)
    exact = Release.exact_values(("A", "B"), linkable=False, phase="dependence")
    acc.answer(Ask((exact,), "dependence", 1, ((0, 1),), session="s", exact=True))
    copy, = acc.copies([7])
    assert copy.party == 7 and acc.party == 2 and copy.ledger is acc.ledger  # (immutable: shared)
    assert copy.start_session("s", [2, 5, 7], 7) is None  # its own session record runs ...
    assert copy.session_state("s") == "running" and acc.session_state("s") == "committed"  # ... not the template's
    assert acc.start_session("s", [2, 5, 7, 9], 2) is None and copy.session_state("s") == "running"
    copy.refuse(Ask((exact,), "dependence", 2), RefusalReason.INVALID_REQUEST, "no")
    assert len(copy.refusals) == 1 and not acc.refusals  # its own lists


def test_copies_for_a_batch_are_the_copies_made_alone() -> None:
    acc = PrivacyAccountant(math.inf, party=2, min_roster=3)
    exact = Release.exact_values(("A", "B"), linkable=False, phase="dependence")
    acc.answer(Ask((exact,), "dependence", 1, ((0, 1),), session="s", exact=True))
    first, second = acc.copies([5, 7])
    assert (first.party, second.party) == (5, 7) and first.ledger is second.ledger is acc.ledger
    assert first.start_session("s", [2, 5, 7], 5) is None
    assert first.session_state("s") == "running" and second.session_state("s") == acc.session_state("s") == "committed"
    assert vars(second) == vars(acc.copies([7])[0])  # (the same fields as a copy made alone)


def test_the_state_key_is_equal_for_equal_states_apart_from_the_party() -> None:
    acc = PrivacyAccountant(10.0, party=2)
    assert acc.answer(Ask((Release.from_matrix(("A",), keep_or_uniform(3, 0.5), phase="p"),), "p", 1)) is not None
    first, second = acc.copies([5, 7])
    assert first.state_key() == second.state_key() == acc.state_key()  # (the ledger shared, its releases alike)
    first.refuse(Ask((), "p", 2), RefusalReason.INVALID_REQUEST, "no")
    assert first.state_key() != second.state_key() == acc.state_key()
    assert PrivacyAccountant(1.0, party=1).state_key() != PrivacyAccountant(2.0, party=1).state_key()
    # a mutable record (a secure-sum session) is its owner's alone: copies holding one never share a key
    committed = PrivacyAccountant(math.inf, party=2, min_roster=3)
    exact = Release.exact_values(("A", "B"), linkable=False, phase="dependence")
    committed.answer(Ask((exact,), "dependence", 3, ((0, 1),), session="s", exact=True))
    third, fourth = committed.copies([8, 9])
    assert third.session_state("s") == fourth.session_state("s") == "committed"
    assert third.state_key() != fourth.state_key()
