"""Per-party accountant and run summaries (mprr.privacy): budgets, replays, plans, 6.3 equivalence."""

from __future__ import annotations

import json
import math
from dataclasses import astuple
from functools import reduce
from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.privacy import (
    CompositionPolicy,
    Ledger,
    Outcome,
    PrivacyAccountant,
    Refusal,
    RefusalReason,
    Release,
    Stats,
    summarize,
)
from tests.mprr.privacy.asking import ask, charge, refused


# ---------------------------------------------------------------------- helpers (numpy only)
def eq4_epsilon(P: np.ndarray) -> float:
    """Main paper eq. (4): ε = max_v ln(max_u p_uv / min_u p_uv); ∞ if a column mixes 0 and > 0."""
    col_max, col_min = P.max(axis=0), P.min(axis=0)
    used = col_max > 0
    if np.any(col_min[used] == 0):
        return math.inf
    return float(np.max(np.log(col_max[used] / col_min[used])))


def matrix(P: np.ndarray) -> SimpleNamespace:
    """Duck-typed stand-in for mprr.matrices.RandomizationMatrix, built with numpy only."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h = float(np.where(P > 0, -P * np.log2(P), 0.0).sum(axis=1).mean())
    return SimpleNamespace(values=P, epsilon=eq4_epsilon(P), entropy_rate=h, beta=h / math.log2(P.shape[0]))


def grr(k: int, epsilon: float) -> SimpleNamespace:
    P = np.full((k, k), 1.0 / (math.exp(epsilon) + k - 1))
    np.fill_diagonal(P, math.exp(epsilon) / (math.exp(epsilon) + k - 1))
    return matrix(P)


def keep_or_uniform(k: int, p: float) -> SimpleNamespace:
    """Main paper 6.3.1 RR-Independent matrix: keep with probability p, else uniform over k."""
    return matrix(p * np.eye(k) + (1 - p) / k)


def cluster_matrix(sizes: tuple[int, ...], eps_sum: float) -> np.ndarray:
    """Main paper 6.3.2: p_C on the diagonal, p_C e^{-Σε} off it, p_C = 1/(1 + (Π|A| - 1) e^{-Σε})."""
    r = math.prod(sizes)
    p_c = 1.0 / (1.0 + (r - 1) * math.exp(-eps_sum))
    P = np.full((r, r), p_c * math.exp(-eps_sum))
    np.fill_diagonal(P, p_c)
    return P


def rel(attrs, eps, **kw) -> Release:
    return Release(attributes=attrs, epsilon=eps, **kw)


# ---------------------------------------------------------------------- construction
@pytest.mark.parametrize("budget", [-1.0, math.nan, "3", True])
def test_accountant_rejects_bad_budget(budget) -> None:
    with pytest.raises(ConfigurationError, match=r"budget must be a number >= 0 or math.inf"):
        PrivacyAccountant(budget)


def test_accountant_rejects_unknown_policy() -> None:
    with pytest.raises(ConfigurationError, match=r"policy must be one of .*got 'advanced'"):
        PrivacyAccountant(1.0, "advanced")


# ---------------------------------------------------------------------- spending
def test_spent_and_remaining() -> None:
    acc = PrivacyAccountant(3.0, "sequential", party=7)
    assert (acc.spent(), acc.remaining()) == (0.0, 3.0)
    first = rel(("A",), 1.25)
    decision = charge(acc, first)
    assert decision.outcome is Outcome.GRANTED and decision.entry_index == 0
    assert (acc.spent(), acc.remaining()) == (1.25, 1.75)
    assert acc.ledger.releases == (first,)


@pytest.mark.parametrize(
    ("second", "total"),
    [
        (rel(("A", "C"), 1.0, linkable=False, phase="dependence"), 1.5),  # A keeps share 0.5, C adds 0.5
        (rel(("A", "C"), 1.0, linkable=False), 2.0),  # release phase: phases compose sequentially
        (rel(("A", "C"), 1.0, phase="dependence"), 2.0),  # linkable: adds in full
    ],
)
def test_spending_follows_the_policy(second: Release, total: float) -> None:
    acc = PrivacyAccountant(10.0, "unlinkable-pairs")
    charge(acc, rel(("A", "B"), 1.0, linkable=False, phase="dependence"))
    charge(acc, second)
    assert acc.spent() == total


def test_budget_refusal_is_recorded_and_leaves_ledger_unchanged() -> None:
    acc = PrivacyAccountant(2.0, "sequential", party=3)
    charge(acc, rel(("A",), 1.5))
    snapshot = acc.ledger
    refusal = refused(
        acc, rel(("B",), 0.6, request_id="q2"), RefusalReason.BUDGET_EXCEEDED,
        r"party 3: release 'q2' would spend ε=0.6 but only 0.5 of the budget 2 remains under policy 'sequential'",
    )
    assert refusal.requested == pytest.approx(0.6)
    assert refusal.remaining == pytest.approx(0.5)
    assert acc.ledger is snapshot and len(acc.ledger) == 1 and acc.spent() == 1.5
    assert acc.refusals == (refusal,) and refusal.request_id == "q2"
    assert (refusal.party, refusal.units) == (3, (("B",),))
    json.dumps(refusal.to_dict(), allow_nan=False)
    # Asked again, it is refused again, and recorded again.
    refused(acc, rel(("B",), 0.6, request_id="q2"), RefusalReason.BUDGET_EXCEEDED)
    assert len(acc.refusals) == 2
    # A smaller release still fits.
    assert charge(acc, rel(("B",), 0.5)).granted and acc.remaining() == 0.0


def test_budget_refusal_under_parallel_policy_counts_the_increment() -> None:
    acc = PrivacyAccountant(1.0, "parallel", party="p0")
    charge(acc, rel(("A",), 0.8))
    charge(acc, rel(("B",), 1.0))  # disjoint: max(0.8, 1.0) = 1.0 fits
    refusal = refused(acc, rel(("A", "C"), 0.5), RefusalReason.BUDGET_EXCEEDED,  # joins A's component: 1.3
                      r"would spend ε=0.3 but only 0 of the budget 1 remains under policy 'parallel'")
    assert refusal.requested == pytest.approx(0.3)
    assert acc.spent() == 1.0


def test_budget_accepts_rounding_at_the_boundary() -> None:
    eps = math.log(3) / 7
    acc = PrivacyAccountant(7 * eps)  # 7ε computed once vs ε added seven times
    for a in range(7):
        assert charge(acc, rel((a,), eps)).granted
    assert acc.spent() == pytest.approx(7 * eps, rel=1e-15)
    refused(acc, rel((7,), 1e-6), RefusalReason.BUDGET_EXCEEDED)


def test_exact_release_needs_an_unlimited_budget() -> None:
    finite = PrivacyAccountant(100.0, party=1)
    refusal = refused(finite, Release.exact_values(("A", "B")), RefusalReason.BUDGET_EXCEEDED,
                      r"would spend ε=inf \(exact release: no DP guarantee\)")
    assert math.isinf(refusal.requested) and finite.spent() == 0.0
    unlimited = PrivacyAccountant(math.inf)
    assert charge(unlimited, Release.exact_values(("A", "B"))).granted
    assert math.isinf(unlimited.spent()) and math.isinf(unlimited.remaining())
    assert charge(unlimited, rel(("C",), 1.0)).granted  # nothing left to protect, still accounted


# ---------------------------------------------------------------------- repeated and finer requests
def test_duplicate_request_is_replayed_without_new_spending() -> None:
    acc = PrivacyAccountant(1.0, party=0)
    P = grr(4, 0.9)
    first = charge(acc, Release.from_matrix(("A", "B"), P, request_id="pair-AB"))
    again = charge(acc, Release.from_matrix(("A", "B"), P, request_id="pair-AB-again", phase="release"))
    assert first.granted and again.outcome is Outcome.REPLAYED
    assert again.entry_index == 0 and acc.ledger[again.entry_index] is first.request
    assert acc.ledger.lookup(Release.from_matrix(("A", "B"), P)) == 0
    assert acc.spent() == pytest.approx(0.9) and len(acc.ledger) == 1
    assert [i for _, i in acc.replays] == [0] and acc.refusals == ()


def test_malicious_controller_repeating_requests_gains_nothing() -> None:
    acc = PrivacyAccountant(2.0, party=5)
    P = grr(3, 0.5)
    outcomes = [charge(acc, Release.from_matrix((0,), P, request_id=f"r{i}")).outcome for i in range(50)]
    assert outcomes[0] is Outcome.GRANTED and set(outcomes[1:]) == {Outcome.REPLAYED}
    assert acc.spent() == pytest.approx(0.5)
    # Finer matrices for the same attribute are new spending, until the budget refuses.
    granted = [not isinstance(ask(acc, Release.from_matrix((0,), grr(3, e))), Refusal) for e in (0.6, 0.7, 0.8, 0.9)]
    assert granted == [True, True, False, False]  # 0.5 + 0.6 + 0.7 = 1.8; + 0.8 > 2
    assert acc.spent() == pytest.approx(1.8) and acc.spent() <= acc.budget
    assert [r.reason for r in acc.refusals] == [RefusalReason.BUDGET_EXCEEDED] * 2


def test_finer_matrix_counts_as_new_spending() -> None:
    acc = PrivacyAccountant(5.0)
    charge(acc, Release.from_matrix(("A",), grr(5, 1.0)))
    finer = charge(acc, Release.from_matrix(("A",), grr(5, 2.0)))
    assert finer.granted and acc.spent() == pytest.approx(3.0)


def test_same_matrix_other_channel_is_not_a_replay() -> None:
    acc = PrivacyAccountant(5.0)
    P = grr(2, 1.0)
    charge(acc, Release.from_matrix(("A",), P, linkable=False))
    assert charge(acc, Release.from_matrix(("A",), P, linkable=True)).granted
    assert acc.spent() == pytest.approx(2.0)


def test_request_id_alone_does_not_replay_different_content() -> None:
    acc = PrivacyAccountant(5.0)
    charge(acc, rel(("A",), 1.0, request_id="q"))
    assert charge(acc, rel(("A",), 1.0, request_id="q")).replayed
    assert charge(acc, rel(("A",), 2.0, request_id="q")).granted
    assert acc.spent() == 3.0


# ---------------------------------------------------------------------- plans
def test_plan_violation_is_refused_and_recorded() -> None:
    acc = PrivacyAccountant(10.0, party=2)
    plan = [("A", "B"), "C"]
    assert charge(acc, rel(("B", "A"), 1.0), plan).granted  # a group is a set of attributes
    assert charge(acc, rel(("C",), 1.0)).granted
    refused(acc, rel(("A",), 0.1), RefusalReason.PLAN_VIOLATION, r"party 2: release 'release\(A\)' asks for "
            r"attributes \['A'\], not groups of the plan announced for phase 'release'")
    refused(acc, rel(("A", "B", "C"), 0.1), RefusalReason.PLAN_VIOLATION)
    assert len(acc.ledger) == 2 and acc.spent() == 2.0 and len(acc.refusals) == 2
    # Other phases have no plan: unrestricted.
    assert charge(acc, rel(("A",), 0.1, phase="dependence")).granted


def test_plan_cannot_be_replaced_by_a_different_one() -> None:
    acc = PrivacyAccountant(1.0, party=4)
    charge(acc, rel(("A", "B"), 0.1), [("A", "B")])
    charge(acc, rel(("A", "B"), 0.1), [("B", "A")])  # same plan: no-op
    refused(acc, rel(("A", "B"), 0.1), RefusalReason.PLAN_VIOLATION,
            r"party 4: phase 'release' already has an announced plan", [("A", "B"), ("C",)])
    with pytest.raises(ConfigurationError, match=r"plan groups must be non-empty"):
        ask(acc, rel(("A",), 0.1, phase="dependence"), [()])


def test_allowed_attributes_restrict_every_phase() -> None:
    acc = PrivacyAccountant(10.0, party=1, allowed_attributes=["A", "B"])
    assert charge(acc, rel(("A", "B"), 1.0, phase="dependence")).granted
    refused(acc, rel(("A", "Z"), 1.0), RefusalReason.PLAN_VIOLATION,
            r"party 1: release 'release\(A, Z\)' asks for attributes \['Z'\] that the party does not release")


# ---------------------------------------------------------------------- main paper 6.3
def test_published_cluster_probability_does_not_normalise_rows() -> None:
    # 6.3.2 prints p_C = 1/(1 + (1 - Π|A|) e^{-Σε}); with |C| = 12 and Σε = 1.5 that is
    # 1/(1 - 11 e^{-1.5}) = -0.688, not a probability, and the rows of the matrix it defines sum
    # to p_C (1 + 11 e^{-1.5}) = -2.375.  Row-stochasticity requires (Π|A| - 1), used below.
    r, s = 12, 1.5
    printed = 1.0 / (1.0 + (1 - r) * math.exp(-s))
    assert printed == pytest.approx(-0.6876, abs=1e-4)
    assert printed * (1 + (r - 1) * math.exp(-s)) == pytest.approx(-2.3751, abs=1e-4)
    assert cluster_matrix((3, 4), s).sum(axis=1) == pytest.approx(np.ones(r), abs=1e-12)


@pytest.mark.parametrize("policy", ["sequential", "unlinkable-pairs"])
@pytest.mark.parametrize("linkable", [True, False])
def test_rr_clusters_spends_the_same_as_rr_independent(policy, linkable) -> None:
    # Main paper 6.3: RR-Independent with the optimal per-attribute matrix (ε_A), versus
    # RR-Clusters whose cluster matrix carries Σ_{A∈C} ε_A.  Per party, both spend Σ_A ε_A.
    sizes = {"a": 4, "b": 3, "c": 5, "d": 2, "e": 6}
    keep = {"a": 0.6, "b": 0.3, "c": 0.45, "d": 0.8, "e": 0.5}
    clusters = [("a", "b"), ("c",), ("d", "e")]
    independent = {name: keep_or_uniform(sizes[name], keep[name]) for name in sizes}
    eps_a = {name: independent[name].epsilon for name in sizes}
    # 6.3.1: ε_A = ln((p + (1-p)/|A|) / ((1-p)/|A|)) for keep-or-uniform.
    for name in sizes:
        expected = math.log((keep[name] + (1 - keep[name]) / sizes[name]) / ((1 - keep[name]) / sizes[name]))
        assert eps_a[name] == pytest.approx(expected, rel=1e-12)
    total = math.fsum(eps_a.values())

    rr_ind = PrivacyAccountant(total, policy, party="ind")
    for name in sizes:
        charge(rr_ind, Release.from_matrix((name,), independent[name], linkable=linkable))
    rr_clu = PrivacyAccountant(total, policy, party="clu")
    for cluster in clusters:
        eps_sum = math.fsum(eps_a[a] for a in cluster)
        P = matrix(cluster_matrix(tuple(sizes[a] for a in cluster), eps_sum))
        assert P.epsilon == pytest.approx(eps_sum, rel=1e-12)  # eq. (4) of the cluster matrix
        charge(rr_clu, Release.from_matrix(cluster, P, linkable=linkable), clusters)

    assert rr_ind.spent() == pytest.approx(total, rel=1e-12)
    assert rr_clu.spent() == pytest.approx(rr_ind.spent(), rel=1e-12)
    # Both are at their budget: anything more is refused for either party.
    for acc in (rr_ind, rr_clu):
        refused(acc, Release.from_matrix(("a",), grr(4, 0.01), phase="more"), RefusalReason.BUDGET_EXCEEDED)


def test_rr_clusters_equivalence_is_a_sequential_statement() -> None:
    # Under `parallel`, disjoint clusters compose by max: RR-Independent costs max ε_A and
    # RR-Clusters max Σ_{A∈C} ε_A — no longer equal.  The 6.3 equivalence is record-level.
    eps_a = {"a": 0.5, "b": 0.75, "c": 1.0}
    ind = Ledger(tuple(rel((a,), e) for a, e in eps_a.items()))
    clu = Ledger((rel(("a", "b"), 1.25), rel(("c",), 1.0)))
    assert ind.total("sequential") == clu.total("sequential") == 2.25
    assert (ind.total("parallel"), clu.total("parallel")) == (1.0, 1.25)


# ---------------------------------------------------------------------- summaries
def test_stats_min_median_max() -> None:
    assert Stats.of([3.0, 1.0, 2.0]) == Stats(1.0, 2.0, 3.0, 3)
    assert Stats.of([4.0, 1.0]) == Stats(1.0, 2.5, 4.0, 2)
    assert Stats.of([1.0, math.inf]).median == math.inf
    assert Stats.of([]) is None


def _run_accountants() -> dict[int, PrivacyAccountant]:
    """Three parties: 4.3 unlinkable pairs over A, B, C then a release phase."""
    accountants = {i: PrivacyAccountant(10.0, "unlinkable-pairs", party=i) for i in range(3)}
    pair = grr(4, 1.0)
    for i, acc in accountants.items():
        for p in combinations("ABC", 2):
            charge(acc, Release.from_matrix(p, pair, linkable=False, phase="dependence"))
        charge(acc, Release.from_matrix(("A", "B"), grr(4, 0.5 * (i + 1))))
    assert charge(accountants[0], Release.from_matrix(("A", "B"), grr(4, 0.5))).replayed
    refused(accountants[1], rel(("C",), 50.0), RefusalReason.BUDGET_EXCEEDED)
    return accountants


def test_summarize_reports_epsilon_per_party_phase_beta() -> None:
    summary = summarize(_run_accountants())
    assert summary.policy is CompositionPolicy.UNLINKABLE_PAIRS and summary.parties == 3
    # dependence: A, B, C each count once with share 1/2 -> 1.5; release: 0.5, 1.0, 1.5.
    assert astuple(summary.epsilon) == pytest.approx((2.0, 2.5, 3.0, 3), rel=1e-12)
    assert astuple(summary.phases["dependence"].epsilon) == pytest.approx((1.5, 1.5, 1.5, 3), rel=1e-12)
    assert astuple(summary.phases["release"].epsilon) == pytest.approx((0.5, 1.0, 1.5, 3), rel=1e-12)
    assert summary.phases["dependence"].releases == 9 and summary.releases == 12
    dep_beta = grr(4, 1.0).beta
    assert astuple(summary.phases["dependence"].beta) == pytest.approx((dep_beta, dep_beta, dep_beta, 9))
    assert summary.beta.max == pytest.approx(grr(4, 0.5).beta) and summary.beta.min == pytest.approx(grr(4, 1.5).beta)
    assert summary.entropy_bits.max == pytest.approx(grr(4, 0.5).entropy_rate)
    assert summary.refusals == {"budget-exceeded": 1} and summary.replays == 1
    assert not summary.no_dp_guarantee and summary.exact_releases == 0
    sequential = summarize(_run_accountants(), "sequential")
    assert sequential.phases["dependence"].epsilon.max == pytest.approx(3.0, rel=1e-12)
    data = json.loads(json.dumps(summary.to_dict(), allow_nan=False))
    assert data["policy"] == "unlinkable-pairs" and data["epsilon"]["median"] == pytest.approx(2.5, rel=1e-12)


def test_summarize_flags_no_dp_guarantee() -> None:
    ledgers = [
        Ledger((Release.exact_values(("A", "B")), rel(("A",), 1.0))),
        Ledger((rel(("A",), 1.0),)),
    ]
    summary = summarize(ledgers)
    assert summary.policy is CompositionPolicy.SEQUENTIAL
    assert summary.no_dp_guarantee and summary.parties_without_guarantee == 1 and summary.exact_releases == 1
    assert summary.epsilon.max == math.inf and summary.epsilon.min == 1.0
    assert summary.phases["dependence"].epsilon == Stats(0.0, math.inf, math.inf, 2)
    data = summary.to_dict()
    assert data["epsilon"]["max"] == "inf" and data["no_dp_guarantee"] is True
    json.dumps(data, allow_nan=False)


def test_summarize_needs_one_policy() -> None:
    mixed = [PrivacyAccountant(1.0, "sequential"), PrivacyAccountant(1.0, "parallel")]
    with pytest.raises(ConfigurationError, match=r"accountants use different policies"):
        summarize(mixed)
    assert summarize(mixed, "parallel").policy is CompositionPolicy.PARALLEL
    with pytest.raises(ConfigurationError, match=r"expects PrivacyAccountant or Ledger"):
        summarize([{"eps": 1.0}])
    empty = summarize([])
    assert empty.parties == 0 and empty.epsilon is None and empty.phases == {}


# ---------------------------------------------------------------------- with the real matrices
def test_from_matrix_with_mprr_matrices_kronecker() -> None:
    matrices = pytest.importorskip("mprr.matrices")
    factors = [matrices.grr(k, e) for k, e in ((3, 0.5), (4, 1.0))]
    kron = matrices.kron(*factors)
    r = Release.from_matrix(("A", "B"), kron, linkable=False)
    assert r.epsilon == pytest.approx(1.5) and r.attribute_epsilons == pytest.approx((0.5, 1.0))
    dense = Release.from_matrix(("A",), factors[0])
    assert dense.epsilon == pytest.approx(0.5) and dense.matrix_key is not None
    acc = PrivacyAccountant(2.0)
    charge(acc, r)
    rebuilt = reduce(lambda a, b: matrices.kron(a, b), [matrices.grr(k, e) for k, e in ((3, 0.5), (4, 1.0))])
    assert charge(acc, Release.from_matrix(("A", "B"), rebuilt, linkable=False)).replayed
