"""The scenario registry: runner kinds (Python) and shipped scenario files (TOML).

Adding a scenario takes two steps:

1. in a module you own, decorate the runner::

       SCHEMA = Schema([Field("n", Int(min=2), 2000, help="number of parties")])

       @register("my_kind", schema=SCHEMA, description="...", engines=("fast", "actors"))
       def run_my_kind(config, *, out_dir, runs, seed, engine, progress) -> ScenarioResult:
           ...

2. add ``scenarios/configs/<name>.toml`` with ``[scenario] kind = "my_kind"`` and
   ``module = "scenarios.my_module"`` (the module is imported on demand), plus a
   ``[parameters]`` table.

``mprr list`` reads only the TOML files, so a scenario whose module is still being written
does not break the listing of the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mprr.errors import ConfigurationError
from scenarios.config import ENGINES, Schema, ScenarioConfig, parse_config, read_toml, scenario_section

if TYPE_CHECKING:
    from scenarios.progress import Progress
    from scenarios.report import ScenarioResult

__all__ = [
    "Runner",
    "ScenarioEntry",
    "ScenarioSpec",
    "available",
    "configs_dir",
    "get",
    "import_module",
    "kinds",
    "load",
    "register",
    "resolve",
]


class Runner(Protocol):
    """Signature of a scenario runner."""

    __name__: str
    __qualname__: str

    def __call__(
        self,
        config: ScenarioConfig,
        *,
        out_dir: Path,
        runs: int,
        seed: int,
        engine: str,
        progress: Progress,
    ) -> ScenarioResult: ...


@dataclass(frozen=True)
class ScenarioSpec:
    """A registered runner kind: the function, its parameter schema and what it supports."""

    kind: str
    runner: Runner
    schema: Schema
    description: str
    engines: tuple[str, ...]
    default_runs: int
    default_seed: int
    hosts_on_runtime: bool = True
    """Whether its ``actors`` engine hosts the parties on the chosen runtime (``--runtime``);
    ``False`` for a runner that sets up the network of each of its runs itself (in-memory
    secure sums, the virtual-time runtime of a network profile)."""


_REGISTRY: dict[str, ScenarioSpec] = {}


def register(
    kind: str,
    *,
    schema: Schema,
    description: str,
    engines: tuple[str, ...] = ("fast",),
    default_runs: int = 1,
    default_seed: int = 1,
    hosts_on_runtime: bool = True,
) -> Callable[[Runner], Runner]:
    """Decorator registering a runner under ``kind``.

    Parameters
    ----------
    kind
        Name used by ``[scenario] kind = ...`` in TOML files.
    schema
        The runner's parameter schema (:class:`scenarios.config.Schema`).
    description
        One line describing what the runner does.
    engines
        Engines it supports, a subset of ``("fast", "actors")``; the first is the default.
    default_runs, default_seed
        Used when neither the TOML file nor the command line sets them.
    hosts_on_runtime
        Whether the ``actors`` engine hosts its parties on the runtime a run chooses (``False``:
        the runner uses its own in-memory network, and a run that names a runtime is refused).
    """
    if not kind or not kind.replace("_", "").isalnum():
        raise ConfigurationError(f"scenario kind must be letters, digits and '_', got {kind!r}")
    bad = [e for e in engines if e not in ENGINES]
    if not engines or bad:
        raise ConfigurationError(
            f"engines of {kind!r} must be a non-empty subset of {ENGINES}, got {engines!r}"
        )

    def decorate(runner: Runner) -> Runner:
        existing = _REGISTRY.get(kind)
        if existing is not None and existing.runner is not runner:
            owner = getattr(existing.runner, "__module__", "?")
            raise ConfigurationError(f"scenario kind {kind!r} is already registered by {owner}")
        _REGISTRY[kind] = ScenarioSpec(kind, runner, schema, description, tuple(engines),
                                       default_runs, default_seed, hosts_on_runtime)
        return runner

    return decorate


# --------------------------------------------------------------------------- shipped files


def configs_dir() -> Path:
    """Directory of the scenario files shipped with the package (``scenarios/configs``)."""
    return Path(str(resources.files("scenarios") / "configs"))


@dataclass(frozen=True)
class ScenarioEntry:
    """One shipped scenario file, as listed by ``mprr list``."""

    name: str
    kind: str
    description: str
    module: str
    path: Path
    problem: str = ""


def available() -> list[ScenarioEntry]:
    """Shipped scenarios, sorted by name (read from the TOML files, no runner imported)."""
    entries = []
    directory = configs_dir()
    for path in sorted(directory.glob("*.toml")) if directory.is_dir() else ():
        try:
            section = scenario_section(read_toml(path), source=path.name)
            entries.append(ScenarioEntry(path.stem, section["kind"], section["description"],
                                         section["module"], path))
        except ConfigurationError as exc:
            entries.append(ScenarioEntry(path.stem, "", "", "", path, problem=str(exc)))
    return entries


def kinds() -> list[str]:
    """Kinds registered so far (runner modules are imported on demand)."""
    return sorted(_REGISTRY)


def resolve(target: str | Path) -> Path:
    """Turn ``mprr run``'s argument (a TOML path or a shipped name) into a file path.

    Raises
    ------
    ConfigurationError
        If ``target`` is neither an existing file nor a shipped scenario name; the message
        lists the available scenarios.
    """
    text = str(target)
    path = Path(text).expanduser()
    if text.endswith(".toml") or path.is_file() or "/" in text:
        if not path.is_file():
            raise ConfigurationError(f"scenario file {text!r} does not exist")
        return path
    shipped = configs_dir() / f"{text}.toml"
    if shipped.is_file():
        return shipped
    names = ", ".join(e.name for e in available()) or "none"
    raise ConfigurationError(
        f"unknown scenario {text!r}; available scenarios: {names} (or give the path of a .toml file)"
    )


def import_module(module: str, missing: Callable[[str], str]) -> None:
    """Import ``module`` (a scenario's or a plugin's, which registers what it defines).

    Raises
    ------
    ConfigurationError
        ``missing(name)`` when ``module`` or a package above it does not exist (``name`` is the
        one missing); an error raised inside the module, a missing import of its own included,
        propagates.
    """
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise ConfigurationError(missing(exc.name)) from None
        raise


def get(kind: str, *, module: str = "") -> ScenarioSpec:
    """Return the spec of ``kind``, importing the module that registers it if needed.

    The module is ``module`` if given, else the ``module`` declared by a shipped scenario
    file of the same kind.
    """
    if kind not in _REGISTRY:
        candidates = [module] if module else []
        candidates += [e.module for e in available() if e.kind == kind and e.module]
        for mod in dict.fromkeys(candidates):
            import_module(mod, lambda _: f"scenario kind {kind!r} needs module {mod!r}, which does not exist")
            if kind in _REGISTRY:
                break
    if kind not in _REGISTRY:
        known = sorted(set(_REGISTRY) | {e.kind for e in available() if e.kind})
        where = f" (module {module!r} does not register it)" if module else ""
        raise ConfigurationError(
            f"no runner registered for scenario kind {kind!r}{where}; known kinds: "
            f"{', '.join(known) or 'none'}"
        )
    return _REGISTRY[kind]


def load(target: str | Path) -> tuple[ScenarioConfig, ScenarioSpec]:
    """Read, validate and resolve a scenario (path or shipped name)."""
    path = resolve(target)
    document = read_toml(path)
    section = scenario_section(document, source=path.name)
    spec = get(section["kind"], module=section["module"])
    config = parse_config(
        document,
        name=path.stem,
        schema=spec.schema,
        default_runs=spec.default_runs,
        default_seed=spec.default_seed,
        default_engine=spec.engines[0],
        source=path,
    )
    return config, spec

