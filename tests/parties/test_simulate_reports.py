"""parties.simulate with frequency-oracle reports: what the controller sees (each party's message
is its row of reports, nothing else), the closed forms of the reports' traffic, and the parties'
budgets held against their oracles' ε.

That the reports are the fast path's, party ledgers included, is the equivalence matrix's
(``test_equivalence.py``, whose runs these tests reuse)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.protocols.parameters import OracleParameters, RSFDParameters
from mprr.protocols.registry import lookup
from mprr.protocols.steps import OracleSpec, Report
from parties.controller import ReleaseRefused
from parties.simulate import simulate
from parties.wire.codec import encode
from parties.wire.messages import OracleReport
from parties.wire.requests import ReportRequest
from tests.parties.equivalence_cases import SEED, Case, dataset, fast_path, matrix_cases, reference

REPORT_CASES = [c for c in matrix_cases() if not c.missing
                and issubclass(lookup(c.protocol).parameters or object, (OracleParameters, RSFDParameters))]
"""The matrix's cases of protocols reporting through frequency oracles."""


@pytest.fixture(scope="module")
def report_data() -> Dataset:
    return dataset("full")


@pytest.mark.parametrize("case", REPORT_CASES, ids=[c.id for c in REPORT_CASES])
def test_the_controller_sees_each_partys_reports_and_their_closed_form_traffic(case: Case) -> None:
    sim, fast = reference(case), fast_path(case)
    if case.protocol == "RR-Clusters-Sampled":  # both phases ran, and the discovery reporters sat the release out
        assert fast.phases == ("discovery", "clusters")
        found, released = fast.releases
        assert not np.any((found.assigned >= 0) & (released.assigned >= 0))
    # traffic: the closed forms of docs/cost_model.md (ReportRequest, OracleReport), per phase
    n = fast.n
    requests = replies = 0
    for r in fast.releases:
        # RR-Clusters-Sampled weighs its clusters, and its discovery pairs when a cover is in view
        weighed = r.phase == "clusters" or (r.phase == "discovery" and fast.details["plan"].design != "clusters")
        w = len(r.units) if weighed else 0
        exclude = ("discovery",) if r.phase == "clusters" and len(fast.releases) == 2 else ()
        requests += (49 + len(r.phase) + 19 * len(r.units) + 8 * sum(map(len, r.units)) + len(r.assign) + 8 * w
                     + sum(4 + len(e) for e in exclude))
        reports = n * len(r.units) if r.assigned is None else int(np.sum(r.assigned >= 0))
        replies += 31 * n + 8 * reports
    phases = len(fast.releases)
    assert dict(sim.traffic.by_kind) == {"ReportRequest": (phases * n, n * requests),
                                         "OracleReport": (phases * n, replies)}
    # the controller saw oracle reports and nothing else: each party's message is its row
    assert sim.view_log.kinds() == frozenset({"OracleReport"})
    for release in fast.releases:
        got = {e.src: e.message for e in sim.view_log if e.phase == release.phase}
        assert sorted(got) == list(range(n))
        for i, msg in got.items():
            if release.assigned is None:
                assert msg.unit == -1 and msg.reports.tolist() == release.codes[i].tolist()
            else:
                j = int(release.assigned[i])
                assert msg.unit == j and msg.reports.tolist() == ([] if j < 0 else [release.codes[i, j]])


def test_oracle_report_traffic_is_the_codec_size_of_each_message(report_data) -> None:
    # SMP: one request in (its codec size), one report out (31 bytes + 8 per report) per party
    n = report_data.n
    sim = simulate(report_data, "SMP", seed=SEED, timeout=5.0, epsilon=2.0)
    (data,) = sim.result.releases
    step = Report("attributes", data.units, tuple(OracleSpec("grr", e) for e in data.epsilons), "sampled")
    req = len(encode(ReportRequest.build(1, step)))
    rep = len(encode(OracleReport(1, 0, np.zeros(1, dtype=np.int64))))
    t = sim.traffic
    assert rep == 39
    assert dict(t.by_kind) == {"ReportRequest": (n, n * req), "OracleReport": (n, n * rep)}
    assert all(t.sent_by(i) == (1, rep) and t.received_by(i) == (1, req) for i in range(n))
    assert (t.messages, t.bytes, t.rounds) == (2 * n, n * (req + rep), 2)
    # a party that sends nothing in a phase still answers: 31 bytes
    sampled = simulate(report_data, "RR-Clusters-Sampled", seed=SEED, timeout=5.0, epsilon=4.0, discovery_share=0.3,
                       Tv=60)
    reports = sum(int(np.sum(r.assigned >= 0)) for r in sampled.result.releases)
    assert sampled.traffic.by_kind["OracleReport"] == (2 * n, 2 * n * 31 + 8 * reports)


def test_a_budget_below_the_oracle_epsilon_is_refused_by_every_party(report_data) -> None:
    with pytest.raises(ReleaseRefused, match="parties refused request") as info:
        simulate(report_data, "SPL", seed=SEED, timeout=5.0, budget=1.5, epsilon=2.0)
    assert len(info.value.refusals) == report_data.n
    assert all("budget-exceeded" in r.reason and r.requested == pytest.approx(2.0)
               for r in info.value.refusals.values())
    sim = simulate(report_data, "SMP", seed=SEED, timeout=5.0, budget=2.0, epsilon=2.0)
    assert all(ledger.total("sequential") <= 2.0 * (1 + 1e-9) for ledger in sim.ledgers)
