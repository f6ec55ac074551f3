"""Run summaries (mprr.privacy.summary): the vectorized summarize equals the per-entry definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.privacy.accountant import PrivacyAccountant
from mprr.errors import ConfigurationError
from mprr.privacy import CompositionPolicy, Ledger, RefusalReason, Release
from mprr.privacy.summary import PhaseSummary, PrivacySummary, Stats, summarize
from tests.mprr.privacy.asking import charge, refused

POLICIES = tuple(CompositionPolicy)


def reference_summary(ledgers: list[Ledger], policy: CompositionPolicy, refusals=None, replays=0) -> PrivacySummary:
    """The definition, entry by entry (the pre-vectorization implementation)."""
    per_party = [ledger.by_phase(policy) for ledger in ledgers]
    totals = [math.fsum(p.values()) for p in per_party]
    names = list(dict.fromkeys(r.phase for ledger in ledgers for r in ledger))
    entries = [r for ledger in ledgers for r in ledger]
    phases = {}
    for name in names:
        in_phase = [r for r in entries if r.phase == name]
        phases[name] = PhaseSummary(
            epsilon=Stats.of([p.get(name, 0.0) for p in per_party]),
            beta=Stats.of([r.beta for r in in_phase if r.beta is not None]),
            entropy_bits=Stats.of([r.entropy_bits for r in in_phase if r.entropy_bits is not None]),
            releases=len(in_phase),
        )
    return PrivacySummary(
        policy=policy,
        parties=len(ledgers),
        epsilon=Stats.of(totals),
        phases=phases,
        beta=Stats.of([r.beta for r in entries if r.beta is not None]),
        entropy_bits=Stats.of([r.entropy_bits for r in entries if r.entropy_bits is not None]),
        releases=len(entries),
        exact_releases=sum(r.exact for r in entries),
        parties_without_guarantee=sum(math.isinf(t) for t in totals),
        refusals=refusals or {},
        replays=replays,
    )


# A pool of shared release objects (as the actor simulator shares them) plus fresh equal copies.
POOL = [
    Release(("A",), 0.5, entropy_bits=1.2, beta=0.6, phase="dependence", matrix_key="kA"),
    Release(("B",), 1.0, entropy_bits=0.9, beta=0.45, phase="dependence"),
    Release(("A", "B"), 1.5, entropy_bits=2.0, beta=0.5, phase="clusters", linkable=False),
    Release(("C",), 0.25, phase="clusters"),
    Release.exact_values(("B", "C")),
    Release(("C", "A"), 0.75, entropy_bits=3.0, beta=1.0, phase="release"),
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.integers(0, len(POOL) - 1), st.booleans()), max_size=6), max_size=12),
    st.sampled_from(POLICIES),
)
def test_summarize_equals_the_entry_by_entry_definition(spec, policy) -> None:
    ledgers = []
    for entries in spec:
        releases = []
        for i, fresh in entries:
            base = POOL[i]
            releases.append(Release(**{f: getattr(base, f) for f in base.__dataclass_fields__}) if fresh else base)
        ledgers.append(Ledger(tuple(releases)))
    assert summarize(ledgers, policy) == reference_summary(ledgers, policy)


def test_summarize_counts_refusals_and_replays_of_accountants() -> None:
    accountants = [PrivacyAccountant(2.0, "sequential", party=i) for i in range(4)]
    for i, acc in enumerate(accountants):
        charge(acc, POOL[0])
        assert charge(acc, POOL[0]).replayed
        if i % 2:
            refused(acc, Release(("D",), 5.0), RefusalReason.BUDGET_EXCEEDED)
    summary = summarize(accountants)
    expected = reference_summary(
        [a.ledger for a in accountants], CompositionPolicy.SEQUENTIAL, {"budget-exceeded": 2}, 4
    )
    assert summary == expected and summary.refusals == {"budget-exceeded": 2} and summary.replays == 4
    assert summarize({i: a for i, a in enumerate(accountants)}) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.floats(-5, 5), st.just(math.inf)), st.integers(0, 4)), min_size=0, max_size=8
    )
)
def test_weighted_stats_equal_the_expanded_multiset(pairs) -> None:
    values = np.array([v for v, _ in pairs], dtype=np.float64)
    counts = np.array([c for _, c in pairs], dtype=np.int64)
    assert Stats.weighted(values, counts) == Stats.of(np.repeat(values, counts))


def test_weighted_stats_known_values_and_errors() -> None:
    assert Stats.weighted(np.array([3.0, 1.0]), np.array([1, 3])) == Stats(1.0, 1.0, 3.0, 4)
    assert Stats.weighted(np.array([3.0, 1.0]), np.array([2, 2])) == Stats(1.0, 2.0, 3.0, 4)
    assert Stats.weighted(np.array([]), np.array([], dtype=np.int64)) is None
    assert Stats.of(np.array([[2.0, 1.0], [4.0, 3.0]])) == Stats(1.0, 2.5, 4.0, 4)
    with pytest.raises(ConfigurationError, match=r"counts must be >= 0 with one per value \(2\), got shape \(1,\)"):
        Stats.weighted(np.array([1.0, 2.0]), np.array([1]))
    with pytest.raises(ConfigurationError, match=r"counts must be >= 0"):
        Stats.weighted(np.array([1.0]), np.array([-1]))
