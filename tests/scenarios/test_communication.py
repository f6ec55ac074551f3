"""``communication_cost`` and the closed forms of :mod:`scenarios.cost_model`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mprr.dependence import bivariate_tables
from mprr.errors import ConfigurationError
from mprr.synthetic import planted_clusters
from mprr.protocols.steps import MatrixSpec
from parties.wire.codec import encode
from parties.wire.messages import Ack, RandomizedValues
from parties.wire.requests import ReleaseRequest, SecureRelease, SecureSumStart
from parties.secure.messages import PartialSum, ShareVector
from scenarios.cost_model import (
    ACK_BYTES,
    ENGINE_KEYS,
    closed_form,
    element_bytes,
    measure_rr,
    measure_secure_sum,
    pair_cells,
    pair_indicators,
    randomized_values_bytes,
    release_request_bytes,
    rr_closed_form,
    secure_release_bytes,
    secure_start_bytes,
)
from scenarios.runner import run

PNG = b"\x89PNG\r\n\x1a\n"


def test_paper_engine_closed_form_by_hand() -> None:
    """n = 4, L = 10, modulus 5 ⇒ uint8 cells.  A ShareVector / PartialSum is
    5 (header) + 4 + 16 (session) + 8 (combination) + 10 + 10 (array) = 53 bytes; each party
    sends 3 shares and 4 broadcasts (3 peers + the controller)."""
    c = closed_form("paper", 4, 10)
    assert (c.party_messages, c.party_bytes) == (7, 7 * 53)
    assert (c.messages, c.bytes, c.rounds) == (28, 28 * 53, 2)
    assert (c.controller_messages, c.controller_bytes) == (0, 0)
    per = closed_form("paper-per-combination", 4, 10)
    assert (per.messages, per.bytes, per.rounds) == (280, 280 * 44, 20)  # 1 cell: 44 bytes


def test_closed_form_message_sizes_equal_the_codec() -> None:
    session = "0" * 16
    for n, L in ((4, 10), (300, 7), (70_000, 3)):
        b = element_bytes(n + 1)
        vec = np.zeros(L, dtype={1: np.uint8, 2: np.uint16, 4: np.uint32}[b])
        size = len(encode(ShareVector(session, -1, vec)))
        assert size == len(encode(PartialSum(session, -1, vec)))
        if n < 100:  # (counted: O(n^2) messages; n = 256 in tests/scenarios/test_cost_model.py)
            assert closed_form("paper", n, L).party_bytes == (2 * n - 1) * size
    request = ReleaseRequest.build(3, "attributes", [(0,), (1,), (2,)], [MatrixSpec.keep_or_uniform(0.7)] * 3)
    assert release_request_bytes("attributes", [(0,), (1,), (2,)], ["keep-or-uniform"] * 3, [1, 1, 1]) \
        == len(encode(request))
    cl = ReleaseRequest.build(9, "clusters", [(0, 2), (1,)],
                              [MatrixSpec.cluster_optimal(2.0), MatrixSpec.grr(1.0)])
    assert release_request_bytes("clusters", [(0, 2), (1,)], ["cluster-optimal", "grr"], [1, 1]) == len(encode(cl))
    assert randomized_values_bytes(5) == len(encode(RandomizedValues(1, np.arange(5, dtype=np.int64))))
    pairs = ((0, 1), (0, 2), (1, 2))
    exact = SecureRelease(request_id=1, phase="dependence", session="dependence/1", plan=pairs, units=pairs,
                          exact=True)
    assert secure_release_bytes("dependence", "dependence/1", pairs, exact=True) == len(encode(exact))
    rr = SecureRelease(request_id=1, phase="dependence", session="dependence/1", plan=pairs, units=pairs,
                       exact=False, families=("cluster-optimal",) * 3, params=((2.0,),) * 3)
    assert secure_release_bytes("dependence", "dependence/1", pairs, exact=False) == len(encode(rr))
    assert ACK_BYTES == len(encode(Ack(4)))
    assert secure_start_bytes("dependence/1") == len(encode(SecureSumStart(1, "dependence/1", "paper", ((0, 8),))))
    assert secure_start_bytes("dependence/1", "masked", 2) == \
        len(encode(SecureSumStart(1, "dependence/1", "masked", ((0, 3), (4, 8)))))


@pytest.mark.parametrize("m", [2, 5, 8])
def test_the_rr_phases_message_sizes_equal_the_hand_formulas_of_docs_cost_model(m: int) -> None:
    """The sizes rr_closed_form reads from the codec, against docs/cost_model.md's formulas derived
    by hand from the codec's field sizes (section 1), independently."""
    singletons = [(j,) for j in range(m)]
    clusters = [tuple(range(0, m, 2)), *[(j,) for j in range(1, m, 2)]]
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    for phase, units, families in (("attributes", singletons, ["keep-or-uniform"] * m),
                                   ("clusters", clusters, ["cluster-optimal"] + ["grr"] * (len(clusters) - 1))):
        l, a = len(units), sum(map(len, units))  # 5 + 8 + (4 + |φ|) + 2(4 + Σ_u (4 + 8|u|)) + (4 + Σ_j (4 + f_j)) + (4 + 12l)
        assert release_request_bytes(phase, units, families, [1] * l) == \
            33 + len(phase) + 24 * l + 16 * a + sum(map(len, families))
    assert randomized_values_bytes(m) == 27 + 8 * m
    P, S = len(pairs), len("dependence/1")  # 60 + 40P (4.2) and 60 + 71P (4.3) at S = 12, |φ| = 10
    assert secure_release_bytes("dependence", "dependence/1", pairs, exact=True) == 5 + 8 + 14 + (4 + S) \
        + 2 * (4 + 20 * P) + 1 + 4 + 4 == 60 + 40 * P
    assert secure_release_bytes("dependence", "dependence/1", pairs, exact=False) == 60 + 40 * P \
        + (4 + P * (4 + len("cluster-optimal"))) + (4 + 12 * P) - 8 == 60 + 71 * P
    assert ACK_BYTES == 17
    for engine, runs in (("paper", 1), ("masked-sparse", 3)):
        assert secure_start_bytes("dependence/1", engine, runs) == 5 + 8 + (4 + S) + (4 + len(engine)) \
            + 4 + runs * (4 + 16)


def test_element_bytes_edges() -> None:
    assert [element_bytes(m) for m in (2, 256, 257, 65536, 65537, 1 << 32, (1 << 32) + 1)] == [1, 1, 2, 2, 4, 4, 8]
    with pytest.raises(ConfigurationError, match="modulus must be <= 2\\*\\*64"):
        element_bytes((1 << 64) + 1)
    with pytest.raises(ConfigurationError, match="engine must be one of"):
        closed_form("carrier-pigeon", 4, 4)
    with pytest.raises(ConfigurationError, match="needs the announced clusters"):
        rr_closed_form("RR-Clusters", 10, 3)


@pytest.mark.parametrize(("dependence", "engine"), [("4.1", ""), ("4.2", "paper"), ("4.3", "graph"),
                                                   ("4.2", "masked-sparse")])
def test_rr_clusters_end_to_end_equals_closed_form(dependence: str, engine: str) -> None:
    params = {"p": 0.7, "Tv": 50, "Td": 0.2, "degree": 2, "round_timeout": 10}
    r = measure_rr("RR-Clusters", (2, 3, 2), 8, sweep="test", d=None, params=params, seed=2,
                   dependence=dependence, engine=engine)
    assert r.matches(), (r.measured(), r.closed)
    if dependence != "4.1":  # SecureRelease + Ack + SecureSumStart, then the secure sum
        assert r.closed.rounds == 3 + closed_form(engine, 8, 16, degree=2).rounds + 2
        assert secure_release_bytes("dependence", "dependence/1", [(0, 1), (0, 2), (1, 2)], exact=True) < \
            secure_release_bytes("dependence", "dependence/1", [(0, 1), (0, 2), (1, 2)], exact=False)


def test_a_protocol_is_measured_with_the_parameters_it_declares() -> None:
    """measure_rr gives a protocol only what its registry entry declares (RR-Independent: p, no
    dependence, which its measurement then says it has not)."""
    params = {"p": 0.7, "Tv": 50, "Td": 0.2, "degree": 2, "round_timeout": 10}
    r = measure_rr("RR-Independent", (2, 3, 2), 8, sweep="test", d=None, params=params, seed=2, dependence="4.2",
                   engine="paper")
    assert r.matches(), (r.measured(), r.closed)
    assert r.dependence is None and r.closed.rounds == 2
    with pytest.raises(ConfigurationError, match="no-such-protocol"):
        measure_rr("no-such-protocol", (2, 3), 8, sweep="test", d=None, params=params, seed=2)


def test_rr_closed_form_main_paper_41_orders() -> None:
    """Controller O(nm), each party O(m): doubling n doubles the controller's bytes and leaves
    the party's unchanged; every extra attribute adds 8 bytes (one int64 code) to a reply."""
    a, b = rr_closed_form("RR-Independent", 100, 8), rr_closed_form("RR-Independent", 200, 8)
    assert b.controller_bytes == 2 * a.controller_bytes and b.party_bytes == a.party_bytes == 91
    assert rr_closed_form("RR-Independent", 100, 9).party_bytes - a.party_bytes == 8
    c = rr_closed_form("RR-Clusters", 100, 3, clusters=((0, 1), (2,)))
    assert (c.messages, c.rounds, c.party_messages) == (400, 4, 2)


def test_pair_indicators_tally_to_the_bivariate_tables() -> None:
    sizes = (3, 2, 4)
    data = planted_clusters(50, rng=np.random.default_rng(3), sizes=sizes, clusters=()).dataset
    vec = pair_indicators(data.codes, sizes)
    assert vec.shape == (50, pair_cells(sizes)) == (50, 3 * 2 + 3 * 4 + 2 * 4)
    assert (vec.sum(axis=1) == 3).all()  # one combination per attribute pair
    tables = bivariate_tables(data.codes, sizes)
    expected = np.concatenate([tables[(i, j)].ravel() for i, j in ((0, 1), (0, 2), (1, 2))])
    assert np.array_equal(vec.sum(axis=0), expected)


@pytest.mark.parametrize("engine", ENGINE_KEYS)
def test_every_engine_measures_its_closed_form(engine: str) -> None:
    sizes = (2, 3, 2)
    data = planted_clusters(6, rng=np.random.default_rng(1), sizes=sizes, clusters=()).dataset
    vec = pair_indicators(data.codes, sizes)
    m = measure_secure_sum(engine, vec, vec.sum(axis=0, dtype=np.int64), sweep="test", m=3, d=None,
                           degree=2, round_timeout=10, index=7)
    assert m.exact_sum
    assert all(m.matches().values()), m.matches()
    assert m.engine_cost[:2] == (m.closed.messages, m.closed.bytes)
    if engine.startswith("masked"):  # the consistency check: survivor set, signature, signed views
        assert m.measured.consistency_messages == 3 * 6 and m.measured.consistency_bytes > 3 * 6 * 64
    else:
        assert m.measured.consistency_messages == m.measured.consistency_bytes == 0


def test_masked_sparse_consistency_check_on_a_sparse_graph_equals_its_closed_form() -> None:
    n, sizes = 24, (2, 3, 2)  # k = 4 < n - 1: the signed views of each 2-hop neighbourhood
    data = planted_clusters(n, rng=np.random.default_rng(1), sizes=sizes, clusters=()).dataset
    vec = pair_indicators(data.codes, sizes)
    m = measure_secure_sum("masked-sparse", vec, vec.sum(axis=0, dtype=np.int64), sweep="test", m=3, d=None,
                           degree=4, round_timeout=10, index=3)
    assert all(m.matches().values()), m.matches()
    complete = closed_form("masked", n, pair_cells(sizes))
    assert m.measured.consistency_messages == complete.consistency_messages == 3 * n
    assert m.measured.consistency_bytes < complete.consistency_bytes  # O(k^2) views per party instead of n


@pytest.mark.slow  # ~3-5 s: secure sums, actor runs and four log-log figures
def test_reduced_scenario_run(tmp_path: Path) -> None:
    params = {
        "n_values": [4, 6], "sizes": [2, 3, 2], "degree": 2, "n_fixed": 4, "m_values": [2],
        "m_sweep_size": 2, "d_values": [3], "d_sweep_m": 2, "rr_n_values": [20],
        "rr_n_fixed": 20, "rr_m_values": [3], "rr_d_values": [5],
        "max_n": {"masked": 4}, "round_timeout": 10, "method_n_values": [4],
    }
    run("communication_cost", out_dir=tmp_path, parameters=params)
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    metrics = doc["metrics"]
    assert metrics["all_equal_closed_form"] is True and metrics["mismatches"] == []
    assert metrics["all_sums_exact"] is True and metrics["engine_cost_equal_closed_form"] is True
    assert metrics["rr_all_equal_closed_form"] is True and metrics["rr_measured"] > 0
    assert metrics["closed_form_only"] >= 1  # masked at n = 6 > max_n.masked
    rows = doc["tables"]["measured_vs_closed_form"]["rows"]
    skipped = [r for r in rows if r["engine"] == "masked" and r["n"] == 6]
    assert skipped and skipped[0]["messages"] is None and skipped[0]["check"].startswith("n > max_n.masked")
    assert {"measured_vs_closed_form", "load_vs_closed_form", "rr_measured_vs_closed_form",
            "dependence_methods"} <= set(doc["tables"])
    # the wide table is split in two of at most 15 columns, one row per run in each
    widths = {key: len(doc["tables"][key]["columns"]) for key in ("measured_vs_closed_form", "load_vs_closed_form")}
    assert widths == {"measured_vs_closed_form": 15, "load_vs_closed_form": 12}
    load = doc["tables"]["load_vs_closed_form"]["rows"]
    assert len(load) == len(rows) and all(r["max party bytes"] == r["party bytes (closed)"] for r in load
                                          if r["max party bytes"] is not None)
    methods = doc["tables"]["dependence_methods"]["rows"]
    assert {r["method"] for r in methods} == {"4.1", "4.2", "4.3"}
    assert {r["secure-sum engine"] for r in methods if r["method"] == "4.2"} == {
        "paper", "graph", "graph-direct", "masked", "masked-sparse"}  # per-combination left out
    assert all(r["check"] == "= closed form" for r in methods)
    assert len(doc["figures"]) == 4
    for name in doc["figures"]:
        assert (tmp_path / name).read_bytes()[:8] == PNG
    assert "Secure sums: measured vs closed form" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_log_log_legends_sit_below_their_axes_and_inside_the_figure(tmp_path: Path) -> None:
    # secure_sum_vs_domain.png: inside the axes, the legend covered the paper-per-combination line
    from dataclasses import replace

    from scenarios.communication_figures import loglog
    from scenarios.plots import render

    xs = [16.0, 48.0, 96.0, 240.0, 448.0]
    series = {panel: {"paper": (xs, [1e5 * x / 16 for x in xs], xs, [1e5 * x / 16 for x in xs]),
                      "paper-per-combination": (xs, [1.5e6 * x / 16 for x in xs], [], []),
                      "masked": (xs, [4.4e5] * 5, xs, [4.4e5] * 5)} for panel in ("d", "m")}
    spec = loglog("domain.png", "domain", [("d", "L (d sweep)", "bytes"), ("m", "L (m sweep)", "bytes")],
                   series, "caption")
    figures = []

    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        spec.draw(fig)
        figures.append(fig)

    render(replace(spec, draw=draw), tmp_path)
    fig = figures[0]
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for ax in fig.axes:
        legend, frame = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
        assert legend.y1 < frame.y0, "the legend overlaps its axes"
        assert page.x0 <= legend.x0 and legend.x1 <= page.x1 and page.y0 <= legend.y0, "the legend is cut off"
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["paper", "paper-per-combination (closed form only)", "masked", "dashed = closed form"]


def test_captions_say_who_counted_the_traffic() -> None:
    from scenarios.communication import _methods_table, _rr_outputs, _secure_sums_counted_by

    tcp = {"runtime": "tcp", "workers": 2, "listen": "127.0.0.1:0", "spawn": True, "tls": True}
    router = ("counted by the router in the controller process (tcp runtime, parties in 2 worker processes): "
              "the same counts as the in-memory network's")
    (rr_table,), _ = _rr_outputs([], tcp)
    assert rr_table.caption.startswith(f"Measured: {router} (every message encoded by the codec). ")
    assert f"in the actor simulator, {router}; the check" in _methods_table({"sizes": [2, 3]}, [], tcp).caption
    # the secure sums of the first table run alone in this process, whatever the runtime
    assert _secure_sums_counted_by(tcp) == (
        "Measured: counted by the in-memory network (every message encoded by the codec): these secure sums "
        "run alone in this process whatever the runtime; the tcp runtime hosted the parties of the "
        "actor-simulator runs only. ")
    for memory in (None, {"runtime": "memory", "shards": 1}):
        assert _secure_sums_counted_by(memory) == ("Measured: counted by the in-memory network (every message "
                                                   "encoded by the codec). ")
        (rr_table,), _ = _rr_outputs([], memory)
        assert rr_table.caption.startswith("Measured: counted by the in-memory network (every message encoded")
        assert "in the actor simulator, counted by the in-memory network;" in _methods_table(
            {"sizes": [2, 3]}, [], memory).caption


def test_markers_of_equal_series_sit_side_by_side_and_one_size() -> None:
    """secure_sum_vs_n.png: masked and masked-sparse had equal message counts and the smaller
    marker hid inside the larger; now each series' markers sit apart sideways (the dashed closed
    forms at the true x), all of one size."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from scenarios.communication_figures import loglog
    from scenarios.plots import CustomPlot

    xs = [8.0, 16.0, 32.0, 64.0]
    same = (xs, [9.0 * x for x in xs], xs, [9.0 * x for x in xs])
    spec = loglog("n.png", "n", [("messages", "parties n", "messages")], {"messages": {"masked": same,
                                                                                       "masked-sparse": same}}, "c")
    assert isinstance(spec, CustomPlot) and "sit slightly apart sideways" in spec.caption
    fig = Figure()
    FigureCanvasAgg(fig)
    spec.draw(fig)
    lines = fig.axes[0].lines
    dashed = [ln for ln in lines if ln.get_linestyle() == "--"]
    markers = [ln for ln in lines if ln.get_linestyle() == "None"]
    assert all(list(ln.get_xdata()) == xs for ln in dashed)
    left, right = (np.asarray(ln.get_xdata(), float) for ln in markers)
    assert np.all(left < np.asarray(xs)) and np.all(right > np.asarray(xs))  # apart, around the true x
    assert np.allclose(np.log10(right / left), np.log10(right[0] / left[0]))  # the same offset everywhere
    assert {ln.get_markersize() for ln in markers} == {7.0}
