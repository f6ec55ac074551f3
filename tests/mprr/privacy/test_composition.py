"""Incremental composition (mprr.privacy.composition.PolicyTotals) against the from-scratch rules."""

from __future__ import annotations

import math
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.mprr.privacy.composition_model import COMPOSITION_RULES, compose, compose_by_phase
from mprr.privacy.composition import (
    CompositionPolicy,
    PolicyTotals,
    as_policy,
)
from mprr.errors import ConfigurationError
from mprr.privacy.release import Release

POLICIES = tuple(CompositionPolicy)


def rel(attrs, eps, **kw) -> Release:
    return Release(attributes=attrs, epsilon=eps, **kw)


def _release(attrs, eps, linkable, phase, kronecker, weights):
    shares = None
    if kronecker and len(attrs) > 1:
        shares = tuple(eps * w / sum(weights[: len(attrs)]) for w in weights[: len(attrs)])
    return Release(attributes=tuple(attrs), epsilon=eps, linkable=linkable, phase=phase, attribute_epsilons=shares)


release_strategy = st.builds(
    _release,
    st.lists(st.sampled_from("ABCDEFG"), min_size=1, max_size=3, unique=True),
    st.one_of(st.floats(min_value=0.0, max_value=5.0), st.just(math.inf), st.just(0.1), st.just(0.7)),
    st.booleans(),
    st.sampled_from(["dependence", "release", "clusters"]),
    st.booleans(),
    st.lists(st.floats(min_value=0.1, max_value=3.0), min_size=3, max_size=3),
)


# ---------------------------------------------------------------------- bit-for-bit equality
@settings(max_examples=300, deadline=None)
@given(st.lists(release_strategy, max_size=14), st.sampled_from(POLICIES))
def test_incremental_totals_equal_the_rules_bit_for_bit(releases, policy) -> None:
    # fsum is exactly rounded, so the incremental states must reproduce compose() exactly
    # (==, not approx) after every prefix, for every policy, with ε = ∞ and mixed channels.
    totals = PolicyTotals(policy)
    for k, release in enumerate(releases, start=1):
        totals = totals.plus(release)
        prefix = releases[:k]
        assert totals.by_phase == compose_by_phase(prefix, policy)
        assert totals.total == compose(prefix, policy)
        assert list(totals.by_phase) == list(dict.fromkeys(r.phase for r in prefix))
    assert PolicyTotals.of(releases, policy).total == compose(releases, policy)


def test_worked_examples_match_the_policy_definitions() -> None:
    # Main paper 4.3: all pairs of A..D at ε = 1 inside a secure sum: sequential 6, pairs 2.
    pairs = [rel(p, 1.0, linkable=False) for p in combinations("ABCD", 2)]
    assert PolicyTotals.of(pairs, "sequential").total == 6.0
    assert PolicyTotals.of(pairs, "unlinkable-pairs").total == 2.0
    # Parallel: a chain (A,B) - (B,C) joins (A,B) and (C,D) into one component: 0.5 + 0.4 + 0.3.
    chain = [rel(("A", "B"), 0.5), rel(("C", "D"), 0.3), rel(("E",), 1.0), rel(("B", "C"), 0.4)]
    steps = [PolicyTotals.of(chain[:k], "parallel").total for k in range(1, 5)]
    assert steps == [0.5, 0.5, 1.0, pytest.approx(1.2, abs=1e-15)]
    # Phases compose sequentially under every policy.
    two = [rel(("A",), 1.0, phase="dependence"), rel(("A",), 1.0)]
    for policy in POLICIES:
        t = PolicyTotals.of(two, policy)
        assert (t.total, t.phases, t.phase_value("dependence"), t.phase_value("absent")) == (
            2.0,
            ("dependence", "release"),
            1.0,
            0.0,
        )


def test_fresh_draws_of_a_released_set_are_new_spending_under_every_policy() -> None:
    """Issue 25: 41 secure sums of the same pair at ε = 2 each (41 linked draws: a majority vote
    recovers the pair) cost 2 under unlinkable-pairs before; each fresh draw is a layer now."""
    draws = [rel(("A", "B"), 2.0, linkable=False) for _ in range(41)]
    for policy in POLICIES:
        assert PolicyTotals.of(draws, policy).total == 82.0
    # all pairs of A..D twice (two 4.3 sums): two layers of the paper's 2.0
    pairs = [rel(p, 1.0, linkable=False) for p in combinations("ABCD", 2)]
    assert PolicyTotals.of(pairs + pairs, "unlinkable-pairs").total == 4.0
    # the order of attributes in a unit does not make it another set
    assert PolicyTotals.of([rel(("A", "B"), 2.0, linkable=False), rel(("B", "A"), 2.0, linkable=False)],
                           "unlinkable-pairs").total == 4.0


def test_unlinkable_kronecker_shares_give_rr_independent_cost() -> None:
    eps = {"A": 0.5, "B": 1.0, "C": 0.75}
    pairs = [
        rel((i, j), eps[i] + eps[j], linkable=False, attribute_epsilons=(eps[i], eps[j]))
        for i, j in combinations("ABC", 2)
    ]
    assert PolicyTotals.of(pairs, "unlinkable-pairs").total == pytest.approx(2.25, abs=1e-15)


# ---------------------------------------------------------------------- immutability and memo
def test_plus_leaves_snapshots_unchanged_and_branches_independently() -> None:
    base = PolicyTotals.of([rel(("A", "B"), 1.0, linkable=False)], "unlinkable-pairs")
    left = base.plus(rel(("A", "C"), 0.6, linkable=False))
    right = base.plus(rel(("A", "B"), 0.8))  # linkable: adds in full
    assert base.total == 1.0
    assert left.total == pytest.approx(1.3, abs=1e-15)  # A 0.5, B 0.5, C 0.3
    assert right.total == pytest.approx(1.8, abs=1e-15)
    assert base.by_phase == {"release": 1.0}
    for policy in POLICIES:
        t0 = PolicyTotals.of([rel(("A",), 1.0)], policy)
        t1 = t0.plus(rel(("A", "B"), 2.0))
        t2 = t0.plus(rel(("C",), 0.5))
        assert t0.total == 1.0
        assert t1.total == compose([rel(("A",), 1.0), rel(("A", "B"), 2.0)], policy)
        assert t2.total == compose([rel(("A",), 1.0), rel(("C",), 0.5)], policy)


def test_plus_remembers_its_last_result() -> None:
    # A budget check followed by the grant of the same release computes the step once.
    t0 = PolicyTotals("sequential")
    r = rel(("A",), 1.0)
    assert t0.plus(r) is t0.plus(r)
    other = rel(("A",), 1.0)  # equal but another object: recomputed, same numbers
    assert t0.plus(other) is not t0.plus(r) and t0.plus(other).total == t0.plus(r).total


def test_by_phase_is_a_copy_and_repr_names_the_policy() -> None:
    t = PolicyTotals.of([rel(("A",), 1.0)], CompositionPolicy.PARALLEL)
    t.by_phase["release"] = 99.0
    assert t.by_phase == {"release": 1.0} and t.total == 1.0
    assert "parallel" in repr(t) and t.policy is CompositionPolicy.PARALLEL


def test_as_policy_accepts_members_and_names_only() -> None:
    for policy in POLICIES:
        assert as_policy(policy) is policy and as_policy(policy.value) is policy
    allowed = r"'sequential', 'parallel', 'unlinkable-pairs'"
    with pytest.raises(ConfigurationError, match=rf"policy must be one of {allowed}, got \['x'\]"):
        as_policy(["x"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"got 'basic'"):
        PolicyTotals("basic")
    assert set(COMPOSITION_RULES) == set(POLICIES)
