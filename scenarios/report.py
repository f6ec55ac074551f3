"""What a scenario run produces, and the writers: ``results.json``, ``report.md`` and PNGs.

A runner returns a :class:`ScenarioResult` (metrics, privacy, traffic, :class:`Table` s,
figure specifications, notes); :func:`write_report` renders the figures
(:mod:`scenarios.plots`) and writes::

    DIR/results.json   parameters, seed, versions, metrics, privacy, traffic, tables, notes,
                       the figures and the runner's other files (``figures``, ``files``),
                       estimated cells with their uncertainty (``estimates``, when any)
    DIR/report.md      title, parameters table, metric tables, tables, embedded PNGs, notes
    DIR/*.png

JSON is strict: numpy scalars and arrays become numbers and lists, non-finite floats become
the strings ``"inf"``, ``"-inf"`` and ``"nan"``, tuple keys become ``"a,b"``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mprr.errors import ConfigurationError
from mprr.privacy import json_number
from scenarios.plots import FigureSpec, render

__all__ = [
    "ReportFiles",
    "ScenarioResult",
    "Table",
    "counted_by",
    "describe_runtime",
    "format_value",
    "git_commit",
    "markdown_report",
    "plural",
    "RR_INDEPENDENT_JOINT",
    "is_mprr_results",
    "previous_outputs",
    "to_jsonable",
    "versions",
    "write_report",
]


# --------------------------------------------------------------------------- content


@dataclass(frozen=True)
class Table:
    """A table for the report (Markdown) and ``results.json`` (list of records).

    Parameters
    ----------
    key
        Identifier in ``results.json["tables"]`` (letters, digits, ``_``).
    title
        Heading in ``report.md``.
    columns
        Column names.
    rows
        One tuple per row, one cell per column (numbers, strings, booleans or None).
    formats
        Optional per-column format spec for Markdown, e.g. ``{"beta": ".1%"}``; numbers are
        otherwise shown with 4 significant digits.  JSON always holds the full value.
    caption
        Text under the table.
    """

    key: str
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    formats: Mapping[str, str] = field(default_factory=dict)
    caption: str = ""

    def __post_init__(self) -> None:
        if not self.key or not self.key.replace("_", "").isalnum():
            raise ConfigurationError(
                f"table key must be non-empty letters, digits and '_', got {self.key!r}"
            )
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "rows", tuple(tuple(r) for r in self.rows))
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ConfigurationError(
                    f"table {self.key!r} row {i} has {len(row)} cells, expected "
                    f"{len(self.columns)} ({', '.join(self.columns)})"
                )
        unknown = set(self.formats) - set(self.columns)
        if unknown:
            raise ConfigurationError(
                f"table {self.key!r}: formats name unknown columns {sorted(unknown)}; "
                f"columns are {list(self.columns)}"
            )

    def records(self) -> list[dict[str, Any]]:
        """Rows as ``{column: value}`` dictionaries."""
        return [dict(zip(self.columns, row)) for row in self.rows]


@dataclass(frozen=True)
class ScenarioResult:
    """Everything one scenario run produced.

    Runners fill ``metrics``, ``privacy``, ``traffic``, ``tables``, ``figures``, ``notes``,
    ``summary`` (a few lines printed by the command line at the end of the run), ``files``
    (plain names of the other files the runner wrote into the output directory, e.g.
    ``synthetic_records.csv``: listed in ``results.json`` and the printed summary) and
    ``records`` (tables as lists of flat records, each a top-level key of ``results.json``,
    e.g. ``utility`` or ``estimates``: ``pandas.DataFrame(doc["utility"])``); the runner
    framework (:func:`scenarios.runner.run_scenario`) fills the rest — name, kind, title,
    parameters, seed, runs, engine, versions, elapsed time.
    """

    metrics: Mapping[str, Any] = field(default_factory=dict)
    privacy: Mapping[str, Any] = field(default_factory=dict)
    traffic: Mapping[str, Any] = field(default_factory=dict)
    tables: Sequence[Table] = ()
    figures: Sequence[FigureSpec] = ()
    notes: Sequence[str] = ()
    summary: Sequence[str] = ()
    files: Sequence[str] = ()
    records: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    name: str = ""
    kind: str = ""
    title: str = ""
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    runs: int | None = None
    engine: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)
    elapsed_seconds: float | None = None
    source: str = ""
    provenance: Mapping[str, Any] = field(default_factory=dict)


VERSIONED = ("numpy", "scipy", "pandas", "matplotlib", "networkx", "cryptography")
"""Distributions whose versions every ``results.json`` records (beside Python and mprr)."""


def versions() -> dict[str, str]:
    """Versions of Python, mprr and its dependencies (recorded in every ``results.json``)."""
    from importlib import metadata

    import mprr

    out = {"python": platform.python_version(), "mprr": getattr(mprr, "__version__", "unknown")}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def git_commit(directory: Path | None = None) -> str:
    """The commit checked out where mprr lives (``+dirty`` with local changes), or ``"unknown"``
    (not a git checkout, or git missing)."""
    import subprocess

    where = directory or Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "") if head else "unknown"


# --------------------------------------------------------------------------- JSON


def _key(k: Any) -> str:
    if isinstance(k, tuple):
        return ",".join(str(_plain(v)) for v in k)
    return str(_plain(k))


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, enum.Enum):
        return v.value
    return v


def to_jsonable(obj: Any, *, where: str = "result") -> Any:
    """Convert ``obj`` into JSON-safe Python values (see module docstring).

    Raises
    ------
    TypeError
        For a value with no JSON meaning (names where it was found).
    """
    obj = _plain(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return json_number(obj)
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist(), where=where)
    if isinstance(obj, Table):
        return {"title": obj.title, "columns": list(obj.columns), "caption": obj.caption,
                "rows": to_jsonable(obj.records(), where=f"{where}.rows")}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_jsonable(getattr(obj, f.name), where=f"{where}.{f.name}")
            for f in dataclasses.fields(obj)
            if not callable(getattr(obj, f.name))
        }
    if isinstance(obj, Mapping):
        return {_key(k): to_jsonable(v, where=f"{where}.{_key(k)}") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, where=f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, (set, frozenset)):
        return [to_jsonable(v, where=where) for v in sorted(obj, key=repr)]
    raise TypeError(f"{where}: cannot write a {type(obj).__name__} to JSON ({obj!r:.80})")


def results_document(result: ScenarioResult, figure_files: Sequence[str] = ()) -> dict[str, Any]:
    """The ``results.json`` content as a JSON-safe dictionary."""
    doc: dict[str, Any] = {
        "scenario": result.name,
        "kind": result.kind,
        "title": result.title,
        "description": result.description,
        "source": result.source,
        "parameters": result.parameters,
        "seed": result.seed,
        "runs": result.runs,
        "engine": result.engine,
        "versions": result.versions,
        "provenance": result.provenance,
        "elapsed_seconds": result.elapsed_seconds,
        "metrics": result.metrics,
        "privacy": result.privacy,
        "traffic": result.traffic,
        "tables": {t.key: t for t in result.tables},
        "figures": list(figure_files),
        "files": list(result.files),
        "notes": list(result.notes),
    }
    clash = sorted(set(result.records) & set(doc))
    if clash:
        raise ConfigurationError(f"records keys {clash} would replace keys of results.json; rename them")
    for key, rows in result.records.items():
        doc[key] = [dict(r) for r in rows]
    jsonable: dict[str, Any] = to_jsonable(doc)
    return jsonable


# --------------------------------------------------------------------------- Markdown


def format_value(value: Any, spec: str = "") -> str:
    """Render one cell: 4 significant digits by default, ``∞`` for infinities, ``—`` for None."""
    value = _plain(value)
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        x = float(value)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "∞" if x > 0 else "−∞"
        if spec:
            return format(value, spec)
        return str(value) if isinstance(value, int) else f"{x:.4g}"
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, np.ndarray):
        if value.size > 12:
            return f"array of shape {value.shape}"
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if len(value) > 12:
            return f"list of {len(value)} items"
        return "[" + ", ".join(format_value(v, spec) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {format_value(v, spec)}" for k, v in value.items()) + "}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` (thousands grouped) and ``noun``, in the plural unless ``count`` is 1:
    ``plural(1, "run") == "1 run"``, ``plural(20, "run") == "20 runs"``,
    ``plural(2, "process", "processes")``, ``plural(12000, "message") == "12,000 messages"``."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def describe_runtime(options: Mapping[str, Any]) -> str:
    """One phrase for a runtime's options (:meth:`parties.runtime.Runtime.options`), e.g.
    ``"tcp (2 worker processes, spawned, TLS on)"`` or ``"memory (one process)"``."""
    name = str(options.get("runtime", "?"))
    parts: list[str] = []
    if name == "memory":
        shards = options.get("shards", 1)
        parts.append("one process" if shards == 1 else f"one process, {shards} party shards")
    elif name == "tcp":
        parts.append(plural(int(options.get("workers", 0)), "worker process", "worker processes"))
        parts.append("spawned" if options.get("spawn", True) else f"started by hand, listening on {options.get('listen')}")
        parts.append("TLS on" if options.get("tls", True) else "TLS off")
    elif name == "ray":
        parts.append(f"{options.get('shards')} party shards on {options.get('address')} Ray")
    elif name == "virtual":
        model = options.get("model") or {}
        parts.append(f"virtual time, {model.get('profile', '?')} network")
    return f"{name} ({', '.join(parts)})" if parts else name


def counted_by(where: Mapping[str, Any] | None) -> str:
    """Who counted a run's messages and bytes, for captions: ``"counted by the in-memory
    network"``, or on a remote runtime the router in the controller process, which every frame
    passes, encoded by the one codec (the same counts as the in-memory network's).

    Parameters
    ----------
    where
        A runtime's options (:meth:`parties.runtime.Runtime.options`) or a run's wire figures
        (``traffic["wire"]``): ``runtime`` and, for tcp, ``workers``, for ray, ``shards``;
        ``None`` or another runtime: the in-memory network.
    """
    where = where or {}
    name = where.get("runtime")
    if name == "tcp":
        hosts = plural(int(where.get("workers", 0)), "worker process", "worker processes")
    elif name == "ray":
        hosts = plural(int(where.get("shards", 0)), "Ray shard")
    else:
        return "counted by the in-memory network"
    return (f"counted by the router in the controller process ({name} runtime, parties in {hosts}): "
            "the same counts as the in-memory network's")


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in columns) + " |",
             "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return lines


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for k, v in mapping.items():
        name = f"{prefix}{_key(k)}"
        if isinstance(v, Mapping) and v:
            items += _flatten(v, name + ".")
        else:
            items.append((name, v))
    return items


DETAIL_ROWS = 60
"""Most rows of one flattened section in report.md (all values are in results.json)."""


def _key_value_section(title: str, mapping: Mapping[str, Any]) -> list[str]:
    if not mapping:
        return []
    flat = _flatten(mapping)
    rows = [(name.replace("|", "\\|"), format_value(v)) for name, v in flat[:DETAIL_ROWS]]
    lines = ["", f"### {title}", "", *_md_table(("name", "value"), rows)]
    if len(flat) > DETAIL_ROWS:
        lines += ["", f"… and {len(flat) - DETAIL_ROWS} more values in results.json (`{title.lower()}`)."]
    return lines


def markdown_report(result: ScenarioResult, figure_files: Sequence[str] = ()) -> str:
    """The ``report.md`` text: summary, tables, figures and notes first; run details,
    parameters and the flattened metrics / privacy / traffic values after."""
    lines = [f"# {result.title or result.name}", ""]
    if result.description:
        lines += [result.description, ""]
    if result.summary:
        lines += ["## Summary", ""]
        lines += [f"- {line}" for line in result.summary]
    for table in result.tables:
        cells = [
            [format_value(v, table.formats.get(c, "")) for c, v in zip(table.columns, row)]
            for row in table.rows
        ]
        lines += ["", f"## {table.title}", "", *_md_table(table.columns, cells)]
        if table.caption:
            lines += ["", table.caption]
    if figure_files:
        lines += ["", "## Figures"]
        for spec, filename in zip(result.figures, figure_files):
            lines += ["", f"![{spec.title}]({filename})"]
            if spec.caption:
                lines += ["", f"*{spec.caption}*"]
    if result.notes:
        lines += ["", "## Notes", ""]
        lines += [f"- {note}" for note in result.notes]
    lines += ["", "## Details", "", "### Run", ""]
    run_rows = [
        ("scenario", f"`{result.name}` (kind `{result.kind}`)"),
        ("seed", format_value(result.seed)),
        ("runs", format_value(result.runs)),
        ("engine", result.engine or "—"),
        *([("runtime", describe_runtime(result.provenance["runtime"]))] if result.provenance.get("runtime") else []),
        ("versions", ", ".join(f"{k} {v}" for k, v in result.versions.items())),
    ]
    if result.provenance.get("git_commit"):
        run_rows.append(("git commit", f"`{result.provenance['git_commit']}`"))
    if result.provenance.get("data_sha256"):
        run_rows.append(("data", f"`{result.provenance.get('data_file', '')}` (SHA-256 "
                                 f"`{result.provenance['data_sha256']}`)"))
    if result.source:
        run_rows.append(("configuration", f"`{result.source}`"))
    if result.elapsed_seconds is not None:
        run_rows.append(("elapsed", f"{result.elapsed_seconds:.2f} s"))
    lines += _md_table(("run", ""), run_rows)
    if result.parameters:
        rows = [(f"`{k}`", format_value(v)) for k, v in _flatten(result.parameters)]
        lines += ["", "### Parameters", "", *_md_table(("parameter", "value"), rows)]
    lines += _key_value_section("Metrics", result.metrics)
    lines += _key_value_section("Privacy", result.privacy)
    lines += _key_value_section("Traffic", result.traffic)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class ReportFiles:
    """Paths written by :func:`write_report`, the runner's other files (``other_files``) and the
    previous run's outputs it removed (``removed``)."""

    results_json: Path
    report_md: Path
    figures: tuple[Path, ...]
    removed: tuple[Path, ...] = ()
    other_files: tuple[Path, ...] = ()


RR_INDEPENDENT_JOINT = ("RR-Independent estimates only the marginals: its joint estimate, from which its queries "
                        "are answered, is the product of its marginal estimates (the attributes taken as "
                        "independent).")
"""Said in every caption that reports RR-Independent's joint estimate or a number computed from it
(main paper Protocol 1: one matrix per attribute, eq. (2) per marginal)."""

_RESULTS_KEYS = frozenset({"scenario", "kind", "engine", "provenance", "figures"})
"""Keys every ``results.json`` an mprr run writes has (:func:`results_document`): a file named
``results.json`` without them (another program's) is never trusted to list files to remove."""

OTHER_SUFFIXES = (".csv",)
"""Endings of the runners' other files (``ScenarioResult.files``) a later run may remove."""


def _plain_name(name: object, suffixes: Sequence[str]) -> bool:
    return (isinstance(name, str) and name == Path(name).name and not name.startswith(".")
            and name.endswith(tuple(suffixes)) and name not in ("results.json", "report.md"))


def _mprr_results(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and _RESULTS_KEYS <= doc.keys() else None


def is_mprr_results(path: Path) -> bool:
    """Whether ``path`` is a ``results.json`` an mprr run wrote (it has :data:`_RESULTS_KEYS`)."""
    return _mprr_results(path) is not None


def previous_outputs(out_dir: Path) -> list[str]:
    """The files the previous run into ``out_dir`` listed in its ``results.json``: its figures
    (plain ``.png`` names) and other files (plain names ending in one of :data:`OTHER_SUFFIXES`);
    nothing outside ``out_dir``, nothing it did not write, and only from a ``results.json`` an
    mprr run wrote (:data:`_RESULTS_KEYS`)."""
    doc = _mprr_results(Path(out_dir) / "results.json")
    if doc is None:
        return []
    out: list[str] = []
    for key, suffixes in (("figures", (".png",)), ("files", OTHER_SUFFIXES)):
        listed = doc.get(key)
        if isinstance(listed, list):
            out += [f for f in listed if _plain_name(f, suffixes)]
    return out


def write_report(result: ScenarioResult, out_dir: Path, *, keep: Sequence[Path] = ()) -> ReportFiles:
    """Render the figures and write ``results.json`` and ``report.md`` into ``out_dir``.

    A file the previous run into ``out_dir`` listed in its ``results.json`` (a figure or another
    file, :func:`previous_outputs`) and this run does not write is removed (it would sit beside
    a report that no longer mentions it), unless it is in ``keep`` (the run's input files); no
    other file is touched.

    Raises
    ------
    ConfigurationError
        If figure names or table keys repeat, or ``result.files`` names anything but a plain
        file name, ending in one of :data:`OTHER_SUFFIXES`, of a file in ``out_dir``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    before = previous_outputs(out_dir)
    names = [spec.filename for spec in result.figures]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigurationError(f"figure file names must be unique, repeated: {duplicates}")
    keys = [t.key for t in result.tables]
    if len(set(keys)) != len(keys):
        raise ConfigurationError(f"table keys must be unique, got {keys}")
    for name in result.files:
        if not _plain_name(name, OTHER_SUFFIXES) or name in names or not (out_dir / name).is_file():
            raise ConfigurationError(
                f"result files must be plain names of files the runner wrote into {str(out_dir)!r}, ending "
                f"in {' or '.join(OTHER_SUFFIXES)} (not a figure's name), got {name!r}")
    figures = tuple(render(spec, out_dir) for spec in result.figures)
    doc = results_document(result, [p.name for p in figures])
    json_path = out_dir / "results.json"
    json_path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    md_path = out_dir / "report.md"
    md_path.write_text(markdown_report(result, [p.name for p in figures]), encoding="utf-8")
    # compared case-blind: on macOS / Windows Means.png is means.png
    written = {p.name.casefold() for p in figures} | {n.casefold() for n in result.files}
    kept = {Path(k).resolve() for k in keep}
    removed = []
    for name in before:
        stale = out_dir / name
        if name.casefold() not in written and stale.is_file() and stale.resolve() not in kept:
            stale.unlink()
            removed.append(stale)
    return ReportFiles(json_path, md_path, figures, tuple(removed), tuple(out_dir / n for n in result.files))
