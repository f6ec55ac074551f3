"""What a phase of frequency-oracle reports brings back to the controller.

:meth:`parties.controller.Controller.report` broadcasts one
:class:`~parties.wire.requests.ReportRequest` and hands each party's
:class:`~parties.wire.messages.OracleReport` to a :class:`ReportGathering`, which checks it
against the :class:`~mprr.protocols.steps.Report` step — one report per unit within its
oracle's range (``"every"``, ``"sampled-fake"``: unit ``-1``); with ``"sampled"`` a unit index
in range and one report within its oracle's range, or no report at all from a party the step
lets abstain or that reported in an ``exclude`` phase — and keeps the well-formed ones.  The
phase's :class:`PhaseReport` turns them into the fast path's
:class:`~mprr.protocols.oracle_reports.ReportedData` with
:func:`~mprr.protocols.oracle_reports.reported_data`, the one place both drivers build it.
The oracles are rebuilt here from the step, as every party rebuilds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

from mprr.data import Schema
from mprr.errors import ProtocolError
from mprr.oracles import FrequencyOracle
from mprr.protocols.oracle_reports import ReportedData, reported_data
from mprr.protocols.release import readonly
from mprr.protocols.steps import Report
from parties.wire.messages import OracleReport, Refusal

__all__ = ["PhaseReport", "ReportGathering"]


@dataclass(frozen=True, eq=False)
class PhaseReport:
    """What a phase of frequency-oracle reports brought back (:meth:`Controller.report`).

    Attributes
    ----------
    step, request_id
        The :class:`~mprr.protocols.steps.Report` step and its request id.
    oracles
        The frequency oracle of each unit, rebuilt by the controller from the step.
    contributors
        Parties whose replies are in :attr:`reports` (a party that abstained or was excluded
        contributes an empty report), ascending.
    reports
        ``(len(contributors), len(units))`` int64 reports, ``-1`` where a party sent none
        (read-only).
    assigned
        ``"sampled"``: each contributor's unit index (``-1``: no report); else ``None``.
    refusals, silent
        As :class:`~parties.controller.PhaseRelease`.
    """

    step: Report
    request_id: int
    oracles: tuple[FrequencyOracle, ...]
    contributors: tuple[int, ...]
    reports: np.ndarray
    assigned: np.ndarray | None
    refusals: Mapping[int, Refusal] = field(default_factory=dict)
    silent: tuple[int, ...] = ()

    @property
    def phase(self) -> str:
        return self.step.phase

    def reporters(self) -> tuple[int, ...]:
        """The contributors that reported something in this phase."""
        if self.assigned is None:
            return self.contributors
        return tuple(p for p, j in zip(self.contributors, self.assigned.tolist()) if j >= 0)

    def reported_data(self, schema: Schema) -> ReportedData:
        """The phase as the fast path's :class:`~mprr.protocols.oracle_reports.ReportedData`
        (:func:`~mprr.protocols.oracle_reports.reported_data`)."""
        usizes = tuple(tuple(schema.sizes[a] for a in u) for u in self.step.units)
        return reported_data(self.step, usizes, self.oracles, self.reports, self.assigned)


class ReportGathering:
    """The well-formed replies of one report round (module docstring).

    Parameters
    ----------
    step
        The report step asked.
    schema
        The public schema (the units' domains).
    excluded
        Parties that reported in a phase of ``step.exclude`` (they must send nothing).
    """

    def __init__(self, step: Report, schema: Schema, excluded: set[int]) -> None:
        sizes = schema.sizes
        self.step = step
        self.schema = schema
        self.oracles = tuple(o.build([sizes[a] for a in u]) for o, u in zip(step.oracles, step.units))
        self._limits = [o.report_limit for o in self.oracles]
        self._excluded = excluded
        self._rows: dict[int, tuple[int, list[int]]] = {}

    def add(self, party: int, msg: OracleReport) -> str | None:
        """Keep ``party``'s reply, or say why it is malformed (and keep nothing)."""
        step, limits, k = self.step, self._limits, len(self._limits)
        codes = msg.reports.tolist()
        why: str | None = None
        if step.assign != "sampled":
            if msg.unit != -1 or len(codes) != k or any(c >= lim for c, lim in zip(codes, limits)):
                why = f"{len(codes)} reports (unit {msg.unit}); {k} within the oracles' ranges (unit -1) expected"
        elif msg.unit < 0:
            if codes:
                why = "reports without a drawn unit"
            elif not (step.abstain > 0.0 or party in self._excluded):
                why = "no report, though the step lets no party abstain"
        elif msg.unit >= k or codes[0] >= limits[msg.unit]:
            why = f"unit {msg.unit} / report {codes[0]} outside the {k} units and their oracles' ranges"
        elif party in self._excluded:
            why = f"a report, though the party reported in an excluded phase {list(step.exclude)}"
        if why is not None:
            return f"malformed reply {codes[:10]}: {why}"
        self._rows[party] = (msg.unit, codes)
        return None

    def phase(self, request_id: int, parties: Sequence[int], refusals: Mapping[int, Refusal],
              silent: tuple[int, ...]) -> PhaseReport:
        """The :class:`PhaseReport` of the kept replies of ``parties`` (in that order).

        Raises
        ------
        ProtocolError
            None of them reported.
        """
        contributors = tuple(p for p in parties if p in self._rows)
        if not contributors:
            raise ProtocolError(f"phase {self.step.phase!r}: no party reported anything for request {request_id}")
        k = len(self.oracles)
        reports = np.full((len(contributors), k), -1, dtype=np.int64)
        assigned = np.full(len(contributors), -1, dtype=np.int64) if self.step.assign == "sampled" else None
        for row, p in enumerate(contributors):
            unit, codes = self._rows[p]
            if assigned is None:
                reports[row] = codes
            elif unit >= 0:
                assigned[row] = unit
                reports[row, unit] = codes[0]
        return PhaseReport(self.step, request_id, self.oracles, contributors, readonly(reports),
                           None if assigned is None else readonly(assigned), MappingProxyType(dict(refusals)), silent)
