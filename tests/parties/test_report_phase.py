"""Tests for parties.report_phase: each party's OracleReport checked against the step; the phase's data."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mprr.data import Attribute, Schema
from mprr.errors import ProtocolError
from mprr.protocols.oracle_reports import reported_data
from mprr.protocols.steps import OracleSpec, Report
from parties.report_phase import ReportGathering
from parties.wire.messages import OracleReport

SIZES = (3, 2)
SCHEMA = Schema(tuple(Attribute(f"a{j}", tuple(f"c{k}" for k in range(s)), "nominal") for j, s in enumerate(SIZES)))
UNITS = ((0,), (1,))


def step(assign: str = "sampled", **kw) -> Report:
    return Report("attributes", UNITS, (OracleSpec("grr", 1.0), OracleSpec("oue", 1.0)), assign, **kw)


def reply(unit: int, values: list[int]) -> OracleReport:
    return OracleReport(1, unit, np.array(values, dtype=np.int64))


@pytest.mark.parametrize(
    ("the_step", "unit", "values", "why"),
    [
        (step(), 2, [0], "outside the 2 units"),
        (step(), 0, [3], "outside the 2 units and their oracles' ranges"),  # GRR over 3 cells: codes < 3
        (step(), -1, [], "the step lets no party abstain"),
        (step(), -1, [1, 1], "reports without a drawn unit"),
        (step("every"), 0, [1], r"2 within the oracles' ranges \(unit -1\) expected"),
        (step("every"), -1, [1, 4], "2 within the oracles' ranges"),  # OUE over 2 cells: bitmasks < 4
        (step("every"), -1, [1], "1 reports"),
    ],
)
def test_a_reply_that_does_not_fit_the_step_is_malformed(the_step, unit, values, why) -> None:
    gathering = ReportGathering(the_step, SCHEMA, set())
    problem = gathering.add(7, reply(unit, values))
    assert problem is not None and problem.startswith(f"malformed reply {values}:")
    assert re.search(why, problem)
    with pytest.raises(ProtocolError, match="no party reported anything for request 1"):
        gathering.phase(1, [7], {}, ())


def test_an_excluded_party_must_send_nothing_and_may() -> None:
    gathering = ReportGathering(step(exclude=("discovery",)), SCHEMA, {3})
    assert "reported in an excluded phase ['discovery']" in (gathering.add(3, reply(0, [1])) or "")
    assert gathering.add(3, reply(-1, [])) is None
    assert gathering.add(4, reply(1, [2])) is None
    phase = gathering.phase(5, [3, 4], {}, ())
    assert phase.contributors == (3, 4) and phase.reporters() == (4,)
    assert phase.assigned.tolist() == [-1, 1] and phase.reports.tolist() == [[-1, -1], [-1, 2]]


def test_the_phase_data_is_reported_data_of_the_kept_rows_in_party_order() -> None:
    gathering = ReportGathering(step("every"), SCHEMA, set())
    for p, values in ((2, [0, 1]), (0, [2, 3]), (1, [2, 0])):
        assert gathering.add(p, reply(-1, values)) is None
    phase = gathering.phase(1, [0, 1, 2], {}, ())
    assert phase.assigned is None and phase.reports.tolist() == [[2, 3], [2, 0], [0, 1]]
    assert not phase.reports.flags.writeable
    data = phase.reported_data(SCHEMA)
    expected = reported_data(phase.step, ((3,), (2,)), phase.oracles, phase.reports, None)
    assert [c.tolist() for c in data.counts] == [c.tolist() for c in expected.counts] == [[1.0, 0.0, 2.0], [2.0, 1.0]]
    assert data.reports == (3, 3) and data.epsilons == pytest.approx((1.0, 1.0))
