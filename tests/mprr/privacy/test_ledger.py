"""Releases, ledgers and composition policies (mprr.privacy.ledger): exact values on hand-built ledgers."""

from __future__ import annotations

import dataclasses
import json
import math
from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.errors import ConfigurationError
from mprr.privacy.composition import CompositionPolicy, as_policy
from mprr.privacy.ledger import Ledger
from mprr.privacy.release import EXACT_KEY, Release, matrix_fingerprint
from tests.mprr.privacy.composition_model import attribute_components, compose, compose_by_phase

POLICIES = tuple(CompositionPolicy)


# ---------------------------------------------------------------------- helpers (numpy only)
def eq4_epsilon(P: np.ndarray) -> float:
    """Main paper eq. (4): ε = max_v ln(max_u p_uv / min_u p_uv); ∞ if a column mixes 0 and > 0."""
    col_max, col_min = P.max(axis=0), P.min(axis=0)
    used = col_max > 0
    if np.any(col_min[used] == 0):
        return math.inf
    return float(np.max(np.log(col_max[used] / col_min[used])))


def entropy_rate(P: np.ndarray) -> float:
    """Mean row entropy in bits (bistochastic-privacy paper)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, -P * np.log2(P), 0.0)
    return float(terms.sum(axis=1).mean())


def grr(k: int, epsilon: float) -> np.ndarray:
    """Generalised RR: e^ε/(e^ε+k-1) on the diagonal, 1/(e^ε+k-1) off it."""
    P = np.full((k, k), 1.0 / (math.exp(epsilon) + k - 1))
    np.fill_diagonal(P, math.exp(epsilon) / (math.exp(epsilon) + k - 1))
    return P


def matrix(P: np.ndarray) -> SimpleNamespace:
    """A duck-typed matrix like mprr.matrices.RandomizationMatrix (no import of it)."""
    h = entropy_rate(P)
    return SimpleNamespace(values=P, epsilon=eq4_epsilon(P), entropy_rate=h, beta=h / math.log2(P.shape[0]))


def rel(attrs, eps, **kw) -> Release:
    return Release(attributes=attrs, epsilon=eps, **kw)


# ---------------------------------------------------------------------- Release
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"attributes": ("A",), "epsilon": -1.0}, r"epsilon must be a number >= 0 or math.inf, got -1.0"),
        ({"attributes": ("A",), "epsilon": math.nan}, r"epsilon must be"),
        ({"attributes": ("A",), "epsilon": "1"}, r"epsilon must be a number"),
        ({"attributes": (), "epsilon": 1.0}, r"attributes must be non-empty and without repeats"),
        ({"attributes": ("A", "A"), "epsilon": 1.0}, r"without repeats, got \('A', 'A'\)"),
        ({"attributes": (True,), "epsilon": 1.0}, r"attributes must be names \(str\) or indices \(int\)"),
        ({"attributes": ("A",), "epsilon": 1.0, "beta": 1.5}, r"beta must be in \[0, 1\], got 1.5"),
        ({"attributes": ("A",), "epsilon": 1.0, "entropy_bits": math.inf}, r"entropy_bits must be a finite"),
        ({"attributes": ("A",), "epsilon": 1.0, "exact": True}, r"exact release .* has epsilon = inf"),
        ({"attributes": ("A",), "epsilon": 1.0, "phase": ""}, r"phase must be a non-empty string"),
        ({"attributes": ("A",), "epsilon": 1.0, "linkable": 1}, r"linkable must be True or False"),
        ({"attributes": ("A", "B"), "epsilon": 1.0, "attribute_epsilons": (1.0,)}, r"one entry per attribute \(2\)"),
    ],
)
def test_release_rejects_bad_values(kwargs, match) -> None:
    with pytest.raises(ConfigurationError, match=match):
        Release(**kwargs)


def test_release_normalises_attributes_and_is_frozen() -> None:
    r = Release(attributes=[np.int64(3), 1], epsilon=1)
    assert r.attributes == (3, 1) and type(r.attributes[0]) is int
    assert Release(attributes="age", epsilon=0.5).attributes == ("age",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.epsilon = 2.0  # type: ignore[misc]
    assert r.name == "release(3, 1)"
    assert Release(attributes=("A",), epsilon=1.0, request_id="q7").name == "q7"


def test_from_matrix_reads_epsilon_entropy_beta_duck_typed() -> None:
    P = grr(4, math.log(3))
    r = Release.from_matrix(("A",), matrix(P), linkable=False, phase="dependence", request_id="r1")
    # GRR: ratio diagonal / off-diagonal is e^ε exactly.
    assert r.epsilon == pytest.approx(math.log(3), rel=1e-12)
    # Row entropy of GRR(4, ln 3): probabilities (1/2, 1/6, 1/6, 1/6).
    expected_h = -(0.5 * math.log2(0.5) + 3 * (1 / 6) * math.log2(1 / 6))
    assert r.entropy_bits == pytest.approx(expected_h, rel=1e-12)
    assert r.beta == pytest.approx(expected_h / 2, rel=1e-12)
    assert (r.linkable, r.phase, r.request_id) == (False, "dependence", "r1")
    assert r.matrix_key == matrix_fingerprint(P)
    with pytest.raises(ConfigurationError, match=r"has no \.beta"):
        Release.from_matrix(("A",), SimpleNamespace(epsilon=1.0, entropy_rate=1.0))


def test_from_matrix_kronecker_gives_per_attribute_epsilons() -> None:
    fa, fb = matrix(grr(3, 0.5)), matrix(grr(5, 1.25))
    kron = SimpleNamespace(
        factors=(fa, fb), epsilon=fa.epsilon + fb.epsilon, entropy_rate=fa.entropy_rate + fb.entropy_rate, beta=0.5
    )
    r = Release.from_matrix(("A", "B"), kron)
    assert r.attribute_epsilons == pytest.approx((0.5, 1.25), rel=1e-12)
    assert r.epsilon == pytest.approx(1.75, rel=1e-12)
    assert r.matrix_key is not None and r.matrix_key != matrix_fingerprint(fa.values)


def test_matrix_fingerprint_distinguishes_matrices() -> None:
    assert matrix_fingerprint(grr(3, 1.0)) == matrix_fingerprint(grr(3, 1.0).copy())
    assert matrix_fingerprint(grr(3, 1.0)) != matrix_fingerprint(grr(3, 1.5))
    assert matrix_fingerprint(SimpleNamespace(epsilon=1.0)) is None


def test_exact_release_has_infinite_epsilon_and_no_entropy() -> None:
    r = Release.exact_values(("A", "B"))
    assert math.isinf(r.epsilon) and r.exact and r.no_dp_guarantee
    assert (r.entropy_bits, r.beta, r.linkable, r.phase, r.matrix_key) == (0.0, 0.0, False, "dependence", EXACT_KEY)
    assert r.to_dict()["epsilon"] == "inf"
    json.dumps(r.to_dict(), allow_nan=False)


def test_same_as_requires_same_attributes_matrix_and_channel() -> None:
    P1, P2 = matrix(grr(3, 1.0)), matrix(grr(3, 2.0))
    base = Release.from_matrix(("A", "B"), P1)
    assert base.same_as(Release.from_matrix(("A", "B"), P1, phase="other", request_id="x"))
    assert not base.same_as(Release.from_matrix(("B", "A"), P1))
    assert not base.same_as(Release.from_matrix(("A", "B"), P2))
    assert not base.same_as(Release.from_matrix(("A", "B"), P1, linkable=False))
    # Without matrix keys only an equal request id (and equal content) identifies a repeat.
    a = rel(("A",), 1.0, request_id="q1")
    assert a.same_as(rel(("A",), 1.0, request_id="q1"))
    assert not a.same_as(rel(("A",), 1.0, request_id="q2"))
    assert not a.same_as(rel(("A",), 2.0, request_id="q1"))
    assert not rel(("A",), 1.0).same_as(rel(("A",), 1.0))


# ---------------------------------------------------------------------- policies
def test_as_policy_names_allowed_values() -> None:
    assert as_policy("unlinkable-pairs") is CompositionPolicy.UNLINKABLE_PAIRS
    with pytest.raises(ConfigurationError, match=r"policy must be one of 'sequential', 'parallel', 'unlinkable-pairs', got 'basic'"):
        as_policy("basic")


def test_sequential_sums_everything() -> None:
    releases = [rel(("A",), 0.5), rel(("B",), 1.0, linkable=False), rel(("A", "B"), 0.25)]
    assert compose(releases, "sequential") == 1.75


def test_parallel_disjoint_attributes_compose_by_max() -> None:
    releases = [rel(("A",), 0.5), rel(("B",), 1.0), rel(("C", "D"), 0.25)]
    assert compose(releases, "parallel") == 1.0


def test_parallel_overlapping_releases_add_within_component() -> None:
    # (A,B) and (B,C) share B: sequential inside their component; (D) is disjoint.
    releases = [rel(("A", "B"), 0.5), rel(("B", "C"), 1.0), rel(("D",), 0.7)]
    assert compose(releases, "parallel") == 1.5
    # A chain joins (A,B) and (C,D) through (B,C): one component, 0.5 + 0.4 + 0.3 = 1.2 > 1.0.
    chain = [rel(("A", "B"), 0.5), rel(("C", "D"), 0.3), rel(("E",), 1.0), rel(("B", "C"), 0.4)]
    assert attribute_components(chain) == [[0, 1, 3], [2]]
    assert compose(chain, "parallel") == pytest.approx(1.2, abs=1e-15)


def test_unlinkable_pairs_counts_each_attribute_once() -> None:
    # Main paper 4.3: all m(m-1)/2 pairs of m = 4 attributes, each through a matrix with ε = 1,
    # inside a secure sum.  Sequential: 6.  Each attribute counts once with share 1/2: 4 * 0.5 = 2.
    pairs = [rel(p, 1.0, linkable=False) for p in combinations("ABCD", 2)]
    assert compose(pairs, "sequential") == 6.0
    assert compose(pairs, "unlinkable-pairs") == 2.0
    # The same releases sent directly (linkable) compose sequentially under this policy too.
    linked = [dataclasses.replace(r, linkable=True) for r in pairs]
    assert compose(linked, "unlinkable-pairs") == 6.0


def test_unlinkable_pairs_mixed_linkable_and_unlinkable() -> None:
    releases = [
        rel(("A", "B"), 1.0, linkable=False),
        rel(("A", "C"), 0.6, linkable=False),  # shares 0.3, 0.3: A keeps 0.5 (from (A,B)), C gets 0.3
        rel(("A", "B"), 0.8, linkable=True),  # linkable: adds 0.8
        rel(("D",), 0.2, linkable=False),  # alone on D: full 0.2
    ]
    # linkable 0.8 + A: max(0.5, 0.3) + B: 0.5 + C: 0.3 + D: 0.2
    assert compose(releases, "unlinkable-pairs") == pytest.approx(0.8 + 0.5 + 0.5 + 0.3 + 0.2, abs=1e-15)
    assert compose(releases, "sequential") == pytest.approx(2.6, abs=1e-15)


def test_unlinkable_pairs_equals_sequential_on_disjoint_or_single_release() -> None:
    single = [rel(("A", "B"), 1.3, linkable=False)]
    assert compose(single, "unlinkable-pairs") == compose(single, "sequential") == 1.3
    disjoint = [rel(("A", "B"), 1.0, linkable=False), rel(("C",), 0.5, linkable=False)]
    assert compose(disjoint, "unlinkable-pairs") == compose(disjoint, "sequential") == 1.5


def test_unlinkable_kronecker_pairs_cost_rr_independent() -> None:
    # 4.3 with pair matrices P^i ⊗ P^j: per-attribute shares are the factor ε, so all pairs
    # together cost Σ_i ε_i — exactly one RR-Independent release of every attribute.
    eps = {"A": 0.5, "B": 1.0, "C": 0.75, "D": 0.25}
    pairs = [
        rel((i, j), eps[i] + eps[j], linkable=False, attribute_epsilons=(eps[i], eps[j]))
        for i, j in combinations("ABCD", 2)
    ]
    assert compose(pairs, "unlinkable-pairs") == pytest.approx(sum(eps.values()), abs=1e-15)
    assert compose(pairs, "sequential") == pytest.approx(3 * sum(eps.values()), abs=1e-14)


@pytest.mark.parametrize("policy", POLICIES)
def test_phases_compose_sequentially(policy) -> None:
    dependence = [rel(p, 1.0, linkable=False, phase="dependence") for p in combinations("ABC", 2)]
    release = [rel(("A", "B"), 0.7, phase="release"), rel(("C",), 0.4, phase="release")]
    by_phase = compose_by_phase(dependence + release, policy)
    assert list(by_phase) == ["dependence", "release"]
    assert compose(dependence + release, policy) == pytest.approx(
        compose(dependence, policy) + compose(release, policy), abs=1e-15
    )
    expected_dependence = {"sequential": 3.0, "parallel": 3.0, "unlinkable-pairs": 1.5}[policy.value]
    expected_release = {"sequential": 1.1, "parallel": 0.7, "unlinkable-pairs": 1.1}[policy.value]
    assert by_phase == pytest.approx({"dependence": expected_dependence, "release": expected_release}, abs=1e-15)


def test_same_release_in_two_phases_is_not_maxed_across_phases() -> None:
    releases = [rel(("A", "B"), 1.0, linkable=False, phase="dependence"), rel(("A", "B"), 1.0, linkable=False)]
    for policy in POLICIES:
        assert compose(releases, policy) == 2.0


def test_rr_independent_over_m_attributes_is_m_epsilon() -> None:
    # RR-Ind-Joint paper Theorem 2: m independent ε-LDP attribute releases give mε.
    m, eps = 8, math.log(3)
    P = matrix(grr(5, eps))
    releases = [Release.from_matrix((a,), P) for a in range(m)]
    for policy in ("sequential", "unlinkable-pairs"):
        assert compose(releases, policy) == pytest.approx(m * eps, rel=1e-12)
    # Parallel composition treats the m disjoint attributes as disjoint data: max, i.e. ε.
    assert compose(releases, "parallel") == pytest.approx(eps, rel=1e-12)
    # The same as one Kronecker release of all m attributes (its ε is the sum of the factors').
    kron = SimpleNamespace(factors=(P,) * m, epsilon=m * P.epsilon, entropy_rate=m * P.entropy_rate, beta=P.beta)
    joint = Release.from_matrix(tuple(range(m)), kron)
    for policy in POLICIES:
        assert compose([joint], policy) == pytest.approx(m * eps, rel=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_exact_release_makes_epsilon_infinite(policy) -> None:
    releases = [rel(("A",), 0.5), Release.exact_values(("B", "C")), rel(("D",), 0.1, phase="dependence")]
    assert math.isinf(compose(releases, policy))
    assert Ledger(tuple(releases)).no_dp_guarantee
    assert not Ledger((releases[0],)).no_dp_guarantee


def test_empty_ledger_spends_nothing() -> None:
    for policy in POLICIES:
        assert compose([], policy) == 0.0
        assert Ledger().total(policy) == 0.0


# ---------------------------------------------------------------------- Ledger
def test_ledger_is_append_only_with_immutable_snapshots() -> None:
    empty = Ledger()
    one = empty.appended(rel(("A",), 1.0))
    two = one.appended(rel(("B",), 0.5, phase="dependence"))
    assert (len(empty), len(one), len(two)) == (0, 1, 2)
    assert one.releases == (rel(("A",), 1.0),)
    assert two.phases == ("release", "dependence")
    assert two.total("sequential") == 1.5 and one.total("sequential") == 1.0
    assert two.by_phase("parallel") == {"release": 1.0, "dependence": 0.5}
    with pytest.raises(dataclasses.FrozenInstanceError):
        two.releases = ()  # type: ignore[misc]
    with pytest.raises(ConfigurationError, match="a ledger holds Release objects"):
        one.appended("A")  # type: ignore[arg-type]
    assert two.lookup(rel(("A",), 1.0, request_id=None)) is None  # no key, no id: not a repeat
    keyed = Ledger((Release.from_matrix(("A",), matrix(grr(2, 1.0))),))
    assert keyed.lookup(Release.from_matrix(("A",), matrix(grr(2, 1.0)))) == 0
    json.dumps(two.to_dict(), allow_nan=False)


def test_equal_histories_share_their_ledger_snapshots_and_branch_apart() -> None:
    a, b = Release.from_matrix(("A",), matrix(grr(2, 1.0))), Release.from_matrix(("B",), matrix(grr(3, 0.5)))
    assert Ledger.empty().appended(a).appended(b) is Ledger.empty().appended(a).appended(b)  # no one kept the middle
    first, second = Ledger.empty().appended(a), Ledger.empty().appended(a)
    assert first is second and first.appended(b) is second.appended(b)
    assert first.total("sequential") == pytest.approx(1.0)
    other = first.appended(Release.from_matrix(("B",), matrix(grr(3, 0.5))))  # equal, but another object
    assert other is not first.appended(b) and other == first.appended(b)
    # one branch's index does not leak into the other's lookups
    c = Release.from_matrix(("C",), matrix(grr(2, 2.0)))
    left, right = first.appended(c), first.appended(b)
    assert left.lookup(c) == 1 and right.lookup(c) is None and right.lookup(b) == 1 and left.lookup(b) is None
    assert left.total("sequential") == pytest.approx(3.0) and right.total("sequential") == pytest.approx(1.5)


def test_a_pickled_ledger_keeps_its_releases_and_sharing() -> None:
    import pickle

    a = Release.from_matrix(("A",), matrix(grr(2, 1.0)))
    ledger = Ledger.empty().appended(a).appended(rel(("B",), 0.5))
    ledger.lookup(a)  # fill the caches
    copies = pickle.loads(pickle.dumps([ledger, ledger]))
    assert copies[0] == ledger and copies[0] is copies[1]
    assert copies[0].lookup(copies[0][0]) == 0 and copies[0].total("sequential") == pytest.approx(1.5)


# ---------------------------------------------------------------------- properties
release_strategy = st.builds(
    lambda attrs, eps, linkable, phase: Release(attributes=tuple(attrs), epsilon=eps, linkable=linkable, phase=phase),
    st.lists(st.sampled_from("ABCDEF"), min_size=1, max_size=3, unique=True),
    st.floats(min_value=0.0, max_value=5.0),
    st.booleans(),
    st.sampled_from(["dependence", "release"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(release_strategy, max_size=12))
def test_policies_are_bounded_by_sequential_and_by_largest_phase_release(releases) -> None:
    seq = compose(releases, "sequential")
    by_phase_max = sum(
        max(r.epsilon for r in releases if r.phase == phase) for phase in {r.phase for r in releases}
    )
    slack = 1e-9 * (1 + seq)
    for policy in ("parallel", "unlinkable-pairs"):
        total = compose(releases, policy)
        assert by_phase_max - slack <= total <= seq + slack
    if all(r.linkable for r in releases):
        assert compose(releases, "unlinkable-pairs") == pytest.approx(seq, abs=slack)


def test_replaced_ledger_does_not_share_cached_totals() -> None:
    one = Ledger((rel(("A",), 1.0),))
    assert one.total("sequential") == 1.0
    two = dataclasses.replace(one, releases=(rel(("A",), 1.0), rel(("B",), 2.0)))
    assert two.total("sequential") == 3.0 and one.total("sequential") == 1.0


# ---------------------------------------------------------------------- incremental ledger (index, totals)
def linear_lookup(releases, request) -> int | None:
    """The definition of Ledger.lookup: first entry that request repeats (Release.same_as)."""
    return next((i for i, r in enumerate(releases) if r.same_as(request)), None)


keyed_release = st.builds(
    lambda attrs, eps, linkable, exact, key, rid, phase: Release(
        attributes=tuple(attrs),
        epsilon=math.inf if exact else eps,
        linkable=linkable,
        exact=exact,
        matrix_key=key,
        request_id=rid,
        phase=phase,
    ),
    st.lists(st.sampled_from("ABC"), min_size=1, max_size=2, unique=True),
    st.sampled_from([0.5, 1.0]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, "k1", "k2"]),
    st.sampled_from([None, "q1", "q2"]),
    st.sampled_from(["dependence", "release"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(keyed_release, max_size=10), st.lists(keyed_release, min_size=1, max_size=6))
def test_lookup_index_equals_the_linear_definition(entries, requests) -> None:
    # Built all at once, and grown by appended() with a lookup after every step.
    whole = Ledger(tuple(entries))
    grown = Ledger()
    for k, entry in enumerate(entries):
        for request in requests:
            assert grown.lookup(request) == linear_lookup(entries[:k], request)
        grown = grown.appended(entry)
    for request in [*requests, *entries]:
        expected = linear_lookup(entries, request)
        assert whole.lookup(request) == expected and grown.lookup(request) == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(keyed_release, min_size=1, max_size=8), st.lists(keyed_release, min_size=1, max_size=4), st.data())
def test_snapshots_and_branches_keep_their_own_index_and_totals(entries, others, data) -> None:
    cut = data.draw(st.integers(0, len(entries)))
    ledgers = [Ledger()]
    for entry in entries:
        ledgers[-1].lookup(entry)  # searched snapshots share and extend one index
        ledgers[-1].total("parallel")
        ledgers.append(ledgers[-1].appended(entry))
    # A branch off an older snapshot, and "what if" extensions of the tip never searched.
    branch = ledgers[cut]
    for other in others:
        branch = branch.appended(other)
    what_if = ledgers[-1]
    for other in others:
        what_if = what_if.appended(other)
    assert what_if.total("sequential") == compose(entries + others, "sequential")
    branch_releases = entries[:cut] + others
    for request in entries + others:
        assert branch.lookup(request) == linear_lookup(branch_releases, request)
        for k, snapshot in enumerate(ledgers):
            assert snapshot.lookup(request) == linear_lookup(entries[:k], request)
    for policy in POLICIES:
        assert branch.total(policy) == compose(branch_releases, policy)
        assert branch.by_phase(policy) == compose_by_phase(branch_releases, policy)
        for k, snapshot in enumerate(ledgers):
            assert snapshot.total(policy) == compose(entries[:k], policy)


def test_totals_are_carried_to_appended_snapshots() -> None:
    one = Ledger((rel(("A",), 1.0),))
    totals = one.totals("unlinkable-pairs")
    assert totals is one.totals(CompositionPolicy.UNLINKABLE_PAIRS)  # cached, any spelling
    two = one.appended(rel(("B",), 0.5, linkable=False))
    # carried over incrementally (not recomposed) and equal to the rule
    assert two._cache[CompositionPolicy.UNLINKABLE_PAIRS] is totals.plus(two[1])
    assert two.total("unlinkable-pairs") == 1.5 and one.total("unlinkable-pairs") == 1.0
    with pytest.raises(ConfigurationError, match=r"policy must be one of"):
        two.totals("advanced")


@settings(max_examples=100, deadline=None)
@given(st.lists(keyed_release, max_size=6), st.lists(keyed_release, max_size=8), st.lists(keyed_release, max_size=4))
def test_extended_equals_appending_one_release_at_a_time(entries, more, requests) -> None:
    base = Ledger.empty()
    for entry in entries:
        base = base.appended(entry)
    if more:  # caches to carry: an index and the totals of two policies
        base.lookup(more[0])
    base.total("sequential")
    base.total("unlinkable-pairs")
    grown = base
    for release in more:
        grown = grown.appended(release)
    at_once = base.extended(tuple(more))
    assert at_once.releases == grown.releases
    for policy in ("sequential", "parallel", "unlinkable-pairs"):
        assert at_once.total(policy) == grown.total(policy)
        assert at_once.by_phase(policy) == grown.by_phase(policy)
    for request in [*requests, *entries, *more]:
        assert at_once.lookup(request) == grown.lookup(request) == linear_lookup([*entries, *more], request)
    assert base.extended(tuple(more)) is at_once  # shared while someone holds it
    assert len(base) == len(entries)  # the old snapshot is unchanged
    with pytest.raises(ConfigurationError, match="a ledger holds Release objects"):
        base.extended((*more, "A"))  # type: ignore[arg-type]
