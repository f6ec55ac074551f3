"""Tests of mprr.data: attributes, schemas, data sets, the Adult schema and parser."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd
import pytest

from mprr.data import (
    ADULT_ATTRIBUTES,
    ADULT_COLUMNS,
    Attribute,
    Dataset,
    Schema,
    adult_schema,
    infer_schema,
    label_order,
    parse_adult,
)
from mprr.distributions import WeightedSample
from mprr.errors import DataError, DomainTooLargeError


def _schema() -> Schema:
    return Schema(
        (
            Attribute("color", ("red", "green", "blue")),
            Attribute("size", ("S", "M", "L", "XL"), "ordinal"),
            Attribute("flag", ("no", "yes")),
        )
    )


def _dataset() -> Dataset:
    codes = np.array([[0, 0, 1], [1, 3, 0], [2, 1, 1], [0, 0, 0], [0, 2, 1]])
    return Dataset(_schema(), codes)


# --------------------------------------------------------------------------- Attribute / Schema


def test_attribute_size_code_encode() -> None:
    a = Attribute("size", ("S", "M", "L"), "ordinal")
    assert a.size == 3
    assert a.code("L") == 2
    np.testing.assert_array_equal(a.encode(["M", " S", "L "]), [1, 0, 2])
    assert a.encode([]).shape == (0,)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "", "categories": ("a",)}, "name must be a non-empty string"),
        ({"name": "x", "categories": ()}, "at least one category"),
        ({"name": "x", "categories": ("a", "")}, "non-empty strings"),
        ({"name": "x", "categories": ("a", 1)}, "non-empty strings"),
        ({"name": "x", "categories": "abc"}, "tuple of strings"),
        ({"name": "x", "categories": ("a", "b", "a")}, "distinct, duplicated: 'a'"),
        ({"name": "x", "categories": ("a",), "kind": "interval"}, "kind of 'x' must be one of"),
    ],
)
def test_attribute_rejects_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(DataError, match=match):
        Attribute(**kwargs)


def test_attribute_rejects_unknown_value() -> None:
    a = Attribute("sex", ("F", "M"))
    with pytest.raises(DataError, match=r"'sex' has values outside its declared categories: 'X'"):
        a.encode(["F", "X", "M"])
    with pytest.raises(DataError, match="value 'X' is not a category of 'sex'"):
        a.code("X")


def test_schema_properties() -> None:
    s = _schema()
    assert s.m == 3 and len(s) == 3
    assert s.names == ("color", "size", "flag")
    assert s.sizes == (3, 4, 2)
    assert s.cells == 24
    assert s.kinds == ("nominal", "ordinal", "nominal")
    assert s.index("flag") == 2
    assert s["size"].kind == "ordinal" and s[0].name == "color"
    sub = s.subset(["flag", "color"])
    assert sub.names == ("flag", "color") and sub.sizes == (2, 3)
    assert s == _schema() and hash(s) == hash(_schema())


def test_schema_errors() -> None:
    a = Attribute("x", ("a", "b"))
    with pytest.raises(DataError, match="distinct, duplicated: 'x'"):
        Schema((a, Attribute("x", ("c",))))
    with pytest.raises(DataError, match="at least one attribute"):
        Schema(())
    with pytest.raises(DataError, match="must be Attribute instances"):
        Schema((a, "y"))  # type: ignore[arg-type]
    with pytest.raises(DataError, match="unknown attribute 'nope'"):
        _schema().index("nope")
    with pytest.raises(DataError, match=r"name or an index in \[0, 3\), got 3"):
        _schema().subset([3])


# --------------------------------------------------------------------------- Dataset


def test_dataset_accessors() -> None:
    d = _dataset()
    assert (d.n, d.m, d.sizes) == (5, 3, (3, 4, 2))
    assert d.codes.dtype == np.int64 and not d.codes.flags.writeable
    np.testing.assert_array_equal(d.column("size"), [0, 3, 1, 0, 2])
    np.testing.assert_array_equal(d.column(2), [1, 0, 1, 0, 1])
    np.testing.assert_array_equal(d.marginal("color"), [3, 1, 1])
    np.testing.assert_array_equal(d.values("flag"), ["yes", "no", "yes", "no", "yes"])
    sel = d.select(["flag", "color"])
    assert sel.schema.names == ("flag", "color")
    np.testing.assert_array_equal(sel.codes, d.codes[:, [2, 0]])


def test_joint_counts_exact_and_axis_order() -> None:
    d = _dataset()
    t = d.joint_counts(["color", "flag"])
    np.testing.assert_array_equal(t, [[1, 2], [1, 0], [0, 1]])
    np.testing.assert_array_equal(d.joint_counts(["flag", "color"]), t.T)
    full = d.joint_counts()
    assert full.shape == (3, 4, 2) and full.sum() == 5
    assert full[1, 3, 0] == 1 and full[0, 0, 1] == 1 and full[0, 0, 0] == 1
    with pytest.raises(DomainTooLargeError, match="needs 24 cells, more than max_cells=10"):
        d.joint_counts(max_cells=10)


def test_dataset_codes_are_copied_and_frozen() -> None:
    codes = np.array([[0, 1, 1]])
    d = Dataset(_schema(), codes)
    codes[0, 0] = 2
    assert d.column(0)[0] == 0
    with pytest.raises(ValueError, match="read-only"):
        d.codes[0, 0] = 1


@pytest.mark.parametrize(
    ("codes", "match"),
    [
        (np.zeros((0, 3), dtype=int), "at least one record, got 0"),
        (np.zeros((4, 2), dtype=int), r"shape \(n, 3\) for this schema, got shape \(4, 2\)"),
        (np.zeros(3, dtype=int), r"shape \(n, 3\)"),
        (np.array([[0, 4, 0]]), r"codes of attribute 'size' must lie in \[0, 4\), got values in \[4, 4\]"),
        (np.array([[-1, 0, 0]]), r"'color' must lie in \[0, 3\)"),
        (np.array([[0.0, 1.0, 0.0]]), "codes must be integers, got dtype float64"),
        (np.array([[True, False, True]]), "codes must be integers, got dtype bool"),
    ],
)
def test_dataset_rejects_bad_codes(codes: np.ndarray, match: str) -> None:
    with pytest.raises(DataError, match=match):
        Dataset(_schema(), codes)


def test_distribution_is_empirical() -> None:
    d = _dataset()
    ws = d.distribution()
    assert isinstance(ws, WeightedSample)
    np.testing.assert_allclose(ws.marginal((0, 2)), d.joint_counts([0, 2]) / d.n)


def test_from_frame_declared_and_inferred() -> None:
    df = pd.DataFrame(
        {"color": ["red", "blue", "red"], "size": ["M", "S", "XL"], "flag": ["no", "no", "yes"], "x": [1, 2, 3]}
    )
    d = Dataset.from_frame(df, _schema())
    np.testing.assert_array_equal(d.codes, [[0, 1, 0], [2, 0, 0], [0, 3, 1]])
    inferred = Dataset.from_frame(df, ["x", _schema()["flag"]], kinds={"x": "ordinal"})
    assert inferred.schema["x"].categories == ("1", "2", "3")
    assert inferred.schema["x"].kind == "ordinal"
    np.testing.assert_array_equal(inferred.codes, [[0, 0], [1, 0], [2, 1]])


def test_from_frame_errors() -> None:
    df = pd.DataFrame({"color": ["red", "pink"], "flag": ["no", "yes"]})
    with pytest.raises(DataError, match=r"missing columns \['size'\]"):
        Dataset.from_frame(df, _schema())
    with pytest.raises(DataError, match="'color' has values outside its declared categories: 'pink'"):
        Dataset.from_frame(df, _schema().subset(["color", "flag"]))
    with pytest.raises(DataError, match="the frame is empty"):
        Dataset.from_frame(df.iloc[:0], _schema().subset(["color"]))
    nan = pd.DataFrame({"color": ["red", None]})
    with pytest.raises(DataError, match=r"'color' has missing values \(None/NaN\) in 1 records"):
        Dataset.from_frame(pd.DataFrame({"color": [np.nan, "red"]}), _schema().subset(["color"]))
    with pytest.raises(DataError, match=r"'color' has missing values \(None/NaN\) in 1 records"):
        Dataset.from_frame(nan, _schema().subset(["color"]))


def test_infer_schema_orders_ordinals_numerically() -> None:
    s = infer_schema([("10", "b"), ("9", "a"), ("100", "b")], ["n", "c"], {"n": "ordinal"})
    assert s["n"].categories == ("9", "10", "100")
    assert s["c"].categories == ("a", "b")
    with pytest.raises(DataError, match="no rows"):
        infer_schema([], ["n"])
    with pytest.raises(DataError, match=r"kinds given for unknown columns \['z'\]"):
        infer_schema([("1",)], ["n"], {"z": "ordinal"})
    with pytest.raises(DataError, match=r"rows must each have 2 values .* got rows of \[1, 2\] values"):
        infer_schema([("1", "a"), ("2",)], ["n", "c"])
    with pytest.raises(DataError, match=r"rows must each have 2 values .* got rows of \[3\] values"):
        infer_schema([("1", "a", "x")], ["n", "c"])
    # mixed types are stripped strings; a 2-D object array works the same as rows
    mixed = infer_schema(np.array([[1, " b"], [2.5, "a "], [1, "b"]], dtype=object), ["n", "c"])
    assert mixed["n"].categories == ("1", "2.5") and mixed["c"].categories == ("a", "b")


def test_numeric_labels_sort_numerically_whatever_the_kind() -> None:
    """Years of schooling read from a file: '9' before '12', not after '20' as text would sort;
    labels that are not numbers ('?', 'nan', 'inf') follow in code-point order."""
    educ = [("12",), ("14",), ("16",), ("17",), ("20",), ("9",), ("?",), ("9.5",), ("nan",), ("-1",)]
    assert infer_schema(educ, ["educ"])["educ"].categories == ("-1", "9", "9.5", "12", "14", "16", "17", "20", "?", "nan")
    assert infer_schema(educ, ["educ"], {"educ": "ordinal"})["educ"].categories[:3] == ("-1", "9", "9.5")
    assert sorted(["1.0", "1", "b", "A"], key=label_order) == ["1", "1.0", "A", "b"]


# --------------------------------------------------------------------------- Adult


def test_adult_schema_matches_paper_section_6_1() -> None:
    s = adult_schema()
    assert s.names == ADULT_ATTRIBUTES
    assert s.sizes == (9, 16, 7, 15, 6, 5, 2, 2)
    assert s.cells == 1_814_400
    assert s.kinds == ("nominal", "ordinal") + ("nominal",) * 6
    assert "?" in s["workclass"].categories and "?" in s["occupation"].categories
    assert s["education"].categories[0] == "Preschool" and s["education"].categories[-1] == "Doctorate"


ADULT_LINES = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K",
    "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, >50K",
    "",
]


def test_parse_adult_lines_exact() -> None:
    d = parse_adult(ADULT_LINES)
    assert d.n == 2
    s = adult_schema()
    expected = [
        [s[a].code(v) for a, v in zip(ADULT_ATTRIBUTES, vals)]
        for vals in (
            ("State-gov", "Bachelors", "Never-married", "Adm-clerical", "Not-in-family", "White", "Male", "<=50K"),
            ("?", "Some-college", "Married-civ-spouse", "?", "Husband", "Asian-Pac-Islander", "Male", ">50K"),
        )
    ]
    np.testing.assert_array_equal(d.codes, expected)


def test_parse_adult_test_format() -> None:
    lines = ["|1x3 Cross validator", ADULT_LINES[0].replace("<=50K", "<=50K."), ADULT_LINES[1] + ".", "\n"]
    np.testing.assert_array_equal(parse_adult(lines).codes, parse_adult(ADULT_LINES).codes)


def test_parse_adult_errors() -> None:
    with pytest.raises(DataError, match="line 1 must have 15 comma-separated fields, got 3"):
        parse_adult(["a, b, c"])
    bad = ADULT_LINES[0].replace("White", "Green")
    with pytest.raises(DataError, match="line 2: value 'Green' of 'race' is not a known category"):
        parse_adult(["", bad])
    with pytest.raises(DataError, match="no Adult records"):
        parse_adult(["", "|header"])


def _open_text(path: Path) -> TextIO:
    """A text file, or a gzip-compressed one (the shipped copy of Adult)."""
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def test_adult_real_file_category_counts(adult_path: Path) -> None:
    with _open_text(adult_path) as fh:
        d = parse_adult(fh)
    assert d.n == 32_561
    # every declared category occurs in the file (so the sizes are those of the data)
    for j, attr in enumerate(d.schema):
        assert np.all(d.marginal(j) > 0), attr.name
    # published counts (adult.names / UCI): 24,720 records <=50K, 1,836 workclass '?'
    np.testing.assert_array_equal(d.marginal("income"), [24_720, 7_841])
    assert d.marginal("workclass")[-1] == 1_836
    assert d.marginal("occupation")[-1] == 1_843
    # education codes follow education-num: code + 1 == education-num on every line
    with _open_text(adult_path) as fh:
        nums = [int(line.split(",")[ADULT_COLUMNS.index("education-num")]) for line in fh if line.strip()]
    np.testing.assert_array_equal(d.column("education") + 1, nums)


def test_infer_schema_names_the_rows_that_do_not_fit_the_names() -> None:
    with pytest.raises(DataError, match=r"rows must each have 2 values \(one per name in names=\['a', 'b'\]\), got rows of \[1, 2\] values"):
        infer_schema([("x", "y"), ("z",)], ["a", "b"])
    with pytest.raises(DataError, match=r"rows must each have 1 values .* got rows of \[2\] values"):
        infer_schema([("x", "y")], ["a"])
