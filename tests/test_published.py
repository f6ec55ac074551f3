"""The papers' published numbers typed into the scenarios, against the repository's own
transcription in ``tests/data/published.toml`` (each table there names its paper and table), so
that the check runs from a bare clone without the paper texts."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from scenarios.kikuchi import ADULT_TABLE1_PUBLISHED
from scenarios.paper_adult import TABLE1_PUBLISHED, TABLE2_PUBLISHED
from scenarios.tables import (BISTOCHASTIC_PAPER_SIZE, BISTOCHASTIC_PUBLISHED, LAMBDA_PAPER_SIZES,
                              LAMBDA_PUBLISHED)

PUBLISHED: dict[str, Any] = tomllib.loads((Path(__file__).parent / "data" / "published.toml").read_text(encoding="utf-8"))


def test_every_paper_has_a_citation_and_every_table_says_where_it_is() -> None:
    for paper in PUBLISHED.values():
        assert paper["citation"]
        tables = [v for v in paper.values() if isinstance(v, dict)]
        assert tables and all(t["where"] and len(t["columns"]) == len(t["rows"][0]) for t in tables)


@pytest.mark.parametrize(("table", "typed"), [("table1", TABLE1_PUBLISHED), ("table2", TABLE2_PUBLISHED)])
def test_main_paper_tables_i_and_ii(table: str, typed: dict[tuple[float, float], tuple[float, ...]]) -> None:
    rows = PUBLISHED["main_paper"][table]["rows"]
    assert typed == {(p, td): tuple(vals) for p, td, *vals in rows}


def test_bistochastic_table_1() -> None:
    table = PUBLISHED["bistochastic"]["table1"]
    assert table["size"] == BISTOCHASTIC_PAPER_SIZE
    assert {key: round(beta * 100) for key, beta in BISTOCHASTIC_PUBLISHED.items()} == {
        (family, param): pct for family, param, pct in table["rows"]}


def test_lambda_table_1() -> None:
    table = PUBLISHED["lambda"]["table1"]
    assert tuple(table["sizes"]) == LAMBDA_PAPER_SIZES
    assert {lams: tuple(round(b * 100) for b in betas) for lams, betas in LAMBDA_PUBLISHED.items()} == {
        tuple(row[:3]): tuple(row[3:]) for row in table["rows"]}


def test_kikuchi_adult_table_1() -> None:
    assert ADULT_TABLE1_PUBLISHED == {(a, b): (v, ind, joint) for a, b, v, ind, joint in PUBLISHED["kikuchi"]["table1"]["rows"]}
