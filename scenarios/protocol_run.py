"""``ProtocolRun``: one base protocol run plus its RR-Adjustment, as the scenarios record it.

:mod:`scenarios.local_anonymization` produces these records and
:mod:`scenarios.anonymization_report` turns them into a report; both import the record from here,
so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mprr.protocols.result import ProtocolResult
from scenarios.privacy_report import PrivacyRecord

__all__ = ["ProtocolRun"]


@dataclass
class ProtocolRun:
    """One base protocol run plus its adjustment, on either engine.

    ``result`` / ``adjusted``: the protocol's :class:`ProtocolResult` and RR-Adjustment on its
    release; ``privacy``: the parties' ledgers, refusals and replays
    (:class:`~scenarios.privacy_report.PrivacyRecord`); ``traffic`` / ``view``: measured traffic
    and the controller's view summary (actors engine, else None); ``wire``: a remote runtime's
    measured framing / TLS / socket bytes (else None); ``seconds`` / ``adjustment_seconds``:
    wall-clock times.
    """

    result: ProtocolResult
    adjusted: ProtocolResult
    privacy: PrivacyRecord
    traffic: Any = None
    view: Any = None
    seconds: float = 0.0
    adjustment_seconds: float = 0.0
    wire: Any = None
