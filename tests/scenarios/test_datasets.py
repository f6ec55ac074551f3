"""Tests of scenarios.datasets: reading UCI Adult and generic CSV files."""

from __future__ import annotations

import gzip
import hashlib
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest

from mprr.data import Attribute, adult_schema
from mprr.errors import DataError
from scenarios.datasets import (BUNDLED_ADULT_DIR, bundled_adult, check_category_counts, delimiter_hint,
                                header_among_values, load_adult, load_table, max_categories)

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


def test_load_adult_test_file() -> None:
    d = load_adult(bundled_adult("adult.test"))
    assert d.n == 16_281
    np.testing.assert_array_equal(d.marginal("income"), [12_435, 3_846])


def test_the_shipped_copy_is_the_uci_files_unchanged_with_its_attribution() -> None:
    """Each .gz decompresses to the file whose SHA-256 the data README lists; the README carries
    the citation (with its DOI) and the licence."""
    readme = (BUNDLED_ADULT_DIR / "README.md").read_text(encoding="utf-8")
    for name in ("adult.data", "adult.test", "adult.names"):
        listed = re.search(rf"`{re.escape(name)}`[^|]*\| `([0-9a-f]{{64}})`", readme)
        assert listed, name
        path = BUNDLED_ADULT_DIR / name
        raw = path.read_bytes() if path.is_file() else gzip.decompress((BUNDLED_ADULT_DIR / f"{name}.gz").read_bytes())
        assert hashlib.sha256(raw).hexdigest() == listed.group(1), name
    assert not (BUNDLED_ADULT_DIR / "adult.data").exists() and not (BUNDLED_ADULT_DIR / "adult.test").exists()
    assert "https://doi.org/10.24432/C5XW20" in readme and "CC BY 4.0" in readme and "Becker" in readme


def test_the_shipped_copy_is_package_data() -> None:
    """Every file of scenarios/data/adult matches a package-data pattern of pyproject.toml, so an
    installed (not editable) package has it."""
    root = BUNDLED_ADULT_DIR.parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["scenarios"]
    files = sorted(p.relative_to(root / "scenarios").as_posix() for p in BUNDLED_ADULT_DIR.iterdir())
    assert files == ["data/adult/README.md", "data/adult/adult.data.gz", "data/adult/adult.names",
                     "data/adult/adult.test.gz"]
    assert all(any(fnmatch(f, pat) for pat in patterns) for f in files)


def test_bundled_adult_names_the_allowed_files() -> None:
    with pytest.raises(DataError, match="bundled Adult file must be one of adult.data, adult.test, got 'adult.names'"):
        bundled_adult("adult.names")


def test_load_adult_gzip_file_folder_and_damaged_gzip(tmp_path: Path) -> None:
    (tmp_path / "adult.data.gz").write_bytes(gzip.compress((ADULT_LINE + "\n").encode()))
    assert load_adult(tmp_path / "adult.data.gz").n == 1
    assert load_adult(tmp_path).n == 1  # a folder holding only adult.data.gz
    (tmp_path / "bad.gz").write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="Adult file .*bad.gz' is not a readable gzip file"):
        load_adult(tmp_path / "bad.gz")


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


def test_load_table_inferred_and_declared_columns(tmp_path: Path) -> None:
    f = _write(tmp_path, "id,grade,color,flag\n1,10,red,y\n2,9,blue,n\n3,10,red,n\n")
    d = load_table(f, ["grade", "color"], kinds={"grade": "ordinal"})
    assert d.schema.names == ("grade", "color")
    assert d.schema["grade"].categories == ("9", "10") and d.schema["grade"].kind == "ordinal"
    assert d.schema["color"].categories == ("blue", "red")
    np.testing.assert_array_equal(d.codes, [[1, 1], [0, 0], [1, 1]])
    flag = Attribute("flag", ("n", "y", "maybe"))  # declared: a category the data lacks stays
    d2 = load_table(f, [flag, "color"])
    assert d2.schema["flag"] == flag
    np.testing.assert_array_equal(d2.column("flag"), [1, 0, 0])
    with pytest.raises(DataError, match=r"data\.csv: .*'flag' has values outside its declared categories: 'y'"):
        load_table(f, [Attribute("flag", ("n",)), "color"])


def test_max_categories_is_one_per_five_records_within_64_and_4096() -> None:
    assert [max_categories(n) for n in (2, 100, 320, 1000, 20_480, 32_561, 10**6)] == \
        [64, 64, 64, 200, 4096, 4096, 4096]


def test_check_category_counts_refuses_above_the_limit(tmp_path: Path) -> None:
    rows = "".join(f"{i % 200},{i % 2}\n" for i in range(1000))  # 200 categories = 1000 // 5: allowed
    f = _write(tmp_path, "code,flag\n" + rows)
    check_category_counts(load_table(f), f, columns_given=False)
    g = tmp_path / "more.csv"  # 201 categories, 1001 records
    g.write_text("code,flag\n" + rows + "extra,0\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"more\.csv: column 'code' \(201 distinct values\) has too many categories "
                                        r"for randomized response: at most 200 for 1,001 records .*add one \(the "
                                        r"header read was \['code', 'flag'\]\)"):
        check_category_counts(load_table(g), g, columns_given=False)


def test_load_table_reading_errors_name_the_option(tmp_path: Path) -> None:
    f = _write(tmp_path, "a;b\nx;y\n")
    with pytest.raises(DataError, match=r"columns \['a'\] are not in the file; it has \['a;b'\]; the header was read "
                                        r"as the single field 'a;b': if the file is separated by ';', pass "
                                        r"delimiter=';'"):
        load_table(f, ["a"])
    assert load_table(f, delimiter=";").schema.names == ("a", "b")
    assert delimiter_hint(["a\tb"]).endswith("(--delimiter '\\t' on the command line)")
    assert delimiter_hint(["a,b"]) == "" and delimiter_hint(["a;b", "c"]) == ""
    with pytest.raises(DataError, match=r"delimiter must be a single character, got ';;'"):
        load_table(f, delimiter=";;")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("a,b\nJosé,x\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin\.csv: the file is not utf-8 text \(.*\); pass its encoding, e\.g\. "
                                        r"encoding='latin-1' \(--encoding latin-1 on the command line\)"):
        load_table(latin)
    assert load_table(latin, encoding="latin-1").schema["a"].categories == ("José",)
    with pytest.raises(DataError, match=r"encoding must be a Python text encoding .*, got 'klingon'"):
        load_table(latin, encoding="klingon")
    with pytest.raises(DataError, match=r"data file '.*' is a directory, not a file"):
        load_table(tmp_path)
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match=r"empty\.csv: the file is empty \(no header line, no records\)"):
        load_table(empty)
    # CSV options on a Parquet file are refused before it is read (not recorded as if they applied)
    parquet = tmp_path / "t.parquet"
    parquet.write_bytes(b"PAR1")
    with pytest.raises(DataError, match=r"t\.parquet: delimiter = ';', encoding = 'latin-1' applies to CSV files "
                                        r"only; a \.parquet file is read as Parquet"):
        load_table(parquet, delimiter=";", encoding="latin-1")


def test_header_among_values_names_the_columns_whose_name_is_one_of_their_values(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("yes,N\nno,S\nyes,N\n", encoding="utf-8")  # no header: the first record is read as one
    assert header_among_values(load_table(csv)) == ["yes", "N"]
    csv.write_text("smoker,region\nsmoker,N\nno,S\n", encoding="utf-8")
    assert header_among_values(load_table(csv)) == ["smoker"]
    csv.write_text("smoker,region\nyes,N\nno,S\n", encoding="utf-8")
    assert header_among_values(load_table(csv)) == []

