"""results.json (strict JSON, numpy converted, non-finite as strings), report.md and PNGs."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from scenarios.plots import PNG_MAGIC, BarPlot, LinePlot, Series
from scenarios.report import (
    ScenarioResult,
    Table,
    counted_by,
    describe_runtime,
    format_value,
    markdown_report,
    plural,
    to_jsonable,
    versions,
    write_report,
)


@dataclass(frozen=True)
class Point:
    x: int
    y: float


def test_to_jsonable_converts_numpy_and_non_finite() -> None:
    obj = {
        "i": np.int64(3),
        "f": np.float32(0.5),
        "b": np.bool_(True),
        "inf": math.inf,
        "ninf": np.float64(-np.inf),
        "nan": float("nan"),
        "arr": np.array([[1.0, np.inf], [2.0, 3.0]]),
        (0, 1): "tuple key",
        np.int64(7): "numpy key",
        "path": Path("/tmp/x"),
        "point": Point(1, 2.5),
        "set": {2, 1},
    }
    out = to_jsonable(obj)
    assert out["i"] == 3 and type(out["i"]) is int
    assert out["f"] == 0.5 and type(out["f"]) is float
    assert out["b"] is True
    assert (out["inf"], out["ninf"], out["nan"]) == ("inf", "-inf", "nan")
    assert out["arr"] == [[1.0, "inf"], [2.0, 3.0]]
    assert out["0,1"] == "tuple key" and out["7"] == "numpy key"
    assert out["path"] == "/tmp/x" and out["point"] == {"x": 1, "y": 2.5} and out["set"] == [1, 2]
    json.dumps(out, allow_nan=False)  # strict JSON


def test_to_jsonable_names_where_it_failed() -> None:
    with pytest.raises(TypeError, match=r"result\.metrics\.bad: cannot write a object to JSON"):
        to_jsonable({"metrics": {"bad": object()}})


def test_table_validation() -> None:
    with pytest.raises(ConfigurationError, match=r"table 't' row 1 has 1 cells, expected 2 \(a, b\)"):
        Table("t", "T", ("a", "b"), [(1, 2), (3,)])
    with pytest.raises(ConfigurationError, match=r"table key must be non-empty letters, digits and '_', got 'a b'"):
        Table("a b", "T", ("a",), [])
    with pytest.raises(ConfigurationError, match=r"formats name unknown columns \['c'\]"):
        Table("t", "T", ("a",), [], formats={"c": ".1f"})


@pytest.mark.parametrize(
    ("value", "spec", "text"),
    [
        (None, "", "—"),
        (True, "", "yes"),
        (3, "", "3"),
        (np.int64(3), "", "3"),
        (0.123456, "", "0.1235"),
        (0.123456, ".1%", "12.3%"),
        (math.inf, ".1%", "∞"),
        (-math.inf, "", "−∞"),
        (float("nan"), "", "nan"),
        ((1, 2.5), "", "[1, 2.5]"),
        (np.zeros(20), "", "array of shape (20,)"),
        ("a|b", "", "a\\|b"),
    ],
)
def test_format_value(value: object, spec: str, text: str) -> None:
    assert format_value(value, spec) == text


def _result() -> ScenarioResult:
    return ScenarioResult(
        metrics={"mae": np.float64(0.01), "by_method": {"rr_independent": 0.02, "rr_clusters": 0.01},
                 "ratio": math.inf},
        privacy={"epsilon_per_party": {"min": 1.0, "median": 1.0, "max": 1.0}},
        traffic={"messages": np.int64(1200), "bytes": 34_000},
        tables=[Table("errors", "Relative error", ("method", "error"),
                      [("RR-Independent", 0.25), ("RR-Clusters", np.float64(0.125))],
                      formats={"error": ".1%"}, caption="median over runs")],
        figures=[LinePlot("err.png", "error vs σ", "σ", "error",
                          (Series("RR-Clusters", [0.1, 0.2], [0.3, 0.2]),), caption="lower is better"),
                 BarPlot("bars.png", "methods", ("a", "b"), {"x": [1.0, 2.0]}, "y")],
        notes=["a note"],
        name="demo", kind="demo_kind", title="Demo run", description="what it does",
        parameters={"n": 100, "sizes": (2, 3)}, seed=7, runs=3, engine="fast",
        versions=versions(), elapsed_seconds=0.5, source="/x/demo.toml",
    )


def test_write_report_files_exist_and_parse(tmp_path: Path) -> None:
    files = write_report(_result(), tmp_path / "out")
    doc = json.loads(files.results_json.read_text(encoding="utf-8"))
    assert doc["scenario"] == "demo" and doc["seed"] == 7 and doc["runs"] == 3
    assert doc["parameters"] == {"n": 100, "sizes": [2, 3]}
    assert set(doc["versions"]) >= {"python", "numpy", "mprr"}
    assert doc["metrics"]["mae"] == 0.01 and doc["metrics"]["ratio"] == "inf"
    assert doc["traffic"]["messages"] == 1200
    assert doc["privacy"]["epsilon_per_party"]["median"] == 1.0
    assert doc["tables"]["errors"]["rows"] == [{"method": "RR-Independent", "error": 0.25},
                                              {"method": "RR-Clusters", "error": 0.125}]
    assert doc["figures"] == ["err.png", "bars.png"] and doc["notes"] == ["a note"]
    for png in files.figures:
        assert png.read_bytes()[:8] == PNG_MAGIC
    md = files.report_md.read_text(encoding="utf-8")
    assert md.startswith("# Demo run\n")
    for fragment in ("| `n` | 100 |", "| `sizes` | [2, 3] |", "| by_method.rr_clusters | 0.01 |",
                     "| ratio | ∞ |", "| messages | 1200 |", "## Relative error",
                     "| RR-Clusters | 12.5% |", "median over runs", "![error vs σ](err.png)",
                     "*lower is better*", "- a note", "| seed | 7 |"):
        assert fragment in md, fragment


def test_empty_sections_are_omitted() -> None:
    md = markdown_report(ScenarioResult(name="x", metrics={"a": 1}))
    assert "## Metrics" in md and "## Privacy" not in md and "## Traffic" not in md
    assert "## Figures" not in md and "## Notes" not in md


def test_duplicate_figure_names_and_table_keys_are_rejected(tmp_path: Path) -> None:
    fig = BarPlot("same.png", "t", ("a",), {"g": [1.0]}, "y")
    with pytest.raises(ConfigurationError, match=r"figure file names must be unique, repeated: \['same\.png'\]"):
        write_report(ScenarioResult(figures=[fig, fig]), tmp_path)
    table = Table("t", "T", ("a",), [(1,)])
    with pytest.raises(ConfigurationError, match=r"table keys must be unique"):
        write_report(ScenarioResult(tables=[table, table]), tmp_path)


def test_a_reused_output_directory_loses_only_the_previous_runs_stale_figures(tmp_path: Path) -> None:
    from dataclasses import replace

    out = tmp_path / "out"
    first = write_report(_result(), out)
    assert first.removed == ()
    (out / "mine.png").write_bytes(b"the user's own")  # never written by a run: kept
    (out / "notes.txt").write_text("kept")
    second = replace(_result(), figures=[_result().figures[0]])  # draws err.png, no longer bars.png
    files = write_report(second, out)
    assert files.removed == (out / "bars.png",)
    assert sorted(p.name for p in out.iterdir()) == ["err.png", "mine.png", "notes.txt", "report.md", "results.json"]
    # only plain .png names a results.json lists are candidates: nothing elsewhere, nothing else
    (tmp_path / "outside.png").write_bytes(b"x")
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    doc["figures"] = ["../outside.png", "notes.txt", "mine.png", str(tmp_path / "outside.png")]
    (out / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    assert write_report(second, out).removed == (out / "mine.png",)  # listed: written by "the previous run"
    assert (tmp_path / "outside.png").exists() and (out / "notes.txt").exists()
    (out / "results.json").write_text("{not json", encoding="utf-8")
    assert write_report(second, out).removed == ()
    # another program's results.json (not an mprr run's) is never trusted to list files to remove
    (out / "mine.png").write_bytes(b"the user's own")
    (out / "results.json").write_text(json.dumps({"model": "x", "figures": ["mine.png"]}), encoding="utf-8")
    assert write_report(second, out).removed == () and (out / "mine.png").exists()
    # a listed name that differs from a figure drawn now only by case is that figure on some systems
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    doc["figures"] = ["ERR.png"]
    (out / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    assert write_report(second, out).removed == () and (out / "err.png").exists()


def test_the_run_table_names_the_runtime() -> None:
    assert describe_runtime({"runtime": "memory", "shards": 1}) == "memory (one process)"
    assert describe_runtime({"runtime": "tcp", "workers": 2, "listen": "127.0.0.1:0", "spawn": True, "tls": True}) == (
        "tcp (2 worker processes, spawned, TLS on)")
    assert describe_runtime({"runtime": "tcp", "workers": 1, "listen": "0.0.0.0:7000", "spawn": False,
                             "tls": False}) == "tcp (1 worker process, started by hand, listening on 0.0.0.0:7000, TLS off)"
    assert describe_runtime({"runtime": "ray", "address": "local", "shards": 4}) == "ray (4 party shards on local Ray)"
    result = ScenarioResult(name="x", engine="actors", provenance={"runtime": {"runtime": "tcp", "workers": 2,
                                                                               "spawn": True, "tls": True}})
    assert "| runtime | tcp (2 worker processes, spawned, TLS on) |" in markdown_report(result)
    assert "| runtime |" not in markdown_report(ScenarioResult(name="x", engine="fast"))


def test_a_runners_other_files_are_listed_and_a_later_run_removes_them(tmp_path: Path) -> None:
    from dataclasses import replace

    out = tmp_path / "out"
    out.mkdir()
    (out / "synthetic_records.csv").write_text("a,b\nx,y\n", encoding="utf-8")
    first = write_report(replace(_result(), files=["synthetic_records.csv"]), out)
    assert first.other_files == (out / "synthetic_records.csv",)
    assert json.loads(first.results_json.read_text(encoding="utf-8"))["files"] == ["synthetic_records.csv"]
    assert write_report(replace(_result(), files=["synthetic_records.csv"]), out).removed == ()  # rewritten
    (out / "mine.csv").write_text("the user's own")  # never listed: kept
    second = write_report(_result(), out)  # a run that writes no CSV
    assert second.removed == (out / "synthetic_records.csv",) and second.other_files == ()
    assert (out / "mine.csv").exists()
    assert json.loads(second.results_json.read_text(encoding="utf-8"))["files"] == []
    # listed, but an input of this run (keep): not removed
    (out / "synthetic_records.csv").write_text("a\nx\n", encoding="utf-8")
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    doc["files"] = ["synthetic_records.csv", "../outside.csv", "report.md", "results.json", "notes.txt"]
    (out / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "outside.csv").write_text("x")
    (out / "notes.txt").write_text("x")
    assert write_report(_result(), out, keep=[out / "synthetic_records.csv"]).removed == ()
    assert (out / "synthetic_records.csv").exists() and (tmp_path / "outside.csv").exists()
    assert (out / "notes.txt").exists() and (out / "report.md").exists()


@pytest.mark.parametrize("name", ["missing.csv", "../up.csv", "sub/x.csv", "notes.txt", ".hidden.csv", "report.md"])
def test_other_files_must_be_plain_csv_names_written_into_the_directory(tmp_path: Path, name: str) -> None:
    for existing in ("notes.txt", ".hidden.csv"):
        (tmp_path / existing).write_text("x")
    with pytest.raises(ConfigurationError, match=rf"result files must be plain names of files the runner wrote "
                                                 rf"into .*, ending in \.csv \(not a figure's name\), got "
                                                 rf"'{re.escape(name)}'"):
        write_report(ScenarioResult(files=[name]), tmp_path)


def test_plural() -> None:
    assert plural(1, "run") == "1 run" and plural(0, "run") == "0 runs" and plural(20, "run") == "20 runs"
    assert plural(1, "query", "queries") == "1 query" and plural(2, "query", "queries") == "2 queries"
    assert plural(1_000_000, "record") == "1,000,000 records"


def test_who_counted_the_traffic() -> None:
    memory = "counted by the in-memory network"
    assert counted_by(None) == counted_by({"runtime": "memory", "shards": 4}) == memory
    assert counted_by({"runtime": "tcp", "workers": 1, "tls": True}) == (
        "counted by the router in the controller process (tcp runtime, parties in 1 worker process): "
        "the same counts as the in-memory network's")
    assert counted_by({"runtime": "ray", "address": "local", "shards": 3}) == (
        "counted by the router in the controller process (ray runtime, parties in 3 Ray shards): "
        "the same counts as the in-memory network's")
