"""Scenario configuration: TOML files validated against a per-scenario schema.

A scenario file looks like::

    [scenario]
    kind = "lambda_table"            # the registered runner (required)
    description = "one line shown by `mprr list`"
    runs = 1                         # optional defaults, overridden by --runs/--seed/--engine
    seed = 1
    engine = "fast"

    [parameters]                     # validated against the runner's schema
    sizes = [5, 5, 5]

Every runner declares its parameters as a :class:`Schema` of :class:`Field` objects (key,
type, allowed values / range, default).  The value types are those of :mod:`mprr.parameters`,
and a protocol's parameter is derived from its parameter object (:meth:`Field.derived`, from
:mod:`mprr.protocols.parameters`) rather than written again.  Unknown keys, wrong types and bad
values raise :class:`~mprr.errors.ConfigurationError` naming the key, the bad value and what is
allowed.
"""

from __future__ import annotations

import builtins
import difflib
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Union

from mprr.errors import ConfigurationError
from mprr.parameters import REQUIRED, Bool, Choice, Float, Int, List, Parameters, Registered, Str, ValueType
from mprr.parameters import show_value as _show

__all__ = [
    "REQUIRED",
    "ENGINES",
    "Bool",
    "Choice",
    "Field",
    "Float",
    "Int",
    "List",
    "Overrides",
    "PathValue",
    "Registered",
    "Schema",
    "ScenarioConfig",
    "ScenarioModule",
    "Str",
    "Table",
    "merge_tables",
    "override_tables",
    "parse_config",
]

ENGINES = ("fast", "actors")

Overrides = Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]
"""Parameter overrides of a run: one table, or several merged in order (the command line's
``--set``, one table each; :meth:`ScenarioConfig.with_overrides`)."""

_SAME: Any = object()  # Field.derived: take the parameter object's own default




@dataclass(frozen=True)
class Workers(ValueType):
    """Monte Carlo workers: an integer in [0, max] (0 = all CPUs) or ``"ray"`` (tasks on a Ray cluster)."""

    max: int = 256

    def describe(self) -> str:
        return f'an integer >= 0 and <= {self.max} or "ray"'

    def check(self, value: Any, key: str) -> int | str:
        if value == "ray":
            return "ray"
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= self.max:
            raise self._fail(value, key)
        return int(value)


@dataclass(frozen=True)
class PathValue(ValueType):
    """A file-system path given as a string; ``must_exist`` checks it at validation time."""

    must_exist: bool = False

    def describe(self) -> str:
        return "the path of an existing file" if self.must_exist else "a path (string)"

    def check(self, value: Any, key: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self._fail(value, key)
        path = Path(value).expanduser()
        if self.must_exist and not path.exists():
            raise ConfigurationError(f"{key} must be {self.describe()}, got {value!r} (not found)")
        return path


@dataclass(frozen=True)
class Table(ValueType):
    """A nested TOML table validated by its own :class:`Schema`."""

    schema: Schema

    def describe(self) -> str:
        return "a table with keys " + ", ".join(self.schema.keys())

    def check(self, value: Any, key: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self._fail(value, key)
        return self.schema.validate(value, prefix=key)


# --------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Field:
    """One configuration key.

    Parameters
    ----------
    key
        Name of the key in the TOML table.
    type
        A :class:`ValueType` (``Int(min=1)``, ``Float(min=0, min_exclusive=True)``, ...).
    default
        Value used when the key is absent; :data:`REQUIRED` makes the key mandatory.  The
        default is validated too, so a schema cannot ship a value it would reject; ``None``
        makes the key optional (absent → ``None``; TOML itself has no null).
    help
        One line describing the key (shown in error messages and reports).
    owner
        The parameter object whose field this key is, unchanged (:meth:`derived`): that object
        checks the value when the scenario builds it (:func:`mprr.parameters.checked_parameters`), so
        :meth:`Schema.validate` passes it on as given.
    """

    key: str
    type: ValueType
    default: Any = REQUIRED
    help: str = ""
    owner: builtins.type[Parameters] | None = None

    @classmethod
    def derived(cls, parameters: builtins.type[Parameters], key: str, default: Any = _SAME, *, type: ValueType | None = None,
                help: str | None = None) -> Field:
        """The field of a protocol parameter, derived from its parameter object
        (:class:`mprr.parameters.Parameters`): its value type, default and help, each unless given.

        ``type`` narrows the value type where a scenario accepts less than the protocol (a smaller
        ``max_cells``, no raw estimate): the schema checks such a field itself; a field taken
        unchanged is the object's to check.
        """
        spec = parameters.spec(key)
        return cls(key, spec.type if type is None else type, spec.default if default is _SAME else default,
                   spec.help if help is None else help, parameters if type is None else None)


class Schema:
    """An ordered set of :class:`Field` objects; ``validate`` checks a TOML table against it."""

    def __init__(self, fields: Iterable[Field] = ()) -> None:
        self._fields: dict[str, Field] = {}
        for f in fields:
            if f.key in self._fields:
                raise ConfigurationError(f"schema declares key {f.key!r} twice")
            if f.default is not REQUIRED and f.default is not None:
                f.type.check(f.default, f"default of {f.key}")
            self._fields[f.key] = f

    def keys(self) -> tuple[str, ...]:
        """Declared keys, in declaration order."""
        return tuple(self._fields)

    def fields(self) -> tuple[Field, ...]:
        """Declared fields, in declaration order."""
        return tuple(self._fields.values())

    def validate(self, table: Mapping[str, Any], *, prefix: str = "") -> Mapping[str, Any]:
        """Return ``table`` with defaults filled in and values normalised (read-only mapping).

        Raises
        ------
        ConfigurationError
            For an unknown key, a missing required key, or a value of the wrong type / range.
        """
        dot = f"{prefix}." if prefix else ""
        for key in table:
            if key not in self._fields:
                raise ConfigurationError(_unknown_key(f"{dot}{key}", key, self.keys()))
        out: dict[str, Any] = {}
        for key, f in self._fields.items():
            if key in table:  # a parameter object's own field: the object checks it (checked_parameters)
                out[key] = table[key] if f.owner is not None else f.type.check(table[key], f"{dot}{key}")
            elif f.default is REQUIRED:
                help_text = f" ({f.help})" if f.help else ""
                raise ConfigurationError(
                    f"{dot}{key} is required{help_text}: {f.type.describe()}"
                )
            else:
                out[key] = f.default
        return MappingProxyType(out)


def _unknown_key(full: str, key: str, allowed: Sequence[str]) -> str:
    hint = difflib.get_close_matches(key, allowed, n=1)
    did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
    listed = ", ".join(allowed) if allowed else "none"
    return f"unknown key {full!r}{did_you_mean}; allowed keys: {listed}"


# --------------------------------------------------------------------------- scenario config


@dataclass(frozen=True)
class ScenarioConfig:
    """A validated scenario configuration.

    Attributes
    ----------
    name
        Scenario name (the TOML file's stem); default output directory ``out/<name>``.
    kind
        Registered runner that executes it.
    description, title
        One line for ``mprr list``; title of the report (defaults to the name).
    parameters
        Validated parameters (defaults filled in), read-only.
    runs, seed, engine
        Monte Carlo repetitions, run seed and engine (``fast`` or ``actors``).
    source
        The TOML file it was read from, if any.
    override_keys
        Top-level parameter keys set by :meth:`with_overrides` (the command line's ``--set``,
        ``--data``, ...) rather than by the file, so that a runner can tell a setting the user
        gave for this run from the file's own (e.g. the synthetic data's ``n`` when ``--data``
        replaces that data).
    """

    name: str
    kind: str
    description: str
    title: str
    parameters: Mapping[str, Any]
    runs: int
    seed: int
    engine: str
    source: Path | None = None
    raw_parameters: Mapping[str, Any] = field(default_factory=dict, repr=False)
    override_keys: frozenset[str] = frozenset()

    def with_overrides(
        self,
        *,
        runs: int | None = None,
        seed: int | None = None,
        engine: str | None = None,
        parameters: Overrides | None = None,
        schema: Schema | None = None,
    ) -> ScenarioConfig:
        """Return a copy with command-line overrides applied and re-validated.

        ``parameters`` is one table of overrides (``{"n": 500}``) or several (the command line's,
        one per ``--set``), merged in order over the raw TOML parameters (:func:`merge_tables`:
        the one merge of a run's parameters); the result is validated again against ``schema``.
        """
        new = replace(
            self,
            runs=self.runs if runs is None else RUNS.check(runs, "runs"),
            seed=self.seed if seed is None else SEED.check(seed, "seed"),
            engine=self.engine if engine is None else ENGINE.check(engine, "engine"),
        )
        tables = override_tables(parameters)
        if tables:
            if schema is None:
                raise ConfigurationError("parameter overrides need the scenario's schema")
            raw = merge_tables(dict(self.raw_parameters), *tables)
            new = replace(new, parameters=schema.validate(raw, prefix="parameters"),
                          raw_parameters=MappingProxyType(raw),
                          override_keys=self.override_keys.union(*tables))
        return new


@dataclass(frozen=True)
class ScenarioModule(ValueType):
    """The dotted name of a module inside the ``scenarios`` package (or empty).

    The ``module`` key of a scenario file is imported, so it is restricted to the package
    that holds the runners: a TOML file cannot make ``mprr`` import an arbitrary module.
    """

    def describe(self) -> str:
        return "a module of the scenarios package, scenarios.<name>"

    def check(self, value: Any, key: str) -> str:
        if not isinstance(value, str):
            raise self._fail(value, key)
        if value == "":
            return value
        parts = value.split(".")
        if len(parts) < 2 or parts[0] != "scenarios" or not all(p.isidentifier() for p in parts):
            raise self._fail(value, key)
        return value


RUNS = Int(min=1)
SEED = Int(min=0)
ENGINE = Choice(ENGINES)

SCENARIO_SECTION = Schema(
    [
        Field("kind", Str(), help="registered runner name, see `mprr list`"),
        Field("description", Str(allow_empty=True), ""),
        Field("title", Str(allow_empty=True), ""),
        Field("module", ScenarioModule(), "",
              help="module of the scenarios package that registers the runner (scenarios.<name>)"),
        Field("runs", RUNS, None),
        Field("seed", SEED, None),
        Field("engine", ENGINE, None),
    ]
)


def merge_tables(base: dict[str, Any], *extra: Mapping[str, Any]) -> dict[str, Any]:
    """Merge every table of ``extra``, in order, into ``base`` recursively (nested tables merged
    key by key; a later value replaces an earlier one)."""
    for table in extra:
        for key, value in table.items():
            if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
                base[key] = merge_tables(dict(base[key]), value)
            else:
                base[key] = value
    return base


def override_tables(parameters: Overrides | None) -> list[Mapping[str, Any]]:
    """The non-empty tables of ``parameters`` (:data:`Overrides`: one table or several), in order."""
    tables = [parameters] if isinstance(parameters, Mapping) else list(parameters or ())
    return [t for t in tables if t]


def read_toml(path: Path) -> dict[str, Any]:
    """Read a TOML file; syntax errors become :class:`ConfigurationError`."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigurationError(f"scenario file {str(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"scenario file {str(path)!r} is not valid TOML: {exc}") from None


def scenario_section(document: Mapping[str, Any], *, source: str) -> Mapping[str, Any]:
    """Validate the top level and the ``[scenario]`` table of a scenario document."""
    for key in document:
        if key not in ("scenario", "parameters"):
            raise ConfigurationError(
                _unknown_key(key, key, ("scenario", "parameters")) + f" (in {source})"
            )
    section = document.get("scenario")
    if not isinstance(section, Mapping):
        raise ConfigurationError(
            f"{source} must have a [scenario] table with kind = \"<runner>\", got "
            f"{_show(section) if section is not None else 'none'}"
        )
    params = document.get("parameters", {})
    if not isinstance(params, Mapping):
        raise ConfigurationError(f"parameters must be a table, got {_show(params)} (in {source})")
    return SCENARIO_SECTION.validate(section, prefix="scenario")


def parse_config(
    document: Mapping[str, Any],
    *,
    name: str,
    schema: Schema,
    default_runs: int = 1,
    default_seed: int = 1,
    default_engine: str = "fast",
    source: Path | None = None,
) -> ScenarioConfig:
    """Validate a parsed TOML document against the runner's ``schema``.

    Parameters
    ----------
    document
        The parsed TOML (``{"scenario": {...}, "parameters": {...}}``).
    name
        Scenario name (normally the file stem).
    schema
        The runner's parameter schema.
    default_runs, default_seed, default_engine
        Used when the ``[scenario]`` table does not set them.
    source
        File the document came from (for messages and the report).
    """
    section = scenario_section(document, source=str(source or name))
    raw = dict(document.get("parameters", {}))
    return ScenarioConfig(
        name=name,
        kind=section["kind"],
        description=section["description"],
        title=section["title"] or name,
        parameters=schema.validate(raw, prefix="parameters"),
        runs=default_runs if section["runs"] is None else section["runs"],
        seed=default_seed if section["seed"] is None else section["seed"],
        engine=default_engine if section["engine"] is None else section["engine"],
        source=source,
        raw_parameters=MappingProxyType(raw),
    )
