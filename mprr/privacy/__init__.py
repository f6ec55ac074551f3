"""Per-party privacy budgets: an accountant that grants, replays or refuses releases.

Each party keeps its own :class:`PrivacyAccountant` (the controller is untrusted) and asks it,
before randomizing, whether a request is *granted*, *replayed* (same release already made:
resend the same value, spend nothing) or *refused* (over budget, outside the announced plan,
or an input committed to a second secure-sum session);
see :mod:`mprr.privacy.accountant` for the rules.

:func:`summarize` turns the ledgers of all parties into a :class:`PrivacySummary` (ε per party
min / median / max, per phase, β and entropy bits, "no DP guarantee" when ε = ∞).

Modules, in dependency order (each imports only those above it):

- ``release``      — :class:`Release`: one release's attributes, ε (eq. 4), β, linkability, and
  the matrix digest that identifies a replay
- ``composition``  — composition policies: sequential, parallel, unlinkable-pairs
- ``ledger``       — :class:`Ledger`: a party's releases, totals per policy and phase
- ``copies``       — what a party's state shares and owns when it is copied for another party,
  and the key that says when two states are equal
- ``accountant``   — :class:`PrivacyAccountant`: plans, budget, secure-sum sessions; grant /
  replay / refuse an :class:`Ask`, one :class:`Refusal` record
- ``summary``      — :func:`summarize`, :class:`PrivacySummary` over all parties

Performance: a party's decision costs a few microseconds whatever its history (replay index and
incremental per-phase totals in the ledger; one Release per request unit, shared by the parties), and
:func:`summarize` over 32,561 accountants is vectorized (see ``benchmarks/privacy.py``).
"""

from __future__ import annotations

from mprr.privacy.accountant import (
    DEFAULT_MIN_ROSTER,
    Ask,
    Decision,
    Outcome,
    PrivacyAccountant,
    Refusal,
    RefusalReason,
)
from mprr.privacy.composition import CompositionPolicy, PolicyTotals, as_policy
from mprr.privacy.ledger import Ledger
from mprr.privacy.release import EXACT_KEY, Attr, Release, json_number, matrix_fingerprint
from mprr.privacy.summary import PhaseSummary, PrivacySummary, Stats, summarize

__all__ = [
    # from mprr.privacy.release, .composition, .ledger
    "Attr",
    "Release",
    "Ledger",
    "CompositionPolicy",
    "EXACT_KEY",
    "PolicyTotals",
    "as_policy",
    "matrix_fingerprint",
    # re-exported from mprr.privacy.accountant / mprr.privacy.summary
    "RefusalReason",
    "Outcome",
    "Ask",
    "DEFAULT_MIN_ROSTER",
    "json_number",
    "Refusal",
    "Decision",
    "PrivacyAccountant",
    "Stats",
    "PhaseSummary",
    "PrivacySummary",
    "summarize",
]
