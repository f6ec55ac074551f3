"""parties.simulate's result: what a run reports (clusters, replays, privacy summary, the JSON
report, its repr), and what the parties' accountants book for the secure dependence methods.

That the actors release what the fast path releases, for every protocol, dependence method
and engine, is the equivalence matrix's (``test_equivalence.py``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mprr.matrices import keep_or_uniform
from mprr.privacy import summarize
from mprr.synthetic import planted_clusters
from parties.controller import ReleaseRefused
from parties.simulate import simulate
from tests.parties.simulate_data import N, SECURE_N, SEED, data, small  # noqa: F401  (fixtures)


def test_rr_clusters_recovers_planted_clusters_and_replays_singletons(data) -> None:
    sim = simulate(data, "clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.4)
    result = sim.result
    assert result.clusters == ((0, 1, 2), (3, 4), (5,), (6,), (7,))  # the planted clusters
    singles = [j for j, u in enumerate(result.releases[1].units) if len(u) == 1]
    assert singles, "the planted data leave singleton clusters"
    dep, rel = result.releases
    for j in singles:  # replayed: the phase-1 value of that attribute, no new draw
        (a,) = rel.units[j]
        assert np.array_equal(rel.codes[:, j], dep.codes[:, a])
    draws = {p.draws for p in sim.parties}
    assert draws == {dep.codes.shape[1] + len(rel.units) - len(singles)}


def test_different_seeds_release_different_data(data) -> None:
    a = simulate(data, "RR-Independent", seed=1, timeout=5.0, p=0.5).result.releases[0].codes
    b = simulate(data, "RR-Independent", seed=2, timeout=5.0, p=0.5).result.releases[0].codes
    assert not np.array_equal(a, b)



def test_report_is_json_serializable(data) -> None:
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1)
    report = json.loads(json.dumps(sim.to_dict()))
    assert report["protocol"]["protocol"] == "RR-Clusters"
    assert report["traffic"]["messages"] == 4 * N
    assert report["privacy"]["parties"] == N and report["degraded"] is False
    assert report["options"]["seed"] == SEED and report["options"]["budget"] == "inf"
    assert sim.wall_time > 0 and sim.result.timings["wall"] == sim.wall_time
    assert sim.privacy.epsilon.max == pytest.approx(sim.result.epsilon("sequential"))
    parallel = summarize([party.accountant for party in sim.parties], "parallel")
    assert parallel.policy.value == "parallel" and parallel.epsilon.max <= sim.privacy.epsilon.max


def test_privacy_summary_matches_the_result_ledger(data) -> None:
    sim = simulate(data, "RR-Independent", seed=SEED, timeout=5.0, p=0.6)
    eps = sum(keep_or_uniform(s, 0.6).epsilon for s in data.sizes)
    assert sim.privacy.epsilon.min == pytest.approx(eps) and sim.privacy.epsilon.max == pytest.approx(eps)
    assert sim.privacy.releases == N * data.m and sim.privacy.refusals == {}
    assert math.isclose(sim.result.epsilon(), eps)



def test_exact_pairs_carry_no_dp_guarantee(small) -> None:
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2")
    assert sim.privacy.no_dp_guarantee and sim.privacy.exact_releases == SECURE_N * len(sim.result.releases[0].units)
    with pytest.raises(ReleaseRefused, match=r"exact release: no DP guarantee") as info:
        simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2", budget=100.0)
    assert info.value.phase == "dependence" and len(info.value.refusals) == SECURE_N


def test_randomized_pairs_count_once_per_attribute_under_unlinkable_pairs(small) -> None:
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.3",
                   engine="graph", policy="unlinkable-pairs")
    eps = sim.result.parameters["attribute_epsilons"]
    by_phase = sim.ledgers[0].by_phase("unlinkable-pairs")
    # main paper 4.3: each attribute counted once, at its largest share of a pair matrix's own
    # ε (ε_i + ε_j, split equally: the party books nothing the controller claims)
    m = small.m
    split = sum(max((eps[a] + eps[b]) / 2 for b in range(m) if b != a) for a in range(m))
    assert by_phase["dependence"] == pytest.approx(split) and split >= sum(eps) - 1e-12
    assert sim.ledgers[0].by_phase("sequential")["dependence"] == pytest.approx((small.m - 1) * sum(eps))



def test_repr_is_one_short_line(data) -> None:
    sim = simulate(data, "RR-Independent", seed=SEED, p=0.7)
    text = repr(sim)
    assert text.startswith("SimulationResult('RR-Independent', n=240, messages=480, bytes=")
    assert "\n" not in text and len(text) < 200
