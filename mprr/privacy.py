"""Per-party privacy budgets: an accountant that grants, replays or refuses releases.

Each party keeps its own :class:`PrivacyAccountant` (the controller is untrusted) and asks it,
before randomizing, whether a release is *granted*, *replayed* (same release already made:
resend the same value, spend nothing) or *refused* (over budget or outside the announced plan);
see :mod:`mprr.accountant` for the rules.

:func:`summarize` turns the ledgers of all parties into a :class:`PrivacySummary` (ε per party
min / median / max, per phase, β and entropy bits, "no DP guarantee" when ε = ∞).

This module is the one entry point; the pieces live in concept-sized modules and are
re-exported here unchanged:

- :mod:`mprr.ledger` — :class:`Release`, :class:`Ledger` (and the policies of
  :mod:`mprr.composition`, the digests of :mod:`mprr.fingerprint`);
- :mod:`mprr.accountant` — :class:`PrivacyAccountant`, :class:`Decision`, :class:`Refusal`;
- :mod:`mprr.privacy_summary` — :func:`summarize`, :class:`PrivacySummary`, :class:`Stats`;
- :class:`PlanViolationError` is defined in :mod:`mprr.errors` (a :class:`ProtocolError`).

Performance: a party's decision costs a few microseconds whatever its history (replay index and
incremental per-phase totals in the ledger, matrix digests memoized per shared matrix), and
:func:`summarize` over 32,561 accountants is vectorized (see ``benchmarks/privacy.py``).
"""

from __future__ import annotations

from mprr.accountant import Decision, Outcome, PrivacyAccountant, Refusal, RefusalReason
from mprr.errors import PlanViolationError
from mprr.ledger import (
    COMPOSITION_RULES,
    EXACT_KEY,
    Attr,
    CompositionPolicy,
    Ledger,
    PolicyTotals,
    Release,
    as_policy,
    attribute_components,
    compose,
    compose_by_phase,
    matrix_fingerprint,
)
from mprr.privacy_summary import PhaseSummary, PrivacySummary, Stats, summarize

__all__ = [
    # re-exported from mprr.ledger
    "Attr",
    "Release",
    "Ledger",
    "CompositionPolicy",
    "COMPOSITION_RULES",
    "EXACT_KEY",
    "PolicyTotals",
    "as_policy",
    "compose",
    "compose_by_phase",
    "attribute_components",
    "matrix_fingerprint",
    # re-exported from mprr.errors / mprr.accountant / mprr.privacy_summary
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
