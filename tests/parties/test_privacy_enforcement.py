"""Privacy in the actor path: the controller never sees a raw record; parties enforce budgets
and plans against a curious controller (issue 6)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mprr.privacy import summarize
from mprr.data import Attribute, Dataset, Schema
from mprr.errors import ConfigurationError, ProtocolError
from mprr.matrices import keep_or_uniform
from mprr.protocols import rr_clusters
from mprr.protocols.local import run_local
from mprr.protocols.registry import lookup
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.choreographies.malicious import ATTACKS, REPORT_ATTACKS
from parties.controller import ReleaseRefused
from parties.wire.messages import RandomizedValues
from parties.simulate import simulate

N = 200
SEED = 9
CLUSTERS = dict(p=0.7, Tv=60, Td=0.4)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(N, rng=np.random.default_rng(4), strength=0.8).dataset


def honest_spend(data: Dataset) -> float:
    fast = rr_clusters(data, rng=PartyStreams(SEED, data.n), **CLUSTERS)
    return fast.epsilon("sequential")


# ---------------------------------------------------------------------- the controller's view
@pytest.mark.parametrize(
    ("protocol", "params"),
    [("RR-Independent", dict(p=0.5)), ("RR-Clusters", CLUSTERS), ("RR-Ind-Joint", dict(p=0.5, groups=[(0, 1)])),
     ("lambda-randomization", dict(lambdas=[0.4] * 8))],
)
def test_view_holds_only_randomized_values(data, protocol, params) -> None:
    sim = simulate(data, protocol, seed=SEED, timeout=5.0, **params)
    assert sim.view_log.kinds() == frozenset({"RandomizedValues"})
    # Each message carries exactly the codes the party released, nothing else.  Both references
    # are computed apart from the controller: the fast path randomizes the true records with the
    # same per-party streams, and each party keeps the code it released for each ledger entry.
    fast = run_local(lookup(protocol).program, data, lookup(protocol).bind(params), rng=PartyStreams(SEED, N))
    assert {e.phase for e in sim.view_log} == {r.phase for r in fast.releases}
    names = data.schema.names
    for release in fast.releases:
        got = {e.src: e.message.codes for e in sim.view_log if e.phase == release.phase}
        assert sorted(got) == list(range(N))
        assert all(np.array_equal(got[i], release.codes[i]) for i in range(N))
        for i, party in enumerate(sim.parties):
            held = list(zip(party.ledger, party.released_values))
            for unit, code in zip(release.units, got[i]):
                attrs = tuple(names[a] for a in unit)
                assert int(code) in {v for entry, v in held if entry.attributes == attrs}


def distinct_records(n: int) -> Dataset:
    sizes = (10, 10, 10)
    schema = Schema(tuple(Attribute(f"a{j}", tuple(map(str, range(s))), "nominal") for j, s in enumerate(sizes)))
    combos = np.array(list(itertools.product(*(range(s) for s in sizes))), dtype=np.int64)
    rows = np.random.default_rng(0).permutation(len(combos))[:n]
    return Dataset(schema, combos[rows])


def test_released_codes_differ_from_the_raw_records_at_the_expected_rate() -> None:
    # Records are distinct; keep_or_uniform(10, p) reports the true value w.p. q = p + (1-p)/10.
    # Observed agreement rates must be within 5 standard errors of q (per attribute) and of q^3
    # (whole record), far from 1: the controller does not receive raw records.
    n, p = 600, 0.5
    ds = distinct_records(n)
    sim = simulate(ds, "RR-Independent", seed=SEED, timeout=5.0, p=p)
    q = p + (1 - p) / 10
    raw = ds.codes
    sent = np.stack([e.message.codes for e in sorted(sim.view_log.of_kind(RandomizedValues), key=lambda e: e.src)])
    for j in range(3):
        rate = float(np.mean(sent[:, j] == raw[:, j]))
        assert abs(rate - q) < 5 * math.sqrt(q * (1 - q) / n)
    whole = float(np.mean(np.all(sent == raw, axis=1)))
    q3 = q**3
    assert abs(whole - q3) < 5 * math.sqrt(q3 * (1 - q3) / n)
    assert whole < 0.5


# ---------------------------------------------------------------------- curious controller
def test_curious_controller_gets_nothing_new_and_the_run_finishes(data) -> None:
    budget = honest_spend(data)
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, budget=budget, attacks=ATTACKS, **CLUSTERS)
    reports = {r.attack: r for r in sim.attacks}
    assert set(reports) == set(ATTACKS)
    rr = reports["re-request"]
    assert (rr.answered, rr.refused, rr.replay_identical) == (N, 0, True)
    assert dict(reports["finer-matrix"].reasons) == {"budget-exceeded": N}
    assert dict(reports["unannounced-cluster"].reasons) == {"plan-violation": N}
    assert dict(reports["plan-change"].reasons) == {"plan-violation": N}
    assert dict(reports["extra-phase"].reasons) == {"budget-exceeded": N}
    # no party exceeds its budget; nothing beyond the honest releases was recorded
    for ledger in sim.ledgers:
        assert ledger.total("sequential") <= budget * (1 + 1e-9)
        assert ledger == sim.result.ledger
    # the refusals are in the report; the estimate is the honest one
    assert len(sim.refusals) == 4 * N
    assert dict(sim.privacy.refusals) == {"budget-exceeded": 2 * N, "plan-violation": 2 * N}
    assert sim.privacy.replays == N * len(sim.result.releases[1].units) + N * sum(
        len(u) == 1 for u in sim.result.releases[1].units)
    fast = rr_clusters(data, rng=PartyStreams(SEED, N), **CLUSTERS)
    assert sim.result.clusters == fast.clusters
    assert np.array_equal(sim.result.releases[1].codes, fast.releases[1].codes)
    refused = [e for e in sim.view_log if e.kind == "Refusal"]
    assert len(refused) == 4 * N and sim.to_dict()["refusal_count"] == 4 * N


def test_without_a_budget_a_finer_matrix_is_new_spending(data) -> None:
    sim = simulate(data, "RR-Independent", seed=SEED, timeout=5.0, p=0.5, attacks=("finer-matrix",))
    (report,) = sim.attacks
    assert report.answered == N
    extra = keep_or_uniform(data.sizes[0], 0.75).epsilon
    base = sim.result.epsilon("sequential")
    assert all(ledger.total("sequential") == pytest.approx(base + extra) for ledger in sim.ledgers)
    assert all(len(ledger) == data.m + 1 for ledger in sim.ledgers)


def test_too_small_a_budget_stops_the_honest_run_with_the_refusals(data) -> None:
    budget = 0.5 * honest_spend(data)
    with pytest.raises(ReleaseRefused, match="parties refused request") as info:
        simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, budget=budget, **CLUSTERS)
    assert len(info.value.refusals) == N and info.value.phase in ("dependence", "clusters")
    assert all(m.reason.startswith("budget-exceeded") for m in info.value.refusals.values())


def test_exclude_policy_estimates_from_the_parties_within_budget(data) -> None:
    full = honest_spend(data)
    budgets = [full if i % 4 else full * 0.6 for i in range(N)]  # every 4th party cannot do phase 2
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, budget=budgets, on_dropout="exclude", **CLUSTERS)
    poor = [i for i in range(N) if i % 4 == 0]
    assert sim.degraded and sorted(sim.excluded) == poor
    assert all(v.startswith("clusters: refused (budget-exceeded") for v in sim.excluded.values())
    assert sim.result.n == N - len(poor)
    for i, ledger in enumerate(sim.ledgers):
        assert ledger.total("sequential") <= budgets[i] * (1 + 1e-9)
    # the parties that answered released exactly what they release in the full run
    fast = rr_clusters(data, rng=PartyStreams(SEED, N), **CLUSTERS)
    kept = [i for i in range(N) if i % 4]
    assert np.array_equal(sim.result.releases[1].codes, fast.releases[1].codes[kept])
    assert sim.to_dict()["degraded"] is True


def test_nobody_within_budget_is_an_error_even_when_excluding(data) -> None:
    with pytest.raises(ProtocolError, match="no party released anything"):
        simulate(data, "RR-Independent", seed=SEED, timeout=5.0, p=0.5, budget=0.1, on_dropout="exclude")


def test_party_policies_are_reported(data) -> None:
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, policy="parallel", **CLUSTERS)
    assert sim.privacy.policy.value == "parallel"
    assert sim.privacy.epsilon.max <= summarize([party.accountant for party in sim.parties], "sequential").epsilon.max
    assert sim.privacy.epsilon.max == pytest.approx(sim.result.epsilon("parallel"))


# ---------------------------------------------------------------------- frequency-oracle reports
@pytest.mark.parametrize(("protocol", "params"), [("SMP", dict(epsilon=2.0)), ("SPL", dict(epsilon=8.0, oracle="oue")),
                                                  ("RS+FD", dict(epsilon=2.0))])
def test_a_curious_controller_gets_no_new_report_and_no_sharper_one(data, protocol, params) -> None:
    budget = params["epsilon"]
    sim = simulate(data, protocol, seed=SEED, timeout=5.0, budget=budget, attacks=REPORT_ATTACKS, **params)
    again, sharper = sim.attacks
    assert (again.attack, again.answered, again.refused, again.replay_identical) == ("re-report", N, 0, True)
    assert (sharper.attack, sharper.answered, dict(sharper.reasons)) == ("sharper-oracle", 0, {"budget-exceeded": N})
    assert all(r.requested == pytest.approx(2 * budget) for r in sim.refusals)  # the ε its own oracles compute
    fast = run_local(lookup(protocol).program, data, lookup(protocol).bind(params), rng=PartyStreams(SEED, N))
    for ledger in sim.ledgers:  # nothing beyond the honest report was booked
        assert ledger == fast.ledger and ledger.total("sequential") <= budget * (1 + 1e-9)
    assert np.array_equal(sim.result.releases[0].codes, fast.releases[0].codes)
    assert sim.privacy.replays == N * len(fast.ledger)


def test_report_attacks_need_a_report_phase(data) -> None:
    with pytest.raises(ConfigurationError, match="re-report needs a phase of frequency-oracle reports"):
        simulate(data, "RR-Independent", seed=SEED, timeout=5.0, p=0.5, attacks=("re-report",))
