"""bistochastic_table and lambda_table: rows checked against the papers where the definitions
agree, against closed forms everywhere, and the published outliers flagged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from scenarios.runner import run
from scenarios.tables import (
    BISTOCHASTIC_PUBLISHED,
    BISTOCHASTIC_SCHEMA,
    LAMBDA_PUBLISHED,
    LAMBDA_SCHEMA,
    anatomy_blocks,
    bistochastic_alternatives,
    bistochastic_rows,
    lambda_rows,
)


def _h(*probs: float) -> float:
    """Σ -p log2 p over the given probabilities (each counted once)."""
    return -sum(p * math.log2(p) for p in probs if p > 0)


def _bistochastic(**overrides: object) -> dict[tuple[str, float], dict]:
    params = dict(BISTOCHASTIC_SCHEMA.validate(overrides))
    return {(row["family"], row["value"]): row for row in bistochastic_rows(params)}


# ------------------------------------------------------------------ bistochastic paper Table 1

R = 12
LOG2R = math.log2(R)


def _dp_beta(eps: float) -> float:
    d, o = math.exp(eps) / (R - 1 + math.exp(eps)), 1 / (R - 1 + math.exp(eps))
    return (_h(d) + (R - 1) * _h(o)) / LOG2R


def _tridiagonal_beta(a: float) -> float:
    end, inner = _h(1 - a) + _h(a), 2 * _h(a) + _h(1 - 2 * a)
    return (2 * end + (R - 2) * inner) / R / LOG2R


def _circulant_beta(p: float) -> float:
    return (_h(p) + (R - 1) * _h((1 - p) / (R - 1))) / LOG2R


CLOSED_FORMS = {
    ("differential privacy", 5.0): _dp_beta(5.0),
    ("differential privacy", 3.0): _dp_beta(3.0),
    ("differential privacy", 1.0): _dp_beta(1.0),
    ("k-anonymity", 2.0): 1 / LOG2R,
    ("k-anonymity", 3.0): math.log2(3) / LOG2R,
    ("k-anonymity", 6.0): math.log2(6) / LOG2R,
    ("tridiagonal", 0.1): _tridiagonal_beta(0.1),
    ("tridiagonal", 0.3): _tridiagonal_beta(0.3),
    ("tridiagonal", 0.4): _tridiagonal_beta(0.4),
    ("circulant", 0.9): _circulant_beta(0.9),
    ("circulant", 0.6): _circulant_beta(0.6),
    ("circulant", 0.2): _circulant_beta(0.2),
}
BISTOCHASTIC_DIFFER = {("k-anonymity", 3.0), ("tridiagonal", 0.3), ("circulant", 0.9),
                       ("circulant", 0.6), ("circulant", 0.2)}


def test_bistochastic_rows_match_closed_forms() -> None:
    rows = _bistochastic()
    assert set(rows) == set(CLOSED_FORMS)
    for key, beta in CLOSED_FORMS.items():
        assert rows[key]["beta"] == pytest.approx(beta, abs=1e-12), key
        assert rows[key]["entropy_bits"] == pytest.approx(beta * LOG2R, abs=1e-12), key
        assert rows[key]["bistochastic"] is True


@pytest.mark.parametrize("key", sorted(set(BISTOCHASTIC_PUBLISHED) - BISTOCHASTIC_DIFFER))
def test_bistochastic_rows_agree_with_the_paper(key: tuple[str, float]) -> None:
    row = _bistochastic()[key]
    assert round(row["beta"] * 100) == round(BISTOCHASTIC_PUBLISHED[key] * 100)
    assert row["flag"] == "ok"


def test_bistochastic_differences_are_flagged_and_explained() -> None:
    rows = _bistochastic()
    assert {key for key, row in rows.items() if row["flag"] == "DIFFERS"} == BISTOCHASTIC_DIFFER
    assert rows[("k-anonymity", 3.0)]["difference_pp"] == pytest.approx((math.log2(3) / LOG2R - 0.56) * 100)
    alternatives = bistochastic_alternatives(R)
    assert len(alternatives) == len(BISTOCHASTIC_DIFFER)
    assert all(a["reproduces"] for a in alternatives)
    by_row = {a["row"]: a["beta"] for a in alternatives}
    assert by_row["k-anonymity, 3"] == pytest.approx(2 / LOG2R)  # k = 4: log2 4 / log2 12
    assert by_row["tridiagonal, 0.3"] == pytest.approx(_tridiagonal_beta(0.2))


def test_bistochastic_epsilons() -> None:
    rows = _bistochastic()
    for eps in (5.0, 3.0, 1.0):
        assert rows[("differential privacy", eps)]["epsilon"] == pytest.approx(eps)
    for key in (("k-anonymity", 2.0), ("tridiagonal", 0.1)):
        assert math.isinf(rows[key]["epsilon"])  # columns mix zeros and non-zeros
    assert rows[("circulant", 0.9)]["epsilon"] == pytest.approx(math.log(0.9 / (0.1 / 11)))


def test_other_sizes_are_not_compared() -> None:
    rows = _bistochastic(size=8, k_values=[3], dp_epsilons=[2.0])
    assert all(row["beta_published"] is None and row["flag"] == "not published" for row in rows.values())
    assert rows[("k-anonymity", 3.0)]["beta"] == pytest.approx(
        (3 * math.log2(3) + 5 * math.log2(5)) / 8 / 3)  # classes of 3 and 5 values, log2 8 = 3
    assert anatomy_blocks(8, 3) == [3, 5]
    assert bistochastic_alternatives(8) == []


# ------------------------------------------------------------------ lambda paper Table 1


def _lambda_beta(lam: float, r: int = 5) -> float:
    off = (1 - lam) / r
    return (_h(lam + off) + (r - 1) * _h(off)) / math.log2(r)


def _lambda() -> dict[tuple[tuple[float, ...], str], dict]:
    params = dict(LAMBDA_SCHEMA.validate({}))
    return {(row["lambdas"], row["target"]): row for row in lambda_rows(params)}


LAMBDA_AGREE = {((0.9, 0.8, 0.7), "attribute 2"), ((0.3, 0.2, 0.1), "attribute 2"),
                ((0.3, 0.2, 0.1), "attribute 3")}


def test_lambda_rows_match_closed_forms_and_theorem_2() -> None:
    rows = _lambda()
    for lams in LAMBDA_PUBLISHED:
        betas = [_lambda_beta(lam) for lam in lams]
        for i, beta in enumerate(betas):
            assert rows[(lams, f"attribute {i + 1}")]["beta"] == pytest.approx(beta, abs=1e-12)
        joint = rows[(lams, "joint distribution")]
        # Theorem 2: H(P1 ⊗ P2 ⊗ P3) = Σ H(Pi); equal sizes ⇒ β_joint = mean β_i
        assert joint["beta"] == pytest.approx(np.mean(betas), abs=1e-12)
        assert joint["dense_entropy_bits"] == pytest.approx(joint["entropy_bits"], abs=1e-9)
        assert joint["epsilon"] == pytest.approx(sum(math.log(1 + 5 * lam / (1 - lam)) for lam in lams))


@pytest.mark.parametrize("key", sorted(LAMBDA_AGREE))
def test_lambda_rows_agree_with_the_paper(key: tuple[tuple[float, ...], str]) -> None:
    row = _lambda()[key]
    assert round(row["beta"] * 100) == round(row["beta_published"] * 100)
    assert row["flag"] == "ok"


def test_lambda_differences_are_flagged() -> None:
    rows = _lambda()
    assert len(rows) == 12
    differing = {key for key, row in rows.items() if row["flag"] == "DIFFERS"}
    assert differing == set(rows) - LAMBDA_AGREE
    # every published joint β is below what Theorem 2 gives
    for lams in LAMBDA_PUBLISHED:
        joint = rows[(lams, "joint distribution")]
        assert joint["beta_published"] < joint["beta"] - 0.09


def test_lambda_config_errors() -> None:
    params = dict(LAMBDA_SCHEMA.validate({"sizes": [5, 5], "lambdas": [[0.5, 0.5, 0.5]]}))
    with pytest.raises(ConfigurationError, match=r"parameters\.lambdas\[0\] has 3 values, expected one per attribute \(2"):
        lambda_rows(params)
    with pytest.raises(ConfigurationError, match=r"parameters\.lambdas\[0\]\[1\] must be a finite number > 0 and <= 1, got 0"):
        LAMBDA_SCHEMA.validate({"lambdas": [[0.5, 0]]}, prefix="parameters")


def test_lambda_other_sizes_skip_dense_check_when_too_large() -> None:
    params = dict(LAMBDA_SCHEMA.validate({"sizes": [4, 6], "lambdas": [[0.5, 0.5]], "dense_check_max_cells": 10}))
    rows = lambda_rows(params)
    assert rows[-1]["dense_entropy_bits"] is None and rows[-1]["beta_published"] is None
    expected = (_lambda_beta(0.5, 4) * 2 + _lambda_beta(0.5, 6) * math.log2(6)) / math.log2(24)
    assert rows[-1]["beta"] == pytest.approx(expected)


# ------------------------------------------------------------------ scenario runs


def test_scenarios_write_side_by_side_tables(tmp_path: Path) -> None:
    bt = run("bistochastic_table", out_dir=tmp_path / "bt")
    doc = json.loads(bt.files.results_json.read_text(encoding="utf-8"))
    assert doc["metrics"]["rows_differing"] == 5
    assert doc["privacy"]["epsilon"]["k-anonymity k = 2"] == "inf"
    records = doc["tables"]["table1"]["rows"]
    assert {r["flag"] for r in records} == {"ok", "DIFFERS"} and len(records) == 12
    md = bt.files.report_md.read_text(encoding="utf-8")
    assert "| k-anonymity | k = 3 | 1.5850 | 44.2% | 56% | -11.8 |" in md

    lt = run("lambda_table", out_dir=tmp_path / "lt")
    md = lt.files.report_md.read_text(encoding="utf-8")
    assert "| {0.3; 0.2; 0.1} | 90.9% (92%) | 95.7% (96%) | 98.9% (99%) | 95.1% (72%) |" in md
    assert any("Theorem 2 rules out" in note for note in lt.result.notes)
    assert lt.files.figures[0].read_bytes()[:4] == b"\x89PNG"
