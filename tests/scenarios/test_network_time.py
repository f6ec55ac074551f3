"""The network_time scenario: a reduced sweep writes its tables, records and figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

from scenarios.runner import run

PNG = b"\x89PNG\r\n\x1a\n"


def test_reduced_network_time_run(tmp_path: Path) -> None:
    (tmp_path / "lte.toml").write_text('[profile]\nname = "lte"\nuplink = { median_mbps = 5 }\n'
                                       'downlink = { median_mbps = 20 }\nlatency = { median_ms = 40 }\n')
    outcome = run("network_time", out_dir=tmp_path / "out", parameters={
        "n_values": [6, 10], "engines": ["paper", "masked-sparse"], "profiles": ["datacenter", str(tmp_path / "lte.toml")],
        "timeout": 5.0, "timeline_run": {"n": 10, "engine": "masked", "profile": "mobile", "dropout": 0.1},
    })
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    records = doc["network_time"]
    assert [(r["profile"], r["engine"], r["n"]) for r in records] == [
        (p, e, n) for p in ("datacenter", "lte") for e in ("paper", "masked-sparse") for n in (6, 10)]
    assert all(r["outcome"] == "ok" and r["missed_party_rounds"] == 0 for r in records)
    # the slow custom profile (40 ms, 5 Mbit/s) takes longer than the datacenter, for every run
    for d, lte in zip(records[:4], records[4:]):
        assert lte["completion_s"] > 10 * d["completion_s"]
        parts = sum(lte[f"{k}_s"] for k in ("compute", "queueing", "bandwidth", "latency", "waiting"))
        assert math.isclose(parts, lte["completion_s"], rel_tol=1e-9)
    assert set(doc["figures"]) == {"completion_vs_n_datacenter.png", "completion_vs_n_lte.png",
                                   "where_the_time_went.png", "timeline.png"}
    for name in doc["figures"]:
        assert (tmp_path / "out" / name).read_bytes()[:8] == PNG
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Completion time per profile, engine and n" in report and "## Rounds of the timeline run" in report
    assert outcome.result.metrics["timeline"]["run"]["engine"] == "masked"
