"""Privacy report of a run: ε per party (min / median / max), per phase, β and entropy bits.

:func:`summarize` turns the ledgers of all parties (their :class:`~mprr.privacy.accountant.PrivacyAccountant`
or bare :class:`~mprr.privacy.ledger.Ledger` objects) into a :class:`PrivacySummary` under one named
composition policy ("no DP guarantee" when some party's ε is ∞).  It is vectorized for
32,561 parties: per-party totals come from each ledger's incremental totals
(:class:`~mprr.privacy.composition.PolicyTotals`) into numpy arrays, and the β / entropy statistics
are computed over the *distinct* release objects weighted by how many ledgers hold them
(:meth:`Stats.weighted`), not over every ledger entry.

Everything here is re-exported by :mod:`mprr.privacy`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from mprr.privacy.accountant import PrivacyAccountant
from mprr.privacy.composition import CompositionPolicy, as_policy
from mprr.errors import ConfigurationError
from mprr.privacy.ledger import Ledger
from mprr.privacy.release import Release, json_number

__all__ = ["Stats", "PhaseSummary", "PrivacySummary", "summarize"]


@dataclass(frozen=True)
class Stats:
    """min / median / max of a non-empty set of values (∞ allowed)."""

    min: float
    median: float
    max: float
    count: int

    @classmethod
    def of(cls, values: Iterable[float] | np.ndarray) -> Stats | None:
        """Stats of ``values`` (an iterable or a float array), or ``None`` when there are none."""
        array = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64).reshape(-1)
        return cls.weighted(array, np.ones(array.size, dtype=np.int64))

    @classmethod
    def weighted(cls, values: np.ndarray, counts: np.ndarray) -> Stats | None:
        """Stats of the multiset holding ``counts[i]`` copies of ``values[i]`` (not expanded).

        Equal to ``Stats.of(np.repeat(values, counts))``: the median is read off the cumulative
        counts of the sorted distinct values.  ``None`` when the counts sum to 0.
        """
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        if values.shape != counts.shape or np.any(counts < 0):
            raise ConfigurationError(
                f"counts must be >= 0 with one per value ({values.size}), got shape {counts.shape}"
            )
        keep = counts > 0
        values, counts = values[keep], counts[keep]
        total = int(counts.sum())
        if total == 0:
            return None
        order = np.argsort(values, kind="stable")
        ordered, cumulative = values[order], np.cumsum(counts[order])

        def at(k: int) -> np.float64:  # k-th (0-based) element of the expanded sorted multiset
            return np.float64(ordered[int(np.searchsorted(cumulative, k, side="right"))])

        mid = total // 2
        median = at(mid) if total % 2 else (at(mid - 1) + at(mid)) / 2
        return cls(float(ordered[0]), float(median), float(ordered[-1]), total)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (∞ written as ``"inf"``)."""
        return {"min": json_number(self.min), "median": json_number(self.median), "max": json_number(self.max), "count": self.count}


def _stats_dict(stats: Stats | None) -> dict[str, Any] | None:
    return None if stats is None else stats.to_dict()


@dataclass(frozen=True)
class PhaseSummary:
    """One phase across parties: ε per party (0 for a party without releases in it; ``None``
    without parties), β, bits."""

    epsilon: Stats | None
    beta: Stats | None
    entropy_bits: Stats | None
    releases: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": _stats_dict(self.epsilon),
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

    n = len(ledgers)
    # Distinct ledger objects (the parties of a run with the same history share one) and, per
    # party, which one it holds: totals are computed once per distinct ledger.
    position: dict[int, int] = {}
    unique: list[Ledger] = []
    for ledger in ledgers:
        if id(ledger) not in position:
            position[id(ledger)] = len(unique)
            unique.append(ledger)
    holder = np.fromiter((position[id(ledger)] for ledger in ledgers), dtype=np.int64, count=n)
    held = np.bincount(holder, minlength=len(unique))
    per_ledger = [ledger.totals(chosen) for ledger in unique]
    totals = np.fromiter((t.total for t in per_ledger), dtype=np.float64, count=len(unique))[holder]
    phase_names = list(dict.fromkeys(chain.from_iterable(t.phases for t in per_ledger)))

    # Distinct release objects (ledgers of one run share them) and how many ledgers hold each.
    counts: Counter[int] = Counter()
    distinct: dict[int, Release] = {}
    for ledger, times in zip(unique, held.tolist()):
        for release in ledger.releases:
            counts[id(release)] += times
            distinct.setdefault(id(release), release)
    releases = list(distinct.values())
    weights = np.fromiter((counts[key] for key in distinct), dtype=np.int64, count=len(releases))
    phase_of = np.array([r.phase for r in releases], dtype=object)
    beta = np.array([math.nan if r.beta is None else r.beta for r in releases], dtype=np.float64)
    bits = np.array([math.nan if r.entropy_bits is None else r.entropy_bits for r in releases], dtype=np.float64)
    exact = np.fromiter((r.exact for r in releases), dtype=bool, count=len(releases))
    known_beta, known_bits = ~np.isnan(beta), ~np.isnan(bits)

    phases = {}
    for name in phase_names:
        in_phase = phase_of == name
        phases[name] = PhaseSummary(
            epsilon=Stats.weighted(np.fromiter((t.phase_value(name) for t in per_ledger), dtype=np.float64,
                                               count=len(unique)), held),
            beta=Stats.weighted(beta[in_phase & known_beta], weights[in_phase & known_beta]),
            entropy_bits=Stats.weighted(bits[in_phase & known_bits], weights[in_phase & known_bits]),
            releases=int(weights[in_phase].sum()),
        )
    return PrivacySummary(
        policy=chosen,
        parties=n,
        epsilon=Stats.of(totals),
        phases=phases,
        beta=Stats.weighted(beta[known_beta], weights[known_beta]),
        entropy_bits=Stats.weighted(bits[known_bits], weights[known_bits]),
        releases=int(weights.sum()),
        exact_releases=int(weights[exact].sum()),
        parties_without_guarantee=int(np.count_nonzero(np.isinf(totals))),
        refusals=refusals,
        replays=replays,
    )
