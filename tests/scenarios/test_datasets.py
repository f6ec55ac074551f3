"""Tests of scenarios.datasets: reading UCI Adult and generic CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mprr.data import Attribute, adult_schema
from mprr.errors import DataError
from scenarios.datasets import load_adult, load_csv

ADULT_LINE = (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K"
)


def test_load_adult_real_file(adult_path: Path) -> None:
    d = load_adult(adult_path)
    assert d.n == 32_561
    assert d.schema == adult_schema()
    assert d.schema.cells == 1_814_400
    # directory form reads adult.data
    np.testing.assert_array_equal(load_adult(adult_path.parent).codes, d.codes)


def test_load_adult_test_file(adult_path: Path) -> None:
    test_path = adult_path.parent / "adult.test"
    if not test_path.exists():
        pytest.skip("adult.test not available")
    d = load_adult(test_path)
    assert d.n == 16_281
    np.testing.assert_array_equal(d.marginal("income"), [12_435, 3_846])


def test_load_adult_small_file_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "adult.data"
    f.write_text(ADULT_LINE + "\n\n", encoding="utf-8")
    d = load_adult(f)
    assert d.n == 1 and d.values("workclass")[0] == "State-gov"
    with pytest.raises(DataError, match="Adult file not found: .*nope"):
        load_adult(tmp_path / "nope")
    bad = tmp_path / "bad.data"
    bad.write_text(ADULT_LINE.replace("Male", "Robot"), encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.data: Adult line 1: value 'Robot' of 'sex'"):
        load_adult(bad)


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "data.csv"
    f.write_text(text, encoding="utf-8")
    return f


def test_load_csv_inferred_and_declared(tmp_path: Path) -> None:
    f = _write(tmp_path, "id,grade,color,flag\n1,10,red,y\n2,9,blue,n\n3,10,red,n\n\n")
    d = load_csv(f, ["grade", "color"], {"grade": "ordinal"})
    assert d.schema.names == ("grade", "color")
    assert d.schema["grade"].categories == ("9", "10") and d.schema["grade"].kind == "ordinal"
    assert d.schema["color"].categories == ("blue", "red")
    np.testing.assert_array_equal(d.codes, [[1, 1], [0, 0], [1, 1]])
    flag = Attribute("flag", ("n", "y", "maybe"))
    d2 = load_csv(f, [flag, "color"])
    assert d2.schema["flag"] == flag
    np.testing.assert_array_equal(d2.column("flag"), [1, 0, 0])


def test_load_csv_missing_values(tmp_path: Path) -> None:
    f = _write(tmp_path, "a,b\nx,1\n,2\n")
    with pytest.raises(DataError, match="line 3 has an empty value in column 'a'; pass missing="):
        load_csv(f, ["a", "b"])
    d = load_csv(f, ["a", "b"], missing="?")
    assert d.schema["a"].categories == ("?", "x")


@pytest.mark.parametrize(
    ("text", "columns", "match"),
    [
        ("", ["a"], "the file is empty"),
        ("a,b\n", ["a"], "no records after the header"),
        ("a,b\nx,1\n", ["a", "c"], r"missing columns \['c'\]"),
        ("a,b\nx,1\ny\n", ["a"], "line 3 has 1 fields, the header has 2"),
        ("a,b\nx,1\nz,2\n", [Attribute("a", ("x", "y"))], r"'a' has values outside its declared categories: 'z'"),
        ("a,b\nx,1\n", [], "at least one column"),
        ("a,b\nx,1\n", ["a", "a"], "distinct"),
    ],
)
def test_load_csv_errors(tmp_path: Path, text: str, columns: list, match: str) -> None:
    with pytest.raises(DataError, match=match):
        load_csv(_write(tmp_path, text), columns)


def test_load_csv_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="CSV file not found"):
        load_csv(tmp_path / "none.csv", ["a"])
    with pytest.raises(DataError, match=r"kinds given for columns that are not inferred: \['z'\]"):
        load_csv(_write(tmp_path, "a\nx\n"), ["a"], {"z": "ordinal"})
