"""The default scenario ``local_anonymization``: reduced runs on both engines, output files, key facts."""

from __future__ import annotations

import dataclasses

import io
import json
import math
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure

from mprr.errors import ConfigurationError
from mprr.matrices import keep_or_uniform
from mprr.synthetic import DEFAULT_SIZES
from scenarios.cli import main
from scenarios.cost_model import rr_closed_form
from scenarios.plots import CustomPlot, FigureSpec
from mprr.protocols.parameters import RRClustersParameters
from scenarios.local_anonymization import LABELS, check_secure_sum, derive_seeds, protocol_parameters
from scenarios.registry import get, load
from scenarios.runner import run

PNG = b"\x89PNG\r\n\x1a\n"
SMALL = {"n": 300, "queries": 40}
PAPER = {"p": 0.7}  # the papers' per-attribute setting (the budget tests below use epsilon)


def _drawn(spec: FigureSpec) -> MplFigure:
    """The matplotlib figure a custom figure specification draws (to inspect, not to save)."""
    assert isinstance(spec, CustomPlot)
    fig = MplFigure(figsize=spec.size)
    FigureCanvasAgg(fig)
    spec.draw(fig)
    return fig


def _run(tmp_path: Path, engine: str, **extra: object) -> dict:
    out = tmp_path / engine
    run("local_anonymization", out_dir=out, engine=engine, parameters={**SMALL, **extra})
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    base = tmp_path_factory.mktemp("la")
    return {engine: (base / engine, _run(base, engine, **PAPER)) for engine in ("actors", "fast")}


def test_output_files_and_keys(both: dict[str, tuple[Path, dict]]) -> None:
    out, doc = both["actors"]
    assert doc["scenario"] == "local_anonymization" and doc["engine"] == "actors" and doc["seed"] == 1
    for key in ("parameters", "metrics", "privacy", "traffic", "tables", "figures", "versions"):
        assert key in doc
    assert set(doc["metrics"]["relative_error"]) == set(LABELS)
    assert {"comparison", "clusters", "privacy_by_policy", "traffic_by_phase"} <= set(doc["tables"])
    assert set(doc["figures"]) == {"query_errors.png", "dependence.png", "epsilon_by_phase.png",
                                   "traffic_by_phase.png"}
    for name in doc["figures"]:
        assert (out / name).read_bytes()[:8] == PNG
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# Local anonymization") and "## Accuracy, privacy and cost per protocol" in report
    assert "## Privacy spent per party, by composition policy" in report
    # the fast path sends no messages: no traffic section, no traffic figure
    _, fast = both["fast"]
    assert fast["traffic"] == {} and "traffic_by_phase.png" not in fast["figures"]
    # where the parties lived, and who counted their traffic
    assert doc["provenance"]["runtime"] == {"runtime": "memory", "shards": 1} and "runtime" not in fast["provenance"]
    assert "| runtime | memory (one process) |" in report and "counted by the in-memory network" in report
    assert "wire" not in doc["tables"]


def test_same_seed_same_numbers_on_both_engines(both: dict[str, tuple[Path, dict]]) -> None:
    """The actor simulator replays the fast path's per-party streams: identical releases ⇒
    identical clusters, estimates, query errors and ε (exact equality, not a tolerance)."""
    actors, fast = both["actors"][1]["metrics"], both["fast"][1]["metrics"]
    assert actors["clusters_found"] == fast["clusters_found"]
    for label in LABELS:
        assert actors["relative_error"][label]["median"] == fast["relative_error"][label]["median"]
        assert actors["relative_error"][label]["per_run_median"] == fast["relative_error"][label]["per_run_median"]
    for base in ("RR-Clusters", "RR-Independent"):
        a, f = both["actors"][1]["privacy"][base], both["fast"][1]["privacy"][base]
        for key in ("policies", "phases", "beta", "entropy_bits", "releases", "parties", "refusals"):
            assert a[key] == f[key], (base, key)
        # the actors count the replayed singleton clusters (each party resends its phase-1 value);
        # the fast path has no requests to count
        singletons = sum(len(c) == 1 for c in actors["clusters_found"])
        assert f["replays"] is None and a["replays"] == (SMALL["n"] * singletons if base == "RR-Clusters" else 0)


def test_traffic_equals_closed_form(both: dict[str, tuple[Path, dict]]) -> None:
    """Main paper 4.1: the controller sends O(nm), each party O(m); exact counts from the codec."""
    doc = both["actors"][1]
    n, m = SMALL["n"], len(DEFAULT_SIZES)
    ind = doc["traffic"]["RR-Independent"]
    closed = rr_closed_form("RR-Independent", n, m)
    # hand count: request 5 + 8 + (4+10) + 2·(4 + 8·12) + (4 + 8·19) + (4 + 8·12) = 483 B,
    # reply 5 + 8 + (10 + 8·8) + 4 = 91 B
    assert (closed.messages, closed.bytes) == (2 * n, n * (483 + 91))
    assert (ind["messages"], ind["bytes"], ind["rounds"]) == (closed.messages, closed.bytes, 2)
    assert ind["party_sent_max"] == {"messages": 1, "bytes": 91}
    assert ind["controller_sent"] == {"messages": n, "bytes": n * 483}
    clusters = doc["metrics"]["clusters_found"]
    cl = rr_closed_form("RR-Clusters", n, m, clusters=clusters)
    got = doc["traffic"]["RR-Clusters"]
    assert (got["messages"], got["bytes"], got["rounds"]) == (cl.messages, cl.bytes, cl.rounds) == (4 * n, cl.bytes, 4)
    assert got["equals_closed_form"] and ind["equals_closed_form"]
    view = doc["traffic"]["controller_view"]["RR-Clusters"]
    assert view["kinds"] == ["RandomizedValues"] and view["messages"] == 2 * n


def test_epsilon_per_party_is_the_sum_of_attribute_epsilons(both: dict[str, tuple[Path, dict]]) -> None:
    attribute_eps = [keep_or_uniform(r, 0.7).epsilon for r in DEFAULT_SIZES]
    eps = math.fsum(attribute_eps)
    for engine in ("actors", "fast"):
        privacy = both[engine][1]["privacy"]
        assert set(privacy["RR-Independent"]["policies"]) == {"sequential", "parallel", "unlinkable-pairs"}
        ind = privacy["RR-Independent"]["policies"]["sequential"]["epsilon"]
        assert ind["min"] == pytest.approx(eps, rel=1e-12) and ind["max"] == pytest.approx(eps, rel=1e-12)
        assert ind["count"] == SMALL["n"]
        # one attribute per release, all disjoint: parallel composition gives the largest attribute ε
        par = privacy["RR-Independent"]["policies"]["parallel"]["epsilon"]["median"]
        assert par == pytest.approx(max(attribute_eps), rel=1e-12)
        clusters = privacy["RR-Clusters"]["policies"]["sequential"]
        # phase 1 (4.1) spends Σ ε_A; each cluster of ≥ 2 attributes spends its attributes' ε again
        assert clusters["by_phase"]["dependence"]["median"] == pytest.approx(eps, rel=1e-12)
        found = both[engine][1]["metrics"]["clusters_found"]
        cluster_eps = math.fsum(attribute_eps[a] for c in found if len(c) >= 2 for a in c)
        assert clusters["by_phase"]["clusters"]["median"] == pytest.approx(cluster_eps, rel=1e-12)
        assert clusters["epsilon"]["median"] == pytest.approx(eps + cluster_eps, rel=1e-12)
        assert clusters["epsilon"]["min"] == clusters["epsilon"]["max"]  # every party spends the same
        # β of keep-or-uniform(p = 0.7) over r categories: H(row) / log2 r, per released matrix
        beta = privacy["RR-Independent"]["beta"]
        assert beta["min"] == pytest.approx(min(keep_or_uniform(r, 0.7).beta for r in DEFAULT_SIZES), rel=1e-12)
        assert beta["max"] == pytest.approx(max(keep_or_uniform(r, 0.7).beta for r in DEFAULT_SIZES), rel=1e-12)
        assert privacy["RR-Clusters"]["no_dp_guarantee"] is False and privacy["RR-Clusters"]["refusal_count"] == 0


def test_cli_prints_the_summary(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", "local_anonymization", "--out", str(tmp_path), "--engine", "fast",
                 "--set", "n=200", "--set", "queries=20", "-q"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    text = out.getvalue()
    for needle in ("count-query relative error", "RR-Clusters", "RR-Independent",
                   "ε per respondent (sequential composition", "labelled alternatives, not record-level", "β (entropy rate / log2 r",
                   "traffic: none on the fast path", "wall time"):
        assert needle in text
    assert (tmp_path / "query_errors.png").read_bytes()[:8] == PNG


def test_default_engine_is_actors_and_runs_repeat() -> None:
    spec = get("local_anonymization")
    assert spec.engines[0] == "actors" and "fast" in spec.engines
    data1, queries1, runs1 = derive_seeds(1, 3)
    assert derive_seeds(1, 3) == (data1, queries1, runs1)
    assert len({r["RR-Clusters"] for r in runs1}) == 3


def test_several_runs_pool_their_errors(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    run("local_anonymization", out_dir=out, engine="fast", runs=3, parameters={"n": 200, "queries": 10})
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["runs"] == 3
    assert len(doc["metrics"]["clusters_found_per_run"]) == 3
    assert len(doc["metrics"]["relative_error"]["RR-Clusters"]["per_run_median"]) == 3
    # the pooled median comes with its bootstrap interval over whole runs, in the metrics, table and summary
    for label, q in doc["metrics"]["relative_error"].items():
        low, high = q["median_interval"]
        assert low <= q["median"] <= high and min(q["per_run_median"]) <= low and high <= max(q["per_run_median"]), label
    row = doc["tables"]["comparison"]["rows"][0]
    low, high = doc["metrics"]["relative_error"]["RR-Clusters"]["median_interval"]
    assert row["median 95% interval"] == f"{low:.2%}–{high:.2%}"
    assert f"RR-Clusters {row['median rel. error']:.2%} [{low:.1%}–{high:.1%}]" in (out / "report.md").read_text(encoding="utf-8")


def test_bad_parameters_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"give exactly one of p, epsilon_per_attribute, epsilon \(per "
                                                 r"respondent\) or matrices for the attribute matrices, got "
                                                 r"\['p', 'epsilon'\]"):
        protocol_parameters({"p": 0.5, "epsilon": 1.0, "epsilon_per_attribute": None, "postprocess": "clip-rescale",
                         "Tv": 10, "Td": 0.1, "dependence": "4.1", "max_cells": 4096, "discovery_share": 0.5})
    with pytest.raises(ConfigurationError, match="parameters.secure_sum must be one of the secure-sum engines 'paper', 'paper-per-combination', 'graph'"):
        run("local_anonymization", out_dir=tmp_path, parameters={"n": 50, "secure_sum": "carrier-pigeon"})
    with pytest.raises(ConfigurationError, match="parameters.n must be an integer >= 2"):
        run("local_anonymization", out_dir=tmp_path, parameters={"n": 1})


def test_secure_sum_without_a_secure_sum_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"parameters\.secure_sum = 'masked' has no effect with "
                                                 r"parameters\.dependence = '4\.1' \(.*no secure sum runs\); set "
                                                 r"dependence to '4\.2' or '4\.3', or drop secure_sum"):
        run("local_anonymization", out_dir=tmp_path, parameters={"n": 50, "secure_sum": "masked"})
    config, spec = load("local_anonymization")
    # the shipped file's secure_sum = "graph" with its 4.1: no setting of the run
    check_secure_sum(config, "4.1")
    given = config.with_overrides(parameters={"secure_sum": "masked", "dependence": "4.3"}, schema=spec.schema)
    check_secure_sum(given, "4.3")


def test_epsilon_per_attribute_and_dependence_43_on_the_fast_path(tmp_path: Path) -> None:
    out = tmp_path / "eps"
    run("local_anonymization", out_dir=out, engine="fast",
        parameters={"n": 200, "queries": 10, "epsilon_per_attribute": 1.0, "dependence": "4.3"})
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    m = len(DEFAULT_SIZES)
    ind = doc["privacy"]["RR-Independent"]["policies"]["sequential"]["epsilon"]["median"]
    assert ind == pytest.approx(m * 1.0)
    # 4.3 releases every pair: sequential composition charges each attribute m − 1 times ...
    policies = doc["privacy"]["RR-Clusters"]["policies"]
    assert policies["sequential"]["by_phase"]["dependence"]["median"] == pytest.approx((m - 1) * m * 1.0)
    # ... while the pairs are unlinkable (secure sum): each attribute counts once (main paper 4.3)
    assert policies["unlinkable-pairs"]["by_phase"]["dependence"]["median"] == pytest.approx(m * 1.0)


@pytest.mark.slow  # ~3 s each: two scenario runs with a secure sum among the actors
@pytest.mark.parametrize(("dependence", "secure_sum"), [("4.2", "graph"), ("4.3", "masked-sparse")])
def test_secure_sum_dependence_on_actors_matches_the_fast_path(tmp_path: Path, dependence: str,
                                                               secure_sum: str) -> None:
    """4.2 / 4.3 through a secure sum in the actor simulator: the controller gets the same tallies
    as the fast path computes centrally, so the same clusters, errors and ε; traffic = closed form."""
    params = {"n": 80, "queries": 10, "dependence": dependence, "secure_sum": secure_sum, "degree": 4, **PAPER}
    docs = {}
    for engine in ("actors", "fast"):
        out = tmp_path / engine
        run("local_anonymization", out_dir=out, engine=engine, parameters=params)
        docs[engine] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    a, f = docs["actors"]["metrics"], docs["fast"]["metrics"]
    assert a["clusters_found"] == f["clusters_found"]
    assert a["relative_error"]["RR-Clusters"]["median"] == f["relative_error"]["RR-Clusters"]["median"]
    assert docs["actors"]["privacy"]["RR-Clusters"]["policies"] == docs["fast"]["privacy"]["RR-Clusters"]["policies"]
    assert docs["actors"]["traffic"]["RR-Clusters"]["equals_closed_form"] is True
    section = docs["actors"]["privacy"]["RR-Clusters"]
    eps = section["policies"]["sequential"]["epsilon"]["median"]
    assert (eps == "inf") if dependence == "4.2" else (eps != "inf")
    assert section["no_dp_guarantee"] is (dependence == "4.2")
    assert (section["exact_releases"] > 0) is (dependence == "4.2")


def test_infinite_epsilon_is_drawn_and_said_and_budgets_are_compared_honestly(tmp_path: Path) -> None:
    out = tmp_path / "inf"
    outcome = run("local_anonymization", out_dir=out, engine="fast",
                  parameters={"n": 150, "queries": 20, "dependence": "4.2", **PAPER})
    figures = {f.filename: f for f in outcome.result.figures}
    spec = figures["epsilon_by_phase.png"]
    assert "A hatched segment that runs off the top (arrow, ∞) is ε = ∞" in spec.caption
    assert (out / "epsilon_by_phase.png").read_bytes()[:8] == PNG
    # ∞ is drawn so that it cannot be read as a number: its segment runs past the top of the
    # axes (no top edge, no top spine), an arrow and ∞ above it; the finite phases below it
    ax = _drawn(spec).axes[0]
    top = ax.get_ylim()[1]
    hatched = [b for b in ax.patches if b.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_y() + hatched[0].get_height() > 1.5 * top
    assert hatched[0].get_y() > 0 and not ax.spines["top"].get_visible()
    texts = [t.get_text() for t in ax.texts]
    assert "∞" in texts and " total ∞" in texts and any(t.startswith("total ") and t[6].isdigit() for t in texts)
    # the query-error boxes name each protocol's ε; the dependence panels their colour scale and protocol
    ticks = [t.get_text() for t in _drawn(figures["query_errors.png"]).axes[0].get_xticklabels()]
    assert ticks[0] == "RR-Clusters\nε = ∞" and ticks[2].startswith("RR-Independent\nε = ") and ticks[2][-1].isdigit()
    dep = _drawn(figures["dependence.png"])
    assert [a.get_ylabel() for a in dep.axes[1::2]] == ["dependence (|Pearson| / Cramér's V)"] * 2  # both colour bars
    assert dep.axes[2].get_title() == "controller's estimate\n(RR-Clusters, dependence 4.2, run 1)"
    summary = "\n".join(outcome.result.summary)
    assert "(ε ∞ per respondent)" in summary and "budgets differ: not a comparison at equal ε" in summary
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.index("## Summary") < report.index("## Accuracy, privacy and cost") < report.index("## Details")
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["parameters"]["p"] == 0.7 and doc["provenance"]["data_source"] == "mprr.synthetic.planted_clusters"
    assert (out / "synthetic_records.csv").read_text(encoding="utf-8").splitlines()[0] == ",".join(
        doc["metrics"]["attributes"])


def test_cluster_domain_above_max_cells_says_lower_tv(tmp_path: Path) -> None:
    code = main(["run", "local_anonymization", "--engine", "fast", "--set", "n=300", "--set", "max_cells=50",
                 "--out", str(tmp_path)], stdout=io.StringIO(), stderr=(err := io.StringIO()))
    assert code == 2
    assert "more than max_cells=50; lower Tv (Algorithm 1 then forms clusters of at most Tv value " \
           "combinations) or raise max_cells (at most 50 now)" in err.getvalue()


@pytest.mark.process
def test_a_tcp_run_says_so_and_shows_its_wire_bytes(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", "local_anonymization", "--runtime", "tcp", "--workers", "2", "--out", str(tmp_path),
                 "--set", "n=200", "--set", "queries=20", "-q"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert "engine actors, runtime tcp (2 worker processes, spawned, TLS on))" in out.getvalue()
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| runtime | tcp (2 worker processes, spawned, TLS on) |" in report
    assert "counted by the in-memory network" not in report
    assert report.count("counted by the router in the controller process (tcp runtime, parties in 2 worker "
                        "processes): the same counts as the in-memory network's") == 2  # table and figure
    assert "## Measured on the wire (tcp runtime, run 1)" in report and report.count("TLS on. Bytes of") == 1
    wire = doc["tables"]["wire"]["rows"]
    assert [row["protocol"] for row in wire] == ["RR-Clusters", "RR-Independent"]
    for row in wire:
        measured = doc["traffic"][row["protocol"]]
        assert row["payload bytes"] == measured["bytes"] + row["party-to-party bytes"]
        # a broadcast's copies and the reply columns' shared layout do not cross: the sockets carry
        # less than the payload, and TLS adds a little (handshakes, record headers, AEAD tags)
        crossed = row["payload bytes"] + row["framing bytes"] + row["control bytes"] - row["not carried bytes"]
        assert row["not carried bytes"] > 0 and crossed < row["socket bytes"] < 1.5 * crossed


def test_an_own_data_report_opens_with_the_file_not_the_demo(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(4)
    csv = tmp_path / "survey.csv"
    pd.DataFrame({"age": rng.choice(["young", "old"], 120), "smoker": rng.choice(["yes", "no"], 120),
                  "region": rng.choice(["N", "S", "E"], 120)}).to_csv(csv, index=False)
    run("local_anonymization", out_dir=tmp_path / "out", engine="fast",
        parameters={"data": str(csv), "queries": 10, "Tv": 6})
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    opening = report.split("\n")[2]
    assert opening.startswith("Your data: survey.csv, 120 records of 3 columns (age, smoker, region); each record "
                              "is a party that anonymizes it locally")
    assert "Default demo" not in report
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert doc["description"] == opening


@pytest.mark.parametrize(("dependence", "share", "engine"),
                         [("4.1", 0.5, "fast"), ("4.1", 0.3, "actors"), ("4.3", 0.5, "fast")])
def test_budget_per_respondent_holds_for_every_protocol(tmp_path: Path, dependence: str, share: float,
                                                        engine: str) -> None:
    """``epsilon`` is the budget of one respondent: every protocol's sequential ledger is at most it,
    dependence phase included, whatever clusters Algorithm 1 forms; the report says so."""
    out = tmp_path / "budget"
    run("local_anonymization", out_dir=out, engine=engine,
        parameters={"n": 150, "queries": 10, "epsilon": 2.0, "dependence": dependence, "discovery_share": share})
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for base in ("RR-Clusters", "RR-Independent"):
        spent = doc["privacy"][base]["policies"]["sequential"]["epsilon"]["max"]
        assert spent <= 2.0 * (1 + 1e-12), (base, spent)
    assert doc["privacy"]["RR-Independent"]["policies"]["sequential"]["epsilon"]["max"] == pytest.approx(2.0)
    by_phase = doc["privacy"]["RR-Clusters"]["policies"]["sequential"]["by_phase"]
    assert by_phase["dependence"]["max"] == pytest.approx(2.0 * share)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "ε = 2 per respondent" in report
    if engine == "actors":  # the budget's matrices are counted by the closed form too
        assert doc["traffic"]["RR-Clusters"]["equals_closed_form"] and doc["traffic"]["RR-Independent"]["equals_closed_form"]


def test_budget_with_exact_dependences_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"dependence='4.2' releases exact pair values \(ε = ∞, no DP "
                                                 r"guarantee\) and cannot meet a budget of epsilon = 4.0 per respondent"):
        run("local_anonymization", out_dir=tmp_path, engine="fast", parameters={"n": 50, "dependence": "4.2"})


def test_identical_cluster_rows_are_collapsed_into_run_ranges() -> None:
    from scenarios.anonymization_report import _cluster_rows

    found = ["{A1,A2}"] * 18 + ["{A1,A2,A3}", "{A1,A2}"]
    ok: list[bool | None] = [True] * 18 + [False, True]
    assert _cluster_rows(found, ok) == [("1–18, 20", 19, "{A1,A2}", True), ("19", 1, "{A1,A2,A3}", False)]
    assert _cluster_rows(["{a,b}"] * 3, [None] * 3) == [("1–3", 3, "{a,b}", None)]


def test_rr_independent_joint_is_said_to_be_the_product_of_its_marginals(both: dict[str, tuple[Path, dict]]) -> None:
    _, doc = both["fast"]
    assert "its joint estimate, from which its queries are answered, is the product of its marginal estimates" \
        in doc["tables"]["comparison"]["caption"]
    clusters = doc["tables"]["clusters"]
    assert clusters["columns"] == ["runs", "count", "clusters", "= planted"] and clusters["rows"][0]["runs"] == "1"


def test_the_protocol_fields_derived_from_the_parameter_object_accept_what_they_did() -> None:
    from mprr.parameters import PerAttribute
    from scenarios.config import Choice, Field, Float, Int
    from scenarios.local_anonymization import POSTPROCESS, SCHEMA

    unit = Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True)
    positive = Float(min=0.0, min_exclusive=True)
    # the fields as the scenario wrote them before they were derived (type, default, help)
    written = {
        "discovery_share": Field("discovery_share", unit, 0.5,
                                 "with epsilon: share of the budget RR-Clusters spends on its dependence phase"),
        "Tv": Field("Tv", Int(min=1), 100, "Algorithm 1: largest number of value combinations of a cluster"),
        "Td": Field("Td", Float(min=0.0, max=1.0), 0.2, "Algorithm 1: smallest dependence to merge"),
        "dependence": Field("dependence", Choice(("4.1", "4.2", "4.3")), "4.1",
                            "how RR-Clusters gets dependences (main paper 4.1, 4.2 or 4.3)"),
        "postprocess": Field("postprocess", Choice(POSTPROCESS), "clip-rescale",
                             "post-processing of the eq. (2) estimates (paper: clip-rescale)"),
    }
    types = {"epsilon": (positive, None), "p": (PerAttribute(unit), None),
             "epsilon_per_attribute": (PerAttribute(positive), None), "max_cells": (Int(min=2, max=65_536), 4096)}
    derived = {f.key: f for f in SCHEMA.fields()}
    for key, field in written.items():
        assert dataclasses.replace(derived[key], owner=None) == field, key
    # the fields taken unchanged are the object's to check; those the scenario narrows are its own
    assert {k for k, f in derived.items() if f.owner is RRClustersParameters} == {
        "epsilon", "discovery_share", "p", "epsilon_per_attribute", "Td", "dependence"}
    for key, (kind, default) in types.items():
        assert (derived[key].type, derived[key].default) == (kind, default), key
    assert SCHEMA.validate({})["secure_sum"] == "graph"  # any registered engine, the shipped default


@pytest.mark.parametrize("engine", ["fast", "actors"])
def test_p_per_attribute_is_the_protocols_and_its_count_is_checked_against_the_attributes(
        tmp_path: Path, engine: str) -> None:
    """p (and epsilon_per_attribute) take what the protocols take: one value for every attribute or
    one per attribute, checked once, by the parameter object; the count, against the data's attributes."""
    sizes = [3, 2, 4]
    out = run("local_anonymization", out_dir=tmp_path / engine, engine=engine,
              parameters={"n": 60, "queries": 5, "sizes": sizes, "clusters": [[0, 1]], "p": [0.5, 0.6, 0.7]})
    assert list(out.result.parameters["p"]) == [0.5, 0.6, 0.7]
    with pytest.raises(ConfigurationError, match=r"^p must give one value per attribute \(3\), got 2 values$"):
        run("local_anonymization", out_dir=tmp_path / "bad", engine=engine,
            parameters={"n": 60, "queries": 5, "sizes": sizes, "clusters": [[0, 1]], "p": [0.5, 0.6]})
    with pytest.raises(ConfigurationError, match=r"parameters\.p\[1\] must be a finite number > 0 and < 1, got 1"):
        run("local_anonymization", out_dir=tmp_path / "bad", engine=engine, parameters={"p": [0.5, 1]})
