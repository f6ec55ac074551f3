"""A curious controller: extra requests after the honest protocol (main paper threat model).

The controller is untrusted.  After running the protocol honestly, a curious controller can
try to learn more than the protocol releases.  Each attack sends one extra
:class:`~parties.wire.requests.ReleaseRequest` to every active party and reports what came
back (:class:`AttackReport`); refusals are expected and never stop the run:

``"re-request"``
    the last phase's request again (new request id): every party must **replay** the very
    codes it released (``replay_identical``) and spend nothing;
``"finer-matrix"``
    the first unit of the last phase through a more truthful matrix of its family
    (:attr:`mprr.matrix_families.MatrixFamily.finer`: ``p → (1+p)/2``, ``ε → 2ε``,
    ``λ → (1+λ)/2``): new spending, refused once the budget is used up;
``"unannounced-cluster"``
    a unit that is not a group of the phase's announced plan (two groups merged, or a part of
    the only group): refused as a plan violation;
``"plan-change"``
    the same phase with a new plan containing that unit: refused (a plan cannot change);
``"extra-phase"``
    a new phase releasing every attribute again (keep probability 0.5): new spending,
    refused once the budget is used up;
``"difference-secure-sum"``
    after a secure-sum dependence phase (main paper 4.2 / 4.3), the same secure release again
    over every active party but the first contributor v, hoping that full − partial is v's
    input.  With exact pairs (4.2) every party refuses (its exact values already entered a
    session); with randomized pairs (4.3) every party randomizes afresh and pays ε again, so
    the difference mixes v's input with everybody's new noise.  The report carries the
    difference the controller got (:attr:`AttackReport.difference`), for the tests to compare
    with v's input.

After a phase of frequency-oracle reports (:class:`~parties.wire.requests.ReportRequest`: SPL,
SMP, RS+FD, CALM-style, RR-Clusters-Sampled):

``"re-report"``
    the last report request again (new request id): every party that reported must resend
    the very report (``replay_identical``; with a sampled phase, its drawn unit too) and spend
    nothing;
``"sharper-oracle"``
    the last report step with every oracle's ε doubled: new spending, refused once the budget
    is used up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from mprr.errors import ConfigurationError
from mprr.matrix_families import MATRIX_FAMILIES
from mprr.protocols.steps import MatrixSpec, OracleSpec, Report, singletons
from parties.controller import Controller, PhaseRelease, PhaseReport, ReleaseRefused
from parties.wire.codec import Message
from parties.wire.messages import OracleReport, RandomizedValues, Refusal
from parties.wire.requests import ReleaseRequest, ReportRequest

__all__ = ["ATTACKS", "REPORT_ATTACKS", "SECURE_ATTACKS", "AttackReport", "run_attacks"]

ATTACKS: tuple[str, ...] = ("re-request", "finer-matrix", "unannounced-cluster", "plan-change", "extra-phase")
"""Attacks a malicious controller can run on the last release phase (module docstring)."""

SECURE_ATTACKS: tuple[str, ...] = ("difference-secure-sum",)
"""Attacks on the last secure-sum phase (RR-Clusters with 4.2 or 4.3; module docstring)."""

REPORT_ATTACKS: tuple[str, ...] = ("re-report", "sharper-oracle")
"""Attacks on the last phase of frequency-oracle reports (module docstring)."""


@dataclass(frozen=True)
class AttackReport:
    """Outcome of one attack.

    Attributes
    ----------
    attack
        Name (one of :data:`ATTACKS`).
    request_id, phase, units
        What was asked.
    asked, answered, refused, silent
        Parties asked, and how many answered with values, refused, said nothing.
    reasons
        Refusals per reason (``"budget-exceeded"``, ``"plan-violation"``, ...).
    replay_identical
        ``"re-request"`` only: every answer equals the codes the party released in the
        original phase (``None`` for the other attacks).
    victim, difference
        ``"difference-secure-sum"`` only: the party left out, and the per-unit difference of
        the two tallies (``None`` when the second sum was refused).
    """

    attack: str
    request_id: int
    phase: str
    units: tuple[tuple[int, ...], ...]
    asked: int
    answered: int
    refused: int
    silent: int
    reasons: Mapping[str, int] = field(default_factory=dict)
    replay_identical: bool | None = None
    victim: int | None = None
    difference: tuple[np.ndarray, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict."""
        return {
            "attack": self.attack,
            "request_id": self.request_id,
            "phase": self.phase,
            "units": [list(u) for u in self.units],
            "asked": self.asked,
            "answered": self.answered,
            "refused": self.refused,
            "silent": self.silent,
            "reasons": dict(self.reasons),
            "replay_identical": self.replay_identical,
            "victim": self.victim,
            "difference": None if self.difference is None else [d.tolist() for d in self.difference],
        }


def _finer(spec: MatrixSpec) -> MatrixSpec:
    """A more truthful matrix of the same family (higher ε: its family's
    :attr:`~mprr.matrix_families.MatrixFamily.finer`); keep probability 0.99 for a family
    without one (a dense matrix)."""
    family = MATRIX_FAMILIES.lookup(spec.family)
    if family.finer is None:
        return MatrixSpec.keep_or_uniform(0.99)
    return MatrixSpec(family.name, family.finer(tuple(spec.params)))


def _unannounced(plan: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """A unit outside ``plan``: two groups merged, or the first attribute of a single group."""
    if len(plan) >= 2:
        return tuple(sorted(plan[0] + plan[1]))
    group = plan[0]
    return (group[0],) if len(group) > 1 else (group[0], group[0] + 1)


def _reasons(refusals: Iterable[Refusal]) -> Mapping[str, int]:
    """Refusals per reason code (the text before the first ``:``)."""
    return MappingProxyType(dict(Counter(m.reason.split(":", 1)[0] for m in refusals)))


async def _attack(ctl: Controller, name: str, request: ReleaseRequest,
                  original: PhaseRelease | None = None) -> AttackReport:
    targets = list(ctl.active)
    replies, silent = await ctl.exchange(request, targets)
    reasons = _reasons(m for m in replies.values() if isinstance(m, Refusal))
    identical = None
    if original is not None and original.codes is not None:
        rows, codes = {p: k for k, p in enumerate(original.contributors)}, original.codes
        identical = all(
            isinstance(msg, RandomizedValues) and p in rows and np.array_equal(msg.codes, codes[rows[p]])
            for p, msg in replies.items()
        ) and not silent
    return AttackReport(
        attack=name,
        request_id=request.request_id,
        phase=request.phase,
        units=request.units,
        asked=len(targets),
        answered=sum(isinstance(m, RandomizedValues) for m in replies.values()),
        refused=sum(reasons.values()),
        silent=len(silent),
        reasons=reasons,
        replay_identical=identical,
    )


def _same_report(msg: Message, original: PhaseReport, row: int | None) -> bool:
    """Whether ``msg`` resends what the party reported in ``original`` (row ``row``); a party
    that reported nothing then (it abstained or was excluded) is not judged."""
    if row is None or not isinstance(msg, OracleReport):
        return False
    if original.assigned is None:
        return msg.unit == -1 and msg.reports.tolist() == original.reports[row].tolist()
    unit = int(original.assigned[row])
    return unit < 0 or (msg.unit == unit and msg.reports.tolist() == [int(original.reports[row, unit])])


async def _report_attack(ctl: Controller, name: str) -> AttackReport:
    """An attack on the last report phase (module docstring)."""
    last = ctl.reports[-1]
    step = last.step
    if name == "sharper-oracle":
        step = Report(step.phase, step.units, tuple(OracleSpec(o.family, 2.0 * o.epsilon) for o in step.oracles),
                      step.assign, step.weights, step.abstain, step.exclude)
    request = ReportRequest.build(ctl.new_request_id(), step)
    targets = list(ctl.active)
    replies, silent = await ctl.exchange(request, targets, kinds=(OracleReport, Refusal))
    reasons = _reasons(m for m in replies.values() if isinstance(m, Refusal))
    identical = None
    if name == "re-report":
        rows = {p: k for k, p in enumerate(last.contributors)}
        identical = all(_same_report(m, last, rows.get(p)) for p, m in replies.items()) and not silent
    return AttackReport(name, request.request_id, request.phase, request.units, len(targets),
                        sum(isinstance(m, OracleReport) for m in replies.values()), sum(reasons.values()),
                        len(silent), reasons, identical)


async def _difference(ctl: Controller) -> AttackReport:
    """The differencing attack on the last secure sum (module docstring)."""
    if not ctl.tallies:
        raise ConfigurationError("difference-secure-sum needs a secure-sum phase (RR-Clusters with 4.2 or 4.3)")
    full = ctl.tallies[-1]
    victim = full.contributors[0]
    saved = list(ctl.active)
    ctl.active = [p for p in saved if p != victim]
    asked = len(ctl.active)
    before = len(ctl.requests)
    try:
        part = await ctl.secure_release(full.phase, full.units, engine=ctl.engines[full.session],
                                        specs=full.specs or None)
    except ReleaseRefused as exc:
        return AttackReport("difference-secure-sum", ctl.requests[before].request_id, full.phase, full.units,
                            asked, 0, len(exc.refusals), 0, _reasons(exc.refusals.values()), victim=victim)
    finally:
        ctl.active = [p for p in saved if p in ctl.active or p == victim]
    diff = tuple(a - b for a, b in zip(full.counts, part.counts))
    return AttackReport("difference-secure-sum", part.request_id, full.phase, full.units, asked,
                        len(part.contributors), len(part.refusals), len(part.silent),
                        MappingProxyType({}), victim=victim, difference=diff)


async def run_attacks(ctl: Controller, attacks: Sequence[str]) -> tuple[AttackReport, ...]:
    """Run ``attacks`` (names from :data:`ATTACKS`, :data:`SECURE_ATTACKS` and
    :data:`REPORT_ATTACKS`) after the honest protocol, in order.

    Raises
    ------
    ConfigurationError
        On an unknown attack name, or when the protocol released nothing to attack (no
        release phase for :data:`ATTACKS`, no report phase for :data:`REPORT_ATTACKS`).
    """
    known = ATTACKS + SECURE_ATTACKS + REPORT_ATTACKS
    unknown = [a for a in attacks if a not in known]
    if unknown:
        raise ConfigurationError(f"attacks must be among {list(known)}, got {unknown}")
    if not attacks:
        return ()
    if not ctl.phases and not ctl.tallies and not ctl.reports:
        raise ConfigurationError("the protocol released nothing: there is nothing to attack")
    reports = []
    for name in attacks:
        if name == "difference-secure-sum":
            reports.append(await _difference(ctl))
            continue
        if name in REPORT_ATTACKS:
            if not ctl.reports:
                raise ConfigurationError(f"{name} needs a phase of frequency-oracle reports (SPL, SMP, RS+FD, "
                                         "CALM-style, RR-Clusters-Sampled)")
            reports.append(await _report_attack(ctl, name))
            continue
        if not ctl.phases:
            raise ConfigurationError("the protocol released nothing: there is nothing to attack")
        last = ctl.phases[-1]
        plan = next(r for r in reversed(ctl.requests)
                    if isinstance(r, ReleaseRequest) and r.request_id == last.request_id).plan
        rid = ctl.new_request_id()
        if name == "re-request":
            request = ReleaseRequest.build(rid, last.phase, last.units, last.specs, plan=plan)
            reports.append(await _attack(ctl, name, request, last))
            continue
        if name == "finer-matrix":
            request = ReleaseRequest.build(rid, last.phase, last.units[:1], [_finer(last.specs[0])], plan=plan)
        elif name == "unannounced-cluster":
            unit = _unannounced(plan)
            request = ReleaseRequest.build(rid, last.phase, [unit], [MatrixSpec.grr(1.0)], plan=plan)
        elif name == "plan-change":
            unit = _unannounced(plan)
            request = ReleaseRequest.build(rid, last.phase, [unit], [MatrixSpec.grr(1.0)], plan=[unit])
        else:  # extra-phase
            units = singletons(ctl.schema.m)
            request = ReleaseRequest.build(
                rid, "extra", units, [MatrixSpec.keep_or_uniform(0.5)] * len(units)
            )
        reports.append(await _attack(ctl, name, request))
    return tuple(reports)
