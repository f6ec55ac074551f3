"""The privacy section of run reports: fast path, actors (4.2 exact releases, a malicious controller),
hand-built ledgers with known values, the Markdown table and the summary lines."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mprr.privacy import summarize
from mprr.errors import ConfigurationError
from mprr.matrices import keep_or_uniform
from mprr.privacy import Ledger, Release
from mprr.protocols import rr_clusters, rr_independent
from mprr.streams import PartyStreams
from mprr.synthetic import DEFAULT_SIZES, planted_clusters
from parties.simulate import simulate
from mprr.protocols.registry import lookup
from scenarios.cost_model import simulate_options
from scenarios.privacy_report import (
    POLICIES,
    PrivacyRecord,
    privacy_section,
    privacy_summary_lines,
    privacy_table,
)
from scenarios.report import ScenarioResult, markdown_report, to_jsonable

P = 0.7
M = len(DEFAULT_SIZES)
ATTRIBUTE_EPS = [keep_or_uniform(r, P).epsilon for r in DEFAULT_SIZES]
ATTRIBUTE_BETA = [keep_or_uniform(r, P).beta for r in DEFAULT_SIZES]


def _data(n: int):
    return planted_clusters(n, rng=np.random.default_rng(5)).dataset


@pytest.fixture(scope="module")
def small():
    return _data(40)


@pytest.fixture(scope="module")
def attacked(small):
    """RR-Independent among 40 actors with a budget of exactly Σ ε_A, then a curious controller."""
    budget = math.fsum(ATTRIBUTE_EPS) + 1e-9
    return simulate(small, "RR-Independent", seed=3, p=P, budget=budget,
                    attacks=("re-request", "finer-matrix", "unannounced-cluster", "extra-phase"))


@pytest.fixture(scope="module")
def exact(small):
    """RR-Clusters with dependence 4.2: true pairs into a secure sum (ε = ∞)."""
    params = {"p": P, "Tv": 100, "Td": 0.2, "dependence": "4.2"}
    options = simulate_options(lookup("RR-Clusters").plan(small.schema, params), "graph", small.n, 4, 30.0)
    return simulate(small, "RR-Clusters", seed=3, **params, **options)


# --------------------------------------------------------------------------- fast path


def test_fast_path_section_matches_the_protocol_result(small) -> None:
    result = rr_clusters(small, rng=PartyStreams(3, small.n), p=P, Tv=100, Td=0.2)
    section = privacy_section(result)
    assert (section["protocol"], section["engine"], section["runs"], section["parties"]) == (
        "RR-Clusters", "fast", 1, small.n)
    assert section["releases"] == small.n * len(result.ledger) and section["exact_releases"] == 0
    assert section["no_dp_guarantee"] is False and section["replays"] is None
    assert section["refusals"] == {} and section["refusal_count"] == 0
    assert list(section["policies"]) == list(POLICIES)
    for policy in POLICIES:
        got = section["policies"][policy]
        # every party holds the fast path's one ledger: min = median = max = ProtocolResult.epsilon
        assert got["epsilon"] == {"min": result.epsilon(policy), "median": result.epsilon(policy),
                                  "max": result.epsilon(policy), "count": small.n}
        assert {ph: s["median"] for ph, s in got["by_phase"].items()} == result.epsilon_by_phase(policy)
        assert got["parties_without_guarantee"] == 0
    assert list(section["phases"]) == ["dependence", "clusters"]
    # phase 1 (4.1) randomizes every attribute with its keep-or-uniform matrix (β per matrix)
    dep = section["phases"]["dependence"]
    assert dep["releases"] == small.n * M
    assert dep["beta"]["min"] == pytest.approx(min(ATTRIBUTE_BETA), rel=1e-12)
    assert dep["beta"]["max"] == pytest.approx(max(ATTRIBUTE_BETA), rel=1e-12)
    betas = [r.beta for r in result.ledger]
    assert section["beta"]["min"] == min(betas) and section["beta"]["max"] == max(betas)
    json.dumps(section, allow_nan=False)  # strict JSON as it is


def test_independent_policies_known_values(small) -> None:
    """RR-Independent: m disjoint single-attribute releases, linkable.  sequential = Σ ε_A
    (RR-Ind-Joint Theorem 2), parallel = max ε_A (disjoint data), unlinkable-pairs = sequential
    (nothing is unlinkable)."""
    section = privacy_section(rr_independent(small, rng=PartyStreams(1, small.n), p=P))
    eps = section["policies"]
    assert eps["sequential"]["epsilon"]["median"] == pytest.approx(math.fsum(ATTRIBUTE_EPS), rel=1e-12)
    assert eps["parallel"]["epsilon"]["median"] == pytest.approx(max(ATTRIBUTE_EPS), rel=1e-12)
    assert eps["unlinkable-pairs"]["epsilon"] == eps["sequential"]["epsilon"]


def test_runs_are_pooled_and_reproducible(small) -> None:
    runs = [rr_independent(small, rng=PartyStreams(seed, small.n), p=P) for seed in (1, 2)]
    pooled = privacy_section(runs)
    assert pooled["runs"] == 2 and pooled["parties"] == 2 * small.n
    assert pooled["policies"]["sequential"]["epsilon"]["count"] == 2 * small.n
    again = privacy_section([rr_independent(small, rng=PartyStreams(seed, small.n), p=P) for seed in (1, 2)])
    assert again == pooled


# --------------------------------------------------------------------------- hand-built ledgers


def _release(attributes: tuple[str, ...], eps: float, beta: float, phase: str) -> Release:
    return Release(attributes, eps, entropy_bits=2 * beta, beta=beta, phase=phase)


def test_hand_built_ledgers_give_exact_min_median_max() -> None:
    """Three parties spending 1, 2 and 5 (sequential); one of them has two disjoint releases in
    phase b, which parallel composition counts by max."""
    a1 = _release(("x",), 1.0, 0.5, "a")
    b1, b2 = _release(("x",), 1.0, 0.25, "b"), _release(("y",), 3.0, 0.75, "b")
    ledgers = (Ledger((a1,)), Ledger((a1, b1)), Ledger((a1, b1, b2)))
    record = PrivacyRecord("hand", "actors", ledgers, {"budget-exceeded": 2}, 4)
    section = privacy_section(record)
    assert section["policies"]["sequential"]["epsilon"] == {"min": 1.0, "median": 2.0, "max": 5.0, "count": 3}
    assert section["policies"]["parallel"]["epsilon"] == {"min": 1.0, "median": 2.0, "max": 4.0, "count": 3}
    # a party without a release in a phase spent 0 in it
    assert section["policies"]["sequential"]["by_phase"]["b"] == {"min": 0.0, "median": 1.0, "max": 4.0, "count": 3}
    # β over the 6 ledger entries: 0.5 ×3, 0.25 ×2, 0.75 ×1 → sorted median (0.5 + 0.5) / 2
    assert section["beta"] == {"min": 0.25, "median": 0.5, "max": 0.75, "count": 6}
    assert section["phases"]["b"]["beta"] == {"min": 0.25, "median": 0.25, "max": 0.75, "count": 3}
    assert section["entropy_bits"]["max"] == 1.5
    assert (section["refusals"], section["refusal_count"], section["replays"]) == ({"budget-exceeded": 2}, 2, 4)


def test_bad_inputs_are_rejected(small) -> None:
    a = rr_independent(small, rng=PartyStreams(1, small.n), p=P)
    b = rr_clusters(small, rng=PartyStreams(1, small.n), p=P, Tv=100, Td=0.2)
    with pytest.raises(ConfigurationError, match="must share a protocol, got \\['RR-Clusters', 'RR-Independent'\\]"):
        privacy_section([a, b])
    with pytest.raises(ConfigurationError, match="at least one run"):
        privacy_section([])
    with pytest.raises(ConfigurationError, match="got dict"):
        privacy_section({"epsilon": 1.0})
    with pytest.raises(ConfigurationError, match="policy"):
        privacy_section(a, policies=("serial",))
    with pytest.raises(ConfigurationError, match="not a privacy_section"):
        privacy_table({"x": {"epsilon": 1.0}})


# --------------------------------------------------------------------------- actor simulations


def test_actors_section_equals_the_fast_path_on_the_same_seed(small) -> None:
    sim = simulate(small, "RR-Clusters", seed=3, p=P, Tv=100, Td=0.2)
    fast = rr_clusters(small, rng=PartyStreams(3, small.n), p=P, Tv=100, Td=0.2)
    actors, expected = privacy_section(sim), privacy_section(fast)
    assert actors["engine"] == "actors"
    for key in ("policies", "phases", "beta", "entropy_bits", "releases", "parties", "no_dp_guarantee"):
        assert actors[key] == expected[key], key
    # each singleton cluster is requested again with its phase-1 matrix: one replay per party
    singletons = sum(len(c) == 1 for c in sim.result.clusters)
    assert actors["replays"] == small.n * singletons and actors["refusals"] == {}
    # the simulator's own summary under each policy agrees
    for policy in POLICIES:
        assert actors["policies"][policy]["epsilon"] == summarize([party.accountant for party in sim.parties], policy).to_dict()["epsilon"]


def test_exact_releases_are_flagged_no_dp_guarantee(small, exact) -> None:
    section = privacy_section(exact)
    pairs = M * (M - 1) // 2
    assert section["no_dp_guarantee"] is True and section["exact_releases"] == small.n * pairs
    assert section["guarantee"].startswith("no DP guarantee") and "4.2" in section["guarantee"]
    assert section["phases"]["dependence"]["no_dp_guarantee"] is True
    assert section["phases"]["clusters"]["no_dp_guarantee"] is False
    # exact releases carry H = 0 bits, β = 0 (true values)
    assert section["phases"]["dependence"]["beta"] == {"min": 0.0, "median": 0.0, "max": 0.0,
                                                       "count": small.n * pairs}
    for policy in POLICIES:
        got = section["policies"][policy]
        assert got["no_dp_guarantee"] is True and got["parties_without_guarantee"] == small.n
        assert got["epsilon"]["max"] == "inf" and got["by_phase"]["dependence"]["median"] == "inf"
        assert got["by_phase"]["clusters"]["max"] != "inf"
    rows = privacy_table([section]).records()
    assert [r["guarantee"] for r in rows] == ["no DP guarantee"] * 3
    assert all(r["ε max"] == math.inf for r in rows)
    eps_line, alternatives = privacy_summary_lines([section])[:2]
    assert "RR-Clusters ∞ (no DP guarantee: exact 4.2 releases)" in eps_line
    assert "parallel (assumes the releases concern disjoint data" in alternatives and "RR-Clusters ∞" in alternatives


def test_malicious_controller_refusals_and_replays_are_visible(small, attacked) -> None:
    """Budget = Σ ε_A: the honest release fits; the finer matrix and the extra phase exceed the
    budget, the unannounced cluster violates the plan, the re-request is replayed."""
    section = privacy_section(attacked)
    n = small.n
    assert section["refusals"] == {"budget-exceeded": 2 * n, "plan-violation": n}
    assert section["refusal_count"] == 3 * n
    assert section["replays"] == n * M  # the re-request: every unit of every party, from its ledger
    # nothing refused was spent: every party is at Σ ε_A, never above its budget
    eps = section["policies"]["sequential"]["epsilon"]
    assert eps["max"] == pytest.approx(math.fsum(ATTRIBUTE_EPS), rel=1e-12) and eps["min"] == eps["max"]
    assert list(section["phases"]) == ["attributes"]  # the refused "extra" phase released nothing
    rows = privacy_table([section]).records()
    assert {r["refusals"] for r in rows} == {f"budget-exceeded {2 * n}, plan-violation {n}"}
    assert {r["replays"] for r in rows} == {n * M}
    beta_line = privacy_summary_lines([section])[-1]
    assert f"RR-Independent refusals budget-exceeded {2 * n}, plan-violation {n}, replays {n * M}" in beta_line


# --------------------------------------------------------------------------- table and summary


def test_markdown_table_rows_are_protocol_by_policy(small, exact) -> None:
    ind = privacy_section(rr_independent(small, rng=PartyStreams(1, small.n), p=P))
    table = privacy_table({"RR-Independent": ind, "RR-Clusters (4.2)": privacy_section(exact)},
                          caption="Two protocols.")
    assert table.key == "privacy_by_policy"
    assert table.columns == ("protocol", "policy", "ε min", "ε median", "ε max", "ε attributes",
                             "ε dependence", "ε clusters", "β min", "β median", "β max", "guarantee",
                             "refusals", "replays")
    assert [(r[0], r[1]) for r in table.rows] == [
        (label, policy) for label in ("RR-Independent", "RR-Clusters (4.2)") for policy in POLICIES]
    first = table.records()[0]
    assert first["ε median"] == pytest.approx(math.fsum(ATTRIBUTE_EPS), rel=1e-12)
    assert first["ε attributes"] == f"{math.fsum(ATTRIBUTE_EPS):.3f}" and first["ε clusters"] is None
    assert first["β min"] == pytest.approx(min(ATTRIBUTE_BETA), rel=1e-12)
    assert first["guarantee"] == "finite ε" and first["replays"] is None
    md = markdown_report(ScenarioResult(name="t", tables=[table]))
    assert "| protocol | policy | ε min | ε median | ε max | ε attributes |" in md
    eps = math.fsum(ATTRIBUTE_EPS)
    assert (f"| RR-Independent | parallel | {max(ATTRIBUTE_EPS):.3f} | {max(ATTRIBUTE_EPS):.3f} | "
            f"{max(ATTRIBUTE_EPS):.3f} | {max(ATTRIBUTE_EPS):.3f} | — | — | {min(ATTRIBUTE_BETA):.3f} |") in md
    assert f"| RR-Independent | sequential | {eps:.3f} |" in md
    assert "| RR-Clusters (4.2) | sequential | ∞ | ∞ | ∞ | — | ∞ |" in md
    assert "Two protocols. ε per party" in md and "no DP guarantee" in md
    json.dumps(to_jsonable(table), allow_nan=False)


def test_per_phase_cells_show_the_spread_when_parties_differ() -> None:
    low, high = _release(("x",), 1.0, 0.5, "a"), _release(("x",), 3.0, 0.5, "a")
    section = privacy_section(PrivacyRecord("hand", "actors", (Ledger((low,)), Ledger((high,))), {}, 0))
    row = privacy_table([section]).records()[0]
    assert row["ε a"] == "2.000 (1.000–3.000)"
    lines = privacy_summary_lines([section])
    assert lines[0] == ("ε per respondent (sequential composition over everything a respondent releases: the "
                        "record-level guarantee): hand 2.00 (1.00–3.00)")
    assert lines[1] == (
        "  labelled alternatives, not record-level guarantees: parallel (assumes the releases concern disjoint "
        "data, which the attributes of one record are not) hand 2.00 (1.00–3.00); unlinkable-pairs (assumes the "
        "secure sums of main paper 4.3 make each pair release unlinkable, counting each attribute once) hand "
        "2.00 (1.00–3.00)")
    assert privacy_summary_lines([section])[2] == (
        "β (entropy rate / log2 r of the released matrices) median [min–max]: hand 0.50 [0.50–0.50]")
