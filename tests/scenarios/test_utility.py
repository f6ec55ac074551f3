"""Scenario utility_vs_epsilon: every method at every ε, the utility records, the figure."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from scenarios.cli import main
from scenarios.runner import run
from scenarios.utility import METHODS, utility_records

PNG = b"\x89PNG\r\n\x1a\n"
KEYS = {"method", "epsilon", "epsilon_spent", "tvd_2way", "tvd_2way_se", "tvd_3way", "tvd_3way_se",
        "query_error", "query_error_se", "bytes_per_party", "runs"}


def test_every_method_at_every_budget_with_its_figure(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", "utility_vs_epsilon", "--runs", "2", "--out", str(tmp_path), "--set", "n=1500",
                 "--set", "queries=30", "--set", "max_triples=5", "--set", "epsilons=[1.0, 4.0]", "-q"],
                stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    utility = doc["utility"]
    assert {(r["method"], r["epsilon"]) for r in utility} == {(m, e) for m in METHODS for e in (1.0, 4.0)}
    for r in utility:
        assert set(r) == KEYS and r["runs"] == 2
        assert r["epsilon_spent"] <= r["epsilon"] * (1 + 1e-9)  # every method within the budget
        assert 0.0 <= r["tvd_2way"] <= 1.0 and r["tvd_2way_se"] >= 0.0 and r["bytes_per_party"] > 0
    assert (tmp_path / "utility_vs_epsilon.png").read_bytes()[:8] == PNG
    refs = doc["metrics"]["references"]
    assert set(refs) == {"uniform", "exact 1-way × independence"}
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Accuracy at equal ε per respondent" in report and "CALM-style" in report


def test_records_are_mean_and_standard_error_over_runs() -> None:
    rows = [{"method": "A", "epsilon": 1.0, "tvd_2way": v, "tvd_3way": 2 * v, "query_error": 0.5,
             "epsilon_spent": 1.0, "bytes_per_party": 1.0} for v in (0.1, 0.2, 0.3)]
    (rec,) = utility_records(rows)
    assert rec["tvd_2way"] == pytest.approx(0.2) and rec["tvd_2way_se"] == pytest.approx(0.1 / np.sqrt(3))
    assert rec["tvd_3way"] == pytest.approx(0.4) and rec["query_error_se"] == 0.0


def test_adult_and_data_file_are_exclusive(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\nx,y\ny,x\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="give parameters.adult_path or parameters.data"):
        run("utility_vs_epsilon", out_dir=tmp_path / "o", parameters={"adult_path": "x", "data": str(csv)})



def test_the_protocol_fields_are_derived_from_the_parameter_objects() -> None:
    from mprr.protocols.multidim import ORACLE_CHOICES
    from scenarios.config import Choice, Float, Int
    from scenarios.utility import SCHEMA

    fields = {f.key: f for f in SCHEMA.fields()}
    assert (fields["Tv"].type, fields["Tv"].default) == (Int(min=1), 50)
    assert (fields["Td"].type, fields["Td"].default) == (Float(min=0.0, max=1.0), 0.2)
    assert (fields["discovery_share"].type, fields["discovery_share"].default) == (
        Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True), 0.5)
    assert (fields["oracle"].type, fields["oracle"].default) == (Choice(ORACLE_CHOICES), "adaptive")
