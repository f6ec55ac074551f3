"""``mprr run local_anonymization --data FILE --columns ...``: a user's CSV / Parquet table."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mprr.errors import DataError
from scenarios.cli import main
from scenarios.datasets import check_category_counts, declare_ordinal, load_table, parse_ordinal

PNG = b"\x89PNG\r\n\x1a\n"


def _frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    """Two dependent pairs (age–smoker, region–edu) and an id column that is not categorical."""
    rng = np.random.default_rng(seed)
    age = rng.choice(["young", "mid", "old"], n, p=[0.3, 0.5, 0.2])
    smoker = np.where(age == "old", rng.choice(["yes", "no"], n, p=[0.9, 0.1]),
                      rng.choice(["yes", "no"], n, p=[0.1, 0.9]))
    region = rng.choice(["N", "S", "E", "W"], n)
    edu = np.where(np.isin(region, ["N", "E"]), rng.choice(["hs", "ba"], n, p=[0.9, 0.1]),
                   rng.choice(["hs", "ba"], n, p=[0.1, 0.9]))
    return pd.DataFrame({"id": np.arange(n), "age": age, "smoker": smoker, "region": region, "edu": edu})


def _write(tmp_path: Path, frame: pd.DataFrame, name: str = "data.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_csv_run_writes_the_report_on_the_files_own_truth(tmp_path: Path) -> None:
    frame = _frame()
    csv = tmp_path / "survey.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "out"
    code, stdout, err = _main("run", "local_anonymization", "--data", str(csv), "--columns",
                              "age,smoker,region,edu", "--engine", "fast", "--set", "queries=60", "--set", "Tv=12", "--set", "epsilon=8",
                              "--out", str(out))
    assert code == 0, err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    params = doc["parameters"]
    assert (params["n"], params["sizes"], params["columns"]) == (400, [3, 2, 4, 2], ["age", "smoker", "region", "edu"])
    assert params["epsilon"] == 8.0 and params["p"] is None and params["clusters"] is None  # effective values
    assert doc["metrics"]["attributes"] == ["age", "smoker", "region", "edu"]
    assert doc["metrics"]["planted_clusters"] is None and doc["metrics"]["runs_recovering_planted_clusters"] is None
    assert sorted(map(sorted, doc["metrics"]["clusters_found"])) == [[0, 1], [2, 3]]
    prov = doc["provenance"]
    assert prov["data_sha256"] == hashlib.sha256(csv.read_bytes()).hexdigest()
    assert set(prov["versions"]) >= {"python", "mprr", "numpy", "pandas"} and prov["git_commit"]
    for name in doc["figures"]:
        assert (out / name).read_bytes()[:8] == PNG
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "the file's own empirical distribution" in report and "{age,smoker}" in report
    assert "clusters found {age,smoker} {region,edu}" in stdout or "clusters found {region,edu} {age,smoker}" in stdout


def test_missing_cells_need_a_label(tmp_path: Path) -> None:
    frame = _frame(60)
    frame.loc[[5, 9], "edu"] = None
    csv = tmp_path / "gaps.csv"
    frame.to_csv(csv, index=False)
    with pytest.raises(DataError, match=r"column 'edu' has 2 missing value\(s\) \(first at data row 6\); "
                                        r"pass missing='\?' \(--missing '\?' on the command line\)"):
        load_table(csv, ["age", "edu"])
    data = load_table(csv, ["age", "edu"], missing="?")
    assert data.schema["edu"].categories == ("?", "ba", "hs") and int((data.values("edu") == "?").sum()) == 2
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--columns", "age,edu",
                         "--out", str(tmp_path / "o"))
    assert code == 2 and "column 'edu' has 2 missing value(s)" in err


def test_parquet_reads_like_csv(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    frame = _frame(80)
    frame.to_parquet(tmp_path / "t.parquet")
    frame.to_csv(tmp_path / "t.csv", index=False)
    a = load_table(tmp_path / "t.parquet", ["age", "region"])
    b = load_table(tmp_path / "t.csv", ["age", "region"])
    assert a.schema == b.schema and np.array_equal(a.codes, b.codes)
    whole = load_table(tmp_path / "t.csv")
    assert whole.schema.names == ("id", "age", "smoker", "region", "edu") and whole.schema["id"].size == 80


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (("--columns", "age,nope"), "columns ['nope'] are not in the file; it has ['id', 'age', 'smoker', 'region', 'edu']"),
        (("--columns", "age"), "parameters.columns must be a list of at least 2 items"),
        (("--columns", "age,age"), "columns must be distinct, got ['age', 'age']"),
    ],
)
def test_bad_columns(argv: tuple[str, ...], pattern: str, tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    _frame(30).to_csv(csv, index=False)
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), *argv, "--out", str(tmp_path / "o"))
    assert code == 2 and pattern in err, err


def test_missing_data_file_and_columns_without_data(tmp_path: Path) -> None:
    code, _, err = _main("run", "local_anonymization", "--data", str(tmp_path / "none.csv"), "--out", str(tmp_path))
    assert code == 2 and "parameters.data must be the path of an existing file" in err
    code, _, err = _main("run", "local_anonymization", "--columns", "a,b", "--out", str(tmp_path))
    assert code == 2 and "parameters.columns applies to a data file, but parameters.data is not set" in err


def test_synthetic_data_settings_are_refused_with_a_data_file(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    _frame(120).to_csv(csv, index=False)
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--columns", "age,smoker",
                         "--set", "n=100", "--set", "clusters=[[0, 1]]", "--out", str(tmp_path / "o"))
    assert code == 2 and "parameters n = 100, clusters = [[0, 1]] describe the built-in synthetic data and " \
                         f"cannot apply to the data file {str(csv)!r}, which has 120 records and its own " \
                         "columns ['age', 'smoker'] (RR-Clusters finds the clusters of your data itself" in err, err
    assert "drop n, clusters" in err


def test_which_synthetic_settings_count_as_given(tmp_path: Path) -> None:
    from scenarios.local_anonymization import synthetic_settings
    from scenarios.registry import load

    csv = tmp_path / "d.csv"
    _frame(30).to_csv(csv, index=False)
    shipped, spec = load("local_anonymization")  # its n, sizes, ... describe its own synthetic data
    assert synthetic_settings(shipped) == ()
    assert synthetic_settings(shipped.with_overrides(parameters={"data": str(csv)}, schema=spec.schema)) == ()
    over = shipped.with_overrides(parameters={"data": str(csv), "strength": 0.5}, schema=spec.schema)
    assert synthetic_settings(over) == ("strength",)
    own = tmp_path / "own.toml"  # a file that names the data file: its synthetic settings are given
    own.write_text(f'[scenario]\nkind = "local_anonymization"\nmodule = "scenarios.local_anonymization"\n'
                   f'[parameters]\ndata = "{csv}"\nn = 50\nexponent = 0.5\n', encoding="utf-8")
    assert synthetic_settings(load(str(own))[0]) == ("n", "exponent")


def test_columns_with_too_many_categories_are_named(tmp_path: Path) -> None:
    headerless = tmp_path / "noheader.csv"
    _frame(400).to_csv(headerless, index=False, header=False)
    code, _, err = _main("run", "local_anonymization", "--data", str(headerless), "--out", str(tmp_path / "o"))
    assert code == 2 and "column '0' (399 distinct values) has too many categories for randomized response: " \
                         "at most 79 for 399 records" in err, err
    assert "or, if the file has no header row, add one (the header read was ['0', " in err
    csv = tmp_path / "d.csv"
    _frame(400).to_csv(csv, index=False)
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--columns", "id,age",
                         "--out", str(tmp_path / "o"))
    assert code == 2 and "column 'id' (400 distinct values)" in err and "bin" in err
    assert "header" not in err  # the columns were found by name: the header is one


def test_delimiter_and_encoding_options(tmp_path: Path) -> None:
    text = "ville;sexe\n" + "".join(f"{v};{s}\n" for v, s in [("Besançon", "F"), ("Nîmes", "M")] * 10)
    latin = tmp_path / "villes.txt"
    latin.write_bytes(text.encode("latin-1"))
    out = str(tmp_path / "o")
    code, _, err = _main("run", "local_anonymization", "--data", str(latin), "--out", out)
    assert code == 2 and f"{latin}: the file is not utf-8 text" in err and "--encoding latin-1" in err, err
    code, _, err = _main("run", "local_anonymization", "--data", str(latin), "--encoding", "latin-1", "--out", out)
    assert code == 2 and "has only 1 column ['ville;sexe']; RR-Clusters needs at least 2 (attribute pairs); the " \
                         "header was read as the single field 'ville;sexe': if the file is separated by ';', pass " \
                         "delimiter=';' (--delimiter ';' on the command line)" in err, err
    code, _, err = _main("run", "local_anonymization", "--data", str(latin), "--encoding", "latin-1",
                         "--delimiter", ";", "--engine", "fast", "--set", "queries=5", "--quiet", "--out", out)
    assert code == 0, err
    doc = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    assert doc["parameters"]["columns"] == ["ville", "sexe"] and doc["parameters"]["delimiter"] == ";"
    tsv = tmp_path / "t.txt"
    tsv.write_text(text.replace(";", "\t"), encoding="utf-8")
    assert load_table(tsv, delimiter="\t").schema["ville"].categories == ("Besançon", "Nîmes")
    code, _, err = _main("run", "local_anonymization", "--data", str(tsv), "--delimiter", "\\t", "--engine", "fast",
                         "--set", "queries=5", "--quiet", "--out", out)
    assert code == 0, err


def test_data_directory_is_not_a_file(tmp_path: Path) -> None:
    code, _, err = _main("run", "local_anonymization", "--data", str(tmp_path), "--out", str(tmp_path / "o"))
    assert code == 2 and f"data file {str(tmp_path)!r} is a directory, not a file" in err, err


def test_a_file_without_header_row_is_warned_about(tmp_path: Path) -> None:
    """Written without its header, the file's first record becomes the header: each column's
    name is then one of its own values, which the run reports (and still runs: a real header
    can look like that)."""
    frame = _frame().drop(columns="id")
    csv = tmp_path / "no_header.csv"
    frame.to_csv(csv, index=False, header=False)
    first = [str(v) for v in frame.iloc[0]]
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--runs", "1", "--quiet",
                         "--out", str(tmp_path / "o"))
    assert code == 0, err
    names = ", ".join(repr(v) for v in first)
    assert (f"{csv}: columns {names} also appear among their own values: if the file has no header row, "
            "its first record was read as the header") in err, err
    frame.to_csv(csv, index=False)  # with its header: no warning
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--runs", "1", "--quiet",
                         "--out", str(tmp_path / "o2"))
    assert code == 0 and "no header row" not in err, err


def test_a_one_column_file_is_named_as_such(tmp_path: Path) -> None:
    csv = tmp_path / "one.csv"
    csv.write_text("a\nx\ny\n", encoding="utf-8")
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--out", str(tmp_path / "o"))
    assert code == 2 and f"the data file {str(csv)!r} has only 1 column ['a']; RR-Clusters needs at least 2" in err, err



def test_own_data_run_writes_the_estimates_with_their_intervals(tmp_path: Path) -> None:
    """The estimated 1-way marginals and the strongest 2-way tables, with SE and intervals beside
    the truth: in results.json (estimates), in report.md and in estimates.csv."""
    frame = _frame()
    csv = tmp_path / "survey.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "out"
    # the papers' setting p = 0.7 (little clipping at n = 400): the coverage check below is about the
    # closed-form and bootstrap intervals, not about a small budget
    code, stdout, err = _main("run", "local_anonymization", "--data", str(csv), "--columns", "age,smoker,region,edu",
                              "--engine", "fast", "--set", "queries=20", "--set", "Tv=12", "--set", "replicates=50",
                              "--set", "p=0.7", "--out", str(out))
    assert code == 0, err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert "estimates.csv" in doc["files"] and "estimates.csv" in stdout
    records = doc["estimates"]
    protocols = ["RR-Clusters", "RR-Clusters+Adjustment", "RR-Independent", "RR-Independent+Adjustment"]
    assert list(dict.fromkeys(r["protocol"] for r in records)) == protocols
    tables = list(dict.fromkeys(tuple(r["attributes"]) for r in records))
    assert tables[:4] == [("age",), ("smoker",), ("region",), ("edu",)] and len(tables) == 7
    assert {("age", "smoker"), ("region", "edu")} <= set(tables[4:])  # the pairs planted dependent come first
    truth = frame.groupby(["age", "smoker"]).size() / len(frame)
    for r in records:
        assert set(r) == {"protocol", "attributes", "labels", "estimate", "se", "ci_low", "ci_high", "truth",
                          "covered", "method"}
        assert r["ci_low"] <= r["estimate"] + 1e-12 or r["method"] == "parametric-bootstrap"
        assert r["se"] >= 0 and r["method"] in ("closed-form", "parametric-bootstrap")
        if r["attributes"] == ["age", "smoker"]:
            assert r["truth"] == pytest.approx(truth[tuple(r["labels"])])
    adjusted = {r["method"] for r in records if r["protocol"].endswith("+Adjustment")}
    assert adjusted == {"parametric-bootstrap"}
    ones = [r for r in records if r["protocol"] == "RR-Clusters" and len(r["attributes"]) == 1]
    assert sum(r["covered"] for r in ones) >= len(ones) - 2  # 11 cells at 95 %: at most 2 misses is 98 % likely
    table = pd.read_csv(out / "estimates.csv", keep_default_na=False)
    assert list(table.columns) == ["protocol", "method", "attribute_1", "value_1", "attribute_2", "value_2", "truth",
                                   "estimate", "se", "ci_low", "ci_high", "covered"]
    assert len(table) == len(records)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Estimated 1-way marginals (run 1)" in report and "## Estimated 2-way tables" in report
    assert "Nayak eq. (3.2)" in report and "parametric bootstrap: 50 replicates" in report
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--columns", "age,smoker",
                         "--engine", "fast", "--set", "queries=20", "--set", "replicates=1", "--out", str(out))
    assert code == 2 and "replicates" in err, err


def test_a_constant_column_is_named_with_the_columns_that_leave_it_out(tmp_path: Path) -> None:
    csv = tmp_path / "const.csv"
    csv.write_text("a,b,c\nx,1,k\ny,2,k\nx,1,k\ny,2,k\nx,2,k\ny,1,k\n", encoding="utf-8")
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--out", str(tmp_path / "o"))
    assert code == 2 and "column 'c' (only 'k') has a single value in all 6 records: randomized response needs at " \
                         "least 2 categories per column; leave it out with --columns a,b" in err, err
    tiny = tmp_path / "three.csv"  # 3 records: two of the three columns take one value
    tiny.write_text("a,b,c\nx,1,k\ny,1,k\nz,1,k\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"columns 'b' \(only '1'\), 'c' \(only 'k'\) have a single value in all 3 "
                                        r"records: .*; use a file with at least 2 columns"):
        check_category_counts(load_table(tiny), tiny, columns_given=False)


def test_numeric_labels_sort_numerically_and_ordinal_columns_are_declared(tmp_path: Path) -> None:
    csv = tmp_path / "ord.csv"
    csv.write_text("educ,size,g\n12,S,a\n9,M,b\n20,L,a\n12,M,b\n9,S,a\n16,L,b\n", encoding="utf-8")
    assert load_table(csv).schema["educ"].categories == ("9", "12", "16", "20")  # not '12','16','20','9'
    assert parse_ordinal(["educ", " size = S, M ,L"]) == {"educ": None, "size": ("S", "M", "L")}
    out = tmp_path / "o"
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--ordinal", "educ", "--ordinal",
                         "size=S,M,L", "--engine", "fast", "--runs", "1", "--quiet", "--out", str(out))
    assert code == 0, err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["parameters"]["ordinal"] == ["educ", "size=S,M,L"]
    data = declare_ordinal(load_table(csv), parse_ordinal(["educ", "size=S,M,L"]), csv)
    assert [(a.name, a.categories, a.kind) for a in data.schema] == [
        ("educ", ("9", "12", "16", "20"), "ordinal"), ("size", ("S", "M", "L"), "ordinal"), ("g", ("a", "b"), "nominal")]
    assert list(data.values("size")) == ["S", "M", "L", "M", "S", "L"]  # the records unchanged
    for argv, message in [
        (["size=S,M"], r"ordinal order of column 'size' \['S', 'M'\] leaves out category \['L'\] found in the "
                       r"column; list every category: size=S,M,L"),
        (["nope"], r"ordinal names column 'nope', which is not among the columns used \['educ', 'size', 'g'\]"),
        (["size=S,S,L"], r"ordinal entry 'size=S,S,L' must list at least 2 distinct, non-empty categories"),
        (["=S,M"], r"ordinal entry '=S,M' must start with a column name"),
        (["educ", "educ"], r"ordinal names column 'educ' twice"),
    ]:
        with pytest.raises(DataError, match=message):
            declare_ordinal(load_table(csv), parse_ordinal(argv), csv)
    code, _, err = _main("run", "local_anonymization", "--data", str(csv), "--ordinal", "size=S,M",
                         "--out", str(tmp_path / "o2"))
    assert code == 2 and "leaves out category ['L']" in err


def test_a_short_row_is_named_as_malformed_not_missing(tmp_path: Path) -> None:
    csv = tmp_path / "ragged.csv"
    csv.write_text("a,b,c\nx,1,k\n\ny,2\nx,,m\n", encoding="utf-8")
    message = (r"data row 2 \(line 4\) is malformed: it has 2 fields, the header has 3; fix the row \(a field or a "
               r"separator is missing\)")
    with pytest.raises(DataError, match=message):
        load_table(csv)
    with pytest.raises(DataError, match=message):  # --missing keeps empty fields, never a short row
        load_table(csv, missing="?")
    csv.write_text("a,b,c\nx,1,k\ny,2,\nx,,m\n", encoding="utf-8")  # empty fields: missing values
    assert load_table(csv, missing="?").schema["c"].categories == ("?", "k", "m")


def test_the_debug_log_of_a_data_run_shows_the_parameters_used_not_the_synthetic_defaults(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    _frame(60).to_csv(csv, index=False)
    code, _, err = _main("-vv", "run", "local_anonymization", "--data", str(csv), "--columns", "age,smoker,region",
                         "--engine", "fast", "--set", "queries=10", "--quiet", "--out", str(tmp_path / "o"))
    assert code == 0, err
    logged = [line for line in err.splitlines() if "scenarios.runner: parameters" in line]
    assert len(logged) == 2 and logged[0].startswith("mprr: DEBUG: scenarios.runner: parameters given (command line: "
                                                     "columns, data, queries): {'columns': ('age', 'smoker', 'region')")
    assert "parameters used: {'n': 60, 'sizes': [3, 2, 4], 'clusters': None, 'strength': None" in logged[1]
    assert "3000" not in err and "(4, 3, 5, 2, 6, 3, 8, 2)" not in err  # the synthetic data's n and sizes


def test_a_warning_says_when_the_estimated_dependences_are_within_the_noise(tmp_path: Path) -> None:
    gen = np.random.default_rng(1)
    csv = tmp_path / "indep.csv"
    pd.DataFrame({"a": gen.choice(list("xyz"), 200), "b": gen.choice(list("uvw"), 200),
                  "c": gen.choice(list("pq"), 200)}).to_csv(csv, index=False)
    code, out, err = _main("run", "local_anonymization", "--data", str(csv), "--engine", "fast", "--quiet",
                           "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "warning: every estimated dependence of RR-Clusters (Cramér's V) is within the noise of the " \
           "randomization: an independent pair shows V ≈ " in out and "at n = 200 through these matrices" in out
    assert "WARNING" in err and "Warning: every estimated" in (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    # strongly dependent columns at a size and budget where the noise is small (the papers' p = 0.7): no warning
    code, out, err = _main("run", "local_anonymization", "--data", str(_write(tmp_path, _frame(3000))), "--columns",
                           "age,smoker,region,edu", "--engine", "fast", "--quiet", "--set", "Tv=12", "--set", "p=0.7",
                           "--set", "queries=20", "--out", str(tmp_path / "o2"))
    assert code == 0 and "  warning: " not in out, out
