"""Configuration schema validation: every bad value names the key, the value and what is allowed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mprr.errors import ConfigurationError
from scenarios.config import (
    REQUIRED,
    Bool,
    Choice,
    Field,
    Float,
    Int,
    List,
    PathValue,
    Schema,
    Str,
    Table,
    merge_tables,
    override_tables,
    parse_config,
    read_toml,
)

SCHEMA = Schema(
    [
        Field("n", Int(min=2), 100, help="number of parties"),
        Field("epsilon", Float(min=0.0, min_exclusive=True), 1.0),
        Field("p", Float(min=0.0, max=1.0), 0.5),
        Field("method", Choice(("4.1", "4.2", "4.3")), "4.1"),
        Field("adjust", Bool(), False),
        Field("label", Str(), "x"),
        Field("sizes", List(Int(min=2), min_len=1, max_len=3), (2, 3)),
        Field("grid", List(List(Float(min=0.0), min_len=2, max_len=2)), ((0.0, 1.0),)),
        Field("sub", Table(Schema([Field("tv", Int(min=1), 50)])), {"tv": 50}),
    ]
)


def test_defaults_are_filled_and_result_is_read_only() -> None:
    out = SCHEMA.validate({"n": 5})
    assert out["n"] == 5 and out["epsilon"] == 1.0 and out["method"] == "4.1"
    assert out["sizes"] == (2, 3)
    with pytest.raises(TypeError):
        out["n"] = 6  # type: ignore[index]


def test_values_are_normalised() -> None:
    out = SCHEMA.validate({"epsilon": 2, "sizes": [4], "grid": [[1, 2]], "sub": {}})
    assert isinstance(out["epsilon"], float) and out["epsilon"] == 2.0
    assert out["sizes"] == (4,)
    assert out["grid"] == ((1.0, 2.0),)
    assert out["sub"]["tv"] == 50
    assert SCHEMA.validate({"method": 4.2})["method"] == "4.2"  # TOML and --set read 4.2 unquoted as a number


@pytest.mark.parametrize(
    ("table", "pattern"),
    [
        ({"n": 1}, r"parameters\.n must be an integer >= 2, got 1 \(int\)"),
        ({"n": True}, r"parameters\.n must be an integer >= 2, got True \(bool\)"),
        ({"n": 2.0}, r"parameters\.n must be an integer >= 2, got 2\.0 \(float\)"),
        ({"n": "10"}, r"parameters\.n must be an integer >= 2, got '10' \(str\)"),
        ({"epsilon": 0}, r"parameters\.epsilon must be a finite number > 0, got 0 \(int\)"),
        ({"epsilon": math.inf}, r"parameters\.epsilon must be a finite number > 0, got inf"),
        ({"epsilon": math.nan}, r"parameters\.epsilon must be a finite number > 0, got nan"),
        ({"p": 1.5}, r"parameters\.p must be a finite number >= 0 and <= 1, got 1\.5"),
        ({"method": "4.4"}, r"parameters\.method must be one of '4\.1', '4\.2', '4\.3', got '4\.4'"),
        ({"method": 4.4}, r"parameters\.method must be one of '4\.1', '4\.2', '4\.3', got 4\.4 \(float\)"),
        ({"method": True}, r"parameters\.method must be one of '4\.1', '4\.2', '4\.3', got True \(bool\)"),
        ({"adjust": "yes"}, r"parameters\.adjust must be true or false, got 'yes'"),
        ({"label": ""}, r"parameters\.label must be a non-empty string, got ''"),
        ({"sizes": [2, 1]}, r"parameters\.sizes\[1\] must be an integer >= 2, got 1"),
        ({"sizes": []}, r"parameters\.sizes must be a list of 1 to 3 items, each an integer >= 2, got 0 items"),
        ({"sizes": 3}, r"parameters\.sizes must be a list .*, got 3 \(int\)"),
        ({"grid": [[1.0]]}, r"parameters\.grid\[0\] must be a list of exactly 2 items"),
        ({"grid": [[1.0, -1.0]]}, r"parameters\.grid\[0\]\[1\] must be a finite number >= 0, got -1\.0"),
        ({"sub": {"tv": 0}}, r"parameters\.sub\.tv must be an integer >= 1, got 0"),
        ({"sub": 3}, r"parameters\.sub must be a table with keys tv, got 3"),
    ],
)
def test_bad_values_name_key_value_and_allowed(table: dict, pattern: str) -> None:
    with pytest.raises(ConfigurationError, match=pattern):
        SCHEMA.validate(table, prefix="parameters")


def test_unknown_key_suggests_the_closest_and_lists_allowed() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown key 'parameters\.epsilom' \(did you mean 'epsilon'\?\); allowed keys: n, epsilon, p"):
        SCHEMA.validate({"epsilom": 1.0}, prefix="parameters")
    with pytest.raises(ConfigurationError, match=r"unknown key 'parameters\.sub\.td'"):
        SCHEMA.validate({"sub": {"td": 1}}, prefix="parameters")


def test_required_key_missing() -> None:
    schema = Schema([Field("path", PathValue(), REQUIRED, help="Adult data file")])
    with pytest.raises(ConfigurationError, match=r"parameters\.path is required \(Adult data file\): a path"):
        schema.validate({}, prefix="parameters")


def test_path_must_exist(tmp_path: Path) -> None:
    schema = Schema([Field("path", PathValue(must_exist=True))])
    existing = tmp_path / "a.txt"
    existing.write_text("x")
    assert schema.validate({"path": str(existing)})["path"] == existing
    with pytest.raises(ConfigurationError, match=r"path must be the path of an existing file, got '.*nope' \(not found\)"):
        schema.validate({"path": str(tmp_path / "nope")})


def test_schema_rejects_bad_default_and_duplicate_keys() -> None:
    with pytest.raises(ConfigurationError, match=r"default of n must be an integer >= 2, got 1"):
        Schema([Field("n", Int(min=2), 1)])
    with pytest.raises(ConfigurationError, match=r"declares key 'n' twice"):
        Schema([Field("n", Int(), 1), Field("n", Int(), 2)])


def _doc(**scenario: object) -> dict:
    return {"scenario": {"kind": "k", **scenario}, "parameters": {"n": 7}}


def test_parse_config_uses_file_values_then_runner_defaults() -> None:
    cfg = parse_config(_doc(runs=4, seed=9, engine="actors", description="d"), name="demo",
                       schema=SCHEMA, default_runs=1, default_seed=1)
    assert (cfg.name, cfg.kind, cfg.runs, cfg.seed, cfg.engine) == ("demo", "k", 4, 9, "actors")
    assert cfg.parameters["n"] == 7 and cfg.title == "demo" and cfg.description == "d"
    cfg = parse_config(_doc(), name="demo", schema=SCHEMA, default_runs=20, default_seed=3)
    assert (cfg.runs, cfg.seed, cfg.engine) == (20, 3, "fast")


@pytest.mark.parametrize(
    ("doc", "pattern"),
    [
        ({"parameters": {}}, r"must have a \[scenario\] table with kind"),
        ({"scenario": {"kind": "k"}, "params": {}}, r"unknown key 'params' \(did you mean 'parameters'\?\)"),
        ({"scenario": {"kind": "k", "runs": 0}}, r"scenario\.runs must be an integer >= 1, got 0"),
        ({"scenario": {"kind": "k", "seed": -1}}, r"scenario\.seed must be an integer >= 0, got -1"),
        ({"scenario": {"kind": "k", "engine": "threads"}}, r"scenario\.engine must be one of 'fast', 'actors', got 'threads'"),
        ({"scenario": {"kind": "k", "knd": 1}}, r"unknown key 'scenario\.knd' \(did you mean 'kind'\?\)"),
        ({"scenario": {}}, r"scenario\.kind is required"),
        ({"scenario": {"kind": "k"}, "parameters": {"n": 0}}, r"parameters\.n must be an integer >= 2, got 0"),
        ({"scenario": {"kind": "k"}, "parameters": 3}, r"parameters must be a table, got 3"),
    ],
)
def test_parse_config_rejects(doc: dict, pattern: str) -> None:
    with pytest.raises(ConfigurationError, match=pattern):
        parse_config(doc, name="demo", schema=SCHEMA)


def test_overrides_are_validated() -> None:
    cfg = parse_config(_doc(), name="demo", schema=SCHEMA)
    new = cfg.with_overrides(runs=3, seed=0, engine="actors", parameters={"p": 0.25, "sub": {"tv": 9}},
                             schema=SCHEMA)
    assert (new.runs, new.seed, new.engine) == (3, 0, "actors")
    assert new.parameters["p"] == 0.25 and new.parameters["n"] == 7 and new.parameters["sub"]["tv"] == 9
    assert cfg.parameters["p"] == 0.5  # the original is unchanged
    with pytest.raises(ConfigurationError, match=r"runs must be an integer >= 1, got 0"):
        cfg.with_overrides(runs=0)
    with pytest.raises(ConfigurationError, match=r"seed must be an integer >= 0, got -5"):
        cfg.with_overrides(seed=-5)
    with pytest.raises(ConfigurationError, match=r"parameters\.p must be a finite number >= 0 and <= 1, got 2"):
        cfg.with_overrides(parameters={"p": 2}, schema=SCHEMA)
    with pytest.raises(ConfigurationError, match=r"unknown key 'parameters\.q'"):
        cfg.with_overrides(parameters={"q": 2}, schema=SCHEMA)
    assert cfg.override_keys == frozenset() and new.override_keys == {"p", "sub"}
    assert new.with_overrides(parameters={"n": 3}, schema=SCHEMA).override_keys == {"p", "sub", "n"}


def test_merge_tables_is_recursive() -> None:
    assert merge_tables({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 5}}) == {"a": {"b": 5, "c": 2}, "d": 3}
    assert merge_tables({}, {"a": {"b": 1}}, {"a": {"c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}


def test_several_override_tables_merge_in_order_once() -> None:
    """The command line's tables (one per --set) are merged over the file's by with_overrides alone:
    nested keys key by key, a later table's value replacing an earlier one's."""
    cfg = parse_config(_doc(), name="demo", schema=SCHEMA)
    new = cfg.with_overrides(parameters=[{"sub": {"tv": 9}}, {"p": 0.25}, {"p": 0.75}], schema=SCHEMA)
    assert new.parameters["p"] == 0.75 and new.parameters["sub"]["tv"] == 9 and new.parameters["n"] == 7
    assert new.raw_parameters["p"] == 0.75 and new.override_keys == {"p", "sub"}
    assert cfg.with_overrides(parameters=[{}, {}], schema=SCHEMA) == cfg  # nothing to merge
    assert override_tables([{"a": 1}, {}, {"b": 2}]) == [{"a": 1}, {"b": 2}] and override_tables({"a": 1}) == [{"a": 1}]


def test_read_toml_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[scenario\nkind = 1\n")
    with pytest.raises(ConfigurationError, match=r"bad\.toml' is not valid TOML"):
        read_toml(bad)
    with pytest.raises(ConfigurationError, match=r"missing\.toml' does not exist"):
        read_toml(tmp_path / "missing.toml")


def test_a_derived_field_is_checked_once_by_its_parameter_object_which_names_the_toml_key() -> None:
    from mprr.protocols.parameters import RRClustersParameters
    from mprr.parameters import checked_parameters

    schema = Schema([Field.derived(RRClustersParameters, "Td"),
                     Field.derived(RRClustersParameters, "Tv", type=Int(min=1))])
    # the schema passes the object's own field on as given, and checks the field it narrows
    assert schema.validate({"Td": 2.0, "Tv": 3})["Td"] == 2.0
    with pytest.raises(ConfigurationError, match=r"^parameters\.Tv must be an integer >= 1, got 0 \(int\)$"):
        schema.validate({"Td": 0.1, "Tv": 0}, prefix="parameters")
    with pytest.raises(ConfigurationError, match=r"^parameters\.Td must be a finite number >= 0 and <= 1, "
                                                 r"got 2\.0 \(float\)$") as refused:
        checked_parameters(RRClustersParameters, {"Td": 2.0, "Tv": 3, "p": 0.5}, prefix="parameters")
    assert refused.value.parameter == "parameters.Td"
    built = checked_parameters(RRClustersParameters, {"Td": 0, "Tv": 3, "p": 0.5}, prefix="parameters")
    assert isinstance(built.Td, float) and built.Td == 0.0  # normalised by the object, read back from it
    # a rule between parameters is the object's own wording
    with pytest.raises(ConfigurationError, match=r"^give exactly one of p, epsilon_per_attribute"):
        checked_parameters(RRClustersParameters, {"Td": 0.1, "Tv": 3}, prefix="parameters")
