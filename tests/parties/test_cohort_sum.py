"""A cohort's secure sums (parties.cohort_sum): its members commit, start and end a sum in their
cohort, each running its own side, and every party ends where its own per-party path leaves it.

Each case runs twice on the memory runtime: as it is, and with every cohort declining to start a
sum as a whole (each member then decides and runs on its own, the per-party path).  The result,
every party's ledger, refusals, secure-sum sessions, released values, draws, status and errors,
and every party's traffic must be the same.  Every run is on the virtual clock
(``tests/virtual_clock.py``): its round timeouts pass in virtual time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.synthetic import planted_clusters
from parties.cohort_sum import CohortSums
from parties.faults import FaultPlan
from parties.shard import PartyShard
from parties.simulate import SimulationResult, simulate_async
from tests.virtual_clock import run_virtual

N = 24
SEED = 4
CLUSTERS: dict[str, Any] = dict(p=0.7, Tv=60, Td=0.1)
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(N, rng=np.random.default_rng(8), strength=0.8).dataset


def _run(data: Dataset, monkeypatch: pytest.MonkeyPatch, *, alone: bool, **options: Any) -> SimulationResult | str:
    """The simulation (or the error it ended with); ``alone``: no cohort starts a sum as a whole."""
    with monkeypatch.context() as patch:
        if alone:
            patch.setattr(CohortSums, "start", lambda self, *args: None)
        try:
            return run_virtual(simulate_async(data, "RR-Clusters", seed=SEED, **CLUSTERS,  # type: ignore[arg-type]
                                              **options))
        except Exception as exc:  # noqa: BLE001  (the same error either way)
            return f"{type(exc).__name__}: {exc}"


def _sessions(accountant: Any) -> dict[str, str | None]:
    return {session: accountant.session_state(session) for session in accountant._sessions}


def _same(a: SimulationResult | str, b: SimulationResult | str) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.result.clusters == b.result.clusters
    assert [r.units for r in a.result.releases] == [r.units for r in b.result.releases]
    for x, y in zip(a.parties, b.parties, strict=True):
        assert x.accountant.ledger.releases == y.accountant.ledger.releases
        assert [(r.reason, r.request_id, r.message) for r in x.refusals] == [
            (r.reason, r.request_id, r.message) for r in y.refusals]
        assert _sessions(x.accountant) == _sessions(y.accountant)
        assert (x.released_values, x.draws, x.status, x.errors) == (y.released_values, y.draws, y.status, y.errors)
    ta, tb = a.traffic, b.traffic
    assert ta.messages == tb.messages and ta.bytes == tb.bytes


CASES = {
    "masked-sparse 4.2": dict(dependence="4.2", secure_sum="masked-sparse", timeout=3.0),
    "graph 4.3": dict(dependence="4.3", engine="graph", timeout=3.0),
    "paper 4.2": dict(dependence="4.2", engine="paper", timeout=3.0),
    "masked 4.2, a party crashes in the sum": dict(dependence="4.2", engine="masked", timeout=1.0,
                                                   faults=FaultPlan(crash={5: 3}), on_dropout="exclude"),
    "masked-sparse 4.2, shares dropped": dict(dependence="4.2", secure_sum="masked-sparse", timeout=0.5,
                                              faults=FaultPlan(drop=0.05, phases=frozenset({"masked/share-keys"})),
                                              fault_seed=2, on_dropout="exclude"),
    "masked 4.2, some tags dropped: their parties wait, stopped at the end": dict(
        dependence="4.2", engine="masked", timeout=0.5, on_dropout="exclude", fault_seed=1,
        faults=FaultPlan(drop=1.0, phases=frozenset({"masked/consistency"}), senders=frozenset({3, 9}))),
    "masked 4.2, the sum aborted": dict(dependence="4.2", engine="masked", timeout=0.5,
                                        faults=FaultPlan(drop=0.3, phases=frozenset({"masked/input"})), fault_seed=1),
    "masked 4.2, a second session refused": dict(dependence="4.2", engine="masked", timeout=3.0,
                                                 attacks=["difference-secure-sum"]),
    "masked 4.3, budgets apart": dict(dependence="4.3", engine="masked", timeout=3.0,
                                      budget=[1000.0] * 16 + [500.0] * 8),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_cohorts_sum_leaves_every_party_where_its_own_path_would(data: Dataset, monkeypatch: pytest.MonkeyPatch,
                                                                  case: str) -> None:
    together = _run(data, monkeypatch, alone=False, **CASES[case])
    _same(together, _run(data, monkeypatch, alone=True, **CASES[case]))


def test_a_clean_sum_keeps_the_members_in_their_cohort(data: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    build = PartyShard._build

    def counted(self: PartyShard, rows: np.ndarray) -> None:
        built.extend(rows.tolist())
        build(self, rows)

    monkeypatch.setattr(PartyShard, "_build", counted)
    for alone, during in ((False, []), (True, list(range(N)))):
        built.clear()
        sim = _run(data, monkeypatch, alone=alone, **CASES["masked-sparse 4.2"])
        assert not isinstance(sim, str)
        # together: no party built in the run (each committed, ran and closed its sum in its cohort);
        # alone: every party built to decide on its own
        assert sorted(set(built)) == during
        assert all(set(_sessions(p.accountant).values()) == {"done"} for p in sim.parties)  # (built here, to read)
