"""The privacy section of a run report: ε per party under every composition policy, per phase, and β.

Issue 6 asks every run report to show, per composition policy, the ε spent per party
(min / median / max), per phase, and β.  This module builds that section from what a run
produces — an actor simulation (:class:`parties.simulate.SimulationResult`: one ledger per
party, the refusals the parties logged) or a fast-path :class:`mprr.protocols.ProtocolResult`
(one ledger that every party holds) — with the pure summaries of :mod:`mprr.privacy`
(:func:`mprr.privacy.summarize`, one call per policy):

:func:`privacy_section`
    JSON-friendly dict (∞ written as ``"inf"``) for ``results.json``: per policy ε per party and
    per phase (min / median / max), the "no DP guarantee" flag of exact releases (main paper 4.2:
    ε = ∞), β = H(P) / log2 r (bistochastic-privacy paper, Definition 1) and the entropy rate
    H(P) in bits of the released matrices (min / median / max over releases, overall and per
    phase), refusal counts by reason and replays.  Several runs of one protocol are pooled
    (statistics over every party of every run).
:func:`privacy_table`
    A :class:`scenarios.report.Table` with one row per protocol × policy: ε min / median / max,
    ε per phase, β, the guarantee, refusals and replays.
:func:`privacy_summary_lines`
    Two short lines for the printed run summary: ε per party under each policy, and β.

Phases compose sequentially under every policy (main paper Section 4); β and the entropy bits
describe the matrices released and do not depend on the policy, so they appear once per section.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mprr.errors import ConfigurationError
from mprr.privacy import CompositionPolicy, Ledger, PrivacySummary, as_policy, summarize
from mprr.protocols.budget import keep_for_budget
from mprr.protocols.result import ProtocolResult
from scenarios.report import Table

__all__ = [
    "POLICIES",
    "WEAK_PRIVACY_EPSILON",
    "budget_note",
    "budget_statement",
    "PrivacyRecord",
    "privacy_section",
    "privacy_summary_lines",
    "privacy_table",
]

POLICIES: tuple[str, ...] = tuple(p.value for p in CompositionPolicy)
"""Every composition policy of :mod:`mprr.privacy.ledger`: sequential, parallel, unlinkable-pairs."""

NO_DP = "no DP guarantee"
"""What a report says when some release had ε = ∞ (main paper 4.2 exact tables)."""


@dataclass(frozen=True)
class PrivacyRecord:
    """What the privacy section of one run is built from (light: no records, no messages).

    Attributes
    ----------
    protocol
        Protocol name (``ProtocolResult.protocol``).
    engine
        ``"actors"`` (one ledger per party actor) or ``"fast"`` (one ledger shared by all).
    ledgers
        One ledger per party.
    refusals
        Refusals the parties logged, per reason (none on the fast path: nothing is requested).
    replays
        Repeated requests the parties answered from their ledgers; ``None`` on the fast path,
        which records each release once and has no requests to count.
    """

    protocol: str
    engine: str
    ledgers: tuple[Ledger, ...] = field(repr=False)
    refusals: Mapping[str, int] = field(default_factory=dict)
    replays: int | None = None

    @classmethod
    def of(cls, result: Any) -> PrivacyRecord:
        """The record of a :class:`~parties.simulate.SimulationResult` or a :class:`ProtocolResult`.

        Raises
        ------
        ConfigurationError
            For any other object.
        """
        if isinstance(result, PrivacyRecord):
            return result
        if isinstance(result, ProtocolResult):
            return cls(result.protocol, "fast", (result.ledger,) * result.n)
        from parties.simulate import SimulationResult  # lazy: the fast path needs no actors

        if isinstance(result, SimulationResult):
            counts: dict[str, int] = {}
            for refusal in result.refusals:
                counts[refusal.reason] = counts.get(refusal.reason, 0) + 1
            replays = result.privacy.replays
            return cls(result.result.protocol, "actors", tuple(result.ledgers), counts, replays)
        raise ConfigurationError(
            "a privacy section is built from a parties.simulate.SimulationResult, a "
            f"mprr.protocols.ProtocolResult or a PrivacyRecord, got {type(result).__name__}"
        )


def _records(results: Any) -> list[PrivacyRecord]:
    items = list(results) if isinstance(results, (list, tuple)) else [results]
    if not items:
        raise ConfigurationError("results must hold at least one run, got an empty sequence")
    records = [PrivacyRecord.of(r) for r in items]
    protocols = sorted({r.protocol for r in records})
    if len(protocols) > 1:
        raise ConfigurationError(f"runs pooled in one privacy section must share a protocol, got {protocols}")
    return records


def _guarantee(summary: PrivacySummary) -> str:
    if summary.exact_releases:
        return f"{NO_DP}: {summary.exact_releases} exact release(s) of true values (main paper 4.2, ε = ∞)"
    if summary.no_dp_guarantee:
        return f"{NO_DP}: a released matrix has ε = ∞ (main paper eq. 4)"
    return "ε-local differential privacy per party (main paper eq. 4)"


def privacy_section(results: Any, *, policies: Iterable[CompositionPolicy | str] = POLICIES) -> dict[str, Any]:
    """The privacy section of one protocol's run(s), under every composition policy.

    Parameters
    ----------
    results
        A :class:`~parties.simulate.SimulationResult`, a :class:`ProtocolResult`, a
        :class:`PrivacyRecord`, or a list of them (runs of one protocol, pooled: statistics over
        every party of every run).
    policies
        Composition policies to report (default: all three of :mod:`mprr.privacy.ledger`).

    Returns
    -------
    dict
        ``protocol``, ``engine``, ``runs``, ``parties`` (party-runs summarised), ``releases``,
        ``exact_releases``, ``no_dp_guarantee``, ``guarantee`` (text), ``beta`` and
        ``entropy_bits`` (min / median / max / count over releases), ``phases`` (per phase:
        ``releases``, ``beta``, ``entropy_bits``, ``no_dp_guarantee``), ``policies`` (per
        policy: ``epsilon`` per party and ``by_phase`` ε per party, min / median / max / count,
        plus ``no_dp_guarantee`` and ``parties_without_guarantee``), ``refusals`` (per reason),
        ``refusal_count`` and ``replays`` (``None`` when not tracked).  ∞ is written ``"inf"``.

    Raises
    ------
    ConfigurationError
        Unknown policy, no runs, runs of different protocols, or an unsupported result type.
    """
    records = _records(results)
    chosen = [as_policy(p) for p in policies]
    if not chosen:
        raise ConfigurationError("policies must name at least one composition policy, got none")
    ledgers = [ledger for record in records for ledger in record.ledgers]
    summaries: dict[str, PrivacySummary] = {p.value: summarize(ledgers, p) for p in chosen}
    first = summaries[chosen[0].value]
    refusals: dict[str, int] = {}
    for record in records:
        for reason, count in record.refusals.items():
            refusals[reason] = refusals.get(reason, 0) + count
    replays = None if any(r.replays is None for r in records) else sum(r.replays or 0 for r in records)
    dicts = {name: summary.to_dict() for name, summary in summaries.items()}
    first_dict = dicts[chosen[0].value]
    return {
        "protocol": records[0].protocol,
        "engine": "+".join(dict.fromkeys(r.engine for r in records)),
        "runs": len(records),
        "parties": first.parties,
        "releases": first.releases,
        "exact_releases": first.exact_releases,
        "no_dp_guarantee": first.no_dp_guarantee,
        "guarantee": _guarantee(first),
        "beta": first_dict["beta"],
        "entropy_bits": first_dict["entropy_bits"],
        "phases": {
            name: {"releases": phase["releases"], "beta": phase["beta"], "entropy_bits": phase["entropy_bits"],
                   "no_dp_guarantee": phase["epsilon"] is not None and phase["epsilon"]["max"] == "inf"}
            for name, phase in first_dict["phases"].items()
        },
        "policies": {
            name: {
                "epsilon": summary["epsilon"],
                "by_phase": {ph: summary_phase["epsilon"] for ph, summary_phase in summary["phases"].items()},
                "no_dp_guarantee": summary["no_dp_guarantee"],
                "parties_without_guarantee": summary["parties_without_guarantee"],
            }
            for name, summary in dicts.items()
        },
        "refusals": refusals,
        "refusal_count": sum(refusals.values()),
        "replays": replays,
    }


# --------------------------------------------------------------------------- reading sections


def _num(value: Any) -> float | None:
    """A number of a section (``"inf"`` back to ∞; ``None`` stays ``None``)."""
    return None if value is None else float(value)


def _triple(stats: Mapping[str, Any] | None) -> tuple[float | None, float | None, float | None]:
    if stats is None:
        return None, None, None
    return _num(stats["min"]), _num(stats["median"]), _num(stats["max"])


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "—"
    return "∞" if math.isinf(x) else f"{x:.{digits}f}"


def _spread(stats: Mapping[str, Any] | None, digits: int = 3) -> str:
    """One number when min = max, else ``median (min–max)``."""
    lo, mid, hi = _triple(stats)
    if lo == hi:
        return _fmt(mid, digits)
    return f"{_fmt(mid, digits)} ({_fmt(lo, digits)}–{_fmt(hi, digits)})"


def _refusal_text(section: Mapping[str, Any]) -> str:
    refusals = section.get("refusals") or {}
    if not refusals:
        return "0"
    return ", ".join(f"{reason} {count}" for reason, count in sorted(refusals.items()))


def _sections(sections: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    pairs = list(sections.items()) if isinstance(sections, Mapping) else [(s["protocol"], s) for s in sections]
    if not pairs:
        raise ConfigurationError("sections must hold at least one privacy section, got none")
    for label, section in pairs:
        if not isinstance(section, Mapping) or "policies" not in section:
            raise ConfigurationError(f"section {label!r} is not a privacy_section() dict (no 'policies' key)")
    return pairs


def privacy_table(
    sections: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]],
    *,
    key: str = "privacy_by_policy",
    title: str = "Privacy spent per party, by composition policy",
    caption: str = "",
) -> Table:
    """Markdown / JSON table of privacy sections: one row per protocol × policy.

    Parameters
    ----------
    sections
        :func:`privacy_section` dicts, as a list (labelled by their protocol) or a mapping
        label -> section (e.g. ``{"RR-Clusters (4.2)": ...}``).
    key, title, caption
        Table key, heading, and text put before the standard caption.

    Returns
    -------
    Table
        Columns ``protocol``, ``policy``, ``ε min``, ``ε median``, ``ε max`` (per party, phases
        composed sequentially), one ``ε <phase>`` column per phase (ε per party in that phase:
        one number when every party spent the same, else ``median (min–max)``; ``—`` when the
        protocol has no such phase), ``β min``, ``β median``, ``β max`` (over releases),
        ``guarantee`` (``finite ε`` or ``no DP guarantee``), ``refusals`` (per reason) and
        ``replays``.
    """
    pairs = _sections(sections)
    phases = list(dict.fromkeys(ph for _, s in pairs for pol in s["policies"].values() for ph in pol["by_phase"]))
    phase_columns = [f"ε {ph}" for ph in phases]
    columns = ("protocol", "policy", "ε min", "ε median", "ε max", *phase_columns,
               "β min", "β median", "β max", "guarantee", "refusals", "replays")
    rows = []
    for label, section in pairs:
        beta = _triple(section.get("beta"))
        for policy, values in section["policies"].items():
            by_phase = values["by_phase"]
            rows.append((
                label, policy, *_triple(values["epsilon"]),
                *(_spread(by_phase[ph]) if ph in by_phase else None for ph in phases),
                *beta,
                NO_DP if values["no_dp_guarantee"] else "finite ε",
                _refusal_text(section),
                section.get("replays"),
            ))
    number = {c: ".3f" for c in ("ε min", "ε median", "ε max", "β min", "β median", "β max")}
    standard = (
        "ε per party (min / median / max over parties and runs); phases compose sequentially under every "
        "policy (main paper Section 4). sequential: Σ ε over every release (record-level local DP); "
        "parallel: releases on disjoint attribute sets compose by max; unlinkable-pairs: releases hidden "
        "in a secure sum count once per attribute (main paper 4.3). β = entropy rate / log2 r of the "
        "released matrices (bistochastic-privacy paper; 0 = true values, 1 = uniform noise), over "
        "releases. ∞ / no DP guarantee: exact releases of true values (main paper 4.2). Replays: repeated "
        "requests answered from the party's ledger (— on the fast path, which sends no requests)."
    )
    return Table(
        key=key,
        title=title,
        columns=columns,
        rows=rows,
        formats=number,
        caption=f"{caption} {standard}".strip(),
    )


POLICY_ASSUMPTIONS: Mapping[str, str] = {
    "parallel": "assumes the releases concern disjoint data, which the attributes of one record are not",
    "unlinkable-pairs": "assumes the secure sums of main paper 4.3 make each pair release unlinkable, "
                        "counting each attribute once",
}
"""What each composition policy other than the sequential one assumes (said beside its ε)."""


def privacy_summary_lines(sections: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]]) -> list[str]:
    """Two short lines for a run's printed summary: ε per party under each policy, and β.

    ε is one number when every party spent the same, else ``median (min–max)``; β is
    ``median [min–max]`` over the releases.  Refusals and replays are appended when there are any.
    """
    pairs = _sections(sections)
    policies = list(dict.fromkeys(p for _, s in pairs for p in s["policies"]))

    def spent(policy: str) -> str:
        return " | ".join(
            f"{label} " + (_spread(s["policies"][policy]["epsilon"], 2) if policy in s["policies"] else "—")
            + (f" ({NO_DP}: exact 4.2 releases)" if s.get("exact_releases") else
               f" ({NO_DP})" if s.get("no_dp_guarantee") else "")
            for label, s in pairs
        )

    head = "sequential" if "sequential" in policies else policies[0]
    others = [p for p in policies if p != head]
    lines = [f"ε per respondent ({head} composition over everything a respondent releases: the record-level "
             f"guarantee): {spent(head)}"]
    if others:
        lines.append("  labelled alternatives, not record-level guarantees: " + "; ".join(
            f"{p} ({POLICY_ASSUMPTIONS.get(p, 'another accounting')}) " + spent(p).replace(f" ({NO_DP})", "")
            for p in others))
    betas = []
    for label, s in pairs:
        lo, mid, hi = _triple(s.get("beta"))
        betas.append(f"{label} {_fmt(mid, 2)} [{_fmt(lo, 2)}–{_fmt(hi, 2)}]")
    extra = [f"{label} refusals {_refusal_text(s)}" + ("" if s.get("replays") is None else f", replays {s['replays']}")
             for label, s in pairs if s.get("refusal_count")]
    return [
        *lines,
        "β (entropy rate / log2 r of the released matrices) median [min–max]: " + " | ".join(betas)
        + ("; " + "; ".join(extra) if extra else ""),
    ]


WEAK_PRIVACY_EPSILON = 10.0
"""Above this ε per respondent a report says in plain words that the privacy is weak."""


def budget_statement(budget: float | None, share: float | None, m: int, sizes: Sequence[int]) -> str:
    """What the run's budget is and what it means for a respondent, in words.

    ``budget`` is ε per respondent (``None``: the papers' per-attribute setting, no budget);
    ``share`` RR-Clusters' discovery share.  Under ε-LDP any answer of a respondent is at most
    e^ε times more likely for one possible record than for any other; RR-Independent keeps each
    attribute with the one probability p of main paper 6.3.1 that spends ε in all
    (:func:`mprr.protocols.budget.keep_for_budget`), so an attribute of k categories reports its
    true category with probability p + (1 − p)/k.
    """
    if budget is None:
        return ("No budget per respondent was set: the papers' per-attribute setting (p or "
                "epsilon_per_attribute) makes ε per respondent grow with the number of attributes and differ "
                "between protocols (see ε below).")
    p = keep_for_budget(sizes, budget)
    keep = [p + (1.0 - p) / k for k in sizes]
    text = (f"Budget: ε = {budget:g} per respondent, the same for every protocol (sequential composition over "
            f"everything a respondent releases{'' if share is None else f'; RR-Clusters spends {share:.0%} of it on its dependence phase'}). "
            f"In words: any answer a respondent gives is at most e^{budget:g} ≈ {math.exp(budget):,.3g} times more "
            f"likely for one possible record than for any other; under RR-Independent an attribute reports its true "
            f"category with probability {min(keep):.2f}–{max(keep):.2f} (keep probability p = {p:.3f} on all {m}).")
    if budget > WEAK_PRIVACY_EPSILON:
        text += (f" Weak privacy: at ε = {budget:g} an observer can be nearly certain of a respondent's record; "
                 "deployed local-DP surveys use a few units at most.")
    return text


def budget_note(sequential: Mapping[str, Mapping[str, Any]], bases: Sequence[str], budget: float | None) -> str:
    """One sentence saying whether the protocols compared spent the same ε per respondent."""
    eps = {b: float(sequential[b]["epsilon"]["max"]) for b in bases}
    text = ", ".join(f"{b} ε = {'∞' if math.isinf(e) else f'{e:.3g}'}" for b, e in eps.items())
    if budget is not None:
        return (f"Every protocol was planned for ε = {budget:g} per respondent and spent at most that ({text}, "
                "largest over the parties; RR-Clusters spends less when singleton clusters replay their "
                "phase-1 release).")
    if len({round(e, 9) for e in eps.values()}) <= 1:
        return f"Both protocols spend the same ε per respondent ({text})."
    return (f"The ε spent differs ({text} per respondent): the errors are compared at unequal ε, because in "
            "the papers' per-attribute setting RR-Clusters spends a dependence phase and a cluster phase with "
            "the same attribute matrices as RR-Independent; set epsilon (per respondent) to compare at equal ε.")
